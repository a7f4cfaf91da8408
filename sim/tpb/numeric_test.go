package tpb

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/isa"
)

func TestBF16RoundTripAll(t *testing.T) {
	for h := range 1 << 16 {
		require.Equal(t, uint16(h), ToBF16(FromBF16(uint16(h))), "bf16 %#04x", h)
	}
}

func TestFP16RoundTripAll(t *testing.T) {
	for h := range 1 << 16 {
		require.Equal(t, uint16(h), ToFP16(FromFP16(uint16(h))), "fp16 %#04x", h)
	}
}

// isFP8NaN says which codes are NaN per format.
func isFP8NaN(d isa.Dtype, b uint8) bool {
	m := b & 0x7F
	switch d {
	case isa.FP8E4M3:
		return m > 0x78
	case isa.FP8E5M2:
		return m > 0x7C
	case isa.FP8E4M3FN:
		return m == 0x7F
	}
	return b == 0xFF // e8m0
}

func TestFP8RoundTripAll(t *testing.T) {
	for _, d := range []isa.Dtype{isa.FP8E4M3, isa.FP8E5M2, isa.FP8E4M3FN, isa.FP8E8M0} {
		t.Run(d.String(), func(t *testing.T) {
			for b := range 256 {
				v := FromFP8(d, uint8(b))
				if isFP8NaN(d, uint8(b)) {
					require.True(t, v != v, "%#02x should be NaN, is %v", b, v)
					require.True(t, isFP8NaN(d, ToFP8(d, v)), "NaN %#02x re-encodes to a number", b)
					continue
				}
				require.False(t, v != v, "%#02x", b)
				require.Equal(t, uint8(b), ToFP8(d, v), "%#02x = %v", b, v)
			}
		})
	}
}

func TestFP8Landmarks(t *testing.T) {
	tests := []struct {
		d    isa.Dtype
		code uint8
		want float32
	}{
		{isa.FP8E4M3, 0x77, 240}, {isa.FP8E4M3, 0x01, 1.0 / 512}, {isa.FP8E4M3, 0x38, 1},
		{isa.FP8E4M3, 0x78, float32(math.Inf(1))}, {isa.FP8E4M3, 0xF8, float32(math.Inf(-1))},
		{isa.FP8E5M2, 0x7B, 57344}, {isa.FP8E5M2, 0x01, 1.0 / 65536}, {isa.FP8E5M2, 0x7C, float32(math.Inf(1))},
		{isa.FP8E4M3FN, 0x7E, 448}, {isa.FP8E4M3FN, 0x78, 256}, {isa.FP8E4M3FN, 0x01, 1.0 / 512},
		{isa.FP8E8M0, 127, 1}, {isa.FP8E8M0, 254, float32(math.Ldexp(1, 127))}, {isa.FP8E8M0, 0, float32(math.Ldexp(1, -127))},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, FromFP8(tc.d, tc.code), "%s %#02x", tc.d, tc.code)
	}
	// Overflow policies.
	assert.Equal(t, uint8(0x77), ToFP8(isa.FP8E4M3, 1000), "legacy e4m3 saturates")
	assert.Equal(t, uint8(0xF7), ToFP8(isa.FP8E4M3, -1e30))
	assert.Equal(t, uint8(0x78), ToFP8(isa.FP8E4M3, float32(math.Inf(1))))
	assert.Equal(t, uint8(0x7E), ToFP8(isa.FP8E4M3FN, 1000), "e4m3fn saturates")
	assert.Equal(t, uint8(0x7F), ToFP8(isa.FP8E4M3FN, float32(math.Inf(1))), "e4m3fn: inf is NaN")
	assert.Equal(t, uint8(0x7C), ToFP8(isa.FP8E5M2, 1e6), "e5m2 overflows to inf")
	assert.Equal(t, uint8(0x7B), ToFP8(isa.FP8E5M2, 61439), "below the midpoint to inf")
	assert.Equal(t, uint8(0x7C), ToFP8(isa.FP8E5M2, 61440), "the midpoint ties to inf (even)")
	assert.Equal(t, uint8(0), ToFP8(isa.FP8E8M0, -3))
	assert.Equal(t, uint8(128), ToFP8(isa.FP8E8M0, 3), "1.5·2 ties to the even code 128")
	assert.Equal(t, uint8(128), ToFP8(isa.FP8E8M0, 1.5), "1.5 ties to 128 (even)")
	assert.Equal(t, uint8(127), ToFP8(isa.FP8E8M0, 1.4))
	assert.Equal(t, uint8(0xFF), ToFP8(isa.FP8E8M0, float32(math.Inf(1))))
	assert.Equal(t, uint8(0), ToFP8(isa.FP32, 1), "not an fp8 dtype")
	assert.Equal(t, float32(0), FromFP8(isa.BF16, 1))
}

func TestBF16TiesToEven(t *testing.T) {
	tests := []struct {
		in   uint32
		want uint16
	}{
		{0x3F80_8000, 0x3F80}, // halfway, 0x3F80 even
		{0x3F81_8000, 0x3F82}, // halfway, up to even
		{0x3F80_8001, 0x3F81}, // above half
		{0x3F80_7FFF, 0x3F80}, // below half
		{0xBF80_8000, 0xBF80}, // negative tie
		{0xBF81_8000, 0xBF82},
		{0x7F7F_7FFF, 0x7F7F}, // largest that stays finite
		{0x7F7F_8000, 0x7F80}, // max finite rounds (tie, odd) to inf
		{0x7F7F_FFFF, 0x7F80},
		{0x0000_8000, 0x0000}, // subnormal tie to even zero
		{0x0001_8000, 0x0002},
		{0x8000_0000, 0x8000}, // −0
		{0x7F80_0000, 0x7F80}, // inf
		{0x7FC0_0000, 0x7FC0}, // qNaN
		{0x7F80_0001, 0x7FC0}, // NaN with only low payload stays NaN
		{0xFFA0_0000, 0xFFA0}, // signalling NaN payload kept
		{0x3F7F_FFFF, 0x3F80}, // carries into the exponent
		{0x4049_0FDB, 0x4049}, // π
		{0x4049_8000, 0x404A}, // tie, odd → up
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, ToBF16(math.Float32frombits(tc.in)), "%#08x", tc.in)
	}
}

func TestTF32(t *testing.T) {
	tests := []struct{ in, want uint32 }{
		{0x3F80_1000, 0x3F80_0000}, // tie to even
		{0x3F80_3000, 0x3F80_4000}, // tie, odd → up
		{0x3F80_1001, 0x3F80_2000},
		{0x3F80_0FFF, 0x3F80_0000},
		{0x7F7F_FFFF, 0x7F80_0000},
		{0x7F80_0001, 0x7FC0_0000},
		{0xFFC0_0000, 0xFFC0_0000},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, math.Float32bits(ToTF32(math.Float32frombits(tc.in))), "%#08x", tc.in)
	}
}

// refFormat is a brute-force reference rounding: the finite non-negative
// codes in order, plus the overflow code for formats that overflow to inf.
type refFormat struct {
	vals     []float64
	codes    []uint32
	sign     uint32
	saturate bool
	infCode  uint32
}

func newRef(decode func(uint32) float32, maxCode, sign, infCode uint32, saturate bool) *refFormat {
	r := &refFormat{sign: sign, saturate: saturate, infCode: infCode}
	for c := uint32(0); c <= maxCode; c++ {
		r.vals, r.codes = append(r.vals, float64(decode(c))), append(r.codes, c)
	}
	if !saturate {
		// The value one ulp above max (2^(emax+1)) stands for inf.
		top, prev := r.vals[len(r.vals)-1], r.vals[len(r.vals)-2]
		r.vals, r.codes = append(r.vals, top+(top-prev)), append(r.codes, infCode)
	}
	if !sort.Float64sAreSorted(r.vals) {
		panic("reference values not sorted")
	}
	return r
}

// round returns the code nearest to x, ties to the even code.
func (r *refFormat) round(x float32) uint32 {
	a, sign := math.Abs(float64(x)), uint32(0)
	if math.Signbit(float64(x)) {
		sign = r.sign
	}
	i := sort.SearchFloat64s(r.vals, a)
	var code uint32
	switch {
	case i == len(r.vals):
		code = r.codes[len(r.codes)-1]
		if !r.saturate {
			code = r.infCode
		}
	case r.vals[i] == a:
		code = r.codes[i]
	case i == 0:
		code = r.codes[0]
	default:
		lo, hi := a-r.vals[i-1], r.vals[i]-a
		switch {
		case lo < hi:
			code = r.codes[i-1]
		case hi < lo:
			code = r.codes[i]
		case r.codes[i-1]&1 == 0:
			code = r.codes[i-1]
		default:
			code = r.codes[i]
		}
	}
	return sign | code
}

func TestRoundingAgainstBruteForce(t *testing.T) {
	formats := []struct {
		name   string
		ref    *refFormat
		encode func(float32) uint32
	}{
		{"bf16", newRef(func(c uint32) float32 { return FromBF16(uint16(c)) }, 0x7F7F, 0x8000, 0x7F80, false),
			func(f float32) uint32 { return uint32(ToBF16(f)) }},
		{"fp16", newRef(func(c uint32) float32 { return FromFP16(uint16(c)) }, 0x7BFF, 0x8000, 0x7C00, false),
			func(f float32) uint32 { return uint32(ToFP16(f)) }},
		{"e5m2", newRef(func(c uint32) float32 { return FromFP8(isa.FP8E5M2, uint8(c)) }, 0x7B, 0x80, 0x7C, false),
			func(f float32) uint32 { return uint32(ToFP8(isa.FP8E5M2, f)) }},
		{"e4m3", newRef(func(c uint32) float32 { return FromFP8(isa.FP8E4M3, uint8(c)) }, 0x77, 0x80, 0, true),
			func(f float32) uint32 { return uint32(ToFP8(isa.FP8E4M3, f)) }},
		{"e4m3fn", newRef(func(c uint32) float32 { return FromFP8(isa.FP8E4M3FN, uint8(c)) }, 0x7E, 0x80, 0, true),
			func(f float32) uint32 { return uint32(ToFP8(isa.FP8E4M3FN, f)) }},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			check := func(x float32) {
				require.Equal(t, f.ref.round(x), f.encode(x), "%s(%g = %#08x)", f.name, x, math.Float32bits(x))
			}
			// Every midpoint between neighbours, and one fp32 ulp either side.
			for i := 1; i < len(f.ref.vals); i++ {
				mid := float32((f.ref.vals[i-1] + f.ref.vals[i]) / 2)
				for _, x := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1)))} {
					check(x)
					check(-x)
				}
			}
			// Random finite fp32 values.
			for range 200_000 {
				x := math.Float32frombits(rng.Uint32())
				if x != x || math.IsInf(float64(x), 0) {
					continue
				}
				check(x)
			}
		})
	}
}

func TestIntegerConversions(t *testing.T) {
	big19 := uint64(float32(1e19)) // 9999999980506447872, above MaxInt64
	tests := []struct {
		d    isa.Dtype
		in   float32
		want int64
	}{
		{isa.Int8, 127.9, 127}, {isa.Int8, 1000, 127}, {isa.Int8, -1000, -128}, {isa.Int8, -1.9, -1},
		{isa.Uint8, -5, 0}, {isa.Uint8, 255.5, 255}, {isa.Uint8, 300, 255},
		{isa.Int16, 40000, 32767}, {isa.Uint16, 70000, 65535},
		{isa.Int32, 3e9, math.MaxInt32}, {isa.Int32, -3e9, math.MinInt32}, {isa.Uint32, 5e9, math.MaxUint32},
		{isa.Int64, 1e19, math.MaxInt64}, {isa.Int64, -1e19, math.MinInt64},
		{isa.Uint64, 1e20, -1}, {isa.Uint64, 1e19, int64(big19)}, {isa.Uint64, -1, 0},
		{isa.Int32, float32(math.NaN()), 0},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, f32ToInt(tc.d, tc.in), "%s(%v)", tc.d, tc.in)
	}
	assert.Equal(t, int64(127), intToInt(isa.Int8, 300, false))
	assert.Equal(t, int64(-128), intToInt(isa.Int8, -300, false))
	assert.Equal(t, int64(math.MaxInt32), intToInt(isa.Int32, -1, true), "a huge uint64")
	assert.Equal(t, int64(-1), intToInt(isa.Uint64, -1, true))
	assert.Equal(t, int64(0), intToInt(isa.Uint64, -1, false))
	assert.Equal(t, int64(-1), wrapInt(isa.Int8, 255))
	assert.Equal(t, int64(255), wrapInt(isa.Uint8, 255))
	assert.Equal(t, int64(0), wrapInt(isa.Uint16, 1<<16))
	assert.Equal(t, float32(1<<63), intToF32(math.MinInt64, true))
	assert.Equal(t, float32(16777216), intToF32(16777217, false), "ties to even")
}

func TestElementCodecs(t *testing.T) {
	b := make([]byte, 8)
	for _, d := range []isa.Dtype{isa.FP32, isa.TF32, isa.BF16, isa.FP16, isa.FP8E4M3, isa.FP8E5M2, isa.FP8E4M3FN,
		isa.Int8, isa.Int16, isa.Int32, isa.Uint8, isa.Uint16, isa.Uint32, isa.Int64, isa.Uint64} {
		for _, v := range []float32{0, 1, -2, 3.5, 96} {
			if isInt(d) && v != float32(int(v)) {
				continue
			}
			if isUnsigned(d) && v < 0 {
				continue
			}
			storeF32(d, v, b)
			assert.Equal(t, v, loadF32(d, b), "%s %v", d, v)
		}
	}
	storeF32(isa.TF32, math.Float32frombits(0x3F80_1FFF), b)
	assert.Equal(t, uint32(0x3F80_2000), math.Float32bits(loadF32(isa.TF32, b)))
	assert.Equal(t, float32(0), loadF32(isa.FP8E5M2x4, b), "packed types are not computed on")
}
