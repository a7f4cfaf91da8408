package isa

import (
	"fmt"
	"sort"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Opcode is byte 0 of a record.
type Opcode uint8

// The opcodes. Values the seed gives are kept (jpeg_decode 0x81,
// dma_indirect 0xBB, dma_transpose 0xBD); the rest are the model's.
const (
	OpNop             Opcode = 0x00 // no operation; with its preamble, a barrier point
	OpBarrier         Opcode = 0x01 // waits until every earlier record of the engine has completed
	OpSem             Opcode = 0x02 // a semaphore/event operation only (the preamble does the work)
	OpLoadStationary  Opcode = 0x10 // PE: load the stationary (weights) tile into the array
	OpMultiplyMoving  Opcode = 0x11 // PE: stream the moving tile through, results to PSUM in fp32
	OpActivation      Opcode = 0x20 // ACT: dst = f(src·scale + bias) (+ dst with accumulate)
	OpTensorTensor    Opcode = 0x30 // dst = src0 op src1
	OpTensorScalar    Opcode = 0x31 // dst = src0 op imm0
	OpTensorCopy      Opcode = 0x32 // dst = src0 (converting dtype)
	OpMemset          Opcode = 0x33 // dst = imm0
	OpIota            Opcode = 0x34 // dst[p, i] = imm0 + i + p·imm1 (integers)
	OpTranspose       Opcode = 0x35 // dst[f, p] = src0[p, f]
	OpReciprocal      Opcode = 0x36 // dst = 1 / src0
	OpTensorReduce    Opcode = 0x37 // dst[p] = reduce(op) over src0[p, …]
	OpDMATrigger      Opcode = 0x40 // doorbell: aux = DMA engine, imm0 = queue, imm1 = descriptors
	OpCopyCast        Opcode = 0x46 // cayman+: copy with cast on the 0x46-band engines
	OpActReciprocal   Opcode = 0x47 // cayman+: reciprocal on ACT
	OpSort            Opcode = 0x48 // cayman+
	OpConvLUT         Opcode = 0x49 // cayman+
	OpModifyPoolCfg   Opcode = 0x50 // mariana
	OpCtrlES          Opcode = 0x51 // mariana
	OpCtrlPollSem     Opcode = 0x52 // mariana: poll a semaphore (the wait slot) without other work
	OpBN              Opcode = 0x53 // mariana: s3s3d1_bn
	OpBN2             Opcode = 0x54 // mariana: s3s3d1_bn2
	OpQuantizeFP4     Opcode = 0x55 // mariana: the FP4 quantize path
	OpJPEGDecode      Opcode = 0x81 // cayman+
	OpDMAGatherTransp Opcode = 0xBA // mariana
	OpDMAIndirect     Opcode = 0xBB // mariana
	OpDMATranspose    Opcode = 0xBD // cayman+
)

// Operand bits say which fields of a record an opcode uses; the validators
// require every other field to be zero.
const (
	UsesDst  uint16 = 1 << iota // the Dst tensor
	UsesSrc0                    // the Src0 tensor
	UsesSrc1                    // the Src1 operand
	UsesImm0
	UsesImm1
	UsesAux
	UsesOp // byte 3
)

// EngineMask holds one bit per Engine.
type EngineMask uint8

// Bit returns the mask bit of an engine.
func (e Engine) Bit() EngineMask { return 1 << e }

// Has reports whether the mask holds engine e.
func (m EngineMask) Has(e Engine) bool { return e < NumEngines && m&e.Bit() != 0 }

const allEngines = EngineMask(1<<PE | 1<<ACT | 1<<POOL | 1<<DVE | 1<<SP)

// OpInfo describes one opcode.
type OpInfo struct {
	Opcode   Opcode
	Name     string            // the text syntax's mnemonic
	Since    hwarch.Generation // first generation with the opcode
	Engines  EngineMask        // engines that may issue it
	Operands uint16            // Uses* bits
	Executed bool              // false: validated only; an engine that meets it stops with an error
}

var opTable = []OpInfo{
	{OpNop, "nop", hwarch.Sunda, allEngines, 0, true},
	{OpBarrier, "barrier", hwarch.Sunda, allEngines, 0, true},
	{OpSem, "sem", hwarch.Sunda, allEngines, 0, true},
	{OpLoadStationary, "load_stationary", hwarch.Sunda, PE.Bit(), UsesSrc0, true},
	{OpMultiplyMoving, "multiply_moving", hwarch.Sunda, PE.Bit(), UsesDst | UsesSrc0, true},
	{OpActivation, "activation", hwarch.Sunda, ACT.Bit(), UsesDst | UsesSrc0 | UsesImm0 | UsesImm1 | UsesOp, true},
	{OpTensorTensor, "tensor_tensor", hwarch.Sunda, DVE.Bit() | POOL.Bit(), UsesDst | UsesSrc0 | UsesSrc1 | UsesOp, true},
	{OpTensorScalar, "tensor_scalar", hwarch.Sunda, DVE.Bit() | ACT.Bit() | POOL.Bit(), UsesDst | UsesSrc0 | UsesImm0 | UsesOp, true},
	{OpTensorCopy, "tensor_copy", hwarch.Sunda, DVE.Bit() | ACT.Bit() | POOL.Bit(), UsesDst | UsesSrc0, true},
	{OpMemset, "memset", hwarch.Sunda, DVE.Bit() | POOL.Bit(), UsesDst | UsesImm0, true},
	{OpIota, "iota", hwarch.Sunda, POOL.Bit(), UsesDst | UsesImm0 | UsesImm1, true},
	{OpTranspose, "transpose", hwarch.Sunda, PE.Bit() | DVE.Bit(), UsesDst | UsesSrc0, true},
	{OpReciprocal, "reciprocal", hwarch.Sunda, DVE.Bit(), UsesDst | UsesSrc0, true},
	{OpTensorReduce, "tensor_reduce", hwarch.Sunda, DVE.Bit() | POOL.Bit(), UsesDst | UsesSrc0 | UsesOp, true},
	{OpDMATrigger, "dma_trigger", hwarch.Sunda, SP.Bit() | ACT.Bit() | POOL.Bit(), UsesImm0 | UsesImm1 | UsesAux, true},
	{OpCopyCast, "copy_cast", hwarch.Cayman, DVE.Bit() | ACT.Bit() | POOL.Bit(), UsesDst | UsesSrc0, true},
	{OpActReciprocal, "act_reciprocal", hwarch.Cayman, ACT.Bit(), UsesDst | UsesSrc0, true},
	{OpSort, "sort", hwarch.Cayman, POOL.Bit(), UsesDst | UsesSrc0 | UsesImm0, false},
	{OpConvLUT, "conv_lut", hwarch.Cayman, POOL.Bit() | DVE.Bit(), UsesDst | UsesSrc0 | UsesSrc1, false},
	{OpJPEGDecode, "jpeg_decode", hwarch.Cayman, POOL.Bit(), UsesDst | UsesSrc0, false},
	{OpDMATranspose, "dma_transpose", hwarch.Cayman, SP.Bit() | ACT.Bit() | POOL.Bit(), UsesDst | UsesSrc0 | UsesAux, false},
	{OpModifyPoolCfg, "modify_pool_config", hwarch.Mariana, POOL.Bit(), UsesImm0 | UsesImm1, false},
	{OpCtrlES, "ctrl_es", hwarch.Mariana, SP.Bit(), UsesImm0, false},
	{OpCtrlPollSem, "ctrl_poll_sem", hwarch.Mariana, allEngines, 0, true},
	{OpBN, "s3s3d1_bn", hwarch.Mariana, DVE.Bit(), UsesDst | UsesSrc0, false},
	{OpBN2, "s3s3d1_bn2", hwarch.Mariana, DVE.Bit(), UsesDst | UsesSrc0, false},
	{OpQuantizeFP4, "quantize_fp4", hwarch.Mariana, DVE.Bit(), UsesDst | UsesSrc0 | UsesImm0, false},
	{OpDMAGatherTransp, "dma_gather_transpose", hwarch.Mariana, SP.Bit() | POOL.Bit(), UsesDst | UsesSrc0 | UsesSrc1 | UsesAux, false},
	{OpDMAIndirect, "dma_indirect", hwarch.Mariana, SP.Bit() | ACT.Bit() | POOL.Bit(), UsesDst | UsesSrc0 | UsesSrc1 | UsesAux, false},
}

var opIndex = func() (idx [256]int16) {
	for i := range idx {
		idx[i] = -1
	}
	for i, o := range opTable {
		idx[o.Opcode] = int16(i)
	}
	return idx
}()

// Info returns the description of an opcode, and false for an unknown one.
func (o Opcode) Info() (OpInfo, bool) {
	if i := opIndex[o]; i >= 0 {
		return opTable[i], true
	}
	return OpInfo{}, false
}

// String returns the mnemonic, or the number for an unknown opcode.
func (o Opcode) String() string {
	if info, ok := o.Info(); ok {
		return info.Name
	}
	return fmt.Sprintf("opcode(%#02x)", uint8(o))
}

// AvailableOn reports whether generation g has the opcode.
func (o Opcode) AvailableOn(g hwarch.Generation) bool {
	info, ok := o.Info()
	return ok && g.Valid() && g >= info.Since
}

// Opcodes returns the opcode table, sorted by opcode.
func Opcodes() []OpInfo {
	out := append([]OpInfo(nil), opTable...)
	sort.Slice(out, func(i, j int) bool { return out[i].Opcode < out[j].Opcode })
	return out
}

// ParseOpcode reads a mnemonic.
func ParseOpcode(s string) (Opcode, error) {
	for _, o := range opTable {
		if o.Name == s {
			return o.Opcode, nil
		}
	}
	return 0, fmt.Errorf("isa: unknown opcode %q", s)
}

// ALU operations (byte 3 of tensor_tensor, tensor_scalar and tensor_reduce).
const (
	ALUBypass uint8 = iota // dst = src0 (tensor_scalar) / first operand
	ALUAdd
	ALUSubtract
	ALUMultiply
	ALUMax
	ALUMin
	ALUDivide
	NumALUOps
)

var aluNames = [NumALUOps]string{"bypass", "add", "subtract", "multiply", "max", "min", "divide"}

// Activation functions (byte 3 of activation).
const (
	ActIdentity uint8 = iota
	ActRelu
	ActExp
	ActTanh
	ActSigmoid
	ActSquare
	ActSqrt
	NumActFuncs
)

var actNames = [NumActFuncs]string{"identity", "relu", "exp", "tanh", "sigmoid", "square", "sqrt"}

// ALUName and ActName return the names of byte-3 values; ParseALU and
// ParseAct read them.
func ALUName(op uint8) string { return nameOf(aluNames[:], op, "alu") }

// ActName returns an activation function's name.
func ActName(f uint8) string { return nameOf(actNames[:], f, "act") }

// ParseALU reads an ALU op name.
func ParseALU(s string) (uint8, error) { return parseName(aluNames[:], s, "ALU op") }

// ParseAct reads an activation function name.
func ParseAct(s string) (uint8, error) { return parseName(actNames[:], s, "activation function") }

func nameOf(names []string, v uint8, kind string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, v)
}

func parseName(names []string, s, kind string) (uint8, error) {
	for i, n := range names {
		if n == s {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("isa: unknown %s %q", kind, s)
}
