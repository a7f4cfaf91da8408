package vfiouser

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
)

// socketPair returns the two ends of a connected unix stream socket pair.
func socketPair(tb testing.TB) (*net.UnixConn, *net.UnixConn) {
	tb.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "vfio-user")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			tb.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

var (
	fuzzOnce sync.Once
	fuzzSrv  *Server
	fuzzFD   int // a memfd of 256 KiB the fuzzed client sends with its stream
)

// FuzzServer: after a valid VERSION, any byte stream from the client never
// crashes the server, and a fresh client that speaks the protocol is then
// served as usual; the server holds no descriptor of either session after
// it. By the stream's length modulo 3 the fuzzed client
//   - 0: closes its socket right after the stream, while the server may
//     still be reading a message, replying, or waiting for a
//     DMA_READ/DMA_WRITE reply;
//   - 1: sends the stream in pieces of 1 to 13 bytes, each with 0 to 3
//     copies of a memfd's descriptor (by the piece's first byte): DMA_MAPs
//     of a file, SET_IRQS with descriptors, and descriptors on messages
//     that take none or that come in many pieces; then half-closes and
//     reads every reply;
//   - 2: sends it whole, half-closes and reads every reply.
func FuzzServer(f *testing.F) {
	for _, seed := range fuzzServerSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOnce.Do(func() {
			// the device DMAs into the fuzzed client's memory, and its clock
			// is paced by wall time
			// no back-off after a stall (StallBackoff): the fresh client
			// of each iteration is served at once
			opt := Options{ReplyTimeout: 20 * time.Millisecond, StallBackoff: time.Nanosecond, MaxDataXferSize: 64 << 10}
			mem, err := NewGuestMemory(opt)
			if err != nil {
				t.Fatal(err)
			}
			dev, err := sim.NewWiredDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Revision: hwarch.RevisionQEMU, RoutingID: 3, Ready: true}, sim.Wiring{Host: mem})
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(dev, opt)
			if err != nil {
				t.Fatal(err)
			}
			fuzzSrv = s
			fd, err := unix.MemfdCreate("fuzz-guest-ram", unix.MFD_CLOEXEC)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Ftruncate(fd, 256<<10); err != nil {
				t.Fatal(err)
			}
			fuzzFD = fd // kept for the process's life: every iteration sends it
		})
		s := fuzzSrv
		session := func(body func(c *testClient)) {
			srvEnd, cliEnd := socketPair(t)
			done := make(chan struct{})
			go func() {
				_ = s.ServeConn(srvEnd) // errors are the point: the input is arbitrary
				close(done)
			}()
			c := &testClient{Client: NewClient(cliEnd), tb: t}
			body(c)
			cliEnd.Close()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not end the session after the client closed")
			}
		}
		fdsBefore := openFDCount(t)
		session(func(c *testClient) {
			c.handshake()
			if err := sendFuzzed(c, data, len(data)%3, fuzzFD); err != nil {
				t.Fatal(err)
			}
		})
		session(func(c *testClient) {
			c.handshake()
			p, err := c.regionRead(RegionConfig, 0, 4)
			if err != nil {
				t.Fatalf("fresh client: %v", err)
			}
			if v := uint16(p[0]) | uint16(p[1])<<8; v != s.dev.Identity().Vendor {
				t.Fatalf("fresh client reads vendor %#x", v)
			}
			if n := len(s.Memory().Mappings()); n != 0 {
				t.Fatalf("%d mappings left from the fuzzed session", n)
			}
		})
		if n := openFDCount(t); n > fdsBefore {
			t.Fatalf("%d descriptors open after the sessions, %d before", n, fdsBefore)
		}
	})
}

// fuzzServerSeeds are FuzzServer's seeds: streams a client sends after
// its VERSION.
func fuzzServerSeeds(tb testing.TB) [][]byte {
	seeds := [][]byte{
		{},
		msgBytes(Header{ID: 2, Command: CmdDeviceGetInfo}, le32(16, 0, 0, 0)),
		msgBytes(Header{ID: 3, Command: CmdRegionRead}, rwPayload(0, RegionConfig, 64, nil)),
		msgBytes(Header{ID: 4, Command: CmdDMAMap}, dmaMap(3, 0, 0x1000, 0x1000)),
		msgBytes(Header{ID: 5, Command: CmdSetIRQs}, le32(20, IRQSetDataEventfd|IRQSetActionTrig, 0, 0, 1)),
		msgBytes(Header{ID: 6, Command: CmdRegionWriteMulti}, append(le64(nil, 1), rwPayload(4, RegionConfig, 2, make([]byte, 8))...)),
		append(msgBytes(Header{ID: 7, Command: CmdRegionWrite}, rwPayload(0, 0, 4, []byte{1, 2, 3, 4})), 1, 2, 3),
		msgBytes(Header{ID: 8, Command: CmdDeviceReset}, nil),
		guestDMASeed(tb),
	}
	// In pieces with descriptors (length 1 modulo 3): a DMA_MAP of the file
	// (only its first piece, of 6 bytes, carries one), then a read of
	// config space whose pieces carry some.
	inPieces := append(msgBytes(Header{ID: 0x15, Command: CmdDMAMap}, dmaMap(DMAFlagRead|DMAFlagWrite, 0, 0x40000, 0x40000)),
		msgBytes(Header{ID: 0x33, Command: CmdRegionRead}, rwPayload(0, RegionConfig, 64, nil))...)
	for len(inPieces)%3 != 1 {
		inPieces = append(inPieces, 0) // the start of a header that never ends
	}
	return append(seeds, inPieces)
}

// sendFuzzed sends data, a fuzzed stream, on c (its VERSION accepted)
// in one of FuzzServer's ways, by mode:
//   - 0: writes it and returns at once (the caller closes the socket);
//   - 1: in pieces of 1 to 13 bytes, each with 0 to 3 copies of fd (by the
//     piece's first byte), then half-closes and reads every message until
//     the server closes the session;
//   - 2: whole, then half-closes and reads every message until the server
//     closes the session.
//
// It never answers the server's DMA_READ/DMA_WRITE. The error says that
// the server did not close the session within 10 s of the end of stream
// (modes 1 and 2); it calls no testing.T method, so that it may run on a
// goroutine of its own.
func sendFuzzed(c *testClient, data []byte, mode int, fd int) error {
	switch mode {
	case 0:
		_, _ = c.c.Write(data) // the server may end the session part way: the write fails
		return nil
	case 1:
		drained := drainReplies(c)
		fds := []int{fd, fd, fd}
		for p := data; len(p) > 0; {
			k, n := min(len(p), 1+int(p[0]>>2%13)), int(p[0]&3)
			var oob []byte
			if n > 0 {
				oob = syscall.UnixRights(fds[:n]...)
			}
			if _, _, err := c.c.WriteMsgUnix(p[:k], oob, nil); err != nil {
				break // the server ended the session
			}
			p = p[k:]
		}
		_ = c.c.CloseWrite()
		return drainedWithin(drained)
	default:
		drained := drainReplies(c)
		_, _ = c.c.Write(data)
		_ = c.c.CloseWrite()
		return drainedWithin(drained)
	}
}

// drainReplies reads the server's messages until the session ends; the
// channel is closed then.
func drainReplies(c *testClient) chan struct{} {
	drained := make(chan struct{})
	go func() {
		for {
			if _, _, err := c.recv(); err != nil {
				break
			}
		}
		close(drained)
	}()
	return drained
}

// drainedWithin waits up to 10 s for drainReplies to see the session end.
func drainedWithin(drained chan struct{}) error {
	select {
	case <-drained:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("the server did not close the session within 10 s of the client's end of stream")
	}
}

// openFDCount counts the process's open descriptors.
func openFDCount(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func msgBytes(h Header, payload []byte) []byte {
	h.Size = uint32(HeaderSize + len(payload))
	b := make([]byte, h.Size)
	h.Marshal(b)
	copy(b[HeaderSize:], payload)
	return b
}

// guestDMASeed is a stream that maps guest memory without a file and
// programs a host-to-device queue whose ring lies in it: the device's
// descriptor fetch goes to the client as DMA_READ (which the fuzzed client
// never answers, so the queue errors after the reply timeout).
func guestDMASeed(tb testing.TB) []byte { return guestDMAStream(tb, false) }

// guestDMAStream is guestDMASeed's stream; with reset, each queue half is
// reset first (q_sw_ctrl), so that the stream starts a DMA again on a
// device whose queue an earlier stream halted.
func guestDMAStream(tb testing.TB, reset bool) []byte {
	geo := hwarch.MustGeometry(hwarch.Cayman)
	eng, q, err := udma.H2TEngine(geo, 0)
	if err != nil {
		tb.Fatal(err)
	}
	base, err := udma.EngineBAR0(geo, eng)
	if err != nil {
		tb.Fatal(err)
	}
	reg := uint32(geo.BAR0.RegisterBAR(hwarch.ModeQEMU))
	const gpa = 0x8000_0000
	out := msgBytes(Header{ID: 10, Command: CmdDMAMap}, dmaMap(DMAFlagRead|DMAFlagWrite, 0, gpa, 0x10000))
	id := uint16(11)
	w := func(off uint64, v uint32) {
		out = append(out, msgBytes(Header{ID: id, Command: CmdRegionWrite}, rwPayload(base+off, reg, 4, le32(v)))...)
		id++
	}
	w(udma.M2S+udma.ChangeState, udma.ChangeNormal)
	w(udma.S2M+udma.ChangeState, udma.ChangeNormal)
	for i, half := range []uint64{udma.M2S, udma.S2M} {
		ring := geo.HostAddress(gpa + uint64(i)*0x1000)
		if reset {
			w(udma.QueueReg(half, q, []uint64{udma.QSwCtrlM2S, udma.QSwCtrlS2M}[i]), udma.QSwReset)
		}
		w(udma.QueueReg(half, q, udma.QBaseLo), uint32(ring))
		w(udma.QueueReg(half, q, udma.QBaseHi), uint32(ring>>32))
		w(udma.QueueReg(half, q, udma.QLength), udma.MinRing)
		w(udma.QueueReg(half, q, udma.QCfg), udma.QCfgDriver)
	}
	w(udma.QueueReg(udma.S2M, q, udma.QTailInc), 1)
	w(udma.QueueReg(udma.M2S, q, udma.QTailInc), 1)
	return out
}

// FuzzVersionData: any VERSION data either is refused with an error that
// wraps ErrMessage or ErrLimit, or gives capabilities within their bounds;
// it never panics.
func FuzzVersionData(f *testing.F) {
	for _, s := range []string{"", "{}", clientCaps, `null`, `{"capabilities":null}`, `{"capabilities":{"write_multiple":null}}`,
		`{"capabilities":{"max_msg_fds":null,"pgsizes":4096}}`, `[1]`, `{"capabilities":{"write_multiple":true}} {}`} {
		f.Add(append([]byte(s), 0))
	}
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		caps, err := parseVersionData(data)
		if err != nil {
			if !errors.Is(err, ErrMessage) && !errors.Is(err, ErrLimit) {
				t.Fatalf("error wraps neither ErrMessage nor ErrLimit: %v", err)
			}
			return
		}
		if caps.MaxMsgFDs > maxCapFDs || caps.MaxDataXferSize < 1 || caps.MaxDataXferSize > maxCapXfer ||
			caps.MaxDMAMaps < 1 || caps.MaxDMAMaps > maxCapMaps || caps.PgSizes < 1 {
			t.Fatalf("capabilities out of bounds: %+v", caps)
		}
	})
}
