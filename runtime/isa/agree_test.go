package isa_test

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/isa"
)

// agree checks the silent and debug paths on one input, for one validator,
// and returns the debug reason.
func agree(t *testing.T, v *isa.Validator, b []byte) isa.Reason {
	t.Helper()
	r := v.Debug(b)
	if v.IsValid(b) != r.OK {
		t.Fatalf("IsValid = %v but Debug = %s on % x", !r.OK, r, b)
	}
	if r.OK != (r.Check == "" && r.Field == "" && r.Msg == "") || (!r.OK && (r.Check == "" || r.Msg == "")) {
		t.Fatalf("malformed reason %+v on % x", r, b)
	}
	hal := uint32(len(b)) % 7 // 5, 6: unknown engines
	if len(b) > 1 {
		hal = uint32(b[1]) % 7
	}
	re := v.DebugEngineInstruction(hal, b)
	if v.IsValidEngineInstruction(hal, b) != re.OK {
		t.Fatalf("IsValidEngineInstruction(%d) = %v but DebugEngineInstruction = %s on % x", hal, !re.OK, re, b)
	}
	if re.OK && !r.OK || !r.OK && re != r {
		t.Fatalf("engine reason %s vs structural %s on % x", re, r, b)
	}
	return r
}

// steer turns random bytes into a record that passes the header more
// often: a known opcode, one of its engines, known flags, an op in range,
// unused operands cleared. Deeper checks then see random tensors.
func steer(rng *rand.Rand, b []byte) {
	ops := hwisa.Opcodes()
	info := ops[rng.IntN(len(ops))]
	b[0] = byte(info.Opcode)
	var engs []hwisa.Engine
	for e := hwisa.PE; e <= hwisa.SP; e++ {
		if info.Engines.Has(e) {
			engs = append(engs, e)
		}
	}
	b[1] = byte(engs[rng.IntN(len(engs))])
	b[2] &= hwisa.FlagLast
	if info.Operands&hwisa.UsesOp != 0 {
		b[3] %= 7
	} else {
		b[3] = 0
	}
	if rng.IntN(2) == 0 {
		clear(b[4:12])
	}
	for _, f := range []struct {
		bit      uint16
		from, to int
	}{{hwisa.UsesDst, 12, 30}, {hwisa.UsesSrc0, 30, 48}, {hwisa.UsesSrc1, 48, 54}, {hwisa.UsesImm0, 54, 58}, {hwisa.UsesImm1, 58, 62}, {hwisa.UsesAux, 62, 64}} {
		if info.Operands&f.bit == 0 {
			clear(b[f.from:f.to])
			continue
		}
		if f.to-f.from == 18 { // a tensor: small shapes, sane dtype
			b[f.from+3] &= 0x80 | byte(rng.IntN(2)) // SBUF/PSUM, small offset
			b[f.from+4] = byte(rng.IntN(int(hwisa.NumDtypes) + 1))
			b[f.from+5] = byte(rng.IntN(130))
			for i := 0; i < 3; i++ {
				b[f.from+7+4*i] = 0
				b[f.from+6+4*i] = byte(rng.IntN(5))
				b[f.from+9+4*i] = byte(int8(rng.IntN(5) - 2))
				b[f.from+8+4*i] = byte(rng.IntN(256))
			}
		}
	}
	b[53] = 0
}

func TestAgreeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 0x6338ac8024e9e2b0))
	counts := map[string]int{}
	b := make([]byte, hwisa.RecordSize)
	for i := 0; i < 200_000; i++ {
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if i%2 == 1 {
			steer(rng, b)
		}
		for _, g := range gens {
			r := agree(t, validators[g], b)
			counts[r.Check]++
		}
		// Short and long inputs too.
		if i%1000 == 0 {
			n := rng.IntN(130)
			in := make([]byte, n)
			for j := range in {
				in[j] = byte(rng.Uint32())
			}
			for _, g := range gens {
				agree(t, validators[g], in)
			}
		}
	}
	logCounts(t, counts)
	assert.Greater(t, counts[""], 100, "some random records must be valid")
	assert.Greater(t, len(counts), 12, "the random records must reach many checks")
}

func TestAgreeMutated(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x004, 2))
	counts := map[string]int{}
	var seeds [][]byte
	for _, g := range gens {
		seeds = append(seeds, validMix(g, hwisa.NumEngines)...)
	}
	seeds = append(seeds, enc(dveTranspose()))
	interesting := []byte{0, 1, 2, 0x7F, 0x80, 0x81, 0xFF, 32, 31, 33, 128, 127, 129, 7, 5, 4}
	b := make([]byte, hwisa.RecordSize)
	for i := 0; i < 200_000; i++ {
		copy(b, seeds[rng.IntN(len(seeds))])
		for k := rng.IntN(3) + 1; k > 0; k-- {
			p := rng.IntN(hwisa.RecordSize)
			switch rng.IntN(3) {
			case 0:
				b[p] ^= 1 << rng.IntN(8)
			case 1:
				b[p] = interesting[rng.IntN(len(interesting))]
			default:
				b[p] = byte(rng.Uint32())
			}
		}
		for _, g := range gens {
			r := agree(t, validators[g], b)
			counts[r.Check]++
		}
	}
	logCounts(t, counts)
	assert.Greater(t, counts[""], 10_000)
	for _, c := range []string{isa.CheckOpcode, isa.CheckHeader, isa.CheckEvents, isa.CheckEnum, isa.CheckTensor2D,
		isa.CheckDtype, isa.CheckAligned, isa.CheckStartAddr} {
		assert.Greater(t, counts[c], 0, c)
	}
}

func logCounts(t *testing.T, counts map[string]int) {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := k
		if name == "" {
			name = "(valid)"
		}
		t.Logf("%-34s %d", name, counts[k])
	}
}

// TestNoAllocs: the silent paths never allocate, valid record or not, even
// when the caller's record lives on its stack.
func TestNoAllocs(t *testing.T) {
	v := validators[hwarch.Mariana].WithLogger(nil)
	mix := validMix(hwarch.Mariana, hwisa.NumEngines)
	bad := enc(example(hwisa.OpTensorTensor))
	bad[12] ^= 0x02 // dst offset: misaligned
	require.False(t, v.IsValid(bad))
	blk := block(validMix(hwarch.Mariana, hwisa.DVE)...)
	for name, f := range map[string]func(){
		"IsValid valid": func() {
			for _, b := range mix {
				if !v.IsValid(b) {
					panic("invalid")
				}
			}
		},
		"IsValid invalid": func() { v.IsValid(bad) },
		"IsValid short":   func() { v.IsValid(bad[:10]) },
		"IsValid stack": func() {
			var a [hwisa.RecordSize]byte
			copy(a[:], mix[3])
			v.IsValid(a[:])
		},
		"IsValidEngineInstruction":                    func() { v.IsValidEngineInstruction(uint32(hwisa.DVE), mix[0]) },
		"IsValidEngineInstruction invalid, no logger": func() { v.IsValidEngineInstruction(uint32(hwisa.DVE), bad) },
		"FinalInstValidityCheck": func() {
			if v.FinalInstValidityCheck(blk, uint32(hwisa.DVE)) != nil {
				panic("invalid")
			}
		},
	} {
		assert.Zero(t, testing.AllocsPerRun(100, f), name)
	}
}
