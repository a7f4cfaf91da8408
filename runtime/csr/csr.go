// Package csr is the runtime's register access layer (seed 001 §1): the
// registered-region table, csr_read / csr_write / axi_write, and the
// al_reg_* / al_mem_* wrappers the HAL calls. Addresses here are the
// runtime's virtual addresses of mapped BAR0 windows; a region turns one into
// a BAR0 offset of its ndl.Device. The layer is arch-agnostic: the regions a
// device has come from RegisterDevice, built from the runtime's arch tables.
package csr

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// StatusRegion is the C status csr_* return on every failure (-2).
const StatusRegion = -2

// Sentinel errors, each carrying status -2 (see Error).
var (
	// ErrNoRegions: the region table is unavailable ("Failed to get registered csr regions").
	ErrNoRegions = errors.New("Failed to get registered csr regions")
	// ErrRegionNotFound: no region holds the first address ("Region not found for address %p").
	ErrRegionNotFound = errors.New("Region not found")
	// ErrInvalidAddress: an address of the batch lies outside [start, end-4] ("Invalid address %p %p-%p").
	ErrInvalidAddress = errors.New("Invalid address")
	// ErrTableFull: no free slot to register a region.
	ErrTableFull = errors.New("csr region table full")
	// ErrBadRegion: a region to register is malformed or overlaps another.
	ErrBadRegion = errors.New("bad csr region")
)

// Error is a csr_* failure: the C status, the address involved and, for
// ErrInvalidAddress, the window it was checked against. It unwraps to its
// sentinel and, for a device failure, to the backend's error.
type Error struct {
	Status     int
	Addr       uint64
	Start, End uint64
	Err        error // the sentinel
	Cause      error // a backend error, if any
}

// Error renders the runtime's log line for the failure.
func (e *Error) Error() string {
	switch {
	case errors.Is(e.Err, ErrInvalidAddress):
		return fmt.Sprintf("Invalid address %#x %#x-%#x (status %d)", e.Addr, e.Start, e.End, e.Status)
	case errors.Is(e.Err, ErrRegionNotFound):
		return fmt.Sprintf("Region not found for address %#x (status %d)", e.Addr, e.Status)
	case e.Cause != nil:
		return fmt.Sprintf("%v at address %#x: %v (status %d)", e.Err, e.Addr, e.Cause, e.Status)
	}
	return fmt.Sprintf("%v (status %d)", e.Err, e.Status)
}

// Unwrap returns the sentinel and the backend cause.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

// ErrDevice marks a failure of the ndl.Device beneath a resolved region.
var ErrDevice = errors.New("device access failed")

// Region is one registered MMIO window: csr_region_t (48 bytes in the
// runtime: used +0, start_addr +8, end_addr +16, device_addr +24,
// device_id +32, ndl_device +40). BAR0Offset is where Start sits in the
// device's APB BAR (the C struct reaches it through the mapping itself).
type Region struct {
	Used       bool
	Name       string
	Start      uint64 // first virtual address of the window
	End        uint64 // one past the last byte; the last word starts at End-4
	DeviceAddr uint64 // device physical address of Start
	DeviceID   uint32
	Device     ndl.Device
	BAR        int    // PCI BAR of the window (the APB BAR)
	BAR0Offset uint64 // offset of Start in that BAR
}

// Contains reports whether addr lies in [Start, End) — the test
// find_region_for applies to ptrs[0].
func (r *Region) Contains(addr uint64) bool { return r.Used && addr >= r.Start && addr < r.End }

// inBounds is the per-pointer check of csr_read_array: [Start, End-4].
func (r *Region) inBounds(addr uint64) bool {
	return r.End-r.Start >= 4 && addr >= r.Start && addr <= r.End-4
}

// Table is the per-process registered-region array (csr_regions_v4 holds
// 672 entries of 48 bytes). It is safe for concurrent use.
type Table struct {
	mu      sync.RWMutex
	regions []Region
	cap     int
}

// DefaultTableSize is the region capacity of csr_regions_v4.
const DefaultTableSize = 672

// NewTable returns an empty table with room for n regions (DefaultTableSize if n ≤ 0).
func NewTable(n int) *Table {
	if n <= 0 {
		n = DefaultTableSize
	}
	return &Table{cap: n}
}

// Register adds a region. An empty or overflowing window, a misaligned start,
// a nil device or an overlap with a registered window is ErrBadRegion; a full
// table is ErrTableFull. Nothing is added on error.
func (t *Table) Register(r Region) error {
	if r.End <= r.Start || r.End-r.Start < 4 || r.Start%4 != 0 || r.End%4 != 0 || r.Device == nil {
		return fmt.Errorf("%w %q [%#x, %#x)", ErrBadRegion, r.Name, r.Start, r.End)
	}
	r.Used = true
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.regions {
		o := &t.regions[i]
		if r.Start < o.End && o.Start < r.End {
			return fmt.Errorf("%w %q [%#x, %#x) overlaps %q [%#x, %#x)", ErrBadRegion, r.Name, r.Start, r.End, o.Name, o.Start, o.End)
		}
	}
	if len(t.regions) >= t.cap {
		return fmt.Errorf("%w (%d regions)", ErrTableFull, t.cap)
	}
	i := sort.Search(len(t.regions), func(i int) bool { return t.regions[i].Start > r.Start })
	t.regions = slices.Insert(t.regions, i, r)
	return nil
}

// Deregister removes every region of a device (csr_deregister_device) and
// returns how many it removed.
func (t *Table) Deregister(deviceID uint32) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.regions[:0]
	for _, r := range t.regions {
		if r.DeviceID != deviceID {
			kept = append(kept, r)
		}
	}
	n := len(t.regions) - len(kept)
	clear(t.regions[len(kept):])
	t.regions = kept
	return n
}

// Regions returns a copy of the registered regions, in address order.
func (t *Table) Regions() []Region {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append([]Region(nil), t.regions...)
}

// find returns the region containing addr (find_region_for). The runtime
// scans its array for the first match; registered regions never overlap, so
// a binary search over the table, kept sorted by start, finds the same one.
func (t *Table) find(addr uint64) (*Region, bool) {
	i := sort.Search(len(t.regions), func(i int) bool { return t.regions[i].Start > addr })
	if i == 0 || !t.regions[i-1].Contains(addr) {
		return nil, false
	}
	return &t.regions[i-1], true
}
