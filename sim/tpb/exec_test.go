package tpb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
)

// Every executed opcode against a straightforward Go reference. Inputs are
// placed with the test's own addressing (fake_test.go); fp32 results are
// compared bit for bit, narrower outputs against the reference converted
// with the same rounding.

// TestActFn holds each activation function to values known without it:
// exact ones, the function's limits at ±∞, and NaN passed through (the
// opcode tests below take actFn as their reference, so this is where the
// functions themselves are checked).
func TestActFn(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, tc := range []struct {
		fn      uint8
		x, want float32
	}{
		{isa.ActIdentity, 1.5, 1.5}, {isa.ActIdentity, -inf, -inf}, {isa.ActIdentity, nan, nan},
		{isa.ActRelu, -2, 0}, {isa.ActRelu, 3, 3}, {isa.ActRelu, -inf, 0}, {isa.ActRelu, nan, nan},
		{isa.ActExp, 0, 1}, {isa.ActExp, 1, float32(math.E)}, {isa.ActExp, -inf, 0}, {isa.ActExp, inf, inf}, {isa.ActExp, nan, nan},
		{isa.ActTanh, 0, 0}, {isa.ActTanh, 20, 1}, {isa.ActTanh, -inf, -1}, {isa.ActTanh, nan, nan},
		{isa.ActSigmoid, 0, 0.5}, {isa.ActSigmoid, inf, 1}, {isa.ActSigmoid, -inf, 0}, {isa.ActSigmoid, nan, nan},
		{isa.ActSquare, 3, 9}, {isa.ActSquare, -1.5, 2.25}, {isa.ActSquare, -inf, inf}, {isa.ActSquare, nan, nan},
		{isa.ActSqrt, 4, 2}, {isa.ActSqrt, 2.25, 1.5}, {isa.ActSqrt, 0, 0}, {isa.ActSqrt, -1, nan}, {isa.ActSqrt, inf, inf},
		{isa.NumActFuncs, 7.25, 7.25}, // a byte no function has is the identity
	} {
		got := actFn(tc.fn, tc.x)
		if tc.want != tc.want {
			assert.True(t, got != got, "%s(%v) = %v, want NaN", isa.ActName(tc.fn), tc.x, got)
			continue
		}
		assert.Equal(t, math.Float32bits(tc.want), math.Float32bits(got), "%s(%v) = %v, want %v", isa.ActName(tc.fn), tc.x, got, tc.want)
	}
}

// TestALUF32 holds each fp32 ALU op to values known without it: exact
// sums and products, IEEE division by zero, max and min ordering −0 below
// +0 and propagating NaN (the opcode tests below take aluF32 as their
// reference, so this is where the ops themselves are checked).
func TestALUF32(t *testing.T) {
	inf, nan, negZero := float32(math.Inf(1)), float32(math.NaN()), float32(math.Copysign(0, -1))
	for _, tc := range []struct {
		op         uint8
		a, b, want float32
	}{
		{isa.ALUBypass, 1.25, 7, 1.25},
		{isa.ALUAdd, 1.5, 2.25, 3.75}, {isa.ALUAdd, inf, -inf, nan},
		{isa.ALUSubtract, 1, 3, -2},
		{isa.ALUMultiply, 1.5, 4, 6}, {isa.ALUMultiply, 0, inf, nan},
		{isa.ALUMax, negZero, 0, 0}, {isa.ALUMax, 0, negZero, 0}, {isa.ALUMax, nan, 1, nan}, {isa.ALUMax, -3, -2, -2},
		{isa.ALUMin, 0, negZero, negZero}, {isa.ALUMin, negZero, 0, negZero}, {isa.ALUMin, 1, nan, nan}, {isa.ALUMin, -3, -2, -3},
		{isa.ALUDivide, 3, 4, 0.75}, {isa.ALUDivide, 1, 0, inf}, {isa.ALUDivide, -1, 0, -inf}, {isa.ALUDivide, 0, 0, nan},
		{isa.NumALUOps, 5.5, 1, 5.5}, // a byte no op has is the bypass
	} {
		got := aluF32(tc.op, tc.a, tc.b)
		if tc.want != tc.want {
			assert.True(t, got != got, "%s(%v, %v) = %v, want NaN", isa.ALUName(tc.op), tc.a, tc.b, got)
			continue
		}
		assert.Equal(t, math.Float32bits(tc.want), math.Float32bits(got), "%s(%v, %v) = %v, want %v", isa.ALUName(tc.op), tc.a, tc.b, got, tc.want)
	}
}

// refInt32 is the reference int32 ALU (Go's int32 arithmetic wraps).
func refInt32(op uint8, a, b int32) int32 {
	switch op {
	case isa.ALUAdd:
		return a + b
	case isa.ALUSubtract:
		return a - b
	case isa.ALUMultiply:
		return a * b
	case isa.ALUMax:
		return max(a, b)
	case isa.ALUMin:
		return min(a, b)
	}
	return a
}

func forEachGen(t *testing.T, f func(t *testing.T, gen hwarch.Generation)) {
	for _, gen := range hwarch.Generations() {
		t.Run(gen.String(), func(t *testing.T) { f(t, gen) })
	}
}

func TestActivation(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		dts := [][2]isa.Dtype{{isa.FP32, isa.FP32}, {isa.BF16, isa.FP32}, {isa.FP32, isa.BF16}, {isa.FP16, isa.FP8E4M3}}
		for fn := range isa.NumActFuncs {
			for _, acc := range []bool{false, true} {
				for _, dt := range dts {
					t.Run(fmt.Sprintf("%s/acc=%v/%s-%s", isa.ActName(fn), acc, dt[0], dt[1]), func(t *testing.T) {
						h := newHarness(t, gen)
						rng := rand.New(rand.NewPCG(uint64(fn), uint64(dt[0])))
						src, dst := sb(0x100, dt[0], 128, 48), ps(0x200, dt[1], 128, 48)
						h.put(src, randVals(rng, 128*48, 3))
						h.put(dst, randVals(rng, 128*48, 2))
						x, old := h.get(src), h.get(dst)
						scale, bias := float32(1.75), float32(-0.375)
						r := rec(isa.OpActivation, isa.ACT)
						r.Dst, r.Src0, r.Op, r.Imm0, r.Imm1 = dst, src, fn, f32(scale), f32(bias)
						if acc {
							r.Flags = isa.FlagAccumulate
						}
						h.mustRun(int(isa.ACT), r)
						want := make([]float32, len(x))
						for i, v := range x {
							want[i] = actFn(fn, float32(v*scale)+bias)
							if acc {
								want[i] = old[i] + want[i]
							}
						}
						require.Equal(t, encoded(dst.Dtype, want), h.raw(dst))
					})
				}
			}
		}
	})
}

func TestTensorTensor(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		type combo struct {
			a, b, d isa.Dtype
			bPSUM   bool
		}
		combos := []combo{
			{isa.FP32, isa.FP32, isa.FP32, false}, {isa.BF16, isa.BF16, isa.BF16, false},
			{isa.FP32, isa.BF16, isa.FP16, true}, {isa.Int32, isa.FP32, isa.FP32, false},
		}
		for op := range isa.NumALUOps {
			for _, cb := range combos {
				for _, eng := range []isa.Engine{isa.DVE, isa.POOL} {
					t.Run(fmt.Sprintf("%s/%s-%s-%s/%s", isa.ALUName(op), cb.a, cb.b, cb.d, eng), func(t *testing.T) {
						h := newHarness(t, gen)
						rng := rand.New(rand.NewPCG(uint64(op), 7))
						a, b, d := sb(0, cb.a, 64, 40), tensor(cb.bPSUM, 0, 0x400, cb.b, 64, 40, 1), sb(0x1000, cb.d, 64, 40)
						h.put(a, randVals(rng, 64*40, 100))
						h.put(b, randVals(rng, 64*40, 4))
						x, y := h.get(a), h.get(b)
						r := rec(isa.OpTensorTensor, eng)
						r.Dst, r.Src0, r.Src1, r.Op = d, a, isa.Src1{Addr: b.Addr, Dtype: b.Dtype}, op
						h.mustRun(int(eng), r)
						want := make([]float32, len(x))
						for i := range x {
							want[i] = aluF32(op, x[i], y[i])
						}
						require.Equal(t, encoded(d.Dtype, want), h.raw(d))
					})
				}
			}
			t.Run(isa.ALUName(op)+"/int32", func(t *testing.T) {
				if op == isa.ALUDivide {
					t.Skip("divide is fp32")
				}
				h := newHarness(t, gen)
				rng := rand.New(rand.NewPCG(uint64(op), 9))
				a, b, d := sb(0, isa.Int32, 16, 30), sb(0x400, isa.Int32, 16, 30), sb(0x800, isa.Int32, 16, 30)
				xs, ys := make([]int64, 16*30), make([]int64, 16*30)
				for i := range xs {
					xs[i], ys[i] = int64(int32(rng.Uint32())), int64(int32(rng.Uint32()))
				}
				h.putInt(a, xs)
				h.putInt(b, ys)
				r := rec(isa.OpTensorTensor, isa.DVE)
				r.Dst, r.Src0, r.Src1, r.Op = d, a, isa.Src1{Addr: b.Addr, Dtype: b.Dtype}, op
				h.mustRun(int(isa.DVE), r)
				got := h.getInt(d)
				for i := range xs {
					require.Equal(t, int64(refInt32(op, int32(xs[i]), int32(ys[i]))), got[i], "element %d", i)
				}
			})
		}
		t.Run("int8 to int16 wraps in int8", func(t *testing.T) {
			h := newHarness(t, gen)
			a, b, d := sb(0, isa.Int8, 2, 4), sb(0x100, isa.Int8, 2, 4), sb(0x200, isa.Int16, 2, 4)
			h.putInt(a, []int64{100, -100, 127, 5, -128, 1, 2, 3})
			h.putInt(b, []int64{100, -100, 1, -5, -1, 1, 2, 3})
			r := rec(isa.OpTensorTensor, isa.DVE)
			r.Dst, r.Src0, r.Src1, r.Op = d, a, isa.Src1{Addr: b.Addr, Dtype: b.Dtype}, isa.ALUAdd
			h.mustRun(int(isa.DVE), r)
			require.Equal(t, []int64{-56, 56, -128, 0, 127, 2, 4, 6}, h.getInt(d))
		})
	})
}

func TestTensorScalar(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		for op := range isa.NumALUOps {
			for _, dt := range [][2]isa.Dtype{{isa.FP32, isa.FP32}, {isa.BF16, isa.BF16}, {isa.FP32, isa.FP8E5M2}} {
				for _, eng := range []isa.Engine{isa.ACT, isa.POOL, isa.DVE} {
					t.Run(fmt.Sprintf("%s/%s-%s/%s", isa.ALUName(op), dt[0], dt[1], eng), func(t *testing.T) {
						h := newHarness(t, gen)
						rng := rand.New(rand.NewPCG(uint64(op), 3))
						a, d := sb(0x40, dt[0], 128, 33), sb(0x2000, dt[1], 128, 33)
						h.put(a, randVals(rng, 128*33, 8))
						x := h.get(a)
						imm := float32(-1.3125)
						r := rec(isa.OpTensorScalar, eng)
						r.Dst, r.Src0, r.Op, r.Imm0 = d, a, op, f32(imm)
						h.mustRun(int(eng), r)
						want := make([]float32, len(x))
						for i := range x {
							want[i] = aluF32(op, x[i], imm)
						}
						require.Equal(t, encoded(d.Dtype, want), h.raw(d))
					})
				}
			}
		}
		t.Run("int32 with an integer immediate", func(t *testing.T) {
			for op := range isa.NumALUOps {
				h := newHarness(t, gen)
				a, d := sb(0, isa.Int32, 1, 5), sb(0x100, isa.Int32, 1, 5)
				xs := []int64{7, -7, math.MaxInt32, math.MinInt32, 0}
				h.putInt(a, xs)
				r := rec(isa.OpTensorScalar, isa.DVE)
				r.Dst, r.Src0, r.Op, r.Imm0 = d, a, op, uint32(0xFFFF_FFFD) // -3
				h.mustRun(int(isa.DVE), r)
				got := h.getInt(d)
				for i, x := range xs {
					want := int64(refInt32(op, int32(x), -3))
					if op == isa.ALUDivide {
						want = f32ToInt(isa.Int32, float32(x)/-3)
					}
					require.Equal(t, want, got[i], "%s %d", isa.ALUName(op), x)
				}
			}
		})
		t.Run("uint8 add wraps, then converts to fp32", func(t *testing.T) {
			h := newHarness(t, gen)
			a, d := sb(0, isa.Uint8, 1, 3), sb(0x100, isa.FP32, 1, 3)
			h.putInt(a, []int64{10, 100, 255})
			r := rec(isa.OpTensorScalar, isa.POOL)
			r.Dst, r.Src0, r.Op, r.Imm0 = d, a, isa.ALUAdd, 200
			h.mustRun(int(isa.POOL), r)
			require.Equal(t, []float32{210, 44, 199}, h.get(d))
		})
	})
}

func TestReciprocalAndReduce(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		engines := []isa.Opcode{isa.OpReciprocal}
		if gen >= hwarch.Cayman {
			engines = append(engines, isa.OpActReciprocal)
		}
		for _, op := range engines {
			for _, dt := range [][2]isa.Dtype{{isa.FP32, isa.FP32}, {isa.BF16, isa.FP32}, {isa.FP32, isa.BF16}} {
				t.Run(fmt.Sprintf("%s/%s-%s", op, dt[0], dt[1]), func(t *testing.T) {
					h := newHarness(t, gen)
					eng := isa.DVE
					if op == isa.OpActReciprocal {
						eng = isa.ACT
					}
					a, d := sb(0, dt[0], 128, 20), sb(0x400, dt[1], 128, 20)
					vals := randVals(rand.New(rand.NewPCG(5, 5)), 128*20, 10)
					vals[3] = 0 // 1/0 = +inf
					h.put(a, vals)
					x := h.get(a)
					r := rec(op, eng)
					r.Dst, r.Src0 = d, a
					h.mustRun(int(eng), r)
					want := make([]float32, len(x))
					for i, v := range x {
						want[i] = 1 / v
					}
					require.Equal(t, encoded(d.Dtype, want), h.raw(d))
				})
			}
		}
		for _, op := range []uint8{isa.ALUAdd, isa.ALUMax, isa.ALUMin, isa.ALUMultiply} {
			for _, dt := range [][2]isa.Dtype{{isa.FP32, isa.FP32}, {isa.BF16, isa.BF16}} {
				for _, eng := range []isa.Engine{isa.DVE, isa.POOL} {
					t.Run(fmt.Sprintf("reduce/%s/%s-%s/%s", isa.ALUName(op), dt[0], dt[1], eng), func(t *testing.T) {
						h := newHarness(t, gen)
						a, d := sb(0, dt[0], 100, 70), tensor(false, 3, 0x800, dt[1], 100)
						h.put(a, randVals(rand.New(rand.NewPCG(uint64(op), 1)), 100*70, 1.5))
						x := h.get(a)
						r := rec(isa.OpTensorReduce, eng)
						r.Dst, r.Src0, r.Op = d, a, op
						h.mustRun(int(eng), r)
						want := make([]float32, 100)
						for p := range want {
							acc := x[p*70]
							for _, v := range x[p*70+1 : (p+1)*70] {
								acc = aluF32(op, acc, v)
							}
							want[p] = acc
						}
						require.Equal(t, encoded(d.Dtype, want), h.raw(d))
					})
				}
			}
		}
		t.Run("reduce/int32 add wraps", func(t *testing.T) {
			h := newHarness(t, gen)
			a, d := sb(0, isa.Int32, 2, 3), sb(0x100, isa.Int32, 2, 1)
			h.putInt(a, []int64{math.MaxInt32, 1, 1, -5, 2, 3})
			r := rec(isa.OpTensorReduce, isa.DVE)
			r.Dst, r.Src0, r.Op = d, a, isa.ALUAdd
			h.mustRun(int(isa.DVE), r)
			require.Equal(t, []int64{math.MinInt32 + 1, 0}, h.getInt(d))
		})
	})
}

func TestMemsetIota(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		memsets := []struct {
			eng isa.Engine
			dt  isa.Dtype
			imm uint32
		}{
			{isa.DVE, isa.FP32, f32(2.5)},
			{isa.POOL, isa.BF16, f32(-1.00390625)}, // rounds to even in bf16
			{isa.DVE, isa.Int8, uint32(0xFFFF_FFFB)},
			{isa.POOL, isa.Uint16, 70000}, // saturates
			{isa.DVE, isa.FP8E5M2, f32(3)},
		}
		for _, m := range memsets {
			t.Run(fmt.Sprintf("memset/%s/%s", m.dt, m.eng), func(t *testing.T) {
				h := newHarness(t, gen)
				d := tensor(false, 4, 0x10, m.dt, 20, 6, 2)                                                   // stride 2: gaps stay untouched
				h.put(tensor(false, 4, 0x10, m.dt, 20, 12, 1), randVals(rand.New(rand.NewPCG(1, 1)), 240, 1)) // gaps
				before := h.raw(tensor(false, 4, 0x10+uint32(m.dt.Size()), m.dt, 20, 6, 2))
				r := rec(isa.OpMemset, m.eng)
				r.Dst, r.Imm0 = d, m.imm
				h.mustRun(int(m.eng), r)
				var want [][]byte
				if isInt(m.dt) {
					v := intToInt(m.dt, immInt(m.dt, m.imm), false)
					for range 120 {
						b := make([]byte, m.dt.Size())
						putInt(m.dt, v, b)
						want = append(want, b)
					}
				} else {
					want = encoded(m.dt, repeat(math.Float32frombits(m.imm), 120))
				}
				require.Equal(t, want, h.raw(d))
				require.Equal(t, before, h.raw(tensor(false, 4, 0x10+uint32(m.dt.Size()), m.dt, 20, 6, 2)), "gaps")
			})
		}
		for _, dt := range []isa.Dtype{isa.Int32, isa.FP32, isa.BF16, isa.Int8} {
			t.Run("iota/"+dt.String(), func(t *testing.T) {
				h := newHarness(t, gen)
				d := tensor(false, 0, 0x40, dt, 128, 3, 8, 4, 1) // rank 3: i is the linear free index
				r := rec(isa.OpIota, isa.POOL)
				r.Dst, r.Imm0, r.Imm1 = d, uint32(0xFFFF_FFFD), 100 // -3 + i + 100p
				h.mustRun(int(isa.POOL), r)
				got := h.get(d)
				for p := range 128 {
					for i := range 12 {
						v := int64(-3 + i + 100*p)
						var want float32
						if isInt(dt) {
							want = float32(intToInt(dt, v, false))
						} else {
							want = rounded(dt, []float32{float32(v)})[0]
						}
						require.Equal(t, want, got[p*12+i], "p %d i %d", p, i)
					}
				}
			})
		}
	})
}

func repeat(v float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestControlOpcodes(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		ops := []isa.Opcode{isa.OpNop, isa.OpBarrier, isa.OpSem}
		if gen >= hwarch.Mariana {
			ops = append(ops, isa.OpCtrlPollSem)
		}
		for e := range NumEngines {
			var recs []isa.Record
			for _, op := range ops {
				recs = append(recs, rec(op, isa.Engine(e)))
			}
			h := newHarness(t, gen)
			recs[len(recs)-1].Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: 9, Value: 4}
			h.mustRun(e, recs...)
			require.EqualValues(t, len(ops), h.core.ReadReg(e, RegRetired))
			require.EqualValues(t, 4, h.sync.Semaphores[9])
		}
	})
}

func TestDMATrigger(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		for _, eng := range []isa.Engine{isa.SP, isa.ACT, isa.POOL} {
			h := newHarness(t, gen)
			host := h.geo.HostDMAEngines[0]
			r1, r2 := rec(isa.OpDMATrigger, eng), rec(isa.OpDMATrigger, eng)
			r1.Aux, r1.Imm0, r1.Imm1 = 3, 15, 7
			r2.Aux, r2.Imm0, r2.Imm1 = uint16(host), 0, 1
			h.mustRun(int(eng), r1, r2)
			hz := h.core.Clocks()[eng]
			require.Equal(t, []doorbell{{3, 15, 7, Picoseconds(64, hz)}, {host, 0, 1, 2 * Picoseconds(64, hz)}}, h.env.doorbells)

			h.env.doorbellErr = errFake
			status, code := h.runOne(r1)
			require.Equal(t, uint32(StatusError), status)
			require.Equal(t, uint32(ErrDoorbell), code)
		}
	})
}
