package dma

import (
	"testing"

	"github.com/neuronsim/neuronsim/hw/udma"
)

// benchRing is the ring size of the benchmarks; a doorbell makes a whole
// batch of benchBatch pairs available.
const (
	benchRing  = 256
	benchBatch = 128
	benchSize  = 64 << 10
)

// benchCopies runs b.N descriptor pairs of benchSize bytes HBM→HBM through
// one queue, batch by batch, as the driver would: descriptors written into
// ring memory, S2M then M2S doorbell, then the clock runs to completion.
func benchCopies(b *testing.B, opts Options, copier bool) {
	r := newRig(b, rigOpts{opts: opts, copier: copier, hbmSize: 2*benchSize + 2*benchRing*udma.DescriptorSize + 4096})
	src := r.alloc(r.hbm, benchSize, 4096)
	dst := r.alloc(r.hbm, benchSize, 4096)
	r.fill(src, benchSize, 1)
	r.normal(0)
	d := r.setupQueue(0, 0, r.hbm, benchRing)
	r.clk.heap = make([]event, 0, 16)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(benchBatch, b.N-done)
		for i := 0; i < n; i++ {
			d.fastPush(r.hbm, src, dst, benchSize)
		}
		d.doorbell()
		r.clk.Run(-1)
		done += n
	}
	b.StopTimer()
	if got := r.queue(0, 0).Done; got != uint64(b.N) {
		b.Fatalf("done %d of %d", got, b.N)
	}
	if opts.TimingOnly {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/descriptor")
	}
}

// BenchmarkFunctionalCopy64KiB is functional DMA through the controller:
// host bytes per second of 64 KiB HBM→HBM descriptors on the fake bus,
// which reads into the controller's bounce buffer and writes from it.
func BenchmarkFunctionalCopy64KiB(b *testing.B) { benchCopies(b, Options{}, false) }

// BenchmarkFunctionalCopy64KiBCopier is the same through a bus that is a
// Copier (as the device's is): one copy, no bounce buffer.
func BenchmarkFunctionalCopy64KiBCopier(b *testing.B) { benchCopies(b, Options{}, true) }

// BenchmarkGoCopy64KiB is Go's copy of the same buffers: the ceiling.
func BenchmarkGoCopy64KiB(b *testing.B) {
	r := newRig(b, rigOpts{hbmSize: 2*benchSize + 4096})
	src := r.alloc(r.hbm, benchSize, 4096) - r.hbm.base
	dst := r.alloc(r.hbm, benchSize, 4096) - r.hbm.base
	s, d := r.hbm.mem[src:src+benchSize], r.hbm.mem[dst:dst+benchSize]
	b.SetBytes(benchSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(d, s)
	}
}

// BenchmarkTimingOnlyPerDescriptor is the host cost of one descriptor pair
// in timing-only mode: fetch, decode, checks, timing, event, completion (and
// the fake driver's two descriptor writes). Its MB/s is simulated bytes per
// host second.
func BenchmarkTimingOnlyPerDescriptor(b *testing.B) {
	benchCopies(b, Options{TimingOnly: true}, false)
}

// fastPush is push without the test helpers' bookkeeping (testing.TB.Helper
// costs more than the controller's whole work on a descriptor): the
// driver's two descriptors written straight into ring memory in reg.
func (d *drvQueue) fastPush(reg *region, src, dst uint64, n int) {
	tx := uint32(n)&udma.LenMask | uint32(d.m2s.phase)<<udma.RingIDShift | udma.FlagFirst | udma.FlagLast
	rx := uint32(n)&udma.LenMask | uint32(d.s2m.phase)<<udma.RingIDShift
	udma.Descriptor{LenCtrl: tx, Meta: udma.DefaultMetaCtrl, Addr: src}.Put(reg.mem[d.m2s.slot()-reg.base:])
	udma.Descriptor{LenCtrl: rx, Addr: dst}.Put(reg.mem[d.s2m.slot()-reg.base:])
	d.m2s.advance()
	d.s2m.advance()
	d.pending++
	d.pushed++
}
