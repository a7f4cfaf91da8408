package tpb

// The synchronisation block every NeuronCore and every TOP_SP has: 256
// semaphores and 256 events, reached through four semaphore banks
// (READ/SET/INCR/DECR) and one event bank (driver-facts §5).

// Layout of a synchronisation block, relative to its base: an NC's base is its
// TPB window + 0x270_0000; a TOP_SP's is the start of its 4 MiB window.
const (
	EventsOffset  = 0x0000 // event i at +4i
	SemReadOffset = 0x1000 // a load returns semaphore i
	SemSetOffset  = 0x1400 // a store sets semaphore i
	SemIncrOffset = 0x1800 // a store of v adds v to semaphore i
	SemDecrOffset = 0x1C00 // a store of v subtracts v from semaphore i
	SyncSize      = 0x2000 // the whole block (the driver's semaphore mmap size)

	// Count is the number of semaphores, and of events, in a block.
	Count = 256
	// bankSize is the bytes of one bank: Count words.
	bankSize = 4 * Count
)

// SyncState is the whole mutable state of one synchronisation block.
// Semaphores are signed 32-bit counters; events are single bits.
type SyncState struct {
	Semaphores [Count]int32
	Events     [Count]uint8
}

// Bank says which part of a synchronisation block an offset falls in.
type Bank uint8

// The banks. BankNone is the unused space between the event bank and the
// semaphore banks (event index 256, which the driver's `>` check lets through,
// lands there).
const (
	BankNone Bank = iota
	BankEvent
	BankSemRead
	BankSemSet
	BankSemIncr
	BankSemDecr
)

// Decode returns the bank and the semaphore or event index of a word offset
// within a block. ok is false for an offset that is not a 4-aligned word of
// a bank.
func Decode(off uint64) (b Bank, index int, ok bool) {
	if off%4 != 0 || off >= SyncSize {
		return BankNone, 0, false
	}
	switch {
	case off < EventsOffset+bankSize:
		return BankEvent, int(off-EventsOffset) / 4, true
	case off < SemReadOffset:
		return BankNone, 0, false
	case off < SemSetOffset:
		return BankSemRead, int(off-SemReadOffset) / 4, true
	case off < SemIncrOffset:
		return BankSemSet, int(off-SemSetOffset) / 4, true
	case off < SemDecrOffset:
		return BankSemIncr, int(off-SemIncrOffset) / 4, true
	default:
		return BankSemDecr, int(off-SemDecrOffset) / 4, true
	}
}

// Read is a 32-bit load from the block. Every semaphore bank returns the
// semaphore's value (a load from SET, INCR or DECR has no side effect); the
// event bank returns 0 or 1. ok is false outside the banks.
func (s *SyncState) Read(off uint64) (v uint32, ok bool) {
	b, i, ok := Decode(off)
	switch {
	case !ok:
		return 0, false
	case b == BankEvent:
		return uint32(s.Events[i]), true
	default:
		return uint32(s.Semaphores[i]), true
	}
}

// Write is a 32-bit store to the block: SET stores v, INCR adds v, DECR
// subtracts v (two's-complement wrap, as a 32-bit adder does), an event store
// keeps bit 0 of v. A store to the READ bank changes nothing and reports
// ok=false, as does a store outside the banks.
func (s *SyncState) Write(off uint64, v uint32) (ok bool) {
	b, i, ok := Decode(off)
	if !ok {
		return false
	}
	switch b {
	case BankEvent:
		s.Events[i] = uint8(v & 1)
	case BankSemSet:
		s.Semaphores[i] = int32(v)
	case BankSemIncr:
		s.Semaphores[i] = int32(uint32(s.Semaphores[i]) + v)
	case BankSemDecr:
		s.Semaphores[i] = int32(uint32(s.Semaphores[i]) - v)
	default: // BankSemRead
		return false
	}
	return true
}

// Reset sets every semaphore and event to 0.
func (s *SyncState) Reset() { *s = SyncState{} }
