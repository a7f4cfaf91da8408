package systemtest

import (
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/sim"
)

// benchDevice brings up a Trn3 device on a backend for the csr benchmarks.
func benchDevice(b *testing.B, be backend) *bringup.Device {
	b.Helper()
	simDev := newDevice(b, hwarch.Mariana, 0, 0)
	d, err := bringup.BringUp(be.open(b, simDev), bringup.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// benchRegister is a plain APB register (apb_se_0 + 0x1000).
const benchRegister = 0x8000_1000

// BenchmarkCSRRead is csr_read of one register through runtime/csr → ndl →
// the device, on each backend; compare with BenchmarkSliceReadBaseline.
func BenchmarkCSRRead(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			d := benchDevice(b, be)
			va := d.VA(benchRegister)
			b.ReportAllocs()
			b.ResetTimer()
			var sink uint32
			for i := 0; i < b.N; i++ {
				v, err := d.CSR.Read(va)
				if err != nil {
					b.Fatal(err)
				}
				sink += v
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			_ = sink
		})
	}
}

// BenchmarkCSRWrite is csr_write of one register, as BenchmarkCSRRead.
func BenchmarkCSRWrite(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			d := benchDevice(b, be)
			va := d.VA(benchRegister)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := d.CSR.Write(va, uint32(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkSliceReadBaseline is the floor: a read from a plain slice.
func BenchmarkSliceReadBaseline(b *testing.B) {
	regs := make([]uint32, 1024)
	b.ReportAllocs()
	var sink uint32
	for i := 0; i < b.N; i++ {
		sink += regs[i&1023]
	}
	_ = sink
}

// BenchmarkDMACopyHBM is a functional 16 MiB HBM → HBM copy through the
// runtime's H2T queue (256 descriptors of 64 KiB and the marker) on the
// in-process device; b.SetBytes makes the figure host bytes/s. Compare with
// BenchmarkGoCopy16MiB.
func BenchmarkDMACopyHBM(b *testing.B) {
	_, up, m := dmaDevice(b, hwarch.Mariana, 0)
	const n = 16 << 20
	src := up.Geometry.HBM[0].Base + 64<<20
	dst := up.Geometry.HBM[0].Base + 128<<20
	if err := m.WriteDevice(src, pattern(n, 1)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Copy(0, dst, src, n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDMACopyTimingOnly is the same copy with no payload: the host cost
// of the descriptors alone (reported per descriptor).
func BenchmarkDMACopyTimingOnly(b *testing.B) {
	simDev, err := sim.NewDevice(sim.DeviceConfig{Generation: hwarch.Mariana, Ready: true, TimingOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	up, err := bringup.BringUp(simDev, bringup.Options{NoReset: true})
	if err != nil {
		b.Fatal(err)
	}
	m, err := dma.New(up)
	if err != nil {
		b.Fatal(err)
	}
	const n = 16 << 20
	base := up.Geometry.HBM[0].Base
	b.ReportAllocs()
	b.ResetTimer()
	pairs := 0
	for i := 0; i < b.N; i++ {
		p, err := m.Copy(0, base+128<<20, base+64<<20, n)
		if err != nil {
			b.Fatal(err)
		}
		pairs += p
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pairs), "ns/descriptor")
}

// BenchmarkGoCopy16MiB is the baseline: Go's copy of 16 MiB.
func BenchmarkGoCopy16MiB(b *testing.B) {
	src, dst := pattern(16<<20, 1), make([]byte, 16<<20)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		copy(dst, src)
	}
}
