package vfiouser

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
)

// testClient speaks the protocol to a server over a unix socket. It
// answers the server's DMA_READ/DMA_WRITE requests from ram (by address
// ramBase).
type testClient struct {
	tb      testing.TB
	c       *net.UnixConn
	id      uint16
	ram     []byte
	ramBase uint64
	buf     []byte
}

func dial(tb testing.TB, path string) *testClient {
	tb.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		tb.Fatalf("dial %s: %v", path, err)
	}
	tb.Cleanup(func() { c.Close() })
	return &testClient{tb: tb, c: c}
}

// send writes one message.
func (tc *testClient) send(h Header, payload []byte, fds ...int) error {
	h.Size = uint32(HeaderSize + len(payload))
	if cap(tc.buf) < int(h.Size) {
		tc.buf = make([]byte, h.Size)
	}
	b := tc.buf[:h.Size]
	h.Marshal(b)
	copy(b[HeaderSize:], payload)
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	_, _, err := tc.c.WriteMsgUnix(b, oob, nil)
	return err
}

// recv reads one message.
func (tc *testClient) recv() (Header, []byte, error) {
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(tc.c, hb[:]); err != nil {
		return Header{}, nil, err
	}
	h, err := ParseHeader(hb[:])
	if err != nil {
		return h, nil, err
	}
	p := make([]byte, h.Size-HeaderSize)
	if _, err := io.ReadFull(tc.c, p); err != nil {
		return h, nil, err
	}
	return h, p, nil
}

// call sends a command and returns its reply, serving DMA requests that
// come first.
func (tc *testClient) call(cmd uint16, payload []byte, fds ...int) (Header, []byte, error) {
	tc.id++
	if err := tc.send(Header{ID: tc.id, Command: cmd}, payload, fds...); err != nil {
		return Header{}, nil, err
	}
	for {
		h, p, err := tc.recv()
		if err != nil {
			return h, p, err
		}
		if h.Type() == FlagCommand && (h.Command == CmdDMARead || h.Command == CmdDMAWrite) {
			tc.serveDMA(h, p)
			continue
		}
		if h.Type() != FlagReply || h.ID != tc.id || h.Command != cmd {
			return h, p, fmt.Errorf("reply %+v to command %d id %d", h, cmd, tc.id)
		}
		if h.Flags&FlagError != 0 {
			return h, p, syscall.Errno(h.Error)
		}
		return h, p, nil
	}
}

func (tc *testClient) serveDMA(h Header, p []byte) {
	addr, n := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
	rh := Header{ID: h.ID, Command: h.Command, Flags: FlagReply}
	if addr < tc.ramBase || addr-tc.ramBase > uint64(len(tc.ram)) || n > uint64(len(tc.ram))-(addr-tc.ramBase) {
		rh.Flags |= FlagError
		rh.Error = uint32(syscall.EFAULT)
		_ = tc.send(rh, nil)
		return
	}
	at := tc.ram[addr-tc.ramBase:][:n]
	out := append([]byte(nil), p[:16]...)
	if h.Command == CmdDMARead {
		out = append(out, at...)
	} else {
		copy(at, p[16:])
	}
	_ = tc.send(rh, out)
}

func versionPayload(major, minor uint16, json string) []byte {
	p := binary.LittleEndian.AppendUint16(nil, major)
	p = binary.LittleEndian.AppendUint16(p, minor)
	if json != "" {
		p = append(append(p, json...), 0)
	}
	return p
}

const clientCaps = `{"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535,"migration":{"pgsize":4096,"max_bitmap_size":1048576},"write_multiple":true}}`

func (tc *testClient) handshake() {
	tc.tb.Helper()
	if _, _, err := tc.call(CmdVersion, versionPayload(0, 1, clientCaps)); err != nil {
		tc.tb.Fatalf("VERSION: %v", err)
	}
}

func le32(v ...uint32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	return b
}

func le64(b []byte, v ...uint64) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return b
}

func rwPayload(off uint64, region, count uint32, data []byte) []byte {
	p := le64(nil, off)
	p = append(p, le32(region, count)...)
	return append(p, data...)
}

func (tc *testClient) regionRead(region uint32, off uint64, n uint32) ([]byte, error) {
	_, p, err := tc.call(CmdRegionRead, rwPayload(off, region, n, nil))
	if err != nil {
		return nil, err
	}
	if len(p) != 16+int(n) {
		return nil, fmt.Errorf("REGION_READ reply of %d bytes", len(p))
	}
	return p[16:], nil
}

func (tc *testClient) regionWrite(region uint32, off uint64, data []byte) error {
	_, _, err := tc.call(CmdRegionWrite, rwPayload(off, region, uint32(len(data)), data))
	return err
}

func newTestDevice(tb testing.TB) *sim.Device {
	tb.Helper()
	d, err := sim.NewDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Revision: hwarch.RevisionQEMU, RoutingID: 3, Ready: true})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// startServer serves dev on a socket in a temporary directory.
func startServer(tb testing.TB, dev *sim.Device, opt Options) (*Server, string) {
	tb.Helper()
	s, err := New(dev, opt)
	if err != nil {
		tb.Fatal(err)
	}
	// unix socket paths are short (108 bytes); tb.TempDir() can exceed that
	dir, err := os.MkdirTemp("", "vfu")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "neuron0.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	tb.Cleanup(func() {
		ln.Close()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			tb.Errorf("Serve did not return after the listener closed")
		}
	})
	return s, path
}

func isErrno(err error, e syscall.Errno) bool { return errors.Is(err, e) }
