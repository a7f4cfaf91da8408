package dve

import (
	"encoding/binary"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
)

func archFor(t *testing.T, g hwarch.Generation) *arch.Tables {
	t.Helper()
	at, err := arch.For(g, arch.Options{})
	require.NoError(t, err)
	return at
}

func defaults(t *testing.T, g hwarch.Generation) Tables {
	t.Helper()
	tb, err := DefaultBins(g)
	require.NoError(t, err)
	return tb
}

// wantSizes are the table sizes of seed 001 §3 per generation, in TableNames order.
var wantSizes = map[hwarch.Generation][5]int{
	hwarch.Sunda:   {0x2000, 0x1000, 0, 0x1000, 0x400},
	hwarch.Cayman:  {0x4000, 0x1000, 0x1000, 0x1000, 0x400},
	hwarch.Mariana: {0x4000, 0x1000, 0x1000, 0x1000, 0x400},
}

func TestSizes(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			s, err := Sizes(archFor(t, g))
			require.NoError(t, err)
			for i, name := range TableNames() {
				assert.EqualValues(t, wantSizes[g][i], s[name], name)
			}
		})
	}
	_, err := Sizes(nil)
	assert.ErrorIs(t, err, ErrNoArch)
}

func TestValidate(t *testing.T) {
	for _, g := range hwarch.Generations() {
		at := archFor(t, g)
		t.Run(g.String()+"/defaults", func(t *testing.T) {
			tb := defaults(t, g)
			assert.NoError(t, tb.Validate(at))
		})
		for i, name := range TableNames() {
			if wantSizes[g][i] == 0 {
				continue
			}
			for _, delta := range []int{-8, +1, +0x1000} {
				t.Run(g.String()+"/"+name, func(t *testing.T) {
					tb := defaults(t, g)
					p := tb.slot(name)
					*p = make([]byte, len(*p)+delta)
					err := tb.Validate(at)
					require.ErrorIs(t, err, ErrSize)
					assert.Contains(t, err.Error(), name)
					assert.Contains(t, err.Error(), g.String())
					assert.Contains(t, err.Error(), "0x"+big.NewInt(int64(wantSizes[g][i]+delta)).Text(16))
					assert.Contains(t, err.Error(), "0x"+big.NewInt(int64(wantSizes[g][i])).Text(16))
				})
			}
			t.Run(g.String()+"/"+name+"/missing", func(t *testing.T) {
				tb := defaults(t, g)
				*tb.slot(name) = nil
				assert.ErrorIs(t, tb.Validate(at), ErrSize)
			})
		}
	}
	t.Run("sunda/control_slow present", func(t *testing.T) {
		tb := defaults(t, hwarch.Sunda)
		tb.ControlSlow = make([]byte, 0x1000)
		err := tb.Validate(archFor(t, hwarch.Sunda))
		require.ErrorIs(t, err, ErrNoControlSlow)
		assert.Contains(t, err.Error(), "sunda has no control-slow table")
	})
	t.Run("sunda/control_slow empty not nil", func(t *testing.T) {
		tb := defaults(t, hwarch.Sunda)
		tb.ControlSlow = []byte{}
		assert.NoError(t, tb.Validate(archFor(t, hwarch.Sunda)))
	})
	t.Run("cross generation", func(t *testing.T) {
		tb := defaults(t, hwarch.Sunda)
		assert.ErrorIs(t, tb.Validate(archFor(t, hwarch.Cayman)), ErrSize)
		tb = defaults(t, hwarch.Cayman)
		assert.Error(t, tb.Validate(archFor(t, hwarch.Sunda)))
		mar := defaults(t, hwarch.Mariana)
		assert.NoError(t, mar.Validate(archFor(t, hwarch.Cayman)), "cayman and mariana share sizes")
	})
	t.Run("nil arch", func(t *testing.T) {
		tb := defaults(t, hwarch.Cayman)
		assert.ErrorIs(t, tb.Validate(nil), ErrNoArch)
	})
}

func TestParamRAM(t *testing.T) {
	b := ParamRAM()
	require.Len(t, b, 0x400)
	_, prSize := archFor(t, hwarch.Cayman).Khal.DVEParameterRAM()
	require.EqualValues(t, prSize, len(b))
	tests := []struct {
		i    int
		want float32
	}{{0, 1}, {1, 0.5}, {3, 0.25}, {255, 1.0 / 256}, {2, float32(1.0 / 3.0)}, {9, float32(0.1)}}
	for _, tc := range tests {
		t.Run(big.NewInt(int64(tc.i)).String(), func(t *testing.T) {
			got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*tc.i:]))
			assert.Equal(t, tc.want, got)
		})
	}
	// The double-then-float32 rounding equals the correctly rounded quotient
	// for all 256 divisors.
	for i := range ParamRAMEntries {
		exact, _ := new(big.Rat).SetFrac64(1, int64(i+1)).Float32()
		assert.Equal(t, math.Float32bits(exact), binary.LittleEndian.Uint32(b[4*i:]), "entry %d", i)
	}
	b[0] = 0xFF
	assert.NotEqual(t, b[0], ParamRAM()[0], "a fresh slice on every call")
}

func TestSynthetic(t *testing.T) {
	// Reference values computed independently (Python, docs/dve.md).
	assert.Equal(t, "neuronsim-dve-cayman-control_fast", GeneratorSeed(hwarch.Cayman, TableControlFast))
	tests := []struct {
		g     hwarch.Generation
		table string
		head  []byte
	}{
		{hwarch.Sunda, TableOpcode, []byte{0xfe, 0xc2, 0x8c, 0x5d, 0x8c, 0x26, 0x02, 0x34}},
		{hwarch.Sunda, TableControlFast, []byte{0x5b, 0x92, 0xd6, 0xb4, 0xf7, 0x20, 0xb8, 0x53}},
		{hwarch.Cayman, TableOpcode, []byte{0x18, 0xd0, 0x6f, 0x9a, 0xd8, 0x9a, 0x0f, 0x76}},
		{hwarch.Cayman, TableDatapath, []byte{0x42, 0x2a, 0x9a, 0x48, 0xf4, 0x90, 0x5d, 0xd1}},
		{hwarch.Mariana, TableOpcode, []byte{0x95, 0x9c, 0x12, 0xb7, 0x13, 0x36, 0x56, 0x54}},
	}
	for _, tc := range tests {
		t.Run(tc.g.String()+"/"+tc.table, func(t *testing.T) {
			got := Synthetic(GeneratorSeed(tc.g, tc.table), 8)
			assert.Equal(t, tc.head, got)
			// The first word is one xorshift64 step from the FNV-1a seed.
			x := FNV64a([]byte(GeneratorSeed(tc.g, tc.table)), FNVOffset64)
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			assert.Equal(t, x, binary.LittleEndian.Uint64(got))
		})
	}
	t.Run("prefix stable", func(t *testing.T) {
		long := Synthetic("x", 64)
		assert.Equal(t, long[:13], Synthetic("x", 13), "a partial word is the prefix of the next value")
		assert.Empty(t, Synthetic("x", 0))
	})
}

func TestDefaultBins(t *testing.T) {
	seen := map[string]string{}
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			a := defaults(t, g)
			b := defaults(t, g)
			assert.Equal(t, a, b, "deterministic")
			a.Opcode[0] ^= 0xFF
			assert.NotEqual(t, a.Opcode[0], b.Opcode[0], "freshly allocated")
			for i, name := range TableNames() {
				tb := b.Get(name)
				assert.Len(t, tb, wantSizes[g][i], name)
				if name == TableParamRAM {
					assert.Equal(t, ParamRAM(), tb)
					continue
				}
				if len(tb) == 0 {
					assert.Nil(t, tb, "sunda control-slow is nil")
					continue
				}
				assert.Equal(t, Synthetic(GeneratorSeed(g, name), len(tb)), tb)
				key := string(tb[:32])
				assert.NotContains(t, seen, key, "%s/%s repeats %s", g, name, seen[key])
				seen[key] = g.String() + "/" + name
			}
		})
	}
	for _, g := range []hwarch.Generation{hwarch.Invalid, hwarch.Reserved1, hwarch.NumGenerations} {
		_, err := DefaultBins(g)
		assert.ErrorIs(t, err, hwarch.ErrUnknownGeneration, "%d", g)
	}
}

func TestTablesGetClone(t *testing.T) {
	tb := defaults(t, hwarch.Cayman)
	assert.Nil(t, tb.Get("nope"))
	c := tb.Clone()
	assert.Equal(t, tb, c)
	c.Datapath[0] ^= 1
	assert.NotEqual(t, tb.Datapath[0], c.Datapath[0])
	s := defaults(t, hwarch.Sunda).Clone()
	assert.Nil(t, s.ControlSlow)
	assert.Equal(t, "opcode.bin", FileName(TableOpcode))
}

func TestWriteLoadBins(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sub", "dir")
			want := defaults(t, g)
			require.NoError(t, WriteBins(dir, want))
			_, err := os.Stat(filepath.Join(dir, "control_slow.bin"))
			assert.Equal(t, g == hwarch.Sunda, os.IsNotExist(err), "control_slow.bin written iff not sunda")
			got, err := LoadBins(dir, g)
			require.NoError(t, err)
			assert.Equal(t, Fingerprint(g, want), Fingerprint(g, got))
			assert.Equal(t, want.Opcode, got.Opcode)
			assert.Equal(t, want.ParamRAM, got.ParamRAM)
			assert.Equal(t, want.ControlSlow, got.ControlSlow)
			assert.Equal(t, g == hwarch.Sunda, len(got.ControlSlow) == 0)

			// param_ram.bin is optional.
			require.NoError(t, os.Remove(filepath.Join(dir, "param_ram.bin")))
			got, err = LoadBins(dir, g)
			require.NoError(t, err)
			assert.Equal(t, ParamRAM(), got.ParamRAM)
		})
	}
}

func TestLoadBinsErrors(t *testing.T) {
	write := func(t *testing.T, g hwarch.Generation) string {
		dir := t.TempDir()
		require.NoError(t, WriteBins(dir, defaults(t, g)))
		return dir
	}
	for _, g := range hwarch.Generations() {
		for i, name := range TableNames() {
			if wantSizes[g][i] == 0 {
				continue
			}
			t.Run(g.String()+"/"+name+"/size", func(t *testing.T) {
				dir := write(t, g)
				path := filepath.Join(dir, FileName(name))
				require.NoError(t, os.WriteFile(path, make([]byte, 12), 0o644))
				_, err := LoadBins(dir, g)
				require.ErrorIs(t, err, ErrSize)
				assert.Contains(t, err.Error(), path)
				assert.Contains(t, err.Error(), "expected 0x"+big.NewInt(int64(wantSizes[g][i])).Text(16))
				assert.Contains(t, err.Error(), "got 0xc")
			})
			if name == TableParamRAM {
				continue
			}
			t.Run(g.String()+"/"+name+"/missing", func(t *testing.T) {
				dir := write(t, g)
				require.NoError(t, os.Remove(filepath.Join(dir, FileName(name))))
				_, err := LoadBins(dir, g)
				require.ErrorIs(t, err, os.ErrNotExist)
				assert.Contains(t, err.Error(), FileName(name))
			})
			t.Run(g.String()+"/"+name+"/directory", func(t *testing.T) {
				dir := write(t, g)
				path := filepath.Join(dir, FileName(name))
				require.NoError(t, os.Remove(path))
				require.NoError(t, os.Mkdir(path, 0o755))
				_, err := LoadBins(dir, g)
				require.Error(t, err)
				assert.Contains(t, err.Error(), "not a regular file")
			})
		}
	}
	t.Run("sunda/control_slow present", func(t *testing.T) {
		dir := write(t, hwarch.Sunda)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "control_slow.bin"), make([]byte, 0x1000), 0o644))
		_, err := LoadBins(dir, hwarch.Sunda)
		require.ErrorIs(t, err, ErrNoControlSlow)
		assert.Contains(t, err.Error(), "control_slow.bin")
	})
	t.Run("cayman bins as sunda", func(t *testing.T) {
		_, err := LoadBins(write(t, hwarch.Cayman), hwarch.Sunda)
		assert.Error(t, err)
	})
	t.Run("invalid generation", func(t *testing.T) {
		_, err := LoadBins(t.TempDir(), hwarch.Invalid)
		assert.ErrorIs(t, err, hwarch.ErrUnknownGeneration)
	})
	t.Run("empty dir", func(t *testing.T) {
		_, err := LoadBins(t.TempDir(), hwarch.Cayman)
		require.ErrorIs(t, err, os.ErrNotExist)
		assert.Contains(t, err.Error(), "opcode.bin")
	})
	t.Run("write into a file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(f, nil, 0o644))
		assert.Error(t, WriteBins(f, defaults(t, hwarch.Cayman)))
	})
}
