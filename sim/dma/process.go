package dma

import (
	"errors"
	"fmt"

	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// fireArg packs the argument of a completion event.
func fireArg(e, q int, epoch uint32) uint64 {
	return uint64(e)<<40 | uint64(q)<<32 | uint64(epoch)
}

// prefetchDescriptors is how many descriptors an engine fetches from a ring
// at once, as UDMA engines prefetch descriptors in bursts. Only descriptors
// made available (tail_inc) and not yet done are fetched — software may not
// change those — and never past the ring's end.
const prefetchDescriptors = 16

// prefetch is one ring half's fetched descriptors, decoded: ring indices
// [start, start+n) at phase phase of the ring at base, length length, for
// queue epoch epoch, the one at start in desc[next].
type prefetch struct {
	base          uint64
	length, start uint32
	n, next       uint32
	phase         uint8
	epoch         uint32
}

// queueFetch is one queue's prefetch state: both halves' headers side by
// side (a kick reads both), then their descriptors.
type queueFetch struct {
	half [2]prefetch // M2S, S2M
	desc [2][prefetchDescriptors]udma.Descriptor
}

// readDescriptor fetches the descriptor at a half's head, from the half's
// prefetched burst when it holds it (pf and desc are the half's prefetch
// state).
func (c *Controller) readDescriptor(h *HalfState, pf *prefetch, desc *[prefetchDescriptors]udma.Descriptor, epoch uint32) (udma.Descriptor, error) {
	base := h.base()
	if pf.n == 0 || pf.base != base || pf.length != h.Length || pf.start != h.Head || pf.phase != h.HeadRing || pf.epoch != epoch {
		k := min(prefetchDescriptors, h.Avail, h.Length-h.Head)
		*pf = prefetch{base: base, length: h.Length, start: h.Head, phase: h.HeadRing, epoch: epoch}
		if k > 1 {
			b := c.burst[:k*udma.DescriptorSize]
			if c.bus.ReadDMA(base+uint64(h.Head)*udma.DescriptorSize, b) == nil {
				for i := range desc[:k] {
					desc[i] = decode(b[i*udma.DescriptorSize:])
				}
				pf.n = k
			}
		}
	}
	if pf.n > 0 {
		d := desc[pf.next]
		pf.next++
		pf.n--
		pf.start++
		return d, nil
	}
	// c.burst, not a local array: a slice passed to the Bus interface
	// escapes, which would cost an allocation per descriptor.
	b := c.burst[:udma.DescriptorSize]
	if err := c.bus.ReadDMA(base+uint64(h.Head)*udma.DescriptorSize, b); err != nil {
		return udma.Descriptor{}, err
	}
	return decode(b), nil
}

// decode is udma.DecodeWhole of a slice that starts with a whole
// descriptor.
func decode(b []byte) udma.Descriptor {
	return udma.DecodeWhole((*[udma.DescriptorSize]byte)(b[:udma.DescriptorSize]))
}

// fetchOf returns the prefetch state of queue q of engine le, made on
// first use.
func fetchOf(le *liveEngine, q int) *queueFetch {
	f := le.fetch[q]
	if f == nil {
		f = new(queueFetch)
		le.fetch[q] = f
	}
	return f
}

// errorBits turns a bus error into queue status bits.
func errorBits(err error, ring bool) uint32 {
	switch {
	case errors.Is(err, ErrNeighbour):
		return udma.ErrNeighbour
	case errors.Is(err, simkernel.ErrPageBudget):
		return udma.ErrMemoryFull
	case ring:
		return udma.ErrRingAddr
	}
	return udma.ErrDescAddr
}

// kick starts a queue's next descriptor pair if it can run: the engine is
// normal, the queue is not halted or busy, and both halves have a
// descriptor. The pair is checked before anything moves; a bad pair halts the
// queue and touches nothing.
func (c *Controller) kick(e, q int) {
	le := c.st.engines[e]
	if le == nil {
		return // as its reset left it: no descriptor available
	}
	es := &le.EngineState
	qs := &es.Queues[q]
	if es.State != udma.StateNormal || qs.InFlight || qs.Status&udma.StatusHalted != 0 || qs.M2S.Avail == 0 || qs.S2M.Avail == 0 {
		return
	}
	f := fetchOf(le, q)
	tx, err := c.readDescriptor(&qs.M2S, &f.half[0], &f.desc[0], qs.Epoch)
	if err != nil {
		c.fail(e, q, errorBits(err, true))
		return
	}
	rx, err := c.readDescriptor(&qs.S2M, &f.half[1], &f.desc[1], qs.Epoch)
	if err != nil {
		c.fail(e, q, errorBits(err, true))
		return
	}
	switch {
	case tx.RingID() != qs.M2S.HeadRing || rx.RingID() != qs.S2M.HeadRing:
		c.fail(e, q, udma.ErrRingID)
		return
	case rx.Len() < tx.Len():
		c.fail(e, q, udma.ErrLength)
		return
	}
	n := tx.Len()
	srcC, err := c.bus.Check(tx.Addr, n)
	if err == nil && srcC == Remote {
		err = fmt.Errorf("dma: reading %#x on another device: %w", tx.Addr, ErrNeighbour) // only writes cross links
	}
	if err != nil {
		c.fail(e, q, errorBits(err, false))
		return
	}
	dstC, err := c.bus.Check(rx.Addr, n)
	if err == nil && dstC == Remote && c.fabric == nil {
		err = fmt.Errorf("dma: writing %#x: %w", rx.Addr, ErrNeighbour)
	}
	if err != nil {
		c.fail(e, q, errorBits(err, false))
		return
	}
	var red udma.Reduce // a plain write: the S2M word of nearly every pair
	if rx.Meta != 0 {
		if red, err = udma.DecodeReduce(rx.Meta); err != nil || (red.Op != udma.ReduceNone && n%red.Dtype.Size() != 0) {
			c.fail(e, q, udma.ErrReduce)
			return
		}
	}
	t := Transfer{Src: tx.Addr, Dst: rx.Addr, Len: n, SrcC: srcC, DstC: dstC, Reduce: red}
	start, finish := c.finishTime(&es.BusyUntil, uint64(n), srcC, dstC, red.Op != udma.ReduceNone)
	if dstC == Remote {
		injected, lands, err := c.fabric.Reserve(e, q, t.Dst, n, simkernel.Time(start), simkernel.Time(finish))
		if err != nil {
			c.fail(e, q, errorBits(err, false))
			return
		}
		finish, t.Lands = max(finish, uint64(injected)), uint64(lands)
	}
	es.BusyUntil = finish
	qs.Current, qs.InFlight = t, true
	if c.trace != nil {
		args := map[string]string{"src": fmt.Sprintf("%#x", t.Src), "dst": fmt.Sprintf("%#x", t.Dst), "bytes": fmt.Sprint(t.Len)}
		if red.Op != udma.ReduceNone {
			args["reduce"] = red.Op.String() + " " + red.Dtype.String()
		}
		c.trace.Slice(fmt.Sprintf("dma e%03d q%02d", e, q), "copy", start, finish, args)
	}
	c.clock.Schedule(simkernel.Time(finish), fireArg(e, q, qs.Epoch))
}

// finishTime reserves the engine and the shared paths for an n-byte
// transfer between classes src and dst, a reducing write if reduce, and
// returns when it completes (docs/timing-model.md §DMA):
//
//	start  = max(now, engine free)
//	finish = max(start + fixed + n/engine BW, each shared path's free time
//	         after it carries its bytes at its bandwidth)
//
// The HBM carries k·n bytes, k = hbmPasses(src, dst, reduce); the host link
// n bytes if either end is host memory. With an ideal timing (Timing.Ideal)
// finish = start: no engine, HBM or host-link time at all.
func (c *Controller) finishTime(busyUntil *uint64, n uint64, src, dst Class, reduce bool) (start, finish uint64) {
	start = max(uint64(c.clock.Now()), *busyUntil)
	if c.timing.Ideal {
		return start, start
	}
	tt := c.times.of(n, &c.timing)
	finish = start + c.timing.FixedCost + tt.engine
	if k := hbmPasses(src, dst, reduce); k != 0 {
		finish = share(&c.st.hbmFree, start, finish, tt.hbm[k-1])
	}
	if src == Host || dst == Host {
		finish = share(&c.st.hostFree, start, finish, tt.host)
	}
	return start, finish
}

// hbmPasses is how many times a transfer's n bytes go through this
// device's HBM, whose bandwidth counts reads and writes together: once for
// the read of an HBM source, once for the write of an HBM destination, and
// once more when that write reduces (it reads the destination first). An
// HBM→HBM copy is 2, a reduce from HBM into HBM 3, an on-chip or host
// transfer with no HBM end 0. A Remote destination's memory is another
// device's: its write is not counted here.
func hbmPasses(src, dst Class, reduce bool) int {
	k := 0
	if src == HBM {
		k++
	}
	if dst == HBM {
		k++
		if reduce {
			k++
		}
	}
	return k
}

// share books a shared path, free from *free, for d picoseconds of a
// transfer that starts at start, and returns the transfer's finish time (at
// least finish) once the path has carried it.
func share(free *uint64, start, finish, d uint64) uint64 {
	*free = max(*free, start) + d
	return max(finish, *free)
}

// transferTimes is TransferTime of n bytes at the engine's and the host
// link's bandwidths, and of n, 2n and 3n bytes (hbm[k-1], k =
// hbmPasses) at the HBM's.
type transferTimes struct {
	n, engine, host uint64
	hbm             [3]uint64
}

// timeMemo remembers the transfer times of the last two transfer sizes:
// nearly every pair of a queue has one size (a whole 64 KiB, or a few bytes
// of a semaphore write), and the division costs more than the rest of the
// timing. The zero timeMemo holds n = 0, whose times are 0.
type timeMemo [2]transferTimes

// of returns the times of n bytes under timing t, which must be the one
// every earlier call gave. n is at most a descriptor's length
// (udma.MaxTransfer), so 3n does not overflow.
func (m *timeMemo) of(n uint64, t *Timing) *transferTimes {
	switch n {
	case m[0].n:
		return &m[0]
	case m[1].n:
		m[0], m[1] = m[1], m[0]
		return &m[0]
	}
	m[1] = m[0]
	m[0] = transferTimes{n: n, engine: TransferTime(n, t.EngineBandwidth), host: TransferTime(n, t.HostBandwidth),
		hbm: [3]uint64{TransferTime(n, t.HBMBandwidth), TransferTime(2*n, t.HBMBandwidth), TransferTime(3*n, t.HBMBandwidth)}}
	return &m[0]
}

// Fire completes the transfer a completion event was scheduled for: the
// bytes move (S2M writes happen in descriptor order), both heads advance —
// the phase with them on a wrap — and the queue's next pair starts. Events of
// a queue that has since been reset or aborted are ignored.
func (c *Controller) Fire(arg uint64) {
	e, q, epoch := int(arg>>40), int(arg>>32&0xFF), uint32(arg)
	if e >= len(c.st.engines) || q >= udma.Queues || c.st.engines[e] == nil {
		return // an engine as its reset left it has nothing in flight
	}
	qs := &c.st.engines[e].Queues[q]
	if !qs.InFlight || qs.Epoch != epoch {
		return
	}
	t := qs.Current
	if err := c.move(e, q, t); err != nil {
		c.fail(e, q, errorBits(err, false))
		return
	}
	// The write may have reached this controller's own registers (an
	// on-chip register window) and reset this queue, aborted its engine or
	// halted it: its completion is then dropped like that of any older
	// epoch.
	if !qs.InFlight || qs.Epoch != epoch {
		return
	}
	qs.InFlight = false
	qs.Done++
	qs.Bytes += uint64(t.Len)
	qs.M2S.advanceHead()
	qs.S2M.advanceHead()
	c.kick(e, q)
}

// HandleEvent is Fire as an event handler of the kernel's engine, so that a
// device registers the controller itself for its completion events.
func (c *Controller) HandleEvent(_ *simkernel.Engine, arg uint64) { c.Fire(arg) }

// advanceHead retires the descriptor at the head, the phase advancing on a
// wrap.
func (h *HalfState) advanceHead() {
	h.Avail--
	h.Head++
	if h.Head >= h.Length { // >=: a length rewritten below the head still wraps
		h.Head = 0
		h.HeadRing = (h.HeadRing + 1) % 4
	}
}

// move carries out a transfer's bytes when it completes: a plain local copy
// (page to page when the bus can), a local reducing write (read, combine,
// write), or a hand-over to the fabric for a Remote destination. In
// timing-only mode only control transfers (at most ControlBytes) and
// transfers from host memory (staging) carry bytes; a Remote write still
// travels, without payload.
func (c *Controller) move(e, q int, t Transfer) error {
	payload := c.functional || t.Len <= ControlBytes || t.SrcC == Host
	if t.DstC == Remote {
		var p []byte
		if payload {
			p = make([]byte, t.Len) // held by the fabric until it lands
			if err := c.bus.ReadDMA(t.Src, p); err != nil {
				return err
			}
		}
		return c.fabric.Post(e, q, t.Dst, t.Len, p, t.Reduce, simkernel.Time(t.Lands))
	}
	if !payload {
		return nil
	}
	if t.Reduce.Op == udma.ReduceNone && c.copier != nil {
		return c.copier.CopyDMA(t.Dst, t.Src, t.Len)
	}
	if cap(c.buf) < t.Len {
		c.buf = make([]byte, udma.MaxTransfer)
	}
	b := c.buf[:t.Len]
	if err := c.bus.ReadDMA(t.Src, b); err != nil {
		return err
	}
	if t.Reduce.Op != udma.ReduceNone {
		if cap(c.dstBuf) < t.Len {
			c.dstBuf = make([]byte, udma.MaxTransfer)
		}
		d := c.dstBuf[:t.Len]
		if err := c.bus.ReadDMA(t.Dst, d); err != nil {
			return err
		}
		if err := Combine(t.Reduce, d, b); err != nil {
			return err
		}
		b = d
	}
	return c.bus.WriteDMA(t.Dst, b)
}
