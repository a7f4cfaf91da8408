package simkernel

// pageTable maps page numbers (36 bits: a 48-bit address over 4 KiB pages)
// to resident pages: a radix tree of four 9-bit levels, each node a 4 KiB
// array of pointers with a count of its children, allocated when first
// needed and freed when its last child goes, so the nodes never outnumber
// three per resident page plus the root: the table's own memory is bounded by
// what it holds, whatever pattern of writes and releases made it. A lookup
// is four indexed loads, and a run of neighbouring pages shares one leaf,
// which the table keeps at hand.
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
	ptLeaf struct { // bits 8..0
		p [ptFanout]*Page
		n int
	}
	ptMid2 struct { // bits 17..9
		p [ptFanout]*ptLeaf
		n int
	}
	ptMid1 struct { // bits 26..18
		p [ptFanout]*ptMid2
		n int
	}
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
	m2 := &(*m1).p[pn>>(2*ptBits)&ptMask]
	if *m2 == nil {
		if !create {
			return nil
		}
		*m2 = new(ptMid2)
		(*m1).n++
	}
	l := &(*m2).p[pn>>ptBits&ptMask]
	if *l == nil {
		if !create {
			return nil
		}
		*l = new(ptLeaf)
		(*m2).n++
	}
	t.leaf, t.leafBase = *l, base
	return t.leaf
}

func (t *pageTable) get(pn uint64) *Page {
	l := t.findLeaf(pn, false)
	if l == nil {
		return nil
	}
	return l.p[pn&ptMask]
}

func (t *pageTable) set(pn uint64, p *Page) {
	l := t.findLeaf(pn, true)
	if l.p[pn&ptMask] == nil {
		t.n++
		l.n++
	}
	l.p[pn&ptMask] = p
}

// del drops page pn and reports whether it was resident. A node left
// without children is freed.
func (t *pageTable) del(pn uint64) bool {
	l := t.findLeaf(pn, false)
	if l == nil || l.p[pn&ptMask] == nil {
		return false
	}
	l.p[pn&ptMask] = nil
	t.n--
	if l.n--; l.n > 0 {
		return true
	}
	t.leaf = nil
	m1 := &t.root[pn>>(3*ptBits)&ptMask]
	m2 := &(*m1).p[pn>>(2*ptBits)&ptMask]
	(*m2).p[pn>>ptBits&ptMask] = nil
	if (*m2).n--; (*m2).n > 0 {
		return true
	}
	*m2 = nil
	if (*m1).n--; (*m1).n > 0 {
		return true
	}
	*m1 = nil
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
		for j, m2 := range &m1.p {
			if m2 == nil {
				continue
			}
			for k, l := range &m2.p {
				if l == nil {
					continue
				}
				base := (uint64(i)<<(2*ptBits) | uint64(j)<<ptBits | uint64(k)) << ptBits
				for x, p := range &l.p {
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
			for j, p := range &l.p {
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
