package isa

import (
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
)

// TestRulesTable: the per-opcode table agrees with hw/isa's opcode table.
func TestRulesTable(t *testing.T) {
	for o := 0; o < 256; o++ {
		info, known := hwisa.Opcode(o).Info()
		r := rules[o]
		if !known {
			assert.Equal(t, rule{}.opSet, r.opSet, "opcode %#x", o)
			assert.Equal(t, pNone, r.pred, "opcode %#x has a rule but is no opcode", o)
			continue
		}
		t.Run(info.Name, func(t *testing.T) {
			assert.Equal(t, info.Operands&hwisa.UsesOp != 0, r.opSet != 0, "op byte use")
			assert.Equal(t, r.opSet != 0, r.opName != nil)
			assert.Equal(t, info.Opcode == hwisa.OpMultiplyMoving || info.Opcode == hwisa.OpActivation, r.accumulate)
			if info.Operands&hwisa.UsesSrc1 != 0 {
				assert.NotZero(t, info.Operands&hwisa.UsesSrc0, "src1 takes src0's shape")
			}
			hasTensors := info.Operands&(hwisa.UsesDst|hwisa.UsesSrc0) != 0
			assert.Equal(t, hasTensors || info.Operands&hwisa.UsesAux != 0, r.pred != pNone, "a predicate for every opcode with tensors or aux")
		})
	}
}

// TestDtypeSizes: addr_aligned_dtype masks with size-1, so sizes are powers of two.
func TestDtypeSizes(t *testing.T) {
	for d := hwisa.Dtype(1); d < hwisa.NumDtypes; d++ {
		assert.Equal(t, 1, bits.OnesCount(uint(d.Size())), "%s", d)
	}
}

func TestLadderNames(t *testing.T) {
	for rk := 1; rk <= 4; rk++ {
		assert.Equal(t, map[int]string{1: "tensor1d_valid", 2: "tensor2d_valid", 3: "tensor3d_valid", 4: "tensor4d_valid"}[rk], ladder[rk])
	}
	seen := map[uint32]string{}
	for c, n := range checkNumbers {
		assert.NotContains(t, seen, n, c)
		seen[n] = c
	}
}

// TestLayout: the offsets the checker reads agree with hw/isa's Encode and Reserved.
func TestLayout(t *testing.T) {
	r := hwisa.Record{
		Opcode: 0x11, Engine: 3, Flags: 2, Op: 5,
		Wait:   hwisa.Sync{Mode: 1, Index: 2, Value: 0x0304},
		Signal: hwisa.Sync{Mode: 6, Index: 7, Value: 0x0809},
		Dst:    hwisa.Tensor{Addr: 0x8102_0304, Dtype: 5, Partitions: 6, Dims: [3]hwisa.Dim{{Size: 7, Stride: -8}, {Size: 9, Stride: 10}, {Size: 11, Stride: -12}}},
		Src0:   hwisa.Tensor{Addr: 0x1314_1516, Dtype: 17, Partitions: 18, Dims: [3]hwisa.Dim{{Size: 19, Stride: 20}, {Size: 21, Stride: -22}, {Size: 23, Stride: 24}}},
		Src1:   hwisa.Src1{Addr: 0x2526_2728, Dtype: 29},
		Imm0:   0x3031_3233, Imm1: 0x3435_3637, Aux: 0x3839,
	}
	b := r.Bytes()
	var got hwisa.Record
	got.Opcode, got.Engine, got.Flags, got.Op = hwisa.Opcode(b[offOpcode]), hwisa.Engine(b[offEngine]), b[offFlags], b[offOp]
	got.Wait, got.Signal = loadSync(b[offWait:offSignal]), loadSync(b[offSignal:offDst])
	loadTensor(&got.Dst, b[offDst:offSrc0])
	loadTensor(&got.Src0, b[offSrc0:offSrc1])
	got.Src1 = hwisa.Src1{Addr: le32(b[offSrc1:]), Dtype: hwisa.Dtype(b[offSrc1+4])}
	got.Imm0, got.Imm1, got.Aux = le32(b[offImm0:]), le32(b[offImm1:]), le16(b[offAux:])
	assert.Equal(t, r, got)
	b[offSrc1+5] = 0x5A
	assert.Equal(t, uint8(0x5A), hwisa.Reserved(b[:]))
	assert.Equal(t, hwisa.RecordSize, offAux+2)
}
