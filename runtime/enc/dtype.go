package enc

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Dtype is the element type of a collective's data (nccom-test's -d).
type Dtype uint8

// The data types.
const (
	Float32  Dtype = iota + 1 // IEEE binary32
	BFloat16                  // bfloat16: the upper half of a binary32
	Float16                   // IEEE binary16
	Int32                     // two's complement, wrapping
	Uint32                    // wrapping
	Int8                      // two's complement, wrapping
	Uint8                     // wrapping
	Uint16                    // wrapping
	Int16                     // two's complement, wrapping
)

var dtypeNames = [...]string{
	Float32: "fp32", BFloat16: "bf16", Float16: "fp16",
	Int32: "int32", Uint32: "uint32", Int8: "int8", Uint8: "uint8", Uint16: "uint16", Int16: "int16",
}

var dtypeSizes = [...]int{
	Float32: 4, BFloat16: 2, Float16: 2,
	Int32: 4, Uint32: 4, Int8: 1, Uint8: 1, Uint16: 2, Int16: 2,
}

var dtypeAliases = map[string]Dtype{"float32": Float32, "bfloat16": BFloat16, "float16": Float16}

// ParseDtype reads a data type name as nccom-test spells it (fp32, bf16,
// fp16, int32, uint32, int8, uint8, int16, uint16) or the long float names
// float32, bfloat16, float16 (case and surrounding space ignored). An unknown
// word gives an error that wraps ErrUnknownDtype and lists the accepted words.
func ParseDtype(s string) (Dtype, error) {
	w := units.Word(s)
	for d, name := range dtypeNames {
		if d != 0 && w == name {
			return Dtype(d), nil
		}
	}
	if d, ok := dtypeAliases[w]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("enc: %w %q (accepted: %s, float32, bfloat16, float16)", ErrUnknownDtype, s, strings.Join(dtypeNames[1:], ", "))
}

func (d Dtype) valid() bool { return d >= Float32 && d <= Int16 }

// Size returns the element size in bytes (0 for an unknown Dtype).
func (d Dtype) Size() int {
	if d.valid() {
		return dtypeSizes[d]
	}
	return 0
}

// String returns the nccom-test name ("fp32", "bf16", …); "Dtype(n)" for
// other values.
func (d Dtype) String() string {
	if d.valid() {
		return dtypeNames[d]
	}
	return fmt.Sprintf("Dtype(%d)", uint8(d))
}

// float reports whether d is a floating-point type.
func (d Dtype) float() bool { return d == Float32 || d == BFloat16 || d == Float16 }

// Tolerance is the relative error Verify allows in a reduced element of a
// floating type over ranks ranks, relative to the sum of the magnitudes of
// the summed inputs: 1e-5·r for fp32, 2^-7·r for bf16 (the 16-bit rounding of
// every partial sum), 2^-10·r for fp16. It is 0 (exact) for integer types.
func (d Dtype) Tolerance(ranks int) float64 {
	r := float64(max(ranks, 1))
	switch d {
	case Float32:
		return 1e-5 * r
	case BFloat16:
		return r / (1 << 7)
	case Float16:
		return r / (1 << 10)
	}
	return 0
}

// Reduce sums src into dst elementwise (dst[i] = dst[i] + src[i]), both
// little-endian arrays of d. fp32 adds in float32 arithmetic; bf16 and fp16
// add in float32 and round to nearest-even back to 16 bits (a NaN stays a
// NaN); integers wrap. It fails, changing nothing, for an unknown d and when
// the lengths differ or are not a multiple of d.Size().
func Reduce(d Dtype, dst, src []byte) error {
	if !d.valid() {
		return fmt.Errorf("enc: reduce: %w: %v", ErrUnknownDtype, d)
	}
	if len(dst) != len(src) || len(dst)%d.Size() != 0 {
		return fmt.Errorf("enc: reduce %v: lengths %d and %d must be equal multiples of %d: %w", d, len(dst), len(src), d.Size(), ErrBadBuffers)
	}
	le := binary.LittleEndian
	switch d {
	case Float32:
		for i := 0; i < len(dst); i += 4 {
			a := math.Float32frombits(le.Uint32(dst[i:]))
			b := math.Float32frombits(le.Uint32(src[i:]))
			le.PutUint32(dst[i:], math.Float32bits(a+b))
		}
	case BFloat16, Float16:
		to32, from32 := bf16ToF32, f32ToBF16
		if d == Float16 {
			to32, from32 = f16ToF32, f32ToF16
		}
		for i := 0; i < len(dst); i += 2 {
			le.PutUint16(dst[i:], from32(to32(le.Uint16(dst[i:]))+to32(le.Uint16(src[i:]))))
		}
	case Int8, Uint8:
		for i := range dst {
			dst[i] += src[i]
		}
	case Int16, Uint16:
		for i := 0; i < len(dst); i += 2 {
			le.PutUint16(dst[i:], le.Uint16(dst[i:])+le.Uint16(src[i:]))
		}
	case Int32, Uint32:
		for i := 0; i < len(dst); i += 4 {
			le.PutUint32(dst[i:], le.Uint32(dst[i:])+le.Uint32(src[i:]))
		}
	}
	return nil
}

// bf16ToF32 widens a bfloat16 exactly.
func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f32ToBF16 rounds to the nearest bfloat16, ties to even; NaNs stay NaNs
// (made quiet).
func f32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x0040
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// f16ToF32 widens an IEEE binary16 exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0: // zero or subnormal: mant × 2^-24
		v := float32(mant) / (1 << 24)
		return math.Float32frombits(math.Float32bits(v) | sign)
	case 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// f32ToF16 rounds to the nearest IEEE binary16, ties to even; overflow gives
// infinity, NaNs stay NaNs (made quiet).
func f32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	exp := int(u>>23) & 0xff
	mant := u & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // binary16 biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal binary16 (or zero): the value is m × 2^(exp−150) with the
		// implicit bit in m, and a binary16 subnormal counts units of 2^-24.
		shift := uint(126 - exp)
		if shift > 24 {
			return sign
		}
		m := mant | 0x800000
		h := m >> shift
		rem := m & (1<<shift - 1)
		if half := uint32(1) << (shift - 1); rem > half || rem == half && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // may carry into the exponent, up to infinity
	}
	return sign | uint16(h)
}

// toFloat64 reads element i of a little-endian array of floating type d.
func toFloat64(d Dtype, b []byte, i int) float64 {
	le := binary.LittleEndian
	switch d {
	case Float32:
		return float64(math.Float32frombits(le.Uint32(b[4*i:])))
	case BFloat16:
		return float64(bf16ToF32(le.Uint16(b[2*i:])))
	case Float16:
		return float64(f16ToF32(le.Uint16(b[2*i:])))
	}
	return 0
}

// toFloat32 is toFloat64 for the float32 reference sums.
func toFloat32(d Dtype, b []byte, i int) float32 { return float32(toFloat64(d, b, i)) }

// putFloat32 stores v as element i of an array of floating type d, rounding
// to nearest-even for the 16-bit types.
func putFloat32(d Dtype, b []byte, i int, v float32) {
	le := binary.LittleEndian
	switch d {
	case Float32:
		le.PutUint32(b[4*i:], math.Float32bits(v))
	case BFloat16:
		le.PutUint16(b[2*i:], f32ToBF16(v))
	case Float16:
		le.PutUint16(b[2*i:], f32ToF16(v))
	}
}

// PutFloat stores v as element i of a little-endian array of floating type
// d (fp32, bf16 or fp16, rounded to nearest-even); other types are left
// alone.
func PutFloat(d Dtype, b []byte, i int, v float32) { putFloat32(d, b, i, v) }
