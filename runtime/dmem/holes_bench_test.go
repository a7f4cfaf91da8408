package dmem

import (
	"fmt"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/benchcpu"
)

// holesBatch is how many blocks a holes benchmark allocates or frees
// between two pauses of its timer; the untimed half restores the layout.
const holesBatch = 4096

// holeyAllocator returns an allocator whose channel 0 small pool starts
// with one free range of holesBatch pages (the batch region), followed by
// holes one-page holes between one-page blocks.
func holeyAllocator(b *testing.B, holes int) *Allocator {
	b.Helper()
	a := newAlloc(b, hwarch.Cayman, Options{})
	alloc := func() Handle {
		h, err := a.Alloc(Request{Size: a.page, Channel: 0, NC: Any})
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	batch := make([]Handle, holesBatch)
	for i := range batch {
		batch[i] = alloc()
	}
	grid := make([]Handle, 2*holes)
	for i := range grid {
		grid[i] = alloc()
	}
	for i := 1; i < len(grid); i += 2 {
		if err := a.Free(grid[i]); err != nil {
			b.Fatal(err)
		}
	}
	for i := len(batch) - 1; i >= 0; i-- {
		if err := a.Free(batch[i]); err != nil {
			b.Fatal(err)
		}
	}
	return a
}

// BenchmarkFreeHoles frees one-page blocks with few and with 100 k holes in
// the pool; each Free coalesces with its neighbour.
func BenchmarkFreeHoles(b *testing.B) {
	for _, holes := range []int{8, 100_000} {
		b.Run(fmt.Sprintf("holes=%d", holes), func(b *testing.B) {
			a := holeyAllocator(b, holes)
			hs := make([]Handle, holesBatch)
			benchcpu.Batches(b, holesBatch, func(n int) {
				for i := range n {
					h, err := a.Alloc(Request{Size: a.page, Channel: 0, NC: Any})
					if err != nil {
						b.Fatal(err)
					}
					hs[i] = h
				}
			}, func(n int) {
				for i := n - 1; i >= 0; i-- {
					if err := a.Free(hs[i]); err != nil {
						b.Fatal(err)
					}
				}
			}, nil)
		})
	}
}

// BenchmarkAllocHoles allocates two-page blocks, which fit none of the
// one-page holes, with few and with 100 k holes; the untimed half frees them.
func BenchmarkAllocHoles(b *testing.B) {
	for _, holes := range []int{8, 100_000} {
		b.Run(fmt.Sprintf("holes=%d", holes), func(b *testing.B) {
			a := holeyAllocator(b, holes)
			hs := make([]Handle, holesBatch)
			benchcpu.Batches(b, holesBatch, nil, func(n int) {
				for i := range n {
					h, err := a.Alloc(Request{Size: 2 * a.page, Channel: 0, NC: Any})
					if err != nil {
						b.Fatal(err)
					}
					hs[i] = h
				}
			}, func(n int) {
				for i := n - 1; i >= 0; i-- {
					if err := a.Free(hs[i]); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
