package dmem

import (
	"math/bits"

	"github.com/neuronsim/neuronsim/internal/extent"
)

// span is a half-open device-address range [start, end).
type span struct{ start, end uint64 }

// pool is one first-fit region: its free ranges, non-empty and never
// adjacent (freeing coalesces), in a tree ordered by address that finds the
// lowest range holding a request at an alignment in O(log n).
type pool struct {
	start, end uint64
	free       *extent.Tree
	shift      uint // log2 of the page: alignment class c is the page << c
	used       uint64
}

// newPool returns the pool [start, end), all free; start and end are
// multiples of page, a power of two.
func newPool(start, end, page uint64) pool {
	shift := uint(bits.TrailingZeros64(page))
	p := pool{start: start, end: end, shift: shift, free: extent.New(shift, 64-int(shift))}
	if end > start {
		p.free.Insert(start, end)
	}
	return p
}

// class returns the alignment class of align, a power of two ≥ the page.
func (p *pool) class(align uint64) int { return bits.TrailingZeros64(align) - int(p.shift) }

// alloc takes the lowest free range that holds size bytes at an address that
// is a multiple of align (a power of two ≥ the page) and returns that address.
func (p *pool) alloc(size, align uint64) (uint64, bool) {
	s, ok := p.free.FirstFit(size, p.class(align))
	if !ok {
		return 0, false
	}
	addr, _ := extent.AlignUp(s.Start, align) // FirstFit checked it
	p.free.Take(s, addr, addr+size)
	p.used += size
	return addr, true
}

// release returns [addr, addr+size) to the free ranges, merging it with the
// free neighbours it touches.
func (p *pool) release(addr, size uint64) {
	p.free.Add(addr, addr+size)
	p.used -= size
}

// contains reports whether [addr, addr+size) lies inside the pool.
func (p *pool) contains(addr, size uint64) bool {
	return addr >= p.start && addr <= p.end && size <= p.end-addr
}

// largest returns the size of the largest free range.
func (p *pool) largest() uint64 { return p.free.Best(0) }

// largestAligned returns the largest size that alloc could serve at align.
func (p *pool) largestAligned(align uint64) uint64 { return p.free.Best(p.class(align)) }

// spans returns the free ranges in address order.
func (p *pool) spans() []span {
	out := make([]span, 0, p.free.Len())
	p.free.Ascend(func(e extent.Extent) bool {
		out = append(out, span{e.Start, e.End})
		return true
	})
	return out
}

// total returns the bytes the pool manages.
func (p *pool) total() uint64 { return p.end - p.start }
