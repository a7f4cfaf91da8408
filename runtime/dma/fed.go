package dma

import (
	"fmt"

	"github.com/neuronsim/neuronsim/hw/udma"
)

// Feed is where a fed queue's descriptor pairs of one run come from
// (Queue.Feed): the vring a planner appends them to — its pair i in the
// i-th ring slot from the queue's tail when it was fed — and More, which
// asks the planner to append more.
type Feed struct {
	// Vring is the queue's vring. The queue lets go of the pairs both of
	// its halves have read (Vring.DropBefore), but for the last fedKeep.
	Vring *Vring
	// More plans further — one step of a schedule, appending to Vring and
	// to other queues' vrings — and reports whether there may be more to
	// come (false once the planner is through). It is called inside the
	// device's ring reads and must not call the device.
	More func() (bool, error)
}

// fedKeep is how many pairs before the earliest pair either half last
// started reading a fed queue keeps: the device reads a ring in bursts from
// its head (at most 16 descriptors, sim/dma's prefetch) and may read the
// last burst again from there (a prefetch dropped), never before it.
const fedKeep = 64

// fedRings is what a fed queue's two rings hold: the feed of its current
// run, whose pair i is in ring slot start+i (mod the ring's length), at
// ring id phase up to the ring's end and the next one past it. The fill
// functions encode the M2S or S2M half of those pairs.
type fedRings struct {
	feed  Feed   // the run's feed; none (nil Vring) between runs
	count uint32 // the ring's length
	start uint32 // the slot of the feed's pair 0
	phase uint8  // its ring id
	pairs uint32 // pairs fed: slots past them read as zeros
	read  [2]int // per half (0 M2S, 1 S2M): the first pair of its last read
}

// OpenFedQueue opens engine eng's queue q under a name, as OpenQueue does,
// with rings of count descriptors that are lazy host buffers
// (ndl.LazyHostMemory): nothing is ever written to them. Feed gives the
// queue its pairs, run by run; when the device reads a ring slot that holds
// one, the M2S ring holds the pair's M2S half and the S2M ring its S2M half
// — the bytes Dump would have written there. The backend must have lazy
// host memory (ErrNoLazyHostMemory).
func (m *DMA) OpenFedQueue(name string, eng, q int, count uint32) (*Queue, error) {
	if m.lazy == nil {
		return nil, fmt.Errorf("dma: queue %q: %s: %w", name, m.dev.Identity, ErrNoLazyHostMemory)
	}
	return m.open(name, eng, q, count, &fedRings{count: count})
}

// Fed reports whether the queue's rings are fed (OpenFedQueue).
func (qu *Queue) Fed() bool { return qu.fed != nil }

// Feed puts the next n pairs of a fed queue in its rings at their tails,
// as Dump would write them, without writing anything: they are feed's
// pairs 0..n−1, produced as the device reads them — asking feed.More until
// the vring holds the pairs read, and letting go of the pairs both halves
// have read but for the last fedKeep. The tails and phases move as Dump
// moves them, so Sync and Status work as for a dumped queue. Nothing is
// fed unless all n fit; a feed replaces the one before (Unfeed). A slot
// read after its pair was let go fails the read (the engine halts the
// queue with a ring-address error) with an error naming the queue and the
// pair.
func (qu *Queue) Feed(feed Feed, n int) error {
	f := qu.fed
	if f == nil {
		return fmt.Errorf("dma: queue %q is not fed: %w", qu.Name, ErrFed)
	}
	if feed.Vring == nil || feed.More == nil {
		return fmt.Errorf("dma: queue %q: a feed needs a vring and a planner: %w", qu.Name, ErrFed)
	}
	k, err := qu.room(feed.Vring.Name, n)
	if err != nil {
		return err
	}
	if k >= f.count {
		return fmt.Errorf("dma: fed queue %q: %d pairs in a ring of %d (a run's pairs must not fill it): %w", qu.Name, k, f.count, ErrFed)
	}
	*f = fedRings{feed: feed, count: f.count, start: qu.tx.tail, phase: qu.tx.phase, pairs: k}
	for _, r := range []*ring{&qu.tx, &qu.rx} {
		for left := k; left > 0; {
			step := min(left, r.count-r.tail)
			r.tail, r.phase = r.advance(r.tail, r.phase, step)
			left -= step
		}
	}
	return nil
}

// Unfeed lets go of a fed queue's feed once its run is over: a read of its
// rings then fails (no pair is due) until the next Feed. The rings stay
// allocated until Close.
func (qu *Queue) Unfeed() {
	if f := qu.fed; f != nil {
		*f = fedRings{count: f.count}
	}
}

// fill returns the lazy fill function of a fed queue's M2S ring (tx) or
// S2M ring.
func (f *fedRings) fill(name string, tx bool) func(off uint64, p []byte) error {
	half := 1
	if tx {
		half = 0
	}
	return func(off uint64, p []byte) error { return f.produce(name, half, off, p) }
}

// produce fills p with ring bytes from offset off of one half's ring:
// slot by slot the encoded half of the feed's pair, zeros where the feed
// has none (before its first slot, past its last). It plans further as
// needed, then lets go of the pairs both halves have read, but for
// fedKeep.
func (f *fedRings) produce(name string, half int, off uint64, p []byte) error {
	const ds = udma.DescriptorSize
	v := f.feed.Vring
	if v == nil {
		return fmt.Errorf("dma: fed queue %q: ring read at %#x with no feed (between runs): %w", name, off, ErrFed)
	}
	first, end := off/ds, (off+uint64(len(p))+ds-1)/ds
	clear(p)
	// The slots from start to the ring's end hold pairs from 0 at the
	// feed's phase; those before start, the pairs past the wrap at the
	// next phase.
	lo := min(max(first, uint64(f.start)), end)
	segs := [2]struct {
		from, to, pair uint64
		phase          uint8
	}{
		{lo, end, lo - uint64(f.start), f.phase},
		{first, min(end, uint64(f.start)), first + uint64(f.count-f.start), (f.phase + 1) % 4},
	}
	for _, sg := range segs {
		if sg.from >= sg.to || sg.pair >= uint64(f.pairs) {
			continue
		}
		n := min(sg.to-sg.from, uint64(f.pairs)-sg.pair)
		if err := f.ensure(name, v, int(sg.pair), int(sg.pair+n)); err != nil {
			return err
		}
		pairs, _ := v.held(int(sg.pair), int(sg.pair+n))
		if err := encodeAt(p, off, sg.from, pairs, sg.phase, half == 0); err != nil {
			return fmt.Errorf("dma: fed queue %q: %w", name, err)
		}
		f.read[half] = int(sg.pair)
	}
	v.DropBefore(min(f.read[0], f.read[1]) - fedKeep)
	return nil
}

// ensure has the feed plan until v holds pairs [from, to): an error when
// they were let go, when the planner fails or when it ends short.
func (f *fedRings) ensure(name string, v *Vring, from, to int) error {
	if from < v.Dropped() {
		return fmt.Errorf("dma: fed queue %q: pair %d read after it was let go (pairs from %d held): %w", name, from, v.Dropped(), ErrFed)
	}
	for v.Descriptors() < to {
		more, err := f.feed.More()
		if err != nil {
			return fmt.Errorf("dma: fed queue %q: planning pair %d: %w: %w", name, v.Descriptors(), err, ErrFed)
		}
		if !more && v.Descriptors() < to {
			return fmt.Errorf("dma: fed queue %q: the planner ended at %d pairs, %d fed: %w", name, v.Descriptors(), f.pairs, ErrFed)
		}
	}
	return nil
}

// encodeAt encodes one half of pairs, in ring slots from slot on, into p,
// which holds the ring's bytes from offset off: whole descriptors in
// place, one p covers only in part through a scratch one.
func encodeAt(p []byte, off, slot uint64, pairs []pair, phase uint8, tx bool) error {
	const ds = udma.DescriptorSize
	for i := 0; i < len(pairs); {
		at := int64((slot+uint64(i))*ds) - int64(off) // where the slot starts in p
		if at >= 0 && at+ds <= int64(len(p)) {
			// The slots that lie wholly in p, at once.
			k := min(len(pairs)-i, (len(p)-int(at))/ds)
			if err := encodeHalf(p[at:], pairs[i:i+k], phase, tx); err != nil {
				return err
			}
			i += k
			continue
		}
		var d [ds]byte
		if err := encodeHalf(d[:], pairs[i:i+1], phase, tx); err != nil {
			return err
		}
		if at < 0 {
			copy(p, d[-at:])
		} else {
			copy(p[at:], d[:])
		}
		i++
	}
	return nil
}

// Materialise turns a fed queue whose run did not finish into a written
// one: the rest of its feed is planned, its pairs not yet let go are
// written, half by half, into a ring of plain host memory at the slots
// and phases a dump would have written them, in place of the lazy ring
// (freed first: the plain one takes its address when the allocator has no
// lower room for it, else the queue's ring base registers are pointed at
// it, while the engine may be working: it fetches from the new ring from
// its head on). A snapshot of the system then holds the
// bytes the engines may still fetch (a lazy buffer's bytes are not in a
// snapshot), as a staged run's rings do. A queue that is not fed, or has
// no feed, is left as it is.
func (qu *Queue) Materialise() error {
	f := qu.fed
	if f == nil || f.feed.Vring == nil {
		return nil
	}
	v := f.feed.Vring
	if err := f.ensure(qu.Name, v, v.Dropped(), int(f.pairs)); err != nil {
		return err
	}
	m := qu.m
	size := uint64(f.count) * udma.DescriptorSize
	buf := make([]byte, size)
	for half, h := range []struct {
		base uint64
		r    *ring
	}{{udma.QueueReg(udma.M2S, qu.Index, 0), &qu.tx}, {udma.QueueReg(udma.S2M, qu.Index, 0), &qu.rx}} {
		clear(buf)
		// The slots of the pairs still held: from the first one on, up to
		// the ring's end and past the wrap.
		from := (uint64(f.start) + uint64(v.Dropped())) % uint64(f.count)
		left := uint64(int(f.pairs) - v.Dropped())
		for left > 0 {
			n := min(left, uint64(f.count)-from)
			if err := f.produce(qu.Name, half, from*udma.DescriptorSize, buf[from*udma.DescriptorSize:(from+n)*udma.DescriptorSize]); err != nil {
				return err
			}
			from, left = 0, left-n
		}
		// The lazy ring is freed first: the plain one takes its place when
		// the allocator has no lower room for it (its first fit), and the
		// registers need no write then.
		if err := m.host.HostFree(h.r.pa); err != nil {
			return fmt.Errorf("dma: queue %q ring: %w", qu.Name, err)
		}
		h.r.count = 0 // nothing left to free until the new ring is in
		pa, err := m.host.HostAlloc(size, udma.RingAlign)
		if err != nil {
			return fmt.Errorf("dma: queue %q ring: %w", qu.Name, err)
		}
		old := h.r.addr
		h.r.addr, h.r.pa, h.r.count = m.geo.HostAddress(pa), pa, f.count
		if err := m.host.HostWrite(pa, buf); err != nil {
			return fmt.Errorf("dma: queue %q ring: %w", qu.Name, err)
		}
		if err := qu.repoint(h.base, old, h.r.addr); err != nil {
			return err
		}
	}
	qu.fed = nil
	return nil
}

// repoint points a ring half's base registers (at base) at addr, where
// they held old: the words that changed (the high one first).
func (qu *Queue) repoint(base, old, addr uint64) error {
	if uint32(addr>>32) != uint32(old>>32) {
		if err := qu.m.write(qu.Engine, base+udma.QBaseHi, uint32(addr>>32)); err != nil {
			return err
		}
	}
	if uint32(addr) != uint32(old) {
		return qu.m.write(qu.Engine, base+udma.QBaseLo, uint32(addr))
	}
	return nil
}

// Fetched returns how far both rings of a fed queue have been read into
// its feed: the first pair of each ring's last read, the lesser — so at
// most a burst (16 pairs, sim/dma's prefetch) short of the pairs fetched,
// and lower again for a while when an engine reads its last burst anew. A
// queue not fed, or between runs, has fetched 0.
func (qu *Queue) Fetched() int {
	if f := qu.fed; f != nil && f.feed.Vring != nil {
		return min(f.read[0], f.read[1])
	}
	return 0
}

// Unread returns how many of a fed queue's pairs of its feed are still
// held (not let go): what Materialise would write.
func (qu *Queue) Unread() int {
	if f := qu.fed; f != nil && f.feed.Vring != nil {
		return int(f.pairs) - f.feed.Vring.Dropped()
	}
	return 0
}
