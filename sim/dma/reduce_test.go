package dma

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

func f32s(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bf16s(v ...float32) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], tpb.ToBF16(x))
	}
	return b
}

// TestCombine: every reducing dtype and operation on a few elements.
func TestCombine(t *testing.T) {
	for _, tc := range []struct {
		name          string
		r             udma.Reduce
		dst, src, out []byte
	}{
		{"fp32 add", udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.FP32}, f32s(1, -2, 0.5), f32s(2, 2, 0.25), f32s(3, 0, 0.75)},
		{"fp32 max", udma.Reduce{Op: udma.ReduceMax, Dtype: isa.FP32}, f32s(1, -2), f32s(0, 5), f32s(1, 5)},
		{"fp32 min", udma.Reduce{Op: udma.ReduceMin, Dtype: isa.FP32}, f32s(1, -2), f32s(0, 5), f32s(0, -2)},
		{"bf16 add rounds", udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.BF16}, bf16s(256, 1), bf16s(1, 1), bf16s(256, 2)},
		{"fp16 add", udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.FP16}, []byte{0x00, 0x3C}, []byte{0x00, 0x3C}, []byte{0x00, 0x40}},
		{"int32 add wraps", udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.Int32}, []byte{0xFF, 0xFF, 0xFF, 0x7F}, []byte{1, 0, 0, 0}, []byte{0, 0, 0, 0x80}},
		{"int8 max signed", udma.Reduce{Op: udma.ReduceMax, Dtype: isa.Int8}, []byte{0xFF, 3}, []byte{1, 0x80}, []byte{1, 3}},
		{"uint8 add wraps", udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.Uint8}, []byte{250}, []byte{10}, []byte{4}},
		{"uint16 min", udma.Reduce{Op: udma.ReduceMin, Dtype: isa.Uint16}, []byte{0, 1}, []byte{0xFF, 0}, []byte{0xFF, 0}},
		{"plain write copies", udma.Reduce{}, []byte{1, 2}, []byte{3, 4}, []byte{3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, Combine(tc.r, tc.dst, tc.src))
			assert.Equal(t, tc.out, tc.dst)
		})
	}
	assert.Error(t, Combine(udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.FP32}, make([]byte, 6), make([]byte, 6)), "not whole elements")
	assert.Error(t, Combine(udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.FP32}, make([]byte, 8), make([]byte, 4)), "lengths differ")
	assert.Error(t, Combine(udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.TF32}, make([]byte, 8), make([]byte, 8)), "tf32 is not reduced in")
}

// TestReducingWrite: an S2M descriptor with a reduce word adds into the
// destination on a plain and on a copier bus; a bad reduce word or a length
// of partial elements halts the queue with ErrReduce and writes nothing.
func TestReducingWrite(t *testing.T) {
	add := udma.ReduceMeta(udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.FP32})
	for _, copier := range []bool{false, true} {
		r := newRig(t, rigOpts{copier: copier})
		r.normal(0)
		q := r.setupQueue(0, 2, r.hbm, 32)
		src, dst := r.alloc(r.hbm, 64, 64), r.alloc(r.hbm, 64, 64)
		r.bus.poke(t, src, f32s(1, 2, 3, 4))
		r.bus.poke(t, dst, f32s(10, 20, 30, 40))
		rx := rxDesc(t, dst, 16, q.s2m.phase)
		rx.Meta = add
		q.pushDesc(txDesc(t, src, 16, q.m2s.phase), rx)
		q.doorbell()
		r.mustDrain()
		assert.Equal(t, f32s(11, 22, 33, 44), r.bus.peek(t, dst, 16), "copier %v", copier)
		assert.Zero(t, r.queue(0, 2).Status)
	}
	for name, meta := range map[string]uint32{"unknown op": 7, "tf32": udma.ReduceMeta(udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.TF32}), "partial element": add} {
		r := newRig(t, rigOpts{})
		r.normal(0)
		q := r.setupQueue(0, 2, r.hbm, 32)
		src, dst := r.alloc(r.hbm, 64, 64), r.alloc(r.hbm, 64, 64)
		n := 16
		if name == "partial element" {
			n = 14
		}
		rx := rxDesc(t, dst, n, q.s2m.phase)
		rx.Meta = meta
		q.pushDesc(txDesc(t, src, n, q.m2s.phase), rx)
		q.doorbell()
		r.mustDrain()
		assert.Equal(t, udma.StatusHalted|udma.ErrReduce, r.queue(0, 2).Status, name)
		assert.Equal(t, make([]byte, 16), r.bus.peek(t, dst, 16), "%s: nothing written", name)
	}
}
