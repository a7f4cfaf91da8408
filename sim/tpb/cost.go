package tpb

import (
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// The cost of a record in its engine's cycles (trainium-facts §7;
// docs/timing-model.md §NeuronCore). N is the elements per partition of the
// main operand.
const (
	MinII            = 64  // MIN_II: the minimum initiation interval of an engine instruction
	MMInit           = 64  // MM_INIT_LATENCY: the first multiply_moving after a load_stationary
	PoolStart        = 150 // GpSimd start cost of iota
	DMATriggerCycles = 64  // dma_trigger: a doorbell write
	fp32PERate       = 4   // fp32 PE inputs run at 1/4 rate
	peMinCycles      = 64
)

// Cycles returns the cost in engine cycles of record r on the engine the
// record names, with the PE state pe (the stationary tile's M and whether
// MM_INIT is due). It is exported for tools that estimate a program's time.
func Cycles(r *isa.Record, pe *PEState) uint64 {
	n := uint64(r.Dst.Elements())
	switch r.Opcode {
	case isa.OpLoadStationary:
		cyc := max(peMinCycles, uint64(r.Src0.Elements()))
		if r.Src0.Dtype == isa.FP32 {
			cyc *= fp32PERate
		}
		return cyc
	case isa.OpMultiplyMoving:
		cyc := max(min(peMinCycles, uint64(pe.M)), n)
		if r.Src0.Dtype == isa.FP32 {
			cyc *= fp32PERate
		}
		if pe.Fresh {
			cyc += MMInit
		}
		return cyc
	case isa.OpTensorTensor:
		p0, _, _ := isa.Location(r.Src0.Addr)
		p1, _, _ := isa.Location(r.Src1.Addr)
		if p0 || p1 {
			return max(MinII, n)
		}
		return max(MinII, 2*n)
	case isa.OpActivation, isa.OpTensorScalar, isa.OpTensorCopy, isa.OpCopyCast, isa.OpMemset:
		return max(MinII, n)
	case isa.OpIota:
		return PoolStart + n
	case isa.OpTranspose:
		if r.Engine == isa.PE {
			return max(uint64(r.Src0.Partitions), min(64, uint64(r.Src0.Elements())))
		}
		return max(MinII, n)
	case isa.OpReciprocal, isa.OpActReciprocal:
		return max(MinII, 8*n)
	case isa.OpTensorReduce:
		return max(MinII, uint64(r.Src0.Elements())) // the input's N: dst has one element
	case isa.OpDMATrigger:
		return DMATriggerCycles
	}
	return 1 // nop, barrier, sem, ctrl_poll_sem
}

// Picoseconds returns the time of cycles at hz, in ps, rounded up: it is
// [simkernel.AtRate], the one conversion the models time their work with,
// as a plain uint64 (kept for its callers).
func Picoseconds(cycles, hz uint64) uint64 {
	return uint64(simkernel.AtRate(cycles, hz))
}

// duration returns the time record r takes on engine e.
func (c *Core) duration(e int, r *isa.Record) uint64 {
	return uint64(simkernel.AtRate(Cycles(r, &c.st.PE), c.clocks[e]))
}
