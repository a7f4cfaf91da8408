package dma

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/internal/units"
)

// TestQueueRegisters: what each queue register stores and reads back.
func TestQueueRegisters(t *testing.T) {
	type rw struct {
		name       string
		reg        uint64
		write, got uint32
	}
	cases := []rw{
		{"cfg", udma.QCfg, 0xDEAD_BEEF, 0xDEAD_BEEF},
		{"cfg-driver", udma.QCfg, udma.QCfgDriver, udma.QCfgDriver},
		{"base-lo-bits-5-0-read-0", udma.QBaseLo, 0x1234_567F, 0x1234_5640},
		{"base-lo-aligned", udma.QBaseLo, 0xFFFF_FF00, 0xFFFF_FF00},
		{"base-hi", udma.QBaseHi, 0xFFFF_FFFF, 0xFFFF_FFFF},
		{"length-24-bits", udma.QLength, 0xFFFF_FFFF, 0xFF_FFFF},
		{"length-2^24-wraps-to-0", udma.QLength, 1 << 24, 0},
		{"length", udma.QLength, 8192, 8192},
		{"status-read-only", udma.QStatus, 0xFFFF_FFFF, 0},
		{"head-read-only", udma.QHead, 0x1234, udma.FirstRingID << 30},
		{"tail-read-only", udma.QTail, 0x1234, udma.FirstRingID << 30},
		{"current-ptr-storage", 0x40, 0x55, 0x55},
		{"completion-base-storage", 0x44, 0xAA, 0xAA},
	}
	for _, half := range []uint64{udma.M2S, udma.S2M} {
		for _, tc := range cases {
			t.Run(halfName(half)+"/"+tc.name, func(t *testing.T) {
				r := newRig(t, rigOpts{})
				for _, q := range []int{0, 7, 15} {
					r.c.WriteReg(33, udma.QueueReg(half, q, tc.reg), tc.write)
					assert.Equal(t, tc.got, r.c.ReadReg(33, udma.QueueReg(half, q, tc.reg)), "queue %d", q)
					// The other half and the neighbour queues are untouched.
					other := uint64(udma.S2M)
					if half == udma.S2M {
						other = udma.M2S
					}
					fresh := newRig(t, rigOpts{})
					assert.Equal(t, fresh.c.ReadReg(33, udma.QueueReg(other, q, tc.reg)), r.c.ReadReg(33, udma.QueueReg(other, q, tc.reg)))
					if q < 15 {
						assert.Equal(t, fresh.c.ReadReg(33, udma.QueueReg(half, q+1, tc.reg)), r.c.ReadReg(33, udma.QueueReg(half, q+1, tc.reg)))
					}
				}
			})
		}
	}
}

// TestResetValues: a fresh engine's registers.
func TestResetValues(t *testing.T) {
	r := newRig(t, rigOpts{})
	for _, half := range []uint64{udma.M2S, udma.S2M} {
		for q := 0; q < udma.Queues; q++ {
			assert.Equal(t, udma.QCfgReset, r.c.ReadReg(0, udma.QueueReg(half, q, udma.QCfg)))
			assert.Equal(t, uint32(1<<30), r.c.ReadReg(0, udma.QueueReg(half, q, udma.QHead)), "phase 1")
			assert.Equal(t, uint32(1<<30), r.c.ReadReg(0, udma.QueueReg(half, q, udma.QTail)), "phase 1")
			assert.Zero(t, r.c.ReadReg(0, udma.QueueReg(half, q, udma.QStatus)))
			assert.Zero(t, r.c.ReadReg(0, udma.QueueReg(half, q, udma.QLength)))
		}
		// NORMAL out of reset: driver 2.24.7.0 rings its H2T queues after
		// ndma_init without ever writing change_state (docs/dma-model.md).
		assert.Equal(t, udma.EngineStateWord(udma.StateNormal), r.c.ReadReg(0, half+udma.EngineState), "normal")
	}
	assert.Zero(t, r.c.ReadReg(0, udma.M2S+udma.ErrorQueues))
}

// TestTailIncReadsZero: tail_inc is a doorbell, not storage.
func TestTailIncReadsZero(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.normal(0)
	d := r.setupQueue(0, 0, r.host, 32)
	d.push(r.alloc(r.hbm, 4, 4), r.alloc(r.hbm, 4, 4), 4)
	d.doorbell()
	assert.Zero(t, d.reg(udma.M2S, udma.QTailInc))
	assert.Zero(t, d.reg(udma.S2M, udma.QTailInc))
	assert.Equal(t, ringReg(1, 1), d.reg(udma.M2S, udma.QTail))
	// A zero doorbell changes nothing.
	d.ring(0, 0)
	assert.Equal(t, ringReg(1, 1), d.reg(udma.M2S, udma.QTail))
	assert.Zero(t, r.queue(0, 0).Status)
}

// TestSwCtrl: q_sw_ctrl stores its other bits; bit 8 resets and reads 0; the
// other half's offset is plain storage.
func TestSwCtrl(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.c.WriteReg(2, udma.QueueReg(udma.M2S, 3, udma.QSwCtrlM2S), 0x1FF)
	assert.Equal(t, uint32(0xFF), r.c.ReadReg(2, udma.QueueReg(udma.M2S, 3, udma.QSwCtrlM2S)))
	r.c.WriteReg(2, udma.QueueReg(udma.S2M, 3, udma.QSwCtrlS2M), 0x3_0100)
	assert.Equal(t, uint32(0x3_0000), r.c.ReadReg(2, udma.QueueReg(udma.S2M, 3, udma.QSwCtrlS2M)))
	// M2S 0x64 and S2M 0xB0 are not q_sw_ctrl: storage, no reset.
	r.normal(2)
	d := r.setupQueue(2, 3, r.host, 32)
	d.push(r.alloc(r.hbm, 4, 4), rigNowhere, 4)
	d.doorbell()
	require.NotZero(t, r.queue(2, 3).Status)
	r.c.WriteReg(2, udma.QueueReg(udma.M2S, 3, udma.QSwCtrlS2M), udma.QSwReset)
	r.c.WriteReg(2, udma.QueueReg(udma.S2M, 3, udma.QSwCtrlM2S), udma.QSwReset)
	assert.NotZero(t, r.queue(2, 3).Status, "no reset through the wrong offsets")
	assert.Equal(t, uint32(udma.QSwReset), r.c.ReadReg(2, udma.QueueReg(udma.M2S, 3, udma.QSwCtrlS2M)))
	// Either half's reset resets the pair.
	r.c.WriteReg(2, udma.QueueReg(udma.M2S, 3, udma.QSwCtrlM2S), udma.QSwReset)
	assert.Zero(t, r.queue(2, 3).Status)
}

// TestEngineRegisters: EngineState shows the state in every field, read-only
// registers ignore writes, everything else is plain storage.
func TestEngineRegisters(t *testing.T) {
	r := newRig(t, rigOpts{gen: generations[2]})
	const e = 131
	for _, tc := range []struct {
		change uint32
		state  uint32
		word   uint32
	}{
		{udma.ChangeNormal, udma.StateNormal, 0x1111},
		{udma.ChangeAbort, udma.StateAbort, 0x2222},
		{udma.ChangeDisable, udma.StateIdle, 0},
	} {
		r.c.WriteReg(e, udma.M2S+udma.ChangeState, tc.change)
		assert.Equal(t, tc.word, udma.EngineStateWord(tc.state))
		assert.Equal(t, tc.word, r.c.ReadReg(e, udma.M2S+udma.EngineState))
		assert.Equal(t, tc.word, r.c.ReadReg(e, udma.S2M+udma.EngineState))
	}
	r.normal(e)
	r.c.WriteReg(e, udma.M2S+udma.EngineState, 0)
	r.c.WriteReg(e, udma.S2M+udma.EngineState, 0)
	assert.Equal(t, uint32(0x1111), r.c.ReadReg(e, udma.M2S+udma.EngineState), "EngineState is read-only")
	r.c.WriteReg(e, udma.M2S+udma.ErrorQueues, 0xFFFF)
	assert.Zero(t, r.c.ReadReg(e, udma.M2S+udma.ErrorQueues), "ErrorQueues is read-only")

	storage := []uint64{
		udma.M2S + 0x20C, // err_log_mask
		udma.M2S + 0x254, // cfg_len
		udma.M2S + 0x258, // stream_cfg
		udma.M2S + 0x118, // axi data_rd_cfg
		udma.M2S + 0x604, // dma_version
		udma.S2M + 0x210, // ErrorQueues exists in the M2S block only
		udma.S2M + 0x380, // s2m_comp cfg_1c
		0x38000 + 0x2300, // GEN axi cfg_1
		0x3C000 + 0x400,  // GEN_EX vmpr
		udma.EngineRegSize - 4,
	}
	for i, off := range storage {
		v := uint32(0x1000_0001 * (i + 1))
		r.c.WriteReg(e, off, v)
		assert.Equal(t, v, r.c.ReadReg(e, off), "storage at %#x", off)
		assert.Zero(t, r.c.ReadReg(e-1, off), "engines do not share storage")
	}
}

// TestReset: Reset puts every engine back to power-on; ResetEngines only
// the chosen ones.
func TestReset(t *testing.T) {
	busy := func(t *testing.T) *rig {
		r := newRig(t, rigOpts{})
		for _, e := range []int{0, 17, 33} {
			r.normal(e)
			d := r.setupQueue(e, 2, r.host, 32)
			for i := 0; i < 3; i++ {
				d.push(r.alloc(r.hbm, 4096, 64), r.alloc(r.host, 4096, 64), 4096)
			}
			d.doorbell()
			r.c.WriteReg(e, udma.M2S+0x254, 0x010F_FFFF)
		}
		r.clk.RunUntil(100_000)
		require.NotZero(t, r.c.State().HBMFree)
		return r
	}
	strip := func(s State) State {
		for e := range s.Engines {
			for q := range s.Engines[e].Queues {
				s.Engines[e].Queues[q].Epoch = 0 // epochs only grow
			}
		}
		return s
	}
	fresh := strip(newRig(t, rigOpts{}).c.State())

	t.Run("Reset", func(t *testing.T) {
		r := busy(t)
		r.c.Reset()
		assert.Equal(t, fresh, strip(r.c.State()))
		assert.Zero(t, r.c.ReadReg(17, udma.M2S+0x254))
		r.mustDrain()
		assert.Equal(t, fresh, strip(r.c.State()), "old completions do nothing")
	})
	t.Run("ResetEngines", func(t *testing.T) {
		r := busy(t)
		before := r.c.State()
		r.c.ResetEngines(func(e int) bool { return e == 17 })
		after := r.c.State()
		assert.Equal(t, fresh.Engines[17], strip(r.c.State()).Engines[17])
		assert.Equal(t, before.Engines[0], after.Engines[0])
		assert.Equal(t, before.Engines[33], after.Engines[33])
		assert.Equal(t, before.HBMFree, after.HBMFree, "the shared paths are the device's")
		r.mustDrain()
		assert.Equal(t, uint64(3), r.queue(0, 2).Done)
		assert.Zero(t, r.queue(17, 2).Done)
		assert.Equal(t, uint64(3), r.queue(33, 2).Done)
	})
}

// TestResetDropsPendingCompletions: a completion event scheduled before a
// reset must not complete a transfer started after it (the device keeps its
// event queue across a DMA reset).
func TestResetDropsPendingCompletions(t *testing.T) {
	for _, how := range []string{"Reset", "ResetEngines"} {
		t.Run(how, func(t *testing.T) {
			r := newRig(t, rigOpts{})
			r.normal(1)
			d := r.setupQueue(1, 0, r.host, 32)
			d.push(r.alloc(r.hbm, 1024, 64), r.alloc(r.hbm, 1024, 64), 1024)
			d.doorbell()
			stale, _ := r.clk.Next()
			if how == "Reset" {
				r.c.Reset()
			} else {
				r.c.ResetEngines(func(e int) bool { return e == 1 })
			}
			// The driver brings the engine and queue up again at once and
			// starts a longer transfer.
			r.normal(1)
			d = r.setupQueue(1, 0, r.host, 32)
			src := r.alloc(r.hbm, 64<<10, 64)
			dst := r.alloc(r.hbm, 64<<10, 64)
			want := r.fill(src, 64<<10, 5)
			d.push(src, dst, 64<<10)
			d.doorbell()
			r.clk.RunUntil(stale)
			assert.Zero(t, r.queue(1, 0).Done, "the stale completion must not complete the new transfer")
			r.mustDrain()
			assert.Equal(t, uint64(1), r.queue(1, 0).Done)
			assert.Equal(t, want, r.bus.peek(t, dst, 64<<10))
		})
	}
}

// TestStateRestore: State is a deep copy; Restore takes a deep copy and
// continues where the state left off; bad states are refused.
func TestStateRestore(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.normal(4)
	d := r.setupQueue(4, 6, r.host, 32)
	src := r.alloc(r.hbm, 8192, 64)
	dst := r.alloc(r.host, 8192, 64)
	want := r.fill(src, 8192, 3)
	d.copy(src, dst, 4096)
	d.copy(src+4096, dst+4096, 4096)
	d.doorbell()
	r.c.WriteReg(4, udma.M2S+0x254, 77)
	s := r.c.State()
	require.True(t, s.Engines[4].Queues[6].InFlight)

	// Mutating the copy does not reach the controller.
	s.Engines[4].Regs[udma.M2S+0x254] = 99
	s.Engines[4].Queues[6].Done = 1000
	s.HBMFree = 1
	assert.Equal(t, uint32(77), r.c.ReadReg(4, udma.M2S+0x254))
	assert.Zero(t, r.queue(4, 6).Done)
	assert.NotEqual(t, uint64(1), r.c.State().HBMFree)
	s = r.c.State()

	// Restore into a second controller with a copy of the memory and the
	// pending events: it finishes the same way.
	r2 := newRig(t, rigOpts{})
	for i, reg := range r.bus.regions {
		copy(r2.bus.regions[i].mem, reg.mem)
	}
	require.NoError(t, r2.c.Restore(s))
	s.Engines[4].Regs[udma.M2S+0x254] = 5 // the caller's copy stays its own
	assert.Equal(t, uint32(77), r2.c.ReadReg(4, udma.M2S+0x254))
	r2.clk.now = r.clk.now
	r2.clk.heap = append([]event(nil), r.clk.heap...)
	r2.clk.seq = r.clk.seq
	r.mustDrain()
	r2.mustDrain()
	assert.Equal(t, want, r2.bus.peek(t, dst, 8192))
	assert.Equal(t, r.c.State(), r2.c.State())

	// Restore onto itself of its own state changes nothing.
	before := r.c.State()
	require.NoError(t, r.c.Restore(before))
	assert.Equal(t, before, r.c.State())

	bad := []struct {
		name string
		mut  func(s *State)
	}{
		{"too-few-engines", func(s *State) { s.Engines = s.Engines[:len(s.Engines)-1] }},
		{"too-many-engines", func(s *State) { s.Engines = append(s.Engines, s.Engines[0]) }},
		{"no-engines", func(s *State) { s.Engines = nil }},
		{"head-phase-4", func(s *State) { s.Engines[4].Queues[6].M2S.HeadRing = 4 }},
		{"tail-phase-255", func(s *State) { s.Engines[0].Queues[15].S2M.TailRing = 255 }},
		{"head-equals-length", func(s *State) { s.Engines[4].Queues[6].S2M.Head = 32 }},
		{"tail-beyond-length", func(s *State) { s.Engines[4].Queues[6].M2S.Tail = 1000 }},
		{"avail-beyond-length", func(s *State) { s.Engines[4].Queues[6].M2S.Avail = 33 }},
		// Issue 13, items 7 and 12: enums, register storage, status bits,
		// transfers and times that cannot be.
		{"engine-state-7", func(s *State) { s.Engines[3].State = 7 }},
		{"busy-past-the-latest-time", func(s *State) { s.Engines[3].BusyUntil = units.MaxTimePS + 1 }},
		{"hbm-free-2^64-1", func(s *State) { s.HBMFree = math.MaxUint64 }},
		{"host-free-past-the-latest-time", func(s *State) { s.HostFree = units.MaxTimePS + 1 }},
		{"lands-past-the-latest-time", func(s *State) { s.Engines[1].Queues[2].Current.Lands = math.MaxUint64 }},
		{"negative-transfer", func(s *State) { s.Engines[1].Queues[2].Current.Len = -1 }},
		{"transfer-wraps", func(s *State) { s.Engines[1].Queues[2].Current = Transfer{Src: math.MaxUint64 - 2, Len: 8} }},
		{"class-9", func(s *State) { s.Engines[1].Queues[2].Current.DstC = 9 }},
		{"reduce-op-9", func(s *State) { s.Engines[1].Queues[2].Current.Reduce = udma.Reduce{Op: 9} }},
		{"status-bit-30", func(s *State) { s.Engines[0].Queues[0].Status = 1 << 30 }},
		{"length-past-24-bits", func(s *State) { s.Engines[0].Queues[0].M2S.Length = 1 << 24 }},
		{"base-low-bits", func(s *State) { s.Engines[0].Queues[0].S2M.BaseLo = 0x21 }},
		{"storage-past-the-window", func(s *State) { s.Engines[0].Regs = map[uint64]uint32{udma.EngineRegSize: 1} }},
		{"storage-misaligned", func(s *State) { s.Engines[0].Regs = map[uint64]uint32{0x102: 1} }},
		{"storage-at-a-queue-register", func(s *State) { s.Engines[0].Regs = map[uint64]uint32{udma.QueueBase + udma.QCfg: 1} }},
		{"storage-at-the-other-halfs-sw-ctrl", func(s *State) {
			s.Engines[0].Regs = map[uint64]uint32{udma.S2M + udma.QueueBase + 2*udma.QueueStride + udma.QSwCtrlS2M: 1}
		}},
		{"storage-at-change-state", func(s *State) { s.Engines[0].Regs = map[uint64]uint32{udma.S2M + udma.ChangeState: 1} }},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			s := r.c.State()
			tc.mut(&s)
			before := r.c.State()
			err := r.c.Restore(s)
			assert.ErrorIs(t, err, ErrInvalidState)
			assert.Equal(t, before, r.c.State(), "a refused restore changes nothing")
		})
	}
}

// TestQueueBounds: Queue refuses ids outside the device; Fire ignores
// arguments that name no queue or an older epoch.
// TestUnmodelledQueueRegistersRestore: a queue's registers the model
// keeps as storage — its rate limiter's mask (+0x74) and its completion
// configuration (+0x54, +0xa0), which the driver writes as it opens a
// queue, and the other half's software control — read back what was
// written, and a state holding them restores (it was refused as storage
// inside a queue's block, so that a device the driver had opened a queue
// on could not be restored: FuzzDeviceSnapshotContinues found it).
func TestUnmodelledQueueRegistersRestore(t *testing.T) {
	r := newRig(t, rigOpts{})
	regs := []uint64{
		udma.QueueBase + 0x74,
		udma.S2M + udma.QueueBase + 3*udma.QueueStride + 0x54,
		udma.S2M + udma.QueueBase + 3*udma.QueueStride + 0xa0,
		udma.S2M + udma.QueueBase + udma.QSwCtrlM2S, // the M2S half's q_sw_ctrl offset, in the S2M half
	}
	for i, off := range regs {
		r.c.WriteReg(1, off, uint32(0x100+i))
		assert.Equal(t, uint32(0x100+i), r.c.ReadReg(1, off), "%#x", off)
	}
	s := r.c.State()
	r2 := newRig(t, rigOpts{})
	require.NoError(t, r2.c.Restore(s))
	for i, off := range regs {
		assert.Equal(t, uint32(0x100+i), r2.c.ReadReg(1, off), "%#x after a restore", off)
	}
	assert.Equal(t, s, r2.c.State())
}

func TestQueueBounds(t *testing.T) {
	r := newRig(t, rigOpts{})
	for _, eq := range [][2]int{{-1, 0}, {34, 0}, {0, -1}, {0, 16}} {
		_, err := r.c.Queue(eq[0], eq[1])
		assert.ErrorIs(t, err, udma.ErrEngine, fmt.Sprint(eq))
	}
	assert.Equal(t, 34, r.c.Engines())
	before := r.c.State()
	for _, arg := range []uint64{fireArg(34, 0, 0), fireArg(0, 16, 0), fireArg(0, 0, 12345), ^uint64(0)} {
		r.c.Fire(arg)
	}
	assert.Equal(t, before, r.c.State())
}

// TestEngineBAR0Places checks the BAR0 table of docs/dma-model.md.
func TestEngineBAR0Places(t *testing.T) {
	for _, tc := range []struct {
		gen  hwarch.Generation
		eng  int
		want uint64
	}{
		{hwarch.Sunda, 0, 0x3000_0000},
		{hwarch.Sunda, 15, 0x3000_0000 + 15*0x4_0000},
		{hwarch.Sunda, 16, 0x3070_0000},
		{hwarch.Sunda, 31, 0x3070_0000 + 15*0x4_0000},
		{hwarch.Sunda, 32, 0x3060_0000},
		{hwarch.Sunda, 33, 0x30D0_0000},
		{hwarch.Cayman, 0, 0x8200_0000},
		{hwarch.Cayman, 31, 0x83F0_0000},
		{hwarch.Cayman, 32, 0x9400_0000},
		{hwarch.Cayman, 64, 0xA200_0000},
		{hwarch.Mariana, 127, 0xB400_0000 + 31*0x10_0000},
		{hwarch.Mariana, 128, 0x680_0000},
		{hwarch.Mariana, 129, 0x690_0000},
		{hwarch.Mariana, 130, 0x4680_0000},
		{hwarch.Mariana, 131, 0x4690_0000},
	} {
		got, err := udma.EngineBAR0(hwarch.MustGeometry(tc.gen), tc.eng)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s engine %d", tc.gen, tc.eng)
	}
	for _, gen := range generations {
		geo := hwarch.MustGeometry(gen)
		r := newRig(t, rigOpts{gen: gen})
		assert.Equal(t, geo.DMAEngines, r.c.Engines())
		_, err := udma.EngineBAR0(geo, geo.DMAEngines)
		assert.ErrorIs(t, err, udma.ErrEngine)
	}
}

// TestDoorbell: Controller.Doorbell does what the two tail_inc writes do,
// S2M then M2S, in every state a queue can be rung in — the same state and
// the same completions, drained or not — and refuses an engine or queue the
// controller does not have, changing nothing.
func TestDoorbell(t *testing.T) {
	type setup func(r *rig) *drvQueue
	ready := func(pairs int) setup {
		return func(r *rig) *drvQueue {
			d := r.setupQueue(2, 5, r.host, 32)
			src, dst := r.alloc(r.hbm, 64, 64), r.alloc(r.hbm, 64, 64)
			for range pairs {
				d.push(src, dst, 64)
			}
			return d
		}
	}
	for _, tc := range []struct {
		name  string
		setup setup
		n     uint32
	}{
		{"three-pairs", ready(3), 3},
		{"one-of-three", ready(3), 1},
		{"zero", ready(3), 0},
		{"overrun", ready(1), 33},
		{"disabled-engine", func(r *rig) *drvQueue { d := ready(2)(r); r.disable(2); return d }, 2},
		{"queue-not-enabled", func(r *rig) *drvQueue {
			d := ready(2)(r)
			r.c.WriteReg(2, udma.QueueReg(udma.M2S, 5, udma.QCfg), 0)
			return d
		}, 2},
		{"no-ring", func(r *rig) *drvQueue { return &drvQueue{r: r, e: 2, q: 5} }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			regs, direct := newRig(t, rigOpts{}), newRig(t, rigOpts{})
			dr, dd := tc.setup(regs), tc.setup(direct)
			dr.ring(tc.n, tc.n)
			require.NoError(t, direct.c.Doorbell(dd.e, dd.q, tc.n))
			assert.Equal(t, regs.c.State(), direct.c.State())
			assert.Equal(t, regs.clk.heap, direct.clk.heap)
			regs.mustDrain()
			direct.mustDrain()
			assert.Equal(t, regs.c.State(), direct.c.State())
		})
	}
	r := newRig(t, rigOpts{})
	before := r.c.State()
	for _, eq := range [][2]int{{-1, 0}, {34, 0}, {0, -1}, {0, 16}} {
		assert.ErrorIs(t, r.c.Doorbell(eq[0], eq[1], 1), udma.ErrEngine, fmt.Sprint(eq))
	}
	assert.Equal(t, before, r.c.State())
}
