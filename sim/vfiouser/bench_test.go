package vfiouser

import (
	"encoding/binary"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// BenchmarkMMIORead is one REGION_READ of the routing-id register (a BAR0
// register) over a unix socket: the Go test client and the server in this
// process (allocs/op counts both sides).
func BenchmarkMMIORead(b *testing.B) {
	dev := newTestDevice(b)
	_, path := startServer(b, dev, Options{})
	c := dial(b, path)
	c.handshake()
	off := dev.Geometry().BAR0.MiscRAM + hwarch.MiscRoutingID
	reg := uint32(dev.RegisterBAR())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, err := c.RegionRead(reg, off, 4)
		if err != nil || binary.LittleEndian.Uint32(p) != 3 {
			b.Fatalf("routing id %x, %v", p, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
}

// BenchmarkMMIOReadInProcess is the same read without the protocol.
func BenchmarkMMIOReadInProcess(b *testing.B) {
	dev := newTestDevice(b)
	off := dev.Geometry().BAR0.MiscRAM + hwarch.MiscRoutingID
	b.ReportAllocs()
	for range b.N {
		if v, err := dev.Read32(dev.RegisterBAR(), off); err != nil || v != 3 {
			b.Fatalf("routing id %#x, %v", v, err)
		}
	}
}
