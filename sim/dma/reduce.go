package dma

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// Combine applies a reducing write: dst[i] = dst[i] op src[i] over the
// elements of r.Dtype (docs/dma-model.md §Reduce). Floating types combine in
// float32 and round back to nearest-even (bf16, fp16); integers wrap. A
// plain write copies. dst and src must have the same length, a whole number
// of elements.
func Combine(r udma.Reduce, dst, src []byte) error {
	if len(dst) != len(src) {
		return fmt.Errorf("dma: reduce %s: %d destination bytes, %d source bytes", r.Op, len(dst), len(src))
	}
	if r.Op == udma.ReduceNone {
		copy(dst, src)
		return nil
	}
	es := r.Dtype.Size()
	if es == 0 || len(dst)%es != 0 {
		return fmt.Errorf("dma: reduce %s in %s: %d bytes is not a whole number of elements", r.Op, r.Dtype, len(dst))
	}
	le := binary.LittleEndian
	switch r.Dtype {
	case isa.FP32:
		for i := 0; i < len(dst); i += 4 {
			v := combineF(r.Op, math.Float32frombits(le.Uint32(dst[i:])), math.Float32frombits(le.Uint32(src[i:])))
			le.PutUint32(dst[i:], math.Float32bits(v))
		}
	case isa.BF16:
		for i := 0; i < len(dst); i += 2 {
			v := combineF(r.Op, tpb.FromBF16(le.Uint16(dst[i:])), tpb.FromBF16(le.Uint16(src[i:])))
			le.PutUint16(dst[i:], tpb.ToBF16(v))
		}
	case isa.FP16:
		for i := 0; i < len(dst); i += 2 {
			v := combineF(r.Op, tpb.FromFP16(le.Uint16(dst[i:])), tpb.FromFP16(le.Uint16(src[i:])))
			le.PutUint16(dst[i:], tpb.ToFP16(v))
		}
	case isa.Int32:
		for i := 0; i < len(dst); i += 4 {
			le.PutUint32(dst[i:], uint32(combineI(r.Op, int64(int32(le.Uint32(dst[i:]))), int64(int32(le.Uint32(src[i:]))))))
		}
	case isa.Uint32:
		for i := 0; i < len(dst); i += 4 {
			le.PutUint32(dst[i:], uint32(combineI(r.Op, int64(le.Uint32(dst[i:])), int64(le.Uint32(src[i:])))))
		}
	case isa.Int16:
		for i := 0; i < len(dst); i += 2 {
			le.PutUint16(dst[i:], uint16(combineI(r.Op, int64(int16(le.Uint16(dst[i:]))), int64(int16(le.Uint16(src[i:]))))))
		}
	case isa.Uint16:
		for i := 0; i < len(dst); i += 2 {
			le.PutUint16(dst[i:], uint16(combineI(r.Op, int64(le.Uint16(dst[i:])), int64(le.Uint16(src[i:])))))
		}
	case isa.Int8:
		for i := range dst {
			dst[i] = byte(combineI(r.Op, int64(int8(dst[i])), int64(int8(src[i]))))
		}
	case isa.Uint8:
		for i := range dst {
			dst[i] = byte(combineI(r.Op, int64(dst[i]), int64(src[i])))
		}
	default:
		return fmt.Errorf("dma: reduce %s: dtype %s is not one the engines reduce in: %w", r.Op, r.Dtype, udma.ErrReduceCode)
	}
	return nil
}

func combineF(op udma.ReduceOp, a, b float32) float32 {
	switch op {
	case udma.ReduceMax:
		if b > a || a != a {
			return b
		}
		return a
	case udma.ReduceMin:
		if b < a || a != a {
			return b
		}
		return a
	}
	return a + b
}

func combineI(op udma.ReduceOp, a, b int64) int64 {
	switch op {
	case udma.ReduceMax:
		return max(a, b)
	case udma.ReduceMin:
		return min(a, b)
	}
	return a + b
}
