package simkernel

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestEventQueueOrder: the radix heap takes events in (time, sequence)
// order against a sorted reference, with times spread over narrow and wide
// ranges (every bucket used), many events at one time, pushes at the
// current time while others wait, popUntil refusing and taking, and the
// queue unloaded and loaded again (State and Restore) on the way.
func TestEventQueueOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spread uint64 // events land within now+[0, spread)
		same   int    // 1 in same pushes is at the current time
	}{
		{"narrow", 16, 3},
		{"µs", 1 << 20, 8},
		{"wide", 1 << 46, 5}, // 20,000 steps stay below MaxTime
		{"one time", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.spread)))
			var q eventQueue
			var ref []Event
			var now Time
			var seq uint64
			push := func() {
				at := now
				if rng.IntN(tc.same) != 0 {
					at += Time(rng.Uint64N(tc.spread))
				}
				ev := Event{At: at, Seq: seq, Handler: 1, Arg: seq}
				seq++
				q.push(ev)
				ref = append(ref, ev)
			}
			take := func(got Event) {
				t.Helper()
				i := 0
				for j := range ref {
					if ref[j].before(&ref[i]) {
						i = j
					}
				}
				if got != ref[i] {
					t.Fatalf("took %+v, want %+v", got, ref[i])
				}
				ref = slices.Delete(ref, i, i+1)
				now = got.At
			}
			for step := range 20000 {
				switch r := rng.IntN(10); {
				case r < 5 || len(ref) == 0:
					push()
				case r < 8:
					if q.peek() < now {
						t.Fatalf("peek %v before now %v", q.peek(), now)
					}
					take(q.pop())
				case r < 9:
					until := now + Time(rng.Uint64N(tc.spread))
					ev, ok := q.popUntil(until)
					first := slices.MinFunc(ref, compareEvents)
					if ok != (first.At <= until) {
						t.Fatalf("popUntil(%v) = %v with the first at %v", until, ok, first.At)
					}
					if ok {
						take(ev)
					}
				default:
					if step%50 == 0 {
						evs := q.events(nil)
						q.load(now, evs)
					}
				}
				if q.len() != len(ref) {
					t.Fatalf("%d pending, want %d", q.len(), len(ref))
				}
			}
			for len(ref) > 0 {
				take(q.pop())
			}
		})
	}
}

// BenchmarkEngineStepHeap is BenchmarkEngineStepPending's load on the
// binary heap the engine used before the radix heap (kept here as the
// baseline of the same run).
func BenchmarkEngineStepHeap(b *testing.B) {
	var h binaryHeap
	var seq uint64
	for i := range benchPending {
		h.push(Event{At: benchDelay(i) * 5, Seq: seq})
		seq++
	}
	n := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		ev := h.pop()
		n++
		h.push(Event{At: ev.At + Time(1+(n*7919)%5000), Seq: seq})
		seq++
	}
}

// binaryHeap is a binary min-heap of events by (time, sequence): the
// baseline of BenchmarkEngineStepHeap.
type binaryHeap []Event

func (h *binaryHeap) push(ev Event) {
	*h = append(*h, ev)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q[i].before(&q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *binaryHeap) pop() Event {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	*h = q
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(q) {
			break
		}
		if c+1 < len(q) && q[c+1].before(&q[c]) {
			c++
		}
		if !q[c].before(&q[i]) {
			break
		}
		q[i], q[c] = q[c], q[i]
		i = c
	}
	return top
}
