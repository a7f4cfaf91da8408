package sim

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// Host memory model: the host's physical memory as DMA engines reach it
// through the host window, and as the runtime allocates DMA buffers from it
// (the driver's dma_alloc_coherent). One HostMemory may back several devices
// of a system. It is sparse like Memory.
const (
	HostMemoryBase  = 0x1_0000_0000   // first host physical address handed out
	HostMemoryLimit = 0x100_0000_0000 // first address past the model (1 TiB)
	hostAlign       = 64
)

// Errors of the host memory model.
var (
	ErrHostNoMemory = errors.New("host memory exhausted")
	ErrHostBadFree  = errors.New("not an allocated host buffer")
	ErrHostRange    = errors.New("host address not in an allocated buffer")
)

// HostState is the whole mutable state of a HostMemory.
type HostState struct {
	Memory MemoryState
	Blocks map[uint64]uint64 // live allocations: base → size
	Next   uint64            // bump pointer for fresh space
	Free   [][2]uint64       // freed ranges [base, size], sorted by base
}

// HostMemory is the host-memory model. It is safe for concurrent use.
type HostMemory struct {
	mu     sync.Mutex
	mem    Memory
	blocks map[uint64]uint64
	order  []uint64 // live bases, ascending
	sizes  []uint64 // their sizes, by the same index
	hint   uint64   // base of the buffer last checked (0: none)
	hintSz uint64   // its size
	next   uint64
	free   [][2]uint64
}

// NewHostMemory returns an empty host memory.
func NewHostMemory() *HostMemory {
	return &HostMemory{blocks: map[uint64]uint64{}, next: HostMemoryBase}
}

// Alloc returns a zeroed buffer of size bytes aligned to align (a power of
// two; at least 64). Freed space is reused first-fit.
func (h *HostMemory) Alloc(size, align uint64) (uint64, error) {
	if align < hostAlign {
		align = hostAlign
	}
	if size == 0 || align&(align-1) != 0 || size > HostMemoryLimit {
		return 0, fmt.Errorf("sim host memory: alloc %d bytes aligned %d: bad request", size, align)
	}
	size = (size + hostAlign - 1) &^ (hostAlign - 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, f := range h.free {
		base := (f[0] + align - 1) &^ (align - 1)
		if base+size <= f[0]+f[1] {
			h.carve(i, base, size)
			h.blocks[base] = size
			h.track(base)
			return base, nil
		}
	}
	base := (h.next + align - 1) &^ (align - 1)
	if base+size > HostMemoryLimit || base+size < base {
		return 0, fmt.Errorf("sim host memory: alloc %d bytes: %w", size, ErrHostNoMemory)
	}
	if base > h.next {
		h.insertFree(h.next, base-h.next)
	}
	h.next = base + size
	h.blocks[base] = size
	h.track(base)
	return base, nil
}

// carve takes [base, base+size) out of free range i.
func (h *HostMemory) carve(i int, base, size uint64) {
	f := h.free[i]
	h.free = append(h.free[:i], h.free[i+1:]...)
	if base > f[0] {
		h.insertFree(f[0], base-f[0])
	}
	if end := f[0] + f[1]; base+size < end {
		h.insertFree(base+size, end-base-size)
	}
}

func (h *HostMemory) insertFree(base, size uint64) {
	i := sort.Search(len(h.free), func(i int) bool { return h.free[i][0] > base })
	h.free = append(h.free, [2]uint64{})
	copy(h.free[i+1:], h.free[i:])
	h.free[i] = [2]uint64{base, size}
	// Merge with the neighbours.
	if i+1 < len(h.free) && h.free[i][0]+h.free[i][1] == h.free[i+1][0] {
		h.free[i][1] += h.free[i+1][1]
		h.free = append(h.free[:i+1], h.free[i+2:]...)
	}
	if i > 0 && h.free[i-1][0]+h.free[i-1][1] == h.free[i][0] {
		h.free[i-1][1] += h.free[i][1]
		h.free = append(h.free[:i], h.free[i+1:]...)
	}
}

// Free releases a buffer Alloc returned; its bytes read as zeros again.
func (h *HostMemory) Free(base uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	size, ok := h.blocks[base]
	if !ok {
		return fmt.Errorf("sim host memory: free %#x: %w", base, ErrHostBadFree)
	}
	delete(h.blocks, base)
	h.untrack(base)
	_ = h.mem.Fill(base, size, 0)
	h.insertFree(base, size)
	return nil
}

// check requires [pa, pa+n) to lie inside one live buffer.
func (h *HostMemory) check(pa uint64, n int) error {
	if h.hint != 0 && pa >= h.hint && pa-h.hint <= h.hintSz && uint64(n) <= h.hintSz-(pa-h.hint) {
		return nil
	}
	i := sort.Search(len(h.order), func(i int) bool { return h.order[i] > pa }) - 1
	if i >= 0 {
		base, size := h.order[i], h.sizes[i]
		if pa-base <= size && uint64(n) <= size-(pa-base) {
			h.hint, h.hintSz = base, size
			return nil
		}
	}
	return fmt.Errorf("sim host memory: [%#x, +%d): %w", pa, n, ErrHostRange)
}

// track and untrack keep order, the live bases in ascending order, and
// sizes beside it.
func (h *HostMemory) track(base uint64) {
	i := sort.Search(len(h.order), func(i int) bool { return h.order[i] > base })
	h.order = slices.Insert(h.order, i, base)
	h.sizes = slices.Insert(h.sizes, i, h.blocks[base])
}

func (h *HostMemory) untrack(base uint64) {
	i := sort.Search(len(h.order), func(i int) bool { return h.order[i] >= base })
	if i < len(h.order) && h.order[i] == base {
		h.order = slices.Delete(h.order, i, i+1)
		h.sizes = slices.Delete(h.sizes, i, i+1)
	}
	if h.hint == base {
		h.hint, h.hintSz = 0, 0
	}
}

// Read copies host memory at pa into p. The range must lie in a live buffer.
func (h *HostMemory) Read(pa uint64, p []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check(pa, len(p)); err != nil {
		return err
	}
	return h.mem.Read(pa, p)
}

// Write copies p into host memory at pa. The range must lie in a live buffer.
func (h *HostMemory) Write(pa uint64, p []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check(pa, len(p)); err != nil {
		return err
	}
	return h.mem.Write(pa, p)
}

// Check reports whether [pa, pa+n) lies in a live buffer.
func (h *HostMemory) Check(pa uint64, n int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.check(pa, n)
}

// Live returns the number of live buffers.
func (h *HostMemory) Live() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.blocks)
}

// State returns a deep copy of the host memory.
func (h *HostMemory) State() HostState {
	h.mu.Lock()
	defer h.mu.Unlock()
	blocks := make(map[uint64]uint64, len(h.blocks))
	for k, v := range h.blocks {
		blocks[k] = v
	}
	return HostState{Memory: h.mem.State(), Blocks: blocks, Next: h.next, Free: append([][2]uint64(nil), h.free...)}
}

// Restore replaces the host memory with a deep copy of s.
func (h *HostMemory) Restore(s HostState) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for base, size := range s.Blocks {
		if base < HostMemoryBase || base+size > HostMemoryLimit || base+size < base {
			return fmt.Errorf("sim host memory: restore: block [%#x, +%#x) outside the model: %w", base, size, ErrInvalidState)
		}
	}
	if err := h.mem.Restore(s.Memory); err != nil {
		return err
	}
	h.blocks = make(map[uint64]uint64, len(s.Blocks))
	h.order, h.sizes, h.hint, h.hintSz = nil, nil, 0, 0
	for k, v := range s.Blocks {
		h.blocks[k] = v
		h.track(k)
	}
	h.next, h.free = s.Next, append([][2]uint64(nil), s.Free...)
	return nil
}
