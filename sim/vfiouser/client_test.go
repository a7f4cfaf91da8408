package vfiouser

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
)

// testClient is a Client that fails its test on a broken handshake.
type testClient struct {
	*Client
	tb testing.TB
}

func dial(tb testing.TB, path string) *testClient {
	tb.Helper()
	c, err := Dial(path)
	if err != nil {
		tb.Fatalf("dial %s: %v", path, err)
	}
	tb.Cleanup(func() { c.Close() })
	return &testClient{Client: c, tb: tb}
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

func (tc *testClient) handshake() {
	tc.tb.Helper()
	if _, err := tc.Version(clientCaps); err != nil {
		tc.tb.Fatalf("VERSION: %v", err)
	}
}

func (tc *testClient) call(cmd uint16, payload []byte, fds ...int) (Header, []byte, error) {
	return tc.Call(cmd, payload, fds...)
}

func (tc *testClient) regionRead(region uint32, off uint64, n uint32) ([]byte, error) {
	return tc.RegionRead(region, off, n)
}

func (tc *testClient) regionWrite(region uint32, off uint64, data []byte) error {
	return tc.RegionWrite(region, off, data)
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
