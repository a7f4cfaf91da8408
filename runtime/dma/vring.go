package dma

import (
	"fmt"
	"slices"

	"github.com/neuronsim/neuronsim/hw/udma"
)

// pair is one M2S/S2M descriptor pair of a vring.
type pair struct {
	src, dst uint64
	len      int
	reduce   uint32 // the S2M reduce word (udma.ReduceMeta); 0 for a plain write
}

// Vring is a list of transfers built before it is dumped into a queue's
// rings (vring_add_desc_transfer, vring_add_event_accel).
type Vring struct {
	Name  string
	pairs []pair
	bytes uint64
}

// NewVring returns an empty vring.
func NewVring(name string) *Vring { return &Vring{Name: name} }

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
	for off := uint64(0); off < n; off += udma.MaxTransfer {
		c := min(n-off, udma.MaxTransfer)
		v.pairs = append(v.pairs, pair{src + off, dst + off, int(c), meta})
	}
	v.bytes += n
	return nil
}

// AddEventAccel appends the completion write: the 4-byte word at src (which
// holds the increment, or 1 for an event) is written to dst — an NC's
// semaphore INCR address or event address — after every earlier transfer.
func (v *Vring) AddEventAccel(src, dst uint64) error {
	if dst%4 != 0 || src%4 != 0 {
		return fmt.Errorf("dma: vring %q: event-accel [%#x → %#x] not word aligned", v.Name, src, dst)
	}
	v.pairs = append(v.pairs, pair{src, dst, 4, 0})
	v.bytes += 4
	return nil
}

// Grow makes room for n more descriptor pairs without reallocating (a
// builder that knows its count up front spares the copies of growing one
// pair at a time); n ≤ 0 does nothing.
func (v *Vring) Grow(n int) {
	if n > 0 {
		v.pairs = slices.Grow(v.pairs, n)
	}
}

// Descriptors returns the number of descriptor pairs.
func (v *Vring) Descriptors() int { return len(v.pairs) }

// Bytes returns the bytes the vring moves.
func (v *Vring) Bytes() uint64 { return v.bytes }
