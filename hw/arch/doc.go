// Package arch holds the hardware definitions that the simulated device and the
// runtime share: the Neuron silicon generations and their names, the PCI
// identity that selects a generation, the engine and microcode core-type
// enumerations, and the per-generation geometry (NeuronCores, sequencer
// engines, HBM channels, SBUF/PSUM, DMA engines, semaphores, TOP_SPs) and
// BAR maps; the PCI configuration-space layout, the MISC RAM mailbox
// offsets and reset-handshake values, the BAR access sentinels (ErrBadBAR,
// ErrBAROffset, ErrAlignment, ErrDeviceClosed) both sides return, the
// neighbour and fabric windows by which one device reaches another, and the
// driver's routing-id and neighbour tables.
//
// It is pure data: no state, no I/O. Both sim/ and runtime/ import it; it
// imports neither. Values come from the seeds (../shared/seeds) and the
// reference facts (../shared/reference/driver-facts.md); docs/seed-conformance.md
// maps each one to its source and test.
package arch
