package sim

import (
	"fmt"
	"testing"

	"github.com/neuronsim/neuronsim/internal/benchcpu"
)

// hostBatch is how many buffers a host benchmark allocates or frees between
// two pauses of its timer: the untimed half of each round restores the
// layout, so the number of holes stays what the benchmark names.
const hostBatch = 4096

// holeyHost returns a host memory whose lowest hostBatch·64 bytes are one
// free extent (the batch region, refilled by the benchmarks), followed by
// holes 64-byte holes between 64-byte live buffers.
func holeyHost(b *testing.B, holes int) *HostMemory {
	b.Helper()
	h := NewHostMemory()
	batch := make([]uint64, hostBatch)
	for i := range batch {
		pa, err := h.Alloc(64, 64)
		if err != nil {
			b.Fatal(err)
		}
		batch[i] = pa
	}
	grid := make([]uint64, 2*holes)
	for i := range grid {
		pa, err := h.Alloc(64, 64)
		if err != nil {
			b.Fatal(err)
		}
		grid[i] = pa
	}
	for i := 1; i < len(grid); i += 2 {
		if err := h.Free(grid[i]); err != nil {
			b.Fatal(err)
		}
	}
	for i := len(batch) - 1; i >= 0; i-- {
		if err := h.Free(batch[i]); err != nil {
			b.Fatal(err)
		}
	}
	return h
}

// BenchmarkHostFree frees buffers of a host memory with few and with 100 k
// holes: each Free coalesces with its neighbour in the batch region, and the
// untimed refill puts the buffers back.
func BenchmarkHostFree(b *testing.B) {
	for _, holes := range []int{8, 100_000} {
		b.Run(fmt.Sprintf("holes=%d", holes), func(b *testing.B) {
			h := holeyHost(b, holes)
			pas := make([]uint64, hostBatch)
			benchcpu.Batches(b, hostBatch, func(n int) {
				for i := range n {
					pa, err := h.Alloc(64, 64)
					if err != nil {
						b.Fatal(err)
					}
					pas[i] = pa
				}
			}, func(n int) {
				for i := n - 1; i >= 0; i-- {
					if err := h.Free(pas[i]); err != nil {
						b.Fatal(err)
					}
				}
			}, nil)
		})
	}
}

// BenchmarkHostAlloc allocates 128-byte buffers, which fit none of the
// 64-byte holes, with few and with 100 k holes; the untimed half frees them
// again.
func BenchmarkHostAlloc(b *testing.B) {
	for _, holes := range []int{8, 100_000} {
		b.Run(fmt.Sprintf("holes=%d", holes), func(b *testing.B) {
			h := holeyHost(b, holes)
			pas := make([]uint64, hostBatch)
			benchcpu.Batches(b, hostBatch, nil, func(n int) {
				for i := range n {
					pa, err := h.Alloc(128, 64)
					if err != nil {
						b.Fatal(err)
					}
					pas[i] = pa
				}
			}, func(n int) {
				for i := n - 1; i >= 0; i-- {
					if err := h.Free(pas[i]); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkHostRead reads 256-byte bursts (16 descriptors, a DMA engine's
// descriptor fetch) from 16 KiB buffers, every other one lazy, taking the
// buffers in turn and each sequentially from its start, as DMA queues read
// their rings: with one buffer, and with 2,048, whose reads alternate from
// buffer to buffer. The lazy buffers' fill does nothing, so the figure is
// the host memory's own cost.
func BenchmarkHostRead(b *testing.B) {
	const size, burst = 16 << 10, 256
	for _, buffers := range []int{1, 2048} {
		b.Run(fmt.Sprintf("buffers=%d", buffers), func(b *testing.B) {
			h := NewHostMemory()
			bases := make([]uint64, buffers)
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i)
			}
			for i := range bases {
				var err error
				if i%2 == 1 {
					bases[i], err = h.AllocLazy(size, 256, func(uint64, []byte) error { return nil })
				} else if bases[i], err = h.Alloc(size, 256); err == nil {
					err = h.Write(bases[i], data)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			p := make([]byte, burst)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := i % buffers
				off := uint64(i/buffers) * burst % size
				if err := h.Read(bases[k]+off, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
