package simkernel

import (
	"math/bits"
	"unsafe"
)

// The estimates below bound what a state copy (a snapshot) will take before
// it is made, so a run can refuse a save over its memory limit instead of
// running out of memory part-way through (sim/fabric's
// System.SnapshotBytes). They are upper bounds of what the Go runtime
// allocates: a small allocation is rounded to its size class (at most a
// quarter more, plus a word), a large one to whole 8 KiB pages.

// AllocBytes bounds the memory the Go runtime takes for one allocation of n
// bytes: n rounded up to its size class (at most n·5/4 + 16 below 32 KiB),
// or to whole 8 KiB pages above.
func AllocBytes(n uint64) uint64 {
	switch {
	case n == 0:
		return 0
	case n <= 32<<10:
		return n + n/4 + 16
	default:
		return (n + 8<<10 - 1) &^ (8<<10 - 1)
	}
}

// SliceBytes bounds the memory of a slice of n elements of elem bytes made
// at its length (make, or a clone).
func SliceBytes(n int, elem uintptr) uint64 { return AllocBytes(uint64(n) * uint64(elem)) }

// MapBytes bounds the memory of a map of n entries whose key and value take
// slot bytes, made with n as its size hint: its header (alone for an
// empty map), and groups of 8
// slots and a control word for n·8/7 slots rounded up to a power of two,
// in tables of at most 1,024 slots each with their header and directory
// entry.
func MapBytes(n int, slot uintptr) uint64 {
	const header = 64
	if n == 0 {
		return header // its groups are made on the first insert
	}
	if n <= 8 {
		return header + AllocBytes(8+8*uint64(slot))
	}
	slots := (uint64(n)*8 + 6) / 7   // n·8/7, rounded up
	slots = 1 << bits.Len64(slots-1) // a power of two
	if slots <= 1024 {
		return header + AllocBytes(slots/8*(8+8*uint64(slot)))
	}
	tables := slots / 1024
	return header + tables*(AllocBytes(128*(8+8*uint64(slot)))+64+8)
}

// StateBytes bounds the memory State takes for its copy: every resident
// page and the map that holds them.
func (m *Memory) StateBytes() uint64 {
	return uint64(m.pages.n)*PageSize + MapBytes(m.pages.n, 16)
}

// StateBytes bounds the memory State takes for its copy of the queue.
func (e *Engine) StateBytes() uint64 {
	return SliceBytes(e.queue.len(), eventSize)
}

// eventSize is the size of an Event.
const eventSize = unsafe.Sizeof(Event{})
