package isa_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/isa"
)

func TestLimitsFor(t *testing.T) {
	want := map[hwarch.Generation]struct {
		sbuf uint32
		dma  int
	}{
		hwarch.Sunda:   {0x30000, 34},
		hwarch.Cayman:  {0x38000, 132},
		hwarch.Mariana: {0x40000, 132},
	}
	for _, g := range gens {
		t.Run(g.String(), func(t *testing.T) {
			tables := arch.MustFor(g, arch.Options{})
			l := isa.LimitsFor(tables)
			assert.Equal(t, g, l.Generation)
			assert.Equal(t, want[g].sbuf, l.SBUFPartitionBytes)
			assert.Equal(t, uint32(tables.Soc.ValidSBUFPartitionSize()), l.SBUFPartitionBytes)
			assert.Equal(t, 128, l.Partitions)
			assert.Equal(t, uint32(16<<10), l.PSUMPartitionBytes)
			assert.Equal(t, uint32(2<<10), l.PSUMBankBytes)
			assert.Equal(t, 32, l.QuadrantPartitions)
			assert.Equal(t, want[g].dma, l.DMAEngines)
			assert.Equal(t, 16, l.DMAQueues)
			assert.Equal(t, uint32(1<<24-16), l.MaxDMADescriptors)
			assert.Equal(t, l, validators[g].Limits())
			for d := hwisa.Dtype(0); d < 40; d++ {
				assert.Equal(t, d.AvailableOn(g), l.Dtypes.Has(d), "dtype %s", d)
			}
			for o := 0; o < 256; o++ {
				assert.Equal(t, hwisa.Opcode(o).AvailableOn(g), l.Opcodes.Has(hwisa.Opcode(o)), "opcode %#x", o)
			}
			assert.Contains(t, l.String(), g.String())
		})
	}
	assert.Panics(t, func() { isa.LimitsFor(nil) })
}

func TestFromDispatch(t *testing.T) {
	var d arch.Dispatch
	_, err := isa.FromDispatch(&d)
	require.Error(t, err)
	assert.True(t, errors.Is(err, arch.ErrNotSelected))

	_, err = d.Select(hwarch.PCIIdentity{Vendor: 0x1D0F, Device: 0x7564}, arch.Options{})
	require.NoError(t, err)
	v, err := isa.FromDispatch(&d)
	require.NoError(t, err)
	assert.Equal(t, hwarch.Mariana, v.Limits().Generation)
	assert.True(t, v.IsValid(enc(example(hwisa.OpQuantizeFP4))))
}

// TestValidExamples: every opcode available on a generation has a valid
// example there, and IsValid and Debug agree on it.
func TestValidExamples(t *testing.T) {
	for _, g := range gens {
		v := validators[g]
		for _, info := range hwisa.Opcodes() {
			if !info.Opcode.AvailableOn(g) {
				continue
			}
			t.Run(g.String()+"/"+info.Name, func(t *testing.T) {
				b := enc(example(info.Opcode))
				assert.Equal(t, isa.Reason{OK: true}, v.Debug(b))
				assert.True(t, v.IsValid(b))
				for e := hwisa.PE; e <= hwisa.SP; e++ {
					if !info.Engines.Has(e) || (info.Opcode == hwisa.OpTranspose && e == hwisa.DVE) {
						continue
					}
					r := example(info.Opcode)
					r.Engine = e
					assert.True(t, v.IsValid(enc(r)), "built for %s: %s", e, v.Debug(enc(r)))
				}
			})
		}
	}
}

// TestValidVariants: corner cases that must be accepted.
func TestValidVariants(t *testing.T) {
	cases := []struct {
		name string
		gens []hwarch.Generation
		rec  func() hwisa.Record
	}{
		{"dve transpose in quadrant", nil, dveTranspose},
		{"dve transpose 32x32 quadrant 3", nil, func() hwisa.Record {
			r := dveTranspose()
			r.Src0, r.Dst = t2(sb(96, 0), hwisa.BF16, 32, 32), t2(sb(0, 0x400), hwisa.FP32, 32, 32)
			return r
		}},
		{"pe transpose 128x128", nil, func() hwisa.Record {
			r := example(hwisa.OpTranspose)
			r.Src0, r.Dst = t2(sb(0, 0), hwisa.BF16, 128, 128), t2(ps(0, 0), hwisa.FP32, 128, 128)
			return r
		}},
		{"negative stride reaching offset 0", nil, func() hwisa.Record {
			r := example(hwisa.OpTensorCopy)
			r.Src0 = tn(sb(0, 12), hwisa.FP32, 128, hwisa.Dim{Size: 4, Stride: -1}, hwisa.Dim{Size: 16, Stride: 0})
			return r
		}},
		{"rank 1 tensors", nil, func() hwisa.Record {
			r := example(hwisa.OpTensorCopy)
			r.Dst, r.Src0 = tn(sb(0, 0), hwisa.FP32, 128), tn(sb(0, 4), hwisa.FP32, 128)
			return r
		}},
		{"rank 4 tensors", nil, func() hwisa.Record {
			r := example(hwisa.OpReciprocal)
			d := []hwisa.Dim{{Size: 2, Stride: 64}, {Size: 4, Stride: 16}, {Size: 8, Stride: 2}}
			r.Dst, r.Src0 = tn(sb(0, 0), hwisa.FP32, 128, d...), tn(sb(0, 0x400), hwisa.FP32, 128, d...)
			return r
		}},
		{"tensor ends at the last SBUF byte", nil, nil}, // per generation below
		{"psum tensor fills one bank", nil, func() hwisa.Record {
			r := example(hwisa.OpTensorCopy)
			r.Src0 = t2(ps(0, 0x3800), hwisa.FP32, 128, 64)
			r.Dst = t2(sb(0, 0), hwisa.FP32, 128, 64)
			r.Src0.Dims[0].Stride = 8 // 63·8·4 + 4 = 2020 bytes from 0x3800
			return r
		}},
		{"packed copy with equal dtypes", []hwarch.Generation{hwarch.Mariana}, func() hwisa.Record {
			r := example(hwisa.OpTensorCopy)
			r.Dst.Dtype, r.Src0.Dtype = hwisa.FP8E4M3FNx4, hwisa.FP8E4M3FNx4
			return r
		}},
		{"packed dma", []hwarch.Generation{hwarch.Cayman, hwarch.Mariana}, func() hwisa.Record {
			r := example(hwisa.OpDMATranspose)
			r.Dst.Dtype = hwisa.Uint64
			return r
		}},
		{"int64 iota", []hwarch.Generation{hwarch.Cayman, hwarch.Mariana}, func() hwisa.Record {
			r := example(hwisa.OpIota)
			r.Dst.Dtype = hwisa.Int64
			return r
		}},
		{"accumulating activation, last", nil, func() hwisa.Record {
			r := example(hwisa.OpActivation)
			r.Flags = hwisa.FlagAccumulate | hwisa.FlagLast
			return r
		}},
		{"dma_trigger on the last engine, most descriptors", nil, nil},
		{"reduce to rank 1", nil, func() hwisa.Record {
			r := example(hwisa.OpTensorReduce)
			r.Op = hwisa.ALUMultiply
			r.Dst = tn(sb(0, 0x1000), hwisa.FP32, 128)
			return r
		}},
	}
	for _, tc := range cases {
		for _, g := range gens {
			if tc.gens != nil && !containsGen(tc.gens, g) {
				continue
			}
			t.Run(tc.name+"/"+g.String(), func(t *testing.T) {
				v := validators[g]
				var r hwisa.Record
				switch {
				case tc.rec != nil:
					r = tc.rec()
				case tc.name == "tensor ends at the last SBUF byte":
					r = example(hwisa.OpMemset)
					r.Dst = t2(sb(127, v.Limits().SBUFPartitionBytes-256), hwisa.FP32, 1, 64)
				default:
					r = example(hwisa.OpDMATrigger)
					r.Aux, r.Imm0, r.Imm1 = uint16(v.Limits().DMAEngines-1), 15, 1<<24-16
				}
				b := enc(r)
				assert.Equal(t, isa.Reason{OK: true}, v.Debug(b))
				assert.True(t, v.IsValid(b))
			})
		}
	}
}

func containsGen(gs []hwarch.Generation, g hwarch.Generation) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// TestOpcodeAvailability: every opcode byte × generation agrees with
// isa.Opcode.AvailableOn.
func TestOpcodeAvailability(t *testing.T) {
	for _, g := range gens {
		v := validators[g]
		t.Run(g.String(), func(t *testing.T) {
			for o := 0; o < 256; o++ {
				op := hwisa.Opcode(o)
				var b []byte
				if _, known := op.Info(); known {
					b = enc(example(op))
				} else {
					b = make([]byte, hwisa.RecordSize)
					b[0] = byte(o)
				}
				r := v.Debug(b)
				assert.Equal(t, op.AvailableOn(g), r.OK, "opcode %#x: %s", o, r)
				if !op.AvailableOn(g) {
					assert.Equal(t, isa.CheckOpcode, r.Check)
					assert.Equal(t, "opcode", r.Field)
				}
			}
		})
	}
}

func TestDMATransposeAvailability(t *testing.T) {
	b := enc(example(hwisa.OpDMATranspose))
	assert.True(t, validators[hwarch.Cayman].IsValid(b))
	assert.True(t, validators[hwarch.Mariana].IsValid(b))
	assert.False(t, validators[hwarch.Sunda].IsValid(b))
	assert.Equal(t, isa.Reason{Check: "is_valid_opcode", Field: "opcode",
		Msg: "opcode 0xbd (dma_transpose) needs cayman or later; this is sunda"}, validators[hwarch.Sunda].Debug(b))
	assert.Equal(t, "opcode 0x55 (quantize_fp4) needs mariana or later; this is cayman",
		validators[hwarch.Cayman].Debug(enc(example(hwisa.OpQuantizeFP4))).Msg)
	assert.Equal(t, "opcode 0x77 is not an opcode of the ISA",
		validators[hwarch.Mariana].Debug(append([]byte{0x77}, make([]byte, 63)...)).Msg)
}

// TestDtypeAvailability: every dtype × generation in a dtype-neutral
// position (tensor_copy of equal dtypes) agrees with Dtype.AvailableOn.
func TestDtypeAvailability(t *testing.T) {
	for _, g := range gens {
		v := validators[g]
		for d := hwisa.Dtype(0); d <= hwisa.NumDtypes; d++ {
			t.Run(g.String()+"/"+d.String(), func(t *testing.T) {
				r := example(hwisa.OpTensorCopy)
				r.Dst.Dtype, r.Src0.Dtype = d, d
				got := v.Debug(enc(r))
				assert.Equal(t, d.AvailableOn(g), got.OK, "%s", got)
				if !got.OK {
					assert.Equal(t, isa.Reason{Check: "is_valid_dtype", Field: "dst.dtype", Msg: got.Msg}, got)
				}
			})
		}
	}
	r := example(hwisa.OpTensorCopy)
	r.Dst.Dtype, r.Src0.Dtype = hwisa.FP4E2M1FNx4, hwisa.FP4E2M1FNx4
	assert.Equal(t, isa.Reason{Check: "is_valid_dtype", Field: "dst.dtype",
		Msg: "dst dtype fp4_e2m1fn_x4 needs mariana or later; this is cayman"}, validators[hwarch.Cayman].Debug(enc(r)))
}

// TestEngineLegality: every opcode × ISA engine through
// IsValidEngineInstruction, with the record built for that engine.
func TestEngineLegality(t *testing.T) {
	for _, g := range gens {
		v := validators[g]
		for _, info := range hwisa.Opcodes() {
			if !info.Opcode.AvailableOn(g) {
				continue
			}
			for e := hwisa.Engine(0); e <= hwisa.TopSP; e++ {
				t.Run(g.String()+"/"+info.Name+"/"+e.String(), func(t *testing.T) {
					r := example(info.Opcode)
					if info.Opcode == hwisa.OpTranspose && e == hwisa.DVE {
						r = dveTranspose()
					}
					if info.Engines.Has(e) {
						r.Engine = e
					}
					b := enc(r)
					legal := info.Engines.Has(e)
					assert.Equal(t, legal, v.IsValidEngineInstruction(uint32(e), b))
					got := v.DebugEngineInstruction(uint32(e), b)
					assert.Equal(t, legal, got.OK, "%s", got)
					if !legal {
						assert.Equal(t, isa.CheckEngine, got.Check)
						assert.Equal(t, "engine", got.Field)
					}
				})
			}
		}
	}
}

func TestEngineMismatch(t *testing.T) {
	v := validators[hwarch.Cayman]
	r := example(hwisa.OpTensorCopy) // built for act
	got := v.DebugEngineInstruction(uint32(hwisa.DVE), enc(r))
	assert.Equal(t, isa.Reason{Check: isa.CheckEngine, Field: "engine",
		Msg: "the record is built for act but the block is dve's"}, got)
	got = v.DebugEngineInstruction(uint32(hwisa.PE), enc(r))
	assert.Equal(t, "tensor_copy cannot be issued on pe (its engines: act pool dve)", got.Msg)
	got = v.DebugEngineInstruction(77, enc(r))
	assert.Equal(t, "the HAL engine maps to top_sp, which issues no instruction records", got.Msg)
	// A structural failure comes first.
	r.Op = 1
	assert.Equal(t, isa.CheckHeader, v.DebugEngineInstruction(uint32(hwisa.ACT), enc(r)).Check)
}
