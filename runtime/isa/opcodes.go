package isa

import (
	"fmt"
	"strings"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
)

// rule is the generation-independent part of one opcode's validator: the
// byte-3 values it accepts, whether ACCUMULATE means anything to it, and its
// own predicate is_valid_<mnemonic> (pNone: the shared checks are all).
type rule struct {
	opSet      uint8              // bit v: op byte v is valid; 0: the opcode does not use op
	opName     func(uint8) string // names the op values (ALUName or ActName)
	accumulate bool               // FlagAccumulate allowed
	pred       predicate
}

// predicate names an opcode's own predicate, is_valid_<mnemonic>: run
// calls its ordered form, accept's switch holds its combined form.
type predicate uint8

const (
	pNone           predicate = iota // the shared checks are all
	pLoadStationary                  // loadStationary
	pMultiplyMoving                  // multiplyMoving
	pElementwise                     // elementwise
	pCopyLike                        // copyLike
	pComputes                        // computes
	pIotaInts                        // iotaInts
	pTranspose                       // transpose
	pTensorReduce                    // tensorReduce
	pDmaTrigger                      // dmaTrigger
	pQuantizeFP4                     // quantizeFP4
	pDmaData                         // dmaData
)

// run is the opcode's own predicate.
func (p predicate) run(c *checker) bool {
	switch p {
	case pLoadStationary:
		return loadStationary(c)
	case pMultiplyMoving:
		return multiplyMoving(c)
	case pElementwise:
		return elementwise(c)
	case pCopyLike:
		return copyLike(c)
	case pComputes:
		return computes(c)
	case pIotaInts:
		return iotaInts(c)
	case pTranspose:
		return transpose(c)
	case pTensorReduce:
		return tensorReduce(c)
	case pDmaTrigger:
		return dmaTrigger(c)
	case pQuantizeFP4:
		return quantizeFP4(c)
	case pDmaData:
		return dmaData(c)
	}
	return true
}

// Op-byte sets.
const (
	aluOps    = 1<<hwisa.NumALUOps - 1
	actOps    = 1<<hwisa.NumActFuncs - 1
	reduceOps = 1<<hwisa.ALUAdd | 1<<hwisa.ALUMax | 1<<hwisa.ALUMin | 1<<hwisa.ALUMultiply
)

// rules is the per-opcode table, indexed by opcode. An opcode of the ISA
// without an entry (nop, barrier, sem, ctrl_poll_sem, modify_pool_config,
// ctrl_es) has no rule beyond the shared ones. Which generations have an
// opcode is not here: that is Limits.Opcodes.
var rules = [256]rule{
	hwisa.OpLoadStationary:  {pred: pLoadStationary},
	hwisa.OpMultiplyMoving:  {accumulate: true, pred: pMultiplyMoving},
	hwisa.OpActivation:      {opSet: actOps, opName: hwisa.ActName, accumulate: true, pred: pElementwise},
	hwisa.OpTensorTensor:    {opSet: aluOps, opName: hwisa.ALUName, pred: pElementwise},
	hwisa.OpTensorScalar:    {opSet: aluOps, opName: hwisa.ALUName, pred: pElementwise},
	hwisa.OpTensorCopy:      {pred: pCopyLike},
	hwisa.OpMemset:          {pred: pComputes},
	hwisa.OpIota:            {pred: pIotaInts},
	hwisa.OpTranspose:       {pred: pTranspose},
	hwisa.OpReciprocal:      {pred: pElementwise},
	hwisa.OpTensorReduce:    {opSet: reduceOps, opName: hwisa.ALUName, pred: pTensorReduce},
	hwisa.OpDMATrigger:      {pred: pDmaTrigger},
	hwisa.OpCopyCast:        {pred: pCopyLike},
	hwisa.OpActReciprocal:   {pred: pElementwise},
	hwisa.OpSort:            {pred: pComputes},
	hwisa.OpConvLUT:         {pred: pComputes},
	hwisa.OpBN:              {pred: pComputes},
	hwisa.OpBN2:             {pred: pComputes},
	hwisa.OpQuantizeFP4:     {pred: pQuantizeFP4},
	hwisa.OpJPEGDecode:      {pred: pComputes},
	hwisa.OpDMAGatherTransp: {pred: pDmaData},
	hwisa.OpDMAIndirect:     {pred: pDmaData},
	hwisa.OpDMATranspose:    {pred: pDmaData},
}

// opEntry is one opcode of one generation's forest.
type opEntry struct {
	info  hwisa.OpInfo
	known bool  // an opcode of the ISA
	avail bool  // and of this generation
	flags uint8 // the flag bits the opcode accepts
	ops   uint8 // the op-byte values it accepts: opSet, or only 0
	zero  zeroMask
	check string // "is_valid_<mnemonic>"
	rule
}

func (e *opEntry) opList() string {
	var s []string
	for v := uint8(0); v < 8; v++ {
		if e.opSet&(1<<v) != 0 {
			s = append(s, fmt.Sprintf("%d %s", v, e.opName(v)))
		}
	}
	return strings.Join(s, ", ")
}

// forest is one generation's instance of the validator design: its
// constants and its opcode table.
type forest struct {
	lim   Limits
	ops   [256]opEntry
	acc   [256]acceptEntry // the same table, in accept's form
	dsize [256]uint8       // dtype → bytes, 0 for a dtype not in lim.Dtypes
	// partBytes is the partition size an address's PSUM bit selects:
	// [0] SBUF, [1] PSUM.
	partBytes [2]int64
	// bankMask selects the address bits above a bank: [0] SBUF (no banks,
	// 0), [1] PSUM.
	bankMask [2]int64
}

func newForest(l Limits) *forest {
	if b := l.PSUMBankBytes; b == 0 || b&(b-1) != 0 {
		panic(fmt.Sprintf("runtime/isa: the PSUM bank size %d is not a power of two", b))
	}
	f := &forest{lim: l, partBytes: [2]int64{int64(l.SBUFPartitionBytes), int64(l.PSUMPartitionBytes)},
		bankMask: [2]int64{0, ^int64(l.PSUMBankBytes - 1)}}
	for o := range f.ops {
		op := hwisa.Opcode(o)
		info, ok := op.Info()
		if !ok {
			continue
		}
		if info.Operands&hwisa.UsesSrc1 != 0 && info.Operands&hwisa.UsesSrc0 == 0 {
			panic("runtime/isa: " + info.Name + " uses src1 without src0, whose shape src1 takes")
		}
		e := opEntry{info: info, known: true, avail: l.Opcodes.Has(op), flags: hwisa.FlagLast,
			ops: 1, zero: zeroMaskOf(info.Operands), check: CheckOpcodeRule(info.Name), rule: rules[o]}
		if e.accumulate {
			e.flags |= hwisa.FlagAccumulate
		}
		if e.opSet != 0 {
			e.ops = e.opSet
		}
		f.ops[o] = e
		if e.avail {
			f.acc[o] = acceptEntry{zero: e.zero, engines: info.Engines, flags: e.flags, ops: e.ops, pred: e.pred}
			f.acc[o].from, f.acc[o].to = tensorViews(info.Operands)
		}
	}
	for d := range f.dsize {
		if l.Dtypes.Has(hwisa.Dtype(d)) {
			f.dsize[d] = uint8(hwisa.Dtype(d).Size())
		}
	}
	return f
}

// The per-opcode predicates in the checker's ordered form; accept's switch
// is their combined form.

// elementwise: activation, tensor_tensor, tensor_scalar, reciprocal,
// act_reciprocal — no packed operand, dst shaped like src0.
func elementwise(c *checker) bool { return c.noPacked() && c.sameShape() }

// computes: an opcode that computes on its operands, so none may be packed.
func computes(c *checker) bool { return c.noPacked() }

// copyLike: tensor_copy, copy_cast — packed dtypes are copied byte for byte,
// so a packed operand needs equal dtypes; dst shaped like src0.
func copyLike(c *checker) bool {
	d, s := c.r.Dst.Dtype, c.r.Src0.Dtype
	if (d.Packed() || s.Packed()) && d != s {
		return c.fail(c.e.check, dstNames.dtype, func() string {
			return fmt.Sprintf("%s copies packed dtypes byte for byte: dst and src0 dtypes must be equal, got %s and %s", c.e.info.Name, d, s)
		})
	}
	return c.sameShape()
}

func loadStationary(c *checker) bool {
	s, l := &c.r.Src0, &c.f.lim
	if !c.rank2(&src0Names, s) {
		return false
	}
	if m := int(s.Dims[0].Size); m > l.MaxStationary {
		return c.fail(c.e.check, src0Names.size[0], func() string {
			return fmt.Sprintf("load_stationary M = %d elements per partition; the PE array holds at most %d", m, l.MaxStationary)
		})
	}
	if inPSUM(s.Addr) {
		return c.fail(c.e.check, src0Names.addr, func() string { return "load_stationary reads its tile from SBUF; src0 is in PSUM" })
	}
	return c.noPacked()
}

func multiplyMoving(c *checker) bool {
	s, d, l := &c.r.Src0, &c.r.Dst, &c.f.lim
	if inPSUM(s.Addr) {
		return c.fail(c.e.check, src0Names.addr, func() string { return "multiply_moving streams src0 from SBUF; src0 is in PSUM" })
	}
	if !c.rank2(&src0Names, s) {
		return false
	}
	if n := int(s.Dims[0].Size); n > l.MaxMovingN {
		return c.fail(c.e.check, src0Names.size[0], func() string {
			return fmt.Sprintf("multiply_moving N = %d; at most %d", n, l.MaxMovingN)
		})
	}
	if !c.noPacked() {
		return false
	}
	if !inPSUM(d.Addr) {
		return c.fail(c.e.check, dstNames.addr, func() string { return "multiply_moving writes its results to PSUM; dst is in SBUF" })
	}
	if d.Dtype != hwisa.FP32 {
		return c.fail(c.e.check, dstNames.dtype, func() string {
			return fmt.Sprintf("multiply_moving accumulates fp32 in PSUM; dst dtype is %s", d.Dtype)
		})
	}
	if !c.rank2(&dstNames, d) {
		return false
	}
	if d.Dims[0].Size != s.Dims[0].Size {
		return c.fail(c.e.check, dstNames.size[0], func() string {
			return fmt.Sprintf("dst N = %d but src0 N = %d; multiply_moving needs them equal", d.Dims[0].Size, s.Dims[0].Size)
		})
	}
	return true // the dst's PSUM bank: tensor_start_addr_valid
}

func transpose(c *checker) bool {
	s, d, l := &c.r.Src0, &c.r.Dst, &c.f.lim
	if !c.noPacked() || !c.rank2(&src0Names, s) {
		return false
	}
	p, f := int(s.Partitions), int(s.Dims[0].Size)
	most, eng := l.MaxPETranspose, c.r.Engine
	if eng == hwisa.DVE {
		most = l.MaxDVETranspose
	}
	if p > most || f > most {
		field := src0Names.partitions
		if p <= most {
			field = src0Names.size[0]
		}
		return c.fail(c.e.check, field, func() string {
			return fmt.Sprintf("%s transpose of src0 [%d × %d]; at most %d × %d", eng, p, f, most, most)
		})
	}
	if !c.rank2(&dstNames, d) {
		return false
	}
	if int(d.Partitions) != f || int(d.Dims[0].Size) != p {
		field := dstNames.partitions
		if int(d.Partitions) == f {
			field = dstNames.size[0]
		}
		return c.fail(c.e.check, field, func() string {
			return fmt.Sprintf("transpose of src0 [%d × %d] needs dst [%d × %d], got [%d × %d]", p, f, f, p, d.Partitions, d.Dims[0].Size)
		})
	}
	if eng == hwisa.DVE {
		return c.quadrant(&src0Names, s) && c.quadrant(&dstNames, d)
	}
	return true
}

func tensorReduce(c *checker) bool {
	if !c.noPacked() {
		return false
	}
	d, s := &c.r.Dst, &c.r.Src0
	if d.Partitions != s.Partitions {
		return c.fail(c.e.check, dstNames.partitions, func() string {
			return fmt.Sprintf("dst has %d partitions and src0 %d; tensor_reduce keeps the partitions", d.Partitions, s.Partitions)
		})
	}
	if n := elements(d); n != 1 {
		return c.fail(c.e.check, dstNames.dims, func() string {
			return fmt.Sprintf("tensor_reduce writes one element per partition; dst has %d", n)
		})
	}
	return true
}

func iotaInts(c *checker) bool {
	if dt := c.r.Dst.Dtype; !intDtype[dt] {
		return c.fail(c.e.check, dstNames.dtype, func() string {
			return fmt.Sprintf("iota writes integers; dst dtype %s is not an integer type", dt)
		})
	}
	return true
}

func quantizeFP4(c *checker) bool {
	if s := c.r.Src0.Dtype; s.Packed() {
		return c.packed(&src0Names, s)
	}
	return true
}

func dmaTrigger(c *checker) bool {
	r, l := &c.r, &c.f.lim
	if !c.dmaEngine() {
		return false
	}
	if int(r.Imm0) >= l.DMAQueues {
		return c.fail(c.e.check, "imm0", func() string {
			return fmt.Sprintf("queue %d; a DMA engine has queues 0..%d", r.Imm0, l.DMAQueues-1)
		})
	}
	if r.Imm1 == 0 || r.Imm1 > l.MaxDMADescriptors {
		return c.fail(c.e.check, "imm1", func() string {
			return fmt.Sprintf("descriptor count %d; want 1..%d", r.Imm1, l.MaxDMADescriptors)
		})
	}
	return true
}

func dmaData(c *checker) bool { return c.dmaEngine() }

// Shared pieces of the per-opcode predicates.

// dmaEngine: aux names a DMA engine of this generation.
func (c *checker) dmaEngine() bool {
	if a, n := int(c.r.Aux), c.f.lim.DMAEngines; a >= n {
		return c.fail(c.e.check, "aux", func() string {
			return fmt.Sprintf("DMA engine %d; %s has engines 0..%d", a, c.f.lim.Generation, n-1)
		})
	}
	return true
}

// packedDtype is Dtype.Packed as a table.
var packedDtype = func() (p [256]bool) {
	for d := range p {
		p[d] = hwisa.Dtype(d).Packed()
	}
	return p
}()

// noPacked: no operand the opcode uses has a packed (MX) dtype. (An unused
// operand is zero, dtype 0, never packed.)
func (c *checker) noPacked() bool {
	if !(packedDtype[c.r.Dst.Dtype] || packedDtype[c.r.Src0.Dtype] || packedDtype[c.r.Src1.Dtype]) {
		return true
	}
	switch {
	case c.r.Dst.Dtype.Packed():
		return c.packed(&dstNames, c.r.Dst.Dtype)
	case c.r.Src0.Dtype.Packed():
		return c.packed(&src0Names, c.r.Src0.Dtype)
	}
	return c.packed(&src1Names, c.r.Src1.Dtype)
}

func (c *checker) packed(n *tensorNames, d hwisa.Dtype) bool {
	return c.fail(c.e.check, n.dtype, func() string {
		return fmt.Sprintf("%s dtype %s is packed (MX); packed dtypes are only moved (tensor_copy, copy_cast, DMA), never computed on by %s",
			n.name, d, c.e.info.Name)
	})
}

// sameShape: dst has src0's partitions and elements per partition.
func (c *checker) sameShape() bool {
	d, s := &c.r.Dst, &c.r.Src0
	if d.Partitions == s.Partitions && elements(d) == elements(s) {
		return true
	}
	if d.Partitions != s.Partitions {
		return c.fail(c.e.check, dstNames.partitions, func() string {
			return fmt.Sprintf("dst has %d partitions and src0 %d; %s needs them equal", d.Partitions, s.Partitions, c.e.info.Name)
		})
	}
	return c.fail(c.e.check, dstNames.dims, func() string {
		return fmt.Sprintf("dst has %d elements per partition and src0 %d; %s needs them equal", elements(d), elements(s), c.e.info.Name)
	})
}

// rank2: the tensor is [partitions × elements].
func (c *checker) rank2(n *tensorNames, t *hwisa.Tensor) bool {
	rk := rank(t)
	if rk == 2 {
		return true
	}
	field := n.size[0]
	if rk > 2 {
		field = n.size[1]
	}
	return c.fail(c.e.check, field, func() string {
		return fmt.Sprintf("%s %s must be rank 2 [partitions × elements], got rank %d", c.e.info.Name, n.name, rk)
	})
}

// quadrant: the tensor's partitions lie in one DVE quadrant.
func (c *checker) quadrant(n *tensorNames, t *hwisa.Tensor) bool {
	q := c.f.lim.QuadrantPartitions
	first := startPartition(t.Addr)
	last := first + int(t.Partitions) - 1
	if first/q != last/q {
		return c.fail(c.e.check, n.addr, func() string {
			return fmt.Sprintf("DVE transpose stays inside one %d-partition quadrant; %s covers partitions %d..%d (quadrants %d..%d)",
				q, n.name, first, last, first/q, last/q)
		})
	}
	return true
}
