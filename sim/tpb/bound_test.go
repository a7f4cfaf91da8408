package tpb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
)

// TestMinProgramPS: the bound sums each engine's records up to its first
// last-flagged one, stops an engine at a record its core refuses, and is
// the largest engine's sum; bad arguments are errors.
func TestMinProgramPS(t *testing.T) {
	rec := func(r isa.Record) []byte { b := r.Bytes(); return b[:] }
	bf := func(n uint16) isa.Tensor {
		return isa.Tensor{Dtype: isa.BF16, Partitions: 128, Dims: [isa.MaxFreeDims]isa.Dim{{Size: n, Stride: 1}}}
	}
	at := func(t isa.Tensor, off uint32) isa.Tensor { t.Addr = isa.Addr(false, 0, off); return t }
	// reciprocal of 4096 elements on DVE: 8·4096 cycles at 1.2 GHz (mariana).
	recip := isa.Record{Opcode: isa.OpReciprocal, Engine: isa.DVE, Dst: bf(4096), Src0: at(bf(4096), 0x10000)}
	recipPS := Picoseconds(8*4096, 1_200_000_000)
	last := recip
	last.Flags = isa.FlagLast
	nop := isa.Record{Opcode: isa.OpNop, Engine: isa.PE, Flags: isa.FlagLast}
	bad := recip
	bad.Dst.Partitions = 0 // the core refuses it: the engine stops there
	cat := func(rs ...isa.Record) []byte {
		var b []byte
		for _, r := range rs {
			b = append(b, rec(r)...)
		}
		return b
	}
	tests := []struct {
		name string
		prog []byte
		want uint64
	}{
		{"empty", nil, 0},
		{"one nop", cat(nop), Picoseconds(1, 2_400_000_000)},
		{"two reciprocals", cat(recip, last), 2 * recipPS},
		{"nothing after last", cat(recip, last, recip, recip), 2 * recipPS},
		{"stops at a refused record", cat(recip, bad, recip, last), recipPS},
		{"the slowest engine", cat(nop, recip, recip, last), 3 * recipPS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MinProgramPS(hwarch.Mariana, 0, tt.prog)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := MinProgramPS(hwarch.Mariana, 0, make([]byte, 65))
	assert.ErrorContains(t, err, "65 bytes is not a whole number of 64-byte records")
	_, err = MinProgramPS(hwarch.Mariana, 99, nil)
	assert.ErrorContains(t, err, "NC 99")
}
