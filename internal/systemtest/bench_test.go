package systemtest

import (
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
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
