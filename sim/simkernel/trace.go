package simkernel

// Tracer receives one slice per unit of modelled work — a DMA transfer, a
// NeuronCore record, a wait — for a timeline view: it ran on track (an
// engine, a queue) under name from start to end, in picoseconds of virtual
// time, with args as details. sim/trace.Recorder is one. The models call it
// while their owner holds its lock; a Tracer must not call back into them.
type Tracer interface {
	Slice(track, name string, start, end uint64, args map[string]string)
}
