package simkernel

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrPageBudget is returned (wrapped, naming the budget and what was asked)
// when an access would make more pages resident than the [PageBudget] of
// its memory allows. The access is refused whole: nothing is written.
var ErrPageBudget = errors.New("page budget exhausted")

// PageBudget bounds the memory held by every [Memory] that shares it — the
// device memory, register file and host memory of a served system — so
// that touching memory, which costs a client one byte per page, cannot make
// the process that simulates it grow without bound. It counts in units of
// [PageSize] bytes everything a Memory allocates for what it holds: its
// resident pages and the nodes of the table that maps them (a node is 512
// pointers, which Go allocates in 4,864 bytes, 19/16 of a page: see
// nodeCost; pages written together share them, a leaf for every 2 MiB of
// addresses, while a page alone in its 2 MiB needs a leaf of its own, so
// one-word writes scattered 2 MiB apart cost about 2.2 pages each). A
// write that would hold memory past the limit is refused with
// [ErrPageBudget] before anything is written; pages released (a zero fill,
// a free, Clear) return to the budget with the nodes they leave empty.
//
// A PageBudget is safe for concurrent use by memories under different
// locks. The zero value is not usable; use [NewPageBudget].
type PageBudget struct {
	limit int64
	used  atomic.Int64
}

// NewPageBudget returns a budget of at most pages units of [PageSize]
// bytes (resident pages and page-table nodes); pages must be at least 1.
func NewPageBudget(pages int64) (*PageBudget, error) {
	if pages < 1 {
		return nil, fmt.Errorf("sim: page budget of %d pages: want at least 1", pages)
	}
	return &PageBudget{limit: pages}, nil
}

// Limit returns the most pages (units of [PageSize] bytes) the budget
// allows.
func (b *PageBudget) Limit() int64 { return b.limit }

// Used returns the pages (units of [PageSize] bytes: resident pages and
// page-table nodes) currently charged to the budget.
func (b *PageBudget) Used() int64 { return b.used.Load() }

// take charges n pages, or nothing and false if they do not fit.
func (b *PageBudget) take(n int64) bool {
	if n <= 0 {
		return true
	}
	for {
		u := b.used.Load()
		if n > b.limit-u {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// give returns n pages to the budget.
func (b *PageBudget) give(n int64) {
	if n > 0 {
		b.used.Add(-n)
	}
}

// refusal describes a refused charge of n pages.
func (b *PageBudget) refusal(op string, addr uint64, n int64) error {
	return fmt.Errorf("sim memory: %s at %#x needs %d new pages of %d bytes (data and page table); %d of the budget's %d are in use: %w",
		op, addr, n, PageSize, b.Used(), b.limit, ErrPageBudget)
}

// SetBudget makes m charge its resident pages and its page table's nodes
// to b (nil: no bound). What m holds already moves from the old budget to
// b; if it does not fit in b, the error wraps [ErrPageBudget] and nothing
// changes.
func (m *Memory) SetBudget(b *PageBudget) error {
	if b == m.budget {
		return nil
	}
	n := m.held()
	if b != nil && !b.take(n) {
		return b.refusal("set budget", 0, n)
	}
	if m.budget != nil {
		m.budget.give(n + m.credit)
	}
	m.budget, m.credit = b, 0
	return nil
}

// Budget returns the budget m charges its pages to, or nil.
func (m *Memory) Budget() *PageBudget { return m.budget }

// Reserve charges the budget for n pages that accesses to come will make
// resident, so that a caller doing one logical access in several writes
// (a BAR write crossing windows) can refuse it whole up front. Writes use
// the reservation before charging the budget anew; [Memory.Release] returns
// what is left of it. Without a budget Reserve does nothing.
func (m *Memory) Reserve(op string, addr uint64, n int64) error {
	if err := m.need(op, addr, n); err != nil {
		return err
	}
	m.hold++
	return nil
}

// Release ends the reservation Reserve made, returning its unused pages.
func (m *Memory) Release() {
	if m.hold > 0 {
		m.hold--
	}
	m.settle()
}

// need makes sure the reservation covers n more pages.
func (m *Memory) need(op string, addr uint64, n int64) error {
	if m.budget == nil || n <= m.credit {
		return nil
	}
	if !m.budget.take(n - m.credit) {
		return m.budget.refusal(op, addr, n)
	}
	m.credit = n
	return nil
}

// settle returns the unused reservation unless a Reserve holds it.
func (m *Memory) settle() {
	if m.hold == 0 && m.credit > 0 {
		m.budget.give(m.credit)
		m.credit = 0
	}
}

// charge accounts for one budget page taken by a page made resident or by
// table nodes allocated.
func (m *Memory) charge() {
	switch {
	case m.budget == nil:
	case m.credit > 0:
		m.credit--
	default:
		// Every caller reserves an upper bound first; this keeps the count
		// right should one not.
		m.budget.used.Add(1)
	}
}

// uncharge accounts for n pages (resident pages and table nodes) released.
func (m *Memory) uncharge(n int64) {
	if m.budget != nil {
		m.budget.give(n)
	}
}

// NewPages returns how many budget pages a Write of p at addr would take:
// the pages not resident that receive a non-zero byte, and the cost of the
// page-table nodes they need that the table lacks. The range must be in the address
// space.
func (m *Memory) NewPages(addr uint64, p []byte) int64 {
	var n int64
	nodes := newNodes{t: &m.pages}
	for len(p) > 0 {
		off := addr & pageMask
		c := min(PageSize-off, uint64(len(p)))
		if pn := addr >> pageShift; m.page(pn) == nil && !allZero(p[:c]) {
			n++
			nodes.add(pn)
		}
		p = p[c:]
		addr += c
	}
	return n + nodes.cost()
}

// NewPagesU32 is NewPages for little-endian words at addr.
func (m *Memory) NewPagesU32(addr uint64, words []uint32) int64 {
	var n int64
	nodes := newNodes{t: &m.pages}
	last := ^uint64(0)
	for i, w := range words {
		if w == 0 {
			continue
		}
		a := addr + 4*uint64(i)
		for _, pn := range [2]uint64{a >> pageShift, (a + 3) >> pageShift} {
			if pn != last && m.page(pn) == nil {
				// A word straddling two pages may put its non-zero byte in
				// either: counting both keeps this an upper bound.
				n++
				nodes.add(pn)
			}
			last = pn
		}
	}
	return n + nodes.cost()
}

// copyPages returns an upper bound of the budget pages a Copy of n bytes
// from src to dst takes: destination pages not resident whose source
// overlaps a resident page (a source never written copies as zeros), and
// the cost of the table nodes they need.
func (m *Memory) copyPages(dst, src, n uint64) int64 {
	var count int64
	nodes := newNodes{t: &m.pages}
	for d := dst; d < dst+n; {
		pn := d >> pageShift
		c := min(PageSize-d&pageMask, dst+n-d)
		if m.page(pn) == nil {
			s := src + (d - dst)
			if m.page(s>>pageShift) != nil || m.page((s+c-1)>>pageShift) != nil {
				count++
				nodes.add(pn)
			}
		}
		d += c
	}
	return count + nodes.cost()
}
