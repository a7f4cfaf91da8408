package sim

// pageTable maps page numbers (36 bits: a 48-bit address over 4 KiB pages)
// to resident pages: a radix tree of four 9-bit levels, each node a 4 KiB
// array of pointers, allocated when first needed. A lookup is four indexed
// loads, and a run of neighbouring pages shares one leaf, which the table
// keeps at hand.
type pageTable struct {
	root *ptRoot
	n    int // resident pages

	leafBase uint64  // page number of the cached leaf's first page
	leaf     *ptLeaf // the last leaf looked up, or nil
}

const (
	ptBits   = 9
	ptFanout = 1 << ptBits
	ptMask   = ptFanout - 1
)

type (
	ptLeaf [ptFanout]*Page   // bits 8..0
	ptMid2 [ptFanout]*ptLeaf // bits 17..9
	ptMid1 [ptFanout]*ptMid2 // bits 26..18
	ptRoot [ptFanout]*ptMid1 // bits 35..27
)

func (t *pageTable) findLeaf(pn uint64, create bool) *ptLeaf {
	base := pn &^ ptMask
	if t.leaf != nil && t.leafBase == base {
		return t.leaf
	}
	if t.root == nil {
		if !create {
			return nil
		}
		t.root = new(ptRoot)
	}
	m1 := &t.root[pn>>(3*ptBits)&ptMask]
	if *m1 == nil {
		if !create {
			return nil
		}
		*m1 = new(ptMid1)
	}
	m2 := &(*m1)[pn>>(2*ptBits)&ptMask]
	if *m2 == nil {
		if !create {
			return nil
		}
		*m2 = new(ptMid2)
	}
	l := &(*m2)[pn>>ptBits&ptMask]
	if *l == nil {
		if !create {
			return nil
		}
		*l = new(ptLeaf)
	}
	t.leaf, t.leafBase = *l, base
	return t.leaf
}

func (t *pageTable) get(pn uint64) *Page {
	l := t.findLeaf(pn, false)
	if l == nil {
		return nil
	}
	return l[pn&ptMask]
}

func (t *pageTable) set(pn uint64, p *Page) {
	l := t.findLeaf(pn, true)
	if l[pn&ptMask] == nil {
		t.n++
	}
	l[pn&ptMask] = p
}

// del drops page pn and reports whether it was resident. Emptied nodes stay
// (they are small and likely reused).
func (t *pageTable) del(pn uint64) bool {
	l := t.findLeaf(pn, false)
	if l == nil || l[pn&ptMask] == nil {
		return false
	}
	l[pn&ptMask] = nil
	t.n--
	return true
}

// each calls fn for every resident page in ascending page order.
func (t *pageTable) each(fn func(pn uint64, p *Page)) {
	if t.root == nil {
		return
	}
	for i, m1 := range t.root {
		if m1 == nil {
			continue
		}
		for j, m2 := range m1 {
			if m2 == nil {
				continue
			}
			for k, l := range m2 {
				if l == nil {
					continue
				}
				base := (uint64(i)<<(2*ptBits) | uint64(j)<<ptBits | uint64(k)) << ptBits
				for x, p := range l {
					if p != nil {
						fn(base|uint64(x), p)
					}
				}
			}
		}
	}
}

// eachIn calls fn for every resident page in [first, last], ascending.
func (t *pageTable) eachIn(first, last uint64, fn func(pn uint64, p *Page)) {
	if last-first < uint64(4*t.n)+ptFanout {
		for pn := first &^ ptMask; pn <= last; pn += ptFanout {
			l := t.findLeaf(pn, false)
			if l == nil {
				if pn+ptFanout < pn {
					return
				}
				continue
			}
			for j, p := range l {
				q := pn + uint64(j)
				if p != nil && q >= first && q <= last {
					fn(q, p)
				}
			}
			if pn+ptFanout < pn {
				return
			}
		}
		return
	}
	t.each(func(pn uint64, p *Page) {
		if pn >= first && pn <= last {
			fn(pn, p)
		}
	})
}
