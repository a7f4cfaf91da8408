package simkernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// AddressBits is the width of a device address. The 48-bit space holds the
// HBM channels, the die-1 (mesh) half at bit 47 and the host window at bit 46.
const AddressBits = 48

// AddressLimit is the first address past the device address space (2^48).
const AddressLimit uint64 = 1 << AddressBits

// PageSize is the size in bytes of the unit in which [Memory] allocates.
//
// 4 KiB is the host PAGE_SIZE, which is also the kernel driver's device
// memory allocation granule, so driver-sized buffers, descriptor rings and
// semaphore blocks each cost one page or a few; a 64 KiB DMA descriptor (the
// UDMA maximum) spans 16 or 17 pages. Smaller pages would add map overhead per
// byte; larger ones would waste memory on the sparse rings and control blocks
// a run scatters across the address space.
const PageSize = 4096

const (
	pageShift = 12
	pageMask  = PageSize - 1
	// pageLimit is the number of pages in the address space.
	pageLimit = AddressLimit >> pageShift
)

// ErrAddressRange is returned (wrapped, with the address and length) for an
// access that does not lie wholly inside the 48-bit device address space.
var ErrAddressRange = errors.New("address out of range")

// Page is one page of device memory.
type Page [PageSize]byte

// MemoryState is the whole mutable state of a [Memory]: its resident pages,
// keyed by page number (address / PageSize). A page absent from the map reads
// as zeros.
type MemoryState struct {
	// Pages maps a page number, below 2^48 / PageSize, to the page's bytes.
	// A resident page may hold only zeros (it was written, then cleared).
	Pages map[uint64]*Page
}

// Memory is a sparse, paged, byte-addressed model of the 48-bit device
// address space. Reads of memory never written return zeros and allocate
// nothing; a page is allocated on the first write of a non-zero byte to it, so
// a 144 GiB HBM range costs only the pages a run touches. Multi-byte values
// are little-endian, as on the device.
//
// Every access is checked against the address space before anything is
// written: an access that would reach past 2^48 fails with an error wrapping
// [ErrAddressRange] and leaves memory unchanged.
//
// A Memory may charge its resident pages to a [PageBudget] shared with
// other memories ([Memory.SetBudget]); a write, fill or copy that would pass
// it is refused with [ErrPageBudget] before anything is written.
//
// The zero Memory is ready to use. A Memory is not safe for concurrent use.
type Memory struct {
	pages pageTable

	budget *PageBudget // nil: no bound
	credit int64       // pages charged to budget, not yet resident
	hold   int         // Reserve calls not yet released

	// A cache of the pages looked up last: lastPage the last (nil: none),
	// older the ones before it (see older). A page leaves it when it is
	// freed, and the whole cache whenever the table is replaced.
	lastNum  uint64
	lastPage *Page
	older    olderPages
}

// olderPageCount is how many pages a memory remembers besides the last it
// looked up. A device reads a few pages in turn — the SP records it
// fetches, the semaphores its DMA engines increment, a transfer's data —
// and with many devices simulated every walk of its page table misses the
// processor's caches at each level: the last page alone was not enough.
const olderPageCount = 3

// olderPages are the pages a memory looked up before its last, the most
// recent first. An entry whose page is nil is empty.
type olderPages [olderPageCount]struct {
	num  uint64
	page *Page
}

// push makes the last page (pn, p) an older one, the oldest dropped.
func (o *olderPages) push(pn uint64, p *Page) {
	copy(o[1:], o[:olderPageCount-1])
	o[0].num, o[0].page = pn, p
}

// drop takes page pn out.
func (o *olderPages) drop(pn uint64) {
	for i := range o {
		if o[i].page != nil && o[i].num == pn {
			o[i].page = nil
		}
	}
}

// NewMemory returns an empty memory.
func NewMemory() *Memory { return &Memory{} }

// checkRange returns an error unless [addr, addr+n) lies inside the address
// space. It is written so that addr+n cannot overflow, and kept small enough
// to inline into the word accessors.
func checkRange(op string, addr, n uint64) error {
	if n > AddressLimit || addr > AddressLimit-n {
		return rangeError(op, addr, n)
	}
	return nil
}

// rangeError builds the error for an access outside the address space.
//
//go:noinline
func rangeError(op string, addr, n uint64) error {
	return fmt.Errorf("sim memory: %s [%#x, +%#x) outside the %d-bit device address space: %w",
		op, addr, n, AddressBits, ErrAddressRange)
}

// page returns page pn, or nil if it is not resident.
func (m *Memory) page(pn uint64) *Page {
	if m.lastPage != nil && m.lastNum == pn {
		return m.lastPage
	}
	return m.lookup(pn)
}

// lookup is page's slow path, kept out of line so page inlines: the older
// pages remembered (one found trades places with the last), then the table.
func (m *Memory) lookup(pn uint64) *Page {
	for i := range m.older {
		if e := &m.older[i]; e.page != nil && e.num == pn {
			p := e.page
			e.num, e.page = m.lastNum, m.lastPage
			m.lastNum, m.lastPage = pn, p
			return p
		}
	}
	p := m.pages.get(pn)
	if p != nil {
		m.remember(pn, p)
	}
	return p
}

// remember makes resident page pn, p, not in the cache, the last page
// looked up.
func (m *Memory) remember(pn uint64, p *Page) {
	if m.lastPage != nil {
		m.older.push(m.lastNum, m.lastPage)
	}
	m.lastNum, m.lastPage = pn, p
}

// alloc returns page pn, allocating a zeroed page if it is not resident.
func (m *Memory) alloc(pn uint64) *Page {
	if p := m.page(pn); p != nil {
		return p
	}
	p := new(Page)
	before := m.held()
	m.pages.set(pn, p)
	for range m.held() - before { // the page and the table's new nodes
		m.charge()
	}
	m.remember(pn, p) // not resident before, so not in the cache
	return p
}

// free drops page pn.
func (m *Memory) free(pn uint64) {
	before := m.held()
	if m.pages.del(pn) {
		m.uncharge(before - m.held()) // the page and the nodes it left empty
	}
	if m.lastPage != nil && m.lastNum == pn {
		m.lastPage = nil
	}
	m.older.drop(pn)
}

func allZero(b []byte) bool {
	for len(b) > 0 { // compare against a zero page: memequal is vectorised
		n := min(len(b), PageSize)
		if !bytes.Equal(b[:n], zeroPage[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

// zeroPage is a page of zeros to compare against.
var zeroPage Page

// Read fills p from memory starting at addr. Bytes never written read as zero.
func (m *Memory) Read(addr uint64, p []byte) error {
	if err := checkRange("read", addr, uint64(len(p))); err != nil {
		return err
	}
	for len(p) > 0 {
		off := addr & pageMask
		n := min(PageSize-off, uint64(len(p)))
		if pg := m.page(addr >> pageShift); pg != nil {
			copy(p[:n], pg[off:])
		} else {
			clear(p[:n])
		}
		p = p[n:]
		addr += n
	}
	return nil
}

// Write copies p into memory starting at addr. Writing zeros to a page that
// is not resident allocates nothing.
func (m *Memory) Write(addr uint64, p []byte) error {
	if err := checkRange("write", addr, uint64(len(p))); err != nil {
		return err
	}
	if m.budget != nil {
		if err := m.need("write", addr, m.NewPages(addr, p)); err != nil {
			return err
		}
		defer m.settle()
	}
	for len(p) > 0 {
		off := addr & pageMask
		n := min(PageSize-off, uint64(len(p)))
		pn := addr >> pageShift
		pg := m.page(pn)
		if pg == nil && !allZero(p[:n]) {
			pg = m.alloc(pn)
		}
		if pg != nil {
			copy(pg[off:], p[:n])
		}
		p = p[n:]
		addr += n
	}
	return nil
}

// ReadU32 returns the little-endian 32-bit value at addr (any alignment).
func (m *Memory) ReadU32(addr uint64) (uint32, error) {
	var b [4]byte
	err := m.readWord(addr, b[:])
	return binary.LittleEndian.Uint32(b[:]), err
}

// WriteU32 stores v little-endian at addr (any alignment).
func (m *Memory) WriteU32(addr uint64, v uint32) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	return m.writeWord(addr, b[:])
}

// ReadU64 returns the little-endian 64-bit value at addr (any alignment).
func (m *Memory) ReadU64(addr uint64) (uint64, error) {
	var b [8]byte
	err := m.readWord(addr, b[:])
	return binary.LittleEndian.Uint64(b[:]), err
}

// WriteU64 stores v little-endian at addr (any alignment).
func (m *Memory) WriteU64(addr uint64, v uint64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return m.writeWord(addr, b[:])
}

// readWord is Read of a word (the ReadU32 and ReadU64 it serves): a word
// inside one page is copied from it without Read's loop, and one of a
// page never written reads as zeros. On a range error w is left zero.
func (m *Memory) readWord(addr uint64, w []byte) error {
	if err := checkRange("read", addr, uint64(len(w))); err != nil {
		return err
	}
	if off := addr & pageMask; off <= PageSize-uint64(len(w)) {
		if pg := m.page(addr >> pageShift); pg != nil {
			copy(w, pg[off:])
		}
		return nil
	}
	return m.Read(addr, w)
}

// writeWord is Write of a word (for WriteU32 and WriteU64): a word inside
// one page is stored in it directly, and a zero word in a page never
// written allocates nothing, as Write would not.
func (m *Memory) writeWord(addr uint64, w []byte) error {
	if err := checkRange("write", addr, uint64(len(w))); err != nil {
		return err
	}
	off := addr & pageMask
	if off > PageSize-uint64(len(w)) {
		return m.Write(addr, w)
	}
	pn := addr >> pageShift
	pg := m.page(pn)
	if pg == nil {
		if allZero(w) {
			return nil
		}
		if m.budget != nil {
			c := newNodes{t: &m.pages}
			c.add(pn)
			if err := m.need("write", addr, 1+c.cost()); err != nil {
				return err
			}
			defer m.settle()
		}
		pg = m.alloc(pn)
	}
	copy(pg[off:], w)
	return nil
}

// Fill sets the n bytes starting at addr to b. Filling with zero allocates
// nothing and releases every page the range covers entirely, so clearing a
// buffer returns memory; its cost is bounded by the smaller of the range's
// page count and the number of resident pages. A non-zero fill allocates
// every page of the range it does not find resident, so its size is the
// caller's to bound (a non-zero fill of the whole space would need 256 TiB).
func (m *Memory) Fill(addr, n uint64, b byte) error {
	if err := checkRange("fill", addr, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if b == 0 && n/PageSize > uint64(m.pages.n) {
		m.zeroSparse(addr, n)
		return nil
	}
	if b != 0 && m.budget != nil {
		if err := m.need("fill", addr, m.fillPages(addr, n)); err != nil {
			return err
		}
		defer m.settle()
	}
	for n > 0 {
		off := addr & pageMask
		c := min(PageSize-off, n)
		pn := addr >> pageShift
		switch {
		case b != 0:
			pg := m.alloc(pn)
			fillBytes(pg[off:off+c], b)
		case c == PageSize:
			m.free(pn)
		default:
			if pg := m.page(pn); pg != nil {
				clear(pg[off : off+c])
			}
		}
		addr += c
		n -= c
	}
	return nil
}

// Commit makes every page of [addr, addr+n) resident, zeroed where it was
// not, charging the budget for them and the table nodes they need up
// front: refused whole, with an error wrapping [ErrPageBudget], when they
// do not fit, and nothing changes. Once committed, writes inside the range
// need no new page, so no later charge can refuse them (a buffer's owner
// cannot be refused writes of its own buffer because another user of the
// budget used it up). Without a budget it only makes the pages resident.
func (m *Memory) Commit(addr, n uint64) error {
	if err := checkRange("commit", addr, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if m.budget != nil {
		if err := m.need("commit", addr, m.fillPages(addr, n)); err != nil {
			return err
		}
		defer m.settle()
	}
	for pn, last := addr>>pageShift, (addr+n-1)>>pageShift; pn <= last; pn++ {
		m.alloc(pn)
	}
	return nil
}

// fillPages returns how many budget pages a non-zero fill of [addr,
// addr+n) takes: the range's pages less those resident, and the table
// nodes they need. A range far larger than any budget is not walked.
func (m *Memory) fillPages(addr, n uint64) int64 {
	first, last := addr>>pageShift, (addr+n-1)>>pageShift
	span := last - first + 1
	if span > uint64(m.budget.limit)+uint64(m.pages.n) {
		return int64(min(span, 1<<62)) // more than the budget can hold anyway
	}
	resident := 0
	m.pages.eachIn(first, last, func(uint64, *Page) { resident++ })
	nodes := newNodes{t: &m.pages}
	for pn := first; pn <= last; pn = (pn | ptMask) + 1 { // every leaf's span the range reaches (pages are below 2^36: no overflow)
		nodes.add(pn)
	}
	return int64(span) - int64(resident) + nodes.cost()
}

// zeroSparse zeroes [addr, addr+n) by visiting the resident pages rather than
// the range, for ranges with more pages than memory holds.
func (m *Memory) zeroSparse(addr, n uint64) {
	end := addr + n // checked: no overflow
	first, last := addr>>pageShift, (end-1)>>pageShift
	type resident struct {
		pn uint64
		pg *Page
	}
	var in []resident
	m.pages.eachIn(first, last, func(pn uint64, pg *Page) { in = append(in, resident{pn, pg}) })
	for _, r := range in {
		pn, pg := r.pn, r.pg
		lo, hi := uint64(0), uint64(PageSize)
		if pn == first {
			lo = addr & pageMask
		}
		if pn == last {
			hi = (end-1)&pageMask + 1
		}
		if lo == 0 && hi == PageSize {
			m.free(pn)
		} else {
			clear(pg[lo:hi])
		}
	}
}

func fillBytes(p []byte, b byte) {
	if len(p) == 0 {
		return
	}
	p[0] = b
	for i := 1; i < len(p); i *= 2 {
		copy(p[i:], p[:i])
	}
}

// Copy copies n bytes from src to dst, page to page, without an n-byte
// buffer. Overlapping ranges are handled as memmove does: afterwards dst
// holds what src held before. Copying from a region never written clears the
// destination and allocates nothing. Both ranges are checked before anything
// is written.
//
// A copy costs one step per source/destination page pair. A range with many
// more pages than memory holds is copied by visiting the resident pages
// instead, so even a copy of the whole address space is cheap when memory is
// sparse (it then uses a temporary copy of the resident source pages if the
// ranges overlap).
func (m *Memory) Copy(dst, src, n uint64) error {
	if err := checkRange("copy source", src, n); err != nil {
		return err
	}
	if err := checkRange("copy destination", dst, n); err != nil {
		return err
	}
	if n == 0 || dst == src {
		return nil
	}
	if n>>pageShift > 2*uint64(m.pages.n)+16 {
		return m.copySparse(dst, src, n)
	}
	if m.budget != nil {
		if err := m.need("copy", dst, m.copyPages(dst, src, n)); err != nil {
			return err
		}
		defer m.settle()
	}
	if dst < src || dst-src >= n {
		// Forward: dst is below src, or the ranges do not overlap.
		for n > 0 {
			so, do := src&pageMask, dst&pageMask
			c := min(PageSize-so, PageSize-do, n)
			m.copyChunk(dst>>pageShift, do, src>>pageShift, so, c)
			src += c
			dst += c
			n -= c
		}
		return nil
	}
	// Backward: dst overlaps the tail of src; copy from the end down.
	se, de := src+n, dst+n
	for n > 0 {
		so, do := (se-1)&pageMask, (de-1)&pageMask // offsets of the last byte
		c := min(so+1, do+1, n)
		se -= c
		de -= c
		m.copyChunk(de>>pageShift, de&pageMask, se>>pageShift, se&pageMask, c)
		n -= c
	}
	return nil
}

// copySparse copies [src, src+n) to dst by visiting the resident pages: it
// collects the resident source bytes, zeroes the destination range, and
// writes the collected bytes back at their new addresses. With a budget it
// first reserves every destination page the collected bytes reach.
func (m *Memory) copySparse(dst, src, n uint64) error {
	type piece struct {
		pn     uint64
		lo, hi uint64 // byte range within the page that lies in the source
		page   *Page
	}
	end := src + n
	first, last := src>>pageShift, (end-1)>>pageShift
	overlap := dst < end && src < dst+n
	var pieces []piece
	m.pages.eachIn(first, last, func(pn uint64, pg *Page) {
		p := piece{pn: pn, hi: PageSize, page: pg}
		if pn == first {
			p.lo = src & pageMask
		}
		if pn == last {
			p.hi = (end-1)&pageMask + 1
		}
		if overlap { // zeroing dst below would also change these bytes
			cp := *pg
			p.page = &cp
		}
		pieces = append(pieces, p)
	}) // in ascending page order
	if m.budget != nil {
		var need int64
		nodes := newNodes{t: &m.pages}
		last := ^uint64(0)
		for _, p := range pieces {
			at := p.pn<<pageShift + p.lo - src + dst
			for pn := at >> pageShift; pn <= (at+p.hi-p.lo-1)>>pageShift; pn++ {
				if pn != last {
					need++
					nodes.add(pn)
				}
				last = pn
			}
		}
		// Zeroing the destination may free nodes that the writes then
		// allocate again: those return to the budget first.
		need += nodes.cost()
		if err := m.need("copy", dst, need); err != nil {
			return err
		}
		m.hold++ // the writes below draw on it; zeroSparse gives pages back
		defer func() { m.hold--; m.settle() }()
	}
	m.zeroSparse(dst, n)
	for _, p := range pieces {
		at := p.pn<<pageShift + p.lo - src + dst
		_ = m.Write(at, p.page[p.lo:p.hi]) // inside [dst, dst+n): checked, and reserved
	}
	return nil
}

// copyChunk copies c bytes from page spn offset so to page dpn offset do; the
// chunk lies inside one page on each side.
func (m *Memory) copyChunk(dpn, do, spn, so, c uint64) {
	sp := m.page(spn)
	if sp == nil {
		if dp := m.page(dpn); dp != nil {
			if c == PageSize {
				m.free(dpn)
			} else {
				clear(dp[do : do+c])
			}
		}
		return
	}
	from := sp[so : so+c]
	dp := m.page(dpn)
	if dp == nil {
		if allZero(from) {
			return
		}
		dp = m.alloc(dpn)
	}
	copy(dp[do:do+c], from) // memmove-safe when sp == dp
}

// PagesTouched returns the number of resident pages: those written with
// non-zero data and not since released by Clear, a zero Fill, or a Copy of
// zeros over a whole page.
func (m *Memory) PagesTouched() int { return m.pages.n }

// TableNodes returns the number of nodes of the table that maps the
// resident pages, each [PageSize] bytes of pointers (see [PageBudget]).
func (m *Memory) TableNodes() int { return m.pages.nodeN }

// FootprintBytes returns the bytes held by resident pages.
func (m *Memory) FootprintBytes() uint64 { return uint64(m.pages.n) * PageSize }

// held returns what the memory charges a budget: its resident pages and
// the table's nodes, in [PageSize] units (see nodeCost).
func (m *Memory) held() int64 { return int64(m.pages.n) + nodeCost(int64(m.pages.nodeN)) }

// Clear releases every page; all of memory reads as zeros again.
func (m *Memory) Clear() {
	m.uncharge(m.held())
	m.pages = pageTable{}
	m.lastPage, m.older = nil, olderPages{}
}

// State returns a deep copy of the memory's resident pages.
func (m *Memory) State() MemoryState {
	pages := make(map[uint64]*Page, m.pages.n)
	m.pages.each(func(pn uint64, pg *Page) {
		cp := *pg
		pages[pn] = &cp
	})
	return MemoryState{Pages: pages}
}

// Restore replaces the memory's contents with a deep copy of s. A page number
// outside the address space or a nil page is refused with an error wrapping
// [ErrInvalidState], and the memory keeps its old contents.
func (m *Memory) Restore(s MemoryState) error { return m.restore(s, false) }

// RestoreOwned is [Memory.Restore] for a state the caller gives up, one
// decoded from a file say: the memory keeps s's pages themselves instead
// of copies, so restoring takes no memory for them. s's pages must be
// distinct, and the caller must not use them after (a refused state is
// left as it was).
func (m *Memory) RestoreOwned(s MemoryState) error { return m.restore(s, true) }

// restore is Restore, or RestoreOwned when own.
func (m *Memory) restore(s MemoryState, own bool) error {
	// Report the lowest bad page so the error is the same on every run.
	bad, reason := uint64(0), ""
	for pn, pg := range s.Pages {
		why := ""
		switch {
		case pn >= pageLimit:
			why = fmt.Sprintf("outside the %d-bit device address space", AddressBits)
		case pg == nil:
			why = "is nil"
		}
		if why != "" && (reason == "" || pn < bad) {
			bad, reason = pn, why
		}
	}
	if reason != "" {
		where := fmt.Sprintf("page %#x", bad)
		if bad < 1<<(64-pageShift) { // its address fits in 64 bits
			where += fmt.Sprintf(" (address %#x)", bad<<pageShift)
		}
		return fmt.Errorf("sim memory: restore: %s %s: %w", where, reason, ErrInvalidState)
	}
	if m.budget != nil {
		if delta := int64(len(s.Pages)) + nodeCost(tableNodesFor(s.Pages)) - m.held(); delta > 0 && !m.budget.take(delta) {
			return fmt.Errorf("sim memory: restore: %w", m.budget.refusal("restore", 0, delta))
		} else if delta < 0 {
			m.budget.give(-delta)
		}
	}
	var pages pageTable
	for pn, pg := range s.Pages {
		if !own {
			cp := *pg
			pg = &cp
		}
		pages.set(pn, pg)
	}
	m.pages = pages
	m.lastPage, m.older = nil, olderPages{}
	return nil
}

// TableBytes returns the memory that restoring s allocates beside its pages:
// the nodes of the page table that holds them, 4,864 bytes each (Go's size
// class of a node: 512 pointers and a count). Pages scattered one to a
// 2 MiB span cost a leaf each, more than the page itself; a snapshot loader
// charges this against its limit before it builds anything.
func (s MemoryState) TableBytes() int64 { return tableNodesFor(s.Pages) * NodeAllocBytes }

// NodeAllocBytes is what Go allocates for one node of a memory's page
// table (its 4,864-byte size class).
const NodeAllocBytes = 4864

// tableNodesFor returns the nodes a page table holding pages has: one
// leaf for every 512 pages' span that holds one, a level-2 node for every
// leaf's span of 512, a level-1 node likewise, and the root.
func tableNodesFor(pages map[uint64]*Page) int64 {
	if len(pages) == 0 {
		return 0
	}
	var spans [3]map[uint64]struct{}
	for i := range spans {
		spans[i] = map[uint64]struct{}{}
	}
	for pn := range pages {
		for i := range spans {
			spans[i][pn>>(ptBits*uint(i+1))] = struct{}{}
		}
	}
	return 1 + int64(len(spans[0])+len(spans[1])+len(spans[2]))
}

// Adopt replaces m's resident pages with o's and leaves o empty: the commit
// half of a restore checked aside (o was filled by [Memory.Restore] on a
// memory of its own, so nothing of m changed while the owner's other parts
// were checked). m keeps its budget and its charge as they were: Adopt
// neither charges nor refuses.
func (m *Memory) Adopt(o *Memory) {
	m.pages, m.lastPage, m.older = o.pages, nil, olderPages{}
	o.pages, o.lastPage, o.older = pageTable{}, nil, olderPages{}
}
