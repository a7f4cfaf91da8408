package vfiouser

import (
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"

	"github.com/neuronsim/neuronsim/sim"
	"golang.org/x/sys/unix"
)

// Mapping is one DMA_MAP region as the server holds it.
type Mapping struct {
	Addr  uint64 // client DMA address (guest physical) of its first byte
	Size  uint64
	Flags uint32 // DMAFlagRead | DMAFlagWrite
	mem   []byte // the mmap of the client's file; nil: reached by DMA_READ/DMA_WRITE
}

// End returns the first address past m.
func (m Mapping) End() uint64 { return m.Addr + m.Size }

// Mapped reports whether the region is mmapped (it came with a file
// descriptor) rather than reached through DMA_READ/DMA_WRITE messages.
func (m Mapping) Mapped() bool { return m.mem != nil }

// remoteDMA moves bytes to or from the client by DMA_READ (write false)
// or DMA_WRITE (write true) messages.
type remoteDMA func(write bool, addr uint64, p []byte) error

// GuestMemory is the client's memory as the device's DMA reaches it: the
// union of the DMA_MAP regions, by guest physical address. Accesses to
// regions that came with a file descriptor go to their mmap; to regions
// without one, through DMA_READ/DMA_WRITE requests to the client. An
// access that is not wholly inside mapped regions fails with an error
// wrapping ErrUnmapped (and sim.ErrHostRange, the host model's error for
// the same fault). Its Read, Write and Check have the shape of
// sim.HostMemory's: it is a sim.HostPort, so a device built with it as its
// host (NewGuestMemory) moves its DMA to and from the client's memory. It
// is safe for concurrent use.
type GuestMemory struct {
	mu       sync.RWMutex
	maps     []Mapping // sorted by Addr, disjoint
	total    uint64
	maxMaps  int
	maxBytes uint64
	remote   remoteDMA
	served   bool // a server has taken it
}

func newGuestMemory(maxMaps int, maxBytes uint64) *GuestMemory {
	return &GuestMemory{maxMaps: maxMaps, maxBytes: maxBytes}
}

// NewGuestMemory returns an empty guest memory bounded by opt's DMA limits
// (MaxDMAMaps, MaxDMABytes; a zero field takes its default), to be the
// host port of the device a server serves: build the device with it as
// sim.Wiring.Host (sim.NewWiredDevice), then the server with New(device, opt) and the
// same opt — the server takes the device's guest memory as its own, so
// that the client's DMA_MAP regions are what the device's DMA reaches.
// One guest memory serves one server.
func NewGuestMemory(opt Options) (*GuestMemory, error) {
	if err := opt.fill(); err != nil {
		return nil, err
	}
	return newGuestMemory(opt.MaxDMAMaps, opt.MaxDMABytes), nil
}

// Mappings returns a copy of the current mappings, by address.
func (g *GuestMemory) Mappings() []Mapping {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return slices.Clone(g.maps)
}

// add inserts m; it refuses an overlap and a mapping past the bounds.
func (g *GuestMemory) add(m Mapping) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.maps) >= g.maxMaps {
		return fmt.Errorf("DMA map [%#x, +%#x): %d mappings already (the limit): %w", m.Addr, m.Size, len(g.maps), ErrLimit)
	}
	if m.Size > g.maxBytes-g.total {
		return fmt.Errorf("DMA map [%#x, +%#x): %#x bytes mapped already, limit %#x: %w", m.Addr, m.Size, g.total, g.maxBytes, ErrLimit)
	}
	i, _ := slices.BinarySearchFunc(g.maps, m.Addr, func(e Mapping, a uint64) int { return cmpU64(e.Addr, a) })
	if i > 0 && g.maps[i-1].End() > m.Addr || i < len(g.maps) && g.maps[i].Addr < m.End() {
		return &cmdError{syscall.EEXIST, fmt.Errorf("DMA map [%#x, +%#x) overlaps a mapping: %w", m.Addr, m.Size, ErrMessage)}
	}
	g.maps = slices.Insert(g.maps, i, m)
	g.total += m.Size
	return nil
}

// remove unmaps the mapping that is exactly [addr, addr+size) (the
// specification: "must match exactly a previous mapping").
func (g *GuestMemory) remove(addr, size uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	i, found := slices.BinarySearchFunc(g.maps, addr, func(e Mapping, a uint64) int { return cmpU64(e.Addr, a) })
	if !found || g.maps[i].Size != size {
		return fmt.Errorf("DMA unmap [%#x, +%#x): no mapping is exactly that range: %w", addr, size, ErrMessage)
	}
	if m := g.maps[i]; m.mem != nil {
		_ = unix.Munmap(m.mem) // a mapping this package made; the only failure is a bad argument
	}
	g.total -= g.maps[i].Size
	g.maps = slices.Delete(g.maps, i, i+1)
	return nil
}

// removeAll unmaps everything (the client went away, or UNMAP_ALL) and
// returns how many mappings it removed.
func (g *GuestMemory) removeAll() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range g.maps {
		if m.mem != nil {
			_ = unix.Munmap(m.mem) // a mapping this package made; the only failure is a bad argument
		}
	}
	n := len(g.maps)
	g.maps, g.total = nil, 0
	return n
}

// Read copies guest memory at pa into p.
func (g *GuestMemory) Read(pa uint64, p []byte) error { return g.access(false, pa, p) }

// Write copies p into guest memory at pa.
func (g *GuestMemory) Write(pa uint64, p []byte) error { return g.access(true, pa, p) }

// Check reports whether n bytes at pa lie inside mapped regions.
func (g *GuestMemory) Check(pa uint64, n int) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, err := g.walk("check", pa, uint64(n), 0, nil)
	return err
}

func (g *GuestMemory) access(write bool, pa uint64, p []byte) error {
	op, need := "read", uint32(DMAFlagRead)
	if write {
		op, need = "write", DMAFlagWrite
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, err := g.walk(op, pa, uint64(len(p)), need, func(m *Mapping, off uint64, q []byte, at uint64) error {
		if m.mem != nil {
			return copyMapped(write, m.mem[off:], q, at)
		}
		if g.remote == nil {
			return fmt.Errorf("DMA %s at %#x: mapping [%#x, +%#x) has no file and no client to ask: %w", op, at, m.Addr, m.Size, ErrDisconnected)
		}
		return g.remote(write, at, q)
	}, p)
	return err
}

// walk visits the mappings that cover [pa, pa+n), in order, calling f
// with each piece (when f is not nil); a gap, or a mapping without the
// needed permission, fails before any piece is visited.
func (g *GuestMemory) walk(op string, pa, n uint64, need uint32, f func(m *Mapping, off uint64, q []byte, at uint64) error, p ...[]byte) (int, error) {
	if n == 0 {
		return 0, nil
	}
	if pa+n < pa {
		return 0, fmt.Errorf("DMA %s of %d bytes at %#x wraps the address space: %w: %w", op, n, pa, ErrUnmapped, sim.ErrHostRange)
	}
	i, found := slices.BinarySearchFunc(g.maps, pa, func(e Mapping, a uint64) int { return cmpU64(e.Addr, a) })
	if !found {
		i--
	}
	first := i
	// pass 1: coverage and permission
	for at := pa; at < pa+n; i++ {
		if i < 0 || i >= len(g.maps) || g.maps[i].Addr > at || g.maps[i].End() <= at {
			return 0, fmt.Errorf("DMA %s of %d bytes at %#x: %#x is outside every mapped region: %w: %w", op, n, pa, at, ErrUnmapped, sim.ErrHostRange)
		}
		if g.maps[i].Flags&need != need {
			return 0, fmt.Errorf("DMA %s at %#x: mapping [%#x, +%#x) has flags %#x: %w", op, at, g.maps[i].Addr, g.maps[i].Size, g.maps[i].Flags, ErrProtection)
		}
		at = g.maps[i].End()
	}
	if f == nil {
		return i - first, nil
	}
	buf := p[0]
	done := uint64(0)
	for i = first; done < n; i++ {
		m := &g.maps[i]
		at := pa + done
		k := min(m.End()-at, n-done)
		if err := f(m, at-m.Addr, buf[done:done+k], at); err != nil {
			return 0, err
		}
		done += k
	}
	return i - first, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// copyMapped copies between a client's mmapped file and q. The client may
// shrink its file under the mapping; the fault that an access past the
// file's end raises is turned into an error instead of ending the process.
func copyMapped(write bool, mem, q []byte, at uint64) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("DMA at %#x: the client's memory faulted (its file shrank?): %v: %w: %w", at, r, ErrUnmapped, sim.ErrHostRange)
		}
	}()
	if write {
		copy(mem, q)
	} else {
		copy(q, mem)
	}
	return nil
}

var _ sim.HostPort = (*GuestMemory)(nil)
