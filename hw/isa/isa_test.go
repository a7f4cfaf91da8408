package isa

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

func TestRecordRoundTrip(t *testing.T) {
	r := Record{
		Opcode: OpTensorTensor, Engine: DVE, Flags: FlagLast, Op: ALUAdd,
		Wait: Sync{WaitSemGE, 3, 2}, Signal: Sync{SignalSemIncr, 4, 1},
		Dst:  Tensor{Addr: Addr(false, 0, 0x100), Dtype: BF16, Partitions: 128, Dims: [3]Dim{{64, 1}}},
		Src0: Tensor{Addr: Addr(true, 4, 0x40), Dtype: FP32, Partitions: 128, Dims: [3]Dim{{8, 8}, {8, -1}}},
		Src1: Src1{Addr: Addr(false, 0, 0x2000), Dtype: BF16},
		Imm0: 0x3F80_0000, Imm1: 7, Aux: 129,
	}
	b := r.Bytes()
	assert.Equal(t, byte(OpTensorTensor), b[0], "byte 0 is the opcode")
	back, err := Decode(b[:])
	require.NoError(t, err)
	assert.Equal(t, r, back)
	_, err = Decode(b[:63])
	assert.Error(t, err)

	psum, p, off := Location(r.Src0.Addr)
	assert.Equal(t, [3]any{true, 4, uint32(0x40)}, [3]any{psum, p, off})
	assert.Equal(t, 3, r.Src0.Rank())
	assert.Equal(t, 64, r.Src0.Elements())
	assert.Equal(t, 2, r.Dst.Rank())
}

// Every 64-byte pattern decodes and re-encodes to itself except the reserved
// src1 byte, which Decode ignores.
func TestDecodeEncodeAnyBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		var b [RecordSize]byte
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		b[offSrc1+5] = 0
		r, err := Decode(b[:])
		require.NoError(t, err)
		assert.Equal(t, b, r.Bytes())
	}
}

func TestDtypes(t *testing.T) {
	assert.True(t, FP4E2M1FNx4.AvailableOn(hwarch.Mariana))
	assert.False(t, FP4E2M1FNx4.AvailableOn(hwarch.Cayman))
	assert.False(t, Int64.AvailableOn(hwarch.Sunda))
	assert.True(t, Int64.AvailableOn(hwarch.Cayman))
	assert.True(t, BF16.AvailableOn(hwarch.Sunda))
	assert.False(t, DtypeInvalid.AvailableOn(hwarch.Mariana))
	assert.False(t, Dtype(200).AvailableOn(hwarch.Mariana))
	for d := Dtype(1); d < NumDtypes; d++ {
		got, err := ParseDtype(d.String())
		require.NoError(t, err)
		assert.Equal(t, d, got)
		assert.Positive(t, d.Size())
	}
	assert.Equal(t, 2, BF16.Size())
	assert.True(t, FP8E5M2x4.Packed())
	_, err := ParseDtype("bf61")
	assert.Error(t, err)
}

func TestOpcodeTable(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range Opcodes() {
		assert.False(t, seen[o.Name], "mnemonic %s twice", o.Name)
		seen[o.Name] = true
		got, err := ParseOpcode(o.Name)
		require.NoError(t, err)
		assert.Equal(t, o.Opcode, got)
		assert.True(t, o.Opcode.AvailableOn(hwarch.Mariana), "every opcode exists on mariana")
		assert.NotZero(t, o.Engines)
		assert.False(t, o.Engines.Has(TopSP), "no opcode is issued on TOP_SP")
	}
	// The seed's values.
	for op, gen := range map[Opcode]hwarch.Generation{OpJPEGDecode: hwarch.Cayman, OpDMATranspose: hwarch.Cayman, OpDMAIndirect: hwarch.Mariana} {
		info, ok := op.Info()
		require.True(t, ok)
		assert.Equal(t, gen, info.Since, info.Name)
	}
	assert.Equal(t, Opcode(0xBD), OpDMATranspose)
	assert.Equal(t, Opcode(0x81), OpJPEGDecode)
	assert.Equal(t, Opcode(0xBB), OpDMAIndirect)
	assert.False(t, OpDMATranspose.AvailableOn(hwarch.Sunda))
	assert.Equal(t, "opcode(0xff)", Opcode(0xFF).String())
}

// TestISADocMatchesTable checks the opcode table of docs/isa.md against the
// code's.
func TestISADocMatchesTable(t *testing.T) {
	f, err := os.Open("../../docs/isa.md")
	require.NoError(t, err)
	defer f.Close()
	var rows []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "<!-- opcode-table -->":
			in = true
		case line == "<!-- /opcode-table -->":
			in = false
		case in && strings.HasPrefix(line, "| 0x"):
			rows = append(rows, line)
		}
	}
	var want []string
	for _, o := range Opcodes() {
		var engines []string
		for e := Engine(0); e < TopSP; e++ {
			if o.Engines.Has(e) {
				engines = append(engines, e.String())
			}
		}
		var ops []string
		for i, l := range []string{"D", "S", "T", "I", "J", "A", "O"} {
			if o.Operands&(1<<i) != 0 {
				ops = append(ops, l)
			}
		}
		operands := strings.Join(ops, " ")
		if operands == "" {
			operands = "–"
		}
		exec := map[bool]string{true: "yes", false: "no"}[o.Executed]
		want = append(want, fmt.Sprintf("| 0x%02X | %s | %s | %s | %s | %s |",
			uint8(o.Opcode), o.Name, o.Since, strings.Join(engines, " "), operands, exec))
	}
	assert.Equal(t, want, rows, "the opcode table of docs/isa.md, row by row")
}
