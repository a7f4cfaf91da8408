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
	path := filepath.Join(socketDir(tb), "neuron0.sock")
	serveOn(tb, s, path)
	return s, path
}

// socketDir makes a temporary directory for sockets, removed when the
// test ends: unix socket paths are short (108 bytes), and tb.TempDir()
// can exceed that.
func socketDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "vfu")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serveOn has s serve a listener on the socket path until the test ends,
// then checks that Serve returned without an error once its listener
// closed.
func serveOn(tb testing.TB, s *Server, path string) {
	tb.Helper()
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
				tb.Errorf("Serve on %s: %v", path, err)
			}
		case <-time.After(10 * time.Second):
			tb.Errorf("Serve on %s did not return after its listener closed", path)
		}
	})
}

func isErrno(err error, e syscall.Errno) bool { return errors.Is(err, e) }
