package fabric

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkTimes lists every chunk of a link's runs as (arrival, crossing).
func chunkTimes(q []Arrivals) [][2]uint64 {
	var out [][2]uint64
	for _, r := range q {
		for k := range r.N {
			out = append(out, [2]uint64{addTime(r.At, mulTime(k, r.Every)), addTime(r.End, mulTime(k, r.Step))})
		}
	}
	return out
}

// drainedBrute is LinkState.drained from a list of chunks.
func drainedBrute(chunks [][2]uint64, t uint64) uint64 {
	w := t
	for _, c := range chunks {
		if c[0] <= t {
			w = max(w, c[1])
		}
	}
	return w
}

// staircase is drained as a function of the arrival time, from a list of
// chunks: by arrival, and the latest crossing of the chunks that came by
// then.
type staircase struct{ at, end []uint64 }

// stairs makes the staircase of the chunks still crossing after now.
func stairs(chunks [][2]uint64, now uint64) staircase {
	chunks = slices.DeleteFunc(slices.Clone(chunks), func(c [2]uint64) bool { return c[1] <= now })
	slices.SortFunc(chunks, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	var s staircase
	for _, c := range chunks {
		e := c[1]
		if n := len(s.end); n > 0 {
			e = max(e, s.end[n-1])
		}
		s.at, s.end = append(s.at, c[0]), append(s.end, e)
	}
	return s
}

// wait is when a control write that reaches the link at t leaves it.
func (s staircase) wait(t uint64) uint64 {
	i, found := slices.BinarySearch(s.at, t)
	for found && i+1 < len(s.at) && s.at[i+1] == t {
		i++
	}
	if found {
		i++
	}
	if i == 0 {
		return t
	}
	return max(t, s.end[i-1])
}

// sameQueue reports how two links differ in what a control write that
// reaches them at or after now waits for ("" when they do not): at, just
// before and just after every arrival of a chunk still crossing in either,
// both staircases walked once in time order.
func sameQueue(a, b *LinkState, now uint64) string {
	sa, sb := stairs(chunkTimes(a.Queue), now), stairs(chunkTimes(b.Queue), now)
	probes := append(slices.Clone(sa.at), sb.at...)
	slices.Sort(probes)
	var ia, ib int // the steps of each staircase that came by the probe
	for _, c := range probes {
		for _, t := range []uint64{c - min(c, 1), c, addTime(c, 1)} {
			if t < now {
				continue
			}
			for ia < len(sa.at) && sa.at[ia] <= t {
				ia++
			}
			for ib < len(sb.at) && sb.at[ib] <= t {
				ib++
			}
			x, y := t, t
			if ia > 0 {
				x = max(x, sa.end[ia-1])
			}
			if ib > 0 {
				y = max(y, sb.end[ib-1])
			}
			if x != y {
				return fmt.Sprintf("a control write at %d waits until %d, want %d (%d and %d runs)", t, x, y, len(a.Queue), len(b.Queue))
			}
		}
	}
	return ""
}

// checkQueues says whether the store-and-forward tests compare the links'
// arrivals (sameQueue) after write w of writes: every 500th and the last
// (a link can hold tens of thousands of chunks in flight).
func checkQueues(w, writes int) bool {
	return w%500 == 0 || w == writes-1
}

// TestArrivalsRuns: chunks recorded one by one join a run while they
// continue it exactly, and drained answers as the list of chunks does,
// runs over by now forgotten.
func TestArrivalsRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	for c := range 500 {
		var ls LinkState
		var chunks [][2]uint64
		var now, a, e uint64
		for range 1 + rng.IntN(200) {
			switch rng.IntN(4) {
			case 0: // one write's chunks: a linear run of the same steps, mostly
				every, step := rng.Uint64N(3000), rng.Uint64N(3000)
				var b runBuilder
				for range 1 + rng.IntN(16) {
					a, e = a+every, max(e, a)+step
					b.add(&ls, now, a, e)
					chunks = append(chunks, [2]uint64{a, e})
				}
				b.flush(&ls, now)
			case 1: // a chunk that arrived earlier than the last
				b := a - min(a, rng.Uint64N(5000))
				f := b + 1 + rng.Uint64N(5000)
				record(&ls, now, b, f)
				chunks = append(chunks, [2]uint64{b, f})
			default:
				a += rng.Uint64N(5000)
				e = max(e, a) + rng.Uint64N(5000)
				record(&ls, now, a, e)
				chunks = append(chunks, [2]uint64{a, e})
			}
			if rng.IntN(10) == 0 {
				now += rng.Uint64N(20000)
				probe := now + rng.Uint64N(20000)
				want := max(drainedBrute(chunks, probe), probe)
				require.Equal(t, want, stairs(chunks, now).wait(probe), "case %d: the test's staircase", c)
				require.Equal(t, want, ls.drained(probe), "case %d: drained(%d, %d)", c, now, probe)
			}
		}
		require.LessOrEqual(t, len(ls.Queue), len(chunks), "case %d: no more runs than chunks", c)
		got := chunkTimes(ls.Queue)
		crossings := make(map[uint64]bool)
		for _, ch := range chunks {
			crossings[ch[1]] = true
		}
		// Every chunk kept is one recorded, or the one chunk that stands
		// for those arrived (at 0, crossing with one of them); every chunk
		// recorded still on its way by now is kept; and a control write
		// from now on waits for what it waits for behind the chunks
		// recorded.
		for _, ch := range got {
			if ch[0] == 0 && crossings[ch[1]] {
				continue
			}
			require.Contains(t, chunks, ch, "case %d", c)
		}
		for _, ch := range chunks {
			if ch[1] > now && ch[0] > now {
				require.Contains(t, got, ch, "case %d: a chunk still on its way", c)
			}
		}
		if c%10 == 0 { // walked whole: every tenth case
			var brute LinkState
			for _, ch := range chunks {
				brute.Queue = append(brute.Queue, Arrivals{At: ch[0], End: ch[1], N: 1})
			}
			require.Empty(t, sameQueue(&ls, &brute, now), "case %d", c)
		}
	}
}

// record records a write of one chunk on a link.
func record(ls *LinkState, now, a, e uint64) {
	var b runBuilder
	b.add(ls, now, a, e)
	b.flush(ls, now)
}

// TestArrivalsLinear: a write's chunks, queued one after another, are one
// run; another write's are a run of their own.
func TestArrivalsLinear(t *testing.T) {
	var ls LinkState
	var b runBuilder
	for k := range uint64(15) {
		b.add(&ls, 0, 1000+k*200, 5000+k*164)
	}
	b.flush(&ls, 0)
	require.Equal(t, []Arrivals{{At: 1000, Every: 200, End: 5000, Step: 164, N: 15, upTo: 5000 + 14*164}}, ls.Queue)
	assert.Equal(t, uint64(5000+3*164), ls.drained(1000+3*200+199), "waits for the 4 chunks that came by then")
	assert.Equal(t, uint64(900), ls.drained(900), "none came by then")
	assert.Equal(t, uint64(5000+14*164), ls.drained(1000+14*200), "all came")
	assert.Equal(t, uint64(1<<40), ls.drained(1<<40), "all crossed by then")
	record(&ls, 0, 1000+15*200, 5000+15*164)
	assert.Len(t, ls.Queue, 2, "the next write's chunk, though it continues the run, is a run of its own")
}

// TestArrivalsBound: a link keeps at most MaxArrivals runs of chunks in
// flight, forgetting those over when its array fills, and folds them into
// one past that — a control write then waits for all of them, never less.
func TestArrivalsBound(t *testing.T) {
	var ls LinkState
	for k := range uint64(3 * MaxArrivals) {
		// Runs of one chunk each (steps that never repeat), each over
		// before the next but one arrives: at most a few in flight.
		record(&ls, k*10, k*10+k%7, k*10+k%7+5+k%3)
		require.LessOrEqual(t, cap(ls.Queue), 64, "chunk %d: the array stays the size of what is in flight", k)
	}
	var full LinkState
	var chunks [][2]uint64
	for k := range uint64(MaxArrivals + 10) {
		c := [2]uint64{k * 10, 1<<40 + k*3 + k%5} // none over: every one still crossing
		record(&full, 0, c[0], c[1])
		chunks = append(chunks, c)
		require.LessOrEqual(t, len(full.Queue), MaxArrivals, "chunk %d", k)
	}
	for _, probe := range []uint64{0, 5, 10 * MaxArrivals, 1 << 41} {
		assert.GreaterOrEqual(t, full.drained(probe), drainedBrute(chunks, probe), "at %d: folded, never less", probe)
	}
	require.NoError(t, checkArrivals(full.Queue))
	assert.Equal(t, uint64(1), full.Folds, "the fold is counted")
	assert.Zero(t, ls.Folds, "runs over by now are forgotten, not folded")
}

// TestArrivalsSettle: the chunks that have all reached a link by now are
// kept as one run — exactly: a control write from now on waits as it
// would behind each of them — so a link where writes converge, its chunks
// waiting far longer than they took to come, keeps only those still on
// their way, and never folds.
func TestArrivalsSettle(t *testing.T) {
	var ls LinkState
	var chunks [][2]uint64
	const writes = 3 * MaxArrivals
	for k := range uint64(writes) {
		// Write k is booked at now = 100k: its chunk reaches the link
		// 50–249 ps later and crosses it 1 µs apart from the one before,
		// behind all of them (a backlog ten thousand times what arrives).
		now := 100 * k
		c := [2]uint64{now + 50 + k%200, 1<<30 + k*1_000_000}
		record(&ls, now, c[0], c[1])
		chunks = append(chunks, c)
		if k%(writes/7) == 0 || k == writes-1 {
			require.LessOrEqual(t, len(ls.Queue), 8, "write %d: the runs on their way, and one for those arrived", k)
			for _, probe := range []uint64{now, now + 60, now + 149, now + 250, 1 << 40, 1 << 50} {
				require.Equal(t, drainedBrute(chunks, probe), ls.drained(probe), "write %d, a control write at %d", k, probe)
			}
		}
	}
	assert.Zero(t, ls.Folds, "settling is exact and never folds")
	require.NoError(t, checkArrivals(ls.Queue))
}

// TestCheckArrivals: a snapshot's runs are refused when empty, too many or
// past 2^64 ps.
func TestCheckArrivals(t *testing.T) {
	for _, c := range []struct {
		name string
		q    []Arrivals
		want string
	}{
		{"no chunk", []Arrivals{{At: 1, End: 2}}, "arrival run 0 has no chunk"},
		{"arrivals past 2^64", []Arrivals{{At: 1, End: 2, N: 1}, {At: 1 << 62, Every: 1 << 62, End: 3, N: 5}}, "arrival run 1 of 5 chunks"},
		{"crossings past 2^64", []Arrivals{{At: 1, End: 1 << 63, Step: 1 << 62, N: 3}}, "arrival run 0 of 3 chunks"},
		{"too many", make([]Arrivals, MaxArrivals+1), "65537 arrival runs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkArrivals(c.q)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	require.NoError(t, checkArrivals([]Arrivals{{At: 5, Every: 3, End: 9, Step: 4, N: 7}}))
}
