// Package extent keeps a set of disjoint address ranges in a balanced tree,
// for allocators that must find, insert and remove ranges in logarithmic
// time however fragmented their space becomes.
//
// A [Tree] orders its extents by start address (an AVL tree held in one
// slice, so steady-state operations allocate nothing). Built with alignment
// classes, every node also records, for each class, the longest run its
// subtree can offer at that class's alignment; [Tree.FirstFit] then finds the
// lowest extent that holds a request at an alignment in O(log n), which keeps
// an address-ordered first-fit policy exact and fast.
//
// A class is maintained only from the first FirstFit or Best that asks for
// it: that call refreshes the whole tree once (O(n)), and from then on every
// insert and delete keeps the class up to date in O(log n). A tree therefore
// pays for the alignments its users actually request (typically two or
// three), and at most classes full refreshes in its lifetime. The package is
// pure computation and is not safe for concurrent use.
package extent

// MaxLen is the most extents a Tree holds; Insert refuses more.
const MaxLen = 1<<31 - 2

// Extent is the half-open range [Start, End).
type Extent struct {
	Start, End uint64
}

// Len returns End − Start.
func (e Extent) Len() uint64 { return e.End - e.Start }

// AlignUp rounds x up to a multiple of align, a power of two; ok is false when
// the result does not fit in 64 bits.
func AlignUp(x, align uint64) (r uint64, ok bool) {
	r = (x + align - 1) &^ (align - 1)
	return r, r >= x
}

// node is one extent of the tree; index 0 of Tree.nodes is the empty subtree.
type node struct {
	start, end uint64
	left       int32
	right      int32
	height     int32
}

// Tree is an ordered set of disjoint extents keyed by their start. The zero
// Tree is not usable; create one with New.
type Tree struct {
	nodes   []node   // nodes[0] is the empty subtree
	best    []uint64 // best[i*len(aligns)+k]: longest run at alignment aligns[k] in the subtree of node i
	aligns  []uint64 // the alignments of the maintained classes, in the order they were first asked for
	slot    [64]int8 // slot[c]: index of class c in aligns, or -1
	spare   []int32  // freed node slots, reused first
	root    int32
	n       int
	shift   uint // class c is alignment 1 << (shift + c)
	classes int
}

// New returns an empty tree. With classes > 0 it maintains alignment classes
// 0 … classes−1, class c being alignment 1<<(shift+c), for FirstFit; shift +
// classes must not exceed 64 (New clamps classes to fit). With classes == 0
// FirstFit always reports nothing.
func New(shift uint, classes int) *Tree {
	shift = min(shift, 63)
	classes = max(0, min(classes, 64-int(shift)))
	t := &Tree{shift: shift, classes: classes}
	t.Reset()
	return t
}

// Reset empties the tree, keeping its memory.
func (t *Tree) Reset() {
	t.nodes = append(t.nodes[:0], node{})
	t.best, t.aligns = t.best[:0], t.aligns[:0]
	for c := range t.slot {
		t.slot[c] = -1
	}
	t.spare = t.spare[:0]
	t.root, t.n = 0, 0
}

// Len returns the number of extents.
func (t *Tree) Len() int { return t.n }

// Align returns the alignment of class c.
func (t *Tree) Align(c int) uint64 { return 1 << (t.shift + uint(c)) }

// usable returns the longest run of [start, end) that begins at a multiple
// of align.
func usable(start, end, align uint64) uint64 {
	a, ok := AlignUp(start, align)
	if !ok || a >= end {
		return 0
	}
	return end - a
}

func (t *Tree) height(i int32) int32 { return t.nodes[i].height }

// update recomputes the height and the per-class bests of node i from its
// children and reports whether any of them changed.
func (t *Tree) update(i int32) bool {
	n := &t.nodes[i]
	h := 1 + max(t.nodes[n.left].height, t.nodes[n.right].height)
	changed := h != n.height
	n.height = h
	k := len(t.aligns)
	if k == 0 {
		return changed
	}
	b := t.best[int(i)*k : int(i)*k+k]
	l := t.best[int(n.left)*k : int(n.left)*k+k]
	r := t.best[int(n.right)*k : int(n.right)*k+k]
	for s, a := range t.aligns {
		v := max(usable(n.start, n.end, a), l[s], r[s])
		changed = changed || v != b[s]
		b[s] = v
	}
	return changed
}

// activate starts maintaining class c (0 ≤ c < classes), refreshing every
// node once.
func (t *Tree) activate(c int) {
	if t.slot[c] >= 0 {
		return
	}
	t.slot[c] = int8(len(t.aligns))
	t.aligns = append(t.aligns, t.Align(c))
	t.best = make([]uint64, len(t.nodes)*len(t.aligns)) // node 0 and spare slots stay zero
	t.refresh(t.root)
}

// refresh recomputes the subtree at i bottom-up.
func (t *Tree) refresh(i int32) {
	if i == 0 {
		return
	}
	t.refresh(t.nodes[i].left)
	t.refresh(t.nodes[i].right)
	t.update(i)
}

func (t *Tree) rotateRight(i int32) int32 {
	l := t.nodes[i].left
	t.nodes[i].left = t.nodes[l].right
	t.nodes[l].right = i
	t.update(i)
	t.update(l)
	return l
}

func (t *Tree) rotateLeft(i int32) int32 {
	r := t.nodes[i].right
	t.nodes[i].right = t.nodes[r].left
	t.nodes[r].left = i
	t.update(i)
	t.update(r)
	return r
}

// rotate rebalances i, whose height and bests are up to date, and returns
// the subtree's new root (i itself when it is balanced).
func (t *Tree) rotate(i int32) int32 {
	n := t.nodes[i]
	switch bf := t.height(n.left) - t.height(n.right); {
	case bf > 1:
		if l := t.nodes[n.left]; t.height(l.left) < t.height(l.right) {
			t.nodes[i].left = t.rotateLeft(n.left)
		}
		return t.rotateRight(i)
	case bf < -1:
		if r := t.nodes[n.right]; t.height(r.right) < t.height(r.left) {
			t.nodes[i].right = t.rotateRight(n.right)
		}
		return t.rotateLeft(i)
	}
	return i
}

// find returns the node whose start is start, or 0.
func (t *Tree) find(start uint64) int32 {
	i := t.root
	for i != 0 {
		n := &t.nodes[i]
		switch {
		case start < n.start:
			i = n.left
		case start > n.start:
			i = n.right
		default:
			return i
		}
	}
	return 0
}

// pathLen bounds the height of the tree: an AVL tree of MaxLen (< 2^31)
// nodes is at most 45 high.
const pathLen = 64

// walk searches for the node whose start is start. It returns that node (0
// when there is none) and fills path[:n] with the nodes passed on the way
// from the root, the last of them the parent where start would hang.
func (t *Tree) walk(start uint64, path *[pathLen]int32) (i int32, n int) {
	i = t.root
	for i != 0 && t.nodes[i].start != start {
		path[n] = i
		n++
		if start < t.nodes[i].start {
			i = t.nodes[i].left
		} else {
			i = t.nodes[i].right
		}
	}
	return i, n
}

// Insert adds [start, end). The caller keeps the extents disjoint and
// non-empty; Insert only refuses (returns false) a start already present,
// an empty range, or an extent past MaxLen.
func (t *Tree) Insert(start, end uint64) bool {
	if end <= start || t.n >= MaxLen {
		return false
	}
	var path [pathLen]int32
	i, n := t.walk(start, &path)
	if i != 0 {
		return false
	}
	var x int32
	if k := len(t.spare); k > 0 {
		x = t.spare[k-1]
		t.spare = t.spare[:k-1]
	} else {
		x = int32(len(t.nodes))
		t.nodes = append(t.nodes, node{})
		t.best = append(t.best, make([]uint64, len(t.aligns))...)
	}
	t.nodes[x] = node{start: start, end: end}
	t.update(x)
	t.relink(path[:n], n-1, 0, x)
	t.retrace(path[:n], n)
	t.n++
	return true
}

// relink makes new the child of path[k] that was old (the root when k < 0).
func (t *Tree) relink(path []int32, k int, old, new int32) {
	if k < 0 {
		t.root = new
		return
	}
	p := &t.nodes[path[k]]
	switch {
	case old != 0 && p.left == old:
		p.left = new
	case old != 0:
		p.right = new
	case t.nodes[new].start < p.start:
		p.left = new
	default:
		p.right = new
	}
}

// retrace updates and rebalances the nodes of path (root first) from the
// bottom up after a change below its last node, stopping where a subtree's
// height and bests come out unchanged — but not below index force.
func (t *Tree) retrace(path []int32, force int) {
	for k := len(path) - 1; k >= 0; k-- {
		i := path[k]
		changed := t.update(i)
		if r := t.rotate(i); r != i {
			t.relink(path, k-1, i, r)
			changed = true
		}
		if !changed && k <= force {
			return
		}
	}
}

// Replace changes the extent that starts at old into [start, end) in place,
// in O(log n) with no rebalancing. The caller keeps the order: no other
// extent may start between old and start, and the extents stay disjoint.
// Replace refuses (returns false) an absent old or an empty range.
func (t *Tree) Replace(old, start, end uint64) bool {
	if end <= start {
		return false
	}
	var path [pathLen]int32
	i, n := t.walk(old, &path)
	if i == 0 {
		return false
	}
	t.nodes[i].start, t.nodes[i].end = start, end
	if !t.update(i) {
		return true
	}
	for k := n - 1; k >= 0; k-- {
		if !t.update(path[k]) {
			break // nothing above can change either
		}
	}
	return true
}

// Take removes [start, end) from e, an extent of the tree that holds it, and
// keeps what is left of e on either side (splitting e adds an extent, so
// the tree must hold fewer than MaxLen). It reports false (and changes
// nothing) when e is not in the tree, does not hold [start, end), or would
// split past MaxLen.
func (t *Tree) Take(e Extent, start, end uint64) bool {
	if i := t.find(e.Start); i == 0 || t.nodes[i].end != e.End || start >= end || start < e.Start || end > e.End {
		return false
	}
	if start > e.Start && end < e.End && t.n >= MaxLen {
		return false
	}
	switch left, right := start > e.Start, end < e.End; {
	case left && right:
		t.Replace(e.Start, e.Start, start)
		t.Insert(end, e.End)
	case left:
		t.Replace(e.Start, e.Start, start)
	case right:
		t.Replace(e.Start, end, e.End)
	default:
		t.Delete(e.Start)
	}
	return true
}

// Add inserts [start, end), which the caller keeps clear of every extent,
// merging it with the extents that end at start or begin at end. It
// refuses (returns false) an empty range.
func (t *Tree) Add(start, end uint64) bool {
	if start >= end {
		return false
	}
	prev, pok := t.Floor(start)
	pok = pok && prev.End == start
	next, nok := t.Ceil(end)
	nok = nok && next.Start == end
	switch {
	case pok && nok:
		t.Delete(next.Start)
		return t.Replace(prev.Start, prev.Start, next.End)
	case pok:
		return t.Replace(prev.Start, prev.Start, end)
	case nok:
		return t.Replace(next.Start, start, next.End)
	}
	return t.Insert(start, end)
}

// Delete removes the extent that starts at start and reports whether there
// was one.
func (t *Tree) Delete(start uint64) bool {
	var path [pathLen]int32
	d, n := t.walk(start, &path)
	if d == 0 {
		return false
	}
	dn := t.nodes[d]
	force := n
	switch {
	case dn.left == 0 || dn.right == 0:
		child := dn.left + dn.right // the one that is not 0, if any
		t.relink(path[:n], n-1, d, child)
	default:
		// The lowest node m of the right subtree takes d's place.
		kd := n
		path[n] = d
		n++
		m := dn.right
		for t.nodes[m].left != 0 {
			path[n] = m
			n++
			m = t.nodes[m].left
		}
		if n-1 == kd { // m is d's right child
			t.nodes[d].right = t.nodes[m].right
		} else {
			t.nodes[path[n-1]].left = t.nodes[m].right
		}
		// m inherits d's children and summary: from kd up, a change is a
		// change from what d's parent last saw; below kd every node is redone.
		t.nodes[m].left, t.nodes[m].right, t.nodes[m].height = t.nodes[d].left, t.nodes[d].right, dn.height
		k := len(t.aligns)
		copy(t.best[int(m)*k:int(m)*k+k], t.best[int(d)*k:int(d)*k+k])
		t.relink(path[:kd], kd-1, d, m)
		path[kd] = m
		force = kd
	}
	t.retrace(path[:n], force)
	t.nodes[d] = node{}
	t.spare = append(t.spare, d)
	t.n--
	return true
}

func (t *Tree) extent(i int32) Extent { return Extent{t.nodes[i].start, t.nodes[i].end} }

// Floor returns the extent with the greatest start ≤ x.
func (t *Tree) Floor(x uint64) (Extent, bool) {
	var found int32
	for i := t.root; i != 0; {
		if t.nodes[i].start <= x {
			found, i = i, t.nodes[i].right
		} else {
			i = t.nodes[i].left
		}
	}
	return t.extent(found), found != 0
}

// Ceil returns the extent with the least start ≥ x.
func (t *Tree) Ceil(x uint64) (Extent, bool) {
	var found int32
	for i := t.root; i != 0; {
		if t.nodes[i].start >= x {
			found, i = i, t.nodes[i].left
		} else {
			i = t.nodes[i].right
		}
	}
	return t.extent(found), found != 0
}

// Max returns the extent with the greatest start.
func (t *Tree) Max() (Extent, bool) {
	i := t.root
	for i != 0 && t.nodes[i].right != 0 {
		i = t.nodes[i].right
	}
	return t.extent(i), i != 0
}

// Best returns the longest run any extent offers at alignment class c (0
// when the tree is empty or has no such class). The first call for a class
// costs O(n) (see the package doc).
func (t *Tree) Best(c int) uint64 {
	if c < 0 || c >= t.classes {
		return 0
	}
	t.activate(c)
	return t.best[int(t.root)*len(t.aligns)+int(t.slot[c])]
}

// FirstFit returns the lowest extent holding size bytes at a multiple of
// class c's alignment (the caller places the run at AlignUp(e.Start,
// Align(c))). ok is false when no extent does, when size is 0 or when c is
// not a class of the tree. The first call for a class costs O(n) (see the
// package doc), every later one O(log n).
func (t *Tree) FirstFit(size uint64, c int) (e Extent, ok bool) {
	if size == 0 || t.Best(c) < size {
		return Extent{}, false
	}
	k, s, align := len(t.aligns), int(t.slot[c]), t.Align(c)
	for i := t.root; i != 0; {
		n := &t.nodes[i]
		if n.left != 0 && t.best[int(n.left)*k+s] >= size {
			i = n.left
			continue
		}
		if usable(n.start, n.end, align) >= size {
			return t.extent(i), true
		}
		i = n.right
	}
	return Extent{}, false // not reached while the bests are consistent
}

// Ascend calls fn for every extent in ascending order until fn returns
// false.
func (t *Tree) Ascend(fn func(Extent) bool) {
	stack := make([]int32, 0, 2*t.height(t.root))
	i := t.root
	for i != 0 || len(stack) > 0 {
		for i != 0 {
			stack = append(stack, i)
			i = t.nodes[i].left
		}
		i = stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !fn(t.extent(i)) {
			return
		}
		i = t.nodes[i].right
	}
}
