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
//   - [AtRate] (a count of work units — engine cycles, bytes — done at a rate in
//     units per second, rounded up): how long a model's resource stays busy.
//     Rounding up means a resource is never free before its last unit of work
//     is done. The DMA engines, the HBM and host links, the fabric's links and
//     the NeuronCores' engines all time their work with it (dma.TransferTime
//     and tpb.Picoseconds are it under their old names).
//   - [CyclesAt] (a number of clock cycles at a clock, to the nearest
//     picosecond, halves up): when a clock's n-th cycle ends, as someone
//     reading the clock would say it; a clock of 0 Hz never completes a cycle
//     and saturates to MaxTime. No model times its work with it.
//
// The two stay apart on purpose. Rounding the models' work to nearest moves
// the end of most DMA transfers by a picosecond (4 KiB at 33 GB/s after the
// 50 ns fixed cost: 174 122 ps, to nearest 174 121), which changes the
// shipped scenarios' traces and packet captures; rounding CyclesAt up would
// change no output, but its documented, tested contract is the nearest
// instant. They also differ at the edges: AtRate takes no time at a rate of
// 0 (an unmodelled resource) and is not clamped to MaxTime (the engine
// refuses to schedule past it), CyclesAt saturates to MaxTime.
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
