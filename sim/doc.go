// Package sim is the device model: one Neuron device (its PCI functions and
// BARs, register file, firmware lifecycle, host memory, DMA engines and
// NeuronCores) driven through the ndl interfaces a runtime uses.
//
// The simulation kernel it runs on — virtual time, the event engine, sparse
// paged memory and its page budget, the tracing interface — is package
// [github.com/neuronsim/neuronsim/sim/simkernel]; the names this package
// has always exported for them ([Time], [Engine], [Memory], [PageBudget],
// their sentinels and constants) are aliases of the kernel's, so existing
// callers keep working and values cross between the two freely.
//
// Mutable state is kept in plain exported structs so that snapshots can save
// and restore it; Restore validates what it is given and refuses a bad
// state with an error, leaving the old state in place.
package sim
