package dmem

import "sort"

// span is a half-open device-address range [start, end).
type span struct{ start, end uint64 }

// pool is one first-fit region: a free list sorted by address whose ranges
// are non-empty and never adjacent (freeing coalesces).
type pool struct {
	start, end uint64
	free       []span
	used       uint64
}

func newPool(start, end uint64) pool {
	p := pool{start: start, end: end}
	if end > start {
		p.free = []span{{start, end}}
	}
	return p
}

// alloc takes the first free range that holds size bytes at an address that
// is a multiple of align (a power of two) and returns that address.
func (p *pool) alloc(size, align uint64) (uint64, bool) {
	for i, s := range p.free {
		addr, ok := alignUp(s.start, align)
		if !ok || addr >= s.end || size > s.end-addr {
			continue
		}
		var keep [2]span
		n := 0
		if addr > s.start {
			keep[n] = span{s.start, addr}
			n++
		}
		if addr+size < s.end {
			keep[n] = span{addr + size, s.end}
			n++
		}
		switch n {
		case 0:
			p.free = append(p.free[:i], p.free[i+1:]...)
		case 1:
			p.free[i] = keep[0]
		case 2:
			p.free[i] = keep[0]
			p.free = append(p.free, span{})
			copy(p.free[i+2:], p.free[i+1:])
			p.free[i+1] = keep[1]
		}
		p.used += size
		return addr, true
	}
	return 0, false
}

// release returns [addr, addr+size) to the free list, merging it with the
// free neighbours it touches.
func (p *pool) release(addr, size uint64) {
	end := addr + size
	i := sort.Search(len(p.free), func(i int) bool { return p.free[i].start > addr })
	prev := i > 0 && p.free[i-1].end == addr
	next := i < len(p.free) && p.free[i].start == end
	switch {
	case prev && next:
		p.free[i-1].end = p.free[i].end
		p.free = append(p.free[:i], p.free[i+1:]...)
	case prev:
		p.free[i-1].end = end
	case next:
		p.free[i].start = addr
	default:
		p.free = append(p.free, span{})
		copy(p.free[i+1:], p.free[i:])
		p.free[i] = span{addr, end}
	}
	p.used -= size
}

// contains reports whether [addr, addr+size) lies inside the pool.
func (p *pool) contains(addr, size uint64) bool {
	return addr >= p.start && addr <= p.end && size <= p.end-addr
}

// largest returns the size of the largest free range.
func (p *pool) largest() uint64 {
	var m uint64
	for _, s := range p.free {
		m = max(m, s.end-s.start)
	}
	return m
}

// largestAligned returns the largest size that alloc could serve at align.
func (p *pool) largestAligned(align uint64) uint64 {
	var m uint64
	for _, s := range p.free {
		if addr, ok := alignUp(s.start, align); ok && addr < s.end {
			m = max(m, s.end-addr)
		}
	}
	return m
}

// total returns the bytes the pool manages.
func (p *pool) total() uint64 { return p.end - p.start }
