package ndlcontract

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/ndl/ndltest"
	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
	"github.com/neuronsim/neuronsim/sim"
)

// The simulated device implements ndl.Device and all five optional
// interfaces; the contract below checks it at run time too, and fails if it
// gains one more. The remote backend does not fill lazy buffers (a fill
// function cannot cross the connection) nor sleep in slices (its server
// slices the served device's sleeps): its contract declares neither
// ndl.LazyHostMemory nor ndl.SliceSleeper, so it fails if it gains one.
var (
	_ ndl.Device         = (*sim.Device)(nil)
	_ ndl.Sleeper        = (*sim.Device)(nil)
	_ ndl.Clock          = (*sim.Device)(nil)
	_ ndl.HostMemory     = (*sim.Device)(nil)
	_ ndl.LazyHostMemory = (*sim.Device)(nil)
	_ ndl.SliceSleeper   = (*sim.Device)(nil)
)

// config is one simulated device under test and what the contract expects
// of it, from hw/arch: the registers on the generation's register BAR of the
// revision's mode, sized to the smallest BAR that holds them, and BAR4 the
// window onto HBM.
type config struct {
	name string
	cfg  sim.DeviceConfig
	want ndltest.Capabilities
}

func configs(t *testing.T) []config {
	var cs []config
	for _, device := range []uint16{hwarch.DeviceTrn1, hwarch.DeviceInf2, hwarch.DeviceTrn2, hwarch.DeviceTrn3, hwarch.DeviceTrn3B} {
		g, err := hwarch.GenerationOfDevice(hwarch.VendorAmazon, device)
		if err != nil {
			t.Fatal(err)
		}
		for _, rev := range []uint8{0x01, hwarch.RevisionEMU, hwarch.RevisionQEMU} {
			geo := hwarch.MustGeometry(g)
			mode := hwarch.ModeOf(rev)
			var bars [6]uint64
			bars[geo.BAR0.RegisterBAR(mode)] = geo.BAR0.MinimumBAR0
			bars[hwarch.BAR4] = geo.BAR0.MinimumBAR4
			if mode == hwarch.ModeQEMU && g != hwarch.Sunda {
				// Driver 2.24.7.0 under QEMU takes BAR4 in (4 GiB, 96 GiB]
				// (sim/bar.DefaultQEMUBAR4 documents why); 16 GiB here.
				bars[hwarch.BAR4] = 16 * hwarch.GiB
			}
			cs = append(cs, config{
				name: fmt.Sprintf("%#04x/%s", device, mode),
				cfg:  sim.DeviceConfig{DeviceID: device, Revision: rev, Ready: true, BARs: bars},
				want: ndltest.Capabilities{
					Identity: hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: device, Revision: rev},
					BARs:     bars,
					Sleeper:  true, Clock: true, HostMemory: true,
				},
			})
		}
	}
	return cs
}

func newDevice(t *testing.T, cfg sim.DeviceConfig) *sim.Device {
	t.Helper()
	d, err := sim.NewDevice(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The in-process backend: the simulated device is the ndl.Device, with lazy
// host buffers. Its host memory errors are the host-memory model's.
func TestInProcessBackendContract(t *testing.T) {
	for _, c := range configs(t) {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			want.HostFreeErr, want.HostAccessErr = sim.ErrHostBadFree, sim.ErrHostRange
			want.LazyHostMemory, want.HostLazyErr = true, sim.ErrHostLazy
			want.SliceSleeper = true
			ndltest.RunContract(t, func(t *testing.T) ndl.Device { return newDevice(t, c.cfg) }, want)
		})
	}
}

// The remote backend: a client of a server that serves a simulated device
// on a unix socket. The server refuses host memory this connection did not
// allocate before the device sees it (remote.ErrNotOwned).
func TestRemoteBackendContract(t *testing.T) {
	for _, c := range configs(t) {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			want.HostFreeErr, want.HostAccessErr = remote.ErrNotOwned, remote.ErrNotOwned
			ndltest.RunContract(t, func(t *testing.T) ndl.Device { return serve(t, newDevice(t, c.cfg)) }, want)
		})
	}
}

// serve serves d on a unix socket and returns a remote client's handle on
// it. Server and client close when the test ends.
func serve(t *testing.T, d *sim.Device) ndl.Device {
	t.Helper()
	// Unix socket paths are short; t.TempDir() can exceed the limit.
	dir, err := os.MkdirTemp("", "nsim")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := "unix:" + filepath.Join(dir, "s")
	srv, err := remote.NewServer([]remote.Export{{Device: d, Name: "nd0"}}, remote.ServerOptions{
		Logf: func(format string, args ...any) { t.Logf("server: "+format, args...) },
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := remote.Listen(addr, false)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	c, err := remote.Dial(addr, remote.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := c.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("client close: %v", err)
		}
		if err := srv.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			t.Errorf("server close: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return dev
}
