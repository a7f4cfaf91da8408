package udma

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/isa"
)

func TestReduceMetaRoundTrip(t *testing.T) {
	for op := ReduceAdd; op < numReduceOps; op++ {
		for _, d := range ReduceDtypes {
			r := Reduce{Op: op, Dtype: d}
			got, err := DecodeReduce(ReduceMeta(r))
			require.NoError(t, err)
			assert.Equal(t, r, got)
		}
	}
	got, err := DecodeReduce(0)
	require.NoError(t, err)
	assert.Equal(t, Reduce{}, got, "0 is a plain write")
	assert.Zero(t, ReduceMeta(Reduce{Dtype: isa.FP32}), "a plain write encodes as 0")
}

func TestDecodeReduceErrors(t *testing.T) {
	for name, w := range map[string]uint32{
		"reserved bits":          1<<16 | 1,
		"unknown op":             5,
		"dtype on plain write":   uint32(isa.FP32) << 8,
		"tf32 not reduced in":    1 | uint32(isa.TF32)<<8,
		"invalid dtype":          1,
		"bits 7..4 are reserved": 1 | 1<<4,
	} {
		_, err := DecodeReduce(w)
		assert.ErrorIs(t, err, ErrReduceCode, name)
	}
}
