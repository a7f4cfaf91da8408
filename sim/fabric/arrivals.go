package fabric

import (
	"fmt"
	"slices"
	"sort"
)

// Arrivals is a run of chunks booked on a link, as the link's FIFO order
// sees them (aware model, docs/fabric.md §Models, "Control writes"): chunk
// k of the N arrives at At + k·Every and has crossed the link at
// End + k·Step. A single chunk is a run of one (Every and Step 0).
//
// A chunk's arrival is when it reached the link's queue: on a link inside
// the network (every link of a path but its first), when it came from the
// node before; on a path's first link, when it began to cross, since a
// device's DMA engines hold their chunks until the device's own port takes
// them, in turn, and only then do they queue there.
type Arrivals struct {
	At, Every, End, Step, N uint64
	// upTo is the latest crossing of the runs of the queue up to this one
	// (LinkState.drained's bound, reindex); not kept in a snapshot but
	// made again from the runs (Restore).
	upTo uint64
}

// MaxArrivals bounds the runs a link keeps (48 bytes each: 3 MiB): only
// runs with a chunk that has not crossed by the present are kept, and
// those whose chunks have all reached the link are kept as one (settle),
// so a link holds the runs of the chunks still on their way to it. A link
// that would keep more folds its runs into one (fold), which can only make
// a control write wait longer, and counts it (LinkState.Folds) for the
// reports to say. The chunks on their way to a link are those booked in
// the hop latencies before it, and on the links behind a congested link,
// those it holds back: a 1 GiB all-to-all on the Trn3 UltraServers queued
// 22,748 runs on a device's link on Gen1 before the runs that had arrived
// were folded, and queues ... now (docs/fabric.md §Models "Control
// writes").
const MaxArrivals = 1 << 16

// lastEnd is when the run's last chunk has crossed the link.
func (r Arrivals) lastEnd() uint64 {
	return addTime(r.End, mulTime(r.N-1, r.Step))
}

// runBuilder gathers the chunks one write books on one link into runs,
// joining a chunk to the run before it when it continues it exactly, and
// adds them to the link's queue as they close (flush at the write's end).
// Runs never join across writes, so what a queue holds does not depend on
// which of its older runs were dropped and when: a restored system goes
// on as the one saved.
type runBuilder struct {
	r    Arrivals
	open bool
}

// add records that a chunk that reached the link at a has crossed it at e.
func (b *runBuilder) add(ls *LinkState, now, a, e uint64) {
	if b.open {
		r := &b.r
		switch {
		case r.N == 1 && a >= r.At && e >= r.End:
			r.Every, r.Step, r.N = a-r.At, e-r.End, 2
			return
		case r.N > 1 && a == addTime(r.At, mulTime(r.N, r.Every)) && e == addTime(r.End, mulTime(r.N, r.Step)) && e != ^uint64(0):
			r.N++
			return
		}
		ls.addRun(now, b.r)
	}
	b.r, b.open = Arrivals{At: a, End: e, N: 1}, true
}

// flush adds the run being gathered to the link's queue.
func (b *runBuilder) flush(ls *LinkState, now uint64) {
	if b.open {
		ls.addRun(now, b.r)
		b.open = false
	}
}

// addRun appends runs to the link's queue, each with its upTo (the latest
// crossing so far), making room first when its array would overflow or
// it would pass MaxArrivals.
func (ls *LinkState) addRun(now uint64, runs ...Arrivals) {
	if n := len(ls.Queue) + len(runs); n > cap(ls.Queue) || n > MaxArrivals {
		ls.make(now, len(runs))
	}
	for _, r := range runs {
		r.upTo = r.lastEnd()
		if n := len(ls.Queue); n > 0 {
			r.upTo = max(r.upTo, ls.Queue[n-1].upTo)
		}
		ls.Queue = append(ls.Queue, r)
	}
}

// began is when a chunk that crossed a link at end in busy ps began to
// cross it: its arrival on a path's first link (Arrivals). A crossing
// saturated at 2^64−1 gives no more than that, as a time that far is.
func began(end, busy uint64) uint64 {
	return end - min(end, busy)
}

// reindex makes every run's upTo again, after runs were dropped or the
// queue was restored.
func (ls *LinkState) reindex() {
	var up uint64
	for i := range ls.Queue {
		up = max(up, ls.Queue[i].lastEnd())
		ls.Queue[i].upTo = up
	}
}

// make makes room for k more runs in the queue's array (addRun calls it
// when they would overflow it or pass MaxArrivals): the runs over by now
// are forgotten first and those wholly arrived by now folded into one,
// exactly (settle), so that it grows only with the chunks on their way to
// the link; past MaxArrivals runs of those it is folded, no longer exactly
// (fold). Runs mostly end in the order they were added (a link serves its
// chunks one after another), so those over at the front go first, without
// looking at the rest; only when that frees less than half the array are
// all of them settled, and when that does not either the array grows, so
// that the next pass comes after as many runs again (each run is looked
// at a bounded number of times).
func (ls *LinkState) make(now uint64, k int) {
	q := ls.Queue
	n := len(q)
	if n == 0 {
		ls.Queue = slices.Grow(q, max(k, 4))
		return
	}
	// The runs over at the front are those whose upTo — the latest
	// crossing of them and every run before them — is by now: a prefix,
	// found by binary search on upTo (which never decreases) rather than
	// by reading every run it drops.
	i := sort.Search(n, func(i int) bool { return q[i].upTo > now })
	if i > 0 {
		ls.Queue = q[:copy(q, q[i:])]
	}
	// Dropping a prefix over by now leaves every other run's upTo as it
	// was: the first run kept crosses after now, later than any run
	// dropped, so no run's bound came from one dropped. Only settling
	// makes them again.
	if len(ls.Queue)+k <= n/2 {
		return
	}
	ls.settle(now)
	switch left := len(ls.Queue); {
	case left+k > MaxArrivals:
		ls.fold()
	case left+k > n/2:
		ls.Queue = slices.Grow(ls.Queue, n+k)
	}
	ls.reindex()
}

// settle drops the runs whose chunks have all crossed by now and folds
// those whose chunks have all arrived by now into one run at the front,
// of one chunk that arrived at 0 and crosses with the latest of them. A
// control write waits at a link no earlier than the now of any booking
// before it (System.timingAfter's now is at most its start), so it comes
// after every chunk of those runs and waits for all of them: for the
// latest crossing, which is what the one run says. So the fold changes no
// control write's wait, and a link's queue holds only the runs of chunks
// still on their way to it, not the thousands an all-to-all piles up
// waiting at one link (the chunk a run stands for arrived at 0 rather
// than with the first of them, so that it does not depend on when the
// runs were folded: a restored system's queues are its original's).
func (ls *LinkState) settle(now uint64) {
	var f Arrivals
	q := ls.Queue[:0]
	for _, r := range ls.Queue {
		switch {
		case r.lastEnd() <= now:
		case addTime(r.At, mulTime(r.N-1, r.Every)) <= now:
			f.End, f.N = max(f.End, r.lastEnd()), 1
		default:
			q = append(q, r)
		}
	}
	clear(ls.Queue[len(q):])
	if f.N > 0 {
		q = slices.Insert(q, 0, f)
	}
	ls.Queue = q
}

// fold replaces the link's runs by one chunk that arrived with the first
// of them and crossed with the last: a control write that comes after any
// of them waits for all, which may be longer than the FIFO would have it.
// It counts itself in Folds, which the link's counters carry to reports.
func (ls *LinkState) fold() {
	ls.Folds++
	var f Arrivals
	for i, r := range ls.Queue {
		if i == 0 || r.At < f.At {
			f.At = r.At
		}
		f.End = max(f.End, r.lastEnd())
	}
	f.N, f.upTo = 1, f.End
	ls.Queue = append(ls.Queue[:0], f)
}

// drained returns when every chunk booked on the link that reached it by
// t has crossed it (t itself when none is still crossing then). It looks
// at the runs from the newest back and stops at the first whose upTo —
// the latest crossing of it and every run before it — is no later than
// what it has found: a link serves its chunks about in the order they
// came, so the newest runs that came by t hold the answer, and a queue of
// thousands of runs (an all-to-all converging on one link) is not
// searched whole for every control write. Runs over by now are left for
// make to drop.
func (ls *LinkState) drained(t uint64) uint64 {
	w := t
	q := ls.Queue
	for i := len(q) - 1; i >= 0 && q[i].upTo > w; i-- {
		r := &q[i]
		if r.At > t {
			continue
		}
		k := r.N - 1
		if r.Every > 0 {
			k = min(k, (t-r.At)/r.Every)
		}
		w = max(w, addTime(r.End, mulTime(k, r.Step)))
	}
	return w
}

// checkArrivals reports why a link's runs are not valid: at most
// MaxArrivals, each of at least one chunk, no sum past 2^64.
func checkArrivals(q []Arrivals) error {
	if len(q) > MaxArrivals {
		return fmt.Errorf("%d arrival runs (at most %d)", len(q), MaxArrivals)
	}
	for i, r := range q {
		switch {
		case r.N == 0:
			return fmt.Errorf("arrival run %d has no chunk", i)
		case addTime(r.At, mulTime(r.N-1, r.Every)) == ^uint64(0) || r.lastEnd() == ^uint64(0):
			return fmt.Errorf("arrival run %d of %d chunks from %d every %d ps runs past 2^64 ps", i, r.N, r.At, r.Every)
		}
	}
	return nil
}

// queuedRun records the chunks bookQueue booked as a queue: arrived is
// when they reached the link (exact but on a path's first link, where
// they arrive as they begin to cross) and next when they reach the node
// after it, delay later than each crossed (the last chunk's crossing is
// next.lastCrossed). The last chunk, of another length, is a run of its
// own.
func (ls *LinkState) queuedRun(now uint64, first bool, arrived, next chunkRun, d, last, delay uint64) {
	end0 := next.first - delay // bookQueue made no sum that saturates
	at, every := arrived.first, arrived.step
	end := next.lastCrossed
	tail := arrived.last
	if first {
		at, every = began(end0, d), d
		tail = began(end, last)
	}
	// The two runs' last crossings are known without lastEnd's product:
	// chunk m−2 crossed at end0 + (m−2)·d (bookQueue made it without
	// saturating), the last chunk at end.
	if n := len(ls.Queue) + 2; n > cap(ls.Queue) || n > MaxArrivals {
		ls.make(now, 2)
	}
	var up uint64
	if n := len(ls.Queue); n > 0 {
		up = ls.Queue[n-1].upTo
	}
	up = max(up, end0+uint64(next.m-2)*d)
	ls.Queue = append(ls.Queue, Arrivals{At: at, Every: every, End: end0, Step: d, N: uint64(next.m - 1), upTo: up},
		Arrivals{At: tail, End: end, N: 1, upTo: max(up, end)})
}

// bookedRun records the chunks bookRun booked: arr is when they reached
// the link (nil on a path's first link, where each arrives as it begins
// to cross) and crossed when each crossed it, each but the last in d ps,
// the last in last.
func (ls *LinkState) bookedRun(now uint64, arr, crossed []uint64, d, last uint64) {
	var b runBuilder
	for j, end := range crossed {
		var a uint64
		switch {
		case arr != nil:
			a = arr[j]
		case j == len(crossed)-1:
			a = began(end, last)
		default:
			a = began(end, d)
		}
		b.add(ls, now, a, end)
	}
	b.flush(ls, now)
}
