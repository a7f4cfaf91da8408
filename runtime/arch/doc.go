// Package arch is the runtime's arch dispatch: the three per-generation tables
// the Neuron runtime consults for every geometry, routing and register-offset
// question, selected once from the device's PCI identity.
//
//   - Tdrv is the device-driver geometry of tdrv_arch_ops (seed 003): NeuronCore
//     and SENG counts, per-TPB memory and APB offsets, the H2D DMA engines, the
//     APB SE windows and the engine→coretype bridge.
//   - Soc is the encoder's fabric geometry of soc_struct_t (seed 000): SBUF
//     ports and partitions, the queue-index scan, the inter-RDH DMA map, the p2p
//     port table, and the fabric extent (max devices, mesh folds).
//   - Khal is the KaenaHal offset band of kaena_khal (seed 001 §2–§3): TPB /
//     PSUM / PREPROC bases, HBM, IRAM, sequencer, Q7, DVE table and parameter
//     RAM, feature-gated config offsets, HW-decode and TPB local registers.
//
// The real runtime compiles one copy of every getter per generation. Here each
// concern is one Go type with one value per generation, built from constant
// tables; a property whose behaviour (not just value) differs is a method whose
// result says so: (value, ok) for an absent feature, an error wrapping
// ErrLeafAborts where the runtime's leaf asserts, ErrIndex for an index out of
// range. Every accessor's doc comment names the seed symbol it stands for, and
// Properties lists them all for the CLI and docs/seed-conformance.md.
//
// A Dispatch selects the tables once, as tdrv_arch_ops_init and arch_init do;
// asking before selection is ErrNotSelected, never a silent default.
package arch
