package dma

import (
	"fmt"
	"sync"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// ring is one half's descriptor ring (a pring): where it lives and the
// runtime's own tail and phase.
type ring struct {
	addr  uint64 // device address of the ring (host bit set for host memory)
	pa    uint64 // host physical address when in host memory
	count uint32
	tail  uint32 // next descriptor to write
	phase uint8  // ring id of the descriptor at tail
}

// Queue is one DMA queue pair the runtime owns.
type Queue struct {
	m       *DMA
	fed     *fedRings // the feed of a fed queue (OpenFedQueue); nil for one written by Dump
	Name    string
	Engine  int
	Index   int
	tx, rx  ring
	pending uint32 // descriptor pairs started and not yet seen done
	done    uint64 // pairs the engine has completed (from the head register)
}

// OpenQueue initialises engine eng's queue q under a name, with rings of
// count descriptors in host memory, as the driver's queue init does: q_sw_ctrl
// reset, base lo/hi, length, cfg enable.
func (m *DMA) OpenQueue(name string, eng, q int, count uint32) (*Queue, error) {
	return m.open(name, eng, q, count, nil)
}

// open opens a queue (fed by fed when it is not nil).
func (m *DMA) open(name string, eng, q int, count uint32, fed *fedRings) (*Queue, error) {
	if q < 0 || q >= udma.Queues {
		return nil, fmt.Errorf("dma: queue %q: engine %d queue %d: %w", name, eng, q, udma.ErrEngine)
	}
	if err := udma.CheckRing(0, count); err != nil {
		return nil, fmt.Errorf("dma: queue %q: %w", name, err)
	}
	m.mu.Lock()
	if owner, busy := m.used[[2]int{eng, q}]; busy {
		m.mu.Unlock()
		return nil, fmt.Errorf("dma: queue %q: engine %d queue %d already belongs to %q: %w", name, eng, q, owner, ErrNoQueue)
	}
	if _, dup := m.queues[name]; dup {
		m.mu.Unlock()
		return nil, fmt.Errorf("dma: queue %q already open", name)
	}
	m.used[[2]int{eng, q}] = name
	m.mu.Unlock()
	qu := &Queue{m: m, Name: name, Engine: eng, Index: q, fed: fed}
	if err := qu.init(count); err != nil {
		_ = qu.freeRings() // init's error is the one to report
		m.mu.Lock()
		delete(m.used, [2]int{eng, q})
		m.mu.Unlock()
		return nil, err
	}
	m.mu.Lock()
	m.queues[name] = qu
	m.mu.Unlock()
	return qu, nil
}

func (qu *Queue) init(count uint32) error {
	m := qu.m
	if err := m.InitEngine(qu.Engine); err != nil {
		return err
	}
	for i, r := range []*ring{&qu.tx, &qu.rx} {
		size := uint64(count) * udma.DescriptorSize
		var pa uint64
		var err error
		if qu.fed != nil {
			pa, err = m.lazy.HostAllocLazy(size, udma.RingAlign, qu.fed.fill(qu.Name, i == 0))
		} else {
			pa, err = m.host.HostAlloc(size, udma.RingAlign)
		}
		if err != nil {
			return fmt.Errorf("dma: queue %q ring: %w", qu.Name, err)
		}
		*r = ring{addr: m.geo.HostAddress(pa), pa: pa, count: count, phase: udma.FirstRingID}
	}
	for _, h := range []struct {
		half, swctrl uint64
		r            *ring
	}{{udma.M2S, udma.QSwCtrlM2S, &qu.tx}, {udma.S2M, udma.QSwCtrlS2M, &qu.rx}} {
		regs := []struct {
			off uint64
			v   uint32
		}{
			{h.swctrl, udma.QSwReset},
			{udma.QBaseLo, uint32(h.r.addr)},
			{udma.QBaseHi, uint32(h.r.addr >> 32)},
			{udma.QLength, h.r.count},
			{udma.QCfg, udma.QCfgDriver},
		}
		for _, reg := range regs {
			if err := m.write(qu.Engine, udma.QueueReg(h.half, qu.Index, 0)+reg.off, reg.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// AllocQueue opens a queue by name on NC nc's engines (model_dma_engine_and_
// queue_bundle_alloc): the first free queue, engine by engine, skipping the
// reserved queues 14 and 15. Asking for a name already open returns that
// queue.
func (m *DMA) AllocQueue(name string, nc int, count uint32) (*Queue, error) {
	m.mu.Lock()
	if q, ok := m.queues[name]; ok {
		m.mu.Unlock()
		return q, nil
	}
	m.mu.Unlock()
	if nc < 0 || nc >= m.geo.NeuronCores {
		return nil, fmt.Errorf("dma: queue %q: NC %d: the %s has NCs 0..%d", name, nc, m.geo.Generation, m.geo.NeuronCores-1)
	}
	first := nc * m.geo.DMAEnginesPerNC
	for eng := first; eng < first+m.geo.DMAEnginesPerNC; eng++ {
		for q := 0; q < NXQueue; q++ {
			m.mu.Lock()
			_, busy := m.used[[2]int{eng, q}]
			m.mu.Unlock()
			if !busy {
				return m.OpenQueue(name, eng, q, count)
			}
		}
	}
	return nil, fmt.Errorf("dma: queue %q on NC %d: %w", name, nc, ErrNoQueue)
}

// Queue returns an open queue by name.
func (m *DMA) Queue(name string) (*Queue, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.queues[name]
	return q, ok
}

// Free returns the descriptor pairs that can be written now.
func (qu *Queue) Free() uint32 { return qu.tx.count - qu.pending }

// Count returns the length of the queue's rings, in descriptors: what it
// was opened with (OpenQueue, OpenFedQueue); 0 once Close has freed them.
func (qu *Queue) Count() uint32 { return qu.tx.count }

// Dump writes a vring's descriptors into the queue's rings at their tails
// (vring_dump_to_pring), with the right phases, and returns how many pairs
// it wrote. Nothing is written unless all fit. A fed queue takes no dump,
// nor does a counting vring make one.
func (qu *Queue) Dump(v *Vring) (int, error) {
	if qu.fed != nil {
		return 0, fmt.Errorf("dma: queue %q is fed: it takes no vring dump: %w", qu.Name, ErrFed)
	}
	if v.count {
		return 0, fmt.Errorf("dma: queue %q: vring %q only counts its pairs: there are none to dump", qu.Name, v.Name)
	}
	n, err := qu.room(v.Name, len(v.live()))
	if err != nil || n == 0 {
		return 0, err
	}
	if err := qu.fill(&qu.tx, v, true); err != nil {
		return 0, err
	}
	if err := qu.fill(&qu.rx, v, false); err != nil {
		return 0, err
	}
	return int(n), nil
}

// room syncs the queue and checks that n more pairs fit its rings (what
// for names them in the error).
func (qu *Queue) room(what string, n int) (uint32, error) {
	if err := qu.Sync(); err != nil {
		return 0, err
	}
	if n < 0 || uint64(n) > uint64(qu.Free()) {
		return 0, fmt.Errorf("dma: queue %q: vring %q needs %d descriptors, %d free: %w", qu.Name, what, n, qu.Free(), ErrRingFull)
	}
	return uint32(n), nil
}

// fillChunk is the most descriptors fill encodes before it writes them to
// the ring: its buffer is at most 64 KiB however long the vring, not one
// buffer the size of the whole vring (a 144-device 1 GiB ring all-reduce
// dumps 8 million pairs).
const fillChunk = 4096

// fillBufs are fill's encoding buffers, reused across queues and runs.
var fillBufs = sync.Pool{New: func() any { return new([fillChunk * udma.DescriptorSize]byte) }}

// fill writes one half's descriptors for a vring — M2S (source, meta_ctrl,
// FIRST|LAST) or S2M (destination) — at the ring's tail, in host writes of
// at most fillChunk descriptors that never cross the ring's end, and
// advances the tail and phase.
func (qu *Queue) fill(r *ring, v *Vring, tx bool) error {
	pb := fillBufs.Get().(*[fillChunk * udma.DescriptorSize]byte)
	defer fillBufs.Put(pb)
	buf := pb[:]
	pairs := v.live()
	tail, phase := r.tail, r.phase
	for i := 0; i < len(pairs); {
		k := min(len(pairs)-i, fillChunk, int(r.count-tail))
		b := buf[:k*udma.DescriptorSize]
		if err := encodeHalf(b, pairs[i:i+k], phase, tx); err != nil {
			return err
		}
		if err := qu.m.host.HostWrite(r.pa+uint64(tail)*udma.DescriptorSize, b); err != nil {
			return fmt.Errorf("dma: queue %q ring: %w", qu.Name, err)
		}
		i += k
		tail, phase = r.advance(tail, phase, uint32(k))
	}
	r.tail, r.phase = tail, phase
	return nil
}

// advance returns the slot and phase n descriptors past tail at phase
// phase, n at most up to the ring's end (the phase turns there).
func (r *ring) advance(tail uint32, phase uint8, n uint32) (uint32, uint8) {
	if tail += n; tail == r.count {
		return 0, (phase + 1) % 4
	}
	return tail, phase
}

// encodeHalf encodes one half of pairs into b, one descriptor each, at
// ring id phase: the M2S half (source, meta_ctrl, FIRST|LAST) when tx, else
// the S2M half (destination, reduce word). It is what a ring holds, whether
// written before the device starts (Dump) or produced as the device reads
// it (a fed queue).
func encodeHalf(b []byte, pairs []pair, phase uint8, tx bool) error {
	const ds = udma.DescriptorSize
	flags := uint32(0)
	if tx {
		flags = udma.FlagFirst | udma.FlagLast
	}
	// Only the length differs from one descriptor's len_ctrl to the next:
	// the ring id and flags are worked out once, the length put in each
	// as udma.LenCtrl puts it, a length it refuses refused by it.
	ctrl, err := udma.LenCtrl(1, phase, flags)
	if err != nil {
		return err
	}
	ctrl &^= udma.LenMask
	b = b[:len(pairs)*ds]
	for j := range pairs {
		p := &pairs[j]
		if p.len < 1 || p.len > udma.MaxTransfer {
			_, err := udma.LenCtrl(int(p.len), phase, flags)
			return err
		}
		d := udma.Descriptor{LenCtrl: ctrl | p.len&udma.LenMask, Addr: p.dst, Meta: p.reduce}
		if tx {
			d.Addr, d.Meta = p.src, udma.DefaultMetaCtrl
		}
		d.Put(b[j*ds : j*ds+ds])
	}
	return nil
}

// Start makes n dumped pairs available: tail_inc on S2M first, then M2S,
// as the driver does.
func (qu *Queue) Start(n int) error {
	if n <= 0 {
		return nil
	}
	if err := qu.m.write(qu.Engine, udma.QueueReg(udma.S2M, qu.Index, udma.QTailInc), uint32(n)); err != nil {
		return err
	}
	if err := qu.m.write(qu.Engine, udma.QueueReg(udma.M2S, qu.Index, udma.QTailInc), uint32(n)); err != nil {
		return err
	}
	qu.pending += uint32(n)
	return nil
}

// QueueStatus reads the status register of queue q of engine eng (its M2S
// half's, which Queue.Status reads too) for a queue the runtime did not
// set up itself: one a program's dma_trigger record rang.
func (m *DMA) QueueStatus(eng, q int) (uint32, error) {
	if q < 0 || q >= udma.Queues {
		return 0, fmt.Errorf("dma: engine %d queue %d: an engine has queues 0..%d", eng, q, udma.Queues-1)
	}
	return m.read(eng, udma.QueueReg(udma.M2S, q, udma.QStatus))
}

// Status returns the queue's status register.
func (qu *Queue) Status() (uint32, error) {
	return qu.m.read(qu.Engine, udma.QueueReg(udma.M2S, qu.Index, udma.QStatus))
}

// Sync reads the M2S head and retires the pairs the engine has finished. A
// queue halted on an error is ErrQueueError with the status bits. A device
// that is not ready — in a reset, or not yet booted after one — answers
// every register read with hwarch.NotReady (0xDEADBEEF); that is
// bringup.ErrNotReady, not a status whose bits mean anything (0xDEADBEEF
// has the halted bit and DMA error bits set).
func (qu *Queue) Sync() error {
	st, err := qu.Status()
	if err != nil {
		return err
	}
	if st == hwarch.NotReady {
		return qu.notReady("status")
	}
	if st&udma.StatusHalted != 0 {
		return fmt.Errorf("dma: queue %q (engine %d queue %d): status %#x (%s): %w", qu.Name, qu.Engine, qu.Index, st, udma.StatusText(st), ErrQueueError)
	}
	if qu.pending == 0 {
		return nil
	}
	head, err := qu.m.read(qu.Engine, udma.QueueReg(udma.M2S, qu.Index, udma.QHead))
	if err != nil {
		return err
	}
	if head == hwarch.NotReady {
		return qu.notReady("head")
	}
	// The pairs still pending end at the runtime's tail; the head says
	// where the engine is.
	idx := head & 0xFF_FFFF
	inRing := (qu.tx.tail + qu.tx.count - idx) % qu.tx.count
	if inRing == 0 && st&udma.StatusBusy != 0 {
		inRing = qu.tx.count
	}
	if inRing < qu.pending {
		qu.done += uint64(qu.pending - inRing)
		qu.pending = inRing
	}
	return nil
}

// notReady is the error of a queue register (what) that read
// hwarch.NotReady: the device is not ready, and the queue's state on it is
// unknown.
func (qu *Queue) notReady(what string) error {
	return fmt.Errorf("dma: queue %q (engine %d queue %d): the %s register reads %#x: the device is in a reset or not yet ready after one, so its queues' state is unknown: %w",
		qu.Name, qu.Engine, qu.Index, what, hwarch.NotReady, bringup.ErrNotReady)
}

// Run dumps a vring and starts it.
func (qu *Queue) Run(v *Vring) error {
	n, err := qu.Dump(v)
	if err != nil {
		return err
	}
	return qu.Start(n)
}

// Wait polls until every started pair is done, sleeping PollInterval on the
// device's clock between polls, for at most maxPolls polls.
func (qu *Queue) Wait(maxPolls int) error {
	for i := 0; ; i++ {
		if err := qu.Sync(); err != nil {
			return err
		}
		if qu.pending == 0 {
			return nil
		}
		if i >= maxPolls {
			return fmt.Errorf("dma: queue %q: %d pairs still pending after %d polls: %w", qu.Name, qu.pending, maxPolls, ErrTimeout)
		}
		if err := ndl.Sleep(qu.m.dev.Dev, PollInterval); err != nil {
			return err
		}
	}
}

// Close gives a queue back: the engine's queue is reset (q_sw_ctrl), its
// rings' host memory freed and its name and (engine, queue) released. A
// closed queue must not be used again.
func (qu *Queue) Close() error {
	m := qu.m
	var first error
	for _, h := range [...]struct{ half, swctrl uint64 }{{udma.M2S, udma.QSwCtrlM2S}, {udma.S2M, udma.QSwCtrlS2M}} {
		if err := m.write(qu.Engine, udma.QueueReg(h.half, qu.Index, 0)+h.swctrl, udma.QSwReset); err != nil && first == nil {
			first = err
		}
	}
	if err := qu.freeRings(); err != nil && first == nil {
		first = err
	}
	m.mu.Lock()
	delete(m.used, [2]int{qu.Engine, qu.Index})
	delete(m.queues, qu.Name)
	m.mu.Unlock()
	return first
}

// freeRings frees the rings' host memory (once) and lets go of a fed
// queue's feed.
func (qu *Queue) freeRings() error {
	var first error
	for _, r := range []*ring{&qu.tx, &qu.rx} {
		if r.count == 0 {
			continue
		}
		if err := qu.m.host.HostFree(r.pa); err != nil && first == nil {
			first = fmt.Errorf("dma: queue %q ring: %w", qu.Name, err)
		}
		r.count = 0
	}
	qu.fed = nil
	return first
}

// QueuesIntact reports whether the device still holds the queues this
// layer programmed, by reading each open queue's ring base registers back:
// a device reset returns them to their power-on values (and a device in
// reset answers 0xDEADBEEF), which is how a runtime on hardware learns
// that its state on the device is gone and the device must be brought up
// again. With no queue open there is nothing to compare, and it reports
// true.
func (m *DMA) QueuesIntact() (bool, error) {
	m.mu.Lock()
	queues := make([]*Queue, 0, len(m.queues))
	for _, q := range m.queues {
		queues = append(queues, q)
	}
	m.mu.Unlock()
	for _, qu := range queues {
		for _, h := range []struct {
			half uint64
			r    *ring
		}{{udma.M2S, &qu.tx}, {udma.S2M, &qu.rx}} {
			base := udma.QueueReg(h.half, qu.Index, 0)
			lo, err := m.read(qu.Engine, base+udma.QBaseLo)
			if err != nil {
				return false, err
			}
			hi, err := m.read(qu.Engine, base+udma.QBaseHi)
			if err != nil {
				return false, err
			}
			if uint64(hi)<<32|uint64(lo) != h.r.addr {
				return false, nil
			}
		}
	}
	return true, nil
}
