package fabric

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// TestRingAndChainAnyLength: a ring or chain is one whatever its length —
// on a multiple of 16 devices too, where the driver's table is the torus's
// (issue 13, item 1: a 16-device chain had the torus's 64 links).
func TestRingAndChainAnyLength(t *testing.T) {
	for _, n := range []int{2, 3, 15, 16, 17, 32, 48, 64} {
		for _, k := range []Kind{KindRing, KindChain} {
			t.Run(fmt.Sprintf("%s-%d", k, n), func(t *testing.T) {
				topo := build(t, k, hwarch.Sunda, n)
				want := 2 * n
				if k == KindChain || n == 2 {
					want = 2 * (n - 1)
				}
				assert.Len(t, topo.Links, want, "directed links")
				for id, l := range topo.Links {
					d := (l.To - l.From + n) % n
					assert.True(t, d == 1 || d == n-1, "link %s joins devices that are not next to each other", topo.LinkName(id))
					if k == KindChain {
						assert.Equal(t, 1, max(l.To, l.From)-min(l.To, l.From), "a chain does not wrap: %d–%d", l.From, l.To)
					}
				}
				require.NoError(t, topo.Connected())
				p, err := topo.Path(0, n-1)
				require.NoError(t, err)
				if k == KindChain {
					assert.Len(t, p, n-1, "a chain's ends are n−1 hops apart")
				} else {
					assert.Len(t, p, 1, "a ring's ends are neighbours")
				}
			})
		}
	}
}

// TestDisconnectedRefused: a system whose devices are not all joined is
// refused when it is built, naming the groups (issue 13, item 1: 32 torus
// devices are two tori the driver's table does not join, and a collective
// across them halted a queue with "no path").
func TestDisconnectedRefused(t *testing.T) {
	for _, tc := range []struct {
		gen   hwarch.Generation
		kind  Kind
		n     int
		names []string
	}{
		{hwarch.Cayman, KindTorus2D, 32, []string{"2 groups", "neuron0–neuron15", "neuron16–neuron31"}},
		{hwarch.Sunda, KindAuto, 32, []string{"torus2d", "neuron0–neuron15", "neuron16–neuron31"}},
		{hwarch.Cayman, KindAuto, 48, []string{"3 groups", "neuron32–neuron47"}},
	} {
		t.Run(fmt.Sprintf("%s-%s-%d", tc.gen, tc.kind, tc.n), func(t *testing.T) {
			_, err := New(Config{Generation: tc.gen, Devices: tc.n, Kind: tc.kind, TimingOnly: true, Ready: true})
			require.ErrorIs(t, err, ErrDisconnected)
			for _, s := range tc.names {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
	// The topology itself can still be built and drawn: it is the driver's
	// table for that count.
	topo := build(t, KindTorus2D, hwarch.Cayman, 32)
	assert.Equal(t, [][]int{seq(0, 16), seq(16, 32)}, topo.Groups())
	for _, tc := range []struct {
		kind Kind
		gen  hwarch.Generation
		n    int
	}{{KindTorus2D, hwarch.Cayman, 16}, {KindUltraServer, hwarch.Cayman, 64}, {KindSwitch, hwarch.Mariana, 64},
		{KindStar, hwarch.Mariana, 5}, {KindFullyConnected, hwarch.Mariana, 5}, {KindRing, hwarch.Sunda, 1}} {
		assert.NoError(t, build(t, tc.kind, tc.gen, tc.n).Connected(), "%s of %d", tc.kind, tc.n)
	}
	// A hand-made topology with a one-way link: joined, but no way back.
	one := &Topology{Kind: KindStar, Devices: 2, Nodes: []Node{{Name: "neuron0"}, {Name: "neuron1"}}}
	one.link(0, 1, "link", LinkParams{Bandwidth: 1e9})
	one.route(nil)
	assert.ErrorIs(t, one.Connected(), ErrDisconnected)
}

func seq(a, b int) []int {
	var out []int
	for i := a; i < b; i++ {
		out = append(out, i)
	}
	return out
}

// TestBookEarliestGap: a link books each span at the earliest time at or
// after its arrival that no other booked span overlaps, forgets the spans
// over by the present, and keeps its spans in order, disjoint and merged
// — against a brute-force search over random calendars.
func TestBookEarliestGap(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 5))
	for c := range 1000 {
		var ls LinkState
		var all []Span // every booking, for the brute force
		now := uint64(0)
		for range 1 + rng.IntN(40) {
			now += rng.Uint64N(50)
			t0 := now + rng.Uint64N(400)
			d := 1 + rng.Uint64N(60)
			got := ls.book(now, t0, d)
			// Brute force: the earliest b ≥ t0 such that [b, b+d) meets no
			// booking that ends after now.
			want := t0
			for moved := true; moved; {
				moved = false
				for _, s := range all {
					if s.End > now && want < s.End && s.Begin < want+d {
						want, moved = s.End, true
					}
				}
			}
			require.Equal(t, want, got, "case %d: booking %d ps at %d (now %d) over %v", c, d, t0, now, all)
			all = append(all, Span{got, got + d})
			require.NoError(t, checkSpans(ls.Spans), "case %d", c)
			for _, s := range ls.Spans {
				require.Greater(t, s.End, now, "case %d: a span over by now is kept", c)
			}
			// Every time after now is busy in the calendar iff some booking
			// covers it.
			for _, s := range all {
				for _, x := range []uint64{s.Begin, s.End - 1} {
					if x >= now {
						require.True(t, covered(ls.Spans, x), "case %d: %d is booked but not in %v", c, x, ls.Spans)
					}
				}
			}
			for _, s := range ls.Spans {
				for _, x := range []uint64{s.Begin, s.End - 1} {
					require.True(t, covered(all, x), "case %d: %d is in the calendar but booked by none", c, x)
				}
			}
		}
	}
}

func covered(sp []Span, x uint64) bool {
	for _, s := range sp {
		if s.Begin <= x && x < s.End {
			return true
		}
	}
	return false
}

// TestSpanBound: a link that would keep more than MaxSpans books after its
// last span, so its calendar stays bounded.
func TestSpanBound(t *testing.T) {
	var ls LinkState
	for i := range uint64(MaxSpans + 10) {
		ls.book(0, 10*i, 5) // spans with gaps: none merge
	}
	assert.Len(t, ls.Spans, MaxSpans)
	require.NoError(t, checkSpans(ls.Spans))
	last := ls.Spans[len(ls.Spans)-1].End
	assert.Equal(t, last, ls.book(0, 0, 5), "a full calendar books after its last span")
	assert.Len(t, ls.Spans, MaxSpans, "merged into the last span")
}

// TestLaterWriteTakesIdleLink: a write reserved after another that has
// booked a link far ahead (its engine reads slowly, its chunk crosses the
// link later) is not held behind that booking when the link is idle until
// then (issue 13, item 5: links were FIFOs in the order writes were
// reserved, so a write could wait microseconds for a link nobody was
// using, and which writes waited changed with the size).
func TestLaterWriteTakesIdleLink(t *testing.T) {
	p := DefaultParams(hwarch.Sunda)
	p.Ring = LinkParams{Bandwidth: 100e9, Latency: 500 * ns}
	p.Endpoint = 100 * ns
	s, err := New(Config{Generation: hwarch.Sunda, Devices: 3, Kind: KindChain, Params: &p, Ready: true, TimingOnly: true})
	require.NoError(t, err)
	far, err := s.path(0, 2) // 0→1, 1→2
	require.NoError(t, err)
	near, err := s.path(1, 2) // 1→2
	require.NoError(t, err)
	require.Equal(t, far[1], near[0])
	// 0 → 2: one chunk, ready at 10 µs; it books 1→2 from 10.5 µs on.
	_, lands := s.timing(far, 4096, 0, 10_000*ns, nil)
	chunk := dma.TransferTime(4096, 100e9)
	assert.Equal(t, 10_000*ns+2*chunk+500*ns+500*ns+100*ns, lands)
	// 1 → 2, reserved afterwards but ready at 1 µs: the link is idle then.
	inj, lands := s.timing(near, 4096, 1_000*ns, 1_000*ns, nil)
	assert.Equal(t, 1_000*ns+chunk, inj, "not held behind the booking at 10.5 µs")
	assert.Equal(t, 1_000*ns+chunk+500*ns+100*ns, lands)
	// One that does not fit before the booking goes after it.
	gap := s.st.Links[near[0]].Spans[1].Begin - s.st.Links[near[0]].Spans[0].End
	big := int(gap/chunk+2) * 4096
	_, lands = s.timing(near, big, 1_000*ns+chunk, 1_000*ns+chunk, nil)
	assert.Greater(t, lands, 10_000*ns+2*chunk+500*ns, "the chunks that do not fit the gap wait for the booked one")
}

// TestFreeModelSharesOwnLink: in the contention-free model a device's
// writes onto its own link take turns on it — two writes that leave at
// once are not both done after n/B — while writes of different devices do
// not wait for each other (issue 13, item 4: every DMA engine of a device
// got the whole link, so a device injected at engines × the link's rate).
func TestFreeModelSharesOwnLink(t *testing.T) {
	p := DefaultParams(hwarch.Mariana)
	p.Model = Free
	p.Link = LinkParams{Bandwidth: 10e9, Latency: 500 * ns}
	s, err := New(Config{Generation: hwarch.Mariana, Devices: 3, Kind: KindStar, Params: &p, Ready: true, TimingOnly: true})
	require.NoError(t, err)
	const n = 1 << 20
	own := dma.TransferTime(n, 10e9)
	a, _ := s.path(0, 1)
	b, _ := s.path(0, 2)
	c, _ := s.path(1, 2)
	inj1, lands1 := s.timing(a, n, 0, 0, nil)
	inj2, lands2 := s.timing(b, n, 0, 0, nil)
	inj3, _ := s.timing(c, n, 0, 0, nil)
	assert.Equal(t, own, inj1)
	assert.Equal(t, 2*own, inj2, "the second write from device 0 follows the first on its link")
	assert.Equal(t, lands1+own, lands2)
	assert.Equal(t, own, inj3, "device 1's link is its own")
	// A slow engine (sent after n/B) leaves the link idle for others.
	inj4, _ := s.timing(c, n, 3*own, 10*own, nil)
	assert.Equal(t, 10*own, inj4)
	inj5, _ := s.timing(c, n, 3*own, 3*own, nil)
	assert.Equal(t, 5*own, inj5, "the link is booked for n/B from the slow write's start")
}

// TestFreeControlWriteNotBehindBookedData: in the contention-free model a
// 4-byte write (a semaphore) whose device's first link holds the n/B₀ of
// data writes of other engines, booked there from their start while their
// engines still read them, leaves at its sent and lands as on an idle
// system, whether it was booked before the data writes or after them; the
// data writes' times are the same either way. The 2 × 4 Trn2 all-gather
// of docs/fabric.md §Models ("Contention-free") had it waiting behind five
// 64 KiB writes (~1.1 µs at 280 GB/s) when booked after them and not at
// all when booked before, and which came first moved with the in-node
// bandwidth. A data write still takes its turn on the link (the device
// never injects faster than its link), and in the parity mode a control
// write is booked as any other message.
func TestFreeControlWriteNotBehindBookedData(t *testing.T) {
	const (
		writes, size = 5, 64 << 10
		start        = 1000 * ns
		read         = 2900 * ns // a 64 KiB write's read by one engine, ~22.6 GB/s
		semStart     = start + 40*ns
		semSent      = semStart + 50*ns
	)
	newSystem := func(t *testing.T, ideal bool) (*System, []int, []int) {
		p := DefaultParams(hwarch.Cayman)
		p.Model = Free
		p.Ring = LinkParams{Bandwidth: 280e9, Latency: 500 * ns}
		if ideal {
			p = p.WithIdealEndpoints()
		}
		s, err := New(Config{Generation: hwarch.Cayman, Devices: 4, Kind: KindRing, Params: &p, Ready: true, TimingOnly: true})
		require.NoError(t, err)
		data, err := s.path(0, 1) // 0→1
		require.NoError(t, err)
		sem, err := s.path(0, 2) // 0→1, 1→2: the same first link
		require.NoError(t, err)
		require.Len(t, data, 1)
		require.Len(t, sem, 2)
		require.Equal(t, data[0], sem[0])
		return s, data, sem
	}
	own := dma.TransferTime(size, 280e9)
	require.Less(t, writes*own, uint64(read), "the engines, not the link, set the data's pace")

	type times struct{ inj, lands uint64 }
	run := func(t *testing.T, ideal, semFirst bool, n int) (sem times, data []times) {
		s, dataPath, semPath := newSystem(t, ideal)
		send := func() {
			inj, lands := s.timing(semPath, n, semStart, semSent, nil)
			sem = times{inj, lands}
		}
		if semFirst {
			send()
		}
		for range writes {
			inj, lands := s.timing(dataPath, size, start, start+read, nil)
			data = append(data, times{inj, lands})
		}
		if !semFirst {
			send()
		}
		return sem, data
	}
	idle := func(t *testing.T, ideal bool, n int) times {
		s, _, semPath := newSystem(t, ideal)
		inj, lands := s.timing(semPath, n, semStart, semSent, nil)
		return times{inj, lands}
	}

	alone := idle(t, false, 4)
	require.Equal(t, uint64(semSent), alone.inj)
	before, dataBefore := run(t, false, true, 4)
	after, dataAfter := run(t, false, false, 4)
	assert.Equal(t, alone, before, "booked before the data writes")
	assert.Equal(t, alone, after, "booked after the data writes: not behind their link time")
	assert.Equal(t, dataBefore, dataAfter, "the data writes do not see the semaphore")
	for i, d := range dataAfter {
		assert.Equal(t, uint64(start+read), d.inj, "data write %d leaves when its engine has read it", i)
	}

	// A data write of 16 bytes booked after them waits for their link
	// time: the device's writes still take turns on its link.
	small, _ := run(t, false, false, 16)
	assert.Equal(t, start+writes*own+dma.TransferTime(16, 280e9), small.inj)
	assert.Greater(t, small.lands, idle(t, false, 16).lands)

	// The parity mode books every message, a semaphore too.
	parity, _ := run(t, true, false, 4)
	assert.Greater(t, parity.inj, idle(t, true, 4).inj, "booked behind the data in the parity mode")
}

// TestLandingGrowsWithSize: on idle links, a write of one byte more never
// lands earlier nor leaves its source earlier, in either model, whatever the
// chunk size, path and engine (issue 13, item 5: the engine's bytes were
// spread evenly over start..sent with its fixed cost, so the byte that
// made one chunk more made every whole chunk ready sooner).
func TestLandingGrowsWithSize(t *testing.T) {
	timing := dma.DefaultTiming(hwarch.Cayman)
	for _, m := range []Model{Aware, Free} {
		for _, chunk := range []int{256, 4096} {
			p := DefaultParams(hwarch.Cayman)
			p.Model, p.ChunkBytes = m, chunk
			p.Ring = LinkParams{Bandwidth: 50e9, Latency: 300 * ns}
			s, err := New(Config{Generation: hwarch.Cayman, Devices: 5, Kind: KindChain, Params: &p, DMA: timing, Ready: true, TimingOnly: true})
			require.NoError(t, err)
			for _, hops := range []int{1, 2, 4} {
				path, err := s.path(0, hops)
				require.NoError(t, err)
				var lastInj, lastLands uint64
				for n := 1; n <= 6*chunk; n++ {
					for i := range s.st.Links {
						s.st.Links[i].Spans = nil
					}
					const start = 1000 * ns
					sent := start + timing.FixedCost + dma.TransferTime(uint64(n), timing.EngineBandwidth)
					inj, lands := s.timing(path, n, start, sent, nil)
					require.GreaterOrEqual(t, inj, lastInj, "%s, chunk %d, %d hops: %d bytes leave before %d", m, chunk, hops, n, n-1)
					require.GreaterOrEqual(t, lands, lastLands, "%s, chunk %d, %d hops: %d bytes land before %d", m, chunk, hops, n, n-1)
					lastInj, lastLands = inj, lands
				}
			}
		}
	}
}

// FuzzBook: any sequence of bookings (each a step of the present, an
// arrival after it and a length, two bytes each) keeps a link's calendar
// valid, and each booking takes the earliest idle time that holds it.
func FuzzBook(f *testing.F) {
	f.Add([]byte{0, 0, 0, 10, 0, 5, 0, 0, 0, 0, 0, 5, 1, 0, 0, 20, 0, 1})
	f.Add([]byte{0, 0, 0, 1, 0, 1, 0, 0, 0, 3, 0, 1, 0, 0, 0, 2, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ls LinkState
		var all []Span
		var now uint64
		for len(data) >= 6 && len(all) < 256 {
			step := uint64(data[0])<<8 | uint64(data[1])
			at := uint64(data[2])<<8 | uint64(data[3])
			d := uint64(data[4])<<8 | uint64(data[5])
			data = data[6:]
			now += step
			t0 := now + at
			got := ls.book(now, t0, d)
			if d == 0 {
				if got != t0 {
					t.Fatalf("an empty booking at %d returned %d", t0, got)
				}
				continue
			}
			if got < t0 {
				t.Fatalf("booked at %d before the arrival %d", got, t0)
			}
			for _, s := range all {
				if s.End > now && got < s.End && s.Begin < got+d {
					t.Fatalf("[%d, %d) overlaps booked [%d, %d)", got, got+d, s.Begin, s.End)
				}
				// Earliest: the gap just before got does not hold d.
				if s.End > now && s.End >= t0 && s.End < got {
					free := true
					for _, o := range all {
						if o.End > now && s.End < o.End && o.Begin < s.End+d {
							free = false
							break
						}
					}
					if free {
						t.Fatalf("booked at %d, but %d was idle for %d", got, s.End, d)
					}
				}
			}
			if got > t0 {
				busy := false
				for _, o := range all {
					if o.End > now && t0 < o.End && o.Begin < t0+d {
						busy = true
					}
				}
				if !busy {
					t.Fatalf("booked at %d, but the arrival %d was idle for %d", got, t0, d)
				}
			}
			all = append(all, Span{got, got + d})
			if err := checkSpans(ls.Spans); err != nil {
				t.Fatal(err)
			}
		}
	})
}
