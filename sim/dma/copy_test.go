package dma

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/udma"
)

// TestCopy runs single and multi-descriptor copies between every kind of
// memory on every generation: the bytes land exactly (and nothing around
// them moves), the heads advance, the status is busy while descriptors are
// pending and clear after, and the counters add up.
func TestCopy(t *testing.T) {
	type mem int
	const (
		host mem = iota
		hbm
		chip
	)
	cases := []struct {
		name     string
		src, dst mem
		n        int
	}{
		{"host-to-hbm-1B", host, hbm, 1},
		{"host-to-hbm-4B", host, hbm, 4},
		{"host-to-hbm-4097B", host, hbm, 4097},
		{"host-to-hbm-64KiB", host, hbm, 64 << 10},
		{"hbm-to-onchip-64KiB", hbm, chip, 64 << 10},
		{"hbm-to-onchip-odd", hbm, chip, 12345},
		{"onchip-to-host-3B", chip, host, 3},
		{"hbm-to-hbm-multi-3x64KiB+123", hbm, hbm, 3<<16 + 123},
		{"host-to-onchip-multi-4x64KiB", host, chip, 4 << 16},
		{"onchip-to-hbm-65537B", chip, hbm, 65537},
	}
	for _, gen := range generations {
		for _, tc := range cases {
			for _, cp := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/copier=%v", gen, tc.name, cp), func(t *testing.T) {
					r := newRig(t, rigOpts{gen: gen, copier: cp})
					regs := map[mem]*region{host: r.host, hbm: r.hbm, chip: r.onchip}
					const guard = 64
					src := r.alloc(regs[tc.src], tc.n+2*guard, 64) + guard
					dst := r.alloc(regs[tc.dst], tc.n+2*guard, 64) + guard
					want := r.fill(src, tc.n, 0x5A)
					r.fill(dst-guard, tc.n+2*guard, 0xC3) // old contents, guards included
					before := r.bus.peek(t, dst-guard, tc.n+2*guard)

					const e, q = 3, 5
					r.normal(e)
					d := r.setupQueue(e, q, r.host, 64)
					d.copy(src, dst, tc.n)
					descs := d.pending
					require.Equal(t, uint32((tc.n+udma.MaxTransfer-1)/udma.MaxTransfer), descs)
					d.doorbell()

					for _, half := range []uint64{udma.M2S, udma.S2M} {
						assert.Equal(t, udma.StatusBusy, r.status(e, q, half), "busy while pending")
						assert.Equal(t, ringReg(descs, 1), d.reg(half, udma.QTail))
						assert.Equal(t, ringReg(0, 1), d.reg(half, udma.QHead))
					}
					assert.Equal(t, before, r.bus.peek(t, dst-guard, tc.n+2*guard), "nothing lands before the clock runs")

					r.mustDrain()
					got := r.bus.peek(t, dst-guard, tc.n+2*guard)
					assert.True(t, bytes.Equal(want, got[guard:guard+tc.n]), "payload")
					assert.Equal(t, before[:guard], got[:guard], "guard before")
					assert.Equal(t, before[guard+tc.n:], got[guard+tc.n:], "guard after")
					for _, half := range []uint64{udma.M2S, udma.S2M} {
						assert.Zero(t, r.status(e, q, half), "status clear after")
						assert.Equal(t, ringReg(descs, 1), d.reg(half, udma.QHead))
					}
					qs := r.queue(e, q)
					assert.Equal(t, uint64(descs), qs.Done)
					assert.Equal(t, uint64(tc.n), qs.Bytes)
					assert.False(t, qs.InFlight)
					assert.Zero(t, qs.M2S.Avail)
					assert.Zero(t, qs.S2M.Avail)
					if cp {
						assert.Equal(t, int(descs), r.bus.copies, "a Copier bus moves every payload")
					} else {
						assert.Zero(t, r.bus.copies)
					}
				})
			}
		}
	}
}

// TestSixtyFourKiBDescriptor checks that a 64 KiB descriptor carries 0 in its
// length field and still moves 65536 bytes.
func TestSixtyFourKiBDescriptor(t *testing.T) {
	r := newRig(t, rigOpts{})
	src := r.alloc(r.hbm, 64<<10, 256)
	dst := r.alloc(r.hbm, 64<<10+4, 256)
	want := r.fill(src, 64<<10, 1)
	r.normal(0)
	d := r.setupQueue(0, 0, r.host, 32)
	d.push(src, dst, 64<<10)
	raw := r.bus.peek(t, d.m2s.base, udma.DescriptorSize)
	assert.Zero(t, binary.LittleEndian.Uint32(raw)&udma.LenMask, "length field of a 64 KiB descriptor")
	desc, err := udma.Decode(raw)
	require.NoError(t, err)
	assert.Equal(t, 65536, desc.Len())
	d.doorbell()
	r.mustDrain()
	got := r.bus.peek(t, dst, 64<<10+4)
	assert.True(t, bytes.Equal(want, got[:64<<10]))
	assert.Equal(t, []byte{0, 0, 0, 0}, got[64<<10:], "the byte after 64 KiB stays")
	assert.Equal(t, uint64(65536), r.queue(0, 0).Bytes)
}

// TestLongerS2MBuffer: an S2M buffer longer than the M2S data is allowed and
// only the M2S length is written.
func TestLongerS2MBuffer(t *testing.T) {
	r := newRig(t, rigOpts{})
	src := r.alloc(r.hbm, 100, 64)
	dst := r.alloc(r.hbm, 200, 64)
	want := r.fill(src, 100, 9)
	old := r.fill(dst, 200, 0xEE)
	r.normal(1)
	d := r.setupQueue(1, 2, r.hbm, 32)
	d.pushDesc(txDesc(t, src, 100, 1), rxDesc(t, dst, 200, 1))
	d.doorbell()
	r.mustDrain()
	got := r.bus.peek(t, dst, 200)
	assert.Equal(t, want, got[:100])
	assert.Equal(t, old[100:], got[100:])
	qs := r.queue(1, 2)
	assert.Equal(t, uint64(100), qs.Bytes)
	assert.Zero(t, qs.Status)
}

// TestMarkerCompletion is the driver's completion method (driver-facts
// §4.6): data descriptors, then a 4-byte copy of the marker between two
// host words. When the marker lands every earlier destination already holds
// its data, and the writes happen in descriptor order.
func TestMarkerCompletion(t *testing.T) {
	for _, gen := range generations {
		for i, opts := range []Options{{}, {TimingOnly: true}, {}, {TimingOnly: true}} {
			cp := i >= 2
			t.Run(fmt.Sprintf("%s/timing-only=%v/copier=%v", gen, opts.TimingOnly, cp), func(t *testing.T) {
				r := newRig(t, rigOpts{gen: gen, opts: opts, copier: cp})
				sizes := []int{64 << 10, 1, 4096, 7, 64 << 10, 300, 8}
				type xfer struct {
					dst  uint64
					data []byte
				}
				var xs []xfer
				e := 130 % r.c.Engines() // a host engine on V3/V4, an NC1 engine on V2
				r.normal(e)
				d := r.setupQueue(e, 1, r.host, 32)
				for i, n := range sizes {
					src := r.alloc(r.host, n, 64)
					dst := r.alloc(r.hbm, n, 64)
					xs = append(xs, xfer{dst, r.fill(src, n, byte(i))})
					d.push(src, dst, n)
				}
				// Two adjacent host words: the marker and its destination.
				words := r.alloc(r.host, 8, 8)
				r.bus.poke(t, words, binary.LittleEndian.AppendUint32(nil, udma.Marker))
				d.push(words, words+4, 4)

				var order []uint64
				landed := false
				r.bus.onWrite = func(addr uint64, p []byte) {
					order = append(order, addr)
					if addr != words+4 {
						return
					}
					landed = true
					assert.Equal(t, udma.Marker, binary.LittleEndian.Uint32(p))
					for i, x := range xs { // from host memory: staging moves in timing-only mode too
						assert.Equal(t, x.data, r.bus.peek(t, x.dst, len(x.data)), "destination %d before the marker", i)
					}
					assert.Equal(t, uint64(len(sizes)), r.queue(e, 1).Done, "every data pair done before the marker's write")
				}
				d.doorbell()

				// The runtime polls the destination word every 1 µs.
				polls := 0
				for binary.LittleEndian.Uint32(r.bus.peek(t, words+4, 4)) != udma.Marker {
					polls++
					require.Less(t, polls, 10000, "the marker never landed")
					r.clk.RunUntil(r.clk.Now() + 1_000_000)
				}
				require.True(t, landed)
				assert.Equal(t, uint64(len(sizes)+1), r.queue(e, 1).Done)
				var want []uint64
				for _, x := range xs {
					want = append(want, x.dst)
				}
				assert.Equal(t, append(want, words+4), order, "S2M writes in descriptor order")
				for _, x := range xs {
					assert.Equal(t, x.data, r.bus.peek(t, x.dst, len(x.data)), "from host memory, bytes move in either mode")
				}
			})
		}
	}
}

// TestRingWrap pushes 5 × 32 + 7 pairs through a 32-descriptor ring in
// batches: the descriptors carry phases 1, 2, 3, 0, 1, 2 as the ring wraps,
// the head and tail registers show them in [31:30], and every copy lands.
func TestRingWrap(t *testing.T) {
	const size = 32
	batches := []int{20, 13, 32, 1, 31, 30, 17, 23}
	total := 0
	for _, b := range batches {
		total += b
	}
	require.Equal(t, 5*32+7, total)

	for _, gen := range generations {
		t.Run(gen.String(), func(t *testing.T) {
			r := newRig(t, rigOpts{gen: gen})
			const e, q = 7, 15
			r.normal(e)
			d := r.setupQueue(e, q, r.hbm, size)
			src := r.alloc(r.host, total*16, 16)
			dst := r.alloc(r.onchip, total*16, 16)
			want := r.fill(src, total*16, 0x77)
			k := 0
			for _, b := range batches {
				for i := 0; i < b; i++ {
					// Before writing slot k, its phase is the ring's k-th pass.
					require.Equal(t, uint8((udma.FirstRingID+k/size)%4), d.m2s.phase)
					n := 1 + k%16
					d.push(src+uint64(k*16), dst+uint64(k*16), n)
					raw, err := udma.Decode(r.bus.peek(t, d.m2s.base+uint64(k%size)*16, 16))
					require.NoError(t, err)
					assert.Equal(t, uint8((1+k/size)%4), raw.RingID(), "phase of descriptor %d", k)
					k++
				}
				d.doorbell()
				r.mustDrain()
				wantReg := ringReg(uint32(k%size), uint8((1+k/size)%4))
				for _, half := range []uint64{udma.M2S, udma.S2M} {
					assert.Equal(t, wantReg, d.reg(half, udma.QHead), "head after %d", k)
					assert.Equal(t, wantReg, d.reg(half, udma.QTail), "tail after %d", k)
					assert.Zero(t, r.status(e, q, half))
				}
			}
			assert.Equal(t, uint64(total), r.queue(e, q).Done)
			got := r.bus.peek(t, dst, total*16)
			for k := 0; k < total; k++ {
				n := 1 + k%16
				assert.Equal(t, want[k*16:k*16+n], got[k*16:k*16+n], "copy %d", k)
				assert.Equal(t, make([]byte, 16-n), got[k*16+n:k*16+16], "copy %d tail", k)
			}
		})
	}
}

// TestFullRing makes a whole ring available at once: 32 of 32 is allowed.
func TestFullRing(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.normal(0)
	d := r.setupQueue(0, 0, r.host, 32)
	src := r.alloc(r.hbm, 4, 4)
	r.fill(src, 4, 1)
	dst := r.alloc(r.hbm, 4*32*2, 4)
	for i := 0; i < 32; i++ {
		d.push(src, dst+uint64(4*i), 4)
	}
	d.doorbell()
	assert.Equal(t, ringReg(0, 2), d.reg(udma.M2S, udma.QTail), "a full ring's tail wraps to index 0, phase 2")
	r.mustDrain()
	assert.Equal(t, uint64(32), r.queue(0, 0).Done)
	for i := 0; i < 32; i++ {
		d.push(src, dst+uint64(4*(32+i)), 4)
	}
	d.doorbell()
	r.mustDrain()
	assert.Equal(t, uint64(64), r.queue(0, 0).Done)
	assert.Equal(t, ringReg(0, 3), d.reg(udma.S2M, udma.QHead))
}

// TestStalePhase: a descriptor written with the previous pass's ring id
// halts the queue with ErrRingID and moves nothing.
func TestStalePhase(t *testing.T) {
	for _, which := range []string{"m2s", "s2m", "both", "first-pass-phase-0"} {
		t.Run(which, func(t *testing.T) {
			r := newRig(t, rigOpts{})
			const e, q = 2, 3
			r.normal(e)
			d := r.setupQueue(e, q, r.host, 32)
			src := r.alloc(r.hbm, 64, 64)
			dst := r.alloc(r.hbm, 64, 64)
			r.fill(src, 64, 3)
			passes := 32 + 5 // wrap once so the stale phase is 1, the current 2
			if which == "first-pass-phase-0" {
				passes = 5
			}
			for i := 0; i < passes; i++ {
				d.push(src, dst+uint64(i%64), 1)
				if d.pending == 16 {
					d.doorbell()
					r.mustDrain()
				}
			}
			d.doorbell()
			r.mustDrain()
			require.Zero(t, r.queue(e, q).Status)
			doneBefore := r.queue(e, q).Done
			headBefore := d.reg(udma.M2S, udma.QHead)

			stale := (d.m2s.phase + 3) % 4
			txPhase, rxPhase := d.m2s.phase, d.s2m.phase
			switch which {
			case "m2s":
				txPhase = stale
			case "s2m":
				rxPhase = stale
			default:
				txPhase, rxPhase = stale, stale
			}
			d.pushDesc(txDesc(t, src, 64, txPhase), rxDesc(t, dst, 64, rxPhase))
			snap := r.bus.snapshot() // after the driver's own ring writes
			d.doorbell()
			r.mustDrain()

			for _, half := range []uint64{udma.M2S, udma.S2M} {
				assert.Equal(t, udma.ErrRingID|udma.StatusHalted, r.status(e, q, half))
			}
			assert.Equal(t, uint32(1)<<q, r.c.ReadReg(e, udma.M2S+udma.ErrorQueues))
			assert.Equal(t, doneBefore, r.queue(e, q).Done)
			assert.Equal(t, headBefore, d.reg(udma.M2S, udma.QHead), "head stays on the bad descriptor")
			assert.Equal(t, snap, r.bus.snapshot(), "nothing moved")
		})
	}
}

// TestChainedDoorbell: a DMA write into an on-chip register window that
// holds the controller's own registers acts as a register write (the
// device's register semantics): a descriptor can ring another queue's
// doorbells.
func TestChainedDoorbell(t *testing.T) {
	for _, cp := range []bool{false, true} {
		t.Run(fmt.Sprintf("copier=%v", cp), func(t *testing.T) { testChainedDoorbell(t, cp) })
	}
}

func testChainedDoorbell(t *testing.T, cp bool) {
	r := newRig(t, rigOpts{regs: true, regsEngine: 4, copier: cp})
	r.normal(4)
	first := r.setupQueue(4, 0, r.host, 32)
	second := r.setupQueue(4, 1, r.host, 32)
	src := r.alloc(r.hbm, 256, 64)
	dst := r.alloc(r.hbm, 256, 64)
	want := r.fill(src, 256, 8)
	second.push(src, dst, 256) // written, not doorbelled

	// The first queue's copy writes 1, 1 into S2M and M2S tail_inc of queue 1.
	one := r.alloc(r.host, 4, 4)
	r.bus.poke(t, one, []byte{1, 0, 0, 0})
	first.push(one, regsWindow+udma.QueueReg(udma.S2M, 1, udma.QTailInc), 4)
	first.push(one, regsWindow+udma.QueueReg(udma.M2S, 1, udma.QTailInc), 4)
	first.doorbell()
	r.mustDrain()
	assert.Equal(t, want, r.bus.peek(t, dst, 256))
	assert.Equal(t, uint64(2), r.queue(4, 0).Done)
	assert.Equal(t, uint64(1), r.queue(4, 1).Done)
}

// TestSelfReset: a descriptor whose destination is its own queue's
// q_sw_ctrl reset. The reset happens while the completion is in progress;
// the queue must come out of it empty and consistent, not with counters
// wrapped below zero.
func TestSelfReset(t *testing.T) {
	for i, what := range []string{"queue-reset", "engine-abort", "queue-reset", "engine-abort"} {
		cp := i >= 2
		t.Run(fmt.Sprintf("%s/copier=%v", what, cp), func(t *testing.T) {
			r := newRig(t, rigOpts{regs: true, regsEngine: 6, copier: cp})
			r.normal(6)
			d := r.setupQueue(6, 2, r.host, 32)
			word := r.alloc(r.host, 4, 4)
			target := regsWindow + udma.QueueReg(udma.M2S, 2, udma.QSwCtrlM2S)
			v := udma.QSwReset
			if what == "engine-abort" {
				target, v = regsWindow+udma.M2S+udma.ChangeState, int(udma.ChangeAbort)
			}
			r.bus.poke(t, word, binary.LittleEndian.AppendUint32(nil, uint32(v)))
			d.push(word, target, 4)
			d.push(word, word, 4) // a second pair that must not run after the reset
			d.doorbell()
			r.mustDrain()
			qs := r.queue(6, 2)
			for _, h := range []HalfState{qs.M2S, qs.S2M} {
				assert.LessOrEqual(t, h.Avail, h.Length, "avail")
				assert.Less(t, h.Head, h.Length, "head")
			}
			assert.False(t, qs.InFlight)
			assert.Zero(t, r.clk.Pending())
			if what == "queue-reset" {
				assert.Zero(t, qs.M2S.Avail)
				assert.Zero(t, qs.S2M.Avail)
				assert.Equal(t, ringReg(0, 1), d.reg(udma.M2S, udma.QHead))
				assert.Zero(t, r.status(6, 2, udma.M2S))
				// And the queue works again after the driver's reset.
				d.reset()
				src := r.alloc(r.hbm, 16, 16)
				dst := r.alloc(r.hbm, 16, 16)
				want := r.fill(src, 16, 4)
				d.push(src, dst, 16)
				d.doorbell()
				r.mustDrain()
				assert.Equal(t, want, r.bus.peek(t, dst, 16))
			} else {
				assert.Equal(t, uint32(udma.EngineStateWord(udma.StateAbort)), r.c.ReadReg(6, udma.M2S+udma.EngineState))
				assert.Equal(t, uint32(2), qs.M2S.Avail, "an aborted pair stays available")
			}
		})
	}
}

// TestDescriptorPrefetch: the engine fetches available descriptors in a
// burst (prefetchDescriptors at most): one changed after its doorbell has
// no effect, as on hardware, while descriptors made available later are
// fetched when they are; a queue reset drops the burst.
func TestDescriptorPrefetch(t *testing.T) {
	r, d, src := prefetchRig(t)
	dst := []uint64{r.alloc(r.hbm, 64, 64), r.alloc(r.hbm, 64, 64), r.alloc(r.hbm, 64, 64), r.alloc(r.hbm, 64, 64)}
	other := r.alloc(r.hbm, 64, 64)
	slot2 := d.s2m.base + 2*udma.DescriptorSize
	for _, a := range dst[:3] {
		d.push(src, a, 16)
	}
	d.doorbell()
	// Rewrite the third S2M descriptor after its doorbell: too late.
	var b [udma.DescriptorSize]byte
	rxDesc(t, other, 16, udma.FirstRingID).Put(b[:])
	r.bus.poke(t, slot2, b[:])
	d.push(src, dst[3], 16) // made available later: fetched then
	d.doorbell()
	r.mustDrain()
	for i, a := range dst {
		assert.Equal(t, bytes.Repeat([]byte{7}, 16), r.bus.peek(t, a, 16), "destination %d", i)
	}
	assert.Equal(t, make([]byte, 16), r.bus.peek(t, other, 16), "the rewritten descriptor was already fetched")
	assert.Equal(t, uint64(4), r.queue(0, 3).Done)
}

// prefetchRig is the prefetch tests' rig: engine 0 normal, its queue 3
// set up with rings of 32 descriptors in host memory, and a 64-byte source
// of sevens in HBM.
func prefetchRig(t *testing.T) (*rig, *drvQueue, uint64) {
	t.Helper()
	r := newRig(t, rigOpts{})
	r.normal(0)
	d := r.setupQueue(0, 3, r.host, 32)
	src := r.alloc(r.hbm, 64, 64)
	r.bus.poke(t, src, bytes.Repeat([]byte{7}, 64))
	return r, d, src
}

// TestBurstKeptInState: a controller restored from a state taken while a
// queue holds a burst of fetched descriptors runs them as the one saved
// does — the descriptor software rewrote after its doorbell included,
// which the saved one runs as it fetched it — and the state carries the
// burst (State.Bursts), a copy of its own. Restore used to drop the bursts,
// so the restored controller fetched the rewritten descriptor and the two
// parted (FuzzDeviceSnapshotContinues, in package sim, found it).
func TestBurstKeptInState(t *testing.T) {
	r, d, src := prefetchRig(t)
	dst := []uint64{r.alloc(r.hbm, 64, 64), r.alloc(r.hbm, 64, 64), r.alloc(r.hbm, 64, 64)}
	other := r.alloc(r.hbm, 64, 64)
	for _, a := range dst {
		d.push(src, a, 16)
	}
	d.doorbell() // the first pair in flight, the other two fetched
	s := r.c.State()
	require.Len(t, s.Bursts, 2, "both halves of queue 3 hold a burst")
	for _, b := range s.Bursts {
		assert.Equal(t, 0, b.Engine)
		assert.Equal(t, 3, b.Queue)
		assert.Len(t, b.Desc, 2)
	}
	// Rewrite the third S2M descriptor: too late for both.
	var b [udma.DescriptorSize]byte
	rxDesc(t, other, 16, udma.FirstRingID).Put(b[:])
	r.bus.poke(t, d.s2m.base+2*udma.DescriptorSize, b[:])

	r2 := newRig(t, rigOpts{})
	for i, reg := range r.bus.regions {
		copy(r2.bus.regions[i].mem, reg.mem)
	}
	require.NoError(t, r2.c.Restore(s))
	s.Bursts[0].Desc[0] = udma.Descriptor{} // the caller's copy stays its own
	r2.clk.now, r2.clk.seq = r.clk.now, r.clk.seq
	r2.clk.heap = append([]event(nil), r.clk.heap...)
	r.mustDrain()
	r2.mustDrain()
	for _, rr := range []*rig{r, r2} {
		for i, a := range dst {
			assert.Equal(t, bytes.Repeat([]byte{7}, 16), rr.bus.peek(t, a, 16), "destination %d", i)
		}
		assert.Equal(t, make([]byte, 16), rr.bus.peek(t, other, 16), "the rewritten descriptor was already fetched")
	}
	assert.Equal(t, r.c.State(), r2.c.State())
}

// TestBurstsRefused: a state whose bursts could not be a controller's is
// refused, naming the burst, and changes nothing.
func TestBurstsRefused(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.normal(0)
	d := r.setupQueue(0, 3, r.host, 32)
	src, dst := r.alloc(r.hbm, 64, 64), r.alloc(r.hbm, 64, 64)
	d.push(src, dst, 16)
	d.push(src, dst, 16)
	d.doorbell()
	good := r.c.State()
	require.NotEmpty(t, good.Bursts)
	for _, c := range []struct {
		name, want string
		mut        func(s *State)
	}{
		{"engine past the last", "Bursts[0]: engine 999", func(s *State) { s.Bursts[0].Engine = 999 }},
		{"queue past the last", "Bursts[0]: queue 16 of 16", func(s *State) { s.Bursts[0].Queue = 16 }},
		{"half 2", "Bursts[0]: half 2", func(s *State) { s.Bursts[0].Half = 2 }},
		{"no descriptors", "Bursts[0]: 0 descriptors", func(s *State) { s.Bursts[0].Desc = nil }},
		{"17 descriptors", "Bursts[0]: 17 descriptors", func(s *State) { s.Bursts[0].Desc = make([]udma.Descriptor, 17) }},
		{"twice", "given twice", func(s *State) { s.Bursts = append(s.Bursts, s.Bursts[0]) }},
		{"another epoch", "Bursts[0]: epoch", func(s *State) { s.Bursts[0].Epoch++ }},
		{"an engine as reset left it", "as its reset left it", func(s *State) { s.Bursts[0].Engine = 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := r.c.State()
			c.mut(&s)
			before := r.c.State()
			err := r.c.Restore(s)
			require.ErrorIs(t, err, ErrInvalidState)
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, before, r.c.State(), "a refused restore changes nothing")
		})
	}
}
