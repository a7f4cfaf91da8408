package enc

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allDtypes = []Dtype{Float32, BFloat16, Float16, Int32, Uint32, Int8, Uint8, Uint16, Int16}

func TestParseDtype(t *testing.T) {
	for _, d := range allDtypes {
		got, err := ParseDtype(d.String())
		require.NoError(t, err)
		assert.Equal(t, d, got)
	}
	assert.Equal(t, []string{"fp32", "bf16", "fp16", "int32", "uint32", "int8", "uint8", "uint16", "int16"},
		[]string{Float32.String(), BFloat16.String(), Float16.String(), Int32.String(), Uint32.String(),
			Int8.String(), Uint8.String(), Uint16.String(), Int16.String()})
	assert.Equal(t, []int{4, 2, 2, 4, 4, 1, 1, 2, 2},
		[]int{Float32.Size(), BFloat16.Size(), Float16.Size(), Int32.Size(), Uint32.Size(),
			Int8.Size(), Uint8.Size(), Uint16.Size(), Int16.Size()})
	for in, want := range map[string]Dtype{"float32": Float32, "BFloat16": BFloat16, "float16": Float16, " FP32 ": Float32} {
		got, err := ParseDtype(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "fp8", "fp64", "int64", "float"} {
		_, err := ParseDtype(bad)
		require.ErrorIs(t, err, ErrUnknownDtype, bad)
		assert.ErrorContains(t, err, "bf16")
	}
	assert.Equal(t, "Dtype(0)", Dtype(0).String())
	assert.Equal(t, 0, Dtype(10).Size())
}

func TestReduceIntegersWrap(t *testing.T) {
	dst := []byte{0xff, 0x7f}
	require.NoError(t, Reduce(Int8, dst, []byte{1, 1}))
	assert.Equal(t, []byte{0, 0x80}, dst, "int8 wraps: -1+1 = 0, 127+1 = -128")

	d16 := binary.LittleEndian.AppendUint16(nil, 0xffff)
	require.NoError(t, Reduce(Uint16, d16, binary.LittleEndian.AppendUint16(nil, 2)))
	assert.Equal(t, uint16(1), binary.LittleEndian.Uint16(d16))

	d32 := binary.LittleEndian.AppendUint32(nil, uint32(math.MaxInt32))
	require.NoError(t, Reduce(Int32, d32, binary.LittleEndian.AppendUint32(nil, 1)))
	assert.Equal(t, int32(math.MinInt32), int32(binary.LittleEndian.Uint32(d32)))
}

func TestReduceFloat32(t *testing.T) {
	dst, src := make([]byte, 12), make([]byte, 12)
	for i, v := range []float32{1.5, float32(math.Inf(1)), 1} {
		putF32(dst, i, v)
	}
	for i, v := range []float32{2.25, float32(math.Inf(-1)), 1e-8} {
		putF32(src, i, v)
	}
	require.NoError(t, Reduce(Float32, dst, src))
	assert.Equal(t, float32(3.75), f32bits(dst, 0))
	assert.True(t, math.IsNaN(float64(f32bits(dst, 1))), "inf + -inf is NaN")
	assert.Equal(t, float32(1), f32bits(dst, 2), "rounded in float32")
}

func TestReduce16BitRounding(t *testing.T) {
	le := binary.LittleEndian
	tests := []struct {
		name     string
		d        Dtype
		a, b     uint16
		want     uint16
		wantNaN  bool
		describe string
	}{
		{"bf16 exact", BFloat16, 0x3f80, 0x3f80, 0x4000, false, "1+1 = 2"},
		{"bf16 tie to even down", BFloat16, 0x3f80, 0x3b80, 0x3f80, false, "1 + 2^-8 ties to 1"},
		{"bf16 tie to even up", BFloat16, 0x3f81, 0x3b80, 0x3f82, false, "(1+2^-7) + 2^-8 ties to 1+2^-6"},
		{"bf16 nan", BFloat16, 0x7fc1, 0x3f80, 0, true, "NaN stays NaN"},
		{"bf16 overflow", BFloat16, 0x7f7f, 0x7f7f, 0x7f80, false, "max + max = inf"},
		{"fp16 exact", Float16, 0x3c00, 0x3c00, 0x4000, false, "1+1 = 2"},
		{"fp16 tie to even", Float16, 0x3c00, 0x1000, 0x3c00, false, "1 + 2^-11 ties to 1"},
		{"fp16 tie up", Float16, 0x3c01, 0x1000, 0x3c02, false, "(1+2^-10) + 2^-11 ties to 1+2^-9"},
		{"fp16 overflow", Float16, 0x7bff, 0x7bff, 0x7c00, false, "65504+65504 = inf"},
		{"fp16 subnormals", Float16, 0x0001, 0x0001, 0x0002, false, "2^-24 + 2^-24"},
		{"fp16 nan", Float16, 0x7e00, 0x3c00, 0, true, "NaN stays NaN"},
		{"fp16 signed zero", Float16, 0x8000, 0x8000, 0x8000, false, "-0 + -0 = -0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst, src := le.AppendUint16(nil, tt.a), le.AppendUint16(nil, tt.b)
			require.NoError(t, Reduce(tt.d, dst, src))
			got := le.Uint16(dst)
			if tt.wantNaN {
				assert.True(t, math.IsNaN(toFloat64(tt.d, dst, 0)), "%#04x: %s", got, tt.describe)
				return
			}
			assert.Equal(t, tt.want, got, "%#04x: %s", got, tt.describe)
		})
	}
}

func TestReduceErrors(t *testing.T) {
	assert.ErrorIs(t, Reduce(Float32, make([]byte, 4), make([]byte, 8)), ErrBadBuffers)
	assert.ErrorIs(t, Reduce(Float32, make([]byte, 6), make([]byte, 6)), ErrBadBuffers)
	assert.ErrorIs(t, Reduce(Dtype(0), nil, nil), ErrUnknownDtype)
	assert.NoError(t, Reduce(Float16, nil, nil))
}

// TestF16RoundTrip: every binary16 widens to float32 and narrows back to
// itself (NaNs to a NaN).
func TestF16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := f16ToF32(uint16(h))
		back := f32ToF16(f)
		if math.IsNaN(float64(f)) {
			require.True(t, back&0x7c00 == 0x7c00 && back&0x3ff != 0, "%#04x", h)
			continue
		}
		require.Equal(t, uint16(h), back, "%#04x → %g", h, f)
	}
	for h := range 1 << 16 {
		f := bf16ToF32(uint16(h))
		back := f32ToBF16(f)
		if math.IsNaN(float64(f)) {
			require.True(t, math.IsNaN(float64(bf16ToF32(back))), "%#04x", h)
			continue
		}
		require.Equal(t, uint16(h), back, "%#04x", h)
	}
}

// TestNarrowingRoundsToNearestEven checks f32ToF16 and f32ToBF16 on random
// float32 values against round-to-nearest-even done with big.Float.
func TestNarrowingRoundsToNearestEven(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Float32frombits(rng.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		// binary16: 11-bit significand, exponent range down to 2^-24 subnormals.
		assert.Equal(t, refNarrow(f, 11, -14, 15), float64(f16ToF32(f32ToF16(f))), "fp16 of %g (%#08x)", f, math.Float32bits(f))
		// bfloat16: 8-bit significand, float32's exponent range.
		assert.Equal(t, refNarrow(f, 8, -126, 127), float64(bf16ToF32(f32ToBF16(f))), "bf16 of %g (%#08x)", f, math.Float32bits(f))
	}
}

// refNarrow rounds f to a binary format with prec significand bits and
// normal exponents emin..emax (value = 1.x × 2^e), ties to even, with
// subnormals below 2^emin and infinity on overflow.
func refNarrow(f float32, prec uint, emin, emax int) float64 {
	x := big.NewFloat(float64(f))
	if x.Sign() == 0 {
		return float64(f)
	}
	e := x.MantExp(nil) - 1 // f = 1.x × 2^e
	p := int(prec)
	if e < emin {
		p -= emin - e // fewer significand bits in the subnormal range
	}
	var out float64
	if p <= 0 {
		// Below half the smallest subnormal, or exactly half (ties to even 0).
		if tiny := math.Ldexp(1, emin-int(prec)+1); p == 0 && math.Abs(float64(f)) > tiny/2 {
			out = tiny
		}
	} else {
		out, _ = new(big.Float).SetMode(big.ToNearestEven).SetPrec(uint(p)).Abs(x).Float64()
	}
	if out >= math.Ldexp(1, emax+1) {
		out = math.Inf(1)
	}
	return math.Copysign(out, float64(f))
}
