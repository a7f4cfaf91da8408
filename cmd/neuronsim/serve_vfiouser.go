package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/vfiouser"
)

// remoteOnlyServeFlags are serve's flags that bound remote-protocol clients;
// a vfio-user system has none of those clients, so they are refused with
// --vfio-user rather than ignored. (--handshake-timeout and --max-memory
// apply to both.)
var remoteOnlyServeFlags = []string{"max-clients", "idle-timeout", "write-timeout",
	"host-memory-per-client", "host-memory", "host-buffers-per-client", "allow-remote"}

// vfioUserSocket is the socket path of device index i in dir.
func vfioUserSocket(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("neuron%d.sock", i))
}

// prepareSocketDir makes dir (mode 0700 when it is created) and checks that
// none of the n socket paths is taken by anything but a stale socket: a
// regular file, a folder or a socket a live server answers on is refused,
// naming it. Stale sockets are removed.
func prepareSocketDir(dir string, n int) error {
	if dir == "" {
		return errors.New("--vfio-user: an empty folder name")
	}
	// The longest socket name is the last device's; checked before the
	// folder is made, so a refusal leaves nothing behind.
	if err := remote.CheckSocketPath(vfioUserSocket(dir, max(n-1, 0))); err != nil {
		return fmt.Errorf("--vfio-user %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--vfio-user: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("--vfio-user: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("--vfio-user %s: not a folder", dir)
	}
	for i := range n {
		p := vfioUserSocket(dir, i)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("--vfio-user: %w", err)
		}
		if fi.Mode().Type() != fs.ModeSocket {
			return fmt.Errorf("--vfio-user: %s exists and is not a socket; not replacing it", p)
		}
		if c, err := net.Dial("unix", p); err == nil {
			_ = c.Close()
			return fmt.Errorf("--vfio-user: %s is in use by a running server", p)
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("--vfio-user: removing the stale socket: %w", err)
		}
	}
	return nil
}

// serveVFIOUser builds the system as one virtual-time system (one engine,
// one clock, the fabric between its devices) and serves device i as a
// vfio-user PCI function on DIR/neuronI.sock, mode 0600, until ctx ends.
func serveVFIOUser(ctx context.Context, cmd *cobra.Command, sf *systemFlags, dir string, o serveOptions) error {
	for _, name := range remoteOnlyServeFlags {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s bounds remote-protocol clients; --vfio-user serves none (a vfio-user socket serves one client at a time and refuses others; of the limits, --handshake-timeout and --max-memory apply, with --vfio-reply-timeout, --vfio-stall-backoff and --vfio-wait-budget)", name)
		}
	}
	s, err := sf.servedSpec()
	if err != nil {
		return err
	}
	if err := prepareSocketDir(dir, s.Devices); err != nil {
		return err
	}
	log := serveLog(cmd)
	defer log.Flush()
	sys, servers, err := newVFIOUserSystem(s, o, func(format string, args ...any) { log.Logf(format, args...) })
	if err != nil {
		return err
	}
	var listeners []*net.UnixListener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	done := make(chan error, s.Devices)
	var paths []string
	for i, srv := range servers {
		p := vfioUserSocket(dir, i)
		l, err := listenPrivateUnix(p)
		if err != nil {
			return err
		}
		listeners = append(listeners, l)
		paths = append(paths, p)
		go func() { done <- srv.Serve(l) }()
	}
	rid := make([]string, s.Devices)
	for i, d := range sys.Devices() {
		rid[i] = fmt.Sprint(d.Config().RoutingID)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "serving %s (device id %#04x, revision %#02x, routing ids %s) over vfio-user on %s\n",
		units.Plural(int64(s.Devices), "simulated "+s.product()+" device", "simulated "+s.product()+" devices"),
		s.DeviceID, s.Revision, strings.Join(rid, ","), strings.Join(paths, " "))
	select {
	case <-ctx.Done():
	case err = <-done:
	}
	for _, d := range sys.Devices() {
		fmt.Fprintf(cmd.ErrOrStderr(), "neuronsim serve: %s\n", deviceCounters(d))
	}
	return err
}

// newVFIOUserSystem builds the served system (newServedSystem, as serve
// --listen does) and a vfio-user server per device. Each device's DMA
// reaches its own client's memory (the guest's DMA_MAP regions); the
// system's devices share one clock, so they share one Pacer that keeps it
// up with wall time (docs/vfio-user.md); all of them share the page budget
// of --max-memory. Each server closes a connection that has not completed
// its VERSION within --handshake-timeout, and ends a session whose client
// keeps it waiting past --vfio-reply-timeout or --vfio-wait-budget,
// refusing new clients for --vfio-stall-backoff after.
func newVFIOUserSystem(s systemSpec, o serveOptions, logf func(string, ...any)) (*servedSystem, []*vfiouser.Server, error) {
	opts := make([]vfiouser.Options, s.Devices)
	ports := make([]sim.HostPort, s.Devices)
	for i := range opts {
		opts[i] = o.vfio
		opts[i].HandshakeTimeout = o.server.HandshakeTimeout
		mem, err := vfiouser.NewGuestMemory(opts[i])
		if err != nil {
			return nil, nil, err
		}
		ports[i] = mem
	}
	sys, err := newServedSystem(s, o.pageLimit, ports)
	if err != nil {
		return nil, nil, err
	}
	pacer, err := vfiouser.NewPacer(sys.Device(0), vfiouser.PacerOptions{})
	if err != nil {
		return nil, nil, err
	}
	servers := make([]*vfiouser.Server, s.Devices)
	for i, d := range sys.Devices() {
		name := d.Config().Name
		opts[i].Logf = func(format string, args ...any) { logf(name+": "+format, args...) }
		opts[i].Pacer = pacer
		if servers[i], err = vfiouser.New(d, opts[i]); err != nil {
			return nil, nil, err
		}
	}
	return sys, servers, nil
}

// deviceCounters is a one-line account of what a served device saw: the
// accesses its client made, those the model could not place, and the
// resets it did, and what its DMA engines moved.
func deviceCounters(d *sim.Device) string {
	st, cs := d.Stats(), d.ConfigStats()
	pairs, bytes := d.DMATotals()
	return fmt.Sprintf("%s: phase %s; config %d reads, %d writes; BAR %d reads, %d writes; unmapped %d reads, %d writes (last BAR%d +%#x); "+
		"%d reads while not ready, %d writes dropped; %d reset requests, %d device resets, %d TPB resets, %d function-level resets; %d unserved mailbox triggers; "+
		"DMA %d descriptor pairs, %d bytes",
		d.Config().Name, d.Phase(), cs.Reads, cs.Writes, st.Reads, st.Writes, st.UnmappedReads, st.UnmappedWrites, st.LastUnmappedBAR, st.LastUnmapped,
		st.NotReadyReads, st.DroppedWrites, st.ResetRequests, st.DeviceResets, st.TPBResets, st.FunctionResets, st.UnservedTriggers, pairs, bytes)
}

// listenPrivateUnix listens on a unix socket at p that only its owner may
// connect to: it is created under umask 0177 (so it is never reachable by
// others, not even between its creation and a chmod) and then set to 0600.
func listenPrivateUnix(p string) (*net.UnixListener, error) {
	old := syscall.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("--vfio-user: %w", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("--vfio-user: %w", err)
	}
	return l, nil
}
