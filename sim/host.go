package sim

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/neuronsim/neuronsim/internal/extent"
)

// Host memory model: the host's physical memory as DMA engines reach it
// through the host window, and as the runtime allocates DMA buffers from it
// (the driver's dma_alloc_coherent). One HostMemory may back several devices
// of a system. It is sparse like Memory.
//
// Allocation policy (deterministic: the same calls give the same addresses):
// the window [HostMemoryBase, HostMemoryLimit) is a bump region above a next
// pointer plus the free extents below it, coalesced. Alloc takes the
// lowest free extent that holds the buffer at its alignment (address-ordered
// first fit); failing that it places the buffer at the next pointer rounded
// up to the alignment (the skipped bytes become a free extent); failing that
// (the window's end is near) it tries the free extent that ends at the next
// pointer together with the bump region. Only when none of these holds the
// buffer is the window exhausted. Alloc and Free take O(log n) time in the
// number of buffers and free extents.
//
// Lazy buffers: AllocLazy places a buffer as Alloc does, but its bytes are
// never stored: a read of it calls the function it was given, which produces
// them (the bytes the host would have written up front, runtime/ndl's
// LazyHostMemory), and a write into it is refused with ErrHostLazy. A
// descriptor ring that millions of descriptors pass through then holds none
// of them in host memory.
const (
	HostMemoryBase  = 0x1_0000_0000   // first host physical address handed out
	HostMemoryLimit = 0x100_0000_0000 // first address past the model (1 TiB)

	// HostGranule is the unit of host allocation: every buffer starts at a
	// multiple of it and its size is rounded up to a multiple of it, so an
	// alignment below it is met by every buffer.
	HostGranule = 64
	// MaxHostAlign is the largest alignment Alloc accepts (1 GiB, the
	// largest x86-64 page). An alignment is a power of two in [1, MaxHostAlign].
	MaxHostAlign = 1 << hostMaxAlignShift
	// MaxHostBuffers bounds the live buffers of a HostMemory: Alloc refuses
	// the next one with ErrHostNoMemory, and Restore refuses a state with
	// more.
	MaxHostBuffers = 1 << 20
)

const (
	hostGranuleShift  = 6                                        // log2(HostGranule)
	hostMaxAlignShift = 30                                       // log2(MaxHostAlign)
	hostClasses       = hostMaxAlignShift - hostGranuleShift + 1 // alignment classes 64 … MaxHostAlign
)

// Errors of the host memory model; each is returned wrapped with context.
var (
	// ErrHostNoMemory: no free space holds the buffer at its alignment, or
	// MaxHostBuffers buffers are live.
	ErrHostNoMemory = errors.New("host memory exhausted")
	// ErrHostBadFree: Free of an address that is not a live buffer's base.
	ErrHostBadFree = errors.New("not an allocated host buffer")
	// ErrHostRange: an access that does not lie inside one live buffer.
	ErrHostRange = errors.New("host address not in an allocated buffer")
	// ErrHostBadRequest: a size of 0 or past the window, or an alignment
	// that is not a power of two in [1, MaxHostAlign], or a lazy buffer
	// without a fill function.
	ErrHostBadRequest = errors.New("bad host allocation request")
	// ErrHostLazy: a write into a lazy buffer, whose bytes only its fill
	// function produces.
	ErrHostLazy = errors.New("host buffer is lazy (filled when read, never written)")
)

// HostFill produces the bytes of a lazy buffer (AllocLazy): it fills p with
// the len(p) bytes at offset off of the buffer, or returns an error, which
// becomes the read's. It is called without the host memory's lock held.
type HostFill func(off uint64, p []byte) error

// HostExtent is the host address range [Base, Base+Size).
type HostExtent struct {
	Base, Size uint64
}

// End returns the first address past the extent (Base+Size; Restore has
// checked that it does not overflow).
func (e HostExtent) End() uint64 { return e.Base + e.Size }

// HostState is the whole mutable state of a HostMemory. Restore accepts only
// a state the allocator could have reached (see Restore). A lazy buffer is
// one of Blocks like any other, without bytes in Memory (none were ever
// written) and without its fill function: restored, it is a plain buffer of
// zeros.
type HostState struct {
	Memory MemoryState
	Blocks []HostExtent // live buffers, ascending by Base
	Free   []HostExtent // free extents below Next, ascending by Base, coalesced
	Next   uint64       // bump pointer: [Next, HostMemoryLimit) has never been handed out
}

// HostMemory is the host-memory model. It is safe for concurrent use.
type HostMemory struct {
	mu     sync.Mutex
	mem    Memory
	blocks *extent.Tree        // live buffers
	free   *extent.Tree        // free extents below next, coalesced, with alignment classes
	cache  hostCache           // live buffers recently found, by page
	lazy   map[uint64]HostFill // the live lazy buffers' fill functions, by base
	next   uint64
}

// NewHostMemory returns an empty host memory.
func NewHostMemory() *HostMemory {
	return &HostMemory{blocks: extent.New(0, 0), free: extent.New(hostGranuleShift, hostClasses), cache: newHostCache(),
		next: HostMemoryBase}
}

// Buffer cache: every access must lie inside one live buffer, and the
// buffer tree's search costs a walk through memory the caches of the CPU
// seldom hold when the accesses of many DMA queues, each reading its own
// ring, interleave. hostCache remembers the buffers found lately, two to a
// set, the set chosen by a hash of the 2 KiB block of the address accessed
// (its "page" here): a queue reading its ring sequentially finds its buffer
// there until it reaches the next block. A block, not a 4 KiB page: the
// small rings of a queue's halves and neighbours share pages, four or more
// to one, and two ways of a set by 4 KiB page thrashed when they were read
// in turn (1,024 devices: 229,000 tree searches an all-reduce, 26,000 by
// 2 KiB block); smaller blocks again cost long rings more searches than
// they save. It holds only live buffers: Free removes the freed
// buffer from every set one of its pages hashes to (Alloc changes no live
// buffer, so it removes nothing), and Restore empties it. It grows with the
// number of live buffers (two sets for each: fewer leave many sets with more
// buffers in use than ways when the rings of as many queues are read in
// turn), up to hostCacheMaxSets sets.
const (
	hostCachePageShift = 11                 // log2 of the block ("page") a set is chosen by
	hostCacheMinSets   = 64                 // sets of a new cache
	hostCacheMaxSets   = 1 << 16            // the most sets (4 MiB of cache)
	hostCacheHash      = 0x9E3779B97F4A7C15 // odd multiplier (2^64 / golden ratio): spreads pages that ascend by a stride
)

// hostBuffer is one live buffer as the cache holds it: [base, end), and its
// fill function when it is lazy. The zero value holds no address.
type hostBuffer struct {
	base, end uint64
	fill      HostFill
}

// holds reports whether [pa, pa+n) lies inside the buffer and does not
// start at its end.
func (b *hostBuffer) holds(pa uint64, n int) bool {
	return pa-b.base < b.end-b.base && uint64(n) <= b.end-pa
}

// hostCacheSet is a set of the cache: two buffers, the one found last
// first, padded to a cache line of the CPU.
type hostCacheSet struct {
	way [2]hostBuffer
	_   [16]byte
}

// hostCache is the buffer cache.
type hostCache struct {
	sets  []hostCacheSet
	shift uint // 64 - log2(len(sets))
}

// newHostCache returns an empty cache of hostCacheMinSets sets.
func newHostCache() hostCache { return newHostCacheOf(hostCacheMinSets) }

// hostCacheSets returns the sets of a cache for a host memory of buffers
// live buffers: two for each, a power of two in [hostCacheMinSets,
// hostCacheMaxSets].
func hostCacheSets(buffers int) int {
	n := hostCacheMinSets
	for n < 2*buffers && n < hostCacheMaxSets {
		n *= 2
	}
	return n
}

// newHostCacheOf returns an empty cache of n sets, a power of two.
func newHostCacheOf(n int) hostCache {
	return hostCache{sets: make([]hostCacheSet, n), shift: uint(64 - bits.TrailingZeros(uint(n)))}
}

// set returns the set of the page of pa.
func (c *hostCache) set(pa uint64) *[2]hostBuffer {
	return &c.sets[(pa>>hostCachePageShift)*hostCacheHash>>c.shift].way
}

// remove takes the buffer [base, end) out of every set one of its pages
// hashes to (every set, when it has more pages than the cache has sets).
// That is every set where an access finds it: only an access to one of its
// pages finds it (holds), and such an access looks in that page's set.
func (c *hostCache) remove(base, end uint64) {
	drop := func(s *[2]hostBuffer) {
		if s[1].base == base {
			s[1] = hostBuffer{}
		}
		if s[0].base == base {
			s[0], s[1] = s[1], hostBuffer{}
		}
	}
	first, last := base>>hostCachePageShift, (end-1)>>hostCachePageShift
	if last-first >= uint64(len(c.sets)) {
		for i := range c.sets {
			drop(&c.sets[i].way)
		}
		return
	}
	for pg := first; pg <= last; pg++ {
		drop(c.set(pg << hostCachePageShift))
	}
}

// hostAlignClass checks align and returns its class in the free tree (0
// for alignments up to HostGranule).
func hostAlignClass(align uint64) (int, bool) {
	if align == 0 || align&(align-1) != 0 || align > MaxHostAlign {
		return 0, false
	}
	return max(0, bits.TrailingZeros64(align)-hostGranuleShift), true
}

// Alloc returns a zeroed buffer of size bytes (rounded up to HostGranule) at
// a multiple of align, a power of two in [1, MaxHostAlign]. A size of 0 or
// larger than the window, or any other alignment, is refused with
// ErrHostBadRequest; a request no free space can hold, or one past
// MaxHostBuffers live buffers, with ErrHostNoMemory. See the allocation
// policy above.
func (h *HostMemory) Alloc(size, align uint64) (uint64, error) {
	return h.alloc(size, align, nil)
}

// AllocLazy returns a lazy buffer of size bytes at a multiple of align: it
// is placed, bounded and refused exactly as Alloc's buffers are (and counts
// towards MaxHostBuffers), but its bytes are never stored. Read of a range
// inside it calls fill with the range's offset from the buffer's base and a
// slice of the range's length (fill is called without the host memory's
// lock, so it may use the host memory, though not to write this buffer);
// its error is the read's, wrapped. A fill that returns nil has filled p.
// Write into it is refused with ErrHostLazy; Check takes it as any buffer;
// Free releases it and forgets fill. A nil fill is refused with
// ErrHostBadRequest. State keeps the buffer live without bytes: after
// Restore it is a plain buffer of zeros.
func (h *HostMemory) AllocLazy(size, align uint64, fill HostFill) (uint64, error) {
	if fill == nil {
		return 0, fmt.Errorf("sim host memory: alloc lazy %d bytes: no fill function: %w", size, ErrHostBadRequest)
	}
	return h.alloc(size, align, fill)
}

// alloc places a buffer for Alloc (fill nil) and AllocLazy.
func (h *HostMemory) alloc(size, align uint64, fill HostFill) (uint64, error) {
	class, ok := hostAlignClass(align)
	if !ok {
		return 0, fmt.Errorf("sim host memory: alloc %d bytes: alignment %d is not a power of two in [1, %d]: %w",
			size, align, uint64(MaxHostAlign), ErrHostBadRequest)
	}
	if size == 0 || size > HostMemoryLimit-HostMemoryBase {
		return 0, fmt.Errorf("sim host memory: alloc %d bytes: size must be in [1, %d] (the host window): %w",
			size, uint64(HostMemoryLimit-HostMemoryBase), ErrHostBadRequest)
	}
	size, _ = extent.AlignUp(size, HostGranule) // cannot overflow: size ≤ the window
	a := h.free.Align(class)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.blocks.Len() >= MaxHostBuffers {
		return 0, fmt.Errorf("sim host memory: alloc %d bytes: %d live buffers, the limit: %w", size, MaxHostBuffers, ErrHostNoMemory)
	}
	base, ok := h.place(size, a, class)
	if !ok {
		return 0, fmt.Errorf("sim host memory: alloc %d bytes aligned %d: largest free extent %d bytes at this alignment, %d bytes above the next pointer %#x: %w",
			size, a, h.free.Best(class), HostMemoryLimit-h.next, h.next, ErrHostNoMemory)
	}
	if fill == nil && h.mem.Budget() != nil {
		// A budget shared with other memories (a served system's): the
		// buffer's pages are charged now, so that no other user of the
		// budget can leave its owner unable to write it.
		if err := h.mem.Commit(base, size); err != nil {
			h.free.Add(base, base+size)
			return 0, fmt.Errorf("sim host memory: alloc %d bytes: %w: %w", size, err, ErrHostNoMemory)
		}
	}
	h.blocks.Insert(base, base+size)
	if n := hostCacheSets(h.blocks.Len()); n > len(h.cache.sets) {
		h.cache = newHostCacheOf(n) // grown for one more buffer (it never shrinks: Restore makes a new one)
	}
	if fill != nil {
		if h.lazy == nil {
			h.lazy = make(map[uint64]HostFill)
		}
		h.lazy[base] = fill
	}
	return base, nil
}

// place finds room for size bytes at alignment a (class class), takes it out
// of the free space and returns its base.
func (h *HostMemory) place(size, a uint64, class int) (uint64, bool) {
	if f, ok := h.free.FirstFit(size, class); ok {
		base, _ := extent.AlignUp(f.Start, a) // FirstFit checked it
		h.free.Take(f, base, base+size)
		return base, true
	}
	if base, ok := extent.AlignUp(h.next, a); ok && base <= HostMemoryLimit && size <= HostMemoryLimit-base {
		if base > h.next {
			h.free.Add(h.next, base)
		}
		h.next = base + size
		return base, true
	}
	// The window's end is near: the free extent that ends at next and the
	// bump region together may still hold the buffer.
	if top, ok := h.free.Max(); ok && top.End == h.next {
		if base, ok := extent.AlignUp(top.Start, a); ok && base <= HostMemoryLimit && size <= HostMemoryLimit-base {
			// base < top.End: at or past next it would be the bump's base, which failed.
			h.free.Take(top, base, top.End)
			h.next = base + size
			return base, true
		}
	}
	return 0, false
}

// Free releases a buffer Alloc or AllocLazy returned; its bytes read as
// zeros again (a lazy buffer's fill is forgotten).
func (h *HostMemory) Free(base uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.blocks.Floor(base)
	if !ok || b.Start != base {
		return fmt.Errorf("sim host memory: free %#x: %w", base, ErrHostBadFree)
	}
	h.blocks.Delete(base)
	h.cache.remove(b.Start, b.End)
	if _, lazy := h.lazy[base]; lazy {
		delete(h.lazy, base) // it stored no bytes
	} else {
		_ = h.mem.Fill(base, b.Len(), 0) // inside the window, so inside the address space
	}
	h.free.Add(b.Start, b.End)
	return nil
}

// find returns the live buffer that holds [pa, pa+n), from the cache when
// it is there. An access may also end at a buffer's end, or start there
// when it is empty.
func (h *HostMemory) find(pa uint64, n int) (hostBuffer, bool) {
	if s := h.cache.set(pa); s[0].holds(pa, n) {
		return s[0], true
	}
	return h.findMiss(pa, n)
}

// findMiss is find for a buffer that is not the first of its set: the
// second, or one the tree holds, which becomes the first of the set.
func (h *HostMemory) findMiss(pa uint64, n int) (hostBuffer, bool) {
	s := h.cache.set(pa)
	if s[1].holds(pa, n) {
		s[0], s[1] = s[1], s[0]
		return s[0], true
	}
	e, ok := h.blocks.Floor(pa)
	if !ok || pa-e.Start > e.Len() || uint64(n) > e.Len()-(pa-e.Start) {
		return hostBuffer{}, false
	}
	b := hostBuffer{base: e.Start, end: e.End}
	if h.lazy != nil {
		b.fill = h.lazy[e.Start]
	}
	s[0], s[1] = b, s[0]
	return b, true
}

// errRange is the error of an access [pa, pa+n) that lies in no live buffer.
func errRange(pa uint64, n int) error {
	return fmt.Errorf("sim host memory: [%#x, +%d): %w", pa, n, ErrHostRange)
}

// Read copies host memory at pa into p. The range must lie in a live buffer;
// in a lazy one, the buffer's fill produces the bytes (see AllocLazy).
func (h *HostMemory) Read(pa uint64, p []byte) error {
	h.mu.Lock()
	b, ok := h.find(pa, len(p))
	if !ok {
		h.mu.Unlock()
		return errRange(pa, len(p))
	}
	if b.fill != nil {
		h.mu.Unlock()
		return readLazy(b.fill, b.base, pa, p)
	}
	err := h.mem.Read(pa, p)
	h.mu.Unlock()
	return err
}

// readLazy reads [pa, pa+len(p)) of the lazy buffer at base through its
// fill, with no lock held.
func readLazy(fill HostFill, base, pa uint64, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if err := fill(pa-base, p); err != nil {
		return fmt.Errorf("sim host memory: read [%#x, +%d) of the lazy buffer at %#x (offset %d): %w", pa, len(p), base, pa-base, err)
	}
	return nil
}

// Write copies p into host memory at pa. The range must lie in a live buffer
// that is not lazy (ErrHostLazy).
func (h *HostMemory) Write(pa uint64, p []byte) error {
	h.mu.Lock()
	b, ok := h.find(pa, len(p))
	switch {
	case !ok:
		h.mu.Unlock()
		return errRange(pa, len(p))
	case b.fill != nil:
		h.mu.Unlock()
		return fmt.Errorf("sim host memory: write [%#x, +%d) into the lazy buffer at %#x: %w", pa, len(p), b.base, ErrHostLazy)
	}
	err := h.mem.Write(pa, p)
	h.mu.Unlock()
	return err
}

// Check reports whether [pa, pa+n) lies in a live buffer.
func (h *HostMemory) Check(pa uint64, n int) error {
	h.mu.Lock()
	_, ok := h.find(pa, n)
	h.mu.Unlock()
	if !ok {
		return errRange(pa, n)
	}
	return nil
}

// Live returns the number of live buffers.
func (h *HostMemory) Live() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.blocks.Len()
}

// extents lists a tree as HostExtents.
func extents(t *extent.Tree) []HostExtent {
	out := make([]HostExtent, 0, t.Len())
	t.Ascend(func(e extent.Extent) bool {
		out = append(out, HostExtent{Base: e.Start, Size: e.Len()})
		return true
	})
	return out
}

// State returns a deep copy of the host memory. A lazy buffer is a live
// block without bytes (and without its fill: see HostState).
func (h *HostMemory) State() HostState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return HostState{Memory: h.mem.State(), Blocks: extents(h.blocks), Free: extents(h.free), Next: h.next}
}

// Restore replaces the host memory with a deep copy of s. It accepts only a
// state the allocator could have reached: Next a multiple of HostGranule in
// [HostMemoryBase, HostMemoryLimit]; Blocks (at most MaxHostBuffers) and Free
// each ascending, non-empty, HostGranule-aligned extents that together tile
// [HostMemoryBase, Next) exactly, with no two free extents adjacent; memory
// outside the live buffers all zeros. Anything else is refused with an error
// naming the field and wrapping ErrInvalidState, and the host memory keeps
// its state. Every restored buffer is a plain one: lazy buffers live before
// are forgotten with their fill functions, and one a state lists (it was
// lazy when the state was taken) reads as zeros.
func (h *HostMemory) Restore(s HostState) error { return h.restore(s, false) }

// RestoreOwned is [HostMemory.Restore] for a state the caller gives up,
// one decoded from a file say: the host memory keeps its pages instead of
// copies ([Memory.RestoreOwned]), so the caller must not use them after.
func (h *HostMemory) RestoreOwned(s HostState) error { return h.restore(s, true) }

func (h *HostMemory) restore(s HostState, own bool) error {
	if err := validateHostState(s); err != nil {
		return fmt.Errorf("sim host memory: restore: %w: %w", err, ErrInvalidState)
	}
	blocks, free := extent.New(0, 0), extent.New(hostGranuleShift, hostClasses)
	for _, b := range s.Blocks {
		blocks.Insert(b.Base, b.End())
	}
	for _, f := range s.Free {
		free.Insert(f.Base, f.End())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := restoreMemory(&h.mem, s.Memory, own); err != nil {
		return fmt.Errorf("sim host memory: restore: %w", err)
	}
	h.blocks, h.free, h.next, h.lazy = blocks, free, s.Next, nil
	h.cache = newHostCacheOf(hostCacheSets(len(s.Blocks)))
	return nil
}

// validateHostState checks the invariants Restore documents and names the
// first field that breaks one.
func validateHostState(s HostState) error {
	if s.Next < HostMemoryBase || s.Next > HostMemoryLimit || s.Next%HostGranule != 0 {
		return fmt.Errorf("Next %#x: want a multiple of %d in [%#x, %#x]", s.Next, HostGranule, uint64(HostMemoryBase), uint64(HostMemoryLimit))
	}
	if len(s.Blocks) > MaxHostBuffers {
		return fmt.Errorf("Blocks: %d live buffers, the limit is %d", len(s.Blocks), MaxHostBuffers)
	}
	for _, l := range []struct {
		name string
		list []HostExtent
	}{{"Blocks", s.Blocks}, {"Free", s.Free}} {
		for i, e := range l.list {
			switch {
			case e.Size == 0 || e.Base%HostGranule != 0 || e.Size%HostGranule != 0:
				return fmt.Errorf("%s[%d] [%#x, +%#x): want a non-empty extent on %d-byte boundaries", l.name, i, e.Base, e.Size, HostGranule)
			case e.Base < HostMemoryBase || e.Base > s.Next || e.Size > s.Next-e.Base:
				return fmt.Errorf("%s[%d] [%#x, +%#x): outside [%#x, Next %#x)", l.name, i, e.Base, e.Size, uint64(HostMemoryBase), s.Next)
			case i > 0 && e.Base < l.list[i-1].End():
				return fmt.Errorf("%s[%d] [%#x, +%#x): below the end %#x of %s[%d] (extents ascend and are disjoint)", l.name, i, e.Base, e.Size, l.list[i-1].End(), l.name, i-1)
			case l.name == "Free" && i > 0 && e.Base == l.list[i-1].End():
				return fmt.Errorf("Free[%d] [%#x, +%#x): adjacent to Free[%d] (free extents are coalesced)", i, e.Base, e.Size, i-1)
			}
		}
	}
	// Buffers and free extents tile [HostMemoryBase, Next). Every extent not
	// yet walked starts at or above pos.
	pos, i, j := uint64(HostMemoryBase), 0, 0
	for pos < s.Next {
		switch {
		case i < len(s.Blocks) && s.Blocks[i].Base == pos:
			b := s.Blocks[i]
			if j < len(s.Free) && s.Free[j].Base < b.End() {
				return fmt.Errorf("Free[%d] [%#x, +%#x): overlaps Blocks[%d] [%#x, +%#x)", j, s.Free[j].Base, s.Free[j].Size, i, b.Base, b.Size)
			}
			pos = b.End()
			i++
		case j < len(s.Free) && s.Free[j].Base == pos:
			f := s.Free[j]
			if i < len(s.Blocks) && s.Blocks[i].Base < f.End() {
				return fmt.Errorf("Blocks[%d] [%#x, +%#x): overlaps Free[%d] [%#x, +%#x)", i, s.Blocks[i].Base, s.Blocks[i].Size, j, f.Base, f.Size)
			}
			pos = f.End()
			j++
		default:
			return fmt.Errorf("Free: the range from %#x is neither a live buffer nor free (buffers and free extents tile [%#x, Next %#x))",
				pos, uint64(HostMemoryBase), s.Next)
		}
	}
	// Only live buffers hold data: freed bytes were zeroed.
	pns := make([]uint64, 0, len(s.Memory.Pages))
	for pn := range s.Memory.Pages {
		pns = append(pns, pn)
	}
	slices.Sort(pns)
	for _, pn := range pns {
		pg := s.Memory.Pages[pn]
		if pg == nil || pn >= AddressLimit/PageSize {
			continue // Memory.Restore refuses these
		}
		if off, ok := hostNonZeroOutside(s.Blocks, pn*PageSize, pg); ok {
			return fmt.Errorf("Memory: page %#x holds a non-zero byte at %#x, outside every live buffer", pn, pn*PageSize+off)
		}
	}
	return nil
}

// hostNonZeroOutside returns the offset of the first non-zero byte of page
// pg (at address addr) that lies in no extent of blocks (ascending,
// disjoint).
func hostNonZeroOutside(blocks []HostExtent, addr uint64, pg *Page) (uint64, bool) {
	end := addr + PageSize
	i, _ := slices.BinarySearchFunc(blocks, addr, func(b HostExtent, a uint64) int {
		if b.End() <= a {
			return -1
		}
		return 1
	})
	pos := addr
	for pos < end {
		gapEnd := end
		if i < len(blocks) && blocks[i].Base < end {
			gapEnd = max(pos, blocks[i].Base)
		}
		for a := pos; a < gapEnd; a++ {
			if pg[a-addr] != 0 {
				return a - addr, true
			}
		}
		if gapEnd == end {
			break
		}
		pos = min(end, blocks[i].End())
		i++
	}
	return 0, false
}
