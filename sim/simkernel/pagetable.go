package simkernel

// pageTable maps page numbers (36 bits: a 48-bit address over 4 KiB pages)
// to resident pages: a radix tree of four 9-bit levels, each node an array
// of 512 pointers with a count of its children (4 KiB and a word, which Go
// allocates with its allocation header in its 4,864-byte size class: a
// [PageBudget] counts it as 19/16 of a page, nodeCost), allocated when
// first needed and freed when its last child goes, so the nodes never
// outnumber three per resident page plus the root: the table's own memory
// is bounded by what it holds, whatever pattern of writes and releases
// made it. A lookup is four indexed loads, and a run of neighbouring pages
// shares one leaf, which the table keeps at hand.
type pageTable struct {
	root  *ptRoot
	n     int // resident pages
	nodeN int // nodes allocated, the root included

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

// The indices of page pn in each level.
func ptRootIndex(pn uint64) uint64 { return pn >> (3 * ptBits) & ptMask }
func ptMid1Index(pn uint64) uint64 { return pn >> (2 * ptBits) & ptMask }
func ptMid2Index(pn uint64) uint64 { return pn >> ptBits & ptMask }

// findLeaf returns the leaf of page pn, or nil if it has none and create
// is false; with create it allocates the missing nodes.
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
		t.nodeN++
	}
	m1 := &t.root[ptRootIndex(pn)]
	if *m1 == nil {
		if !create {
			return nil
		}
		*m1 = new(ptMid1)
		t.nodeN++
	}
	m2 := &(*m1).p[ptMid1Index(pn)]
	if *m2 == nil {
		if !create {
			return nil
		}
		*m2 = new(ptMid2)
		(*m1).n++
		t.nodeN++
	}
	l := &(*m2).p[ptMid2Index(pn)]
	if *l == nil {
		if !create {
			return nil
		}
		*l = new(ptLeaf)
		(*m2).n++
		t.nodeN++
	}
	t.leaf, t.leafBase = *l, base
	return t.leaf
}

// mid2 returns the level-2 node above page pn, or nil.
func (t *pageTable) mid2(pn uint64) *ptMid2 {
	if t.root == nil {
		return nil
	}
	if m1 := t.root[ptRootIndex(pn)]; m1 != nil {
		return m1.p[ptMid1Index(pn)]
	}
	return nil
}

// mid1 returns the level-1 node above page pn, or nil.
func (t *pageTable) mid1(pn uint64) *ptMid1 {
	if t.root == nil {
		return nil
	}
	return t.root[ptRootIndex(pn)]
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
	m1 := &t.root[ptRootIndex(pn)]
	m2 := &(*m1).p[ptMid1Index(pn)]
	(*m2).p[ptMid2Index(pn)] = nil
	freed := 1
	if (*m2).n--; (*m2).n == 0 {
		*m2 = nil
		freed++
		if (*m1).n--; (*m1).n == 0 {
			*m1 = nil
			freed++
		}
	}
	t.nodeN -= freed
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

// nodeCost returns the budget pages k nodes of a table cost: Go allocates
// a node in 4,864 bytes, 19/16 of a [PageSize], and the sixteenths are
// rounded down (a memory's table holds less than a page more than it is
// charged).
func nodeCost(k int64) int64 { return k + 3*k/16 }

// newNodes counts the nodes a table would allocate to make resident the
// pages it is shown (add), those not resident already: an upper bound of
// the nodes a write of them costs, exact when they are shown in ascending
// order (a page shown twice, or out of order, may be counted again).
type newNodes struct {
	t                *pageTable
	leaf, mid2, mid1 uint64 // the last base of each level seen, plus one (0: none)
	root             bool   // the root was counted
	n                int64
}

// add counts the nodes page pn needs that neither the table nor an
// earlier page shown has.
func (c *newNodes) add(pn uint64) {
	if k := pn>>ptBits + 1; k != c.leaf {
		c.leaf = k
	} else {
		return // counted with the page before, or present
	}
	if c.t.findLeaf(pn, false) != nil {
		return
	}
	c.n++ // the leaf
	if k := pn>>(2*ptBits) + 1; k != c.mid2 {
		c.mid2 = k
	} else {
		return
	}
	if c.t.mid2(pn) != nil {
		return
	}
	c.n++
	if k := pn>>(3*ptBits) + 1; k != c.mid1 {
		c.mid1 = k
	} else {
		return
	}
	if c.t.mid1(pn) != nil {
		return
	}
	c.n++
	if c.t.root == nil && !c.root {
		c.root = true
		c.n++
	}
}

// cost returns the budget pages of the nodes counted (nodeCost): what the
// table's charge grows by when it allocates them.
func (c *newNodes) cost() int64 {
	k := int64(c.t.nodeN)
	return nodeCost(k+c.n) - nodeCost(k)
}
