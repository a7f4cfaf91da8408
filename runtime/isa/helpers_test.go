package isa_test

import (
	"fmt"
	"math"
	"sync"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/isa"
)

var gens = hwarch.Generations()

var validators = func() map[hwarch.Generation]*isa.Validator {
	m := map[hwarch.Generation]*isa.Validator{}
	for _, g := range gens {
		m[g] = isa.New(arch.MustFor(g, arch.Options{}))
	}
	return m
}()

// capture is a Logger that keeps the formatted lines.
type capture struct {
	mu    sync.Mutex
	lines []string
}

func (c *capture) Logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, fmt.Sprintf(format, args...))
}

func (c *capture) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

func sb(p int, off uint32) uint32 { return hwisa.Addr(false, p, off) }
func ps(p int, off uint32) uint32 { return hwisa.Addr(true, p, off) }
func f32(x float32) uint32        { return math.Float32bits(x) }

// t2 is a rank-2 tensor [parts × n], stride 1.
func t2(addr uint32, dt hwisa.Dtype, parts uint8, n uint16) hwisa.Tensor {
	return hwisa.Tensor{Addr: addr, Dtype: dt, Partitions: parts, Dims: [3]hwisa.Dim{{Size: n, Stride: 1}}}
}

// tn is a tensor with the given free dims (size, stride pairs).
func tn(addr uint32, dt hwisa.Dtype, parts uint8, dims ...hwisa.Dim) hwisa.Tensor {
	t := hwisa.Tensor{Addr: addr, Dtype: dt, Partitions: parts}
	copy(t.Dims[:], dims)
	return t
}

func firstEngine(m hwisa.EngineMask) hwisa.Engine {
	for e := hwisa.Engine(0); e < hwisa.NumEngines; e++ {
		if m.Has(e) {
			return e
		}
	}
	panic("no engine")
}

// example returns a valid record of op (valid on every generation that has
// op), built for the first engine that issues it.
func example(op hwisa.Opcode) hwisa.Record {
	info, ok := op.Info()
	if !ok {
		panic(fmt.Sprintf("no opcode %#x", op))
	}
	r := hwisa.Record{Opcode: op, Engine: firstEngine(info.Engines)}
	switch op {
	case hwisa.OpNop:
	case hwisa.OpBarrier:
		r.Signal = hwisa.Sync{Mode: hwisa.SignalEventSet, Index: 7}
	case hwisa.OpSem, hwisa.OpCtrlPollSem:
		r.Wait = hwisa.Sync{Mode: hwisa.WaitSemGE, Index: 3, Value: 1}
		r.Signal = hwisa.Sync{Mode: hwisa.SignalSemIncr, Index: 4, Value: 1}
	case hwisa.OpLoadStationary:
		r.Src0 = t2(sb(0, 0x100), hwisa.BF16, 128, 128)
		r.Wait = hwisa.Sync{Mode: hwisa.WaitEvent, Index: 1}
	case hwisa.OpMultiplyMoving:
		r.Flags = hwisa.FlagAccumulate
		r.Src0 = t2(sb(0, 0x1000), hwisa.BF16, 128, 512)
		r.Dst = t2(ps(0, 0x800), hwisa.FP32, 128, 512)
		r.Signal = hwisa.Sync{Mode: hwisa.SignalSemSet, Index: 2, Value: 9}
	case hwisa.OpActivation:
		r.Op = hwisa.ActExp
		r.Dst = t2(sb(0, 0), hwisa.FP32, 64, 256)
		r.Src0 = t2(ps(0, 0), hwisa.FP32, 64, 256)
		r.Imm0, r.Imm1 = f32(1), f32(0.5)
	case hwisa.OpTensorTensor:
		r.Op = hwisa.ALUAdd
		r.Dst = tn(sb(0, 0), hwisa.FP32, 32, hwisa.Dim{Size: 16, Stride: 8}, hwisa.Dim{Size: 8, Stride: 1})
		r.Src0 = tn(sb(32, 0x200), hwisa.BF16, 32, hwisa.Dim{Size: 16, Stride: 8}, hwisa.Dim{Size: 8, Stride: 1})
		r.Src1 = hwisa.Src1{Addr: sb(64, 0x400), Dtype: hwisa.FP32}
	case hwisa.OpTensorScalar:
		r.Op = hwisa.ALUMultiply
		r.Dst = t2(sb(0, 0), hwisa.BF16, 128, 64)
		r.Src0 = t2(sb(0, 0x800), hwisa.FP32, 128, 64)
		r.Imm0 = f32(2)
	case hwisa.OpTensorCopy, hwisa.OpCopyCast:
		r.Dst = t2(sb(0, 0), hwisa.BF16, 128, 64)
		r.Src0 = t2(sb(0, 0x800), hwisa.FP32, 128, 64)
	case hwisa.OpMemset:
		r.Dst = t2(sb(0, 0), hwisa.FP32, 128, 64)
		r.Imm0 = f32(3.5)
	case hwisa.OpIota:
		r.Dst = t2(sb(0, 0), hwisa.Int32, 128, 64)
		r.Imm0, r.Imm1 = 0, 64
	case hwisa.OpTranspose:
		r.Src0 = t2(sb(0, 0), hwisa.BF16, 128, 64)
		r.Dst = t2(sb(0, 0x1000), hwisa.BF16, 64, 128)
	case hwisa.OpReciprocal, hwisa.OpActReciprocal:
		r.Dst = t2(sb(0, 0), hwisa.FP32, 128, 64)
		r.Src0 = t2(sb(0, 0x800), hwisa.FP32, 128, 64)
	case hwisa.OpTensorReduce:
		r.Op = hwisa.ALUMax
		r.Src0 = t2(sb(0, 0), hwisa.FP32, 128, 256)
		r.Dst = t2(sb(0, 0x1000), hwisa.FP32, 128, 1)
	case hwisa.OpDMATrigger:
		r.Aux, r.Imm0, r.Imm1 = 3, 2, 16
	case hwisa.OpSort:
		r.Dst = t2(sb(0, 0), hwisa.Int32, 128, 64)
		r.Src0 = t2(sb(0, 0x400), hwisa.Int32, 128, 64)
		r.Imm0 = 1
	case hwisa.OpConvLUT:
		r.Dst = t2(sb(0, 0), hwisa.FP32, 128, 64)
		r.Src0 = t2(sb(0, 0x400), hwisa.Uint8, 128, 64)
		r.Src1 = hwisa.Src1{Addr: sb(0, 0x800), Dtype: hwisa.FP32}
	case hwisa.OpModifyPoolCfg:
		r.Imm0, r.Imm1 = 1, 2
	case hwisa.OpCtrlES:
		r.Imm0 = 1
	case hwisa.OpBN, hwisa.OpBN2:
		r.Dst = t2(sb(0, 0), hwisa.FP32, 128, 2)
		r.Src0 = t2(sb(0, 0x100), hwisa.FP32, 128, 512)
	case hwisa.OpQuantizeFP4:
		r.Dst = t2(sb(0, 0), hwisa.FP4E2M1FNx4, 128, 64)
		r.Src0 = t2(sb(0, 0x100), hwisa.FP32, 128, 256)
		r.Imm0 = f32(1)
	case hwisa.OpJPEGDecode:
		r.Dst = t2(sb(0, 0), hwisa.Uint8, 128, 1024)
		r.Src0 = t2(sb(0, 0x1000), hwisa.Uint8, 1, 4096)
	case hwisa.OpDMAGatherTransp, hwisa.OpDMAIndirect:
		r.Dst = t2(sb(0, 0), hwisa.BF16, 128, 64)
		r.Src0 = t2(sb(0, 0x400), hwisa.BF16, 64, 128)
		r.Src1 = hwisa.Src1{Addr: sb(0, 0x800), Dtype: hwisa.Int32}
		r.Aux = 5
	case hwisa.OpDMATranspose:
		r.Dst = t2(sb(0, 0), hwisa.BF16, 64, 128)
		r.Src0 = t2(sb(0, 0x400), hwisa.BF16, 128, 64)
		r.Aux = 17
	default:
		panic(fmt.Sprintf("no example for %s", op))
	}
	return r
}

func enc(r hwisa.Record) []byte {
	b := r.Bytes()
	return b[:]
}

// since returns the generations that have op.
func since(op hwisa.Opcode) []hwarch.Generation {
	var out []hwarch.Generation
	for _, g := range gens {
		if op.AvailableOn(g) {
			out = append(out, g)
		}
	}
	return out
}

// validMix returns valid records of several opcodes, all for engine eng
// (any engine when eng is NumEngines), valid on generation g.
func validMix(g hwarch.Generation, eng hwisa.Engine) [][]byte {
	var out [][]byte
	for _, info := range hwisa.Opcodes() {
		if !info.Opcode.AvailableOn(g) {
			continue
		}
		if eng < hwisa.NumEngines {
			if !info.Engines.Has(eng) {
				continue
			}
			r := example(info.Opcode)
			if info.Opcode == hwisa.OpTranspose && eng == hwisa.DVE {
				r = dveTranspose()
			}
			r.Engine = eng
			out = append(out, enc(r))
			continue
		}
		out = append(out, enc(example(info.Opcode)))
	}
	return out
}

func dveTranspose() hwisa.Record {
	r := example(hwisa.OpTranspose)
	r.Engine = hwisa.DVE
	r.Src0 = t2(sb(32, 0), hwisa.FP32, 32, 16)
	r.Dst = t2(sb(64, 0x100), hwisa.FP32, 16, 32)
	return r
}
