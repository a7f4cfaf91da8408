package isa

import (
	"fmt"
	"strings"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Dtype is an element type code (byte 4 of a tensor descriptor).
type Dtype uint8

// The dtypes (trainium-facts §7). Packed ×4 types hold four elements in one
// byte-sized (fp8 ×4: 4 bytes; fp4 ×4: 2 bytes) unit.
const (
	DtypeInvalid Dtype = iota
	Int8               // all
	Int16              // all
	Int32              // all
	Uint8              // all
	Uint16             // all
	Uint32             // all
	FP16               // all
	BF16               // all
	TF32               // all (stored in 4 bytes)
	FP32               // all
	FP8E4M3            // all (legacy e4m3, the "cFP8" of Trn1)
	FP8E5M2            // all
	FP8E4M3FN          // mariana (OCP)
	FP8E8M0            // mariana (MX scale)
	FP8E5M2x4          // mariana (MX, 4 packed)
	FP8E4M3FNx4        // mariana (MX, 4 packed)
	FP4E2M1FNx4        // mariana (MX, 4 packed fp4)
	Int64              // cayman and mariana (64-bit types are gated)
	Uint64             // cayman and mariana
	NumDtypes
)

var dtypeInfo = [NumDtypes]struct {
	name  string
	size  int // bytes per stored unit
	since hwarch.Generation
}{
	{"invalid", 0, hwarch.NumGenerations},
	{"int8", 1, hwarch.Sunda}, {"int16", 2, hwarch.Sunda}, {"int32", 4, hwarch.Sunda},
	{"uint8", 1, hwarch.Sunda}, {"uint16", 2, hwarch.Sunda}, {"uint32", 4, hwarch.Sunda},
	{"fp16", 2, hwarch.Sunda}, {"bf16", 2, hwarch.Sunda}, {"tf32", 4, hwarch.Sunda}, {"fp32", 4, hwarch.Sunda},
	{"fp8_e4m3", 1, hwarch.Sunda}, {"fp8_e5m2", 1, hwarch.Sunda},
	{"fp8_e4m3fn", 1, hwarch.Mariana}, {"fp8_e8m0", 1, hwarch.Mariana},
	{"fp8_e5m2_x4", 4, hwarch.Mariana}, {"fp8_e4m3fn_x4", 4, hwarch.Mariana}, {"fp4_e2m1fn_x4", 2, hwarch.Mariana},
	{"int64", 8, hwarch.Cayman}, {"uint64", 8, hwarch.Cayman},
}

// String returns the dtype's name as the text syntax writes it.
func (d Dtype) String() string {
	if d < NumDtypes {
		return dtypeInfo[d].name
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size returns the bytes of one stored unit (0 for an unknown dtype).
func (d Dtype) Size() int {
	if d < NumDtypes {
		return dtypeInfo[d].size
	}
	return 0
}

// Since returns the first generation that has the dtype.
func (d Dtype) Since() hwarch.Generation {
	if d < NumDtypes {
		return dtypeInfo[d].since
	}
	return hwarch.NumGenerations
}

// AvailableOn reports whether generation g has the dtype.
func (d Dtype) AvailableOn(g hwarch.Generation) bool {
	return d != DtypeInvalid && d < NumDtypes && g >= d.Since() && g.Valid()
}

// Packed reports whether the dtype packs several elements in one unit (the
// MX ×4 types), which engines only move, never compute on.
func (d Dtype) Packed() bool { return d == FP8E5M2x4 || d == FP8E4M3FNx4 || d == FP4E2M1FNx4 }

// Float reports whether the dtype is a floating-point type.
func (d Dtype) Float() bool { return d >= FP16 && d <= FP4E2M1FNx4 }

// ParseDtype reads a dtype name.
func ParseDtype(s string) (Dtype, error) {
	for d := Dtype(1); d < NumDtypes; d++ {
		if strings.EqualFold(s, dtypeInfo[d].name) {
			return d, nil
		}
	}
	return DtypeInvalid, fmt.Errorf("isa: unknown dtype %q", s)
}
