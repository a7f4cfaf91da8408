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
	c := ls.Spans
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
	if d == 0 {
		ls.Spans = c
		return t
	}
	// i: the first span ending after t; every earlier one is over by t.
	// A write that comes after every booked span (a FIFO's case) needs no
	// search.
	i := len(c)
	if i > 0 && c[i-1].End > t {
		i = sort.Search(len(c), func(i int) bool { return c[i].End > t })
	}
	begin := t
	if len(c) >= MaxSpans {
		begin = max(t, c[len(c)-1].End)
		c[len(c)-1].End = addTime(begin, d)
		ls.Spans = c
		return begin
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
	ls.Spans = c
	return begin
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
		out[i].Spans = slices.Clone(out[i].Spans)
	}
	return out
}
