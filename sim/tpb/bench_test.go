package tpb

import (
	"math/rand/v2"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
)

// BenchmarkMatmul128x128x512BF16 is the host time of one full-size PE
// matmul: load_stationary [128 × 128] bf16 and multiply_moving [128 × 512]
// bf16 into PSUM fp32, run functionally.
func BenchmarkMatmul128x128x512BF16(b *testing.B) {
	h := newHarness(b, hwarch.Cayman)
	rng := rand.New(rand.NewPCG(1, 1))
	st, mv := sb(0, isa.BF16, 128, 128), sb(0x1000, isa.BF16, 128, 512)
	h.put(st, randVals(rng, 128*128, 1))
	h.put(mv, randVals(rng, 128*512, 1))
	ls, mm := rec(isa.OpLoadStationary, isa.PE), rec(isa.OpMultiplyMoving, isa.PE)
	ls.Src0 = st
	mm.Dst, mm.Src0 = ps(0, isa.FP32, 128, 512), mv
	h.place(progBase(0), true, ls, mm)
	b.ReportAllocs()
	for b.Loop() {
		h.start(0, progBase(0))
		h.env.run(10)
	}
	if h.core.ReadReg(0, RegStatus) != StatusDone {
		b.Fatalf("status %#x", h.core.ReadReg(0, RegStatus))
	}
}

// BenchmarkSimulatedInstructions measures records per host second for a mix
// of DVE and ACT records on [128 × 64] bf16 tiles, the two engines running
// concurrently in virtual time.
func BenchmarkSimulatedInstructions(b *testing.B) {
	const perEngine = 500
	h := newHarness(b, hwarch.Mariana)
	h.put(sb(0, isa.BF16, 128, 64), randVals(rand.New(rand.NewPCG(2, 2)), 128*64, 2))
	var dve, act []isa.Record
	for i := range perEngine {
		var r isa.Record
		switch i % 3 {
		case 0:
			r = rec(isa.OpTensorTensor, isa.DVE)
			r.Dst, r.Src0, r.Op = sb(0x1000, isa.BF16, 128, 64), sb(0, isa.BF16, 128, 64), isa.ALUAdd
			r.Src1 = isa.Src1{Addr: 0x1000, Dtype: isa.BF16}
		case 1:
			r = rec(isa.OpTensorScalar, isa.DVE)
			r.Dst, r.Src0, r.Op, r.Imm0 = sb(0x1000, isa.BF16, 128, 64), sb(0x1000, isa.BF16, 128, 64), isa.ALUMultiply, f32(0.5)
		default:
			r = rec(isa.OpTensorReduce, isa.DVE)
			r.Dst, r.Src0, r.Op = sb(0x2000, isa.FP32, 128, 1), sb(0x1000, isa.BF16, 128, 64), isa.ALUMax
		}
		dve = append(dve, r)
		a := rec(isa.OpActivation, isa.ACT)
		a.Dst, a.Src0, a.Op, a.Imm0 = sb(0x3000, isa.BF16, 128, 64), sb(0, isa.BF16, 128, 64), uint8(i%int(isa.NumActFuncs)), f32(1)
		if i%2 == 1 {
			a = rec(isa.OpTensorCopy, isa.ACT)
			a.Dst, a.Src0 = sb(0x4000, isa.FP32, 128, 64), sb(0x3000, isa.BF16, 128, 64)
		}
		act = append(act, a)
	}
	h.place(progBase(3), true, dve...)
	h.place(progBase(1), true, act...)
	b.ReportAllocs()
	start := time.Now()
	records := 0
	for b.Loop() {
		h.start(3, progBase(3))
		h.start(1, progBase(1))
		h.env.run(10 * perEngine)
		records += 2 * perEngine
	}
	if h.core.ReadReg(3, RegStatus) != StatusDone || h.core.ReadReg(1, RegStatus) != StatusDone {
		b.Fatal("not done")
	}
	b.ReportMetric(float64(records)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkSPWaitTrigger is the host time per record of an SP program shaped
// like a collective's: per step a wait on a semaphore that DMA completions
// raise one at a time (so the blocked record is re-examined on every change
// that does not yet satisfy it), a wait that already holds, and two
// dma_triggers. The fake device's fetch and event queue are cheap; what is
// measured is the core.
func BenchmarkSPWaitTrigger(b *testing.B) {
	const steps, raises = 1024, 4
	h := newHarness(b, hwarch.Mariana)
	sp := int(isa.SP)
	prog := make([]isa.Record, 0, 4*steps)
	for k := range steps {
		w1, w2 := rec(isa.OpNop, isa.SP), rec(isa.OpNop, isa.SP)
		w1.Wait = isa.Sync{Mode: isa.WaitSemGE, Index: 1, Value: uint16(raises * (k + 1))}
		w2.Wait = isa.Sync{Mode: isa.WaitSemGE, Index: 2, Value: 1}
		prog = append(prog, w1, w2)
		for q := range 2 {
			t := rec(isa.OpDMATrigger, isa.SP)
			t.Aux, t.Imm0, t.Imm1 = 0, uint32(q), 1
			prog = append(prog, t)
		}
	}
	h.place(progBase(sp), true, prog...)
	b.ReportAllocs()
	for b.Loop() {
		h.sync.Semaphores[1], h.sync.Semaphores[2] = 0, 1
		h.env.doorbells = h.env.doorbells[:0]
		h.start(sp, progBase(sp))
		for h.core.ReadReg(sp, RegStatus)&StatusRunning != 0 {
			if !h.env.step() { // blocked on its wait: a DMA completion raises the semaphore
				h.sync.Semaphores[1]++
				h.core.SyncChanged()
			}
		}
	}
	if st := h.core.ReadReg(sp, RegStatus); st != StatusDone || len(h.env.doorbells) != 2*steps {
		b.Fatalf("status %#x, %d doorbells", st, len(h.env.doorbells))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(prog)), "ns/record")
}
