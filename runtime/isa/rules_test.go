package isa_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/isa"
)

type violation struct {
	name  string
	op    hwisa.Opcode
	gens  []hwarch.Generation // nil: every generation with op
	mut   func(r *hwisa.Record, l isa.Limits)
	raw   func(b []byte) []byte // after encoding
	check string
	field string
}

var (
	onlyMariana   = []hwarch.Generation{hwarch.Mariana}
	sundaCayman   = []hwarch.Generation{hwarch.Sunda, hwarch.Cayman}
	caymanMariana = []hwarch.Generation{hwarch.Cayman, hwarch.Mariana}
)

func rule(mnemonic string) string { return isa.CheckOpcodeRule(mnemonic) }

var violations = []violation{
	// Size.
	{name: "63 bytes", op: hwisa.OpNop, raw: func(b []byte) []byte { return b[:63] }, check: isa.CheckRecordSize, field: "record"},
	{name: "65 bytes", op: hwisa.OpNop, raw: func(b []byte) []byte { return append(b, 0) }, check: isa.CheckRecordSize, field: "record"},
	{name: "nil", op: hwisa.OpNop, raw: func([]byte) []byte { return nil }, check: isa.CheckRecordSize, field: "record"},
	// Opcode.
	{name: "unknown opcode", op: hwisa.OpNop, raw: func(b []byte) []byte { b[0] = 0x77; return b }, check: isa.CheckOpcode, field: "opcode"},
	{name: "copy_cast on sunda", op: hwisa.OpCopyCast, gens: []hwarch.Generation{hwarch.Sunda}, check: isa.CheckOpcode, field: "opcode"},
	{name: "ctrl_es before mariana", op: hwisa.OpCtrlES, gens: sundaCayman, check: isa.CheckOpcode, field: "opcode"},
	// Header.
	{name: "engine top_sp", op: hwisa.OpNop, mut: func(r *hwisa.Record, _ isa.Limits) { r.Engine = hwisa.TopSP }, check: isa.CheckHeader, field: "engine"},
	{name: "engine 9", op: hwisa.OpNop, mut: func(r *hwisa.Record, _ isa.Limits) { r.Engine = 9 }, check: isa.CheckHeader, field: "engine"},
	{name: "activation built for pe", op: hwisa.OpActivation, mut: func(r *hwisa.Record, _ isa.Limits) { r.Engine = hwisa.PE }, check: isa.CheckHeader, field: "engine"},
	{name: "unknown flag", op: hwisa.OpNop, mut: func(r *hwisa.Record, _ isa.Limits) { r.Flags = 0x04 }, check: isa.CheckHeader, field: "flags"},
	{name: "accumulate on tensor_copy", op: hwisa.OpTensorCopy, mut: func(r *hwisa.Record, _ isa.Limits) { r.Flags = hwisa.FlagAccumulate }, check: isa.CheckHeader, field: "flags"},
	{name: "op on tensor_copy", op: hwisa.OpTensorCopy, mut: func(r *hwisa.Record, _ isa.Limits) { r.Op = 1 }, check: isa.CheckHeader, field: "op"},
	{name: "activation function 7", op: hwisa.OpActivation, mut: func(r *hwisa.Record, _ isa.Limits) { r.Op = 7 }, check: isa.CheckEnum, field: "op"},
	{name: "tensor_tensor op 9", op: hwisa.OpTensorTensor, mut: func(r *hwisa.Record, _ isa.Limits) { r.Op = 9 }, check: isa.CheckEnum, field: "op"},
	{name: "tensor_scalar op 7", op: hwisa.OpTensorScalar, mut: func(r *hwisa.Record, _ isa.Limits) { r.Op = 7 }, check: isa.CheckEnum, field: "op"},
	{name: "reduce subtract", op: hwisa.OpTensorReduce, mut: func(r *hwisa.Record, _ isa.Limits) { r.Op = hwisa.ALUSubtract }, check: isa.CheckEnum, field: "op"},
	{name: "reduce bypass", op: hwisa.OpTensorReduce, mut: func(r *hwisa.Record, _ isa.Limits) { r.Op = hwisa.ALUBypass }, check: isa.CheckEnum, field: "op"},
	// Events.
	{name: "wait mode 10", op: hwisa.OpSem, mut: func(r *hwisa.Record, _ isa.Limits) { r.Wait.Mode = 10 }, check: isa.CheckEnum, field: "wait.mode"},
	{name: "signal mode 200", op: hwisa.OpSem, mut: func(r *hwisa.Record, _ isa.Limits) { r.Signal.Mode = 200 }, check: isa.CheckEnum, field: "signal.mode"},
	{name: "signal mode in wait slot", op: hwisa.OpSem, mut: func(r *hwisa.Record, _ isa.Limits) { r.Wait.Mode = hwisa.SignalSemSet }, check: isa.CheckEvents, field: "wait.mode"},
	{name: "wait mode in signal slot", op: hwisa.OpSem, mut: func(r *hwisa.Record, _ isa.Limits) { r.Signal.Mode = hwisa.WaitSemGE }, check: isa.CheckEvents, field: "signal.mode"},
	{name: "empty wait with index", op: hwisa.OpNop, mut: func(r *hwisa.Record, _ isa.Limits) { r.Wait.Index = 3 }, check: isa.CheckEvents, field: "wait.index"},
	{name: "empty wait with value", op: hwisa.OpNop, mut: func(r *hwisa.Record, _ isa.Limits) { r.Wait.Value = 1 }, check: isa.CheckEvents, field: "wait.value"},
	{name: "empty signal with value", op: hwisa.OpNop, mut: func(r *hwisa.Record, _ isa.Limits) { r.Signal.Value = 1 }, check: isa.CheckEvents, field: "signal.value"},
	{name: "wait event with value", op: hwisa.OpLoadStationary, mut: func(r *hwisa.Record, _ isa.Limits) { r.Wait.Value = 2 }, check: isa.CheckEvents, field: "wait.value"},
	{name: "event_clear with value", op: hwisa.OpNop, mut: func(r *hwisa.Record, _ isa.Limits) {
		r.Signal = hwisa.Sync{Mode: hwisa.SignalEventClr, Index: 1, Value: 1}
	}, check: isa.CheckEvents, field: "signal.value"},
	// Unused operands.
	{name: "nop with dst", op: hwisa.OpNop, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Partitions = 1 }, check: rule("nop"), field: "dst"},
	{name: "load_stationary with dst", op: hwisa.OpLoadStationary, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Addr = 4 }, check: rule("load_stationary"), field: "dst"},
	{name: "memset with src0", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dims[2].Stride = -1 }, check: rule("memset"), field: "src0"},
	{name: "tensor_copy with src1", op: hwisa.OpTensorCopy, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src1.Dtype = hwisa.FP32 }, check: rule("tensor_copy"), field: "src1"},
	{name: "tensor_copy with reserved", op: hwisa.OpTensorCopy, raw: func(b []byte) []byte { b[53] = 1; return b }, check: rule("tensor_copy"), field: "src1"},
	{name: "nop with reserved", op: hwisa.OpNop, raw: func(b []byte) []byte { b[53] = 1; return b }, check: rule("nop"), field: "src1"},
	{name: "tensor_copy with imm0", op: hwisa.OpTensorCopy, mut: func(r *hwisa.Record, _ isa.Limits) { r.Imm0 = 1 }, check: rule("tensor_copy"), field: "imm0"},
	{name: "tensor_scalar with imm1", op: hwisa.OpTensorScalar, mut: func(r *hwisa.Record, _ isa.Limits) { r.Imm1 = 1 }, check: rule("tensor_scalar"), field: "imm1"},
	{name: "activation with aux", op: hwisa.OpActivation, mut: func(r *hwisa.Record, _ isa.Limits) { r.Aux = 1 }, check: rule("activation"), field: "aux"},
	{name: "dma_trigger with dst", op: hwisa.OpDMATrigger, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dtype = 1 }, check: rule("dma_trigger"), field: "dst"},
	// The ladder.
	{name: "rank 2 with 0 partitions", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Partitions = 0 }, check: isa.CheckTensor2D, field: "dst.partitions"},
	{name: "rank 1 with 0 partitions", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst = tn(sb(0, 0), hwisa.FP32, 0) }, check: isa.CheckTensor1D, field: "dst.partitions"},
	{name: "rank 4 with 0 partitions", op: hwisa.OpTensorCopy, mut: func(r *hwisa.Record, _ isa.Limits) {
		r.Src0 = tn(sb(0, 0), hwisa.FP32, 0, hwisa.Dim{Size: 2, Stride: 1}, hwisa.Dim{Size: 2, Stride: 2}, hwisa.Dim{Size: 2, Stride: 4})
	}, check: isa.CheckTensor4D, field: "src0.partitions"},
	{name: "past the last partition", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Addr, r.Dst.Partitions = sb(100, 0), 29 }, check: isa.CheckTensor2D, field: "dst.partitions"},
	{name: "255 partitions", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Partitions = 255 }, check: isa.CheckTensor2D, field: "dst.partitions"},
	{name: "size after the end of the list", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) {
		r.Dst.Dims[2] = hwisa.Dim{Size: 5, Stride: 1}
	}, check: isa.CheckTensor2D, field: "dst.dims[2].size"},
	{name: "stride of the terminator", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dims[1].Stride = 4 }, check: isa.CheckTensor2D, field: "dst.dims[1].stride"},
	{name: "gap in the list (rank 1)", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) {
		r.Dst.Dims = [3]hwisa.Dim{{}, {Size: 5, Stride: 1}, {}}
	}, check: isa.CheckTensor1D, field: "dst.dims[1].size"},
	{name: "gap in a rank-3 list", op: hwisa.OpTensorTensor, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dims[2].Stride = 1 }, check: isa.CheckTensor3D, field: "dst.dims[2].stride"},
	// Dtypes.
	{name: "dtype 0", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dtype = 0 }, check: isa.CheckDtype, field: "dst.dtype"},
	{name: "dtype 20", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dtype = 20 }, check: isa.CheckDtype, field: "dst.dtype"},
	{name: "fp4 before mariana", op: hwisa.OpTensorCopy, gens: sundaCayman, mut: func(r *hwisa.Record, _ isa.Limits) {
		r.Dst.Dtype, r.Src0.Dtype = hwisa.FP4E2M1FNx4, hwisa.FP4E2M1FNx4
	}, check: isa.CheckDtype, field: "dst.dtype"},
	{name: "fp8_e4m3fn before mariana", op: hwisa.OpTensorCopy, gens: sundaCayman, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dtype = hwisa.FP8E4M3FN }, check: isa.CheckDtype, field: "src0.dtype"},
	{name: "int64 on sunda", op: hwisa.OpIota, gens: []hwarch.Generation{hwarch.Sunda}, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dtype = hwisa.Int64 }, check: isa.CheckDtype, field: "dst.dtype"},
	// Alignment.
	{name: "fp32 at offset 2", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Addr = sb(0, 2) }, check: isa.CheckAligned, field: "dst.addr"},
	{name: "int64 at offset 4", op: hwisa.OpIota, gens: caymanMariana, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Addr, r.Dst.Dtype = sb(0, 4), hwisa.Int64 }, check: isa.CheckAligned, field: "dst.addr"},
	{name: "bf16 src0 at offset 1", op: hwisa.OpTranspose, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Addr = sb(0, 1) }, check: isa.CheckAligned, field: "src0.addr"},
	// Address range.
	{name: "one byte past the SBUF partition", op: hwisa.OpMemset, mut: func(r *hwisa.Record, l isa.Limits) {
		r.Dst = t2(sb(0, l.SBUFPartitionBytes-252), hwisa.FP32, 1, 64)
	}, check: isa.CheckStartAddr, field: "dst.addr"},
	{name: "offset past the SBUF partition", op: hwisa.OpMemset, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Addr = sb(0, 0xFF_FF00) }, check: isa.CheckStartAddr, field: "dst.addr"},
	{name: "negative stride below offset 0", op: hwisa.OpTensorCopy, mut: func(r *hwisa.Record, _ isa.Limits) {
		r.Src0 = tn(sb(0, 8), hwisa.FP32, 128, hwisa.Dim{Size: 4, Stride: -1}, hwisa.Dim{Size: 16, Stride: 0})
	}, check: isa.CheckStartAddr, field: "src0.addr"},
	{name: "past the PSUM partition", op: hwisa.OpActivation, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Addr = ps(0, 0x3F00) }, check: isa.CheckStartAddr, field: "src0.addr"},
	{name: "across a PSUM bank", op: hwisa.OpActivation, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Addr = ps(0, 0x700) }, check: isa.CheckStartAddr, field: "src0.addr"},
	// src1.
	{name: "src1 reserved byte", op: hwisa.OpTensorTensor, raw: func(b []byte) []byte { b[53] = 9; return b }, check: rule("tensor_tensor"), field: "src1.reserved"},
	{name: "src1 past the last partition", op: hwisa.OpTensorTensor, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src1.Addr = sb(100, 0x400) }, check: isa.CheckTensor3D, field: "src1.addr"},
	{name: "src1 dtype 0", op: hwisa.OpTensorTensor, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src1.Dtype = 0 }, check: isa.CheckDtype, field: "src1.dtype"},
	{name: "src1 misaligned", op: hwisa.OpConvLUT, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src1.Addr = sb(0, 0x802) }, check: isa.CheckAligned, field: "src1.addr"},
	{name: "src1 footprint past the partition", op: hwisa.OpTensorTensor, mut: func(r *hwisa.Record, l isa.Limits) {
		r.Src1.Addr = sb(64, l.SBUFPartitionBytes-4) // src0's 128 elements of fp32 from here
	}, check: isa.CheckStartAddr, field: "src1.addr"},
	{name: "src1 footprint in src1's dtype", op: hwisa.OpTensorTensor, mut: func(r *hwisa.Record, l isa.Limits) {
		r.Src1 = hwisa.Src1{Addr: sb(0, l.SBUFPartitionBytes-256), Dtype: hwisa.FP32} // fits as bf16, not as fp32
	}, check: isa.CheckStartAddr, field: "src1.addr"},
	// load_stationary.
	{name: "stationary rank 1", op: hwisa.OpLoadStationary, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dims[0] = hwisa.Dim{} }, check: rule("load_stationary"), field: "src0.dims[0].size"},
	{name: "stationary rank 3", op: hwisa.OpLoadStationary, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dims[1] = hwisa.Dim{Size: 1, Stride: 1} }, check: rule("load_stationary"), field: "src0.dims[1].size"},
	{name: "stationary M 129", op: hwisa.OpLoadStationary, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dims[0].Size = 129 }, check: rule("load_stationary"), field: "src0.dims[0].size"},
	{name: "stationary in PSUM", op: hwisa.OpLoadStationary, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Addr = ps(0, 0) }, check: rule("load_stationary"), field: "src0.addr"},
	{name: "stationary packed", op: hwisa.OpLoadStationary, gens: onlyMariana, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dtype = hwisa.FP8E5M2x4 }, check: rule("load_stationary"), field: "src0.dtype"},
	// multiply_moving.
	{name: "moving from PSUM", op: hwisa.OpMultiplyMoving, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0 = t2(ps(0, 0), hwisa.BF16, 128, 512) }, check: rule("multiply_moving"), field: "src0.addr"},
	{name: "moving rank 3", op: hwisa.OpMultiplyMoving, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dims[1] = hwisa.Dim{Size: 1} }, check: rule("multiply_moving"), field: "src0.dims[1].size"},
	{name: "moving N 513", op: hwisa.OpMultiplyMoving, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dims[0].Size = 513 }, check: rule("multiply_moving"), field: "src0.dims[0].size"},
	{name: "moving N 513 only", op: hwisa.OpMultiplyMoving, mut: func(r *hwisa.Record, _ isa.Limits) { // dst stride 0 stays in its bank
		r.Src0.Dims[0].Size, r.Dst.Dims[0] = 513, hwisa.Dim{Size: 513}
	}, check: rule("multiply_moving"), field: "src0.dims[0].size"},
	{name: "moving packed", op: hwisa.OpMultiplyMoving, gens: onlyMariana, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dtype = hwisa.FP8E4M3FNx4 }, check: rule("multiply_moving"), field: "src0.dtype"},
	{name: "moving into SBUF", op: hwisa.OpMultiplyMoving, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Addr = sb(0, 0x8000) }, check: rule("multiply_moving"), field: "dst.addr"},
	{name: "moving into bf16", op: hwisa.OpMultiplyMoving, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dtype = hwisa.BF16 }, check: rule("multiply_moving"), field: "dst.dtype"},
	{name: "moving dst rank 3", op: hwisa.OpMultiplyMoving, mut: func(r *hwisa.Record, _ isa.Limits) {
		r.Dst.Dims[0].Size, r.Dst.Dims[1] = 256, hwisa.Dim{Size: 2, Stride: 256}
	}, check: rule("multiply_moving"), field: "dst.dims[1].size"},
	{name: "moving N mismatch", op: hwisa.OpMultiplyMoving, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dims[0].Size = 256 }, check: rule("multiply_moving"), field: "dst.dims[0].size"},
	{name: "moving across a bank", op: hwisa.OpMultiplyMoving, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Addr = ps(0, 0x804) }, check: isa.CheckStartAddr, field: "dst.addr"},
	// Element-wise shapes and packed dtypes.
	{name: "activation partitions differ", op: hwisa.OpActivation, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Partitions = 32 }, check: rule("activation"), field: "dst.partitions"},
	{name: "activation elements differ", op: hwisa.OpActivation, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dims[0].Size = 255 }, check: rule("activation"), field: "dst.dims"},
	{name: "tensor_tensor elements differ", op: hwisa.OpTensorTensor, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dims[1].Size = 4 }, check: rule("tensor_tensor"), field: "dst.dims"},
	{name: "reciprocal partitions differ", op: hwisa.OpReciprocal, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Partitions = 64 }, check: rule("reciprocal"), field: "dst.partitions"},
	{name: "tensor_tensor packed src1", op: hwisa.OpTensorTensor, gens: onlyMariana, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src1.Dtype = hwisa.FP8E4M3FNx4 }, check: rule("tensor_tensor"), field: "src1.dtype"},
	{name: "tensor_scalar packed dst", op: hwisa.OpTensorScalar, gens: onlyMariana, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dtype = hwisa.FP4E2M1FNx4 }, check: rule("tensor_scalar"), field: "dst.dtype"},
	{name: "activation packed src0", op: hwisa.OpActivation, gens: onlyMariana, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dtype = hwisa.FP8E5M2x4 }, check: rule("activation"), field: "src0.dtype"},
	{name: "memset packed", op: hwisa.OpMemset, gens: onlyMariana, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dtype = hwisa.FP8E5M2x4 }, check: rule("memset"), field: "dst.dtype"},
	{name: "sort packed", op: hwisa.OpSort, gens: onlyMariana, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dtype = hwisa.FP8E5M2x4 }, check: rule("sort"), field: "src0.dtype"},
	{name: "quantize_fp4 packed src0", op: hwisa.OpQuantizeFP4, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dtype = hwisa.FP4E2M1FNx4 }, check: rule("quantize_fp4"), field: "src0.dtype"},
	{name: "copy packed to fp32", op: hwisa.OpTensorCopy, gens: onlyMariana, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dtype = hwisa.FP8E5M2x4 }, check: rule("tensor_copy"), field: "dst.dtype"},
	{name: "copy_cast to a different packed", op: hwisa.OpCopyCast, gens: onlyMariana, mut: func(r *hwisa.Record, _ isa.Limits) {
		r.Dst.Dtype, r.Src0.Dtype = hwisa.FP8E5M2x4, hwisa.FP8E4M3FNx4
	}, check: rule("copy_cast"), field: "dst.dtype"},
	{name: "copy elements differ", op: hwisa.OpTensorCopy, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dims[0].Size = 32 }, check: rule("tensor_copy"), field: "dst.dims"},
	// tensor_reduce.
	{name: "reduce to 2 elements", op: hwisa.OpTensorReduce, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dims[0].Size = 2 }, check: rule("tensor_reduce"), field: "dst.dims"},
	{name: "reduce partitions differ", op: hwisa.OpTensorReduce, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Partitions = 64 }, check: rule("tensor_reduce"), field: "dst.partitions"},
	// transpose.
	{name: "transpose src0 rank 3", op: hwisa.OpTranspose, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dims[1] = hwisa.Dim{Size: 1} }, check: rule("transpose"), field: "src0.dims[1].size"},
	{name: "pe transpose F 200", op: hwisa.OpTranspose, mut: func(r *hwisa.Record, _ isa.Limits) { r.Src0.Dims[0].Size = 200 }, check: rule("transpose"), field: "src0.dims[0].size"},
	{name: "transpose dst partitions", op: hwisa.OpTranspose, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Partitions = 32 }, check: rule("transpose"), field: "dst.partitions"},
	{name: "transpose dst elements", op: hwisa.OpTranspose, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dims[0].Size = 64 }, check: rule("transpose"), field: "dst.dims[0].size"},
	{name: "transpose dst rank 3", op: hwisa.OpTranspose, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dims[1] = hwisa.Dim{Size: 1} }, check: rule("transpose"), field: "dst.dims[1].size"},
	{name: "transpose packed", op: hwisa.OpTranspose, gens: onlyMariana, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dtype = hwisa.FP8E5M2x4 }, check: rule("transpose"), field: "dst.dtype"},
	{name: "dve transpose P 33", op: hwisa.OpTranspose, mut: func(r *hwisa.Record, _ isa.Limits) {
		*r = dveTranspose()
		r.Src0.Addr, r.Src0.Partitions = sb(0, 0), 33
	}, check: rule("transpose"), field: "src0.partitions"},
	{name: "dve transpose F 40", op: hwisa.OpTranspose, mut: func(r *hwisa.Record, _ isa.Limits) {
		*r = dveTranspose()
		r.Src0.Dims[0].Size = 40
	}, check: rule("transpose"), field: "src0.dims[0].size"},
	{name: "dve transpose src0 across quadrants", op: hwisa.OpTranspose, mut: func(r *hwisa.Record, _ isa.Limits) {
		*r = dveTranspose()
		r.Src0.Addr = sb(40, 0)
	}, check: rule("transpose"), field: "src0.addr"},
	{name: "dve transpose dst across quadrants", op: hwisa.OpTranspose, mut: func(r *hwisa.Record, _ isa.Limits) {
		*r = dveTranspose()
		r.Dst.Addr = sb(20, 0x100)
	}, check: rule("transpose"), field: "dst.addr"},
	// iota.
	{name: "iota into fp32", op: hwisa.OpIota, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dtype = hwisa.FP32 }, check: rule("iota"), field: "dst.dtype"},
	{name: "iota into bf16", op: hwisa.OpIota, mut: func(r *hwisa.Record, _ isa.Limits) { r.Dst.Dtype = hwisa.BF16 }, check: rule("iota"), field: "dst.dtype"},
	// DMA.
	{name: "dma_trigger engine past the last", op: hwisa.OpDMATrigger, mut: func(r *hwisa.Record, l isa.Limits) { r.Aux = uint16(l.DMAEngines) }, check: rule("dma_trigger"), field: "aux"},
	{name: "dma_trigger engine 34 on sunda", op: hwisa.OpDMATrigger, gens: []hwarch.Generation{hwarch.Sunda}, mut: func(r *hwisa.Record, _ isa.Limits) { r.Aux = 34 }, check: rule("dma_trigger"), field: "aux"},
	{name: "dma_trigger queue 16", op: hwisa.OpDMATrigger, mut: func(r *hwisa.Record, _ isa.Limits) { r.Imm0 = 16 }, check: rule("dma_trigger"), field: "imm0"},
	{name: "dma_trigger 0 descriptors", op: hwisa.OpDMATrigger, mut: func(r *hwisa.Record, _ isa.Limits) { r.Imm1 = 0 }, check: rule("dma_trigger"), field: "imm1"},
	{name: "dma_trigger 2^24-15 descriptors", op: hwisa.OpDMATrigger, mut: func(r *hwisa.Record, _ isa.Limits) { r.Imm1 = 1<<24 - 15 }, check: rule("dma_trigger"), field: "imm1"},
	{name: "dma_transpose engine 132", op: hwisa.OpDMATranspose, mut: func(r *hwisa.Record, _ isa.Limits) { r.Aux = 132 }, check: rule("dma_transpose"), field: "aux"},
	{name: "dma_indirect engine 0xFFFF", op: hwisa.OpDMAIndirect, mut: func(r *hwisa.Record, _ isa.Limits) { r.Aux = 0xFFFF }, check: rule("dma_indirect"), field: "aux"},
	{name: "dma_gather_transpose engine 200", op: hwisa.OpDMAGatherTransp, mut: func(r *hwisa.Record, _ isa.Limits) { r.Aux = 200 }, check: rule("dma_gather_transpose"), field: "aux"},
}

func TestViolations(t *testing.T) {
	for _, tc := range violations {
		gs := tc.gens
		if gs == nil {
			gs = since(tc.op)
		}
		assert.NotEmpty(t, gs, tc.name)
		for _, g := range gs {
			t.Run(tc.name+"/"+g.String(), func(t *testing.T) {
				v := validators[g]
				r := example(tc.op)
				b := enc(r)
				if tc.op.AvailableOn(g) && tc.raw == nil {
					assert.True(t, v.IsValid(b), "the unmutated example must be valid")
				}
				if tc.mut != nil {
					tc.mut(&r, v.Limits())
					b = enc(r)
				}
				if tc.raw != nil {
					b = tc.raw(b)
				}
				got := v.Debug(b)
				assert.False(t, got.OK)
				assert.False(t, v.IsValid(b))
				assert.Equal(t, tc.check, got.Check, "%s", got)
				assert.Equal(t, tc.field, got.Field, "%s", got)
				assert.NotEmpty(t, got.Msg)
				t.Log(got)
			})
		}
	}
}

// TestMessages pins a few messages word for word.
func TestMessages(t *testing.T) {
	v := validators[hwarch.Sunda]
	r := example(hwisa.OpMemset)
	r.Dst.Addr, r.Dst.Partitions = sb(100, 0), 29
	assert.Equal(t, "dst covers partitions 100..128 (start 100 + 29 partitions); the last partition is 127", v.Debug(enc(r)).Msg)

	r = example(hwisa.OpMemset)
	r.Dst = t2(sb(0, 0x30000-252), hwisa.FP32, 1, 64)
	assert.Equal(t, "dst reaches bytes [0x2ff04, 0x30004) of its partition; the SBUF partition is bytes [0, 0x30000)", v.Debug(enc(r)).Msg)

	r = dveTranspose()
	r.Src0.Addr = sb(40, 0)
	assert.Equal(t, "DVE transpose stays inside one 32-partition quadrant; src0 covers partitions 40..71 (quadrants 1..2)", v.Debug(enc(r)).Msg)

	r = example(hwisa.OpTensorReduce)
	r.Op = hwisa.ALUSubtract
	assert.Equal(t, "tensor_reduce: op 2 is not one of 1 add, 3 multiply, 4 max, 5 min", v.Debug(enc(r)).Msg)

	r = example(hwisa.OpDMATrigger)
	r.Aux = 40
	got := v.Debug(enc(r))
	assert.Equal(t, "DMA engine 40; sunda has engines 0..33", got.Msg)
	assert.Equal(t, "is_valid_dma_trigger aux: DMA engine 40; sunda has engines 0..33", got.String())
	assert.Equal(t, uint32(0x140), got.Number())
}

func TestReasonNumber(t *testing.T) {
	assert.Equal(t, uint32(0), isa.Reason{OK: true}.Number())
	assert.Equal(t, "ok", isa.Reason{OK: true}.String())
	for i, c := range []string{isa.CheckRecordSize, isa.CheckOpcode, isa.CheckHeader, isa.CheckEvents, isa.CheckEnum,
		isa.CheckTensor1D, isa.CheckTensor2D, isa.CheckTensor3D, isa.CheckTensor4D,
		isa.CheckDtype, isa.CheckAligned, isa.CheckStartAddr, isa.CheckEngine} {
		assert.Equal(t, uint32(i+1), isa.Reason{Check: c}.Number(), c)
	}
	assert.Equal(t, uint32(0x1BD), isa.Reason{Check: "is_valid_dma_transpose"}.Number())
	assert.Equal(t, uint32(0xFFFF), isa.Reason{Check: "nonsense"}.Number())
	assert.Equal(t, "is_valid_opcode: x", isa.Reason{Check: "is_valid_opcode", Msg: "x"}.String())
}

// TestEveryByteCovered: a nop uses no operand, so a non-zero byte anywhere
// past the preamble is rejected — the checks see all 64 bytes.
func TestEveryByteCovered(t *testing.T) {
	for _, g := range gens {
		v := validators[g]
		for p := 12; p < hwisa.RecordSize; p++ {
			b := make([]byte, hwisa.RecordSize)
			b[p] = 1
			got := v.Debug(b)
			assert.Equal(t, rule("nop"), got.Check, "byte %d: %s", p, got)
		}
	}
}

// A tensor may describe at most 64 Ki elements per partition (stride-0
// dimensions could otherwise name billions); the engines refuse more too.
func TestFreeElementLimit(t *testing.T) {
	v := isa.New(arch.MustFor(hwarch.Cayman, arch.Options{}))
	r := hwisa.Record{Opcode: hwisa.OpMemset, Engine: hwisa.DVE, Imm0: 1,
		Dst: tn(sb(0, 0), hwisa.FP32, 1, hwisa.Dim{Size: 256, Stride: 0}, hwisa.Dim{Size: 256, Stride: 0})}
	assert.True(t, v.IsValid(enc(r)), "65536 elements")
	r.Dst.Dims[2] = hwisa.Dim{Size: 2, Stride: 0}
	assert.False(t, v.IsValid(enc(r)))
	reason := v.Debug(enc(r))
	assert.Equal(t, isa.CheckTensor4D, reason.Check)
	assert.Contains(t, reason.Msg, "131072 elements per partition")
}
