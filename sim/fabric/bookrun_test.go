package fabric

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// randomCalendar returns a valid calendar of about n spans from about
// `from` on, their lengths and the gaps between them up to scale ps.
func randomCalendar(rng *rand.Rand, n int, from, scale uint64) []Span {
	var c []Span
	t := from
	for range n {
		t += 1 + rng.Uint64N(scale)
		end := t + 1 + rng.Uint64N(scale)
		c = append(c, Span{t, end})
		t = end
	}
	return c
}

// timingSystem is a timing-only system of a generation, kind and size,
// its devices ready, for tests and benchmarks.
type timingSystem struct {
	gen     hwarch.Generation
	kind    Kind
	devices int
}

// build builds the system with parameters p.
func (ts timingSystem) build(tb testing.TB, p Params) *System {
	tb.Helper()
	s, err := New(Config{Generation: ts.gen, Devices: ts.devices, Kind: ts.kind, Params: &p, Ready: true, TimingOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// sameLinks reports how two links' states differ, "" when they do not
// (an empty calendar is one whether or not it has an array).
func sameLinks(a, b *LinkState) string {
	if !slices.Equal(a.Spans, b.Spans) {
		return fmt.Sprintf("spans %v, want %v", a.Spans, b.Spans)
	}
	if a.Bytes != b.Bytes || a.Busy != b.Busy || a.Down != b.Down {
		return fmt.Sprintf("counters %d B %d ps down %v, want %d B %d ps down %v", a.Bytes, a.Busy, a.Down, b.Bytes, b.Busy, b.Down)
	}
	return ""
}

// TestBookRunMatchesBook: booking a write's chunks in one pass gives each
// chunk the time book gives it, one call per chunk in order, and leaves the
// same calendar — on random calendars (some spans over by the present),
// arrivals mostly in order (some going back, some before the present),
// chunks of any length (empty ones too) and calendars at their bound.
func TestBookRunMatchesBook(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	for c := range 3000 {
		spans := rng.IntN(40)
		if c%20 == 0 {
			spans = MaxSpans - rng.IntN(8)
		}
		cal := randomCalendar(rng, spans, rng.Uint64N(100), 1+rng.Uint64N(80))
		now := rng.Uint64N(400)
		d, last := rng.Uint64N(60), rng.Uint64N(60)
		if c%7 != 0 {
			d, last = 1+d, 1+last
		}
		at := make([]uint64, 1+rng.IntN(20))
		t0 := now + rng.Uint64N(300)
		if len(cal) > 0 && c%3 == 0 {
			t0 = max(now, cal[len(cal)-1].End+rng.Uint64N(400)-min(cal[len(cal)-1].End, 200)) // near the calendar's end
		}
		if c%11 == 0 {
			t0 = now - min(now, rng.Uint64N(50))
		}
		for j := range at {
			at[j] = t0
			switch rng.IntN(10) {
			case 0:
				t0 -= min(t0, rng.Uint64N(100)) // out of order
			case 1, 2:
				// at once
			default:
				t0 += rng.Uint64N(150)
			}
		}
		run := LinkState{Spans: slices.Clone(cal)}
		one := LinkState{Spans: slices.Clone(cal)}
		delay := rng.Uint64N(1000)
		want := slices.Clone(at)
		var wantCrossed uint64
		for j, tj := range want {
			dj := d
			if j == len(want)-1 {
				dj = last
			}
			end := addTime(one.book(now, tj, dj), dj)
			wantCrossed = max(wantCrossed, end)
			want[j] = end + delay
		}
		crossed := run.bookRun(now, at, d, last, delay)
		require.Equal(t, want, at, "case %d: now %d, chunks of %d (last %d) on %d spans", c, now, d, last, spans)
		require.Equal(t, wantCrossed, crossed, "case %d", c)
		require.Empty(t, sameLinks(&run, &one), "case %d", c)
	}
}

// TestStoreAndForwardMatchesChunks: the aware model's link-by-link booking
// gives every write the times, and every link the calendar and counters,
// that booking chunk by chunk gives — on random writes (any size, chunked
// or one chunk with ideal endpoints, continuing a message or not) over
// random paths of systems of mixed links, onto calendars already holding
// other writes, with the present moving on.
func TestStoreAndForwardMatchesChunks(t *testing.T) {
	systems := []struct {
		name  string
		sys   timingSystem
		tweak func(Params) Params
	}{
		{"trn2-torus", timingSystem{hwarch.Cayman, KindTorus2D, 16}, func(p Params) Params { return p }},
		{"trn3-gen1", timingSystem{hwarch.Mariana, KindTrn3Gen1, Gen1Servers * Gen1ServerSize}, func(p Params) Params { return p }},
		{"inf2-chain-chunk-256", timingSystem{hwarch.Sunda, KindChain, 6}, func(p Params) Params { p.ChunkBytes = 256; return p }},
		{"trn2-torus-ideal", timingSystem{hwarch.Cayman, KindTorus2D, 16}, Params.WithIdealEndpoints},
	}
	for si, sc := range systems {
		t.Run(sc.name, func(t *testing.T) {
			var sys [2]*System
			for k := range sys {
				sys[k] = sc.sys.build(t, sc.tweak(DefaultParams(sc.sys.gen)))
			}
			fast, ref := sys[0], sys[1]
			rng := rand.New(rand.NewPCG(16, uint64(si)))
			links := len(fast.topo.Links)
			for id := range links {
				cal := randomCalendar(rng, rng.IntN(30), 0, 1+rng.Uint64N(20_000))
				fast.st.Links[id].Spans = cal
				ref.st.Links[id].Spans = slices.Clone(cal)
			}
			var now uint64
			for w := range 4000 {
				path := randomPath(t, rng, fast)
				n := randomSize(rng)
				before := uint64(0)
				if rng.IntN(4) == 0 {
					before = rng.Uint64N(1 << 20)
				}
				now += rng.Uint64N(2_000)
				start := now + rng.Uint64N(50_000)
				sent := start + rng.Uint64N(100)
				if rng.IntN(2) == 0 {
					sent = start + 50*ns + dma.TransferTime(uint64(n), 23e9)
				}
				inj, lands := fast.storeAndForward(path, n, before, now, start, sent, nil)
				wantInj, wantLands := ref.storeAndForwardChunks(path, n, before, now, start, sent, nil)
				require.Equal(t, [2]uint64{wantInj, wantLands}, [2]uint64{inj, lands}, "write %d: %d bytes (%d before) over %v, now %d, start %d, sent %d", w, n, before, path, now, start, sent)
				for id := range links {
					require.Empty(t, sameLinks(&fast.st.Links[id], &ref.st.Links[id]), "write %d: link %d", w, id)
				}
				for id := range links {
					if checkQueues(w, 4000) {
						require.Empty(t, sameQueue(&fast.st.Links[id], &ref.st.Links[id], now), "write %d: link %d's arrivals", w, id)
					}
				}
			}
		})
	}
}

// randomPath is a path between two random devices of s, or some distinct
// random links, or one through a link twice.
func randomPath(t *testing.T, rng *rand.Rand, s *System) []int {
	switch rng.IntN(8) {
	case 0:
		return rng.Perm(len(s.topo.Links))[:1+rng.IntN(4)]
	case 1:
		id := rng.IntN(len(s.topo.Links))
		return []int{id, rng.IntN(len(s.topo.Links)), id}
	}
	src, dst := rng.IntN(s.topo.Devices), rng.IntN(s.topo.Devices)
	if src == dst {
		dst = (dst + 1) % s.topo.Devices
	}
	path, err := s.path(src, dst)
	require.NoError(t, err)
	return path
}

// randomSize is a write's size: mostly whole 4 KiB chunks up to a
// descriptor's 64 KiB, sometimes any size up to 3 descriptors' (none too).
func randomSize(rng *rand.Rand) int {
	switch rng.IntN(4) {
	case 0:
		return rng.IntN(3*64<<10 + 1)
	case 1:
		return 64 << 10
	}
	return 4096 * (1 + rng.IntN(16))
}

// queueLink is one link of TestBookQueueMatchesBook's paths: its calendar,
// a whole chunk's serialisation, the last chunk's and the delay to the
// next node.
type queueLink struct {
	ls             LinkState
	d, last, delay uint64
}

// TestBookQueueMatchesBook: booking a write's chunks through bookQueue
// while they queue, and bookRun from the first link where they do not
// (storeAndForward's loop), gives every chunk on every link of a path of
// 1–4 links the time book gives it, one call per chunk and link, and
// leaves every link the same calendar — on random calendars (some spans
// over by the present, some at their bound or one or two short of it),
// chunk counts, first-link arrivals as bounded runs (equal arrivals, steps
// larger and smaller than d, exact progressions, out of order) and, a
// third of the time, at the edges of each of bookQueue's conditions
// (edgeArrivals), d = 0, last = 0, and times and lengths near 2^64
// (saturation). It also checks that the run bookQueue gives the next link
// lists the times book gives there, and that bookQueue changes nothing but
// the spans over when it declines.
func TestBookQueueMatchesBook(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2))
	var queued, declined, filled, saturated int
	for c := range 12000 {
		now := rng.Uint64N(400)
		base := uint64(0)
		if c%10 == 0 {
			base = ^uint64(0) - rng.Uint64N(20_000) // times near 2^64
			now += base
		}
		links := make([]queueLink, 1+rng.IntN(4))
		for i := range links {
			l := &links[i]
			spans := rng.IntN(30)
			if i == 0 && (c%100 == 0 || c%30 == 2) {
				spans = MaxSpans - rng.IntN(4)
			}
			scale := 1 + rng.Uint64N(80)
			from := base + rng.Uint64N(200)
			if base > 0 {
				spans = min(spans, 20) // the calendar fits below 2^64
				from = base - min(base, uint64(spans)*2*scale+rng.Uint64N(400))
			}
			l.ls.Spans = randomCalendar(rng, spans, from, scale)
			l.d, l.last = 1+rng.Uint64N(60), rng.Uint64N(60)
			switch rng.IntN(40) {
			case 0:
				l.d = 0
			case 1:
				l.last = 0
			case 2:
				l.d = 1<<63 + rng.Uint64N(1<<62) // one chunk near 2^64
			case 3:
				l.d = ^uint64(0)/uint64(2+rng.IntN(20)) - rng.Uint64N(100) // the run's sum near 2^64
			}
			l.delay = rng.Uint64N(1000)
			if rng.IntN(60) == 0 {
				l.delay = ^uint64(0) - rng.Uint64N(1<<20)
			}
		}
		m := 1 + rng.IntN(20)
		// The first link's arrivals: a run of steps up to step, starting
		// near the first calendar's end (or anywhere, or before now).
		at := make([]uint64, m)
		t0 := now + rng.Uint64N(300)
		if cal := links[0].ls.Spans; len(cal) > 0 && c%3 != 0 {
			e := cal[len(cal)-1].End
			t0 = max(now, e-min(e, rng.Uint64N([]uint64{150, 2000}[c%2]))+rng.Uint64N(100))
		}
		if c%11 == 0 {
			t0 = now - min(now, rng.Uint64N(50))
		}
		step := rng.Uint64N(2 * (links[0].d%100 + 1))
		exact := rng.IntN(3) == 0
		at[0] = t0
		for k := 1; k < m-1; k++ {
			s := step
			if !exact {
				s = rng.Uint64N(step + 1)
			}
			at[k] = addTime(at[k-1], s)
		}
		if m > 1 {
			if m > 2 && rng.IntN(20) == 0 {
				at[1] = at[0] - min(at[0], 1+rng.Uint64N(40)) // chunk 1 before chunk 0: declined
			}
			switch rng.IntN(4) {
			case 0:
				at[m-1] = at[max(m-2, 0)] - min(at[max(m-2, 0)], rng.Uint64N(500))
			case 1:
				at[m-1] = at[max(m-2, 0)]
			default:
				at[m-1] = addTime(at[max(m-2, 0)], rng.Uint64N(500))
			}
		}
		if c%3 == 2 {
			at, step = edgeArrivals(t, rng, &links[0], now, m)
		}
		r := chunkRun{m: m, first: at[0], step: step, last: at[m-1]}
		if m > 1 {
			r.second = at[1]
		}

		// The reference: book, one call per chunk and link, link after link.
		want := slices.Clone(links)
		for i := range want {
			want[i].ls.Spans = slices.Clone(want[i].ls.Spans)
		}
		wantAt := make([][]uint64, len(links))
		wantCrossed := make([]uint64, len(links))
		next := slices.Clone(at)
		for i := range want {
			l := &want[i]
			for j, tj := range next {
				dj := l.d
				if j == m-1 {
					dj = l.last
				}
				end := addTime(l.ls.book(now, tj, dj), dj)
				wantCrossed[i] = max(wantCrossed[i], end)
				next[j] = addTime(end, l.delay)
			}
			wantAt[i] = slices.Clone(next)
		}

		// storeAndForward's loop.
		got := slices.Clone(links)
		for i := range got {
			got[i].ls.Spans = slices.Clone(got[i].ls.Spans)
		}
		run := slices.Clone(at)
		ok := true
		for i := range got {
			l := &got[i]
			var crossed uint64
			if ok {
				before := slices.Clone(l.ls.Spans)
				in := r
				if crossed, ok = l.ls.bookQueue(now, &r, l.d, l.last, l.delay); ok {
					queued++
					require.Equal(t, wantAt[i], r.fill(make([]uint64, m)), "case %d link %d: the run at the next node", c, i)
				} else {
					declined++
					require.Equal(t, in, r, "case %d link %d: a declined run is returned as it came", c, i)
					require.Equal(t, current(before, now), l.ls.Spans, "case %d link %d: declining forgets the spans over and no more", c, i)
					if i > 0 {
						run = r.fill(run)
						filled++
					}
				}
			}
			if !ok {
				crossed = l.ls.bookRun(now, run, l.d, l.last, l.delay)
				require.Equal(t, wantAt[i], run, "case %d link %d", c, i)
			}
			require.Equal(t, wantCrossed[i], crossed, "case %d link %d: crossed", c, i)
			require.Empty(t, sameLinks(&l.ls, &want[i].ls), "case %d link %d", c, i)
			if crossed == ^uint64(0) {
				saturated++
			}
		}
	}
	t.Logf("%d links booked by bookQueue, %d declined (%d after a link that queued), %d crossing at 2^64−1", queued, declined, filled, saturated)
	require.Greater(t, queued, 5000)
	require.Greater(t, declined, 5000)
	require.Greater(t, filled, 500)
	require.Greater(t, saturated, 50)
}

// edgeArrivals returns arrivals of m chunks at link l, and a bound on
// their step, at the edges of bookQueue's conditions, changing l's
// calendar to make them so (and a full one to its bound, or one or two
// spans short of it): chunk 0 at the calendar's end, give or take 1 ps, or
// at a gap's start, give or take 2 ps, the gap holding chunks 0..m−2 give
// or take 1 ps; chunk 1 at chunk 0's end, give or take 1 ps; the others d
// apart, give or take 1 ps; the last at the end of the span that then
// holds chunk m−2, give or take 1 ps (or anywhere after chunk m−2).
func edgeArrivals(t *testing.T, rng *rand.Rand, l *queueLink, now uint64, m int) ([]uint64, uint64) {
	near := func(x uint64) uint64 { // x − 1, x or x + 1
		switch rng.IntN(3) {
		case 0:
			return x - min(x, 1)
		case 1:
			return x
		}
		return addTime(x, 1)
	}
	at := make([]uint64, m)
	cal := l.ls.Spans
	if len(cal) > MaxSpans-8 {
		// A calendar at its bound, or one or two spans short of it, when
		// its spans over by now are forgotten: chunk 0 may take the last
		// place, or queue as a FIFO.
		cal = current(cal, now)
		for len(cal) > 0 && len(cal) < MaxSpans {
			e := cal[len(cal)-1].End
			cal = append(cal, Span{e + 2, e + 3})
		}
		cal = cal[rng.IntN(3):]
		l.ls.Spans = cal
	}
	var t0 uint64
	switch n := len(cal); {
	case n == 0:
		t0 = now + rng.Uint64N(3)
	case n >= 2 && rng.IntN(2) == 0:
		g := n - 1 - rng.IntN(min(n-1, 3)) // the gap before span g, near the end
		from := cal[g-1].End
		t0 = max(now, from-min(from, 2)+rng.Uint64N(5)) // touching span g−1 or not
		// The gap holds the queue, give or take 1 ps: span g and those
		// after it move to its end.
		if end := near(addTime(max(t0, from), mulTime(uint64(max(m-1, 1)), l.d))); end > from && end < 1<<62 && cal[n-1].End < 1<<62 {
			for j, was := g, cal[g].Begin; j < n; j++ {
				cal[j].Begin, cal[j].End = cal[j].Begin-was+end, cal[j].End-was+end
			}
			require.NoError(t, checkSpans(cal))
		}
	case n >= MaxSpans && rng.IntN(2) == 0:
		t0 = max(now, cal[n-1].End+1+rng.Uint64N(3)) // after a full calendar's last span: a FIFO's
	default:
		t0 = max(now, near(cal[n-1].End))
	}
	at[0] = t0
	if m == 1 {
		return at, 0
	}
	probe := LinkState{Spans: slices.Clone(cal)}
	end0 := addTime(probe.book(now, t0, l.d), l.d)
	at[1] = max(t0, near(end0))
	step := near(l.d)
	for k := 2; k < m-1; k++ {
		at[k] = addTime(at[k-1], step)
	}
	for k := 1; k < m-1; k++ {
		probe.book(now, at[k], l.d)
	}
	at[m-1] = addTime(at[max(m-2, 0)], rng.Uint64N(500))
	if n := len(probe.Spans); n > 0 && rng.IntN(4) != 0 {
		at[m-1] = max(now, near(probe.Spans[n-1].End))
	}
	return at, step
}

// TestStoreAndForwardQueues: the aware model's fast path (bookQueue while
// a write's chunks queue, from readyRun's times) gives every write the
// times, and every link the calendar and counters, that bookRun on every
// link gives (slowBook) and that booking chunk by chunk gives — under
// traffic that saturates the links (engines writing back to back), on
// systems as built and on systems whose links' chunk times and delays and
// whose engines' read table are random (one that decreases too), with
// chunks of 4 KiB and of 256 bytes (256 to a write), and at times near
// 2^64.
func TestStoreAndForwardQueues(t *testing.T) {
	cases := []struct {
		name       string
		sys        timingSystem
		chunk      int
		random     bool
		decreasing bool // a read table that decreases
		base       uint64
	}{
		{"trn3-gen2", timingSystem{hwarch.Mariana, KindTrn3Gen2, Gen2Servers * Gen2ServerSize}, 0, false, false, 0},
		{"trn2-torus", timingSystem{hwarch.Cayman, KindTorus2D, 16}, 0, false, false, 0},
		{"trn3-gen1-random", timingSystem{hwarch.Mariana, KindTrn3Gen1, Gen1Servers * Gen1ServerSize}, 0, true, false, 0},
		{"trn2-torus-random", timingSystem{hwarch.Cayman, KindTorus2D, 16}, 0, true, false, 0},
		{"trn2-torus-random-decreasing", timingSystem{hwarch.Cayman, KindTorus2D, 16}, 0, true, true, 0},
		{"inf2-chain-chunk-256", timingSystem{hwarch.Sunda, KindChain, 6}, 256, false, false, 0},
		{"trn2-torus-near-2^64", timingSystem{hwarch.Cayman, KindTorus2D, 16}, 0, true, false, ^uint64(0) - 1<<28},
	}
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(17, uint64(ci)))
			p := DefaultParams(tc.sys.gen)
			if tc.chunk > 0 {
				p.ChunkBytes = tc.chunk
			}
			var sys [3]*System // the fast path, bookRun on every link, chunk by chunk
			for k := range sys {
				sys[k] = tc.sys.build(t, p)
			}
			sys[1].slowBook = true
			if tc.random {
				for id := range sys[0].topo.Links {
					ct := sys[0].chunkTime[id]
					d, delay := ct/2+rng.Uint64N(2*ct+1), rng.Uint64N(2_000_000)
					if rng.IntN(20) == 0 {
						d = 0
					}
					for _, s := range sys {
						s.chunkTime[id], s.hopDelay[id] = d, delay
					}
				}
				// A read table of steps about as even as AtRate's, or
				// one that decreases (no bound on the step).
				read := slices.Clone(sys[0].readTime)
				step := rng.Uint64N(300_000)
				for k := 1; k < len(read); k++ {
					read[k] = read[k-1] + step + rng.Uint64N(3)
				}
				if tc.decreasing {
					k := 2 + rng.IntN(len(read)-2)
					read[k] = read[k-1] - min(read[k-1], 1+rng.Uint64N(1000))
				}
				for _, s := range sys {
					s.readTime = slices.Clone(read)
					s.readStep = largestStep(read)
				}
			}
			// Engines writing back to back, most over one path, some over
			// another (and now and then any path): more than their links
			// carry.
			var clock [24]uint64
			src := rng.IntN(sys[0].topo.Devices)
			main, err := sys[0].path(src, (src+1+rng.IntN(sys[0].topo.Devices-1))%sys[0].topo.Devices)
			require.NoError(t, err)
			paths := [2][]int{main, randomPath(t, rng, sys[0])}
			for e := range clock {
				clock[e] = tc.base + rng.Uint64N(1_000_000)
			}
			now := tc.base
			queued, saturated := 0, 0
			const writes = 3000
			for w := range writes {
				e := rng.IntN(len(clock))
				if rng.IntN(4) != 0 {
					e = slices.Index(clock[:], slices.Min(clock[:])) // the engine whose write starts first, as the event engine runs them
				}
				path := paths[e%4/3]
				if rng.IntN(10) == 0 {
					path = randomPath(t, rng, sys[0])
				}
				n := 64 << 10
				if rng.IntN(3) == 0 {
					n = randomSize(rng)
				}
				start := addTime(clock[e], rng.Uint64N(3)*rng.Uint64N(200_000))
				sent := addTime(start, 50*ns+dma.TransferTime(uint64(n), 23e9))
				if rng.IntN(5) == 0 {
					sent = addTime(start, rng.Uint64N(100_000)) // sooner than its read: chunks ready at start
				}
				clock[e] = sent
				now = max(now, min(slices.Min(clock[:]), start)-min(slices.Min(clock[:]), start, rng.Uint64N(4_000_000)))
				before := uint64(0)
				if rng.IntN(6) == 0 {
					before = rng.Uint64N(1 << 20)
				}
				// Whether the first link books the write in O(1).
				if r, ok := sys[0].readyRun(n, sys[0].p.chunk(n), (uint64(n)+sys[0].p.chunk(n)-1)/sys[0].p.chunk(n), start, max(sent, start)); ok && distinct(path) {
					ls := LinkState{Spans: slices.Clone(sys[0].st.Links[path[0]].Spans)}
					if _, ok := ls.bookQueue(now, &r, sys[0].busyOf(path[0], sys[0].p.chunk(n)), 0, 0); ok {
						queued++
					}
				}
				var got [3][2]uint64
				for k, s := range sys {
					if k < 2 {
						got[k][0], got[k][1] = s.storeAndForward(path, n, before, now, start, max(sent, start), nil)
					} else {
						got[k][0], got[k][1] = s.storeAndForwardChunks(path, n, before, now, start, max(sent, start), nil)
					}
				}
				require.Equal(t, got[2], got[0], "write %d: %d bytes (%d before) over %v, now %d, start %d, sent %d", w, n, before, path, now, start, sent)
				require.Equal(t, got[2], got[1], "write %d: bookRun on every link", w)
				if got[0][1] == ^uint64(0) {
					saturated++
				}
				links := path // the links a write can change; all of them after the last
				if w == writes-1 {
					links = seq(0, len(sys[0].st.Links))
				}
				for _, id := range links {
					require.Empty(t, sameLinks(&sys[0].st.Links[id], &sys[2].st.Links[id]), "write %d: link %d", w, id)
					require.Empty(t, sameLinks(&sys[1].st.Links[id], &sys[2].st.Links[id]), "write %d: link %d (bookRun on every link)", w, id)
					if checkQueues(w, writes) {
						require.Empty(t, sameQueue(&sys[0].st.Links[id], &sys[2].st.Links[id], now), "write %d: link %d's arrivals", w, id)
						require.Empty(t, sameQueue(&sys[1].st.Links[id], &sys[2].st.Links[id], now), "write %d: link %d's arrivals (bookRun on every link)", w, id)
					}
				}
			}
			t.Logf("%d of %d writes queued on their first link, %d landing at 2^64−1", queued, writes, saturated)
			if !tc.decreasing {
				require.Greater(t, queued, writes/20, "the fast path is tested")
			}
		})
	}
}
