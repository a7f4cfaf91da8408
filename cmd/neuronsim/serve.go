package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/neuronsim/neuronsim/internal/lograte"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/vfiouser"
)

// remoteSystem is a connection to a `neuronsim serve` and its devices.
type remoteSystem struct {
	client *remote.Client
	deviceSet
}

func (r *remoteSystem) close() { r.client.Close() }

// openRemoteSystem dials a server and opens every device it exports.
func openRemoteSystem(addr string) (*remoteSystem, error) {
	c, err := remote.Dial(addr, remote.ClientOptions{})
	if err != nil {
		return nil, err
	}
	r := &remoteSystem{client: c}
	for _, info := range c.Devices() {
		d, err := c.Device(info.Index)
		if err != nil {
			c.Close()
			return nil, err
		}
		r.devs = append(r.devs, d)
		r.connected = append(r.connected, info.Connected)
		r.indices = append(r.indices, info.Index)
	}
	return r, nil
}

// openServedDevice connects to a neuronsim serve at addr and returns its
// device of the given index, with the function that closes the connection
// (the dve, dma, exec and csr commands with --remote --device N).
func openServedDevice(addr string, device *deviceIndex) (ndl.Device, func(), error) {
	r, err := openRemoteSystem(addr)
	if err != nil {
		return nil, nil, err
	}
	i, err := device.index(len(r.devs), fmt.Sprintf("%s exports %s", addr, units.Plural(int64(len(r.devs)), "device", "devices")))
	if err != nil {
		r.close()
		return nil, nil, err
	}
	return r.devs[i], r.close, nil
}

// The defaults of serve's limits (docs/remote-protocol.md, "Server limits").
const (
	defaultMaxClients       = 64
	defaultHandshakeTimeout = 10 * time.Second
	defaultIdleTimeout      = 10 * time.Minute
	defaultWriteTimeout     = 30 * time.Second
	defaultHostPerClient    = "8GiB"   // 64 clients × 8 GiB = the whole budget below
	defaultHostMemory       = "512GiB" // of the 1 TiB host window
	defaultMaxMemory        = "4GiB"   // resident pages of the served system
	maxTimeoutFlag          = 24 * time.Hour
	maxClientsFlag          = 100_000
	maxHostBuffersFlag      = 1 << 24
)

// serveLimits are serve's limit flags as given.
type serveLimits struct {
	maxClients, hostBuffers              *intValue
	handshake, idle, write               time.Duration
	hostPerClient, hostMemory, maxMemory string
	// --vfio-user's bounds on a client that keeps the server waiting
	vfioReply, vfioBackoff, vfioBudget time.Duration
}

// vfioOnlyServeFlags are serve's flags that bound vfio-user clients; the
// remote protocol has none of those clients, so they are refused with
// --listen rather than ignored.
var vfioOnlyServeFlags = []string{"vfio-reply-timeout", "vfio-stall-backoff", "vfio-wait-budget"}

// serveOptions is what the limit flags become, checked.
type serveOptions struct {
	server    remote.ServerOptions
	vfio      vfiouser.Options // ReplyTimeout, StallBackoff and WaitBudget: the vfio-user servers'
	pageLimit int64            // resident pages of the served system
}

func (l *serveLimits) add(cmd *cobra.Command) {
	f := cmd.Flags()
	l.maxClients = newIntDefault("--max-clients", 1, maxClientsFlag, defaultMaxClients)
	l.hostBuffers = newInt("--host-buffers-per-client", 1, maxHostBuffersFlag) // default: buffersPerClient
	f.Var(l.maxClients, "max-clients", "most connections open at once, handshaking or not; more are refused with an error (1.."+fmt.Sprint(maxClientsFlag)+")")
	durationVar(f, &l.handshake, "handshake-timeout", defaultHandshakeTimeout, "a connection must complete its HELLO (with --vfio-user, its VERSION) within this, or is closed")
	durationVar(f, &l.idle, "idle-timeout", defaultIdleTimeout, "a connection must complete its next request within this after a reply, or is closed")
	durationVar(f, &l.write, "write-timeout", defaultWriteTimeout, "a reply must be written within this, or the connection is closed")
	f.StringVar(&l.hostPerClient, "host-memory-per-client", defaultHostPerClient, "most host memory one connection may hold allocated (HOST_ALLOC)"+sizeUnits)
	f.StringVar(&l.hostMemory, "host-memory", defaultHostMemory, "most host memory all connections together may hold allocated"+sizeUnits)
	f.Var(l.hostBuffers, "host-buffers-per-client", "most host buffers one connection may hold allocated (1.."+fmt.Sprint(maxHostBuffersFlag)+
		"); --max-clients × it may not pass the "+fmt.Sprint(sim.MaxHostBuffers)+" buffers the host-memory allocator holds (default: "+fmt.Sprint(sim.MaxHostBuffers)+" / --max-clients)")
	f.StringVar(&l.maxMemory, "max-memory", defaultMaxMemory, "most memory the served system's device memory, registers and host memory may hold in touched pages; a write past it is refused"+sizeUnits)
	durationVar(f, &l.vfioReply, "vfio-reply-timeout", vfiouser.DefaultReplyTimeout,
		"with --vfio-user: a client must answer each DMA_READ/DMA_WRITE of the server's, and take each message it sends, within this, or its session ends and --vfio-stall-backoff starts (1ms.."+maxTimeoutFlag.String()+")")
	durationVar(f, &l.vfioBackoff, "vfio-stall-backoff", vfiouser.DefaultStallBackoff,
		"with --vfio-user: after a session ended by --vfio-reply-timeout or --vfio-wait-budget, its socket answers new clients EAGAIN for this long (1ms.."+maxTimeoutFlag.String()+")")
	durationVar(f, &l.vfioBudget, "vfio-wait-budget", vfiouser.DefaultWaitBudget,
		"with --vfio-user: over every stretch of a session, of length L, the server may wait on its client (DMA replies, taking its messages) at most this + L/10, counting the waits made while a client of another device is connected; past it the session ends and --vfio-stall-backoff starts (1ms.."+vfiouser.MaxWaitBudget.String()+")")
}

// options checks the limit flags.
func (l *serveLimits) options() (serveOptions, error) {
	var o serveOptions
	for _, t := range []struct {
		flag string
		d    time.Duration
		max  time.Duration
	}{
		{"--handshake-timeout", l.handshake, maxTimeoutFlag}, {"--idle-timeout", l.idle, maxTimeoutFlag}, {"--write-timeout", l.write, maxTimeoutFlag},
		{"--vfio-reply-timeout", l.vfioReply, maxTimeoutFlag}, {"--vfio-stall-backoff", l.vfioBackoff, maxTimeoutFlag}, {"--vfio-wait-budget", l.vfioBudget, vfiouser.MaxWaitBudget},
	} {
		if t.d < time.Millisecond || t.d > t.max {
			return o, &units.Error{Field: t.flag, Value: t.d.String(), Reason: fmt.Sprintf("must be in 1ms..%v", t.max), Err: units.ErrRange}
		}
	}
	o.vfio = vfiouser.Options{ReplyTimeout: l.vfioReply, StallBackoff: l.vfioBackoff, WaitBudget: l.vfioBudget}
	// The host bytes the connections are charged (a buffer's size, rounded
	// up to its alignment above the granule) stay within what the
	// allocator can hold: the window, less what rounding every size up to
	// the granule can add over the most buffers it holds (63 MiB).
	window := int64(sim.HostMemoryLimit-sim.HostMemoryBase) - sim.MaxHostBuffers*(sim.HostGranule-1)
	perClient, err := units.ParseBytesIn("--host-memory-per-client", l.hostPerClient, 1, window)
	if err != nil {
		return o, err
	}
	total, err := units.ParseBytesIn("--host-memory", l.hostMemory, 1, window)
	if err != nil {
		return o, err
	}
	if perClient > total {
		return o, &units.Error{Field: "--host-memory-per-client", Value: l.hostPerClient, Err: units.ErrRange,
			Reason: fmt.Sprintf("more than --host-memory %s, all connections' together: one connection could never hold it", l.hostMemory)}
	}
	buffers, err := l.buffersPerClient()
	if err != nil {
		return o, err
	}
	mem, err := units.ParseBytesIn("--max-memory", l.maxMemory, sim.PageSize, 1<<50)
	if err != nil {
		return o, err
	}
	o.server = remote.ServerOptions{
		MaxClients: l.maxClients.int(), HandshakeTimeout: l.handshake, IdleTimeout: l.idle, WriteTimeout: l.write,
		HostBytesPerClient: uint64(perClient), HostBytes: uint64(total), HostBuffersPerClient: buffers,
		HostGranule: sim.HostGranule,
	}
	o.pageLimit = mem / sim.PageSize
	return o, nil
}

// buffersPerClient returns the host buffers one connection may hold: the
// flag's value, or when it is not given sim.MaxHostBuffers / --max-clients.
// Every device of a served system takes its host buffers from one
// allocator, which holds at most sim.MaxHostBuffers of them, and all the
// connections may put theirs on one device: so --max-clients connections
// of --host-buffers-per-client each may hold no more than that, or a
// connection within its own limit would be refused by the allocator for
// buffers others took (its quota a promise the allocator cannot keep).
// Past it serve refuses to start, naming the numbers.
func (l *serveLimits) buffersPerClient() (int, error) {
	clients := int64(l.maxClients.int())
	if !l.hostBuffers.set {
		return int(max(1, sim.MaxHostBuffers/clients)), nil // --max-clients ≤ maxClientsFlag < MaxHostBuffers: at least 10
	}
	per := int64(l.hostBuffers.int())
	if clients*per > sim.MaxHostBuffers { // both ≤ 2^24: no overflow
		return 0, &units.Error{Field: "--host-buffers-per-client", Value: fmt.Sprint(per), Err: units.ErrRange,
			Reason: fmt.Sprintf("× --max-clients %d = %d host buffers, more than the %d the host-memory allocator holds: a client could be promised buffers others already took (give at most %d per client, or fewer clients)",
				clients, clients*per, int64(sim.MaxHostBuffers), sim.MaxHostBuffers/clients)}
	}
	return int(per), nil
}

func newServeCommand() *cobra.Command {
	var listen, system, vfioDir string
	var allowRemote bool
	var limits serveLimits
	cmd := &cobra.Command{
		Use:   "serve --listen unix:PATH|tcp:127.0.0.1:PORT | --vfio-user DIR  [system flags | --system SPEC] [limits]",
		Short: "Expose the devices of a simulated system to remote runtimes, or to a QEMU guest as PCI functions",
		Long: "serve powers on a simulated system and serves its devices over the neuronsim remote\n" +
			"protocol (docs/remote-protocol.md) until interrupted. Clients are `neuronsim ls --remote`,\n" +
			"`csr`, `dma copy`, `dve load` and `exec` with --remote, and the runtime's remote backend.\n" +
			"The devices are one system, with --listen as with --vfio-user: one virtual clock, one host\n" +
			"memory, and the fabric a real system of that shape has between them (a ring, a chain or\n" +
			"the 4×4 torus of Trn1/Inf2/Trn2; NeuronSwitch-v1 on Trn3: docs/fabric.md), so a device's DMA\n" +
			"reaches another's memory over it, and a SLEEP or an access to any device moves the clock\n" +
			"all of them read. Each device is listed with the connected devices the local `ls` lists for\n" +
			"the same spec (the driver's table), which the fabric backs. --switch is the fabric's: none\n" +
			"on Trn3, whose devices meet only on NeuronSwitch-v1, is refused.\n" +
			"A TCP listener must be on a loopback address unless --allow-remote is given: the\n" +
			"protocol has no authentication. It prints the address it is bound to (with the port\n" +
			"the system chose for tcp:127.0.0.1:0).\n\n" +
			"Every resource a client can take is bounded (docs/remote-protocol.md, \"Server limits\"):\n" +
			"connections (--max-clients), time to handshake and between requests, host memory per\n" +
			"client and in all, and the memory the system's touched pages hold (--max-memory).\n" +
			"serve adds these up into a bound on its resident memory, prints it, and sets the Go\n" +
			"memory limit to it (docs/remote-protocol.md, \"Memory of the server\"). Device memory\n" +
			"a client frees stays counted in --max-memory until serve restarts.\n" +
			"Each client's host buffers are its own: other clients cannot read, write or free\n" +
			"them, and they are freed when it disconnects. BAR registers, device memory and DMA\n" +
			"are shared by every client.\n\n" +
			"With --vfio-user DIR it serves each device instead as a PCI function over vfio-user\n" +
			"(docs/vfio-user.md) on DIR/neuronN.sock (mode 0600; DIR is made 0700 if absent), one\n" +
			"client at a time per socket (another is answered EBUSY and closed), all devices in\n" +
			"one virtual-time system. A QEMU of 10.1 or later attaches each socket as a device of\n" +
			"its guest, whose kernel driver (the real aws-neuron driver, say) then probes and\n" +
			"drives the model:\n" +
			"  qemu-system-x86_64 ... -object memory-backend-memfd,id=m,size=1G,share=on \\\n" +
			"    -machine q35,memory-backend=m \\\n" +
			"    -device '{\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"DIR/neuron0.sock\",\"type\":\"unix\"}}'\n" +
			"(share=on lets the device's DMA reach guest memory directly; without it, through\n" +
			"DMA_READ/DMA_WRITE messages). Of the limits, only --max-memory and --handshake-timeout\n" +
			"apply, with --vfio-reply-timeout, --vfio-stall-backoff and --vfio-wait-budget: a\n" +
			"connection must complete its VERSION within --handshake-timeout, or is closed. A\n" +
			"client that leaves a message of the server's (a DMA_READ/DMA_WRITE, which the server\n" +
			fmt.Sprintf("waits for holding every device of the system) unanswered or unread for %v\n"+
				"(--vfio-reply-timeout), or, while a client of another device is connected, keeps the\n"+
				"server waiting longer in all than %v plus a tenth of the time (--vfio-wait-budget),\n"+
				"has its session ended, and its socket answers\n"+
				"new clients EAGAIN for %v (--vfio-stall-backoff).", vfiouser.DefaultReplyTimeout, vfiouser.DefaultWaitBudget, vfiouser.DefaultStallBackoff),
		Example: "  neuronsim serve --listen unix:/tmp/neuronsim.sock --arch trn2 --devices 16\n" +
			"  neuronsim serve --listen tcp:127.0.0.1:0 --system arch=mariana,devices=32,switch=v1,revision=emu\n" +
			"  neuronsim serve --listen tcp:127.0.0.1:7777 --max-clients 8 --max-memory 1GiB\n" +
			"  neuronsim serve --vfio-user /tmp/nsim --arch trn2 --revision qemu --devices 2",
		Args: cobra.NoArgs,
	}
	sf := addSystemFlags(cmd)
	cmd.Flags().StringVar(&listen, "listen", "", "`ADDR` to listen on: unix:PATH or tcp:HOST:PORT (port 0: the system picks one, printed)")
	cmd.Flags().StringVar(&system, "system", "", "system spec key=value,...: arch, devices, switch, revision (instead of the system flags)")
	cmd.Flags().StringVar(&vfioDir, "vfio-user", "", "serve each device as a vfio-user PCI function on `DIR`/neuronN.sock (for QEMU's vfio-user-pci)")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "allow a TCP listener on a non-loopback address (a warning is printed)")
	limits.add(cmd)
	cmd.MarkFlagsMutuallyExclusive("listen", "vfio-user")
	cmd.MarkFlagsOneRequired("listen", "vfio-user")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("system") {
			if err := refuseEmpty(cmd, "system", "--system", system, "give key=value,... (keys: arch, devices, switch, revision)"); err != nil {
				return err
			}
			if g := sf.given(); len(g) > 0 {
				return fmt.Errorf("--system and %s both describe the served system: give the system once, in --system or in the flags", strings.Join(g, ", "))
			}
			if err := sf.parseSystemSpec(system); err != nil {
				return err
			}
		}
		opts, err := limits.options()
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if cmd.Flags().Changed("vfio-user") {
			return serveVFIOUser(ctx, cmd, sf, vfioDir, opts)
		}
		for _, name := range vfioOnlyServeFlags {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s bounds vfio-user clients; --listen serves none (give it with --vfio-user)", name)
			}
		}
		return serveSystem(ctx, cmd, sf, listen, allowRemote, opts)
	}
	return cmd
}

// serveLog is serve's log of what its servers refused or closed, on
// standard error: a peer can make the servers complain as often as it
// connects or sends, so at most lograte.DefaultBurst lines are written at
// once and one a second after that, the lines dropped counted in the next
// line written (and at exit).
func serveLog(cmd *cobra.Command) *lograte.Limiter {
	return lograte.NewDefault(cmd.ErrOrStderr(), "neuronsim serve: ")
}

// A served simulated device sleeps in slices: the server lets other
// clients' requests in between them (remote.SleepSliceEvents).
var _ ndl.SliceSleeper = (*sim.Device)(nil)

// serveSystem builds the system — one fabric.System, as --vfio-user does
// (newServedSystem): one virtual clock, the fabric between the devices,
// one host memory — and serves its devices over the remote protocol until
// ctx ends. Every device is listed with the connected devices the local
// `ls` lists for the same spec, and the exports share one lock
// (remote.Export.Lock), since their devices share one engine.
func serveSystem(ctx context.Context, cmd *cobra.Command, sf *systemFlags, listen string, allowRemote bool, o serveOptions) error {
	s, err := sf.servedSpec()
	if err != nil {
		return err
	}
	sys, err := newServedSystem(s, o.pageLimit, nil)
	if err != nil {
		return err
	}
	exports := remoteExports(sys)
	mem := measureServeMemory(o, 1) // one host-memory allocator: the system's
	restore, memNote := limitServeMemory(mem)
	defer restore()
	opts := o.server
	log := serveLog(cmd)
	defer log.Flush()
	opts.Logf = func(format string, args ...any) { log.Logf(format, args...) }
	srv, err := remote.NewServer(exports, opts)
	if err != nil {
		return err
	}
	l, err := remote.Listen(listen, allowRemote)
	if err != nil {
		return err
	}
	bound := remote.ListenerAddress(l)
	if remote.ReachableFromOtherHosts(l) {
		fmt.Fprintf(cmd.ErrOrStderr(), "neuronsim serve: warning: %s is reachable from other machines (--allow-remote); the protocol has no authentication or encryption, so anyone who reaches it can drive these devices\n", bound)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "serving %s (switch %s, revision %#02x) as one system, fabric %s, on %s\n",
		units.Plural(int64(s.Devices), "simulated "+s.product()+" device", "simulated "+s.product()+" devices"), s.Switch, s.Revision, sys.Topology().Kind, bound)
	fmt.Fprintf(cmd.ErrOrStderr(), "neuronsim serve: %s\n", memNote)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		if err := srv.Close(); err != nil {
			return err
		}
		return <-done
	case err := <-done:
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
}

// remoteExports returns the exports of a served system's devices: each
// named as the system names it, listed with its connected devices, and
// all sharing one export lock, since the devices share one engine and
// clock (a request to one must not run between the steps of a request to
// another: remote.Export.Lock).
func remoteExports(sys *servedSystem) []remote.Export {
	lock := new(sync.Mutex)
	devs := sys.Devices()
	exports := make([]remote.Export, len(devs))
	for i, d := range devs {
		exports[i] = remote.Export{Device: d, Name: d.Config().Name, Connected: sys.Connected[i], Lock: lock}
	}
	return exports
}
