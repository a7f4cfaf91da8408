package dma

import (
	"fmt"
	"slices"

	"github.com/neuronsim/neuronsim/hw/udma"
)

// pair is one M2S/S2M descriptor pair of a vring: 24 bytes, so that the
// millions a large run plans, and the encoding that reads them back, move
// as little memory as they can.
type pair struct {
	src, dst uint64
	len      uint32 // at most udma.MaxTransfer
	reduce   uint32 // the S2M reduce word (udma.ReduceMeta); 0 for a plain write
}

// Vring is a list of transfers built before it is dumped into a queue's
// rings (vring_add_desc_transfer, vring_add_event_accel), or fed to a fed
// queue as it is read (OpenFedQueue).
//
// Pairs are numbered from 0 in the order they were added. A vring fed to a
// queue lets go of the pairs its queue has read (DropBefore): pairs[head:]
// are the ones held, pairs[j] being pair number off+j. A counting vring
// (NewCountingVring) checks and counts what is added and holds nothing.
type Vring struct {
	Name  string
	pairs []pair
	off   int  // the number of pairs[0]
	head  int  // pairs[:head] are let go
	count bool // counting: pairs are counted in n, not stored
	n     int  // pairs added to a counting vring
	bytes uint64
}

// NewVring returns an empty vring.
func NewVring(name string) *Vring { return &Vring{Name: name} }

// NewCountingVring returns an empty counting vring: it checks every
// transfer as a vring does and counts its descriptor pairs and bytes, but
// stores none (a planner's first pass learns each queue's size with it).
func NewCountingVring(name string) *Vring { return &Vring{Name: name, count: true} }

// AddTransfer appends a copy of n bytes from src to dst (device addresses),
// split into descriptor pairs of at most 64 KiB.
func (v *Vring) AddTransfer(src, dst, n uint64) error {
	return v.AddReduce(src, dst, n, udma.Reduce{})
}

// AddReduce appends a reducing write of n bytes from src into dst: each
// element of dst becomes dst op src in r.Dtype (docs/dma-model.md §Reduce),
// split into descriptor pairs of at most 64 KiB. A plain r is a copy; n must
// be whole elements.
func (v *Vring) AddReduce(src, dst, n uint64, r udma.Reduce) error {
	meta := udma.ReduceMeta(r)
	if _, err := udma.DecodeReduce(meta); err != nil {
		return fmt.Errorf("dma: vring %q: %w", v.Name, err)
	}
	if es := uint64(r.Dtype.Size()); r.Op != udma.ReduceNone && n%es != 0 {
		return fmt.Errorf("dma: vring %q: reducing %d bytes of %s is not whole elements", v.Name, n, r.Dtype)
	}
	if n == 0 {
		return fmt.Errorf("dma: vring %q: transfer of 0 bytes", v.Name)
	}
	if src+n < src || dst+n < dst {
		return fmt.Errorf("dma: vring %q: transfer [%#x → %#x, +%d) wraps the address space", v.Name, src, dst, n)
	}
	v.bytes += n
	if v.count {
		v.n += int((n + udma.MaxTransfer - 1) / udma.MaxTransfer)
		return nil
	}
	for off := uint64(0); off < n; off += udma.MaxTransfer {
		c := min(n-off, udma.MaxTransfer)
		v.pairs = append(v.pairs, pair{src + off, dst + off, uint32(c), meta})
	}
	return nil
}

// AddEventAccel appends the completion write: the 4-byte word at src (which
// holds the increment, or 1 for an event) is written to dst — an NC's
// semaphore INCR address or event address — after every earlier transfer.
func (v *Vring) AddEventAccel(src, dst uint64) error {
	if dst%4 != 0 || src%4 != 0 {
		return fmt.Errorf("dma: vring %q: event-accel [%#x → %#x] not word aligned", v.Name, src, dst)
	}
	v.bytes += 4
	if v.count {
		v.n++
		return nil
	}
	v.pairs = append(v.pairs, pair{src, dst, 4, 0})
	return nil
}

// Grow makes room for n more descriptor pairs without reallocating (a
// builder that knows its count up front spares the copies of growing one
// pair at a time); n ≤ 0, or a counting vring, does nothing.
func (v *Vring) Grow(n int) {
	if n > 0 && !v.count {
		v.pairs = slices.Grow(v.pairs, n)
	}
}

// Descriptors returns the number of descriptor pairs added (those let go
// included).
func (v *Vring) Descriptors() int {
	if v.count {
		return v.n
	}
	return v.off + len(v.pairs)
}

// Bytes returns the bytes the vring moves.
func (v *Vring) Bytes() uint64 { return v.bytes }

// Dropped returns the number of pairs let go: pairs 0..Dropped()-1.
func (v *Vring) Dropped() int { return v.off + v.head }

// DropBefore lets go of the pairs numbered below i (those already let go,
// and those not added yet, are ignored). It takes O(1) time amortised: the
// pairs still held are moved to the front of the vring's array only once
// as many have been let go, so each pair is moved at most once on average.
func (v *Vring) DropBefore(i int) {
	k := min(i-v.off, len(v.pairs))
	if k <= v.head {
		return
	}
	v.head = k
	if v.head >= minCompact && 2*v.head >= len(v.pairs) {
		n := copy(v.pairs, v.pairs[v.head:])
		v.pairs = v.pairs[:n]
		v.off += v.head
		v.head = 0
	}
}

// minCompact is the fewest pairs let go before DropBefore moves the rest
// to the front of the array.
const minCompact = 256

// held returns pairs [from, to) if the vring holds them all, else nil and
// false.
func (v *Vring) held(from, to int) ([]pair, bool) {
	if v.count || from < v.Dropped() || to > v.Descriptors() || from > to {
		return nil, false
	}
	return v.pairs[from-v.off : to-v.off], true
}

// live returns the pairs the vring holds.
func (v *Vring) live() []pair { return v.pairs[v.head:] }
