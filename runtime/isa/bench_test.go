package isa_test

import (
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
)

// reportRecords reports the throughput over n records and, when recs is
// given, the cost in plain decodes of the same records measured now in the
// same run ("decodes": 1 is the cost of hw/isa's Decode of each record).
func reportRecords(b *testing.B, n int, recs [][]byte) {
	ns := float64(b.Elapsed().Nanoseconds()) / float64(n)
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(ns, "ns/record")
	if len(recs) > 0 {
		b.ReportMetric(ns/decodeNs(b, recs), "decodes")
	}
}

// decodeNs is the same-run baseline: ns per record of hw/isa's Decode over
// recs, timed for at least 20 ms.
func decodeNs(b *testing.B, recs [][]byte) float64 {
	n := 0
	start := time.Now()
	for time.Since(start) < 20*time.Millisecond {
		for range 100 {
			for _, r := range recs {
				if _, err := hwisa.Decode(r); err != nil {
					b.Fatal(err)
				}
			}
		}
		n += 100 * len(recs)
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
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
				reportRecords(b, n, mix)
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
			reportRecords(b, n, [][]byte{r})
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
	reportRecords(b, n, mix)
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
			reportRecords(b, n, mix)
		})
	}
}

// BenchmarkDecodeBaseline is hw/isa's Decode of the mariana mix on its own
// — reading every field of a record into a struct, the least any consumer
// of a record does. The validator benchmarks measure the same baseline on
// their own records within their run and report their cost in "decodes".
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
	reportRecords(b, n, nil)
}
