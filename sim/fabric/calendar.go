package fabric

import (
	"fmt"
	"slices"
	"sort"
)

// Span is an interval [Begin, End) of virtual time, ps, during which a link
// serialises booked bytes.
type Span struct {
	Begin, End uint64
}

// MaxSpans bounds the busy spans a link keeps (docs/fabric.md §Models):
// only spans that end after the present are kept, so a link holds at most
// the chunks in flight over it. A link that would keep more books a new
// write after its last span, as a plain FIFO would, merging it into that
// span, so the count never grows past the bound.
const MaxSpans = 1 << 14

// book reserves d ps of the link at the earliest time at or after t when it
// is idle for d (the first gap between its booked spans that holds d, or
// after the last one) and returns that time. Spans that ended by now are
// forgotten first: no write is reserved before the present, so none of its
// chunks can use them. A later reservation may thus take a gap before an
// earlier one's chunks; it never moves them (their times were already
// given to their engines).
func (ls *LinkState) book(now, t, d uint64) uint64 {
	c := current(ls.Spans, now)
	ls.Spans = c
	if d == 0 {
		return t
	}
	ls.Spans, t = place(c, firstEnding(c, 0, t), t, d)
	return t
}

// bookRun books a write's chunks on the link one after another, as book
// would one call each in order: chunk j arrives at at[j] and takes d ps,
// but the last chunk last ps. It returns when the last of them has crossed
// the link and replaces at[j] by when chunk j has (its begin plus its
// length) plus delay.
//
// Most chunks need no search: one that comes after every span begins at
// its arrival (a new span, or the last one's continuation), and one that
// could not end before the last span begins (a busy link's queue) begins
// at that span's end and extends it. Any other searches the spans after
// its arrival from where the previous chunk's search found them (its
// arrivals come in order), not from the calendar's start.
func (ls *LinkState) bookRun(now uint64, at []uint64, d, last, delay uint64) (crossed uint64) {
	if len(at) == 0 {
		return 0
	}
	c := current(ls.Spans, now)
	k := 0          // every span before k ends by the arrival being booked
	over := false   // a chunk arrived so early that its span is over by now
	var prev uint64 // the previous chunk's arrival
	for j := 0; j < len(at); j++ {
		t := at[j]
		if over {
			c, k, over = current(c, now), 0, false // book forgets it before the next booking
		}
		if t < prev {
			k = 0 // arrivals out of order (a later chunk crossed earlier): search from the start
		}
		prev = t
		dj := d
		if j == len(at)-1 {
			dj = last
		}
		begin := t
		switch n := len(c); {
		case dj == 0: // book's empty booking: it crosses at its arrival
		case n == 0 || c[n-1].End < t && n < MaxSpans:
			c = append(c, Span{t, addTime(t, dj)})
			k = max(n-1, 0)
		case c[n-1].End <= t || addTime(t, dj) > c[n-1].Begin:
			// At or after the last span's end, or too late to end before
			// the last span begins (so before any): it extends that span.
			// The spans before k are as they were.
			begin = max(t, c[n-1].End)
			c[n-1].End = addTime(begin, dj)
		default:
			i := firstEnding(c, k, t)
			c, begin = place(c, i, t, dj)
			k = max(i-1, 0) // the span before i may now end after t; none before it does
		}
		end := addTime(begin, dj)
		over = over || end <= now && dj > 0
		crossed = max(crossed, end)
		at[j] = addTime(end, delay)
		// extendRun's own first test, made here too so that a chunk it would
		// not take costs no call (the torus's gap-filling chunks).
		if j+2 < len(at) && at[j+1] >= t && at[j+1] <= end && dj > 0 && !over && c[len(c)-1].End == end {
			var e uint64
			j, prev, e = extendRun(c, at, j, prev, d, delay)
			crossed = max(crossed, e)
		}
	}
	ls.Spans = c
	return crossed
}

// extendRun books, after chunk j has ended the link's last span (at its
// crossing time, past the present), the chunks that follow it in order
// while each arrives by the time that span ends — a busy link's queue,
// most of what a link books — without bookRun's case analysis: each
// begins at the span's end and extends it by d. That is the time book
// gives it: no gap at or after its arrival holds d, since none held chunk
// j, of the same length, arriving no later (book gives the earliest fit),
// and it arrives before the span ends. The last chunk, of another length,
// is left to bookRun. It returns the last chunk booked, its arrival and
// when it crossed (TestBookRunMatchesBook covers every path).
func extendRun(c []Span, at []uint64, j int, prev, d, delay uint64) (int, uint64, uint64) {
	last := &c[len(c)-1]
	end := last.End
	for ; j+1 < len(at)-1; j++ {
		t := at[j+1]
		if t < prev || t > end {
			break
		}
		prev = t
		end = addTime(end, d)
		at[j+1] = addTime(end, delay)
	}
	last.End = end
	return j, prev, end
}

// chunkRun is when the chunks of a write of m ≥ 3 chunks arrive at a link,
// known without listing them (storeAndForward's fast path): chunk 0 at
// first, chunk 1 at second, each of chunks 2..m−2 no earlier than the one
// before it and at most step after it, and the last chunk (of another
// length) at last. The engine's read times give the first link's (step is
// the largest step of the read table); after a link on which the write's
// chunks queued (bookQueue) the run is exact — chunk k < m−1 arrives at
// first + k·step, second = first + step — and fill lists it.
type chunkRun struct {
	m                         int
	first, second, step, last uint64
	// lastCrossed is, once bookQueue has booked the run, when its last
	// chunk crossed the link (last is then that plus the delay, which can
	// saturate).
	lastCrossed uint64
}

// fill lists an exact run's arrivals in at[:r.m], as bookRun takes them.
// No sum wraps: bookQueue made it only when first + (m−2)·step does not.
func (r chunkRun) fill(at []uint64) []uint64 {
	at = at[:r.m]
	t := r.first
	for k := range r.m - 1 {
		at[k] = t
		t += r.step
	}
	at[r.m-1] = r.last
	return at
}

// bookQueue books a write's chunks, arriving as *r says, on the link as
// bookRun would, but without a step per chunk, when bookRun's case
// analysis provably gives a queue: chunk 0 takes the place bookRun gives
// it — after every span (a new span, or at the last one's end, extending
// it) or, in a calendar with room for two more spans, the first gap at or
// after its arrival that holds it (place's search) — and ends after now;
// each of chunks 1..m−2 arrives, in order, by the time the chunk before it
// ends; and that place holds all of them one after another. Each then
// begins when the one before it ends, chunk k ending at end₀ + k·d: the
// time book gives it, since no gap from its arrival to that end holds d
// (none from its arrival to where chunk 0 began, or chunk 0, of the same
// length and arriving no later, would have taken it; the write's own
// chunks after that) and the place holds it (extendRun's argument, in any
// gap). The arrivals, bounded by second + (k−1)·step, and the ends
// end₀ + (k−1)·d they must not pass are both linear in k, so testing k = 1
// and k = m−2 tests every k. Chunks 0..m−2 join the calendar as one span,
// merged with those it touches as place merges: the calendar booking them
// one by one leaves. The last chunk, of another length, is booked by
// bookRun's case analysis from the state bookRun would then have (every
// span current, none over): here when it goes after every span or at the
// last one's end, else by bookRun itself (its search hint from the start,
// which finds the same gap). bookQueue then replaces *r by the arrivals at
// the next node (an exact run: end₀ + delay + k·d, and the last chunk's)
// and returns when the last chunk has crossed the link, and true. When a
// condition does not hold (d = 0, fewer than 3 chunks, chunk 1 before
// chunk 0, chunk 0 in a gap of a calendar at or one short of MaxSpans or
// ending by now, a chunk arriving after the one before it ends, a place
// too small, a sum that could saturate) it returns 0 and false, having
// changed nothing — *r as it was, the calendar but for forgetting its
// spans over by now (what bookRun does first) — so that bookRun may book
// the write instead. TestBookQueueMatchesBook (each condition at its edge)
// and TestStoreAndForwardQueues cover it.
func (ls *LinkState) bookQueue(now uint64, r *chunkRun, d, last, delay uint64) (crossed uint64, ok bool) {
	c := ls.Spans
	if len(c) > 0 && c[0].End <= now {
		c = current(c, now)
		ls.Spans = c
	}
	if d == 0 || r.m < 3 || r.second < r.first {
		return 0, false
	}
	// Chunk 0: bookRun's case analysis. i is the span the queue ends before
	// (n: after every span).
	t, n := r.first, len(c)
	extend := false // chunk 0 extends the last span (at its end, or as a full calendar's FIFO)
	begin, i := t, n
	switch {
	case n == 0 || c[n-1].End < t && n < MaxSpans:
	case c[n-1].End <= t || addTime(t, d) > c[n-1].Begin:
		extend, begin = true, max(t, c[n-1].End)
	case n < MaxSpans-1:
		// A gap (place's search): the calendar holds fewer than MaxSpans
		// spans with chunk 0's, so that place searches for chunks 1..m−2
		// too, rather than book them after the last span.
		for i = firstEnding(c, 0, t); i < n && addTime(begin, d) > c[i].Begin; i++ {
			begin = max(begin, c[i].End)
		}
	default:
		return 0, false
	}
	k := uint64(r.m - 2) // the chunks that queue after chunk 0: 1..m−2
	// Every time below but the last chunk's is at most end₀ + k·d + delay:
	// when that sum does not saturate, none does, and each is the plain
	// sum addTime gives.
	if addTime(addTime(addTime(begin, d), mulTime(k, d)), delay) == ^uint64(0) {
		return 0, false
	}
	end0 := begin + d
	end := end0 + k*d // when chunk m−2 has crossed
	if end0 <= now || r.second > end0 || addTime(r.second, mulTime(k-1, r.step)) > end0+(k-1)*d || i < n && end > c[i].Begin {
		return 0, false
	}
	// [begin, end) joins the calendar as place joins a span.
	switch {
	case extend:
		c[n-1].End = end
	case i > 0 && c[i-1].End == begin && i < n && c[i].Begin == end:
		c[i-1].End = c[i].End
		c = slices.Delete(c, i, i+1)
	case i > 0 && c[i-1].End == begin:
		c[i-1].End = end
	case i < n && c[i].Begin == end:
		c[i].Begin = begin
	default:
		c = slices.Insert(c, i, Span{begin, end})
	}
	n = len(c)
	// The last chunk: bookRun's case analysis, every span current.
	t = r.last
	begin = t
	switch l := &c[n-1]; {
	case last == 0:
	case l.End < t && n < MaxSpans:
		c = append(c, Span{t, addTime(t, last)})
	case l.End <= t || addTime(t, last) > l.Begin:
		begin = max(t, l.End)
		l.End = addTime(begin, last)
	default:
		ls.Spans = c
		one := [1]uint64{t}
		crossed = ls.bookRun(now, one[:], last, last, 0)
		*r = chunkRun{r.m, end0 + delay, end0 + delay + d, d, addTime(one[0], delay), one[0]}
		return max(end, crossed), true
	}
	ls.Spans = c
	crossed = addTime(begin, last)
	*r = chunkRun{r.m, end0 + delay, end0 + delay + d, d, addTime(crossed, delay), crossed}
	return max(end, crossed), true
}

// current returns the spans of c that end after now, forgetting those over
// (book's first step), in c's array.
func current(c []Span, now uint64) []Span {
	switch {
	case len(c) == 0 || c[0].End > now: // nothing over (the common case: no search)
	case c[len(c)-1].End <= now:
		c = c[:0] // all over: book from the start of the same array, not past its end (an allocation each time it fills)
	default:
		// Move the spans still to come to the front of the array rather
		// than slice past the ones over: a slice that only moved forward
		// would run out of capacity at its end and be copied to a new
		// array on every few bookings.
		k := sort.Search(len(c), func(i int) bool { return c[i].End > now })
		c = c[:copy(c, c[k:])]
	}
	return c
}

// firstEnding returns the index of the first span of c that ends after t,
// given that every span before k ends by t: len(c) when none does (a
// FIFO's case: no search), else found a few steps on from k or by binary
// search.
func firstEnding(c []Span, k int, t uint64) int {
	if len(c) == 0 || c[len(c)-1].End <= t {
		return len(c)
	}
	for stop := min(k+4, len(c)); k < stop; k++ {
		if c[k].End > t {
			return k
		}
	}
	return k + sort.Search(len(c)-k, func(i int) bool { return c[k+i].End > t })
}

// place books d > 0 ps at the earliest time at or after t when c is idle
// for d, i being the first span of c that ends after t, and returns the
// spans and that time.
func place(c []Span, i int, t, d uint64) ([]Span, uint64) {
	begin := t
	if len(c) >= MaxSpans {
		begin = max(t, c[len(c)-1].End)
		c[len(c)-1].End = addTime(begin, d)
		return c, begin
	}
	for ; i < len(c); i++ {
		if addTime(begin, d) <= c[i].Begin {
			break
		}
		begin = max(begin, c[i].End)
	}
	end := addTime(begin, d)
	switch {
	case i > 0 && c[i-1].End == begin && i < len(c) && c[i].Begin == end:
		c[i-1].End = c[i].End
		c = slices.Delete(c, i, i+1)
	case i > 0 && c[i-1].End == begin:
		c[i-1].End = end
	case i < len(c) && c[i].Begin == end:
		c[i].Begin = begin
	default:
		c = slices.Insert(c, i, Span{begin, end})
	}
	return c, begin
}

// bookedUntil is when the link's last booked span ends: the time its
// queue of booked chunks drains (0 for a link with nothing booked). The
// spans are in order, so it is the last one's end.
func (ls *LinkState) bookedUntil() uint64 {
	if n := len(ls.Spans); n > 0 {
		return ls.Spans[n-1].End
	}
	return 0
}

// addTime adds two times, saturating instead of wrapping (a time past
// 2^64 ps is never reached: the event engine refuses anything past
// units.MaxTimePS).
func addTime(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint64(0)
}

// checkSpans reports why a link's spans are not a valid calendar: each
// non-empty, in time order, not touching or overlapping the next, at most
// MaxSpans.
func checkSpans(sp []Span) error {
	if len(sp) > MaxSpans {
		return fmt.Errorf("%d busy spans (at most %d)", len(sp), MaxSpans)
	}
	for i, s := range sp {
		if s.End <= s.Begin {
			return fmt.Errorf("busy span %d [%d, %d) is empty", i, s.Begin, s.End)
		}
		if i > 0 && s.Begin <= sp[i-1].End {
			return fmt.Errorf("busy span %d [%d, %d) is not after span %d [%d, %d)", i, s.Begin, s.End, i-1, sp[i-1].Begin, sp[i-1].End)
		}
	}
	return nil
}

// cloneLinks copies link states with their spans.
func cloneLinks(ls []LinkState) []LinkState {
	out := append([]LinkState(nil), ls...)
	for i := range out {
		out[i].Spans, out[i].Queue = slices.Clone(out[i].Spans), slices.Clone(out[i].Queue)
	}
	return out
}
