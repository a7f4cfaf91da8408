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
package tpb
