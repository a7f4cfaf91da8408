package tpb

import (
	"encoding/binary"
	"math"

	"github.com/neuronsim/neuronsim/hw/isa"
)

// Number formats of the engines (docs/isa.md "What each executed opcode
// computes"). Arithmetic is fp32; these convert between fp32 and the stored
// dtypes. Narrowing float conversions round to nearest, ties to even.
//
// Format choices:
//   - bf16, fp16, tf32: IEEE-like; overflow gives ±inf; NaNs stay NaN and
//     keep as much payload as fits (so every bf16 and fp16 value round-trips
//     through fp32 bit for bit).
//   - fp8_e5m2: IEEE-like (bias 15, max 57344, inf 0x7C, NaN 0x7D..0x7F).
//   - fp8_e4m3 (legacy, the Trn1 "cFP8"): IEEE-like layout, bias 7, max
//     finite 240 (0x77); 0x78 is ±inf and 0x79..0x7F NaN. It has no inf in
//     arithmetic: a finite value beyond 240 saturates to ±240; only an
//     infinite input gives the inf code.
//   - fp8_e4m3fn (OCP): bias 7, max 448 (0x7E), no inf, NaN = S.1111.111;
//     finite overflow saturates to ±448 and ±inf becomes NaN.
//   - fp8_e8m0 (MX scale, unsigned): 2^(e−127), 0xFF NaN; a value rounds to
//     the nearest power of two (ties to the even code), ≤ 2^−127 (and zero
//     or negative values) to code 0, overflow saturates to 2^127, inf and
//     NaN give 0xFF.
//   - integers: truncation toward zero with saturation; NaN gives 0.
//   - tf32 is stored as an fp32 word with the low 13 mantissa bits 0; a
//     read takes the stored word as is.

// ToBF16 converts f to bf16 with round-to-nearest-even.
func ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7FFF_FFFF > 0x7F80_0000 { // NaN: keep the top payload, stay a NaN
		h := uint16(b >> 16)
		if h&0x7F == 0 {
			h |= 0x40
		}
		return h
	}
	return uint16((b + 0x7FFF + (b>>16)&1) >> 16)
}

// FromBF16 converts a bf16 value to fp32 (exact).
func FromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// ToTF32 rounds f to tf32 (10 mantissa bits, round-to-nearest-even) and
// returns it as the fp32 value tf32 is stored as.
func ToTF32(f float32) float32 {
	b := math.Float32bits(f)
	if b&0x7FFF_FFFF > 0x7F80_0000 {
		b &^= 0x1FFF
		if b&0x7F_FFFF == 0 {
			b |= 0x40_0000
		}
		return math.Float32frombits(b)
	}
	return math.Float32frombits((b + 0xFFF + (b>>13)&1) &^ 0x1FFF)
}

// smallFloat describes a float format narrower than fp32 (fp16 and the fp8
// formats), by magnitude codes (the sign is the top bit).
type smallFloat struct {
	man      uint   // mantissa bits
	bias     int    // exponent bias
	maxCode  uint64 // largest finite magnitude
	infCode  uint32 // magnitude of ±inf; 0: the format has none
	nanCode  uint32 // magnitude of the NaN conversions produce
	signBit  uint32
	saturate bool // finite overflow gives ±max (else ±inf)
	ieee     bool // the all-ones exponent is inf/NaN (else only nanCode is NaN)
}

var (
	fmtFP16   = smallFloat{man: 10, bias: 15, maxCode: 0x7BFF, infCode: 0x7C00, nanCode: 0x7E00, signBit: 0x8000, ieee: true}
	fmtE5M2   = smallFloat{man: 2, bias: 15, maxCode: 0x7B, infCode: 0x7C, nanCode: 0x7E, signBit: 0x80, ieee: true}
	fmtE4M3   = smallFloat{man: 3, bias: 7, maxCode: 0x77, infCode: 0x78, nanCode: 0x7F, signBit: 0x80, ieee: true, saturate: true}
	fmtE4M3FN = smallFloat{man: 3, bias: 7, maxCode: 0x7E, nanCode: 0x7F, signBit: 0x80, saturate: true}
)

// rne shifts v right by s bits, rounding to nearest, ties to even.
func rne(v uint64, s uint) uint64 {
	if s == 0 {
		return v
	}
	q, r, half := v>>s, v&(1<<s-1), uint64(1)<<(s-1)
	if r > half || (r == half && q&1 == 1) {
		q++
	}
	return q
}

// encode converts f to the format with round-to-nearest-even.
func (sf *smallFloat) encode(f float32) uint32 {
	b := math.Float32bits(f)
	var sign uint32
	if b>>31 != 0 {
		sign = sf.signBit
	}
	a := b & 0x7FFF_FFFF
	switch {
	case a > 0x7F80_0000: // NaN
		if p := (a & 0x7F_FFFF) >> (23 - sf.man); sf.ieee && p != 0 {
			return sign | sf.infCode | p
		}
		return sign | sf.nanCode
	case a == 0x7F80_0000:
		if sf.infCode != 0 {
			return sign | sf.infCode
		}
		return sign | sf.nanCode
	case a < 0x0080_0000: // zero or an fp32 subnormal: far below every target's smallest subnormal
		return sign
	}
	full := uint64(a&0x7F_FFFF | 1<<23) // 24-bit significand
	te := int(a>>23) - 127 + sf.bias    // target biased exponent
	var code uint64
	if te >= 1 {
		code = uint64(te-1)<<sf.man + rne(full, 23-sf.man)
	} else if s := int(23-sf.man) + 1 - te; s <= 40 {
		code = rne(full, uint(s)) // a subnormal; a carry makes it the smallest normal
	}
	if code > sf.maxCode {
		if sf.saturate {
			code = sf.maxCode
		} else {
			code = uint64(sf.infCode)
		}
	}
	return sign | uint32(code)
}

// decode converts a code of the format to fp32 (exact).
func (sf *smallFloat) decode(c uint32) float32 {
	var sign uint32
	if c&sf.signBit != 0 {
		sign = 1 << 31
	}
	m := c &^ sf.signBit
	manMask := uint32(1)<<sf.man - 1
	exp, mant := int(m>>sf.man), m&manMask
	if sf.ieee && exp == int(sf.infCode>>sf.man) {
		return math.Float32frombits(sign | 0x7F80_0000 | mant<<(23-sf.man))
	}
	if !sf.ieee && m == sf.nanCode {
		return math.Float32frombits(sign | 0x7FC0_0000 | mant<<(23-sf.man))
	}
	var v float32
	if exp == 0 {
		v = float32(mant) * pow2(1-sf.bias-int(sf.man))
	} else {
		v = float32(mant|(manMask+1)) * pow2(exp-sf.bias-int(sf.man))
	}
	return math.Float32frombits(sign | math.Float32bits(v))
}

// pow2 returns 2^k for k in the normal fp32 range.
func pow2(k int) float32 { return math.Float32frombits(uint32(k+127) << 23) }

// ToFP16 converts f to fp16 with round-to-nearest-even.
func ToFP16(f float32) uint16 { return uint16(fmtFP16.encode(f)) }

// FromFP16 converts an fp16 value to fp32 (exact).
func FromFP16(h uint16) float32 { return fmtFP16.decode(uint32(h)) }

// fp8Tables holds the fp32 value of every fp8 code, per format.
var fp8Tables = func() (t [4][256]float32) {
	for i := range 256 {
		t[0][i] = fmtE4M3.decode(uint32(i))
		t[1][i] = fmtE5M2.decode(uint32(i))
		t[2][i] = fmtE4M3FN.decode(uint32(i))
		t[3][i] = fromE8M0(uint8(i))
	}
	return t
}()

func fp8Index(d isa.Dtype) int {
	switch d {
	case isa.FP8E4M3:
		return 0
	case isa.FP8E5M2:
		return 1
	case isa.FP8E4M3FN:
		return 2
	case isa.FP8E8M0:
		return 3
	}
	return -1
}

// ToFP8 converts f to the fp8 dtype d (fp8_e4m3, fp8_e5m2, fp8_e4m3fn or
// fp8_e8m0) with round-to-nearest-even; any other dtype gives 0.
func ToFP8(d isa.Dtype, f float32) uint8 {
	switch d {
	case isa.FP8E4M3:
		return uint8(fmtE4M3.encode(f))
	case isa.FP8E5M2:
		return uint8(fmtE5M2.encode(f))
	case isa.FP8E4M3FN:
		return uint8(fmtE4M3FN.encode(f))
	case isa.FP8E8M0:
		return toE8M0(f)
	}
	return 0
}

// FromFP8 converts an fp8 code of dtype d to fp32 (exact); any other dtype
// gives 0.
func FromFP8(d isa.Dtype, b uint8) float32 {
	if i := fp8Index(d); i >= 0 {
		return fp8Tables[i][b]
	}
	return 0
}

func fromE8M0(b uint8) float32 {
	if b == 0xFF {
		return float32(math.NaN())
	}
	if b == 0 {
		return math.Float32frombits(0x40_0000) // 2^-127, an fp32 subnormal
	}
	return math.Float32frombits(uint32(b) << 23)
}

func toE8M0(f float32) uint8 {
	b := math.Float32bits(f)
	switch {
	case b&0x7FFF_FFFF >= 0x7F80_0000: // inf or NaN
		return 0xFF
	case b>>31 != 0 || b <= 0x40_0000: // negative, zero, ≤ 2^-127
		return 0
	case b < 0x80_0000: // subnormal between 2^-127 (code 0) and 2^-126 (code 1); the tie goes to code 0
		if b > 0x60_0000 {
			return 1
		}
		return 0
	}
	e, m := b>>23, b&0x7F_FFFF
	if m > 0x40_0000 || (m == 0x40_0000 && e&1 == 1) {
		e++
	}
	if e > 254 {
		e = 254
	}
	return uint8(e)
}

// Integer ranges.
func intRange(d isa.Dtype) (lo, hi int64) {
	switch d {
	case isa.Int8:
		return math.MinInt8, math.MaxInt8
	case isa.Int16:
		return math.MinInt16, math.MaxInt16
	case isa.Int32:
		return math.MinInt32, math.MaxInt32
	case isa.Uint8:
		return 0, math.MaxUint8
	case isa.Uint16:
		return 0, math.MaxUint16
	case isa.Uint32:
		return 0, math.MaxUint32
	case isa.Uint64:
		return 0, math.MaxInt64 // values above are handled by the caller
	}
	return math.MinInt64, math.MaxInt64
}

// isInt reports whether d is an integer dtype.
func isInt(d isa.Dtype) bool {
	return (d >= isa.Int8 && d <= isa.Uint32) || d == isa.Int64 || d == isa.Uint64
}

// isUnsigned reports whether d is an unsigned integer dtype.
func isUnsigned(d isa.Dtype) bool {
	return d == isa.Uint8 || d == isa.Uint16 || d == isa.Uint32 || d == isa.Uint64
}

// f32ToInt converts with truncation toward zero and saturation; NaN gives 0.
// The result is the stored bit pattern (uint64 values above MaxInt64 come
// back as their two's-complement int64).
func f32ToInt(d isa.Dtype, f float32) int64 {
	if f != f {
		return 0
	}
	t := math.Trunc(float64(f))
	if d == isa.Uint64 {
		switch {
		case t <= 0:
			return 0
		case t >= 1<<64:
			return -1 // MaxUint64
		}
		return int64(uint64(t))
	}
	lo, hi := intRange(d)
	switch {
	case t <= float64(lo):
		return lo
	case t >= float64(hi):
		return hi
	}
	return int64(t)
}

// intToInt saturates v (of a source whose values above MaxInt64 are
// unsigned when u64) into d.
func intToInt(d isa.Dtype, v int64, u64 bool) int64 {
	if u64 && v < 0 { // a uint64 above MaxInt64
		if d == isa.Uint64 {
			return v
		}
		_, hi := intRange(d)
		return hi
	}
	if d == isa.Uint64 {
		return max(v, 0)
	}
	lo, hi := intRange(d)
	return min(max(v, lo), hi)
}

// intToF32 converts an integer value (unsigned 64-bit when u64) to fp32,
// rounding to nearest even.
func intToF32(v int64, u64 bool) float32 {
	if u64 {
		return float32(uint64(v))
	}
	return float32(v)
}

// wrapInt truncates v to d's width and sign- or zero-extends it back: the
// result of a wrapping integer operation in d.
func wrapInt(d isa.Dtype, v uint64) int64 {
	switch d {
	case isa.Int8:
		return int64(int8(v))
	case isa.Int16:
		return int64(int16(v))
	case isa.Int32:
		return int64(int32(v))
	case isa.Uint8:
		return int64(uint8(v))
	case isa.Uint16:
		return int64(uint16(v))
	case isa.Uint32:
		return int64(uint32(v))
	}
	return int64(v)
}

// loadF32 reads one element of dtype d at b and converts it to fp32.
func loadF32(d isa.Dtype, b []byte) float32 {
	le := binary.LittleEndian
	switch d {
	case isa.FP32, isa.TF32:
		return math.Float32frombits(le.Uint32(b))
	case isa.BF16:
		return FromBF16(le.Uint16(b))
	case isa.FP16:
		return FromFP16(le.Uint16(b))
	case isa.FP8E4M3:
		return fp8Tables[0][b[0]]
	case isa.FP8E5M2:
		return fp8Tables[1][b[0]]
	case isa.FP8E4M3FN:
		return fp8Tables[2][b[0]]
	case isa.FP8E8M0:
		return fp8Tables[3][b[0]]
	case isa.Uint64:
		return float32(le.Uint64(b))
	}
	if isInt(d) {
		return float32(loadInt(d, b))
	}
	return 0 // packed: never computed on
}

// storeF32 converts v to dtype d and writes it at b.
func storeF32(d isa.Dtype, v float32, b []byte) {
	le := binary.LittleEndian
	switch d {
	case isa.FP32:
		le.PutUint32(b, math.Float32bits(v))
	case isa.TF32:
		le.PutUint32(b, math.Float32bits(ToTF32(v)))
	case isa.BF16:
		le.PutUint16(b, ToBF16(v))
	case isa.FP16:
		le.PutUint16(b, ToFP16(v))
	case isa.FP8E4M3, isa.FP8E5M2, isa.FP8E4M3FN, isa.FP8E8M0:
		b[0] = ToFP8(d, v)
	default:
		if isInt(d) {
			putInt(d, f32ToInt(d, v), b)
		}
	}
}

// loadInt reads an integer element, sign- or zero-extended (a uint64 comes
// back as its bit pattern).
func loadInt(d isa.Dtype, b []byte) int64 {
	le := binary.LittleEndian
	switch d {
	case isa.Int8:
		return int64(int8(b[0]))
	case isa.Uint8:
		return int64(b[0])
	case isa.Int16:
		return int64(int16(le.Uint16(b)))
	case isa.Uint16:
		return int64(le.Uint16(b))
	case isa.Int32:
		return int64(int32(le.Uint32(b)))
	case isa.Uint32:
		return int64(le.Uint32(b))
	case isa.Int64, isa.Uint64:
		return int64(le.Uint64(b))
	}
	return 0
}

// putInt writes the low bytes of v as an element of integer dtype d.
func putInt(d isa.Dtype, v int64, b []byte) {
	le := binary.LittleEndian
	switch d.Size() {
	case 1:
		b[0] = byte(v)
	case 2:
		le.PutUint16(b, uint16(v))
	case 4:
		le.PutUint32(b, uint32(v))
	case 8:
		le.PutUint64(b, uint64(v))
	}
}
