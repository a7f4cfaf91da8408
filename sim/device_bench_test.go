package sim

import (
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// benchDevice returns a ready Trn3 device for the MMIO benchmarks.
func benchDevice(b *testing.B) dev {
	b.Helper()
	return newDev(b, DeviceConfig{Generation: hwarch.Mariana, Ready: true})
}

// BenchmarkDeviceRead32 reads a plain APB register: lock, range check, MMIO
// latency on the engine clock, atlas lookup, sparse-memory load.
func BenchmarkDeviceRead32(b *testing.B) {
	h := benchDevice(b)
	off := plainAPB(h.geo)[1]
	h.write(off, 1)
	b.ReportAllocs()
	var sink uint32
	for b.Loop() {
		v, err := h.d.Read32(h.reg, off)
		if err != nil {
			b.Fatal(err)
		}
		sink += v
	}
	_ = sink
}

func BenchmarkDeviceWrite32(b *testing.B) {
	h := benchDevice(b)
	off := plainAPB(h.geo)[1]
	h.write(off, 1) // the page exists: steady state
	b.ReportAllocs()
	i := uint32(0)
	for b.Loop() {
		if err := h.d.Write32(h.reg, off, i|1); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkDeviceSemaphoreIncr(b *testing.B) {
	h := benchDevice(b)
	off := h.ncSem(5, h.geo.BAR0.SemIncrOffset, 17)
	b.ReportAllocs()
	for b.Loop() {
		if err := h.d.Write32(h.reg, off, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeviceReadBAR64 reads 64 words of HBM through BAR4 in one call.
func BenchmarkDeviceReadBAR64(b *testing.B) {
	h := benchDevice(b)
	h.write4(0x1000, 1)
	buf := make([]uint32, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := h.d.ReadBAR(hwarch.BAR4, 0x1000, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(buf)), "ns/word")
}

// BenchmarkSliceRead32Baseline is the floor: a load from a plain []uint32.
func BenchmarkSliceRead32Baseline(b *testing.B) {
	regs := make([]uint32, 1024)
	regs[17] = 1
	b.ReportAllocs()
	var sink uint32
	i := 0
	for b.Loop() {
		sink += regs[i&1023]
		i += 17
	}
	_ = sink
}

// TestDeviceAccessDoesNotAllocate pins the benchmarks' 0 allocs/op.
func TestDeviceAccessDoesNotAllocate(t *testing.T) {
	h := newDev(t, DeviceConfig{Generation: hwarch.Mariana, Ready: true})
	apb := plainAPB(h.geo)[1]
	sem := h.ncSem(5, h.geo.BAR0.SemIncrOffset, 17)
	h.write(apb, 1)
	h.write4(0, 1)
	buf := make([]uint32, 8)
	allocs := testing.AllocsPerRun(200, func() {
		_, _ = h.d.Read32(h.reg, apb)
		_ = h.d.Write32(h.reg, apb, 3)
		_ = h.d.Write32(h.reg, sem, 1)
		_ = h.d.ReadBAR(hwarch.BAR4, 0, buf)
		_ = h.d.WriteBAR(hwarch.BAR4, 0, buf)
		_, _ = h.d.Read32(h.reg, unmappedReg(h.geo)[0])
	})
	if allocs != 0 {
		t.Fatalf("BAR accesses allocate %v times per run", allocs)
	}
}

// BenchmarkDeviceWriteBAR4MiB writes 1 MiB of HBM through BAR4 in one call
// (the runtime's WriteDevice does this for inputs).
func BenchmarkDeviceWriteBAR4MiB(b *testing.B) {
	h := benchDevice(b)
	buf := make([]uint32, 1<<18)
	for i := range buf {
		buf[i] = uint32(i) | 1
	}
	b.ReportAllocs()
	b.SetBytes(4 << 18)
	for b.Loop() {
		if err := h.d.WriteBAR(hwarch.BAR4, 0x10000, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(buf)), "ns/word")
}
