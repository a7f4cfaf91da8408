package asm

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/isa"
)

func bytesOf(r isa.Record) []byte {
	b := r.Bytes()
	return b[:]
}

func TestFormatImmediates(t *testing.T) {
	f := math.Float32bits
	fp32 := isa.Tensor{Dtype: isa.FP32, Partitions: 1}
	i32 := isa.Tensor{Dtype: isa.Int32, Partitions: 1}
	tests := []struct {
		name string
		r    isa.Record
		want string
	}{
		{"activation floats", isa.Record{Opcode: isa.OpActivation, Engine: isa.ACT, Imm0: f(1), Imm1: f(-0.25)}, "imm0=f32(1) imm1=f32(-0.25)"},
		{"activation specials", isa.Record{Opcode: isa.OpActivation, Engine: isa.ACT, Imm0: f(float32(math.Inf(-1))), Imm1: 0x8000_0000}, "imm0=f32(-Inf) imm1=f32(-0)"},
		{"activation canonical nan", isa.Record{Opcode: isa.OpActivation, Engine: isa.ACT, Imm0: 0x7FC0_0000}, "imm0=f32(NaN)"},
		{"activation nan payload", isa.Record{Opcode: isa.OpActivation, Engine: isa.ACT, Imm0: 0x7F80_0001, Imm1: 0xFFC0_0000}, "imm0=0x7f800001 imm1=0xffc00000"},
		{"activation denormal", isa.Record{Opcode: isa.OpActivation, Engine: isa.ACT, Imm0: 1}, "imm0=f32(1e-45)"},
		{"tensor_scalar float dst", isa.Record{Opcode: isa.OpTensorScalar, Engine: isa.DVE, Dst: fp32, Imm0: f(3), Imm1: f(3)}, "imm0=f32(3) imm1=0x40400000"},
		{"tensor_scalar int dst", isa.Record{Opcode: isa.OpTensorScalar, Engine: isa.DVE, Dst: i32, Imm0: 7}, "imm0=0x7"},
		{"memset bf16 dst", isa.Record{Opcode: isa.OpMemset, Engine: isa.POOL, Dst: isa.Tensor{Dtype: isa.BF16}, Imm0: f(0.5)}, "imm0=f32(0.5)"},
		{"memset packed dst", isa.Record{Opcode: isa.OpMemset, Engine: isa.POOL, Dst: isa.Tensor{Dtype: isa.FP4E2M1FNx4}, Imm0: f(0.5)}, "imm0=f32(0.5)"},
		{"iota integers", isa.Record{Opcode: isa.OpIota, Engine: isa.POOL, Dst: fp32, Imm0: 0xFFFF_FFFF, Imm1: 16}, "imm0=0xffffffff imm1=0x10"},
		{"dma_trigger", isa.Record{Opcode: isa.OpDMATrigger, Engine: isa.SP, Imm0: 2, Imm1: 3, Aux: 5}, "imm0=0x2 imm1=0x3 aux=5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := checkRoundTrip(t, bytesOf(tt.r))
			assert.Contains(t, text, tt.want)
			assert.NotContains(t, text, ".record")
		})
	}
}

func TestFormatCanonical(t *testing.T) {
	r := isa.Record{
		Opcode: isa.OpTensorTensor, Engine: isa.DVE, Flags: isa.FlagAccumulate | isa.FlagLast, Op: isa.ALUSubtract,
		Wait: isa.Sync{Mode: isa.WaitEvent, Index: 4}, Signal: isa.Sync{Mode: isa.SignalSemDecr, Index: 1, Value: 2},
		Dst:  isa.Tensor{Addr: isa.Addr(true, 3, 0x20), Dtype: isa.FP32, Partitions: 2, Dims: dl(4, -1, 5, 0, 6, 7)},
		Src0: isa.Tensor{Addr: isa.Addr(false, 0, 0), Dtype: isa.Uint64, Partitions: 128},
		Src1: isa.Src1{Addr: isa.Addr(false, 127, 0xFFFFFF), Dtype: isa.FP8E8M0},
		Imm0: 1, Imm1: 0x80, Aux: 9,
	}
	assert.Equal(t, "tensor_tensor engine=dve acc last op=subtract wait=event(4) signal=sem_decr(1,2) "+
		"dst=psum[3:2,0x20]:fp32[4/-1,5/0,6/7] src0=sbuf[0:128,0]:uint64 src1=sbuf[127,0xffffff]:fp8_e8m0 imm0=0x1 imm1=0x80 aux=9",
		FormatRecord(bytesOf(r)))
	// A raw op for an opcode that names none, and fields the opcode does not use, are printed.
	assert.Equal(t, "barrier engine=sp op=200 dst=sbuf[0:0,0]:int8", FormatRecord(bytesOf(isa.Record{Opcode: isa.OpBarrier, Engine: isa.SP, Op: 200, Dst: isa.Tensor{Dtype: isa.Int8}})))
}

// Records the readable form cannot write come out raw, and still round-trip.
func TestFormatRaw(t *testing.T) {
	base := isa.Record{Opcode: isa.OpTensorTensor, Engine: isa.POOL, Op: isa.ALUAdd,
		Dst:  isa.Tensor{Dtype: isa.FP32, Partitions: 1, Dims: dl(4, 1)},
		Src0: isa.Tensor{Dtype: isa.FP32, Partitions: 1, Dims: dl(4, 1)},
		Src1: isa.Src1{Addr: 0x100, Dtype: isa.FP32}}
	require.NotContains(t, FormatRecord(bytesOf(base)), ".record")
	tests := []struct {
		name string
		edit func(r *isa.Record, b []byte)
	}{
		{"unknown opcode", func(_ *isa.Record, b []byte) { b[0] = 0x99 }},
		{"engine top_sp", func(_ *isa.Record, b []byte) { b[1] = byte(isa.TopSP) }},
		{"engine 200", func(_ *isa.Record, b []byte) { b[1] = 200 }},
		{"flag bit 2", func(_ *isa.Record, b []byte) { b[2] = 4 }},
		{"alu op out of range", func(_ *isa.Record, b []byte) { b[3] = isa.NumALUOps }},
		{"wait mode out of range", func(_ *isa.Record, b []byte) { b[4] = byte(isa.NumSyncModes) }},
		{"event with a value", func(_ *isa.Record, b []byte) { b[8], b[10] = byte(isa.SignalEventSet), 1 }},
		{"dst dtype 0", func(_ *isa.Record, b []byte) { b[12+4] = 0 }},
		{"src0 dtype 99", func(_ *isa.Record, b []byte) { b[30+4] = 99 }},
		{"dims after a zero size", func(_ *isa.Record, b []byte) { b[12+14] = 1 }},
		{"stride of a zero size", func(_ *isa.Record, b []byte) { b[12+12] = 1 }},
		{"src1 dtype 0", func(_ *isa.Record, b []byte) { b[48+4] = 0 }},
		{"src1 reserved byte", func(_ *isa.Record, b []byte) { b[48+5] = 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			b := bytesOf(r)
			tt.edit(&r, b)
			assert.Equal(t, rawRecord(b), FormatRecord(b))
			assert.Equal(t, rawRecord(b)+"\n", checkRoundTrip(t, b))
		})
	}
	act := isa.Record{Opcode: isa.OpActivation, Engine: isa.ACT, Op: isa.NumActFuncs}
	assert.True(t, strings.HasPrefix(FormatRecord(bytesOf(act)), ".record "), "activation function out of range")
}

func TestRandomRecordsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 64))
	bin := make([]byte, 4000*isa.RecordSize)
	for i := range bin {
		bin[i] = byte(rng.Uint32())
	}
	checkRoundTrip(t, bin)
	// Sparse records: mostly zero bytes, so many are readable.
	for i := range bin {
		bin[i] = 0
		if rng.IntN(16) == 0 {
			bin[i] = byte(rng.Uint32())
		}
	}
	text := checkRoundTrip(t, bin)
	assert.Contains(t, text, ".engine")
	assert.Contains(t, text, ".record")
}

func randTensor(rng *rand.Rand) isa.Tensor {
	if rng.IntN(4) == 0 {
		return isa.Tensor{}
	}
	t := isa.Tensor{
		Addr:       isa.Addr(rng.IntN(2) == 0, rng.IntN(128), rng.Uint32N(1<<24)),
		Dtype:      isa.Dtype(1 + rng.IntN(int(isa.NumDtypes)-1)),
		Partitions: uint8(rng.Uint32()),
	}
	for i := range rng.IntN(isa.MaxFreeDims + 1) {
		t.Dims[i] = isa.Dim{Size: uint16(1 + rng.IntN(0xFFFF)), Stride: int16(rng.Uint32())}
	}
	return t
}

func randSync(rng *rand.Rand) isa.Sync {
	s := isa.Sync{Mode: isa.SyncMode(rng.IntN(int(isa.NumSyncModes))), Index: uint8(rng.Uint32()), Value: uint16(rng.Uint32())}
	if noValue(s.Mode) {
		s.Value = 0
	}
	return s
}

// Records every field of which is in range disassemble readably.
func TestValidLookingRecordsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	ops := isa.Opcodes()
	var bin []byte
	for range 3000 {
		info := ops[rng.IntN(len(ops))]
		r := isa.Record{
			Opcode: info.Opcode, Engine: isa.Engine(rng.IntN(int(recordEngines))), Flags: uint8(rng.IntN(4)),
			Wait: randSync(rng), Signal: randSync(rng), Dst: randTensor(rng), Src0: randTensor(rng),
		}
		switch kindOf(info.Opcode) {
		case opALU:
			r.Op = uint8(rng.IntN(int(isa.NumALUOps)))
		case opAct:
			r.Op = uint8(rng.IntN(int(isa.NumActFuncs)))
		default:
			r.Op = uint8(rng.Uint32())
		}
		if rng.IntN(2) == 0 {
			r.Src1 = isa.Src1{Addr: rng.Uint32(), Dtype: isa.Dtype(1 + rng.IntN(int(isa.NumDtypes)-1))}
		}
		switch rng.IntN(3) {
		case 0:
			r.Imm0, r.Imm1 = rng.Uint32(), rng.Uint32()
		case 1:
			r.Imm0, r.Imm1 = math.Float32bits(float32(rng.NormFloat64())), math.Float32bits(float32(rng.IntN(100)))
		}
		r.Aux = uint16(rng.IntN(3) * rng.IntN(1<<16))
		b := bytesOf(r)
		require.NotContains(t, FormatRecord(b), ".record", "%+v", r)
		bin = append(bin, b...)
	}
	text := checkRoundTrip(t, bin)
	assert.NotContains(t, text, ".record")
	assert.Contains(t, text, "f32(")
}

// dl builds free dims from size, stride pairs.
func dl(sizeStride ...int) (d [isa.MaxFreeDims]isa.Dim) {
	for i := 0; i+1 < len(sizeStride); i += 2 {
		d[i/2] = isa.Dim{Size: uint16(sizeStride[i]), Stride: int16(sizeStride[i+1])}
	}
	return d
}
