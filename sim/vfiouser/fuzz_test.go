package vfiouser

import (
	"errors"
	"net"
	"os"
	"sync"
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
)

// FuzzServer: after a valid VERSION, any byte stream from the client never
// crashes the server, and a fresh client that speaks the protocol is then
// served as usual. The fuzzed client either half-closes after its stream
// and reads every reply, or (for a stream whose length is a multiple of 3)
// closes its socket at once, while the server may still be reading a
// message, replying, or waiting for a DMA_READ/DMA_WRITE reply.
func FuzzServer(f *testing.F) {
	f.Add([]byte{})
	f.Add(msgBytes(Header{ID: 2, Command: CmdDeviceGetInfo}, le32(16, 0, 0, 0)))
	f.Add(msgBytes(Header{ID: 3, Command: CmdRegionRead}, rwPayload(0, RegionConfig, 64, nil)))
	f.Add(msgBytes(Header{ID: 4, Command: CmdDMAMap}, dmaMap(3, 0, 0x1000, 0x1000)))
	f.Add(msgBytes(Header{ID: 5, Command: CmdSetIRQs}, le32(20, IRQSetDataEventfd|IRQSetActionTrig, 0, 0, 1)))
	f.Add(msgBytes(Header{ID: 6, Command: CmdRegionWriteMulti}, append(le64(nil, 1), rwPayload(4, RegionConfig, 2, make([]byte, 8))...)))
	f.Add(append(msgBytes(Header{ID: 7, Command: CmdRegionWrite}, rwPayload(0, 0, 4, []byte{1, 2, 3, 4})), 1, 2, 3))
	f.Add(msgBytes(Header{ID: 8, Command: CmdDeviceReset}, nil))
	f.Add(guestDMASeed(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOnce.Do(func() {
			// the device DMAs into the fuzzed client's memory, and its clock
			// is paced by wall time
			opt := Options{ReplyTimeout: 20 * time.Millisecond, MaxDataXferSize: 64 << 10}
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
		session(func(c *testClient) {
			c.handshake()
			if len(data)%3 == 0 {
				_, _ = c.c.Write(data) // the server may end the session part way: the write fails
				return                 // session closes the socket
			}
			drained := make(chan struct{})
			go func() {
				for {
					if _, _, err := c.recv(); err != nil {
						break
					}
				}
				close(drained)
			}()
			_, _ = c.c.Write(data)
			_ = c.c.CloseWrite()
			select {
			case <-drained:
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not close the session after the client's end of stream")
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
	})
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
func guestDMASeed(tb testing.TB) []byte {
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
