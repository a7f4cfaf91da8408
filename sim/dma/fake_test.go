package dma

import (
	"bytes"
	"fmt"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// This file holds the fakes the tests drive the controller with: a Bus made
// of byte-slice regions and a Scheduler that is a small priority queue. The
// helpers at the end program queues exactly as the kernel driver does
// (driver-facts §4.5, §4.6), only through Controller.WriteReg.

// region is one memory of the fake bus.
type region struct {
	name  string
	base  uint64
	mem   []byte
	class Class
	// regs, when set, gives the region register semantics (like the
	// device's on-chip register windows): each 4-byte word written calls
	// regs(offset, value) and reads return 0.
	regs func(off uint64, v uint32)
}

func (r *region) contains(addr uint64, n int) bool {
	end := addr + uint64(n)
	return n > 0 && end >= addr && addr >= r.base && end <= r.base+uint64(len(r.mem))
}

// busOp is one recorded bus access.
type busOp struct {
	write bool
	addr  uint64
	data  []byte // a copy of what was read or written
}

// fakeBus is a Bus of byte-slice regions, a neighbour window that answers
// ErrNeighbour, and ErrNoMemory everywhere else.
type fakeBus struct {
	regions   []*region
	neighbour [2]uint64 // [base, end)
	// record keeps a copy of every access in ops.
	record bool
	ops    []busOp
	// onWrite, when set, runs before each WriteDMA lands.
	onWrite func(addr uint64, p []byte)
	// failRead and failWrite, when > 0, make that many of the next reads
	// or writes fail with ErrNoMemory (memory that went away between the
	// check and the completion).
	failRead, failWrite int
	reads               int
	writes              int
	checks              int
	copies              int // CopyDMA calls (copierBus)
}

func (b *fakeBus) add(name string, base uint64, size int, class Class) *region {
	r := &region{name: name, base: base, mem: make([]byte, size), class: class}
	b.regions = append(b.regions, r)
	return r
}

func (b *fakeBus) find(addr uint64, n int) (*region, error) {
	end := addr + uint64(n)
	if n <= 0 || end < addr {
		return nil, fmt.Errorf("fake bus: range [%#x, +%d): %w", addr, n, ErrNoMemory)
	}
	if addr < b.neighbour[1] && end > b.neighbour[0] {
		return nil, fmt.Errorf("fake bus: range [%#x, +%d): %w", addr, n, ErrNeighbour)
	}
	for _, r := range b.regions {
		if r.contains(addr, n) {
			return r, nil
		}
	}
	return nil, fmt.Errorf("fake bus: range [%#x, +%d): %w", addr, n, ErrNoMemory)
}

// Check implements Bus.
func (b *fakeBus) Check(addr uint64, n int) (Class, error) {
	b.checks++
	r, err := b.find(addr, n)
	if err != nil {
		return 0, err
	}
	return r.class, nil
}

// ReadDMA implements Bus.
func (b *fakeBus) ReadDMA(addr uint64, p []byte) error {
	b.reads++
	if b.failRead > 0 {
		b.failRead--
		return fmt.Errorf("fake bus: read %#x went away: %w", addr, ErrNoMemory)
	}
	r, err := b.find(addr, len(p))
	if err != nil {
		return err
	}
	if r.regs != nil {
		clear(p)
	} else {
		copy(p, r.mem[addr-r.base:])
	}
	if b.record {
		b.ops = append(b.ops, busOp{false, addr, bytes.Clone(p)})
	}
	return nil
}

// WriteDMA implements Bus.
func (b *fakeBus) WriteDMA(addr uint64, p []byte) error {
	b.writes++
	if b.failWrite > 0 {
		b.failWrite--
		return fmt.Errorf("fake bus: write %#x went away: %w", addr, ErrNoMemory)
	}
	r, err := b.find(addr, len(p))
	if err != nil {
		return err
	}
	if b.record {
		b.ops = append(b.ops, busOp{true, addr, bytes.Clone(p)})
	}
	if b.onWrite != nil {
		b.onWrite(addr, p)
	}
	if r.regs != nil {
		for i := 0; i+4 <= len(p); i += 4 {
			r.regs(addr-r.base+uint64(i), uint32(p[i])|uint32(p[i+1])<<8|uint32(p[i+2])<<16|uint32(p[i+3])<<24)
		}
		return nil
	}
	copy(r.mem[addr-r.base:], p)
	return nil
}

// copierBus is the fake bus with the optional Copier method: region to
// region without a bounce buffer (through ReadDMA and WriteDMA when either
// side has register semantics, as the device does).
type copierBus struct{ *fakeBus }

// CopyDMA implements Copier.
func (b copierBus) CopyDMA(dst, src uint64, n int) error {
	b.copies++
	s, err := b.find(src, n)
	if err != nil {
		return err
	}
	d, err := b.find(dst, n)
	if err != nil {
		return err
	}
	if s.regs != nil || d.regs != nil {
		p := make([]byte, n)
		if err := b.ReadDMA(src, p); err != nil {
			return err
		}
		return b.WriteDMA(dst, p)
	}
	b.reads++
	if b.failRead > 0 {
		b.failRead--
		return fmt.Errorf("fake bus: read %#x went away: %w", src, ErrNoMemory)
	}
	b.writes++
	if b.failWrite > 0 {
		b.failWrite--
		return fmt.Errorf("fake bus: write %#x went away: %w", dst, ErrNoMemory)
	}
	from := s.mem[src-s.base : src-s.base+uint64(n)]
	if b.record {
		b.ops = append(b.ops, busOp{false, src, bytes.Clone(from)}, busOp{true, dst, bytes.Clone(from)})
	}
	if b.onWrite != nil {
		b.onWrite(dst, from)
	}
	copy(d.mem[dst-d.base:], from)
	return nil
}

// peek returns a copy of n bytes at addr (the test's own view, not counted).
func (b *fakeBus) peek(t testing.TB, addr uint64, n int) []byte {
	t.Helper()
	r, err := b.find(addr, n)
	if err != nil {
		t.Fatalf("peek %#x+%d: %v", addr, n, err)
	}
	return bytes.Clone(r.mem[addr-r.base : addr-r.base+uint64(n)])
}

// poke writes bytes at addr (the host CPU's or the test's own store).
func (b *fakeBus) poke(t testing.TB, addr uint64, p []byte) {
	t.Helper()
	r, err := b.find(addr, len(p))
	if err != nil {
		t.Fatalf("poke %#x+%d: %v", addr, len(p), err)
	}
	copy(r.mem[addr-r.base:], p)
}

// snapshot copies every region's bytes.
func (b *fakeBus) snapshot() [][]byte {
	s := make([][]byte, len(b.regions))
	for i, r := range b.regions {
		s[i] = bytes.Clone(r.mem)
	}
	return s
}

// event is one scheduled completion.
type event struct{ at, seq, arg uint64 }

func (a event) less(b event) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

// fakeScheduler is the Scheduler a fakeClock gives the controller, in
// simkernel.Time; the tests read and drive the clock in plain picoseconds.
type fakeScheduler struct{ k *fakeClock }

// Now implements Scheduler.
func (s fakeScheduler) Now() simkernel.Time { return simkernel.Time(s.k.Now()) }

// Schedule implements Scheduler.
func (s fakeScheduler) Schedule(at simkernel.Time, arg uint64) { s.k.Schedule(uint64(at), arg) }

// fakeClock is the clock behind a fakeScheduler: a binary heap of (time, seq, arg) run in order,
// each calling Controller.Fire.
type fakeClock struct {
	now   uint64
	seq   uint64
	heap  []event
	c     *Controller
	past  int     // Schedule calls for a time before now
	fired []event // every event run, in order, when record is set
	// record keeps fired; beforeFire and afterFire, when set, wrap each Fire.
	record     bool
	beforeFire func(ev event)
	afterFire  func(ev event)
}

// Now returns the clock, ps.
func (k *fakeClock) Now() uint64 { return k.now }

// Schedule queues Controller.Fire(arg) at time at, ps.
func (k *fakeClock) Schedule(at, arg uint64) {
	if at < k.now {
		k.past++
	}
	k.seq++
	k.heap = append(k.heap, event{at, k.seq, arg})
	for i := len(k.heap) - 1; i > 0; {
		p := (i - 1) / 2
		if !k.heap[i].less(k.heap[p]) {
			break
		}
		k.heap[i], k.heap[p] = k.heap[p], k.heap[i]
		i = p
	}
}

func (k *fakeClock) pop() event {
	top := k.heap[0]
	last := len(k.heap) - 1
	k.heap[0] = k.heap[last]
	k.heap = k.heap[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && k.heap[l].less(k.heap[m]) {
			m = l
		}
		if r < last && k.heap[r].less(k.heap[m]) {
			m = r
		}
		if m == i {
			break
		}
		k.heap[i], k.heap[m] = k.heap[m], k.heap[i]
		i = m
	}
	return top
}

// Pending returns the number of events not yet run.
func (k *fakeClock) Pending() int { return len(k.heap) }

// Next returns the time of the next event.
func (k *fakeClock) Next() (uint64, bool) {
	if len(k.heap) == 0 {
		return 0, false
	}
	return k.heap[0].at, true
}

func (k *fakeClock) fire(ev event) {
	if ev.at > k.now {
		k.now = ev.at
	}
	if k.record {
		k.fired = append(k.fired, ev)
	}
	if k.beforeFire != nil {
		k.beforeFire(ev)
	}
	k.c.Fire(ev.arg)
	if k.afterFire != nil {
		k.afterFire(ev)
	}
}

// RunUntil runs every event due at or before t, then sets the clock to t.
// It returns the number of events run.
func (k *fakeClock) RunUntil(t uint64) int {
	n := 0
	for len(k.heap) > 0 && k.heap[0].at <= t {
		k.fire(k.pop())
		n++
	}
	if t > k.now {
		k.now = t
	}
	return n
}

// Run runs events until none is left or limit of them have run; it reports
// whether the queue drained.
func (k *fakeClock) Run(limit int) bool {
	for i := 0; len(k.heap) > 0; i++ {
		if i == limit {
			return false
		}
		k.fire(k.pop())
	}
	return true
}

// Memory layout of a rig: where each fake region sits. Host memory sits at
// the generation's host bit as on the device; on-chip memory at NC 0's TPB
// window; the neighbour window at B0_0 (V3/V4) or at the same address on V2.
const (
	rigHBMBase    = 0x1000_0000
	rigHBMSize    = 4 << 20
	rigHostSize   = 2 << 20
	rigOnChipSize = 1 << 20
	rigRegsSize   = 1 << 20
	rigNeighbour  = 0x10_0000_0000_0000
	rigNeighSize  = 0x4_0000_0000_0000
	rigNowhere    = 0x7000_0000 // between HBM and everything else
)

// rig is a controller on a fake bus and clock.
type rig struct {
	t      testing.TB
	geo    *hwarch.Geometry
	bus    *fakeBus
	clk    *fakeClock
	c      *Controller
	hbm    *region
	host   *region
	onchip *region
	next   map[*region]uint64 // bump allocator
}

type rigOpts struct {
	gen                        hwarch.Generation
	opts                       Options
	hbmSize, hostSize, chipSz  int
	copier                     bool // the bus is a Copier
	regs                       bool // add a register window reaching the controller's own registers
	regsEngine                 int  // the engine whose registers the window holds
	noAlloc                    bool
	neighbourBase, neighbourSz uint64
}

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	if o.gen == 0 {
		o.gen = hwarch.Sunda
	}
	if o.hbmSize == 0 {
		o.hbmSize = rigHBMSize
	}
	if o.hostSize == 0 {
		o.hostSize = rigHostSize
	}
	if o.chipSz == 0 {
		o.chipSz = rigOnChipSize
	}
	geo := hwarch.MustGeometry(o.gen)
	r := &rig{t: t, geo: geo, bus: &fakeBus{}, clk: &fakeClock{}, next: map[*region]uint64{}}
	r.bus.neighbour = [2]uint64{rigNeighbour, rigNeighbour + rigNeighSize}
	r.hbm = r.bus.add("hbm", rigHBMBase, o.hbmSize, HBM)
	r.host = r.bus.add("host", geo.HostAddressBit, o.hostSize, Host)
	r.onchip = r.bus.add("onchip", geo.TPBDeviceBases[0], o.chipSz, OnChip)
	var bus Bus = r.bus
	if o.copier {
		bus = copierBus{r.bus}
	}
	r.c = New(geo, bus, fakeScheduler{r.clk}, o.opts)
	r.clk.c = r.c
	if o.regs {
		reg := r.bus.add("regs", regsWindow, udma.EngineRegSize, OnChip)
		reg.regs = func(off uint64, v uint32) { r.c.WriteReg(o.regsEngine, off, v) }
	}
	return r
}

// regsWindow is where a rig with regs puts the register window.
const regsWindow = 0x2_0000_0000

// alloc returns size bytes of a region, aligned.
func (r *rig) alloc(reg *region, size int, align uint64) uint64 {
	r.t.Helper()
	a := r.next[reg]
	if a == 0 {
		a = reg.base
	}
	a = (a + align - 1) &^ (align - 1)
	if a+uint64(size) > reg.base+uint64(len(reg.mem)) {
		r.t.Fatalf("rig: %s exhausted", reg.name)
	}
	r.next[reg] = a + uint64(size)
	return a
}

// fill writes a recognisable pattern of n bytes at addr and returns it.
func (r *rig) fill(addr uint64, n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7+i>>8) ^ seed
	}
	r.bus.poke(r.t, addr, p)
	return p
}

// normal puts engine e in NORMAL through change_state, as the driver's
// DMA_ENG_SET_STATE ioctl does. (Engines come out of reset NORMAL, and the
// driver's own engine init never writes change_state.)
func (r *rig) normal(e int) { r.c.WriteReg(e, udma.M2S+udma.ChangeState, udma.ChangeNormal) }

// disable makes engine e idle through change_state DISABLE.
func (r *rig) disable(e int) { r.c.WriteReg(e, udma.M2S+udma.ChangeState, udma.ChangeDisable) }

// status reads a queue half's status register.
func (r *rig) status(e, q int, half uint64) uint32 {
	return r.c.ReadReg(e, udma.QueueReg(half, q, udma.QStatus))
}

func (r *rig) queue(e, q int) QueueState {
	r.t.Helper()
	qs, err := r.c.Queue(e, q)
	if err != nil {
		r.t.Fatal(err)
	}
	return qs
}

// swRing is the driver's software view of one ring.
type swRing struct {
	base  uint64
	size  uint32
	next  uint32 // slot the next descriptor goes to
	phase uint8  // ring id of that slot
}

func (s *swRing) slot() uint64 { return s.base + uint64(s.next)*udma.DescriptorSize }

func (s *swRing) advance() {
	s.next++
	if s.next == s.size {
		s.next = 0
		s.phase = (s.phase + 1) % 4
	}
}

// drvQueue is one queue pair as the driver programs it.
type drvQueue struct {
	r        *rig
	e, q     int
	m2s, s2m swRing
	pending  uint32 // pairs written and not yet doorbelled
	pushed   uint64 // pairs written since the last reset
}

// setupQueue programs queue q of engine e as the driver's queue init does:
// q_sw_ctrl reset, base lo/hi and length, then cfg, for S2M and M2S, with
// rings of size descriptors allocated in ringMem.
func (r *rig) setupQueue(e, q int, ringMem *region, size uint32) *drvQueue {
	r.t.Helper()
	d := &drvQueue{r: r, e: e, q: q}
	d.m2s = swRing{base: r.alloc(ringMem, int(size)*udma.DescriptorSize, udma.RingAlign), size: size, phase: udma.FirstRingID}
	d.s2m = swRing{base: r.alloc(ringMem, int(size)*udma.DescriptorSize, udma.RingAlign), size: size, phase: udma.FirstRingID}
	r.program(e, q, udma.M2S, d.m2s.base, size, udma.QCfgDriver)
	r.program(e, q, udma.S2M, d.s2m.base, size, udma.QCfgDriver)
	return d
}

// program writes one half's registers the way queue init does.
func (r *rig) program(e, q int, half uint64, base uint64, size uint32, cfg uint32) {
	sw := uint64(udma.QSwCtrlM2S)
	if half == udma.S2M {
		sw = udma.QSwCtrlS2M
	}
	r.c.WriteReg(e, udma.QueueReg(half, q, sw), udma.QSwReset)
	r.c.WriteReg(e, udma.QueueReg(half, q, udma.QBaseLo), uint32(base))
	r.c.WriteReg(e, udma.QueueReg(half, q, udma.QBaseHi), uint32(base>>32))
	r.c.WriteReg(e, udma.QueueReg(half, q, udma.QLength), size)
	r.c.WriteReg(e, udma.QueueReg(half, q, udma.QCfg), cfg)
}

// reset writes q_sw_ctrl reset on both halves, then reprograms the rings
// and rewinds the driver's view.
func (d *drvQueue) reset() {
	d.r.program(d.e, d.q, udma.S2M, d.s2m.base, d.s2m.size, udma.QCfgDriver)
	d.r.program(d.e, d.q, udma.M2S, d.m2s.base, d.m2s.size, udma.QCfgDriver)
	d.m2s.next, d.m2s.phase = 0, udma.FirstRingID
	d.s2m.next, d.s2m.phase = 0, udma.FirstRingID
	d.pending, d.pushed = 0, 0
}

// pushDesc writes one M2S and one S2M descriptor, as given, at the rings'
// next slots.
func (d *drvQueue) pushDesc(tx, rx udma.Descriptor) {
	var b [udma.DescriptorSize]byte
	tx.Put(b[:])
	d.r.bus.poke(d.r.t, d.m2s.slot(), b[:])
	rx.Put(b[:])
	d.r.bus.poke(d.r.t, d.s2m.slot(), b[:])
	d.m2s.advance()
	d.s2m.advance()
	d.pending++
	d.pushed++
}

// txDesc and rxDesc build the driver's descriptors for an n-byte copy.
func txDesc(t testing.TB, src uint64, n int, phase uint8) udma.Descriptor {
	t.Helper()
	lc, err := udma.LenCtrl(n, phase, udma.FlagFirst|udma.FlagLast)
	if err != nil {
		t.Fatal(err)
	}
	return udma.Descriptor{LenCtrl: lc, Meta: udma.DefaultMetaCtrl, Addr: src}
}

func rxDesc(t testing.TB, dst uint64, n int, phase uint8) udma.Descriptor {
	t.Helper()
	lc, err := udma.LenCtrl(n, phase, 0)
	if err != nil {
		t.Fatal(err)
	}
	return udma.Descriptor{LenCtrl: lc, Addr: dst}
}

// push writes the driver's descriptor pair for an n-byte copy src → dst.
func (d *drvQueue) push(src, dst uint64, n int) {
	d.pushDesc(txDesc(d.r.t, src, n, d.m2s.phase), rxDesc(d.r.t, dst, n, d.s2m.phase))
}

// copy pushes src → dst of any length as 64 KiB chunks.
func (d *drvQueue) copy(src, dst uint64, n int) {
	for n > 0 {
		c := min(n, udma.MaxTransfer)
		d.push(src, dst, c)
		src, dst, n = src+uint64(c), dst+uint64(c), n-c
	}
}

// doorbell makes the pending pairs available: S2M tail_inc first, then M2S.
func (d *drvQueue) doorbell() {
	d.ring(d.pending, d.pending)
	d.pending = 0
}

// ring writes tail_inc with explicit counts (S2M first).
func (d *drvQueue) ring(s2m, m2s uint32) {
	d.r.c.WriteReg(d.e, udma.QueueReg(udma.S2M, d.q, udma.QTailInc), s2m)
	d.r.c.WriteReg(d.e, udma.QueueReg(udma.M2S, d.q, udma.QTailInc), m2s)
}

// reg reads one of the queue's registers.
func (d *drvQueue) reg(half, reg uint64) uint32 {
	return d.r.c.ReadReg(d.e, udma.QueueReg(half, d.q, reg))
}

// ringReg is what a head or tail register holds for index i at phase p.
func ringReg(i uint32, p uint8) uint32 { return i | uint32(p)<<30 }

// copyOn runs a 4 KiB copy from HBM to host memory on engine e (queue 4,
// its ring in host memory) to its end.
func (r *rig) copyOn(e int) {
	r.normal(e)
	d := r.setupQueue(e, 4, r.host, 32)
	d.copy(r.alloc(r.hbm, 4096, 64), r.alloc(r.host, 4096, 64), 4096)
	d.doorbell()
	r.mustDrain()
}

// mustDrain runs the clock until no event is left.
func (r *rig) mustDrain() {
	r.t.Helper()
	if !r.clk.Run(1 << 20) {
		r.t.Fatal("scheduler did not drain")
	}
	if r.clk.past != 0 {
		r.t.Fatalf("%d events were scheduled in the past", r.clk.past)
	}
}

// generations is every generation the tests run on.
var generations = []hwarch.Generation{hwarch.Sunda, hwarch.Cayman, hwarch.Mariana}
