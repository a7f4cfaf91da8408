package systemtest

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/vfiouser"
)

// BenchmarkMMIOReadRoundTrip reads the routing-id register (BAR0) of one
// simulated device over vfio-user (the Go test client) and over the remote
// protocol, in the same run: one round trip per op, client and server in
// this process.
func BenchmarkMMIOReadRoundTrip(b *testing.B) {
	newDev := func(b *testing.B) *sim.Device {
		d, err := sim.NewDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Revision: hwarch.RevisionQEMU, RoutingID: 3, Ready: true})
		require.NoError(b, err)
		return d
	}
	b.Run("vfio-user", func(b *testing.B) {
		d := newDev(b)
		s, err := vfiouser.New(d, vfiouser.Options{})
		require.NoError(b, err)
		dir, err := os.MkdirTemp("", "vfu")
		require.NoError(b, err)
		b.Cleanup(func() { os.RemoveAll(dir) })
		path := filepath.Join(dir, "neuron0.sock")
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		require.NoError(b, err)
		served := make(chan error, 1)
		go func() { served <- s.Serve(ln) }()
		c, err := vfiouser.Dial(path)
		require.NoError(b, err)
		b.Cleanup(func() {
			c.Close()
			ln.Close()
			require.NoError(b, <-served)
		})
		_, err = c.Version("")
		require.NoError(b, err)
		off := d.Geometry().BAR0.MiscRAM + hwarch.MiscRoutingID
		reg := uint32(d.RegisterBAR())
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			p, err := c.RegionRead(reg, off, 4)
			if err != nil || binary.LittleEndian.Uint32(p) != 3 {
				b.Fatalf("routing id %x, %v", p, err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
	})
	b.Run("remote", func(b *testing.B) {
		d := newDev(b)
		dev := openRemote(b, d)
		off := d.Geometry().BAR0.MiscRAM + hwarch.MiscRoutingID
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			v, err := dev.Read32(d.RegisterBAR(), off)
			if err != nil || v != 3 {
				b.Fatalf("routing id %#x, %v", v, err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
	})
}
