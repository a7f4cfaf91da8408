package systemtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
	"github.com/neuronsim/neuronsim/sim"
)

// The in-process backend: the simulated device is the ndl.Device.
var (
	_ ndl.Device  = (*sim.Device)(nil)
	_ ndl.Sleeper = (*sim.Device)(nil)
)

func backends() []backend {
	return []backend{
		{"inprocess", func(t testing.TB, d *sim.Device) ndl.Device { return d }},
		{"remote", openRemote},
	}
}

// openRemote serves d on a unix socket and returns a remote client's view
// of it. Server and client close when the test ends.
func openRemote(t testing.TB, d *sim.Device) ndl.Device {
	t.Helper()
	// Unix socket paths are short; t.TempDir() can exceed the limit.
	dir, err := os.MkdirTemp("", "nsim")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := "unix:" + filepath.Join(dir, "s")
	srv, err := remote.NewServer([]remote.Export{{Device: d, Name: d.Config().Name}}, remote.ServerOptions{
		Logf: func(format string, args ...any) { t.Logf("server: "+format, args...) },
	})
	require.NoError(t, err)
	l, err := remote.Listen(addr, false)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	c, err := remote.Dial(addr, remote.ClientOptions{})
	require.NoError(t, err)
	dev, err := c.Device(0)
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return dev
}

func TestRemoteBackendReportsTheSimulatedDevice(t *testing.T) {
	d := newDevice(t, 4, 0xF0, 9)
	r := openRemote(t, d)
	require.Equal(t, d.Identity(), r.Identity())
	for b := 0; b < 6; b++ {
		require.Equal(t, d.BARSize(b), r.BARSize(b), fmt.Sprintf("BAR%d", b))
	}
}
