package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateBlocksInOrder: validate prints every block that passed, in
// engine order, then the refused one with its record and reason, and stops
// there; a program that does not split prints nothing.
func TestValidateBlocksInOrder(t *testing.T) {
	dir := t.TempDir()
	var src []byte
	for _, f := range []string{"matmul.s", "dma_transpose.s"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "programs", f))
		require.NoError(t, err)
		src = append(src, b...)
	}
	combo := writeFile(t, dir, "combo.s", string(src))
	out, err := runCLI(t, "validate", combo, "--arch", "sunda")
	require.EqualError(t, err, combo+": invalid instruction in the sp block at offset 0")
	assert.Equal(t, "pe block: 2 records valid on sunda\n"+
		"act block: 1 record valid on sunda\n"+
		"sp block (sunda): Found invalid instruction! opcode=189, offset=0\n"+
		"  record: dma_transpose engine=sp last dst=sbuf[0:1,0]:bf16[4/1] src0=sbuf[0:1,0x100]:bf16[4/1] aux=3\n"+
		"  reason: is_valid_opcode opcode: opcode 0xbd (dma_transpose) needs cayman or later; this is sunda\n", out)

	out, err = runCLI(t, "validate", combo, "--arch", "cayman")
	require.NoError(t, err)
	assert.Equal(t, "pe block: 2 records valid on cayman\nact block: 1 record valid on cayman\nsp block: 1 record valid on cayman\n", out)

	bad := writeFile(t, dir, "bad.bin", string(make([]byte, 100)))
	out, err = runCLI(t, "validate", bad, "--arch", "cayman")
	require.EqualError(t, err, "bad program: 100 bytes is not a whole number of 64-byte records")
	assert.Empty(t, out)
	out, err = runCLI(t, "validate", bad, "--arch", "cayman", "--engine", "dve")
	require.EqualError(t, err, "ib_final_inst_validity_check: a block of 100 bytes: instruction block size is not a multiple of TPB_INST_NBYTES (64)")
	assert.Empty(t, out)
}
