package extent

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// ref is the reference model: the extents in a sorted slice, every query a
// linear scan.
type ref []Extent

func (r ref) floor(x uint64) (Extent, bool) {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i].Start <= x {
			return r[i], true
		}
	}
	return Extent{}, false
}

func (r ref) ceil(x uint64) (Extent, bool) {
	for _, e := range r {
		if e.Start >= x {
			return e, true
		}
	}
	return Extent{}, false
}

func (r ref) firstFit(size, align uint64) (Extent, bool) {
	for _, e := range r {
		if usable(e.Start, e.End, align) >= size {
			return e, true
		}
	}
	return Extent{}, false
}

// checkShape verifies the AVL heights and the per-class bests of every node.
func checkShape(t *testing.T, tr *Tree, i int32) (height int32, best []uint64) {
	t.Helper()
	best = make([]uint64, tr.classes)
	if i == 0 {
		return 0, best
	}
	n := tr.nodes[i]
	hl, bl := checkShape(t, tr, n.left)
	hr, br := checkShape(t, tr, n.right)
	if d := hl - hr; d > 1 || d < -1 {
		t.Fatalf("node [%#x, %#x): subtree heights %d and %d", n.start, n.end, hl, hr)
	}
	if n.height != 1+max(hl, hr) {
		t.Fatalf("node [%#x, %#x): height %d, want %d", n.start, n.end, n.height, 1+max(hl, hr))
	}
	for c := range best {
		best[c] = max(usable(n.start, n.end, tr.Align(c)), bl[c], br[c])
		if tr.slot[c] < 0 {
			continue // not maintained yet
		}
		if got := tr.best[int(i)*len(tr.aligns)+int(tr.slot[c])]; got != best[c] {
			t.Fatalf("node [%#x, %#x) class %d: best %#x, want %#x", n.start, n.end, c, got, best[c])
		}
	}
	return n.height, best
}

// TestTreeAgainstReference runs random inserts and deletes of disjoint
// extents and compares every query with the linear reference.
func TestTreeAgainstReference(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, 99))
		tr := New(6, 8)
		var r ref
		for step := range 4000 {
			// Slots of 4 KiB: an extent is a random sub-range of a free slot.
			slot := uint64(rng.IntN(512))
			i, present := slices.BinarySearchFunc(r, slot<<12, func(e Extent, s uint64) int {
				switch {
				case e.Start>>12 < s>>12:
					return -1
				case e.Start>>12 > s>>12:
					return 1
				}
				return 0
			})
			if present && rng.IntN(3) == 0 { // reshape in place, inside the slot
				lo := uint64(rng.IntN(64)) * 64
				hi := lo + 64*uint64(1+rng.IntN(int(64-lo/64)))
				e := Extent{slot<<12 + lo, slot<<12 + hi}
				if !tr.Replace(r[i].Start, e.Start, e.End) {
					t.Fatalf("step %d: Replace(%v, %v) refused", step, r[i], e)
				}
				r[i] = e
			} else if present {
				if !tr.Delete(r[i].Start) {
					t.Fatalf("step %d: Delete(%#x) found nothing", step, r[i].Start)
				}
				if tr.Delete(r[i].Start) {
					t.Fatalf("step %d: second Delete(%#x) found something", step, r[i].Start)
				}
				r = slices.Delete(r, i, i+1)
			} else {
				lo := uint64(rng.IntN(64)) * 64
				hi := lo + 64*uint64(1+rng.IntN(int(64-lo/64)))
				e := Extent{slot<<12 + lo, slot<<12 + hi}
				if !tr.Insert(e.Start, e.End) {
					t.Fatalf("step %d: Insert(%v) refused", step, e)
				}
				if tr.Insert(e.Start, e.End+64) {
					t.Fatalf("step %d: Insert of a present start accepted", step)
				}
				r = slices.Insert(r, i, e)
			}
			if tr.Len() != len(r) {
				t.Fatalf("step %d: Len %d, want %d", step, tr.Len(), len(r))
			}
			if step%16 == 0 || step > 3900 {
				checkShape(t, tr, tr.root)
			}
			x := uint64(rng.IntN(512 << 12))
			if g, gok := tr.Floor(x); true {
				w, wok := r.floor(x)
				if g != w || gok != wok {
					t.Fatalf("step %d: Floor(%#x) = %v %v, want %v %v", step, x, g, gok, w, wok)
				}
			}
			if g, gok := tr.Ceil(x); true {
				w, wok := r.ceil(x)
				if g != w || gok != wok {
					t.Fatalf("step %d: Ceil(%#x) = %v %v, want %v %v", step, x, g, gok, w, wok)
				}
			}
			if g, gok := tr.Max(); gok != (len(r) > 0) || gok && g != r[len(r)-1] {
				t.Fatalf("step %d: Max = %v %v", step, g, gok)
			}
			size := 64 * uint64(1+rng.IntN(32))
			c := rng.IntN(8)
			g, gok := tr.FirstFit(size, c)
			w, wok := r.firstFit(size, tr.Align(c))
			if g != w || gok != wok {
				t.Fatalf("step %d: FirstFit(%#x, align %#x) = %v %v, want %v %v", step, size, tr.Align(c), g, gok, w, wok)
			}
		}
		var got ref
		tr.Ascend(func(e Extent) bool { got = append(got, e); return true })
		if !slices.Equal(got, r) {
			t.Fatalf("Ascend gives %d extents, want %d", len(got), len(r))
		}
	}
}

// TestTreeEdges covers the refusals and the extremes of the address space.
func TestTreeEdges(t *testing.T) {
	tr := New(6, 3)
	if tr.Insert(10, 10) || tr.Insert(11, 10) {
		t.Fatal("an empty or inverted extent was accepted")
	}
	if tr.Replace(10, 10, 20) {
		t.Fatal("Replace of an absent extent accepted")
	}
	if !tr.Insert(10, 20) || tr.Replace(10, 15, 15) || !tr.Replace(10, 12, 30) || !tr.Delete(12) {
		t.Fatal("Replace of a present extent: empty range accepted or valid one refused")
	}
	if _, ok := tr.FirstFit(64, 0); ok {
		t.Fatal("FirstFit on an empty tree found something")
	}
	top := ^uint64(0)
	if !tr.Insert(top-100, top) {
		t.Fatal("extent at the top of the space refused")
	}
	if b := tr.Best(2); b != 0 {
		t.Fatalf("Best at alignment 256 of [2^64-101, 2^64-1) = %d: AlignUp overflows, nothing is usable", b)
	}
	if _, ok := tr.FirstFit(0, 0); ok {
		t.Fatal("FirstFit of 0 bytes found something")
	}
	if _, ok := tr.FirstFit(1, 3); ok || tr.Best(-1) != 0 || tr.Best(3) != 0 {
		t.Fatal("a class outside the tree answered")
	}
	if New(60, 10).classes != 4 {
		t.Fatal("classes not clamped to the 64-bit space")
	}
	if r, ok := AlignUp(top-3, 8); ok {
		t.Fatalf("AlignUp(2^64-4, 8) = %#x, ok: overflow not reported", r)
	}
	tr.Reset()
	if tr.Len() != 0 || tr.Best(0) != 0 {
		t.Fatal("Reset left extents")
	}
}

// TestTakeAdd: Take keeps what is left on either side, Add coalesces with
// both neighbours, and both refuse what does not fit.
func TestTakeAdd(t *testing.T) {
	all := func(tr *Tree) []Extent {
		var out []Extent
		tr.Ascend(func(e Extent) bool { out = append(out, e); return true })
		return out
	}
	for _, tc := range []struct {
		name       string
		start, end uint64
		ok         bool
		want       []Extent
	}{
		{"middle", 200, 300, true, []Extent{{100, 200}, {300, 1000}}},
		{"front", 100, 300, true, []Extent{{300, 1000}}},
		{"back", 800, 1000, true, []Extent{{100, 800}}},
		{"whole", 100, 1000, true, nil},
		{"past the end", 900, 1100, false, []Extent{{100, 1000}}},
		{"before the start", 50, 200, false, []Extent{{100, 1000}}},
		{"empty", 200, 200, false, []Extent{{100, 1000}}},
	} {
		t.Run("take "+tc.name, func(t *testing.T) {
			tr := New(0, 1)
			tr.Insert(100, 1000)
			if ok := tr.Take(Extent{100, 1000}, tc.start, tc.end); ok != tc.ok {
				t.Fatalf("Take = %v", ok)
			}
			if got := all(tr); !slices.Equal(got, tc.want) {
				t.Fatalf("left %v, want %v", got, tc.want)
			}
			checkShape(t, tr, tr.root)
		})
	}
	tr := New(0, 1)
	if tr.Take(Extent{1, 2}, 1, 2) {
		t.Fatal("Take from an absent extent")
	}
	tr.Insert(100, 200)
	tr.Insert(300, 400)
	if tr.Take(Extent{100, 250}, 100, 150) {
		t.Fatal("Take with a wrong end")
	}
	for _, step := range []struct {
		start, end uint64
		want       []Extent
	}{
		{250, 260, []Extent{{100, 200}, {250, 260}, {300, 400}}},
		{200, 250, []Extent{{100, 260}, {300, 400}}},
		{290, 300, []Extent{{100, 260}, {290, 400}}},
		{260, 290, []Extent{{100, 400}}},
		{0, 100, []Extent{{0, 400}}},
	} {
		if !tr.Add(step.start, step.end) {
			t.Fatalf("Add(%d, %d) refused", step.start, step.end)
		}
		if got := all(tr); !slices.Equal(got, step.want) {
			t.Fatalf("after Add(%d, %d): %v, want %v", step.start, step.end, got, step.want)
		}
		checkShape(t, tr, tr.root)
	}
	if tr.Add(5, 5) {
		t.Fatal("Add of an empty range")
	}
}
