package vfiouser

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// systemRig is a 2-device Trn2 system served as `neuronsim serve
// --vfio-user` serves one (newVFIOUserSystem): one fabric.System (one
// engine, one clock, one lock), each device with its own GuestMemory as
// its host port, one Pacer on the wall clock for both, each device's
// server on its own socket (Serve).
type systemRig struct {
	sys  *fabric.System
	srv  [2]*Server
	path [2]string
	log  *logLines
}

// newSystemRig builds and serves the system; each server takes opt (with
// the rig's log and the system's Pacer). The servers stop at tb's end.
func newSystemRig(tb testing.TB, opt Options) *systemRig {
	tb.Helper()
	r := &systemRig{log: &logLines{}}
	opt.Logf = r.log.logf
	ports := make([]sim.HostPort, 2)
	for i := range ports {
		mem, err := NewGuestMemory(opt)
		if err != nil {
			tb.Fatal(err)
		}
		ports[i] = mem
	}
	sys, err := fabric.New(fabric.Config{
		Generation: hwarch.Cayman, Devices: 2, Revision: hwarch.RevisionQEMU,
		Kind: fabric.AutoKind(hwarch.Cayman, 2), HostPorts: ports, Ready: true,
	})
	if err != nil {
		tb.Fatal(err)
	}
	r.sys = sys
	pacer, err := NewPacer(sys.Device(0), PacerOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	opt.Pacer = pacer
	dir := socketDir(tb)
	for i, d := range sys.Devices() {
		s, err := New(d, opt)
		if err != nil {
			tb.Fatal(err)
		}
		r.srv[i] = s
		r.path[i] = filepath.Join(dir, fmt.Sprintf("neuron%d.sock", i))
		serveOn(tb, s, r.path[i])
	}
	return r
}

// wellResult is what the well-behaved client of device 0 sees.
type wellResult struct {
	VendorDevice uint32    // config space bytes 0–3
	RoutingID    uint32    // the MISC RAM routing id word, read through the register BAR
	Status       [2]uint32 // the queue status after each copy
	Copied       []byte    // the bytes back in the client's memory
}

// wellBehaved runs a well-behaved client of device 0 of r: VERSION, the
// vendor and device id from config space, the routing id from a BAR,
// DMA_MAP of a memfd, and TestGuestDMA's copy guest → HBM → guest
// programmed through BAR writes the driver's way; then it closes.
func wellBehaved(t *testing.T, r *systemRig) wellResult {
	t.Helper()
	c := dial(t, r.path[0])
	defer c.Close()
	c.handshake()
	var res wellResult
	p, err := c.regionRead(RegionConfig, 0, 4)
	require.NoError(t, err)
	res.VendorDevice = binary.LittleEndian.Uint32(p)
	dev := r.sys.Device(0)
	geo := dev.Geometry()
	reg := uint32(dev.RegisterBAR())
	p, err = c.regionRead(reg, geo.BAR0.MiscRAM+hwarch.MiscRoutingID, 4)
	require.NoError(t, err)
	res.RoutingID = binary.LittleEndian.Uint32(p)
	fd, err := unix.MemfdCreate("guest-ram", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(fd) // now, not at the test's end: the caller counts descriptors
	require.NoError(t, unix.Ftruncate(fd, guestSize))
	_, _, err = c.call(CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0, guestBase, guestSize), fd)
	require.NoError(t, err)
	ram, err := unix.Mmap(fd, 0, guestSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(ram)
	eng, q, err := udma.H2TEngine(geo, 0)
	require.NoError(t, err)
	base, err := udma.EngineBAR0(geo, eng)
	require.NoError(t, err)
	g := &guestRig{t: t, dev: dev, srv: r.srv[0], c: c, ram: ram, geo: geo, eng: eng, q: q, engBase: base, phase: udma.FirstRingID}
	g.initQueue()
	hbm := geo.HBM[0].Base + 0x10000
	src, back := uint64(guestBase+0x4000), uint64(guestBase+0x8000)
	for i := range 0x1000 {
		ram[src-guestBase+uint64(i)] = byte(i*7 + 3)
	}
	res.Status[0] = g.copy(geo.HostAddress(src), hbm, 0x1000)
	res.Status[1] = g.copy(hbm, geo.HostAddress(back), 0x1000)
	res.Copied = bytes.Clone(ram[back-guestBase:][:0x1000])
	return res
}

// fuzzWellBound bounds the well-behaved client's run beside a fuzzed one:
// alone it takes milliseconds; the fuzzed client can hold the system for
// at most the reply timeout (20 ms) per DMA message of the server's, and
// for its wait budget (30 ms, and a tenth of the time) in all, its session
// then ending.
const fuzzWellBound = 5 * time.Second

// fuzzSlowReply is how long the fuzzed client of mode 4 takes to answer
// each DMA request: just inside the rig's reply timeout (20 ms).
const fuzzSlowReply = 15 * time.Millisecond

// fuzzGPA is where guestDMAStream maps its 64 KiB without a file.
const fuzzGPA = 0x8000_0000

// slowClientRAM is the memory the fuzzed client of mode 4 answers DMA
// requests from: at fuzzGPA, the rings of guestDMAStream's queue with one
// descriptor pair, a copy of 32 KiB from HBM to fuzzGPA+0x4000, so that
// the queue's run is a few DMA requests (its descriptors read, its data
// written), not one.
func slowClientRAM(tb testing.TB) []byte {
	geo := hwarch.MustGeometry(hwarch.Cayman)
	ram := make([]byte, 0x10000)
	const n = 0x8000
	tlc, err := udma.LenCtrl(n, udma.FirstRingID, udma.FlagFirst|udma.FlagLast)
	if err != nil {
		tb.Fatal(err)
	}
	rlc, err := udma.LenCtrl(n, udma.FirstRingID, 0)
	if err != nil {
		tb.Fatal(err)
	}
	udma.Descriptor{LenCtrl: tlc, Meta: udma.DefaultMetaCtrl, Addr: geo.HBM[0].Base + 0x10000}.Put(ram)
	udma.Descriptor{LenCtrl: rlc, Addr: geo.HostAddress(fuzzGPA + 0x4000)}.Put(ram[0x1000:])
	return ram
}

// FuzzSystemSessions: two devices of one system, served on two sockets,
// have two clients at once. Device 0's client is well-behaved
// (wellBehaved); device 1's sends, after a valid VERSION, the fuzzed
// stream data[1:] concurrently, in a way chosen by data[0] modulo 5: the
// three of FuzzServer (sendFuzzed: closing at once; in pieces with
// descriptors, then reading every message; whole, then reading every
// message — it never answers a DMA_READ/DMA_WRITE), 3: whole, and then
// it neither reads nor closes its socket until the well-behaved client is
// done (a DMA request of the server's waits for a reply that never comes,
// with the system held), or 4: whole, reading every message and answering
// each DMA request after fuzzSlowReply, just inside the reply timeout,
// from slowClientRAM, until the well-behaved client is done
// (the wait budget, 30 ms here, ends its session in the third request of
// a run of them). The well-behaved client sees exactly what it
// sees with device 1 idle, within fuzzWellBound; the server never panics;
// afterwards both servers are idle, device 1 has no mappings left, a
// fresh client of device 1 is served (once the back-off a stall started
// has passed: StallBackoff is 50 ms here), and no descriptor is left open.
func FuzzSystemSessions(f *testing.F) {
	// the stall: a DMA whose ring is in a mapping without a file, the
	// client then silent; first, as a seed with DEVICE_RESET makes the
	// device's firmware boot again, dropping BAR writes for half a second
	f.Add(append([]byte{3}, guestDMAStream(f, true)...))
	// the same DMA, each of its requests answered just inside the reply
	// timeout: the wait budget ends the session
	f.Add(append([]byte{4}, guestDMAStream(f, true)...))
	for _, seed := range fuzzServerSeeds(f) {
		for mode := range byte(5) {
			f.Add(append([]byte{mode}, seed...))
		}
	}
	r := newSystemRig(f, Options{ReplyTimeout: 20 * time.Millisecond, StallBackoff: 50 * time.Millisecond, WaitBudget: 30 * time.Millisecond, MaxDataXferSize: 64 << 10})
	// a memfd of 256 KiB the fuzzed client sends with its stream
	fuzzFD, err := unix.MemfdCreate("fuzz-guest-ram", unix.MFD_CLOEXEC)
	require.NoError(f, err)
	f.Cleanup(func() { unix.Close(fuzzFD) })
	require.NoError(f, unix.Ftruncate(fuzzFD, 256<<10))
	slowRAM := slowClientRAM(f)
	var once sync.Once
	var want wellResult // with device 1 idle
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		once.Do(func() { want = wellBehaved(t, r) })
		mode, stream := int(data[0]%5), data[1:]
		fdsBefore := openFDCount(t)

		hostile, err := Dial(r.path[1])
		require.NoError(t, err)
		defer hostile.Close()
		// the well-behaved client starts once the fuzzed one's stream is
		// on its way (mode 3: sent, or 10 ms into its sending, and what
		// the server sends back settled: a DMA request it then waits on
		// is sent)
		started, wellDone := make(chan struct{}), make(chan struct{})
		hostileDone := make(chan error, 1)
		go func() { // no testing.T method here: it is not the test's goroutine
			hc := &testClient{Client: hostile}
			if _, err := hostile.Version(clientCaps); err != nil {
				close(started)
				hostileDone <- fmt.Errorf("the fuzzed client's VERSION: %w", err)
				return
			}
			if mode < 3 {
				close(started)
				hostileDone <- sendFuzzed(hc, stream, mode, fuzzFD)
				return
			}
			if mode == 4 {
				hostile.ServeMemory(fuzzGPA, bytes.Clone(slowRAM))
				// reads and answers; only it sends on hostile (the stream's
				// c.c.Write is one call, not interleaved with its messages)
				var last atomic.Int64 // when it last read or answered a message
				last.Store(time.Now().UnixNano())
				ended := make(chan struct{})
				go func() {
					defer close(ended)
					for {
						h, p, err := hc.recv()
						if err != nil {
							return
						}
						last.Store(time.Now().UnixNano())
						if h.Type() == FlagCommand && (h.Command == CmdDMARead || h.Command == CmdDMAWrite) {
							time.Sleep(fuzzSlowReply)
							hc.serveDMA(h, p)
							last.Store(time.Now().UnixNano())
						}
					}
				}()
				_, _ = hostile.c.Write(stream)
				close(started)
				<-wellDone
				// then until the server ends the session or has sent nothing
				// for a while (its DMA requests come one after another)
			wait:
				for end := time.Now().Add(10 * time.Second); time.Since(time.Unix(0, last.Load())) < 4*fuzzSlowReply && time.Now().Before(end); {
					select {
					case <-ended:
						break wait
					case <-time.After(5 * time.Millisecond):
					}
				}
				_ = hostile.c.CloseWrite()
				select {
				case <-ended:
					hostileDone <- nil
				case <-time.After(10 * time.Second):
					hostileDone <- errors.New("the server did not close the slow client's session within 10 s of its end of stream")
				}
				return
			}
			sent := make(chan struct{})
			go func() { // blocks while the server does not read; fails once the socket is closed
				_, _ = hostile.c.Write(stream)
				close(sent)
			}()
			select {
			case <-sent:
			case <-time.After(10 * time.Millisecond):
			}
			unreadSettled(hostile.c)
			close(started)
			<-wellDone
			hostileDone <- nil
		}()
		<-started
		t0 := time.Now()
		got := wellBehaved(t, r)
		took := time.Since(t0)
		close(wellDone)
		require.Equal(t, want, got, "the well-behaved client of device 0 saw another result beside the fuzzed client of device 1")
		require.Less(t, took, fuzzWellBound, "the well-behaved client of device 0 took that long beside the fuzzed client of device 1")
		select {
		case err := <-hostileDone:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the fuzzed client's session did not end")
		}
		hostile.Close()
		waitIdle(t, r.srv[1])
		waitIdle(t, r.srv[0])
		require.Empty(t, r.srv[1].Memory().Mappings(), "mappings left from the fuzzed session")
		// a fuzzed client that stalled the system has its socket refuse
		// clients for StallBackoff (TestDMAStallBackoff)
		waitUntil(t, 10*time.Second, func() bool { return r.srv[1].backoffLeft() == 0 }, "device 1's back-off to pass")
		fresh := dial(t, r.path[1])
		served(t, r.srv[1], fresh)
		fresh.Close()
		waitIdle(t, r.srv[1])
		if n := openFDCount(t); n > fdsBefore {
			t.Fatalf("%d descriptors open after the sessions, %d before", n, fdsBefore)
		}
	})
}

// unreadSettled waits until c has bytes to read and their count stays
// the same for 2 ms (what the server sends before it waits is sent), at
// most 50 ms.
func unreadSettled(c *net.UnixConn) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	unread := func() int {
		n := -1
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		return n
	}
	last, since := -1, time.Now()
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(200 * time.Microsecond) {
		switch n := unread(); {
		case n != last:
			last, since = n, time.Now()
		case n > 0 && time.Since(since) >= 2*time.Millisecond:
			return
		}
	}
}
