// Package tpb models a NeuronCore (TPB) of a simulated device: its five
// engines (PE, ACT, POOL, DVE, SP), each a sequencer that fetches 64-byte
// instruction records (hw/isa, docs/isa.md) from device memory and runs them
// in order, functionally and in virtual time (docs/timing-model.md
// §NeuronCore); the engine control registers the runtime starts them
// through (regs.go); and the synchronisation block every NeuronCore and
// TOP_SP has, 256 semaphores and 256 events behind four semaphore banks and
// one event bank (sync.go; docs/device-model.md §Semaphores and events).
//
// A Core knows nothing of the device around it: time, instruction fetch and
// DMA doorbells go through an Env, the on-chip memories (SBUF, PSUM)
// through Mem. The device (package sim) builds one Core per NeuronCore and
// decodes the BAR accesses that reach it. CoreState and SyncState hold the
// whole mutable state, for snapshots.
//
// Instruction fetch: an engine reads one record from device memory (through
// Env.Fetch) when it reaches it — at its start, or when the record before it
// completes — and keeps it, decoded and checked once, until it completes. A
// write into a running program is therefore seen for every record the
// engine has not yet reached, and not for the record it holds (one waiting
// on its semaphore, say). Nothing is fetched ahead of the PC: the core does
// not know where a program ends (only a LAST record says so), and device
// memory may be written at any time by DMA, by a fabric write from another
// device or by the host through BAR4, none of which tells the core; a
// record read ahead could be served stale, or a read past the program's
// end could reach memory that is not the program's.
package tpb
