package udma

import (
	"fmt"

	"github.com/neuronsim/neuronsim/hw/isa"
)

// The write-side reduce of the DMA engines (the model's; docs/dma-model.md
// §Reduce). The DMA compute path can combine what it writes with what the
// destination holds (trainium-facts §3: v4 SBUF read-add-write at full DMA
// rate; §7: dma_compute adds sources) — the collectives reduce this way. Its
// real descriptor encoding is not public, so the model puts it in the S2M
// descriptor's second word (buf2_ptr_lo, otherwise unused and 0):
//
//	bits [3:0]   the operation: ReduceNone (a plain write), ReduceAdd, ReduceMax, ReduceMin
//	bits [15:8]  the element dtype, a hw/isa Dtype
//	bits [31:16] reserved, 0
//
// A word of 0 is a plain write, so every descriptor the driver builds keeps
// its meaning.

// ReduceOp is the operation of a reducing write.
type ReduceOp uint8

// The reduce operations.
const (
	ReduceNone ReduceOp = iota // a plain write
	ReduceAdd                  // destination = destination + source
	ReduceMax                  // destination = max(destination, source)
	ReduceMin                  // destination = min(destination, source)
	numReduceOps
)

var reduceNames = [...]string{"none", "add", "max", "min"}

// String returns the operation's name.
func (o ReduceOp) String() string {
	if o < numReduceOps {
		return reduceNames[o]
	}
	return fmt.Sprintf("reduce(%d)", uint8(o))
}

// ReduceDtypes are the element types a reducing write combines.
var ReduceDtypes = []isa.Dtype{isa.FP32, isa.BF16, isa.FP16, isa.Int32, isa.Uint32, isa.Int16, isa.Uint16, isa.Int8, isa.Uint8}

// Reduce is a decoded S2M reduce word.
type Reduce struct {
	Op    ReduceOp
	Dtype isa.Dtype
}

// ErrReduceCode marks an S2M reduce word the engines do not know.
var ErrReduceCode = fmt.Errorf("unknown S2M reduce code")

// ReduceMeta encodes a reduce as the S2M descriptor's second word. A plain
// write is 0.
func ReduceMeta(r Reduce) uint32 {
	if r.Op == ReduceNone {
		return 0
	}
	return uint32(r.Op) | uint32(r.Dtype)<<8
}

// DecodeReduce reads the S2M descriptor's second word: an unknown operation,
// a dtype the engines do not reduce in, a dtype on a plain write, or a
// reserved bit set is an error wrapping ErrReduceCode.
func DecodeReduce(meta uint32) (Reduce, error) {
	r := Reduce{Op: ReduceOp(meta & 0xF), Dtype: isa.Dtype(meta >> 8 & 0xFF)}
	switch {
	case meta&^0xFF0F != 0:
		return Reduce{}, fmt.Errorf("udma: S2M word %#x has reserved bits set: %w", meta, ErrReduceCode)
	case r.Op >= numReduceOps:
		return Reduce{}, fmt.Errorf("udma: S2M word %#x: operation %d is not none, add, max or min: %w", meta, r.Op, ErrReduceCode)
	case r.Op == ReduceNone && r.Dtype != 0:
		return Reduce{}, fmt.Errorf("udma: S2M word %#x: a plain write carries no dtype: %w", meta, ErrReduceCode)
	case r.Op != ReduceNone && !reducible(r.Dtype):
		return Reduce{}, fmt.Errorf("udma: S2M word %#x: dtype %s is not one the engines reduce in: %w", meta, r.Dtype, ErrReduceCode)
	}
	return r, nil
}

func reducible(d isa.Dtype) bool {
	for _, x := range ReduceDtypes {
		if x == d {
			return true
		}
	}
	return false
}
