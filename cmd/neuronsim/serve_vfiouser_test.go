package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
	"github.com/neuronsim/neuronsim/sim/vfiouser"
)

// TestServeVFIOUserGuestDMA serves a 2-device Trn2 system over vfio-user
// and drives device 1 as a guest would: its firmware boot passes in wall
// time (pacing), and a copy programmed through BAR writes, with its rings
// and data in the client's memory, lands in the client's memory with no
// register access while it runs (the guest's DMA_MAP regions are the
// device's host memory).
func TestServeVFIOUserGuestDMA(t *testing.T) {
	dir, err := os.MkdirTemp("", "vfu") // short: unix socket paths are at most 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	_, errOut, stop := serveInProcess(t, "--vfio-user", dir, "--arch", "trn2", "--revision", "qemu", "--devices", "2")
	defer func() {
		stop()
		assert.Contains(t, errOut.String(), "neuron1: phase ready")
	}()
	sock := filepath.Join(dir, "neuron1.sock")
	var c *vfiouser.Client
	require.Eventually(t, func() bool {
		c, err = vfiouser.Dial(sock)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	defer c.Close()
	_, err = c.Version(`{"capabilities":{"max_msg_fds":16,"write_multiple":true}}`)
	require.NoError(t, err)

	geo := hwarch.MustGeometry(hwarch.Cayman)
	reg := uint32(geo.BAR0.RegisterBAR(hwarch.ModeQEMU))
	rd := func(off uint64) uint32 {
		p, err := c.RegionRead(reg, off, 4)
		require.NoError(t, err)
		return binary.LittleEndian.Uint32(p)
	}
	wr := func(off uint64, v uint32) {
		require.NoError(t, c.RegionWrite(reg, off, binary.LittleEndian.AppendUint32(nil, v)))
	}
	// the driver's ready poll, in wall time
	deadline := time.Now().Add(20 * time.Second)
	for rd(geo.BAR0.MiscRAM+hwarch.MiscRoutingID) == hwarch.NotReady {
		require.True(t, time.Now().Before(deadline), "the firmware did not boot in wall time")
		time.Sleep(50 * time.Millisecond)
	}

	const gpa, size = 0x8000_0000, 0x10000
	fd, err := unix.MemfdCreate("guest-ram", 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, unix.Ftruncate(fd, size))
	ram, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(ram)
	m := binary.LittleEndian.AppendUint32(nil, 32)
	m = binary.LittleEndian.AppendUint32(m, vfiouser.DMAFlagRead|vfiouser.DMAFlagWrite)
	for _, v := range []uint64{0, gpa, size} {
		m = binary.LittleEndian.AppendUint64(m, v)
	}
	_, _, err = c.Call(vfiouser.CmdDMAMap, m, fd)
	require.NoError(t, err)

	eng, q, err := udma.H2TEngine(geo, 0)
	require.NoError(t, err)
	base, err := udma.EngineBAR0(geo, eng)
	require.NoError(t, err)
	const n = 0x4000
	src, dst := uint64(gpa+0x4000), uint64(gpa+0x8000)
	want := bytes.Repeat([]byte("guest DMA bytes!"), n/16)
	copy(ram[src-gpa:], want)
	tlc, err := udma.LenCtrl(n, udma.FirstRingID, udma.FlagFirst|udma.FlagLast)
	require.NoError(t, err)
	rlc, err := udma.LenCtrl(n, udma.FirstRingID, 0)
	require.NoError(t, err)
	udma.Descriptor{LenCtrl: tlc, Meta: udma.DefaultMetaCtrl, Addr: geo.HostAddress(src)}.Put(ram[0:])
	udma.Descriptor{LenCtrl: rlc, Addr: geo.HostAddress(dst)}.Put(ram[0x1000:])
	wr(base+udma.M2S+udma.ChangeState, udma.ChangeNormal)
	wr(base+udma.S2M+udma.ChangeState, udma.ChangeNormal)
	for i, half := range []uint64{udma.M2S, udma.S2M} {
		ring := geo.HostAddress(gpa + uint64(i)*0x1000)
		wr(base+udma.QueueReg(half, q, udma.QBaseLo), uint32(ring))
		wr(base+udma.QueueReg(half, q, udma.QBaseHi), uint32(ring>>32))
		wr(base+udma.QueueReg(half, q, udma.QLength), udma.MinRing)
		wr(base+udma.QueueReg(half, q, udma.QCfg), udma.QCfgDriver)
	}
	wr(base+udma.QueueReg(udma.S2M, q, udma.QTailInc), 1)
	wr(base+udma.QueueReg(udma.M2S, q, udma.QTailInc), 1)
	deadline = time.Now().Add(20 * time.Second)
	for !bytes.Equal(want, ram[dst-gpa:][:n]) {
		require.True(t, time.Now().Before(deadline), "the copy did not land in the client's memory")
		time.Sleep(time.Millisecond)
	}
	assert.Zero(t, rd(base+udma.QueueReg(udma.M2S, q, udma.QStatus))&udma.ErrorBits)
}

// TestServeVFIOUserLimitFlags: with --vfio-user, --handshake-timeout is
// checked as for the remote protocol (0 and negative refused) and applies;
// the remote protocol's other client limits are refused, saying which
// limits apply.
func TestServeVFIOUserLimitFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--handshake-timeout", "0s"}, "--handshake-timeout 0s: must be in 1ms..24h0m0s"},
		{[]string{"--handshake-timeout", "-2s"}, "--handshake-timeout -2s: must be in 1ms..24h0m0s"},
		{[]string{"--handshake-timeout", "25h"}, "--handshake-timeout 25h0m0s: must be in 1ms..24h0m0s"},
		{[]string{"--idle-timeout", "5s"}, "--idle-timeout bounds remote-protocol clients; --vfio-user serves none"},
		{[]string{"--max-clients", "2"}, "of the limits, --handshake-timeout and --max-memory apply"},
	} {
		_, err := runCLI(t, append([]string{"serve", "--vfio-user", dir}, tc.args...)...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// TestServeVFIOUserHandshakeTimeout: serve --vfio-user closes a client that
// sends nothing within --handshake-timeout, logging why, and then serves
// the next client, which may stay idle past the timeout after VERSION.
func TestServeVFIOUserHandshakeTimeout(t *testing.T) {
	dir, err := os.MkdirTemp("", "vfu") // short: unix socket paths are at most 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	out, errOut, _ := serveInProcess(t, "--vfio-user", dir, "--arch", "trn2", "--revision", "qemu", "--handshake-timeout", "200ms")
	sock := filepath.Join(dir, "neuron0.sock")
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "serving") }, 10*time.Second, 5*time.Millisecond)

	start := time.Now()
	silent, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer silent.Close()
	require.NoError(t, silent.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = silent.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the server closes a silent connection")
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	require.Eventually(t, func() bool {
		return strings.Contains(errOut.String(), "neuron0: vfio-user: no message within the handshake timeout (200ms)")
	}, 10*time.Second, 5*time.Millisecond, "%s", errOut.String())

	c, err := vfiouser.Dial(sock)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Version(`{"capabilities":{"max_msg_fds":16}}`)
	require.NoError(t, err)
	time.Sleep(400 * time.Millisecond) // idle past the handshake timeout: nothing may happen
	p, err := c.RegionRead(vfiouser.RegionConfig, 0, 2)
	require.NoError(t, err)
	assert.Equal(t, uint16(0x1d0f), binary.LittleEndian.Uint16(p), "Amazon's PCI vendor id")
}

// TestServeVFIOUserLongPath: a folder whose sockets' paths would pass a
// Unix socket address's 107 bytes is refused before the folder is made,
// naming the socket path and the limit.
func TestServeVFIOUserLongPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", remote.MaxSocketPath))
	_, err := runCLI(t, "serve", "--vfio-user", dir, "--arch", "trn2", "--devices", "2")
	require.ErrorContains(t, err, "neuron1.sock is ")
	assert.ErrorContains(t, err, "past the 107 a Unix socket's address holds")
	assert.NoDirExists(t, dir)
}

// TestServeVFIOUserWaitFlags: --vfio-reply-timeout, --vfio-stall-backoff
// and --vfio-wait-budget are checked (a duration in 1ms..24h: 0, negative,
// past the range, not a duration or not whole nanoseconds refused, naming
// the flag), are vfiouser's defaults when not given, go into the servers'
// Options as given, and are refused with --listen, which serves no
// vfio-user client.
func TestServeVFIOUserWaitFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--vfio-reply-timeout", "0s"}, "--vfio-reply-timeout 0s: must be in 1ms..24h0m0s"},
		{[]string{"--vfio-reply-timeout", "-1s"}, "--vfio-reply-timeout -1s: must be in 1ms..24h0m0s"},
		{[]string{"--vfio-reply-timeout", "ten"}, `--vfio-reply-timeout "ten": expected a duration`},
		{[]string{"--vfio-stall-backoff", "0"}, "--vfio-stall-backoff 0s: must be in 1ms..24h0m0s"},
		{[]string{"--vfio-stall-backoff", "900us"}, "--vfio-stall-backoff 900µs: must be in 1ms..24h0m0s"},
		{[]string{"--vfio-stall-backoff", "25h"}, "--vfio-stall-backoff 25h0m0s: must be in 1ms..24h0m0s"},
		{[]string{"--vfio-wait-budget", "-5ms"}, "--vfio-wait-budget -5ms: must be in 1ms..24h0m0s"},
		{[]string{"--vfio-wait-budget", "24h0m0.001s"}, "--vfio-wait-budget 24h0m0.001s: must be in 1ms..24h0m0s"},
		{[]string{"--vfio-wait-budget", "1.5ns"}, `--vfio-wait-budget "1.5ns": not a whole number of nanoseconds`},
		{[]string{"--vfio-wait-budget", "1s", "--vfio-wait-budget", "2s"}, `--vfio-wait-budget 2s: given twice (first "1s")`},
	} {
		_, err := runCLI(t, append([]string{"serve", "--vfio-user", dir, "--arch", "trn2"}, tc.args...)...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
	sock := "unix:" + filepath.Join(t.TempDir(), "s.sock")
	for _, name := range []string{"--vfio-reply-timeout", "--vfio-stall-backoff", "--vfio-wait-budget"} {
		_, err := runCLI(t, "serve", "--listen", sock, "--arch", "trn2", name, "5s")
		assert.ErrorContains(t, err, name+" bounds vfio-user clients; --listen serves none", name)
	}

	options := func(args ...string) serveOptions {
		t.Helper()
		cmd := &cobra.Command{}
		var l serveLimits
		l.add(cmd)
		require.NoError(t, cmd.Flags().Parse(args))
		o, err := l.options()
		require.NoError(t, err)
		return o
	}
	o := options()
	assert.Equal(t, vfiouser.DefaultReplyTimeout, o.vfio.ReplyTimeout, "no --vfio-reply-timeout")
	assert.Equal(t, vfiouser.DefaultStallBackoff, o.vfio.StallBackoff, "no --vfio-stall-backoff")
	assert.Equal(t, vfiouser.DefaultWaitBudget, o.vfio.WaitBudget, "no --vfio-wait-budget")
	o = options("--vfio-reply-timeout", "1ms", "--vfio-stall-backoff", "24h", "--vfio-wait-budget", "1m30s")
	assert.Equal(t, time.Millisecond, o.vfio.ReplyTimeout)
	assert.Equal(t, 24*time.Hour, o.vfio.StallBackoff)
	assert.Equal(t, 90*time.Second, o.vfio.WaitBudget)
	// the help says each flag's range and default
	cmd := &cobra.Command{}
	var l serveLimits
	l.add(cmd)
	for name, def := range map[string]time.Duration{"vfio-reply-timeout": vfiouser.DefaultReplyTimeout, "vfio-stall-backoff": vfiouser.DefaultStallBackoff, "vfio-wait-budget": vfiouser.DefaultWaitBudget} {
		f := cmd.Flags().Lookup(name)
		require.NotNil(t, f, name)
		assert.Equal(t, def.String(), f.DefValue, "--%s's default, as --help prints it", name)
		assert.Contains(t, f.Usage, "(1ms..24h0m0s)", "--%s's range", name)
	}
}

// unreadClient connects to sock, has its VERSION accepted, then sends
// REGION_READs of config space and reads none of the replies: the
// server's replies fill the socket, and its write of the next one waits.
func unreadClient(t *testing.T, sock string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	vc := vfiouser.NewClient(c)
	_, err = vc.Version(`{"capabilities":{"max_msg_fds":16}}`)
	require.NoError(t, err)
	var buf, all []byte
	for i := range 512 { // 2 MiB of replies: far past a unix socket's buffers
		p := make([]byte, 16)
		binary.LittleEndian.PutUint32(p[8:], vfiouser.RegionConfig)
		binary.LittleEndian.PutUint32(p[12:], 4096)
		all = append(all, vfiouser.Frame(&buf, vfiouser.Header{ID: uint16(100 + i), Command: vfiouser.CmdRegionRead}, p)...)
	}
	_, err = c.Write(all)
	require.NoError(t, err)
	return c
}

// TestServeVFIOUserWaitFlagsApply: serve --vfio-user gives its servers
// the three flags. A client that stops reading its socket is ended after
// --vfio-reply-timeout, or sooner by --vfio-wait-budget when that is
// smaller and a client of another device of the system is connected
// (whom its waits stall), logged with the flag's value, and new clients
// are refused EAGAIN for --vfio-stall-backoff, then served. A client
// alone on the system is not charged the budget: only the reply timeout
// ends it.
func TestServeVFIOUserWaitFlagsApply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		other   bool // a client of neuron1 connected
		logged  string
		backoff time.Duration
	}{
		{"reply timeout", []string{"--vfio-reply-timeout", "150ms", "--vfio-stall-backoff", "700ms"}, false,
			"(ReplyTimeout); session ended", 700 * time.Millisecond},
		{"wait budget", []string{"--vfio-reply-timeout", "1m", "--vfio-wait-budget", "100ms", "--vfio-stall-backoff", "600ms"}, true,
			"when the session's wait budget ran out (WaitBudget 100ms plus a tenth of the time", 600 * time.Millisecond},
		{"wait budget, alone", []string{"--vfio-reply-timeout", "1500ms", "--vfio-wait-budget", "100ms", "--vfio-stall-backoff", "600ms"}, false,
			"read nothing of it in 1.5s (ReplyTimeout); session ended", 600 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "vfu") // short: unix socket paths are at most 108 bytes
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			out, errOut, _ := serveInProcess(t, append([]string{"--vfio-user", dir, "--arch", "trn2", "--devices", "2", "--revision", "qemu"}, tc.args...)...)
			sock := filepath.Join(dir, "neuron0.sock")
			require.Eventually(t, func() bool { return strings.Contains(out.String(), "serving") }, 10*time.Second, 5*time.Millisecond)
			if tc.other {
				other, err := vfiouser.Dial(filepath.Join(dir, "neuron1.sock"))
				require.NoError(t, err)
				t.Cleanup(func() { other.Close() })
				_, err = other.Version("")
				require.NoError(t, err)
			}

			unreadClient(t, sock)
			require.Eventually(t, func() bool {
				return strings.Contains(errOut.String(), "neuron0: vfio-user: session ended")
			}, 20*time.Second, 5*time.Millisecond, "%s", errOut.String())
			logged := errOut.String()
			assert.Contains(t, logged, tc.logged)
			assert.Contains(t, logged, "new clients are refused for "+tc.backoff.String()+" (StallBackoff)")
			ended := time.Now()

			c, err := vfiouser.Dial(sock)
			require.NoError(t, err)
			_, err = c.Version("")
			c.Close()
			if time.Since(ended) < tc.backoff/2 { // not on a host too loaded to tell
				assert.ErrorIs(t, err, syscall.EAGAIN, "a client within the back-off")
			}
			time.Sleep(time.Until(ended.Add(tc.backoff + 100*time.Millisecond)))
			c, err = vfiouser.Dial(sock)
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Version("")
			require.NoError(t, err, "a client after the back-off")
		})
	}
}
