// Package simkernel is the simulation kernel every model package builds on:
// virtual time, the discrete-event engine, sparse paged memory with its page
// budget, and the one tracing interface. It knows nothing of Neuron
// devices; the models — the device (package sim), its DMA engines
// (sim/dma), its NeuronCores (sim/tpb) and the fabric between devices
// (sim/fabric) — import it, and it imports none of them.
//
// # Time
//
// Virtual time ([Time]) counts picoseconds in a uint64, so arithmetic is
// exact and a run is reproducible bit for bit. Clocks stop at [MaxTime]
// (2^62 ps, about 53 days). Work is turned into time by two operations, each
// one function with one rounding rule:
//
//   - [CyclesAt] (a number of clock cycles at a clock, nearest picosecond):
//     the span a clock's cycles take, as an observer converts them; a clock
//     of 0 Hz never completes a cycle and saturates to MaxTime.
//   - [AtRate] (a count of work units — engine cycles, bytes — done at a rate
//     in units per second, rounded up): how long a model's resource stays
//     busy. Rounding up means a resource is never free before its last unit
//     of work is done, and that the sum of a transfer's parts is never
//     shorter than the parts' true total. The DMA engines, the fabric's links
//     and the NeuronCores' engines all time their work with it.
//
// The two round differently on purpose: they are different questions (what
// the nearest instant is, versus when a resource is certainly done), and
// unifying them would move every TPB record's and DMA transfer's end by up
// to a picosecond, changing the shipped scenarios' outputs.
//
// # Events
//
// The [Engine] runs events in (time, sequence) order: two events at the same
// time run in the order they were scheduled, so the same scenario always
// produces the same output.
//
// # Memory
//
// [Memory] models a 48-bit device address space (HBM channels, the bit-47
// mesh half, the bit-46 host window) that costs only the pages written; a
// [PageBudget] shared by several memories bounds the pages they may make
// resident together.
//
// # Tracing
//
// A [Tracer] receives one slice per unit of modelled work (a DMA transfer, a
// NeuronCore record); sim/trace.Recorder is one.
//
// # State
//
// Mutable state is kept in plain exported structs ([EngineState],
// [MemoryState]) so that snapshots can save and restore it; Restore validates
// what it is given and refuses a bad state with an error wrapping
// [ErrInvalidState], leaving the old state in place.
//
// Nothing in this package but [PageBudget] is safe for concurrent use: the
// owner (the Device) serialises access.
package simkernel
