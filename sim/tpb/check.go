package tpb

import (
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
)

// The engine's own check of a fetched record, as hardware would make it
// before using the record (docs/isa.md). It is written once here, compactly;
// the runtime's validators are a separate package.

// MaxFreeElements is the most elements per partition a tensor may have: the
// 64 Ki free size of the Vector/Scalar engines (trainium-facts §7). It also
// bounds the work of one record, since stride-0 dimensions could otherwise
// name billions of elements inside one partition.
const MaxFreeElements = isa.MaxFreeElements

// PE and DVE limits (docs/isa.md).
const (
	maxStationary   = 128 // K and M of load_stationary
	maxMoving       = 512 // N of multiply_moving
	maxPETranspose  = 128
	maxDVETranspose = 32
)

// check returns ErrNone when the record may run on engine e of this core,
// ErrInvalid for a malformed record, ErrUnsupported for a well-formed
// record of a validated-only opcode.
func (c *Core) check(e int, raw []byte, r *isa.Record) uint32 {
	info, ok := r.Opcode.Info()
	if !ok || !r.Opcode.AvailableOn(c.gen) || int(r.Engine) != e || !info.Engines.Has(r.Engine) {
		return ErrInvalid
	}
	acc := r.Flags&isa.FlagAccumulate != 0
	if r.Flags&^isa.FlagMask != 0 || (acc && r.Opcode != isa.OpMultiplyMoving && r.Opcode != isa.OpActivation) {
		return ErrInvalid
	}
	if !syncOK(r.Wait, true) || !syncOK(r.Signal, false) || isa.Reserved(raw) != 0 || !opOK(r, info.Operands) {
		return ErrInvalid
	}
	uses := info.Operands
	unused := func(bit uint16, zero bool) bool { return uses&bit == 0 && !zero }
	if unused(isa.UsesDst, r.Dst.Zero()) || unused(isa.UsesSrc0, r.Src0.Zero()) ||
		unused(isa.UsesSrc1, r.Src1 == isa.Src1{}) || unused(isa.UsesImm0, r.Imm0 == 0) ||
		unused(isa.UsesImm1, r.Imm1 == 0) || unused(isa.UsesAux, r.Aux == 0) {
		return ErrInvalid
	}
	if (uses&isa.UsesDst != 0 && !c.tensorOK(r.Dst)) || (uses&isa.UsesSrc0 != 0 && !c.tensorOK(r.Src0)) ||
		(uses&isa.UsesSrc1 != 0 && !c.tensorOK(src1Tensor(r))) || !c.shapeOK(r) {
		return ErrInvalid
	}
	if !info.Executed {
		return ErrUnsupported
	}
	return ErrNone
}

// syncOK checks one slot of the events preamble.
func syncOK(s isa.Sync, wait bool) bool {
	switch {
	case s.Mode == isa.SyncNone:
		return s.Index == 0 && s.Value == 0
	case wait && !s.Mode.IsWait(), !wait && !s.Mode.IsSignal():
		return false
	case s.Mode == isa.WaitEvent || s.Mode == isa.SignalEventSet || s.Mode == isa.SignalEventClr:
		return s.Value == 0
	}
	return true
}

// opOK checks byte 3.
func opOK(r *isa.Record, uses uint16) bool {
	if uses&isa.UsesOp == 0 {
		return r.Op == 0
	}
	switch r.Opcode {
	case isa.OpActivation:
		return r.Op < isa.NumActFuncs
	case isa.OpTensorReduce:
		return r.Op == isa.ALUAdd || r.Op == isa.ALUMax || r.Op == isa.ALUMin || r.Op == isa.ALUMultiply
	}
	return r.Op < isa.NumALUOps
}

// src1Tensor returns the third operand as a tensor: its address and dtype,
// src0's shape and strides.
func src1Tensor(r *isa.Record) isa.Tensor {
	t := r.Src0
	t.Addr, t.Dtype = r.Src1.Addr, r.Src1.Dtype
	return t
}

// partBytes returns the partition size of a tensor's memory.
func (c *Core) partBytes(psum bool) int64 {
	if psum {
		return PSUMPartitionBytes
	}
	return c.sbufPart
}

// tensorOK checks a used tensor descriptor: dtype on this generation,
// partitions, the free-dimension list, alignment, every element inside its
// partition, and the element limit.
func (c *Core) tensorOK(t isa.Tensor) bool {
	if !t.Dtype.AvailableOn(c.gen) {
		return false
	}
	psum, p0, off := isa.Location(t.Addr)
	if t.Partitions < 1 || p0+int(t.Partitions) > 128 {
		return false
	}
	ended := false
	for _, d := range t.Dims {
		if ended && d != (isa.Dim{}) {
			return false
		}
		if d.Size == 0 {
			if d.Stride != 0 {
				return false
			}
			ended = true
		}
	}
	size := int64(t.Dtype.Size())
	lo, hi, n := extent(t, size)
	return n <= MaxFreeElements && int64(off)%size == 0 && int64(off)+lo >= 0 && int64(off)+hi <= c.partBytes(psum)
}

// extent returns the byte span [lo, hi) the free dimensions of t cover
// relative to its start offset, for elements of size bytes, and the elements
// per partition.
func extent(t isa.Tensor, size int64) (lo, hi int64, n int) {
	n = 1
	for _, d := range t.Dims {
		if d.Size == 0 {
			break
		}
		reach := int64(d.Size-1) * int64(d.Stride) * size
		lo, hi = lo+min(reach, 0), hi+max(reach, 0)
		n *= int(d.Size)
	}
	return lo, hi + size, n
}

// shapeOK checks the per-opcode shape and dtype rules.
func (c *Core) shapeOK(r *isa.Record) bool {
	d, s := &r.Dst, &r.Src0
	elementwise := d.Partitions == s.Partitions && d.Elements() == s.Elements()
	plain := !d.Dtype.Packed() && !s.Dtype.Packed()
	switch r.Opcode {
	case isa.OpLoadStationary:
		return s.Rank() == 2 && !s.Dtype.Packed() && s.Elements() <= maxStationary
	case isa.OpMultiplyMoving:
		psum, _, _ := isa.Location(d.Addr)
		return s.Rank() == 2 && !s.Dtype.Packed() && s.Elements() <= maxMoving &&
			psum && d.Dtype == isa.FP32 && d.Rank() == 2 && d.Elements() == s.Elements()
	case isa.OpActivation, isa.OpTensorScalar, isa.OpReciprocal, isa.OpActReciprocal:
		return elementwise && plain
	case isa.OpTensorTensor:
		return elementwise && plain && !r.Src1.Dtype.Packed()
	case isa.OpTensorCopy, isa.OpCopyCast:
		return elementwise && (plain || d.Dtype == s.Dtype)
	case isa.OpMemset, isa.OpIota:
		return !d.Dtype.Packed()
	case isa.OpTranspose:
		limit := maxPETranspose
		if r.Engine == isa.DVE {
			limit = maxDVETranspose
		}
		p, f := int(s.Partitions), s.Elements()
		return plain && s.Rank() == 2 && d.Rank() == 2 && p <= limit && f <= limit &&
			int(d.Partitions) == f && d.Elements() == p
	case isa.OpTensorReduce:
		return plain && d.Partitions == s.Partitions && d.Elements() == 1
	case isa.OpDMATrigger:
		eng := int(r.Aux)
		return (udma.OwnerNC(c.geo, eng) == c.nc || c.geo.IsHostDMAEngine(eng)) && r.Imm0 < uint32(c.geo.DMAQueuesPerEngine)
	}
	return true
}
