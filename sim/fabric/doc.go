// Package fabric joins simulated devices into a system: the links between
// them, the NeuronSwitches of Trn3, the torus and ring topologies of Trn1,
// Inf2 and Trn2, and the traffic that crosses them (docs/fabric.md).
//
// A System is N sim.Devices sharing one event engine (one virtual clock),
// one lock and one host memory. A DMA write of one device into a neighbour
// window (B0_s on V3/V4) or into the fabric window (hw/arch.FabricAddress)
// leaves it as chunks that cross the links of the path between the two
// devices and lands in the destination's memory later; a write carries its
// reduce, so a reducing write is combined at the destination. Writes on one
// path land in the order they were sent, so data always arrives before the
// completion-semaphore write that follows it (trainium-facts §4).
//
// Two network models are selectable per system and named in every result:
// contention-aware (store-and-forward per chunk; each link a FIFO that
// chunks of every transfer share) and contention-free (cut-through: hops ×
// latency + bytes / the slowest link's bandwidth). docs/fabric.md gives the
// formulas each obeys.
package fabric
