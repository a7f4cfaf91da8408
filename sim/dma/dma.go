// Package dma models the UDMA engines of a simulated Neuron device
// (driver-facts §4): per engine 16 queue pairs (M2S reads the source, S2M
// writes the destination) over 16-byte descriptor rings in host or device
// memory, the engine and queue registers, doorbells, in-order execution with
// real writes (so the driver's marker completion works), errors as queue
// status bits, and the timing of every transfer on the device's clock.
//
// The package knows nothing of the device around it: memory is reached
// through a Bus and time through a Scheduler, both provided by sim.Device.
package dma

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"unsafe"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// Class says which shared path an address's bytes travel for timing.
type Class uint8

// The classes.
const (
	OnChip Class = iota // SBUF, PSUM, registers: no shared bottleneck modelled
	HBM                 // device memory: the shared HBM bandwidth
	Host                // host memory: the shared PCIe link
	Remote              // another device, through a neighbour or fabric window: the bytes leave over links
)

// Errors a Bus returns.
var (
	// ErrNoMemory: an address range lies in no memory the engines reach.
	ErrNoMemory = errors.New("address in no memory the DMA engines reach")
	// ErrNeighbour: a neighbour-device window with no device behind it.
	ErrNeighbour = errors.New("neighbour-device window with no device behind it")
)

// Bus is the device's address space as its DMA engines see it.
type Bus interface {
	// Check reports which class a whole range belongs to, or an error
	// wrapping ErrNoMemory or ErrNeighbour.
	Check(addr uint64, n int) (Class, error)
	// ReadDMA and WriteDMA move bytes; they fail as Check does.
	ReadDMA(addr uint64, p []byte) error
	WriteDMA(addr uint64, p []byte) error
}

// Copier is a Bus that can move a range itself, page to page, without a
// bounce buffer. Fire uses it when the bus has it.
type Copier interface {
	CopyDMA(dst, src uint64, n int) error
}

// Fabric is a Bus whose Remote addresses reach other devices over links
// (sim/fabric provides it through sim.Device). A write to a Remote address
// leaves the device as packets and lands later; the queue goes on once the
// last byte has left.
type Fabric interface {
	// Reserve books the path for an n-byte write from engine e queue q to
	// dst: the engine reads its bytes from start until sent, at an even
	// rate. It returns when the last byte has left the device and when the
	// write lands at its destination, or an error wrapping ErrNeighbour (no
	// device or no link behind the address).
	Reserve(e, q int, dst uint64, n int, start, sent simkernel.Time) (injected, lands simkernel.Time, err error)
	// Post hands the write over when it has left: p (nil when no payload
	// travels, in timing-only mode) lands at dst at time lands, combined
	// with the destination's bytes per r.
	Post(e, q int, dst uint64, n int, p []byte, r udma.Reduce, lands simkernel.Time) error
}

// Scheduler is the device's clock: Schedule makes the device call
// Controller.Fire(arg) at time at.
type Scheduler interface {
	Now() simkernel.Time
	Schedule(at simkernel.Time, arg uint64)
}

// HalfState is the state of one half (M2S or S2M) of a queue.
type HalfState struct {
	Cfg, BaseLo, BaseHi, Length, SwCtrl uint32
	Head, Tail                          uint32 // descriptor indices
	HeadRing, TailRing                  uint8  // ring-id phases
	Avail                               uint32 // descriptors made available and not yet done
}

// base returns the ring's base address (bits 5:0 of base lo read as 0).
func (h *HalfState) base() uint64 { return uint64(h.BaseHi)<<32 | uint64(h.BaseLo&^0x3F) }

// reset puts the half back to an empty ring at phase 1.
func (h *HalfState) reset() {
	h.Head, h.Tail, h.Avail = 0, 0, 0
	h.HeadRing, h.TailRing = udma.FirstRingID, udma.FirstRingID
}

// Transfer is the descriptor pair a queue is executing.
type Transfer struct {
	Src, Dst   uint64
	Len        int
	SrcC, DstC Class
	Reduce     udma.Reduce // the S2M descriptor's write-side reduce (docs/dma-model.md §Reduce)
	Lands      uint64      // Remote destinations: when the write lands there
}

// QueueState is a queue pair: the two halves, the shared status and the
// transfer in flight.
type QueueState struct {
	M2S, S2M HalfState
	Status   uint32 // udma.Err* and StatusHalted bits
	Epoch    uint32 // bumps on queue reset: completions of older epochs are dropped
	InFlight bool
	Current  Transfer
	Done     uint64 // descriptor pairs completed
	Bytes    uint64 // bytes moved
}

// EngineState is one engine: its queues, its state, when it is next free,
// and its other registers as plain storage.
type EngineState struct {
	Queues    [udma.Queues]QueueState
	State     uint32 // udma.StateIdle / StateNormal / StateAbort
	BusyUntil uint64
	Regs      map[uint64]uint32
}

// State is the whole mutable state of a device's DMA engines.
type State struct {
	Engines  []EngineState
	HBMFree  uint64  // when the shared HBM bandwidth is next free
	HostFree uint64  // when the shared host link is next free
	Bursts   []Burst // the descriptors queues fetched ahead and have not run
}

// liveState is [State] as a Controller holds it: an engine's state is made
// the first time the engine is written (a register, a doorbell) and until
// then is the state its last reset left — every queue empty at phase 1 with
// epoch fresh[e], the engine normal, no storage register set — which State
// writes out in full and CompactState as its epoch alone. A Trn3 device has 132 engines of 2.3 KiB and a
// collective uses a few of them: made all at New, they were three quarters
// of a timing-only device's host memory and half of a 4,096-device
// cluster's build time (docs/dma-model.md §Engines and queues, "Host
// memory").
type liveState struct {
	engines  []*liveEngine // nil while engine e is as its last reset left it
	hbmFree  uint64        // State.HBMFree
	hostFree uint64        // State.HostFree
	fresh    []uint32      // the epoch of every queue of engine e while engines[e] is nil
}

// liveEngine is a made engine's state and, beside it, its queues' prefetch
// state (made with a queue's first fetch; not state: dropped on Restore,
// which makes new liveEngines). Kept with the engine, a queue's prefetch
// state is one load from the engine a kick holds already, not a walk
// through a per-controller table. The pointers fit in the size class of
// EngineState's allocation.
type liveEngine struct {
	EngineState
	fetch [udma.Queues]*queueFetch
}

// powerOn is an engine as a reset leaves it, every queue at epoch epoch: NORMAL
// (driver 2.24.7.0 never writes change_state on its own — its only writer
// is the DMA_ENG_SET_STATE ioctl, neuron_cdev.c:101-109 →
// neuron_ring.c:369-381 → udma/udma_main.c:527-555 — yet rings its H2T
// queues right after ndma_init, neuron_ring.c:473-555, neuron_dma.c:359, and
// after every reset, neuron_reset.c:133; docs/dma-model.md "What driver
// 2.24.7.0 programs"), empty rings at phase 1, queue configuration at its
// reset value, no storage register (Regs nil).
func powerOn(epoch uint32) EngineState {
	es := EngineState{State: udma.StateNormal}
	for q := range es.Queues {
		qs := &es.Queues[q]
		qs.Epoch = epoch
		qs.M2S.reset()
		qs.S2M.reset()
		qs.M2S.Cfg, qs.S2M.Cfg = udma.QCfgReset, udma.QCfgReset
	}
	return es
}

// blankEngine is every engine not yet made, as ReadReg reads it (its queues'
// epochs aside, which no register shows). It is never written.
var blankEngine = powerOn(1)

// engine returns engine e's state to change, made from its reset state the
// first time.
func (c *Controller) engine(e int) *EngineState {
	if le := c.st.engines[e]; le != nil {
		return &le.EngineState
	}
	le := new(liveEngine)
	le.EngineState = powerOn(c.st.fresh[e])
	c.st.engines[e] = le
	return &le.EngineState
}

// view returns engine e's state to read: its own once made, else
// blankEngine (whose queue epochs are not e's: callers that show an epoch
// use fresh).
func (c *Controller) view(e int) *EngineState {
	if le := c.st.engines[e]; le != nil {
		return &le.EngineState
	}
	return &blankEngine
}

// Controller runs the engines of one device. The fields every descriptor
// pair reads come first, in as few cache lines of the CPU as they fit: a
// system's events visit its devices' controllers in turn, and each line
// is then likely a miss.
type Controller struct {
	st         liveState
	bus        Bus
	fabric     Fabric // bus as a Fabric, or nil
	clock      Scheduler
	copier     Copier // bus as a Copier, or nil
	trace      Tracer
	timing     Timing
	functional bool
	times      timeMemo // transfer times of the last sizes
	geo        *hwarch.Geometry
	buf        []byte                                          // payload bounce buffer, reused
	dstBuf     []byte                                          // destination bytes of a local reduce, reused
	burst      [prefetchDescriptors * udma.DescriptorSize]byte // descriptor fetch buffer, reused
}

// Options configure a Controller.
type Options struct {
	Timing Timing // zero: DefaultTiming
	// TimingOnly skips payloads: transfers cost their time but move no
	// bytes, except control transfers of at most ControlBytes (semaphore
	// and event writes, the completion marker) and transfers from host
	// memory (the staging of programs and tables), which always move.
	TimingOnly bool
}

// ControlBytes is the largest transfer that moves its bytes in timing-only
// mode.
const ControlBytes = 8

// New returns the engines of a device of geometry geo, all NORMAL (as out
// of reset) with empty rings at phase 1.
func New(geo *hwarch.Geometry, bus Bus, clock Scheduler, opts Options) *Controller {
	if opts.Timing == (Timing{}) {
		opts.Timing = DefaultTiming(geo.Generation)
	}
	c := &Controller{geo: geo, timing: opts.Timing, functional: !opts.TimingOnly, bus: bus, clock: clock}
	c.copier, _ = bus.(Copier)
	c.fabric, _ = bus.(Fabric)
	c.st.engines = make([]*liveEngine, geo.DMAEngines)
	c.st.fresh = make([]uint32, geo.DMAEngines)
	for e := range c.st.fresh {
		c.st.fresh[e] = 1 // each engine's first reset, from epoch 0
	}
	return c
}

// resetEngine puts engine e back to its reset state (powerOn). Epochs only
// grow: a completion scheduled before the reset must not match a transfer
// started after it.
func (c *Controller) resetEngine(e int) {
	le := c.st.engines[e]
	if le == nil {
		c.st.fresh[e]++
		return
	}
	es := &le.EngineState // its prefetch state stays: a new epoch misses it
	var epochs [udma.Queues]uint32
	for q := range es.Queues {
		epochs[q] = es.Queues[q].Epoch
	}
	*es = powerOn(0)
	for q := range es.Queues {
		es.Queues[q].Epoch = epochs[q] + 1
	}
}

// Reset puts every engine back to its power-on state (a device reset).
func (c *Controller) Reset() {
	for e := range c.st.engines {
		c.resetEngine(e)
	}
	c.st.hbmFree, c.st.hostFree = 0, 0
}

// Tracer receives one slice per transfer: the kernel's [simkernel.Tracer].
type Tracer = simkernel.Tracer

// SetTrace makes the controller report every transfer to t (nil: none).
func (c *Controller) SetTrace(t Tracer) { c.trace = t }

// ResetEngines resets the engines for which reset returns true (a TPB reset
// of their NCs).
func (c *Controller) ResetEngines(reset func(e int) bool) {
	for e := range c.st.engines {
		if reset(e) {
			c.resetEngine(e)
		}
	}
}

// Timing returns the timing model in use.
func (c *Controller) Timing() Timing { return c.timing }

// Functional reports whether payloads move (false in timing-only mode).
func (c *Controller) Functional() bool { return c.functional }

// Engines returns the number of engines.
func (c *Controller) Engines() int { return len(c.st.engines) }

// Queue returns a copy of a queue's state.
func (c *Controller) Queue(e, q int) (QueueState, error) {
	if e < 0 || e >= len(c.st.engines) || q < 0 || q >= udma.Queues {
		return QueueState{}, fmt.Errorf("dma: engine %d queue %d: %w", e, q, udma.ErrEngine)
	}
	return c.engineState(e).Queues[q], nil
}

// engineState returns a copy of engine e's state (its Regs shared).
func (c *Controller) engineState(e int) EngineState {
	if le := c.st.engines[e]; le != nil {
		return le.EngineState
	}
	return powerOn(c.st.fresh[e])
}

// Totals returns the descriptor pairs completed and the bytes moved over
// every queue of every engine, each counted since the engine's last reset
// (the queues' Done and Bytes).
func (c *Controller) Totals() (pairs, bytes uint64) {
	for _, es := range c.st.engines {
		if es == nil {
			continue // as its reset left it: nothing done
		}
		for q := range es.Queues {
			pairs += es.Queues[q].Done
			bytes += es.Queues[q].Bytes
		}
	}
	return pairs, bytes
}

// A Controller follows the kernel's snapshot convention.
var _ simkernel.Stateful[State] = (*Controller)(nil)

// State returns a deep copy of the controller's state.
func (c *Controller) State() State {
	s := State{Engines: make([]EngineState, len(c.st.engines)), HBMFree: c.st.hbmFree, HostFree: c.st.hostFree, Bursts: c.bursts()}
	for i := range c.st.engines {
		es := c.engineState(i)
		regs := make(map[uint64]uint32, len(es.Regs))
		for k, v := range es.Regs {
			regs[k] = v
		}
		es.Regs = regs
		s.Engines[i] = es
	}
	return s
}

// ErrInvalidState marks a State that does not fit the controller. It wraps
// [simkernel.ErrInvalidState], the sentinel of every model's refused state.
var ErrInvalidState = simkernel.InvalidStateOf("invalid DMA state")

// Restore replaces the state with a deep copy of s, after checking that it
// can be the state of this controller: the engine count, every engine's
// state (idle, normal or abort) and storage registers (4-aligned offsets in
// its register window), every queue's rings (phases 0..3, lengths as the
// length register holds them, indices inside their rings), status bits and
// transfer in flight (classes, reduce, length), and every time at most
// units.MaxTimePS. A state that fails is refused with an error wrapping
// ErrInvalidState that names the field, and the controller keeps its state.
func (c *Controller) Restore(s State) error {
	if err := c.check(&s); err != nil {
		return fmt.Errorf("dma: restore: %w: %w", err, ErrInvalidState)
	}
	c.st.hbmFree, c.st.hostFree = s.HBMFree, s.HostFree
	for e := range s.Engines {
		es := &s.Engines[e]
		if epoch, ok := asReset(es); ok {
			c.st.engines[e], c.st.fresh[e] = nil, epoch
			continue
		}
		own := &liveEngine{EngineState: *es} // a deep copy, so the caller's s stays its own
		own.Regs = nil
		for k, v := range es.Regs {
			own.setReg(k, v)
		}
		c.st.engines[e] = own
	}
	c.restoreBursts(s.Bursts)
	return nil
}

// asReset reports whether es is an engine as a reset leaves it (powerOn)
// with every queue at one epoch, and that epoch.
func asReset(es *EngineState) (uint32, bool) {
	if len(es.Regs) != 0 {
		return 0, false
	}
	epoch := es.Queues[0].Epoch
	blank := powerOn(epoch)
	return epoch, es.State == blank.State && es.BusyUntil == blank.BusyUntil && es.Queues == blank.Queues
}

// setReg stores v in storage register off, making Regs on the first.
func (es *EngineState) setReg(off uint64, v uint32) {
	if es.Regs == nil {
		es.Regs = map[uint64]uint32{}
	}
	es.Regs[off] = v
}

// Validate checks s as Restore does, without restoring it.
func (c *Controller) Validate(s State) error {
	if err := c.check(&s); err != nil {
		return fmt.Errorf("dma: restore: %w: %w", err, ErrInvalidState)
	}
	return nil
}

// check validates a state for Restore.
func (c *Controller) check(s *State) error {
	if len(s.Engines) != len(c.st.engines) {
		return fmt.Errorf("%d engines, the device has %d", len(s.Engines), len(c.st.engines))
	}
	if _, err := units.PS("HBMFree", s.HBMFree); err != nil {
		return err
	}
	if _, err := units.PS("HostFree", s.HostFree); err != nil {
		return err
	}
	for e := range s.Engines {
		es := &s.Engines[e]
		if err := checkEngine(es); err != nil {
			return fmt.Errorf("engine %d: %w", e, err)
		}
	}
	return checkBursts(s)
}

func checkEngine(es *EngineState) error {
	switch es.State {
	case udma.StateIdle, udma.StateNormal, udma.StateAbort:
	default:
		return fmt.Errorf("State %d: not idle (%d), normal (%d) or abort (%d)", es.State, udma.StateIdle, udma.StateNormal, udma.StateAbort)
	}
	if _, err := units.PS("BusyUntil", es.BusyUntil); err != nil {
		return err
	}
	for _, off := range slices.Sorted(maps.Keys(es.Regs)) { // in order: the same error for the same state
		if off >= udma.EngineRegSize || off%4 != 0 {
			return fmt.Errorf("Regs: storage register %#x: not a 4-aligned offset below %#x", off, udma.EngineRegSize)
		}
		if !stored(off) {
			return fmt.Errorf("Regs: storage register %#x is a register the engine's state models, never kept as storage", off)
		}
	}
	for q := range es.Queues {
		if err := checkQueue(&es.Queues[q]); err != nil {
			return fmt.Errorf("queue %d: %w", q, err)
		}
	}
	return nil
}

func checkQueue(qs *QueueState) error {
	for _, h := range []struct {
		name string
		h    *HalfState
	}{{"M2S", &qs.M2S}, {"S2M", &qs.S2M}} {
		hs := h.h
		switch {
		case hs.HeadRing > 3 || hs.TailRing > 3:
			return fmt.Errorf("%s: ring phases %d, %d (0..3)", h.name, hs.HeadRing, hs.TailRing)
		case hs.Length > 0xFF_FFFF:
			return fmt.Errorf("%s: Length %#x: more than the length register's 24 bits", h.name, hs.Length)
		case hs.BaseLo&0x3F != 0:
			return fmt.Errorf("%s: BaseLo %#x: bits 5:0 read as 0 and are never stored", h.name, hs.BaseLo)
		case hs.Length != 0 && (hs.Head >= hs.Length || hs.Tail >= hs.Length || hs.Avail > hs.Length):
			return fmt.Errorf("%s: ring indices (head %d, tail %d, %d available) out of a ring of %d", h.name, hs.Head, hs.Tail, hs.Avail, hs.Length)
		}
	}
	if bits := qs.Status &^ (udma.StatusHalted | udma.ErrorBits); bits != 0 {
		return fmt.Errorf("Status %#x: bits %#x are no status the model stores", qs.Status, bits)
	}
	tr := &qs.Current
	switch {
	case tr.Len < 0:
		return fmt.Errorf("Current: Len %d: negative", tr.Len)
	case uint64(tr.Len) > tr.Src+uint64(tr.Len) || uint64(tr.Len) > tr.Dst+uint64(tr.Len):
		return fmt.Errorf("Current: %d bytes from %#x to %#x: past the end of the address space", tr.Len, tr.Src, tr.Dst)
	case tr.SrcC > Remote || tr.DstC > Remote:
		return fmt.Errorf("Current: classes %d, %d: unknown (0..%d)", tr.SrcC, tr.DstC, Remote)
	}
	if r, err := udma.DecodeReduce(udma.ReduceMeta(tr.Reduce)); err != nil || r != tr.Reduce {
		return fmt.Errorf("Current: Reduce %+v: not a reduce the engines do", tr.Reduce)
	}
	if _, err := units.PS("Current: Lands", tr.Lands); err != nil {
		return err
	}
	return nil
}

// StateBytes bounds the memory State takes for its copy, without making
// it: every engine's state written in full (engines as their last reset
// left them included), each engine's storage registers and the bursts.
func (c *Controller) StateBytes() uint64 {
	n := simkernel.SliceBytes(len(c.st.engines), unsafe.Sizeof(EngineState{})) + c.burstBytes()
	for _, es := range c.st.engines {
		regs := 0
		if es != nil {
			regs = len(es.Regs)
		}
		n += simkernel.MapBytes(regs, 16)
	}
	return n
}
