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
