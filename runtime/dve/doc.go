// Package dve is the runtime's DVE (Data Vector Engine) dynamic-config
// loader, dve_dynamic_config_init_{sunda,cayman,mariana} of seed 001 §4
// (tdrv/<arch>/dve_dynamic_config_<arch>.c, reached through the
// tdrv_arch_ops.dve_dynamic_config_init slot +168 at NEFF load).
//
// The package has two halves. The table half:
//
//   - Tables holds the DVE micro-tables in dve_config_dma_state_t order
//     (opcode, control-fast, control-slow, datapath) plus the 0x400-byte
//     parameter RAM, and checks them against a generation's sizes. Sunda has
//     no control-slow table: it stages 4 buffers where cayman and mariana
//     stage 5.
//   - DefaultBins stands for get_dve_default_bins: the real default tables are
//     not public, so the defaults here are deterministic synthetic bytes from
//     a documented generator (docs/dve.md). LoadBins and WriteBins move table
//     sets to and from a directory of .bin files.
//   - ParamRAM is the 256-entry float32 reciprocal table 1/(i+1).
//   - Fingerprint is the dve_tbl_hash: SHA-256 over the staged tables, with
//     sunda's control-slow arch gate.
//   - Destinations places the tables inside a NeuronCore's TPB window
//     (aws_hal_stpb_get_axi_offset + get_dve_table_offsets /
//     get_dve_parameter_ram_params), and Transfers pairs each destination
//     with the bytes to copy there.
//   - Cache remembers, per NeuronCore and keyed by the fingerprint, the
//     dve_config_dma_state_t (State) of table sets already staged there.
//   - FNV64a is fnv_64a_buf, the FNV-1a hash that backs the kbin hashtable
//     beside the loader.
//
// The DMA half, Loader (load.go), builds the one-shot "qDveTbl" vring from
// Transfers and runs it on a device through runtime/dma and runtime/dmem: it
// computes the Fingerprint, asks the Cache, and on a miss stages every
// Transfer, fills a State through State.Slot, and stores it.
package dve
