// Package sim is the device model's core: virtual time, the discrete-event
// engine, and sparse paged device memory.
//
// Virtual time ([Time]) counts picoseconds in a uint64, so arithmetic is exact
// and a run is reproducible bit for bit. The [Engine] runs events in
// (time, sequence) order: two events at the same time run in the order they
// were scheduled, so the same scenario always produces the same output. The
// [Memory] models a 48-bit device address space (HBM channels, the bit-47
// mesh half, the bit-46 host window) that costs only the pages written.
//
// Mutable state is kept in plain exported structs ([EngineState],
// [MemoryState]) so that snapshots can save and restore it; Restore validates
// what it is given and refuses a bad state with an error, leaving the old
// state in place.
//
// Nothing in this package is safe for concurrent use: the owner (the Device)
// serialises access.
package sim
