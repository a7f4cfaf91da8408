package fabric

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// Config describes a system.
type Config struct {
	Generation hwarch.Generation
	Devices    int // every device of the system, all its nodes'
	// Nodes is how many copies of a system of Devices/Nodes devices (of
	// Kind) make the system, joined by the EFA network of Params.EFA
	// (BuildNodes, docs/fabric.md §EFA): device index = node ×
	// Devices/Nodes + local index. 0 is 1: one node, no EFA network.
	Nodes    int
	Kind     Kind    // of each node; KindAuto: AutoKind of a node's devices
	Params   *Params // nil: DefaultParamsOf(Generation, DeviceID)
	Revision uint8   // PCI revision of every device
	// DeviceID is the PCI device id of every device (Inf2 is 0x7264); 0:
	// the generation's first (hwarch.DefaultDeviceID). An id of another
	// generation is refused.
	DeviceID   uint16
	DMA        dma.Timing // zero: dma.DefaultTiming, or dma.Timing{Ideal: true} with ideal endpoints (the system keeps the timing it resolved)
	TimingOnly bool       // DMA without payloads (control writes and transfers from host memory still move)
	// Ready starts every device with its firmware booted.
	Ready bool
	// HostPorts, when set, holds one host port per device: where device
	// i's host-window DMA goes (a guest's memory, vfiouser.GuestMemory,
	// when the system is served over vfio-user: each device has its own
	// client's mappings). nil: every device reaches the system's shared
	// host memory. Such a system cannot be saved (Save refuses it): the
	// guests' memory is not the system's to keep.
	HostPorts []sim.HostPort
}

// System is N simulated devices joined by a fabric: one event engine (one
// virtual clock), one lock, one host memory. It is safe for concurrent use
// through its devices, whose accesses are serialised by the shared lock.
// Its own mutable state — links, path order, writes in flight, statistics,
// faults scheduled, reservations — is all in st; the rest is configuration
// fixed at New, caches derived from it (paths, chunkTime, hopDelay), the
// devices and engine it wires, and the packet capture (an output, whose
// continuation a snapshot keeps as CaptureState).
type System struct {
	cfg    Config     // as built (Params filled in)
	mu     sync.Mutex // the devices' shared lock
	engine *simkernel.Engine
	host   *sim.HostMemory
	geo    *hwarch.Geometry
	devs   []*sim.Device
	topo   *Topology
	p      Params
	paths  pathCache // the paths writes have taken, filled on first use
	ports  []*port
	hLand  simkernel.HandlerID
	hFault simkernel.HandlerID
	st     state
	rec    *recorder     // packet capture, or nil
	resume *CaptureState // a restored snapshot's capture, for the next SetCapture
	// Per link, computed once: a whole chunk's serialisation time, and the
	// latency to the next node including a switch's forwarding.
	chunkTime, hopDelay []uint64
	// spray: writes that cross the EFA network's spines spread over them
	// (RouteSpray or RouteAdaptive, more than one spine), each reservation
	// building its path in its own buffer (takeSpine); adaptive: by the
	// spines' queues (RouteAdaptive).
	spray, adaptive bool
	// controlQueues[id] is whether a control write waits on link id for
	// the chunks that reached it before it (System.control): on every link
	// but the EFA network's (isEFAGroup), whose NICs serve their queue pairs
	// in turn.
	controlQueues []bool
	// engineBW is the devices' DMA engine bandwidth: the rate at which an
	// engine reads a write's bytes (docs/fabric.md §Models).
	engineBW uint64
	// readTime[k] is AtRate(k·ChunkBytes, engineBW), k < len(readTime): the
	// time the engine takes to read a write's first k whole chunks, computed
	// once for the chunks of a descriptor's largest write (udma.MaxTransfer)
	// so that the aware model does not divide per chunk.
	readTime []uint64
	// readStep is the largest step of readTime, readTime[k+1] −
	// readTime[k], which bounds the step between the ready times of a
	// write's chunks (readyRun); ^0 if the table ever decreased (it does
	// not: AtRate grows with the bytes), which leaves no bound and no run.
	readStep uint64
	// slowBook, set by tests and benchmarks only, makes the aware model
	// book every link with bookRun, never bookQueue: the baseline the
	// fast path is held to and measured against.
	slowBook bool
	// sourcePrune is the size of state.SourceBusy at which its entries
	// over by the present are next dropped (sourceBusy).
	sourcePrune int
	// ready is storeAndForward's buffer of a write's chunk times, reused
	// by every write (no state: each write fills it before reading it).
	ready []uint64
	// fifo: the aware model with real endpoints, whose links keep when
	// their chunks arrived (LinkState.Queue) for the control writes.
	fifo bool
	// arrivals is storeAndForward's copy of a write's arrival times at a
	// link, reused as ready is.
	arrivals []uint64
	// runs is storeAndForwardChunks' runs of a write's chunks being
	// gathered, one per link of its path, reused as ready is.
	runs []runBuilder
	// down is how many links are down (state.Links' Down, counted by
	// setDown and countDown): none, most of the time, and downLink then
	// reads no link of a write's path.
	down int
}

// state is the fabric's whole mutable state (besides the devices' and the
// engine's): what a snapshot saves of the fabric itself.
type state struct {
	Links    []LinkState
	Last     []uint64          // per (src, dst) path, src·N + dst: when its last write lands (order on a path); N ≤ denseLast
	LastMap  map[uint64]uint64 // the same for larger systems, by src<<32 | dst
	InFlight []Delivery        // by slot; a free slot has Len 0 and Used false
	Free     []int             // free slots
	Stats    Stats
	// Faults are the faults scheduled, by the index their event carries.
	Faults []Fault
	// Reservations are each device's link reservations, by
	// engine·udma.Queues + queue.
	Reservations [][]Reservation
	// Messages are, with ideal endpoints in the aware model, each DMA
	// queue's message in progress, by device<<32 | engine·udma.Queues +
	// queue (docs/fabric.md §Parity mode); nil otherwise.
	Messages map[uint64]Message
	// SourceBusy is, in the contention-free model, until when each
	// device's writes are booked on each link past the first of their paths,
	// by device<<32 | link (System.cutThrough): a device's writes take
	// turns on every link they cross, other devices' do not wait for them.
	// Entries over by the present are dropped as it grows (pruneSources);
	// nil in the aware model.
	SourceBusy map[uint64]uint64
	// SprayNext is, under RouteSpray, the spine each NIC's next write
	// across the spines goes up to (if its links are up), by NIC
	// (node·NICs + k); nil until a write has crossed them.
	SprayNext []uint32
}

// Message is the message a DMA queue is sending in the parity mode: the
// writes it has reserved back to back to contiguous addresses of one
// device, which the aware model stores and forwards as one (exported for
// snapshots).
type Message struct {
	Dst      int    // destination device
	Next     uint64 // the device address a continuing write starts at
	Injected uint64 // when its last write so far left the first link (a continuing write starts then)
	Bytes    uint64 // its bytes so far
}

// Delivery is a write in flight (exported for snapshots).
type Delivery struct {
	Used     bool
	Src, Dst int
	Addr     uint64 // device address at the destination
	Len      int
	Data     []byte // nil: no payload travels (timing-only)
	Reduce   udma.Reduce
	Path     []int
	Lands    uint64
}

// Reservation is a write reserved by a queue and not yet posted (exported
// for snapshots).
type Reservation struct {
	Valid bool
	Start uint64 // when its first byte could leave (its packets are no earlier)
	Dst   int
	Addr  uint64
	Path  []int
	Lands uint64
	hops  []uint64 // chunk start times per link, for capture (saved as PortReservation.Hops)
	// sprayed is the reservation's own path when RouteSpray moved its
	// write to another spine than the topology's path takes (Path is
	// then sprayed): reused by the slot's next write, so a write in
	// flight past its Post holds a copy.
	sprayed []int
}

// port is one device's side of the fabric: the dma.Fabric its DMA engines
// write through.
type port struct {
	s   *System
	dev int
	// lastDst and lastPath are the destination device of the port's last
	// write and the topology's path to it (pathCache.get's, which never
	// changes): a DMA queue writes to one neighbour many times in a row
	// (a ring's, or a halving-doubling step's partner), and this answers
	// those without reading the path cache, whose rows of a thousand
	// devices miss the CPU's caches. lastDst is −1 before any write.
	lastDst  int
	lastPath []int
}

// path returns the topology's path from the port's device to device dst,
// as System.path does.
func (pt *port) path(dst int) ([]int, error) {
	if dst == pt.lastDst {
		return pt.lastPath, nil
	}
	p, err := pt.s.path(pt.dev, dst)
	if err == nil {
		pt.lastDst, pt.lastPath = dst, p
	}
	return p, err
}

// res is the port's device's reservations (the system's state): as many
// slots as its highest queue that has reserved needs, not every queue's.
func (pt *port) res() []Reservation { return pt.s.st.Reservations[pt.dev] }

// slots is how many reservation slots a device has: one per queue of each
// of its DMA engines.
func (s *System) slots() int { return s.geo.DMAEngines * udma.Queues }

// slot returns device dev's reservation slot i (i < slots), growing the
// device's slots to hold it: a 128-engine device whose queues all reserved
// would keep 2,048 of them (180 KiB), one that used queue 0 of engine 0
// keeps one.
func (s *System) slot(dev, i int) *Reservation {
	r := s.st.Reservations[dev]
	if i >= len(r) {
		r = append(r, make([]Reservation, i+1-len(r))...)
		s.st.Reservations[dev] = r
	}
	return &r[i]
}

// ErrConfig marks a system configuration that cannot be built.
var ErrConfig = errors.New("invalid system configuration")

// New builds a system: the topology, then the devices (device index i gets
// the routing id the driver maps to i), each joined to the fabric. A
// topology whose devices are not all joined is refused (ErrDisconnected,
// naming its groups): no collective could run on it.
func New(cfg Config) (*System, error) {
	cfg, p, topo, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	s := &System{engine: simkernel.NewEngine(), host: sim.NewHostMemory(), geo: hwarch.MustGeometry(cfg.Generation), topo: topo, p: p,
		paths: newPathCache(cfg.Devices)}
	s.cfg = cfg
	s.cfg.Params = &s.p
	s.engineBW = cfg.DMA.EngineBandwidth
	for k := range udma.MaxTransfer/p.ChunkBytes + 1 {
		s.readTime = append(s.readTime, uint64(simkernel.AtRate(uint64(k)*uint64(p.ChunkBytes), s.engineBW)))
	}
	s.readStep = largestStep(s.readTime)
	s.fifo = s.p.Model == Aware && s.p.Endpoints != EndpointsIdeal
	s.spray = topo.Scale != nil && topo.Scale.Spines > 1 && p.EFA.Routing != RouteFixed
	s.adaptive = s.spray && p.EFA.Routing == RouteAdaptive
	s.st.Links = make([]LinkState, len(topo.Links))
	for id := range topo.Links {
		l := &topo.Links[id]
		s.chunkTime = append(s.chunkTime, uint64(simkernel.AtRate(uint64(p.ChunkBytes), l.Params.Bandwidth)))
		s.hopDelay = append(s.hopDelay, l.Params.Latency+s.forward(l))
		s.controlQueues = append(s.controlQueues, !isEFAGroup(l.Group))
	}
	if cfg.Devices <= denseLast {
		s.st.Last = make([]uint64, cfg.Devices*cfg.Devices)
	} else {
		s.st.LastMap = map[uint64]uint64{}
	}
	if s.hLand, err = s.engine.Register("fabric-land", simkernel.HandlerFunc(func(_ *simkernel.Engine, arg uint64) { s.land(int(arg)) })); err != nil {
		return nil, err
	}
	if s.hFault, err = s.engine.Register("fabric-fault", simkernel.HandlerFunc(func(_ *simkernel.Engine, arg uint64) { s.fault(int(arg)) })); err != nil {
		return nil, err
	}
	if err := s.addDevices(); err != nil {
		return nil, err
	}
	return s, nil
}

// resolve checks a configuration and fills its defaults — the kind, the
// parameters, the DMA timing, the device id — and builds its topology,
// refusing one whose devices are not all joined.
func resolve(cfg Config) (Config, Params, *Topology, error) {
	if !cfg.Generation.Valid() {
		return cfg, Params{}, nil, fmt.Errorf("fabric: %w %d", hwarch.ErrUnknownGeneration, uint8(cfg.Generation))
	}
	p := DefaultParamsOf(cfg.Generation, cfg.DeviceID)
	if cfg.Params != nil {
		p = *cfg.Params
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 1
	}
	if cfg.Nodes < 1 || cfg.Nodes > hwarch.MaxFabricDevices {
		return cfg, p, nil, fmt.Errorf("fabric: Nodes %d (1..%d): %w", cfg.Nodes, hwarch.MaxFabricDevices, ErrConfig)
	}
	if cfg.Kind == KindAuto {
		cfg.Kind = AutoKind(cfg.Generation, cfg.Devices/cfg.Nodes)
	}
	if err := p.Validate(cfg.Kind); err != nil {
		return cfg, p, nil, err
	}
	switch {
	case p.Endpoints == EndpointsIdeal && cfg.DMA == (dma.Timing{}):
		cfg.DMA = dma.Timing{Ideal: true} // the parity mode's engines take no time
	case p.Endpoints == EndpointsIdeal && !cfg.DMA.Ideal:
		return cfg, p, nil, fmt.Errorf("fabric: ideal endpoints with a DMA timing of its own (%+v): the parity mode's engines take no time (dma.Timing{Ideal: true}, or leave it zero): %w", cfg.DMA, ErrConfig)
	case cfg.DMA == (dma.Timing{}):
		cfg.DMA = dma.DefaultTiming(cfg.Generation)
	}
	if err := cfg.DMA.Validate(); err != nil {
		return cfg, p, nil, fmt.Errorf("fabric: DMA timing: %w: %w", err, ErrConfig)
	}
	topo, err := BuildNodes(cfg.Kind, cfg.Generation, cfg.Devices, cfg.Nodes, p)
	if err != nil {
		return cfg, p, nil, err
	}
	if err := topo.Connected(); err != nil {
		return cfg, p, nil, err
	}
	if cfg.HostPorts != nil && len(cfg.HostPorts) != cfg.Devices {
		return cfg, p, nil, fmt.Errorf("fabric: %d host ports for %d devices: %w", len(cfg.HostPorts), cfg.Devices, ErrConfig)
	}
	for i, h := range cfg.HostPorts {
		if h == nil {
			return cfg, p, nil, fmt.Errorf("fabric: no host port for device %d: %w", i, ErrConfig)
		}
	}
	if cfg.DeviceID == 0 {
		if cfg.DeviceID, err = hwarch.DefaultDeviceID(cfg.Generation); err != nil {
			return cfg, p, nil, err
		}
	} else if g, err := hwarch.GenerationOfDevice(hwarch.VendorAmazon, cfg.DeviceID); err != nil || g != cfg.Generation {
		return cfg, p, nil, fmt.Errorf("fabric: device id %#04x is not a %s device: %w", cfg.DeviceID, cfg.Generation, ErrConfig)
	}
	return cfg, p, topo, nil
}

// addDevices builds the system's devices (device index i gets the routing
// id the driver maps to i, or past the driver's 64 its index:
// hwarch.WhatIfRoutingID) on its engine and lock, each joined to the
// fabric through its port.
func (s *System) addDevices() error {
	cfg := s.cfg
	for i := range cfg.Devices {
		rid, err := hwarch.WhatIfRoutingID(cfg.DeviceID, i) // a what-if device past the driver's 64 keeps its index
		if err != nil {
			return fmt.Errorf("fabric: %w", err)
		}
		d, err := sim.NewWiredDevice(sim.DeviceConfig{
			Name: s.topo.Nodes[i].Name, Generation: cfg.Generation, DeviceID: cfg.DeviceID, Revision: cfg.Revision,
			RoutingID: uint32(rid), DMA: cfg.DMA, TimingOnly: cfg.TimingOnly, Ready: cfg.Ready, MMIO: s.p.mmio(),
		}, sim.Wiring{Host: s.hostOf(i), Engine: s.engine, Lock: &s.mu})
		if err != nil {
			return fmt.Errorf("fabric: device %d: %w", i, err)
		}
		s.st.Reservations = append(s.st.Reservations, nil) // grown by slot as the device's queues reserve
		pt := &port{s: s, dev: i, lastDst: -1}
		d.AttachFabric(pt)
		s.devs = append(s.devs, d)
		s.ports = append(s.ports, pt)
	}
	return nil
}

// hostOf is device i's host port: its own when Config.HostPorts gives one,
// else the system's shared host memory.
func (s *System) hostOf(i int) sim.HostPort {
	if s.cfg.HostPorts != nil {
		return s.cfg.HostPorts[i]
	}
	return s.host
}

// Device returns device index i.
func (s *System) Device(i int) *sim.Device { return s.devs[i] }

// Devices returns the devices by index.
func (s *System) Devices() []*sim.Device { return append([]*sim.Device(nil), s.devs...) }

// Topology returns the system's topology.
func (s *System) Topology() *Topology { return s.topo }

// Params returns the fabric's parameters.
func (s *System) Params() Params { return s.p }

// Host returns the host memory the devices share.
func (s *System) Host() *sim.HostMemory { return s.host }

// Now returns the system's virtual time.
func (s *System) Now() simkernel.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engine.Now()
}

// Advance runs the system for d of virtual time.
func (s *System) Advance(d simkernel.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.engine.RunUntil(s.engine.Now() + d)
	if s.rec != nil {
		s.rec.flush(s.captureHorizon())
	}
}

// Stats returns the fabric's counters.
func (s *System) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Stats
}

// LastLanding returns when the last write booked on the fabric lands (0 if
// none was): the latest of the per-path landing times that keep each path
// in order. Stats.Bytes counts a write when it is booked, so the writes it
// counts have all landed (or been lost) only once Now reaches this time.
func (s *System) LastLanding() simkernel.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t uint64
	for _, v := range s.st.Last {
		t = max(t, v)
	}
	for _, v := range s.st.LastMap {
		t = max(t, v)
	}
	return simkernel.Time(t)
}

// Link returns a copy of a link's state.
func (s *System) Link(id int) (LinkState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 0 || id >= len(s.st.Links) {
		return LinkState{}, fmt.Errorf("fabric: link %d of %d: %w", id, len(s.st.Links), ErrConfig)
	}
	ls := s.st.Links[id]
	ls.Spans, ls.Queue = slices.Clone(ls.Spans), slices.Clone(ls.Queue)
	return ls, nil
}

// SetLinkDown takes a link down (or brings it back): new writes over it are
// refused with ErrLinkDown naming it, and writes in flight on it are lost.
// Both directions of a physical link are separate links; LinkBetween finds
// them.
func (s *System) SetLinkDown(id int, down bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 0 || id >= len(s.st.Links) {
		return fmt.Errorf("fabric: link %d of %d: %w", id, len(s.st.Links), ErrConfig)
	}
	s.setDown(id, down)
	return nil
}

// setDown takes link id down or brings it back, keeping the count of links
// down.
func (s *System) setDown(id int, down bool) {
	l := &s.st.Links[id]
	switch {
	case down && !l.Down:
		s.down++
	case !down && l.Down:
		s.down--
	}
	l.Down = down
}

// countDown counts the links down again, after the links were replaced
// (Restore).
func (s *System) countDown() {
	s.down = 0
	for i := range s.st.Links {
		if s.st.Links[i].Down {
			s.down++
		}
	}
}

// LinkBetween returns the directed link from node a to node b.
func (s *System) LinkBetween(a, b int) (int, bool) { return s.topo.LinkBetween(a, b) }

// Reserve implements dma.Fabric for the port's device.
func (pt *port) Reserve(e, q int, dst uint64, n int, start, sent simkernel.Time) (injected, lands simkernel.Time, err error) {
	in, at, err := pt.reserve(e, q, dst, n, uint64(start), uint64(sent))
	return simkernel.Time(in), simkernel.Time(at), err
}

// reserve is Reserve in the picoseconds the fabric's state keeps.
func (pt *port) reserve(e, q int, dst uint64, n int, start, sent uint64) (injected, lands uint64, err error) {
	s := pt.s
	dd, addr, err := s.resolve(pt.dev, dst)
	if err != nil {
		return 0, 0, err
	}
	path, err := pt.path(dd)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", err, dma.ErrNeighbour)
	}
	if e < 0 || q < 0 || q >= udma.Queues || e*udma.Queues+q >= s.slots() {
		return 0, 0, fmt.Errorf("fabric: %s engine %d queue %d: %w", s.topo.Nodes[pt.dev].Name, e, q, udma.ErrEngine)
	}
	r := s.slot(pt.dev, e*udma.Queues+q)
	c := noSpine
	if s.spray {
		c = s.chooseSpine(path, start)
	}
	// A refused write changes nothing: neither its NIC's turn nor the
	// slot's path buffer, which a reservation not yet posted may hold.
	if id := s.downLinkWith(path, c); id >= 0 {
		return 0, 0, fmt.Errorf("fabric: %s → %s: link %s: %w: %w", s.topo.Nodes[pt.dev].Name, s.topo.Nodes[dd].Name, s.topo.LinkName(id), ErrLinkDown, dma.ErrNeighbour)
	}
	if c.j >= 0 {
		path = s.takeSpine(r, path, c)
	}
	// The slot's fields are stored one by one, not as one Reservation
	// built from its old hops and sprayed: stores only, with no load of a
	// slot that has mostly left the CPU's caches since its last write
	// (r.hops[:0] stores the length alone; sprayed is kept as it is).
	r.Valid, r.Start, r.Dst, r.Addr, r.Path, r.Lands = true, start, dd, addr, path, 0
	r.hops = r.hops[:0]
	var hops *[]uint64
	if s.rec != nil {
		hops = &r.hops
	}
	var before uint64 // the bytes of the message this write continues (parity mode)
	msgs := s.p.Endpoints == EndpointsIdeal && s.p.Model == Aware
	key := uint64(pt.dev)<<32 | uint64(e*udma.Queues+q)
	if msgs {
		if m, ok := s.st.Messages[key]; ok && m.Dst == dd && m.Next == addr && m.Injected == start {
			before = m.Bytes
		}
	}
	injected, lands = s.timingAfter(path, n, before, start, sent, hops)
	if msgs {
		if s.st.Messages == nil {
			s.st.Messages = map[uint64]Message{}
		}
		s.st.Messages[key] = Message{Dst: dd, Next: addr + uint64(n), Injected: injected, Bytes: before + uint64(n)}
	}
	lands = s.inOrder(pt.dev, dd, lands)
	r.Lands = lands
	s.st.Stats.Transfers++
	s.st.Stats.Bytes += uint64(n)
	return injected, lands, nil
}

// spineChoice is the spine a write that crosses the EFA network's spines
// goes up to under RouteSpray or RouteAdaptive (chooseSpine): j, or −1
// when the write crosses no spine or no spine has both its links of the
// write's path up; and where: the path's leaf → spine link is at i (its
// spine → leaf link at i+1), sent by NIC nic from leaf from to leaf to,
// the topology's path taking spine spine.
type spineChoice struct{ j, i, nic, spine, from, to int }

// noSpine is the choice of a write that crosses no spine.
var noSpine = spineChoice{j: -1}

// chooseSpine returns the spine a write on path starting at start goes up
// to (nextSpine), changing nothing: the NIC's turn moves only when the
// write is reserved (takeSpine).
func (s *System) chooseSpine(path []int, start uint64) spineChoice {
	i, nic, spine, from, to, ok := s.topo.Scale.spineCrossing(s.topo, path)
	if !ok {
		return noSpine
	}
	return spineChoice{j: s.nextSpine(nic, from, to, start), i: i, nic: nic, spine: spine, from: from, to: to}
}

// downLinkWith is downLink of path with c's spine in place of the one the
// path takes: the first link down of the path's other links (c's two are
// up, or nextSpine would not have chosen it), or -1. With no spine chosen
// it is downLink(path): a write none of whose spines is up is refused
// naming a link of the topology's path.
func (s *System) downLinkWith(path []int, c spineChoice) int {
	if c.j < 0 || c.j == c.spine {
		return s.downLink(path)
	}
	if s.down == 0 {
		return -1
	}
	for k, id := range path {
		if k != c.i && k != c.i+1 && s.st.Links[id].Down {
			return id
		}
	}
	return -1
}

// takeSpine takes spine c.j for a write being reserved on path: its NIC's
// turn moves past it (state.SprayNext), and the path returned is path
// itself when it takes that spine already, else path with its leaf →
// spine → leaf links moved to c.j, built in r's own buffer.
func (s *System) takeSpine(r *Reservation, path []int, c spineChoice) []int {
	so := s.topo.Scale
	if s.st.SprayNext == nil {
		s.st.SprayNext = so.sprayStart()
	}
	s.st.SprayNext[c.nic] = uint32((c.j + 1) % so.Spines)
	if c.j == c.spine {
		return path
	}
	r.sprayed = append(r.sprayed[:0], path...)
	r.sprayed[c.i], r.sprayed[c.i+1] = int(so.leafUp[c.from][c.j]), int(so.spineDown[c.j][c.to])
	return r.sprayed
}

// nextSpine returns the spine a write of NIC nic from leaf from to leaf
// to, starting at start, goes up to, or −1 when no spine has both its
// links of the write's path up. Of the spines whose two links are up,
// taken from the NIC's turn (state.SprayNext) on: under RouteSpray the
// first; under RouteAdaptive the one whose link up from leaf from is
// booked until the earliest time, no earlier than start (bookedUntil) —
// the first of those equally free, so that over idle links it sprays.
func (s *System) nextSpine(nic, from, to int, start uint64) int {
	so := s.topo.Scale
	first := so.firstTurn(nic)
	if s.st.SprayNext != nil {
		first = int(s.st.SprayNext[nic])
	}
	best, bestFree := -1, uint64(0)
	for k := range so.Spines {
		j := (first + k) % so.Spines
		up := so.leafUp[from][j]
		if s.st.Links[up].Down || s.st.Links[so.spineDown[j][to]].Down {
			continue
		}
		if !s.adaptive {
			return j
		}
		if free := max(s.st.Links[up].bookedUntil(), start); best < 0 || free < bestFree {
			best, bestFree = j, free
		}
	}
	return best
}

// largestStep returns the largest step t[k+1] − t[k] of a table, or ^0
// if the table ever decreases (readStep).
func largestStep(t []uint64) uint64 {
	var step uint64
	for k := 1; k < len(t); k++ {
		if t[k] < t[k-1] {
			return ^uint64(0)
		}
		step = max(step, t[k]-t[k-1])
	}
	return step
}

// denseLast is the largest system whose per-path landing times are kept in
// a dense table.
const denseLast = 1024

// inOrder keeps the writes of one path landing in the order they were
// sent: it returns max(lands, the path's last landing) and records it.
func (s *System) inOrder(src, dst int, lands uint64) uint64 {
	if s.st.Last != nil {
		p := &s.st.Last[src*s.topo.Devices+dst]
		*p = max(*p, lands)
		return *p
	}
	key := uint64(src)<<32 | uint64(dst)
	v := max(s.st.LastMap[key], lands)
	s.st.LastMap[key] = v
	return v
}

// Post implements dma.Fabric: the write lands at lands.
func (pt *port) Post(e, q int, dst uint64, n int, p []byte, red udma.Reduce, at simkernel.Time) error {
	s, lands := pt.s, uint64(at)
	i := e*udma.Queues + q
	if e < 0 || q < 0 || q >= udma.Queues || i >= len(pt.res()) || !pt.res()[i].Valid || pt.res()[i].Lands != lands {
		return fmt.Errorf("fabric: %s engine %d queue %d posts a write it did not reserve: %w", s.topo.Nodes[pt.dev].Name, e, q, dma.ErrNeighbour)
	}
	r := &pt.res()[i]
	r.Valid = false
	d := Delivery{Used: true, Src: pt.dev, Dst: r.Dst, Addr: r.Addr, Len: n, Data: p, Reduce: red, Path: r.Path, Lands: lands}
	s.record(e, q, &d, r.hops)
	if p != nil && len(r.Path) > 0 && len(r.sprayed) > 0 && &r.Path[0] == &r.sprayed[0] {
		d.Path = slices.Clone(r.Path) // the slot's buffer is its next write's
	}
	if p == nil {
		// Timing-only: nothing lands but the time already booked, so no
		// event is needed; such a write is counted as landed when posted.
		s.st.Stats.Landed++
		return nil
	}
	var slot int
	if k := len(s.st.Free); k > 0 {
		slot = s.st.Free[k-1]
		s.st.Free = s.st.Free[:k-1]
		s.st.InFlight[slot] = d
	} else {
		slot = len(s.st.InFlight)
		s.st.InFlight = append(s.st.InFlight, d)
	}
	if err := s.engine.Schedule(simkernel.Time(lands), s.hLand, uint64(slot)); err != nil {
		s.release(slot)
		return fmt.Errorf("fabric: %w", err)
	}
	return nil
}

func (s *System) release(slot int) {
	s.st.InFlight[slot] = Delivery{}
	s.st.Free = append(s.st.Free, slot)
}

// land completes a write in flight: lost if a link of its path is down or
// the destination is not ready, else written (combined) into the
// destination's memory.
func (s *System) land(slot int) {
	if slot < 0 || slot >= len(s.st.InFlight) || !s.st.InFlight[slot].Used {
		return
	}
	d := s.st.InFlight[slot]
	s.release(slot)
	if id := s.downLink(d.Path); id >= 0 {
		s.st.Stats.Dropped++
		s.st.Stats.LastError = fmt.Sprintf("%s → %s: write of %d bytes at %#x lost: link %s is down",
			s.topo.Nodes[d.Src].Name, s.topo.Nodes[d.Dst].Name, d.Len, d.Addr, s.topo.LinkName(id))
		return
	}
	if err := s.devs[d.Dst].Land(d.Addr, d.Data, d.Reduce); err != nil {
		if errors.Is(err, sim.ErrNotReady) {
			s.st.Stats.Dropped++
		} else {
			s.st.Stats.LandErrors++
		}
		s.st.Stats.LastError = fmt.Sprintf("%s → %s: %v", s.topo.Nodes[d.Src].Name, s.topo.Nodes[d.Dst].Name, err)
		return
	}
	s.st.Stats.Landed++
}
