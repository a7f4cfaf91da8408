package tpb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
)

func TestCopy(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		pairs := [][2]isa.Dtype{
			{isa.FP32, isa.BF16}, {isa.BF16, isa.FP32}, {isa.FP32, isa.FP16}, {isa.FP32, isa.FP8E4M3},
			{isa.FP32, isa.FP8E5M2}, {isa.FP32, isa.TF32}, {isa.FP32, isa.Int8}, {isa.FP16, isa.Uint8},
			{isa.FP16, isa.FP16}, {isa.Int32, isa.FP32}, {isa.BF16, isa.FP8E4M3},
		}
		if gen >= hwarch.Mariana {
			pairs = append(pairs, [2]isa.Dtype{isa.FP32, isa.FP8E4M3FN}, [2]isa.Dtype{isa.FP32, isa.FP8E8M0})
		}
		ops := []isa.Opcode{isa.OpTensorCopy}
		if gen >= hwarch.Cayman {
			ops = append(ops, isa.OpCopyCast)
		}
		for _, op := range ops {
			for _, pr := range pairs {
				for _, eng := range []isa.Engine{isa.ACT, isa.POOL, isa.DVE} {
					t.Run(fmt.Sprintf("%s/%s-%s/%s", op, pr[0], pr[1], eng), func(t *testing.T) {
						h := newHarness(t, gen)
						a, d := sb(0x80, pr[0], 128, 50), ps(0x100, pr[1], 128, 50)
						h.put(a, randVals(rand.New(rand.NewPCG(2, uint64(pr[1]))), 128*50, 300))
						x := h.get(a)
						r := rec(op, eng)
						r.Dst, r.Src0 = d, a
						h.mustRun(int(eng), r)
						require.Equal(t, encoded(d.Dtype, x), h.raw(d))
					})
				}
			}
		}
		t.Run("int32 to int8 saturates exactly", func(t *testing.T) {
			h := newHarness(t, gen)
			a, d := sb(0, isa.Int32, 1, 6), sb(0x100, isa.Int8, 1, 6)
			h.putInt(a, []int64{16777217, -16777217, 127, -128, 5, -5})
			r := rec(isa.OpTensorCopy, isa.DVE)
			r.Dst, r.Src0 = d, a
			h.mustRun(int(isa.DVE), r)
			require.Equal(t, []int64{127, -128, 127, -128, 5, -5}, h.getInt(d))
		})
		t.Run("int32 copy is exact", func(t *testing.T) {
			h := newHarness(t, gen)
			a, d := sb(0, isa.Int32, 1, 3), sb(0x100, isa.Int32, 1, 3)
			h.putInt(a, []int64{16777217, math.MaxInt32, math.MinInt32})
			r := rec(isa.OpTensorCopy, isa.POOL)
			r.Dst, r.Src0 = d, a
			h.mustRun(int(isa.POOL), r)
			require.Equal(t, []int64{16777217, math.MaxInt32, math.MinInt32}, h.getInt(d))
		})
		if gen >= hwarch.Cayman {
			t.Run("uint64 to int32 saturates", func(t *testing.T) {
				h := newHarness(t, gen)
				a, d := sb(0, isa.Uint64, 1, 3), sb(0x100, isa.Int32, 1, 3)
				h.putInt(a, []int64{-1, 12, 1 << 40}) // -1: MaxUint64
				r := rec(isa.OpCopyCast, isa.ACT)
				r.Dst, r.Src0 = d, a
				h.mustRun(int(isa.ACT), r)
				require.Equal(t, []int64{math.MaxInt32, 12, math.MaxInt32}, h.getInt(d))
			})
		}
		if gen >= hwarch.Mariana {
			t.Run("packed copies bytes", func(t *testing.T) {
				h := newHarness(t, gen)
				a, d := sb(0, isa.FP8E5M2x4, 4, 8), sb(0x100, isa.FP8E5M2x4, 4, 8)
				src := make([]int64, 32)
				for i := range src {
					src[i] = int64(0x7F01_02FF + i) // raw 4-byte units, including fp8 NaN bytes
				}
				h.putInt(tensor(false, 0, 0, isa.Uint32, 4, 8, 1), src)
				r := rec(isa.OpTensorCopy, isa.DVE)
				r.Dst, r.Src0 = d, a
				h.mustRun(int(isa.DVE), r)
				require.Equal(t, h.raw(a), h.raw(d))
			})
		}
		t.Run("strided rank 4 with negative strides and a start partition", func(t *testing.T) {
			h := newHarness(t, gen)
			// [10 partitions from 5] × 2 × 4 × 5: i stride 40, j stride 1, k stride −8.
			a := tensor(false, 5, 0x400, isa.FP32, 10, 2, 40, 4, 1, 5, -8)
			d := tensor(true, 100, 0x40, isa.BF16, 10, 40, 1)
			h.put(a, randVals(rand.New(rand.NewPCG(8, 8)), 400, 5))
			x := h.get(a)
			r := rec(isa.OpTensorCopy, isa.ACT)
			r.Dst, r.Src0 = d, a
			h.mustRun(int(isa.ACT), r)
			require.Equal(t, encoded(isa.BF16, x), h.raw(d))
		})
		t.Run("overlapping output reads the old input", func(t *testing.T) {
			h := newHarness(t, gen)
			a := sb(0, isa.FP32, 8, 16)
			d := tensor(false, 1, 0, isa.FP32, 8, 16, 1) // one partition down
			h.put(a, randVals(rand.New(rand.NewPCG(3, 3)), 128, 5))
			x := h.get(a)
			r := rec(isa.OpTensorScalar, isa.DVE)
			r.Dst, r.Src0, r.Op, r.Imm0 = d, a, isa.ALUAdd, f32(1)
			h.mustRun(int(isa.DVE), r)
			want := make([]float32, len(x))
			for i := range x {
				want[i] = x[i] + 1
			}
			require.Equal(t, want, h.get(d))
		})
	})
}

func TestTranspose(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		cases := []struct {
			eng    isa.Engine
			P, F   int
			sd, dd isa.Dtype
		}{
			{isa.PE, 128, 64, isa.FP32, isa.FP32}, {isa.PE, 128, 128, isa.BF16, isa.FP32},
			{isa.PE, 7, 100, isa.FP16, isa.BF16}, {isa.DVE, 32, 16, isa.BF16, isa.BF16},
			{isa.DVE, 32, 32, isa.Int32, isa.Int16},
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%dx%d/%s-%s", tc.eng, tc.P, tc.F, tc.sd, tc.dd), func(t *testing.T) {
				h := newHarness(t, gen)
				a, d := sb(0x200, tc.sd, tc.P, tc.F), ps(0x80, tc.dd, tc.F, tc.P)
				h.put(a, randVals(rand.New(rand.NewPCG(4, 4)), tc.P*tc.F, 40000))
				x := h.get(a)
				r := rec(isa.OpTranspose, tc.eng)
				r.Dst, r.Src0 = d, a
				h.mustRun(int(tc.eng), r)
				want := make([]float32, len(x))
				for p := range tc.P {
					for f := range tc.F {
						want[f*tc.P+p] = x[p*tc.F+f]
					}
				}
				require.Equal(t, encoded(tc.dd, want), h.raw(d))
			})
		}
	})
}

// refMatmul is the reference: for every output, k ascending, each product
// rounded to fp32 before it is added to an fp32 accumulator.
func refMatmul(stat, mov, old []float32, K, M, N int, acc bool) []float32 {
	out := make([]float32, M*N)
	for m := range M {
		for n := range N {
			var sum float32
			for k := range K {
				sum += float32(stat[k*M+m] * mov[k*N+n])
			}
			if acc {
				sum = old[m*N+n] + sum
			}
			out[m*N+n] = sum
		}
	}
	return out
}

func TestMatmul(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		for _, dt := range []isa.Dtype{isa.FP32, isa.BF16} {
			for _, acc := range []bool{false, true} {
				t.Run(fmt.Sprintf("128x128x64/%s/acc=%v", dt, acc), func(t *testing.T) {
					const K, M, N = 128, 128, 64
					h := newHarness(t, gen)
					rng := rand.New(rand.NewPCG(10, uint64(dt)))
					st, mv, d := sb(0, dt, K, M), sb(0x1000, dt, K, N), ps(0x800, isa.FP32, M, N)
					h.put(st, randVals(rng, K*M, 1))
					h.put(mv, randVals(rng, K*N, 1))
					h.put(d, randVals(rng, M*N, 10))
					stat, mov, old := h.get(st), h.get(mv), h.get(d)
					ls, mm := rec(isa.OpLoadStationary, isa.PE), rec(isa.OpMultiplyMoving, isa.PE)
					ls.Src0 = st
					mm.Dst, mm.Src0 = d, mv
					if acc {
						mm.Flags = isa.FlagAccumulate
					}
					h.mustRun(int(isa.PE), ls, mm)
					require.Equal(t, refMatmul(stat, mov, old, K, M, N, acc), h.get(d))
				})
			}
		}
		t.Run("accumulation group of two multiplies", func(t *testing.T) {
			const K, M, N = 32, 16, 24
			h := newHarness(t, gen)
			rng := rand.New(rand.NewPCG(11, 11))
			st, mv1, mv2, d := sb(0, isa.BF16, K, M), sb(0x100, isa.BF16, K, N), sb(0x200, isa.FP16, K, N), ps(0, isa.FP32, M, N)
			for _, tt := range []isa.Tensor{st, mv1, mv2} {
				h.put(tt, randVals(rng, int(tt.Partitions)*tt.Elements(), 2))
			}
			stat, m1, m2 := h.get(st), h.get(mv1), h.get(mv2)
			ls, a, b := rec(isa.OpLoadStationary, isa.PE), rec(isa.OpMultiplyMoving, isa.PE), rec(isa.OpMultiplyMoving, isa.PE)
			ls.Src0 = st
			a.Dst, a.Src0 = d, mv1
			b.Dst, b.Src0, b.Flags = d, mv2, isa.FlagAccumulate
			h.mustRun(int(isa.PE), ls, a, b)
			first := refMatmul(stat, m1, nil, K, M, N, false)
			require.Equal(t, refMatmul(stat, m2, first, K, M, N, true), h.get(d))
		})
	})
}
