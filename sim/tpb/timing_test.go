package tpb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
)

func TestDefaultClocks(t *testing.T) {
	assert.Equal(t, [NumEngines]uint64{2_800_000_000, 1_400_000_000, 1_400_000_000, 1_120_000_000, 1_400_000_000}, DefaultClocks(hwarch.Sunda))
	assert.Equal(t, [NumEngines]uint64{2_400_000_000, 1_200_000_000, 1_200_000_000, 960_000_000, 1_200_000_000}, DefaultClocks(hwarch.Cayman))
	assert.Equal(t, [NumEngines]uint64{2_400_000_000, 1_200_000_000, 1_200_000_000, 1_200_000_000, 1_200_000_000}, DefaultClocks(hwarch.Mariana))
}

func TestPicoseconds(t *testing.T) {
	assert.Equal(t, uint64(893), Picoseconds(1, 1_120_000_000), "892.857 rounds up")
	assert.Equal(t, uint64(1000), Picoseconds(1, 1_000_000_000))
	assert.Equal(t, uint64(53_334), Picoseconds(64, 1_200_000_000))
	assert.Equal(t, uint64(0), Picoseconds(5, 0))
	assert.Equal(t, ^uint64(0), Picoseconds(^uint64(0), 1))
}

func TestClockOverride(t *testing.T) {
	h := newHarness(t, hwarch.Cayman)
	core, err := NewCore(Config{Generation: hwarch.Cayman, SBUF: h.sbuf, PSUM: h.psum, Sync: h.sync, Env: h.env,
		Clocks: [NumEngines]uint64{0, 1e9}})
	require.NoError(t, err)
	assert.Equal(t, [NumEngines]uint64{2_400_000_000, 1e9, 1_200_000_000, 960_000_000, 1_200_000_000}, core.Clocks())
}

// TestCycleCosts runs programs and checks every record's duration (from the
// tracer) against its formula at the engine's clock, and that records run
// back to back.
func TestCycleCosts(t *testing.T) {
	type step struct {
		r      isa.Record
		cycles uint64
	}
	ls := func(dt isa.Dtype, k, m int) isa.Record {
		r := rec(isa.OpLoadStationary, isa.PE)
		r.Src0 = sb(0, dt, k, m)
		return r
	}
	mm := func(dt isa.Dtype, k, m, n int) isa.Record {
		r := rec(isa.OpMultiplyMoving, isa.PE)
		r.Dst, r.Src0 = ps(0, isa.FP32, m, n), sb(0x8000, dt, k, n)
		return r
	}
	ew := func(op isa.Opcode, e isa.Engine, n int) isa.Record {
		r := rec(op, e)
		r.Dst, r.Src0 = sb(0x10000, isa.BF16, 128, n), sb(0x20000, isa.BF16, 128, n)
		return r
	}
	tt := func(e isa.Engine, n int, psum bool) isa.Record {
		r := ew(isa.OpTensorTensor, e, n)
		r.Src1 = isa.Src1{Addr: isa.Addr(psum, 0, 0x100), Dtype: isa.BF16}
		return r
	}
	dstOnly := func(op isa.Opcode, e isa.Engine, n int) isa.Record {
		r := rec(op, e)
		r.Dst = sb(0x10000, isa.FP32, 64, n)
		return r
	}
	tr := func(e isa.Engine, p, f int) isa.Record {
		r := rec(isa.OpTranspose, e)
		r.Dst, r.Src0 = ps(0, isa.FP32, f, p), sb(0, isa.FP32, p, f)
		return r
	}
	red := func(n int) isa.Record {
		r := rec(isa.OpTensorReduce, isa.DVE)
		r.Dst, r.Src0, r.Op = sb(0x10000, isa.FP32, 128, 1), sb(0, isa.FP32, 128, n), isa.ALUAdd
		return r
	}
	dma := rec(isa.OpDMATrigger, isa.SP)
	dma.Aux = 1
	programs := []struct {
		name  string
		eng   isa.Engine
		since hwarch.Generation
		steps []step
	}{
		{"pe", isa.PE, hwarch.Sunda, []step{
			{rec(isa.OpNop, isa.PE), 1}, {rec(isa.OpBarrier, isa.PE), 1}, {rec(isa.OpSem, isa.PE), 1},
			{ls(isa.BF16, 128, 100), 100},
			{mm(isa.BF16, 128, 100, 512), 512 + MMInit}, // first multiply after the load
			{mm(isa.BF16, 128, 100, 10), 64},            // max(min(64, 100), 10)
			{ls(isa.FP32, 16, 32), 64 * 4},              // max(64, 32) ×4 for fp32
			{mm(isa.BF16, 16, 32, 10), 32 + MMInit},     // max(min(64, 32), 10)
			{mm(isa.FP32, 16, 32, 200), 200 * 4},        // fp32 moving: ×4
			{ls(isa.FP16, 8, 128), 128},
			{mm(isa.FP8E4M3, 8, 128, 16), 64 + MMInit},
			{tr(isa.PE, 128, 32), 128}, // max(P, min(64, F))
			{tr(isa.PE, 8, 100), 64},
			{tr(isa.PE, 20, 50), 50},
		}},
		{"act", isa.ACT, hwarch.Sunda, []step{
			{rec(isa.OpNop, isa.ACT), 1},
			{ew(isa.OpActivation, isa.ACT, 100), 100}, {ew(isa.OpActivation, isa.ACT, 10), 64},
			{ew(isa.OpTensorScalar, isa.ACT, 1000), 1000}, {ew(isa.OpTensorCopy, isa.ACT, 30), 64},
			{dmaOn(isa.ACT), 64},
		}},
		{"act-cayman", isa.ACT, hwarch.Cayman, []step{
			{ew(isa.OpCopyCast, isa.ACT, 65), 65}, {ew(isa.OpActReciprocal, isa.ACT, 100), 800},
			{ew(isa.OpActReciprocal, isa.ACT, 4), 64},
		}},
		{"pool", isa.POOL, hwarch.Sunda, []step{
			{tt(isa.POOL, 100, false), 200}, {tt(isa.POOL, 100, true), 100}, {tt(isa.POOL, 20, false), 64},
			{dstOnly(isa.OpIota, isa.POOL, 12), 150 + 12}, {dstOnly(isa.OpMemset, isa.POOL, 500), 500},
			{ew(isa.OpTensorCopy, isa.POOL, 70), 70}, {dmaOn(isa.POOL), 64},
		}},
		{"dve", isa.DVE, hwarch.Sunda, []step{
			{tt(isa.DVE, 40, false), 80}, {ew(isa.OpTensorScalar, isa.DVE, 64), 64},
			{ew(isa.OpReciprocal, isa.DVE, 100), 800}, {ew(isa.OpReciprocal, isa.DVE, 4), 64},
			{red(300), 300}, {red(5), 64}, {tr(isa.DVE, 32, 16), 64}, {dstOnly(isa.OpMemset, isa.DVE, 3), 64},
		}},
		{"sp", isa.SP, hwarch.Sunda, []step{{dma, 64}, {rec(isa.OpSem, isa.SP), 1}}},
		{"mariana poll", isa.SP, hwarch.Mariana, []step{{rec(isa.OpCtrlPollSem, isa.SP), 1}}},
	}
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		for _, p := range programs {
			if gen < p.since {
				continue
			}
			t.Run(p.name, func(t *testing.T) {
				h := newHarness(t, gen)
				tr := &recordingTracer{}
				h.core.SetTrace(tr)
				var recs []isa.Record
				for _, s := range p.steps {
					recs = append(recs, s.r)
				}
				h.env.now = 12_345
				h.mustRun(int(p.eng), recs...)
				hz := h.core.Clocks()[p.eng]
				require.Len(t, tr.slices, len(p.steps))
				at, total := uint64(12_345), uint64(0)
				for i, s := range p.steps {
					want := Picoseconds(s.cycles, hz)
					sl := tr.slices[i]
					require.Equal(t, s.r.Opcode.String(), sl.name)
					require.Equal(t, at, sl.start, "record %d (%s) starts when the previous ends", i, sl.name)
					require.Equal(t, want, sl.end-sl.start, "record %d (%s): %d cycles at %d Hz", i, sl.name, s.cycles, hz)
					at, total = sl.end, total+want
				}
				st := h.core.Stats()[p.eng]
				require.Equal(t, total, st.Busy)
				require.Equal(t, at, h.env.now)
				require.Equal(t, uint32(total/1000), h.core.ReadReg(int(p.eng), RegBusyLo))
			})
		}
	})
}

func dmaOn(e isa.Engine) isa.Record {
	r := rec(isa.OpDMATrigger, e)
	r.Aux, r.Imm0, r.Imm1 = 2, 1, 1
	return r
}

// TestMatmulTimeMatchesDoc checks the figure docs/timing-model.md quotes:
// a 128×128×512 bf16 matmul on Trn2 takes 128 + 512 + 64 PE cycles.
func TestMatmulTimeMatchesDoc(t *testing.T) {
	h := newHarness(t, hwarch.Cayman)
	ls, mm, mm2 := rec(isa.OpLoadStationary, isa.PE), rec(isa.OpMultiplyMoving, isa.PE), rec(isa.OpMultiplyMoving, isa.PE)
	ls.Src0 = sb(0, isa.BF16, 128, 128)
	mm.Dst, mm.Src0 = ps(0, isa.FP32, 128, 512), sb(0x1000, isa.BF16, 128, 512)
	mm2.Dst, mm2.Src0 = mm.Dst, mm.Src0
	h.mustRun(0, ls, mm)
	require.Equal(t, uint64(53_334+240_000), h.env.now, "293.3 ns")
	t0 := h.env.now
	h.mustRun(0, ls, mm, mm2)
	require.Equal(t, uint64(53_334+240_000+213_334), h.env.now-t0, "a second multiply: 512 cycles")
}
