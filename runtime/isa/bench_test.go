package isa_test

import (
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
)

func reportRecords(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
}

// BenchmarkIsValid: a mix of valid records, every opcode of the generation
// once ("mix"), or only the tensor opcodes ("tensors"), the costlier kind.
func BenchmarkIsValid(b *testing.B) {
	for _, g := range gens {
		all := append(validMix(g, hwisa.NumEngines), enc(dveTranspose()))
		var tensors [][]byte
		for _, r := range all {
			if info, _ := hwisa.Opcode(r[0]).Info(); info.Operands&(hwisa.UsesDst|hwisa.UsesSrc0) != 0 {
				tensors = append(tensors, r)
			}
		}
		for name, mix := range map[string][][]byte{"mix": all, "tensors": tensors} {
			b.Run(g.String()+"/"+name, func(b *testing.B) {
				v := validators[g]
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					for _, r := range mix {
						if !v.IsValid(r) {
							b.Fatal("invalid")
						}
					}
					n += len(mix)
				}
				reportRecords(b, n)
			})
		}
	}
}

// BenchmarkIsValidOpcode repeats one valid record: the cheapest (nop) and
// the costliest kinds (three tensors, PSUM, a packed copy).
func BenchmarkIsValidOpcode(b *testing.B) {
	v := validators[hwarch.Mariana]
	for _, op := range []hwisa.Opcode{hwisa.OpNop, hwisa.OpTensorTensor, hwisa.OpTensorCopy, hwisa.OpMultiplyMoving, hwisa.OpDMATrigger} {
		b.Run(op.String(), func(b *testing.B) {
			r := enc(example(op))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if !v.IsValid(r) {
					b.Fatal("invalid")
				}
				n++
			}
			reportRecords(b, n)
		})
	}
}

// BenchmarkDebug is the debug twin on the same valid records, for contrast.
func BenchmarkDebug(b *testing.B) {
	v := validators[hwarch.Mariana]
	mix := validMix(hwarch.Mariana, hwisa.NumEngines)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, r := range mix {
			if !v.Debug(r).OK {
				b.Fatal("invalid")
			}
		}
		n += len(mix)
	}
	reportRecords(b, n)
}

// BenchmarkFinalInstValidityCheck walks a 64 KiB block of DVE records.
func BenchmarkFinalInstValidityCheck(b *testing.B) {
	for _, g := range gens {
		b.Run(g.String(), func(b *testing.B) {
			v := validators[g]
			mix := validMix(g, hwisa.DVE)
			blk := make([]byte, 0, 64<<10)
			for i := 0; len(blk) < 64<<10; i++ {
				blk = append(blk, mix[i%len(mix)]...)
			}
			b.SetBytes(int64(len(blk)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := v.FinalInstValidityCheck(blk, uint32(hwisa.DVE)); err != nil {
					b.Fatal(err)
				}
				n += len(blk) / hwisa.RecordSize
			}
			reportRecords(b, n)
		})
	}
}

// BenchmarkDecodeBaseline is the same-run baseline for BenchmarkIsValid:
// hw/isa's Decode of the same mariana mix — reading every field of a record
// into a struct, the least any consumer of a record does. IsValid's
// ns/record over this one is the validator's cost in decodes.
func BenchmarkDecodeBaseline(b *testing.B) {
	mix := validMix(hwarch.Mariana, hwisa.NumEngines)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, r := range mix {
			if _, err := hwisa.Decode(r); err != nil {
				b.Fatal(err)
			}
		}
		n += len(mix)
	}
	reportRecords(b, n)
}
