package program

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/isa"
)

func rec(op isa.Opcode, e isa.Engine) []byte {
	r := isa.Record{Opcode: op, Engine: e}
	b := r.Bytes()
	return b[:]
}

func TestSplit(t *testing.T) {
	var prog []byte
	prog = append(prog, rec(isa.OpNop, isa.PE)...)
	prog = append(prog, rec(isa.OpSem, isa.DVE)...)
	prog = append(prog, rec(isa.OpBarrier, isa.PE)...)
	blocks, err := Split(prog)
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	assert.Equal(t, isa.PE, blocks[0].Engine)
	assert.Len(t, blocks[0].Bytes, 128)
	assert.Equal(t, byte(isa.OpBarrier), blocks[0].Bytes[64], "order kept")
	assert.Equal(t, isa.DVE, blocks[1].Engine)

	for _, bad := range [][]byte{nil, make([]byte, 63), append(rec(isa.OpNop, isa.PE), 1), rec(isa.OpNop, isa.TopSP)} {
		_, err := Split(bad)
		assert.True(t, errors.Is(err, ErrBadProgram), "%d bytes", len(bad))
	}
}
