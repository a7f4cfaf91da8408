package simkernel

import (
	"math/bits"
	"slices"
)

// eventQueue is the engine's pending events, taken in (time, sequence)
// order: a radix heap keyed on time. Virtual time never goes back, so every
// event is at or after the time of the last one taken (base), and an event's
// bucket is the highest bit in which its time differs from base: bucket 0
// (at) holds the events at base itself, bucket b+1 (far[b]) those whose
// times first differ from base in bit b.
//
// Taking an event takes the first of at; when at is empty, the lowest
// non-empty far bucket is emptied: base moves to its earliest time, its
// events at that time go to at and the rest to lower buckets (each has the
// bits of the new base above the bucket's bit, so it only ever moves
// down). An event is so moved a few times in its life rather than sifted
// through a binary heap's log2(n) levels at each push and pop: the cost of
// a binary heap's pop was a tenth of a timing-only run of a hundred devices
// (docs/fabric.md §Thousands of devices).
//
// Order within a time: events of one time are always in one bucket (a
// bucket is a function of the time and base), pushes append with the
// highest sequence number yet given, and a spill keeps the order of the
// bucket it empties into buckets that held no event of those times. So
// every bucket, at included, holds each time's events in sequence order,
// and no sort is needed.
type eventQueue struct {
	base Time
	n    int         // events pending
	at   []Event     // the events at base, at[head:], in sequence order
	head int         // the next event of at
	mask uint64      // bit b set: far[b] is not empty
	far  [64][]Event // far[b]: events whose time first differs from base in bit b
	// low[b] is the earliest time in far[b] when it is not empty (its
	// mask bit set; stale otherwise), kept as events join the bucket so
	// that finding the next time to spill to does not scan the bucket
	// (each spill would otherwise read its events twice).
	low [64]Time
}

// len returns the number of pending events.
func (q *eventQueue) len() int { return q.n }

// push adds ev, whose time must be at or after base and whose sequence
// number must be above every pending event's at ev.At.
func (q *eventQueue) push(ev Event) {
	q.n++
	d := uint64(ev.At ^ q.base)
	if d == 0 {
		q.at = append(q.at, ev)
		return
	}
	q.add(bits.Len64(d)-1, ev)
}

// add appends ev to far[b], keeping the bucket's earliest time.
func (q *eventQueue) add(b int, ev Event) {
	if q.mask&(1<<b) == 0 || ev.At < q.low[b] {
		q.low[b] = ev.At
	}
	q.far[b] = append(q.far[b], ev)
	q.mask |= 1 << b
}

// nearest returns the lowest non-empty far bucket and its earliest time;
// some far bucket must not be empty.
func (q *eventQueue) nearest() (int, Time) {
	b := bits.TrailingZeros64(q.mask)
	return b, q.low[b]
}

// peek returns the first pending event's time; the queue must not be
// empty.
func (q *eventQueue) peek() Time {
	if q.head < len(q.at) {
		return q.base
	}
	_, t := q.nearest()
	return t
}

// pop removes and returns the first pending event; the queue must not be
// empty.
func (q *eventQueue) pop() Event {
	if q.head == len(q.at) {
		q.spill(q.nearest())
	}
	ev := q.at[q.head]
	q.head++
	if q.head == len(q.at) {
		q.at, q.head = q.at[:0], 0
	}
	q.n--
	return ev
}

// popUntil is pop of the first pending event if it is due at or before t,
// and reports whether it was.
func (q *eventQueue) popUntil(t Time) (Event, bool) {
	if q.n == 0 {
		return Event{}, false
	}
	if q.head == len(q.at) {
		b, first := q.nearest()
		if first > t {
			return Event{}, false
		}
		q.spill(b, first)
	} else if q.base > t {
		return Event{}, false
	}
	return q.pop(), true
}

// spill empties far[b], whose earliest time is t, with base moving to t:
// its events at t go to at, the others to lower buckets, each in the
// order it had.
func (q *eventQueue) spill(b int, t Time) {
	f := q.far[b]
	q.far[b] = f[:0]
	q.mask &^= 1 << b
	q.base = t
	for i := range f {
		d := uint64(f[i].At ^ t)
		if d == 0 {
			q.at = append(q.at, f[i])
			continue
		}
		q.add(bits.Len64(d)-1, f[i])
	}
}

// events appends every pending event to dst, in no particular order.
func (q *eventQueue) events(dst []Event) []Event {
	dst = append(dst, q.at[q.head:]...)
	for b := range q.far {
		dst = append(dst, q.far[b]...)
	}
	return dst
}

// reset empties the queue and puts base at t, keeping the buckets' arrays.
func (q *eventQueue) reset(t Time) {
	q.base, q.n, q.at, q.head, q.mask = t, 0, q.at[:0], 0, 0
	for b := range q.far {
		q.far[b] = q.far[b][:0]
	}
}

// load empties the queue, puts base at t and adds evs, every one at or
// after t; evs is sorted in run order on the way.
func (q *eventQueue) load(t Time, evs []Event) {
	q.reset(t)
	slices.SortFunc(evs, compareEvents)
	for _, ev := range evs {
		q.push(ev)
	}
}

// compareEvents orders events by (time, sequence).
func compareEvents(a, b Event) int {
	switch {
	case a.before(&b):
		return -1
	case b.before(&a):
		return 1
	}
	return 0
}
