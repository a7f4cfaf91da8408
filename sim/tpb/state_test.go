package tpb

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/internal/units"
)

// pipeline starts a small four-engine program: PE matmuls into PSUM, ACT
// waits for them and activates, DVE waits for ACT and reduces, SP rings a
// doorbell after DVE. It returns the tensor the run ends in.
func pipeline(h *harness) isa.Tensor {
	rng := rand.New(rand.NewPCG(42, 42))
	st, mv := sb(0, isa.BF16, 64, 32), sb(0x1000, isa.BF16, 64, 256)
	h.put(st, randVals(rng, 64*32, 1))
	h.put(mv, randVals(rng, 64*256, 1))
	acc := ps(0, isa.FP32, 32, 256)
	ls, mm1, mm2 := rec(isa.OpLoadStationary, isa.PE), rec(isa.OpMultiplyMoving, isa.PE), rec(isa.OpMultiplyMoving, isa.PE)
	ls.Src0 = st
	mm1.Dst, mm1.Src0 = acc, mv
	mm2.Dst, mm2.Src0, mm2.Flags = acc, mv, isa.FlagAccumulate
	mm2.Signal = isa.Sync{Mode: isa.SignalSemSet, Index: 10, Value: 1}

	act := rec(isa.OpActivation, isa.ACT)
	act.Dst, act.Src0, act.Op, act.Imm0 = sb(0x4000, isa.BF16, 32, 256), acc, isa.ActTanh, f32(0.5)
	act.Wait = isa.Sync{Mode: isa.WaitSemEQ, Index: 10, Value: 1}
	act.Signal = isa.Sync{Mode: isa.SignalEventSet, Index: 3}

	red := rec(isa.OpTensorReduce, isa.DVE)
	red.Dst, red.Src0, red.Op = sb(0x8000, isa.FP32, 32, 1), act.Dst, isa.ALUMax
	red.Wait = isa.Sync{Mode: isa.WaitEvent, Index: 3}
	red.Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: 11, Value: 1}

	db := rec(isa.OpDMATrigger, isa.SP)
	db.Aux, db.Imm0, db.Imm1 = 5, 2, 9
	db.Wait = isa.Sync{Mode: isa.WaitSemGE, Index: 11, Value: 1}

	h.place(progBase(0), true, ls, mm1, mm2)
	h.place(progBase(1), true, rec(isa.OpNop, isa.ACT), act)
	h.place(progBase(3), true, red)
	h.place(progBase(4), true, db)
	for _, e := range []int{0, 1, 3, 4} {
		h.start(e, progBase(e))
	}
	return red.Dst
}

// snapshot is everything a device would save: the core, its sync block,
// the event queue, the clock and the memories.
type snapshot struct {
	core       CoreState
	sync       SyncState
	now, seq   uint64
	q          []event
	sbuf, psum *fakeMem
}

func take(h *harness) snapshot {
	return snapshot{core: h.core.State(), sync: *h.sync, now: h.env.now, seq: h.env.seq,
		q: append([]event(nil), h.env.q...), sbuf: h.sbuf.clone(), psum: h.psum.clone()}
}

func TestStateRestoreMidRun(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		// The reference run, to the end.
		ref := newHarness(t, gen)
		out := pipeline(ref)
		ref.run()
		for _, e := range []int{0, 1, 3, 4} {
			require.Equal(t, uint32(StatusDone), ref.core.ReadReg(e, RegStatus), "engine %d", e)
		}
		end := ref.env.now

		for _, cut := range []uint64{1, end / 5, end / 2, end * 9 / 10} {
			h := newHarness(t, gen)
			pipeline(h)
			h.env.runUntil(cut)
			snap := take(h)

			// Mutating the copy must not reach the core.
			snap2 := h.core.State()
			snap2.Engines[0].PC++
			if snap2.PE.Stationary != nil {
				snap2.PE.Stationary[0] = 99
			}
			require.Equal(t, snap.core, h.core.State())

			h2 := newHarness(t, gen)
			h2.sbuf, h2.psum = snap.sbuf, snap.psum
			core, err := NewCore(Config{Generation: gen, SBUF: h2.sbuf, PSUM: h2.psum, Sync: h2.sync, Env: h2.env})
			require.NoError(t, err)
			h2.core, h2.env.core = core, core
			*h2.sync = snap.sync
			h2.env.now, h2.env.seq, h2.env.q, h2.env.code = snap.now, snap.seq, snap.q, h.env.code
			require.NoError(t, h2.core.Restore(snap.core))
			require.Equal(t, snap.core, h2.core.State())
			h2.run()

			require.Equal(t, end, h2.env.now, "cut at %d", cut)
			require.Equal(t, ref.core.Stats(), h2.core.Stats())
			require.Equal(t, *ref.sync, *h2.sync)
			require.Equal(t, ref.get(out), h2.get(out))
			require.Equal(t, ref.env.doorbells, h2.env.doorbells)
			require.Equal(t, ref.core.State(), h2.core.State())
		}
	})
}

func TestRestoreRejects(t *testing.T) {
	h := newHarness(t, hwarch.Cayman)
	pipeline(h)
	h.env.runUntil(100)
	base := h.core.State()
	badRec, nopRec := rec(isa.OpActivation, isa.DVE), rec(isa.OpNop, isa.POOL)
	bad := badRec.Bytes()
	cases := map[string]func(s *CoreState){
		"status bits":           func(s *CoreState) { s.Engines[1].Status = 1 << 7 },
		"error code":            func(s *CoreState) { s.Engines[1].Error = 9 },
		"in flight not fetched": func(s *CoreState) { s.Engines[0].Fetched = false },
		"orphan":                func(s *CoreState) { s.Engines[2].Orphan = true },
		"halting":               func(s *CoreState) { s.Engines[2].Halting = true },
		"ends before start":     func(s *CoreState) { s.Engines[0].Start = s.Engines[0].End + 1 },
		"waiting, not fetched":  func(s *CoreState) { s.Engines[2].Status = StatusRunning | StatusWaiting },
		"misaligned pc":         func(s *CoreState) { s.Engines[1].PC += 8 },
		"fetched on a stopped engine": func(s *CoreState) {
			s.Engines[2].Fetched, s.Engines[2].Raw = true, nopRec.Bytes()
		},
		"storage at a defined register": func(s *CoreState) { s.Engines[0].Regs = map[uint64]uint32{RegStatus: 1} },
		"invalid record":                func(s *CoreState) { s.Engines[3].Raw = bad },
		"stationary shape":              func(s *CoreState) { s.PE = PEState{Loaded: true, K: 2, M: 2, Stationary: []float32{1}} },
		"stationary K 0":                func(s *CoreState) { s.PE = PEState{Loaded: true} },
		"tile without load":             func(s *CoreState) { s.PE = PEState{K: 1, M: 1, Stationary: []float32{1}} },
		// Issue 13, item 7: times past units.MaxTimePS.
		"end 2^64-1":          func(s *CoreState) { s.Engines[0].End = math.MaxUint64 },
		"busy until too late": func(s *CoreState) { s.Engines[4].BusyUntil = units.MaxTimePS + 1 },
		"wait since too late": func(s *CoreState) { s.Engines[3].WaitSince = units.MaxTimePS + 1 },
		"busy ps too long":    func(s *CoreState) { s.Engines[1].BusyPS = math.MaxUint64 },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			s := h.core.State()
			mutate(&s)
			require.ErrorIs(t, h.core.Restore(s), ErrInvalidState)
			require.Equal(t, base, h.core.State(), "a rejected state changes nothing")
		})
	}
}

func TestTracer(t *testing.T) {
	h := newHarness(t, hwarch.Sunda)
	tr := &recordingTracer{}
	h.core.SetTrace(tr)
	pipeline(h)
	h.run()
	byTrack := map[string][]string{}
	for _, s := range tr.slices {
		require.LessOrEqual(t, s.start, s.end)
		byTrack[s.track] = append(byTrack[s.track], s.name)
	}
	require.Equal(t, map[string][]string{
		"nc0/PE":  {"load_stationary", "multiply_moving", "multiply_moving"},
		"nc0/ACT": {"nop", "wait", "activation"},
		"nc0/DVE": {"wait", "tensor_reduce"},
		"nc0/SP":  {"wait", "dma_trigger"},
	}, byTrack)
	h.core.SetTrace(nil)
	h.mustRun(4, rec(isa.OpNop, isa.SP))
	require.Len(t, tr.slices, 10)
}

// TestReentrantDevice: a device that runs its event loop inside
// SyncChanged makes Fire re-entrant; the core defers such completions and
// the synchronised pipeline still computes the same result.
func TestReentrantDevice(t *testing.T) {
	ref := newHarness(t, hwarch.Cayman)
	out := pipeline(ref)
	ref.run()

	h := newHarness(t, hwarch.Cayman)
	h.env.onSync = func() {
		h.env.step()
		h.core.SyncChanged()
	}
	pipeline(h)
	// POOL keeps an event pending, so the device has something to run.
	busy := make([]isa.Record, 200)
	for i := range busy {
		busy[i] = rec(isa.OpMemset, isa.POOL)
		busy[i].Dst = sb(0x20000, isa.FP32, 1, 1)
	}
	h.launch(2, busy...)
	h.run()
	for _, e := range []int{0, 1, 2, 3, 4} {
		require.Equal(t, uint32(StatusDone), h.core.ReadReg(e, RegStatus), "engine %d", e)
	}
	require.Equal(t, ref.get(out), h.get(out))
	require.Equal(t, *ref.sync, *h.sync)
	require.Len(t, h.env.doorbells, 1)
}

// TestRestoreDropsDecodedRecord: the core keeps each engine's fetched record
// decoded between its fetch and its completion; a Restore that replaces the
// fetched record must be acted on as restored, not as decoded before.
func TestRestoreDropsDecodedRecord(t *testing.T) {
	sp := int(isa.SP)
	trigger := rec(isa.OpDMATrigger, isa.SP)
	trigger.Aux, trigger.Imm0, trigger.Imm1, trigger.Flags = 0, 1, 7, isa.FlagLast
	otherWait := rec(isa.OpNop, isa.SP)
	otherWait.Wait, otherWait.Flags = isa.Sync{Mode: isa.WaitSemGE, Index: 6, Value: 1}, isa.FlagLast
	rung := Picoseconds(DMATriggerCycles, DefaultClocks(hwarch.Mariana)[sp]) // the trigger's completion
	for _, tc := range []struct {
		name       string
		restored   isa.Record
		wantBells  []doorbell
		wantStatus uint32
	}{
		{"a trigger without a wait replaces the wait", trigger, []doorbell{{0, 1, 7, rung}}, StatusDone},
		{"a wait that does not hold replaces one that does", otherWait, nil, StatusRunning | StatusWaiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, hwarch.Mariana)
			wait := rec(isa.OpNop, isa.SP)
			wait.Wait = isa.Sync{Mode: isa.WaitSemGE, Index: 5, Value: 1}
			h.launch(sp, wait)
			require.Equal(t, uint32(StatusRunning|StatusWaiting), h.core.ReadReg(sp, RegStatus))
			s := h.core.State()
			s.Engines[sp].Raw = tc.restored.Bytes()
			require.NoError(t, h.core.Restore(s))
			h.sync.Semaphores[5] = 1 // the wait decoded before the restore now holds
			h.core.SyncChanged()
			h.run()
			require.Equal(t, tc.wantBells, h.env.doorbells)
			require.Equal(t, tc.wantStatus, h.core.ReadReg(sp, RegStatus))
		})
	}
}
