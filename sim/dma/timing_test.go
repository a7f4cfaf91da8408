package dma

import (
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/internal/units"
)

// ceilPS is ⌈n·10¹² / bw⌉ computed with big integers, saturating at the
// largest uint64: an oracle independent of transferTime.
func ceilPS(n, bw uint64) uint64 {
	if n == 0 || bw == 0 {
		return 0
	}
	num := new(big.Int).Mul(new(big.Int).SetUint64(n), big.NewInt(1e12))
	d := new(big.Int).SetUint64(bw)
	q, r := new(big.Int).QuoRem(num, d, new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsUint64() {
		return math.MaxUint64
	}
	return q.Uint64()
}

func TestTransferTime(t *testing.T) {
	cases := []struct {
		n, bw, want uint64
	}{
		{0, 17e9, 0},
		{1 << 20, 0, 0},
		{0, 0, 0},
		{1, 1e12, 1},
		{1, 3e12, 1}, // 1/3 ps rounds up
		{3, 3e12, 1}, // exact
		{4, 3e12, 2}, // 4/3 rounds up
		{1, 1, 1e12}, // one byte at 1 B/s is one second
		{65536, 17e9, 3_855_059},
		{65536, 23e9, 2_849_392},
		{65536, 33e9, 1_985_940},
		{65536, 820 << 30, 74_434},
		{1, 16e9, 63}, // 62.5 ps
		{math.MaxUint64, 1e12, math.MaxUint64},
		{math.MaxUint64, 1e12 + 1, math.MaxUint64 - 18_446_744}, // just fits
		{math.MaxUint64, 1e12 - 1, math.MaxUint64},              // saturates
		{1 << 63, 1, math.MaxUint64},                            // saturates
		{math.MaxUint64, math.MaxUint64, 1e12},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d@%d", tc.n, tc.bw), func(t *testing.T) {
			require.Equal(t, tc.want, ceilPS(tc.n, tc.bw), "oracle")
			assert.Equal(t, tc.want, TransferTime(tc.n, tc.bw))
		})
	}
}

func TestDefaultTiming(t *testing.T) {
	for _, tc := range []struct {
		gen  hwarch.Generation
		want Timing
	}{
		{hwarch.Sunda, Timing{EngineBandwidth: 17e9, FixedCost: 50_000, HBMBandwidth: 820 << 30, HostBandwidth: 16e9}},
		{hwarch.Cayman, Timing{EngineBandwidth: 23e9, FixedCost: 50_000, HBMBandwidth: 2.9e12, HostBandwidth: 32e9}},
		{hwarch.Mariana, Timing{EngineBandwidth: 33e9, FixedCost: 50_000, HBMBandwidth: 4.9e12, HostBandwidth: 64e9}},
	} {
		t.Run(tc.gen.String(), func(t *testing.T) {
			assert.Equal(t, tc.want, DefaultTiming(tc.gen))
			r := newRig(t, rigOpts{gen: tc.gen})
			assert.Equal(t, tc.want, r.c.Timing(), "a zero Options.Timing takes the default")
			assert.True(t, r.c.Functional())
		})
	}
	r := newRig(t, rigOpts{opts: Options{Timing: Timing{FixedCost: 7}, TimingOnly: true}})
	assert.Equal(t, Timing{FixedCost: 7}, r.c.Timing(), "a partial timing is taken as given")
	assert.False(t, r.c.Functional())
}

// completion starts one n-byte copy on an otherwise idle device at time
// start and returns when it completes, checking that it is not done one
// picosecond before.
func completion(t *testing.T, r *rig, d *drvQueue, src, dst uint64, n int, start uint64) uint64 {
	t.Helper()
	r.clk.RunUntil(start)
	done := r.queue(d.e, d.q).Done
	d.push(src, dst, n)
	d.doorbell()
	at, ok := r.clk.Next()
	require.True(t, ok)
	r.clk.RunUntil(at - 1)
	require.Equal(t, done, r.queue(d.e, d.q).Done, "not done a picosecond early")
	r.clk.RunUntil(at)
	require.Equal(t, done+1, r.queue(d.e, d.q).Done)
	return at - start
}

// TestSingleTransferTime: on an idle device one transfer of n bytes
// completes at FixedCost + ⌈n·10¹²/EngineBandwidth⌉ ps, or at the host
// link's ⌈n·10¹²/HostBandwidth⌉ when that is longer.
func TestSingleTransferTime(t *testing.T) {
	for _, gen := range generations {
		tm := DefaultTiming(gen)
		for _, path := range []string{"onchip-onchip", "hbm-onchip", "onchip-hbm", "hbm-hbm", "host-hbm", "onchip-host"} {
			for _, n := range []int{1, 4, 1000, 12345, 65535, 65536} {
				t.Run(fmt.Sprintf("%s/%s/%d", gen, path, n), func(t *testing.T) {
					r := newRig(t, rigOpts{gen: gen})
					mem := map[string]*region{"onchip": r.onchip, "hbm": r.hbm, "host": r.host}
					var s, d string
					fmt.Sscanf(replaceDash(path), "%s %s", &s, &d)
					src := r.alloc(mem[s], n, 64)
					dst := r.alloc(mem[d], n, 64)
					want := r.fill(src, n, 1)
					r.normal(0)
					q := r.setupQueue(0, 0, r.host, 32)
					start := uint64(1_234_567) // any time: the device is idle
					got := completion(t, r, q, src, dst, n, start)
					exp := tm.FixedCost + ceilPS(uint64(n), tm.EngineBandwidth)
					if s == "host" || d == "host" {
						exp = max(exp, ceilPS(uint64(n), tm.HostBandwidth))
					}
					assert.Equal(t, exp, got)
					assert.Equal(t, want, r.bus.peek(t, dst, n))
				})
			}
		}
	}
}

func replaceDash(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == '-' {
			b[i] = ' '
		}
	}
	return string(b)
}

// TestSequentialTransfers: one engine's transfers queue behind each other,
// within a queue and across its queues.
func TestSequentialTransfers(t *testing.T) {
	const n = 10000
	for _, gen := range generations {
		t.Run(gen.String(), func(t *testing.T) {
			tm := DefaultTiming(gen)
			one := tm.FixedCost + ceilPS(n, tm.EngineBandwidth)
			r := newRig(t, rigOpts{gen: gen})
			r.clk.record = true
			r.normal(3)
			a := r.setupQueue(3, 0, r.host, 32)
			b := r.setupQueue(3, 1, r.host, 32)
			src := r.alloc(r.onchip, n, 64)
			dst := r.alloc(r.onchip, n, 64)
			for i := 0; i < 3; i++ {
				a.push(src, dst, n)
			}
			b.push(src, dst, n)
			a.doorbell()
			b.doorbell() // b's pair starts at once but waits for the engine
			r.mustDrain()
			var at []uint64
			for _, ev := range r.clk.fired {
				at = append(at, ev.at)
			}
			// a's first pair, then b's (already reserved), then a's others.
			assert.Equal(t, []uint64{one, 2 * one, 3 * one, 4 * one}, at)
			assert.Equal(t, uint64(3), r.queue(3, 0).Done)
			assert.Equal(t, uint64(1), r.queue(3, 1).Done)
		})
	}
}

// TestParallelHBM: 16 engines each copying HBM→HBM at once share the HBM
// bandwidth, each copy reading and writing it (2n bytes): the last
// completes no earlier than 2·total/HBMBandwidth; with the default figures
// the engines are the limit, with a narrow HBM the HBM is, and it stays busy
// end to end.
func TestParallelHBM(t *testing.T) {
	const k, n = 4, 64 << 10
	for _, gen := range generations {
		def := DefaultTiming(gen)
		narrow := def
		narrow.HBMBandwidth = def.EngineBandwidth // 16 engines want 16× this
		for _, tc := range []struct {
			name string
			tm   Timing
		}{{"default", def}, {"narrow-hbm", narrow}} {
			t.Run(gen.String()+"/"+tc.name, func(t *testing.T) {
				r := newRig(t, rigOpts{gen: gen, opts: Options{Timing: tc.tm}, hbmSize: 16 * 2 * n})
				var qs []*drvQueue
				for e := 0; e < 16; e++ {
					r.normal(e)
					d := r.setupQueue(e, 0, r.host, 32)
					src := r.alloc(r.hbm, n, 64)
					dst := r.alloc(r.hbm, n, 64)
					for i := 0; i < k; i++ {
						d.push(src, dst, n)
					}
					qs = append(qs, d)
				}
				for _, d := range qs {
					d.doorbell()
				}
				finish := make([]uint64, 16)
				r.clk.afterFire = func(ev event) { finish[ev.arg>>40] = ev.at }
				r.mustDrain()
				last := uint64(0)
				for e, f := range finish {
					assert.Equal(t, uint64(k), r.queue(e, 0).Done)
					last = max(last, f)
				}
				total := uint64(16 * k * n)
				assert.GreaterOrEqual(t, last, ceilPS(2*total, tc.tm.HBMBandwidth), "no faster than the HBM reads and writes")
				engine := k * (tc.tm.FixedCost + ceilPS(n, tc.tm.EngineBandwidth))
				if tc.name == "default" {
					for e, f := range finish {
						assert.Equal(t, engine, f, "engine %d is engine-bound", e)
					}
				} else {
					assert.Equal(t, 16*k*ceilPS(2*n, tc.tm.HBMBandwidth), last, "HBM-bound and never idle")
					assert.Greater(t, last, engine)
				}
			})
		}
	}
}

// TestSharedHostLink: two host engines pulling from host memory at once share
// the PCIe link.
func TestSharedHostLink(t *testing.T) {
	const n = 64 << 10
	for _, gen := range generations {
		t.Run(gen.String(), func(t *testing.T) {
			tm := DefaultTiming(gen)
			r := newRig(t, rigOpts{gen: gen})
			geo := r.geo
			var qs []*drvQueue
			for _, e := range geo.HostDMAEngines[:2] {
				r.normal(e)
				d := r.setupQueue(e, 0, r.host, 32)
				d.push(r.alloc(r.host, n, 64), r.alloc(r.onchip, n, 64), n)
				qs = append(qs, d)
			}
			r.clk.record = true
			for _, d := range qs {
				d.doorbell()
			}
			r.mustDrain()
			link := ceilPS(n, tm.HostBandwidth)
			eng := tm.FixedCost + ceilPS(n, tm.EngineBandwidth)
			require.Len(t, r.clk.fired, 2)
			assert.Equal(t, max(eng, link), r.clk.fired[0].at)
			assert.Equal(t, max(eng, 2*link), r.clk.fired[1].at)
		})
	}
}

// timingScenario runs a mix of transfers on several engines and queues and
// returns the completion events, the counters, and the destinations.
func timingScenario(t *testing.T, gen hwarch.Generation, opts Options, copier bool) (*rig, []event, map[uint64]movedBytes) {
	r := newRig(t, rigOpts{gen: gen, opts: opts, copier: copier})
	r.clk.record = true
	sizes := []int{1, 4, 8, 9, 4096, 64 << 10, 12345, 65535}
	moved := map[uint64]movedBytes{}
	for e := 0; e < 3; e++ {
		r.normal(e)
		for q := 0; q < 2; q++ {
			d := r.setupQueue(e, q, r.host, 32)
			for i, n := range sizes {
				mems := []*region{r.hbm, r.host, r.onchip}
				src := r.alloc(mems[(i+e)%3], n, 64)
				dst := r.alloc(mems[(i+q+1)%3], n, 64)
				moved[dst] = movedBytes{r.fill(src, n, byte(e*16+q*4+i)), mems[(i+e)%3] == r.host}
				d.push(src, dst, n)
			}
			d.doorbell()
		}
		r.clk.RunUntil(r.clk.Now() + 3_000_000) // later engines start later
	}
	r.mustDrain()
	return r, r.clk.fired, moved
}

// movedBytes is what a transfer of timingScenario wrote, and whether its
// source was host memory (staging, which moves in timing-only mode too).
type movedBytes struct {
	data     []byte
	fromHost bool
}

// TestTimingOnly: timing-only mode gives exactly the same completion times as
// functional mode, moves no bulk bytes between device memories, and still
// moves control transfers of up to ControlBytes (the completion marker,
// semaphore writes) and transfers from host memory (staging).
func TestTimingOnly(t *testing.T) {
	for _, gen := range generations {
		for _, cp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/copier=%v", gen, cp), func(t *testing.T) {
				rf, fired, moved := timingScenario(t, gen, Options{}, cp)
				rt, firedT, _ := timingScenario(t, gen, Options{TimingOnly: true}, cp)
				_, firedOther, _ := timingScenario(t, gen, Options{}, !cp)
				assert.Equal(t, fired, firedT, "identical completion events")
				assert.Equal(t, fired, firedOther, "a Copier bus changes no time")
				for e := 0; e < 3; e++ {
					for q := 0; q < 2; q++ {
						a, b := rf.queue(e, q), rt.queue(e, q)
						assert.Equal(t, a.Done, b.Done)
						assert.Equal(t, a.Bytes, b.Bytes)
						assert.Equal(t, a.M2S, b.M2S)
					}
				}
				small := 0
				for dst, m := range moved {
					want := m.data
					assert.Equal(t, want, rf.bus.peek(t, dst, len(want)), "functional %#x", dst)
					got := rt.bus.peek(t, dst, len(want))
					if len(want) <= ControlBytes || m.fromHost {
						small++
						assert.Equal(t, want, got, "timing-only moves control and staging transfer %#x (%d B)", dst, len(want))
					} else {
						assert.Equal(t, make([]byte, len(want)), got, "timing-only moves no bulk bytes at %#x (%d B)", dst, len(want))
					}
				}
				if cp {
					assert.LessOrEqual(t, rt.bus.copies, small, "timing-only copies only control and staging transfers")
				}
				assert.Equal(t, rf.c.State().HBMFree, rt.c.State().HBMFree)
				assert.Equal(t, rf.c.State().HostFree, rt.c.State().HostFree)
			})
		}
	}
}

// TestTimingOnlyChecksAddresses: timing-only mode still checks every
// address: a bad destination halts the queue as in functional mode.
func TestTimingOnlyChecksAddresses(t *testing.T) {
	r := newRig(t, rigOpts{opts: Options{TimingOnly: true}})
	r.normal(0)
	d := r.setupQueue(0, 0, r.host, 32)
	d.push(r.alloc(r.hbm, 4096, 64), rigNowhere, 4096)
	d.doorbell()
	r.mustDrain()
	assert.Equal(t, udma.ErrDescAddr|udma.StatusHalted, r.status(0, 0, udma.M2S))
}

// TestZeroBandwidth: a timing with no bandwidths costs FixedCost only.
func TestZeroBandwidth(t *testing.T) {
	r := newRig(t, rigOpts{opts: Options{Timing: Timing{FixedCost: 7}}})
	r.normal(0)
	d := r.setupQueue(0, 0, r.host, 32)
	src := r.alloc(r.host, 64<<10, 64)
	dst := r.alloc(r.hbm, 64<<10, 64)
	assert.Equal(t, uint64(7), completion(t, r, d, src, dst, 64<<10, 100))
	assert.Equal(t, uint64(7), completion(t, r, d, src, dst, 1, 200))
}

// TestTimingValidate (issue 13, item 12): a timing with a rate of 0 or a
// fixed cost past a second is refused, naming the field; the defaults pass.
func TestTimingValidate(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman, hwarch.Mariana} {
		require.NoError(t, DefaultTiming(g).Validate(), g)
	}
	base := DefaultTiming(hwarch.Cayman)
	for _, c := range []struct {
		name   string
		mutate func(*Timing)
		want   string
	}{
		{"host bandwidth 0", func(t *Timing) { t.HostBandwidth = 0 }, "HostBandwidth 0: must be positive"},
		{"engine bandwidth 0", func(t *Timing) { t.EngineBandwidth = 0 }, "EngineBandwidth 0: must be positive"},
		{"HBM bandwidth past 1 PB/s", func(t *Timing) { t.HBMBandwidth = units.MaxBandwidthBps + 1 }, "HBMBandwidth 1000000000000001"},
		{"fixed cost 2^48", func(t *Timing) { t.FixedCost = 1 << 48 }, "FixedCost 281474976710656ps: too long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tm := base
			c.mutate(&tm)
			err := tm.Validate()
			require.ErrorIs(t, err, units.ErrRange)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	tm := base
	tm.FixedCost = MaxFixedCost
	assert.NoError(t, tm.Validate(), "the limit itself")
}

// TestIdealTiming: an ideal timing (the fabric's parity mode) completes
// every transfer when it starts — no fixed cost, no engine, HBM or host
// time, whatever the size — and takes no other field.
func TestIdealTiming(t *testing.T) {
	r := newRig(t, rigOpts{opts: Options{Timing: Timing{Ideal: true}}})
	r.normal(0)
	d := r.setupQueue(0, 0, r.host, 32)
	for _, c := range []struct{ from, to *region }{{r.host, r.hbm}, {r.hbm, r.hbm}, {r.hbm, r.onchip}} {
		for _, n := range []int{1, 4096, 64 << 10} {
			src := r.alloc(c.from, n, 64)
			dst := r.alloc(c.to, n, 64)
			assert.Equal(t, uint64(0), completion(t, r, d, src, dst, n, 1000), "%d bytes", n)
		}
	}
	require.NoError(t, Timing{Ideal: true}.Validate())
	err := Timing{Ideal: true, FixedCost: 1}.Validate()
	require.ErrorIs(t, err, units.ErrRange)
	assert.Contains(t, err.Error(), "ideal engines take no time")
}

// TestTimeMemo: the memo of transfer times answers what TransferTime
// computes — at the HBM's bandwidth for n, 2n and 3n bytes — whatever the order of the sizes asked (the last two are
// remembered, older ones computed again).
func TestTimeMemo(t *testing.T) {
	tm := DefaultTiming(hwarch.Mariana)
	var m timeMemo
	for i, n := range []uint64{0, 65536, 4, 65536, 4, 4, 100, 65536, 1, 1 << 16, 0, 3} {
		got := *m.of(n, &tm)
		want := transferTimes{n: n, engine: ceilPS(n, tm.EngineBandwidth), host: ceilPS(n, tm.HostBandwidth),
			hbm: [3]uint64{ceilPS(n, tm.HBMBandwidth), ceilPS(2*n, tm.HBMBandwidth), ceilPS(3*n, tm.HBMBandwidth)}}
		assert.Equal(t, want, got, "call %d: %d bytes", i, n)
	}
}

// hbmTiming is a timing whose HBM is narrow enough to bound every transfer
// that goes through it, with figures whose times are worked out by hand: n =
// 1000 bytes take 100 000 ps at the engine's 10 GB/s (150 000 ps with the
// fixed cost), 125 000 ps on the 8 GB/s host link, and at the HBM's 3 GB/s
// ⌈10¹⁵/3·10⁹⌉ = 333 334 ps for n, ⌈2·10¹⁵/3·10⁹⌉ = 666 667 ps for 2n and
// exactly 1 000 000 ps for 3n (not 3 × 333 334: the bytes are timed together).
var hbmTiming = Timing{EngineBandwidth: 10e9, FixedCost: 50_000, HBMBandwidth: 3e9, HostBandwidth: 8e9}

// TestFinishTimeHBMCharge: a transfer books the device's HBM for every byte
// it moves through it — n for an HBM source, n for an HBM destination, n more
// for a reducing write into HBM (it reads the destination) — and nothing
// for a Remote destination's write or a reduce into on-chip memory; the host
// link carries n if either end is host memory. Times from hbmTiming, n =
// 1000, starting at 1 000 000 ps on an idle engine.
func TestFinishTimeHBMCharge(t *testing.T) {
	const n, now = 1000, 1_000_000
	const engine = now + 150_000
	for _, tc := range []struct {
		name                    string
		src, dst                Class
		reduce                  bool
		hbmFree                 uint64 // when the HBM is free before the transfer
		wantHBM, wantHost, want uint64 // HBMFree, HostFree and finish after
	}{
		{"hbm-hbm", HBM, HBM, false, 0, now + 666_667, 0, now + 666_667},
		{"hbm-host", HBM, Host, false, 0, now + 333_334, now + 125_000, now + 333_334},
		{"host-hbm", Host, HBM, false, 0, now + 333_334, now + 125_000, now + 333_334},
		{"hbm-remote", HBM, Remote, false, 0, now + 333_334, 0, now + 333_334},
		{"hbm-onchip", HBM, OnChip, false, 0, now + 333_334, 0, now + 333_334},
		{"onchip-hbm", OnChip, HBM, false, 0, now + 333_334, 0, now + 333_334},
		{"onchip-onchip", OnChip, OnChip, false, 0, 0, 0, engine},
		{"onchip-remote", OnChip, Remote, false, 0, 0, 0, engine},
		{"host-onchip", Host, OnChip, false, 0, 0, now + 125_000, engine},
		{"reduce hbm-hbm", HBM, HBM, true, 0, now + 1_000_000, 0, now + 1_000_000},
		{"reduce onchip-hbm", OnChip, HBM, true, 0, now + 666_667, 0, now + 666_667},
		{"reduce host-hbm", Host, HBM, true, 0, now + 666_667, now + 125_000, now + 666_667},
		{"reduce hbm-onchip", HBM, OnChip, true, 0, now + 333_334, 0, now + 333_334},
		{"reduce hbm-remote", HBM, Remote, true, 0, now + 333_334, 0, now + 333_334},
		{"reduce onchip-onchip", OnChip, OnChip, true, 0, 0, 0, engine},
		// A busy HBM: the bytes queue behind what it already carries.
		{"hbm-hbm behind", HBM, HBM, false, now + 500_000, now + 500_000 + 666_667, 0, now + 500_000 + 666_667},
		{"reduce hbm-hbm behind", HBM, HBM, true, now + 500_000, now + 1_500_000, 0, now + 1_500_000},
		{"onchip-onchip behind", OnChip, OnChip, false, now + 500_000, now + 500_000, 0, engine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOpts{opts: Options{Timing: hbmTiming}})
			r.clk.RunUntil(now)
			r.c.st.hbmFree = tc.hbmFree
			var busy uint64
			start, finish := r.c.finishTime(&busy, n, tc.src, tc.dst, tc.reduce)
			assert.Equal(t, uint64(now), start)
			assert.Equal(t, tc.want, finish)
			assert.Equal(t, tc.wantHBM, r.c.st.hbmFree, "HBM free")
			assert.Equal(t, tc.wantHost, r.c.st.hostFree, "host link free")
		})
	}
}

// TestReduceIntoHBMTime: a pair through a queue is charged as finishTime
// says: an HBM→HBM copy of 1000 bytes under hbmTiming completes 666 667 ps
// after it starts, a reducing one (fp32 add) 1 000 000 ps.
func TestReduceIntoHBMTime(t *testing.T) {
	add := udma.ReduceMeta(udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.FP32})
	for _, tc := range []struct {
		meta uint32
		want uint64
	}{{0, 666_667}, {add, 1_000_000}} {
		r := newRig(t, rigOpts{opts: Options{Timing: hbmTiming}})
		r.normal(0)
		q := r.setupQueue(0, 0, r.host, 32)
		src, dst := r.alloc(r.hbm, 1000, 64), r.alloc(r.hbm, 1000, 64)
		rx := rxDesc(t, dst, 1000, q.s2m.phase)
		rx.Meta = tc.meta
		q.pushDesc(txDesc(t, src, 1000, q.m2s.phase), rx)
		q.doorbell()
		at, ok := r.clk.Next()
		require.True(t, ok)
		assert.Equal(t, tc.want, at, "reduce word %#x", tc.meta)
		r.mustDrain()
		assert.Equal(t, uint64(1), r.queue(0, 0).Done)
	}
}
