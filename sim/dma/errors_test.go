package dma

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/udma"
)

// patch applies an expected write to a snapshot of the fake bus.
func (r *rig) patch(snap [][]byte, addr uint64, p []byte) {
	r.t.Helper()
	for i, reg := range r.bus.regions {
		if reg.contains(addr, len(p)) {
			copy(snap[i][addr-reg.base:], p)
			return
		}
	}
	r.t.Fatalf("patch %#x: in no region", addr)
}

// goodCopy is a neighbour's transfer that must complete whatever the faulty
// queue does.
type goodCopy struct {
	d        *drvQueue
	dst      uint64
	data     []byte
	doneWant uint64
}

func (r *rig) startGood(d *drvQueue, n int, seed byte) *goodCopy {
	src := r.alloc(r.hbm, n, 64)
	dst := r.alloc(r.host, n, 64)
	g := &goodCopy{d: d, dst: dst, data: r.fill(src, n, seed)}
	d.copy(src, dst, n)
	g.doneWant = d.pushed
	return g
}

// TestErrors makes each error the model reports on one queue, while a
// neighbour queue of the same engine and a queue of another engine run
// their own transfers, and checks: the status bits in both halves, the
// engine's ErrorQueues bit, no stray byte anywhere, the neighbours'
// transfers intact, a halted queue ignoring doorbells, and q_sw_ctrl reset
// bringing the queue back.
func TestErrors(t *testing.T) {
	type fault func(t *testing.T, r *rig, e, q int)

	// bad programs queue q of engine e with good rings and pushes one
	// pair built by mk, then rings the doorbell.
	bad := func(mk func(r *rig, d *drvQueue)) fault {
		return func(t *testing.T, r *rig, e, q int) {
			d := r.setupQueue(e, q, r.host, 32)
			mk(r, d)
			d.doorbell()
		}
	}
	copyTo := func(src, dst func(r *rig) uint64, n int) fault {
		return bad(func(r *rig, d *drvQueue) { d.push(src(r), dst(r), n) })
	}
	hbmBuf := func(r *rig) uint64 { return r.alloc(r.hbm, 4096, 64) }
	hostBuf := func(r *rig) uint64 { return r.alloc(r.host, 4096, 64) }
	at := func(a uint64) func(*rig) uint64 { return func(*rig) uint64 { return a } }
	hbmEnd := func(back uint64) func(*rig) uint64 {
		return func(r *rig) uint64 { return r.hbm.base + uint64(len(r.hbm.mem)) - back }
	}
	// ringed programs the M2S and S2M halves with explicit base, length
	// and cfg, writes one good pair where the ring can hold it, and rings.
	ringed := func(m2sBase, s2mBase func(r *rig) uint64, length uint32, cfg uint32, tailInc uint32) fault {
		return func(t *testing.T, r *rig, e, q int) {
			mb, sb := m2sBase(r), s2mBase(r)
			r.program(e, q, udma.M2S, mb, length, cfg)
			r.program(e, q, udma.S2M, sb, length, cfg)
			d := &drvQueue{r: r, e: e, q: q,
				m2s: swRing{base: mb, size: max(length, 1), phase: 1},
				s2m: swRing{base: sb, size: max(length, 1), phase: 1}}
			if _, err := r.bus.find(mb, 16); err == nil {
				if _, err := r.bus.find(sb, 16); err == nil {
					src := r.alloc(r.hbm, 64, 64)
					r.fill(src, 64, 0xAB)
					d.push(src, r.alloc(r.hbm, 64, 64), 64)
				}
			}
			d.ring(tailInc, tailInc)
		}
	}
	goodRing := func(r *rig) uint64 { return r.alloc(r.host, 1<<20/2, udma.RingAlign) }
	misaligned := func(r *rig) uint64 { return r.alloc(r.host, 32*16+256, udma.RingAlign) + 0x40 }

	cases := []struct {
		name   string
		want   uint32
		engine int // the faulty queue's engine; 0 means 5
		idle   bool
		fault  fault
	}{
		{"src-nowhere", udma.ErrDescAddr, 0, false, copyTo(at(rigNowhere), hbmBuf, 64)},
		{"dst-nowhere", udma.ErrDescAddr, 0, false, copyTo(hbmBuf, at(rigNowhere), 64)},
		{"dst-runs-past-hbm", udma.ErrDescAddr, 0, false, copyTo(hostBuf, hbmEnd(10), 64)},
		{"src-wraps-address-space", udma.ErrDescAddr, 0, false, copyTo(at(^uint64(0)-3), hbmBuf, 64)},
		{"src-neighbour", udma.ErrNeighbour, 0, false, copyTo(at(rigNeighbour+0x1000), hbmBuf, 64)},
		{"dst-neighbour", udma.ErrNeighbour, 0, false, copyTo(hostBuf, at(rigNeighbour+rigNeighSize-8), 64)},
		{"s2m-shorter", udma.ErrLength, 0, false, bad(func(r *rig, d *drvQueue) {
			d.pushDesc(txDesc(r.t, hbmBuf(r), 100, 1), rxDesc(r.t, hbmBuf(r), 99, 1))
		})},
		{"s2m-shorter-than-64KiB", udma.ErrLength, 0, false, bad(func(r *rig, d *drvQueue) {
			d.pushDesc(txDesc(r.t, r.alloc(r.hbm, 64<<10, 64), 64<<10, 1), rxDesc(r.t, r.alloc(r.hbm, 64<<10, 64), 64<<10-1, 1))
		})},
		{"cfg-reset-value", udma.ErrDoorbellDisabled, 0, false, ringed(goodRing, goodRing, 32, udma.QCfgReset, 1)},
		{"cfg-prefetch-only", udma.ErrDoorbellDisabled, 0, false, ringed(goodRing, goodRing, 32, udma.QCfgReset|1<<16, 1)},
		{"engine-idle", udma.ErrDoorbellDisabled, 11, true, copyTo(hostBuf, hbmBuf, 64)},
		{"base-64-not-256-aligned", udma.ErrRingConfig, 0, false, ringed(misaligned, goodRing, 32, udma.QCfgDriver, 1)},
		{"length-31", udma.ErrRingConfig, 0, false, ringed(goodRing, goodRing, 31, udma.QCfgDriver, 1)},
		{"length-33", udma.ErrRingConfig, 0, false, ringed(goodRing, goodRing, 33, udma.QCfgDriver, 1)},
		{"length-16", udma.ErrRingConfig, 0, false, ringed(goodRing, goodRing, 16, udma.QCfgDriver, 1)},
		{"length-2^24", udma.ErrRingConfig, 0, false, ringed(goodRing, goodRing, 1<<24, udma.QCfgDriver, 1)},
		{"length-2^24-1", udma.ErrRingConfig, 0, false, ringed(goodRing, goodRing, 1<<24-1, udma.QCfgDriver, 1)},
		{"s2m-only-misaligned", udma.ErrRingConfig, 0, false, ringed(goodRing, misaligned, 32, udma.QCfgDriver, 1)},
		{"tail-inc-33-of-32", udma.ErrRingOverrun, 0, false, ringed(goodRing, goodRing, 32, udma.QCfgDriver, 33)},
		{"tail-inc-accumulates", udma.ErrRingOverrun, 0, false, func(t *testing.T, r *rig, e, q int) {
			d := r.setupQueue(e, q, r.host, 32)
			src := r.alloc(r.hbm, 64, 64)
			r.fill(src, 64, 1)
			for i := 0; i < 20; i++ {
				d.push(src, r.alloc(r.hbm, 64, 64), 64)
			}
			d.doorbell() // 20 available, the first in flight
			d.ring(13, 13)
		}},
		{"ring-nowhere", udma.ErrRingAddr, 0, false, ringed(at(rigNowhere), goodRing, 32, udma.QCfgDriver, 1)},
		{"s2m-ring-nowhere", udma.ErrRingAddr, 0, false, ringed(goodRing, at(rigNowhere), 32, udma.QCfgDriver, 1)},
		{"ring-in-neighbour-window", udma.ErrNeighbour, 0, false, ringed(at(rigNeighbour), goodRing, 32, udma.QCfgDriver, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOpts{gen: generations[len(tc.name)%3]})
			e, q := 5, 4
			if tc.engine != 0 {
				e = tc.engine
			}
			r.normal(5)
			r.normal(6)
			r.normal(e)
			if tc.idle {
				r.disable(e)
			}
			sameEngine := r.setupQueue(5, 9, r.host, 32)
			otherEngine := r.setupQueue(6, 4, r.host, 32)
			good := []*goodCopy{r.startGood(sameEngine, 3<<16+5, 1), r.startGood(otherEngine, 70000, 2)}
			sameEngine.doorbell()
			otherEngine.doorbell()
			r.clk.RunUntil(r.clk.Now() + 100_000) // the neighbours are mid-transfer

			tc.fault(t, r, e, q)
			later := []*goodCopy{r.startGood(sameEngine, 4096, 3), r.startGood(otherEngine, 1, 4)}
			snap2 := r.bus.snapshot() // the fault's ring writes and the sources are the driver's own
			sameEngine.doorbell()
			otherEngine.doorbell()
			r.mustDrain()

			want := tc.want | udma.StatusHalted
			for _, half := range []uint64{udma.M2S, udma.S2M} {
				assert.Equal(t, want, r.status(e, q, half), "status of %s", halfName(half))
			}
			assert.Equal(t, uint32(1)<<q, r.c.ReadReg(e, udma.M2S+udma.ErrorQueues), "ErrorQueues of the faulty engine")
			for _, other := range []int{5, 6, 11} {
				if other != e {
					assert.Zero(t, r.c.ReadReg(other, udma.M2S+udma.ErrorQueues), "ErrorQueues of engine %d", other)
				}
			}
			qs := r.queue(e, q)
			assert.Zero(t, qs.Done, "the faulty queue completed nothing")
			assert.False(t, qs.InFlight)

			// Memory: only the neighbours' destinations changed.
			for _, g := range later {
				assert.Equal(t, g.doneWant, r.queue(g.d.e, g.d.q).Done, "neighbour %d/%d", g.d.e, g.d.q)
			}
			for _, g := range append(good, later...) {
				r.patch(snap2, g.dst, g.data)
				assert.Zero(t, r.queue(g.d.e, g.d.q).Status, "neighbour %d/%d", g.d.e, g.d.q)
				assert.True(t, bytes.Equal(g.data, r.bus.peek(t, g.dst, len(g.data))), "neighbour %d/%d data", g.d.e, g.d.q)
			}
			assert.True(t, equalSnap(snap2, r.bus.snapshot()), "no stray write")

			// A halted queue ignores doorbells.
			tails := [2]uint32{r.c.ReadReg(e, udma.QueueReg(udma.M2S, q, udma.QTail)), r.c.ReadReg(e, udma.QueueReg(udma.S2M, q, udma.QTail))}
			r.c.WriteReg(e, udma.QueueReg(udma.S2M, q, udma.QTailInc), 1)
			r.c.WriteReg(e, udma.QueueReg(udma.M2S, q, udma.QTailInc), 1)
			assert.Equal(t, tails, [2]uint32{r.c.ReadReg(e, udma.QueueReg(udma.M2S, q, udma.QTail)), r.c.ReadReg(e, udma.QueueReg(udma.S2M, q, udma.QTail))})
			assert.Equal(t, want, r.status(e, q, udma.M2S))
			assert.Zero(t, r.clk.Pending())

			// q_sw_ctrl reset clears it ...
			r.c.WriteReg(e, udma.QueueReg(udma.S2M, q, udma.QSwCtrlS2M), udma.QSwReset)
			for _, half := range []uint64{udma.M2S, udma.S2M} {
				assert.Zero(t, r.status(e, q, half))
				assert.Equal(t, ringReg(0, 1), r.c.ReadReg(e, udma.QueueReg(half, q, udma.QHead)))
				assert.Equal(t, ringReg(0, 1), r.c.ReadReg(e, udma.QueueReg(half, q, udma.QTail)))
			}
			assert.Zero(t, r.c.ReadReg(e, udma.M2S+udma.ErrorQueues))
			// ... and the queue works again once the driver reprograms it.
			r.normal(e)
			d := r.setupQueue(e, q, r.hbm, 32)
			g := r.startGood(d, 5000, 9)
			d.doorbell()
			r.mustDrain()
			assert.Equal(t, g.data, r.bus.peek(t, g.dst, len(g.data)))
			assert.Zero(t, r.status(e, q, udma.M2S))
			assert.Equal(t, uint64(1), r.queue(e, q).Done)
		})
	}
}

func halfName(h uint64) string {
	if h == udma.S2M {
		return "S2M"
	}
	return "M2S"
}

func equalSnap(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestErrorAtCompletion: memory that goes away between the start of a
// transfer and its completion (a freed host buffer) halts the queue with
// ErrDescAddr at completion, nothing lands and the head stays.
func TestErrorAtCompletion(t *testing.T) {
	for i, failing := range []string{"read", "write", "read", "write"} {
		cp := i >= 2
		t.Run(fmt.Sprintf("%s/copier=%v", failing, cp), func(t *testing.T) {
			r := newRig(t, rigOpts{copier: cp})
			r.normal(0)
			d := r.setupQueue(0, 0, r.host, 32)
			src := r.alloc(r.hbm, 256, 64)
			dst := r.alloc(r.host, 256, 64)
			r.fill(src, 256, 1)
			d.push(src, dst, 256)
			d.push(src, dst, 256)
			d.doorbell()
			snap := r.bus.snapshot()
			if failing == "read" {
				r.bus.failRead = 1
			} else {
				r.bus.failWrite = 1
			}
			r.mustDrain()
			assert.Equal(t, udma.ErrDescAddr|udma.StatusHalted, r.status(0, 0, udma.S2M))
			assert.Equal(t, uint32(1), r.c.ReadReg(0, udma.M2S+udma.ErrorQueues))
			assert.Zero(t, r.queue(0, 0).Done)
			assert.Equal(t, ringReg(0, 1), d.reg(udma.M2S, udma.QHead))
			assert.True(t, equalSnap(snap, r.bus.snapshot()), "nothing landed")
		})
	}
}

// TestAbort: change_state ABORT drops in-flight transfers (they never land),
// doorbells on an aborted engine are refused, and after NORMAL a queue that
// was reset stays empty while one that was not runs its pending pair again.
func TestAbort(t *testing.T) {
	r := newRig(t, rigOpts{gen: generations[1]})
	const e = 2
	r.normal(e)
	r.normal(e + 1)
	q0 := r.setupQueue(e, 0, r.host, 32)
	q1 := r.setupQueue(e, 1, r.host, 32)
	other := r.setupQueue(e+1, 0, r.host, 32)
	g0 := r.startGood(q0, 64<<10, 1)
	g1 := r.startGood(q1, 64<<10, 2)
	g2 := r.startGood(other, 64<<10, 3)
	q0.doorbell()
	q1.doorbell()
	other.doorbell()
	require.True(t, r.queue(e, 0).InFlight)
	require.True(t, r.queue(e, 1).InFlight)
	first, _ := r.clk.Next()
	r.clk.RunUntil(first / 2) // half-way through the first transfer
	snap := r.bus.snapshot()

	r.c.WriteReg(e, udma.S2M+udma.ChangeState, udma.ChangeAbort) // either half's change_state
	assert.Equal(t, udma.EngineStateWord(udma.StateAbort), r.c.ReadReg(e, udma.M2S+udma.EngineState))
	assert.Equal(t, udma.EngineStateWord(udma.StateAbort), r.c.ReadReg(e, udma.S2M+udma.EngineState))
	for q := 0; q < 2; q++ {
		assert.False(t, r.queue(e, q).InFlight)
	}
	r.mustDrain()
	// The other engine finished; the aborted engine moved nothing.
	r.patch(snap, g2.dst, g2.data)
	assert.True(t, equalSnap(snap, r.bus.snapshot()), "aborted transfers never land")
	assert.Zero(t, r.queue(e, 0).Done)
	assert.Zero(t, r.queue(e, 1).Done)
	assert.Equal(t, uint64(1), r.queue(e+1, 0).Done)
	assert.Equal(t, udma.StatusBusy, r.status(e, 0, udma.M2S), "the aborted pair is still available")

	// A doorbell on an aborted engine is refused.
	q2 := r.setupQueue(e, 2, r.host, 32)
	r.startGood(q2, 16, 4)
	q2.doorbell()
	assert.Equal(t, udma.ErrDoorbellDisabled|udma.StatusHalted, r.status(e, 2, udma.M2S))

	// Queue 0 is reset by the driver; queue 1 is not. Then NORMAL.
	q0.reset()
	r.normal(e)
	assert.Equal(t, udma.EngineStateWord(udma.StateNormal), r.c.ReadReg(e, udma.M2S+udma.EngineState))
	r.mustDrain()
	assert.Zero(t, r.queue(e, 0).Done, "a reset queue forgets the aborted pair")
	assert.Equal(t, make([]byte, len(g0.data)), r.bus.peek(t, g0.dst, len(g0.data)))
	assert.Equal(t, uint64(1), r.queue(e, 1).Done, "an unreset queue runs its pending pair again")
	assert.Equal(t, g1.data, r.bus.peek(t, g1.dst, len(g1.data)))
}

// TestDisable: change_state DISABLE lets the in-flight pair finish but
// starts no new one; NORMAL resumes where it stopped.
func TestDisable(t *testing.T) {
	r := newRig(t, rigOpts{})
	const e = 9
	r.normal(e)
	d := r.setupQueue(e, 3, r.host, 32)
	var gs []*goodCopy
	for i := 0; i < 3; i++ {
		gs = append(gs, r.startGood(d, 1000*(i+1), byte(i)))
	}
	d.doorbell()
	r.c.WriteReg(e, udma.M2S+udma.ChangeState, udma.ChangeDisable)
	assert.Equal(t, uint32(0), r.c.ReadReg(e, udma.M2S+udma.EngineState), "idle in every field")
	r.mustDrain()
	qs := r.queue(e, 3)
	assert.Equal(t, uint64(1), qs.Done, "the in-flight pair finishes")
	assert.Equal(t, gs[0].data, r.bus.peek(t, gs[0].dst, len(gs[0].data)))
	assert.Equal(t, make([]byte, len(gs[1].data)), r.bus.peek(t, gs[1].dst, len(gs[1].data)), "no new pair starts")
	assert.Equal(t, uint32(2), qs.M2S.Avail)
	assert.Equal(t, udma.StatusBusy, r.status(e, 3, udma.S2M))

	// A doorbell on a disabled engine is refused (on another queue).
	d2 := r.setupQueue(e, 4, r.host, 32)
	r.startGood(d2, 8, 7)
	d2.doorbell()
	assert.Equal(t, udma.ErrDoorbellDisabled|udma.StatusHalted, r.status(e, 4, udma.S2M))

	r.normal(e)
	r.mustDrain()
	assert.Equal(t, uint64(3), r.queue(e, 3).Done)
	for i, g := range gs {
		assert.Equal(t, g.data, r.bus.peek(t, g.dst, len(g.data)), "copy %d", i)
	}
	assert.Zero(t, r.status(e, 3, udma.M2S))
}

// TestChangeStatePriority: ABORT wins over DISABLE and NORMAL in one write,
// DISABLE over NORMAL; a write of 0 changes nothing.
func TestChangeStatePriority(t *testing.T) {
	for _, tc := range []struct {
		v    uint32
		want uint32
	}{
		{udma.ChangeNormal | udma.ChangeDisable | udma.ChangeAbort, udma.StateAbort},
		{udma.ChangeNormal | udma.ChangeDisable, udma.StateIdle},
		{udma.ChangeNormal, udma.StateNormal},
		{0, udma.StateNormal},
		{1 << 3, udma.StateNormal},
	} {
		t.Run(fmt.Sprintf("%#x", tc.v), func(t *testing.T) {
			r := newRig(t, rigOpts{})
			r.normal(1)
			r.c.WriteReg(1, udma.M2S+udma.ChangeState, tc.v)
			assert.Equal(t, udma.EngineStateWord(tc.want), r.c.ReadReg(1, udma.S2M+udma.EngineState))
			assert.Zero(t, r.c.ReadReg(1, udma.M2S+udma.ChangeState), "change_state is a command, not storage")
		})
	}
}
