package enc

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomInputs makes r inputs of n bytes of d from a fixed seed: any bit
// pattern for integers, values in [-2, 2) for floats (rounded to d).
func randomInputs(d Dtype, r int, n int64, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, uint64(d)<<32|uint64(r)))
	in := make([][]byte, r)
	for i := range in {
		in[i] = make([]byte, n)
		if !d.float() {
			for k := range in[i] {
				in[i][k] = byte(rng.Uint32())
			}
			continue
		}
		for e := range int(n) / d.Size() {
			putFloat32(d, in[i], e, float32(rng.Float64()*4-2))
		}
	}
	return in
}

// execute builds nothing: it runs s on inputs and returns the outputs.
func execute(t testing.TB, s *Schedule, d Dtype, inputs [][]byte) [][]byte {
	t.Helper()
	b := NewBuffers(s)
	for i := range inputs {
		copy(b.Input[i], inputs[i])
	}
	// Poison output and scratch so that a schedule relying on zeroed memory fails.
	for _, set := range [][][]byte{b.Output, b.Scratch} {
		for _, buf := range set {
			for k := range buf {
				buf[k] = 0xA5
			}
		}
	}
	require.NoError(t, Apply(s, d, b))
	return b.Output
}

// checkCollective validates s, runs it on random inputs of d and verifies the
// outputs; integer results must equal Expected bit for bit.
func checkCollective(t *testing.T, s *Schedule, d Dtype, opt Options, seed uint64) {
	t.Helper()
	require.NoError(t, s.Validate())
	inputs := randomInputs(d, s.Ranks, s.InputBytes, seed)
	got := execute(t, s, d, inputs)
	require.NoError(t, Verify(s.Op, d, inputs, got, opt))
	if !d.float() {
		want, err := Expected(s.Op, d, inputs, opt)
		require.NoError(t, err)
		require.Equal(t, want, got, "integer results are exact")
	}
	for si, st := range s.Steps {
		for xi, x := range st.Xfers {
			require.NotEqual(t, Input, x.DstBuf, "step %d xfer %d writes an input buffer", si, xi)
		}
	}
}

func f32bits(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

func putF32(b []byte, i int, v float32) { binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v)) }
