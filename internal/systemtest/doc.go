// Package systemtest holds the tests that wire a simulated device (sim/) to
// the runtime (runtime/) through each ndl backend: bring-up of every
// generation and PCI revision, the csr_* layer against the device, semaphore
// semantics, concurrency and the csr benchmarks. Only tests and cmd/ may
// import both sides (DESIGN.md, "the one rule").
package systemtest
