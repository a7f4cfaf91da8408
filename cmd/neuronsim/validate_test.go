package main

import (
	"os"
	"path/filepath"
	"strings"
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
	require.EqualError(t, err, bad+": bad program: 100 bytes is not a whole number of 64-byte records")
	assert.Empty(t, out)
	out, err = runCLI(t, "validate", bad, "--arch", "cayman", "--engine", "dve")
	require.EqualError(t, err, bad+": bad program: 100 bytes is not a whole number of 64-byte records")
	assert.Empty(t, out)
}

// TestValidateRefusals: an empty program is valid on no engine, --engine
// takes only an engine that issues records (not top_sp, not empty), and
// every refusal of a program names its file; a bad flag is refused before
// the program is read.
func TestValidateRefusals(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.bin", "")
	emptySrc := writeFile(t, dir, "empty.s", "; nothing\n")
	one := writeFile(t, dir, "one.s", "nop engine=pe last\n")
	missing := filepath.Join(dir, "missing.bin")
	const wantEngines = "want pe, act, pool, dve or sp"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"empty", []string{empty}, empty + ": bad program: empty: a program holds at least one 64-byte record"},
		{"empty on top_sp", []string{empty, "--engine", "top_sp"}, "--engine top_sp: the top_sp engine issues no instruction records (" + wantEngines + ")"},
		{"empty on pe", []string{empty, "--engine", "pe"}, empty + ": bad program: empty: a program holds at least one 64-byte record"},
		{"empty source on sp", []string{emptySrc, "--engine", "sp"}, emptySrc + ": bad program: empty: a program holds at least one 64-byte record"},
		{"a record on top_sp", []string{one, "--engine", "top_sp"}, "--engine top_sp: the top_sp engine issues no instruction records"},
		{"empty engine", []string{one, "--engine", ""}, "--engine: empty: " + wantEngines + ", or leave --engine out"},
		{"unknown engine", []string{one, "--engine", "tpb"}, "--engine \"tpb\": unknown engine (" + wantEngines + ")"},
		{"engine by number", []string{one, "--engine", "0"}, "--engine \"0\": unknown engine"},
		{"flag before the file", []string{missing, "--engine", "top_sp"}, "--engine top_sp: "},
		{"missing file", []string{missing, "--engine", "pe"}, "stat " + missing + ": no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runCLI(t, append([]string{"validate", "--arch", "cayman"}, tt.args...)...)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "got  %s\nwant %s", err, tt.want)
			assert.Empty(t, out, "nothing is reported valid")
		})
	}
	out, err := runCLI(t, "validate", "--arch", "cayman", one, "--engine", "pe")
	require.NoError(t, err)
	assert.Equal(t, "pe block: 1 record valid on cayman\n", out)
}
