package fabric

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/internal/snapenc"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// SnapshotVersion is the version of the snapshot format Save writes and
// Load accepts.
const SnapshotVersion = 15

// Snapshot is a whole system: its configuration, its virtual time and
// pending events, host memory, every device (memory pages, registers, DMA
// queues, NeuronCore engines), the fabric's links, writes in flight and
// reservations, and the faults scheduled. Restoring it and continuing gives
// exactly what the uninterrupted system would have given. A capture in
// progress is saved as its continuation (CaptureState): a capture set on
// the restored system picks it up.
type Snapshot struct {
	Version    int
	Generation hwarch.Generation
	Devices    int
	Nodes      int // nodes joined by the EFA network (version 8; Params.EFA too)
	Kind       Kind
	Params     Params
	Revision   uint8
	DeviceID   uint16 // PCI device id of every device (version 5)
	DMA        dma.Timing
	TimingOnly bool

	Engine simkernel.EngineState
	Host   sim.HostState
	Device []DeviceImage

	Links        []LinkState
	Last         []uint64
	LastMap      map[uint64]uint64
	InFlight     []Delivery
	Free         []int
	Stats        Stats
	Faults       []Fault
	Reservations []PortReservation
	// Messages are the DMA queues' messages in progress in the parity
	// mode (state.Messages), by device<<32 | engine·16 + queue.
	Messages map[uint64]Message
	// SourceBusy is, in the contention-free model, until when each
	// device's writes are booked on each link past the first of their
	// paths (state.SourceBusy), by device<<32 | link (version 13).
	SourceBusy map[uint64]uint64
	// SprayNext is, under RouteSpray, the spine each NIC's next write
	// across the spines goes up to (state.SprayNext), by NIC; empty until
	// one has crossed them (version 14).
	SprayNext []uint32
	// Capture is the continuation of the capture in progress at the
	// snapshot, or nil.
	Capture *CaptureState
}

// DeviceImage is one device of a system snapshot: its state without the
// configuration (the system rebuilds it), the events or the host memory
// (the system's, saved once).
type DeviceImage struct {
	Name      string
	RoutingID uint32
	Serial    uint64
	State     sim.DeviceState
	Regs, HBM simkernel.MemoryState
	// DMA is every DMA engine's state, those as their last reset left
	// them by their epoch alone (version 10; written in full before).
	DMA   dma.CompactState
	Cores []tpb.CoreState
}

// PortReservation is a reservation of a device's port: a write reserved by
// DMA engine queue Index (engine·16 + queue) and not yet posted, with its
// chunks' times on each link when a capture is on (its packets are
// recorded when it is posted).
type PortReservation struct {
	Device, Index int
	Reservation
	Hops []uint64
}

// Snapshot returns the system's whole state.
func (s *System) Snapshot() *Snapshot {
	s.mu.Lock()
	engine, host := s.engine.State(), s.host.State()
	// The runs of chunk arrivals over by now answer no control write from
	// now on: the snapshot keeps the others, and so does this system, so
	// that it goes on as the restored one does (their queues the same).
	for i := range s.st.Links {
		s.st.Links[i].settle(uint64(s.engine.Now()))
		s.st.Links[i].reindex()
	}
	st := s.st
	faults := append([]Fault(nil), s.st.Faults...)
	var res []PortReservation
	for i, pt := range s.ports {
		for j, r := range pt.res() {
			if r.Valid {
				var hops []uint64
				if s.rec != nil {
					hops = append(hops, r.hops...)
				}
				r.hops = nil
				res = append(res, PortReservation{Device: i, Index: j, Reservation: r, Hops: hops})
			}
		}
	}
	capture := s.rec.state(uint64(s.engine.Now()))
	s.mu.Unlock()
	snap := &Snapshot{
		Version: SnapshotVersion, Generation: s.cfg.Generation, Devices: s.cfg.Devices, Nodes: s.cfg.Nodes, Kind: s.cfg.Kind, Params: s.p,
		Revision: s.cfg.Revision, DeviceID: s.cfg.DeviceID, DMA: s.cfg.DMA, TimingOnly: s.cfg.TimingOnly,
		Engine: engine, Host: host,
		Links: cloneLinks(st.Links), Last: append([]uint64(nil), st.Last...),
		InFlight: append([]Delivery(nil), st.InFlight...), Free: append([]int(nil), st.Free...),
		Stats: st.Stats, Faults: faults, Reservations: res, Messages: maps.Clone(st.Messages), SourceBusy: maps.Clone(st.SourceBusy), SprayNext: slices.Clone(st.SprayNext), Capture: capture,
		Device: make([]DeviceImage, 0, len(s.devs)),
	}
	if st.LastMap != nil {
		snap.LastMap = make(map[uint64]uint64, len(st.LastMap))
		for k, v := range st.LastMap {
			snap.LastMap[k] = v
		}
	}
	for _, d := range s.devs {
		ds, dmaState := d.SnapshotInSystem()
		snap.Device = append(snap.Device, DeviceImage{Name: ds.Config.Name, RoutingID: ds.Config.RoutingID, Serial: ds.Config.Serial,
			State: ds.State, Regs: ds.Regs, HBM: ds.HBM, DMA: dmaState, Cores: ds.Cores})
	}
	return snap
}

// ErrSnapshot marks a snapshot that cannot be restored: a wrong version, a
// corrupted or truncated file, parts that do not fit together, state that
// cannot exist. It wraps [simkernel.ErrInvalidState], the sentinel of every
// model's refused state.
var ErrSnapshot = simkernel.InvalidStateOf("invalid system snapshot")

// Restore builds a system in the state a snapshot recorded. Every part is
// checked first — the configuration and parameters (rates positive, times
// at most units.MaxTimePS), the fabric's links, writes in flight, free
// slots, reservations, faults and capture, then each device's and the
// engine's own Restore — and a snapshot that fails any check builds
// nothing: the error wraps ErrSnapshot and names the field ("device 3:
// dma: restore: engine 2: BusyUntil …").
func Restore(snap *Snapshot) (*System, error) { return restore(snap, false) }

// restore is Restore; own gives the system snap's memory pages instead of
// copies (LoadWith, whose decoded snapshot is its own): the pages of a
// large snapshot are most of it, and restoring then takes no memory for
// them.
func restore(snap *Snapshot, own bool) (*System, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("fabric snapshot: "+format+": %w", append(args, ErrSnapshot)...)
	}
	// badErr keeps err's chain (units.ErrRange, sim.ErrInvalidState, …).
	badErr := func(where string, err error) error {
		return fmt.Errorf("fabric snapshot: %s%w: %w", where, err, ErrSnapshot)
	}
	if snap == nil {
		return nil, bad("no snapshot")
	}
	if snap.Version != SnapshotVersion {
		return nil, bad("version %d; this build reads version %d", snap.Version, SnapshotVersion)
	}
	if snap.Devices < 1 || snap.Devices > hwarch.MaxFabricDevices {
		return nil, bad("Devices %d: must be in 1..%d", snap.Devices, hwarch.MaxFabricDevices)
	}
	if snap.Nodes < 1 || snap.Nodes > snap.Devices || snap.Devices%snap.Nodes != 0 {
		return nil, bad("Nodes %d: must be in 1..%d and divide the %d devices", snap.Nodes, snap.Devices, snap.Devices)
	}
	if len(snap.Device) != snap.Devices {
		return nil, bad("%d device states for %d devices", len(snap.Device), snap.Devices)
	}
	if err := checkParams(&snap.Params); err != nil {
		return nil, badErr("Params: ", err)
	}
	if err := snap.DMA.Validate(); err != nil {
		return nil, badErr("DMA timing: ", err)
	}
	p := snap.Params
	s, err := New(Config{Generation: snap.Generation, Devices: snap.Devices, Nodes: snap.Nodes, Kind: snap.Kind, Params: &p, Revision: snap.Revision,
		DeviceID: snap.DeviceID, DMA: snap.DMA, TimingOnly: snap.TimingOnly, Ready: true})
	if err != nil {
		return nil, badErr("", err)
	}
	if err := s.checkSnapshot(snap); err != nil {
		return nil, badErr("", err)
	}
	for i, d := range s.devs {
		img, ds := snap.Device[i], sim.DeviceSnapshot{Config: d.Config(), System: true}
		if img.Name != ds.Config.Name || img.RoutingID != ds.Config.RoutingID || img.Serial != ds.Config.Serial {
			return nil, bad("device %d is %s (routing id %d), the system's is %s (routing id %d)", i, img.Name, img.RoutingID, ds.Config.Name, ds.Config.RoutingID)
		}
		full, err := img.DMA.Expand(hwarch.MustGeometry(snap.Generation).DMAEngines)
		if err != nil {
			return nil, badErr(fmt.Sprintf("device %d: ", i), err)
		}
		ds.State, ds.Regs, ds.HBM, ds.DMA, ds.Cores = img.State, img.Regs, img.HBM, full, img.Cores
		restoreDevice := d.RestoreInSystem
		if own {
			restoreDevice = d.RestoreInSystemOwned
		}
		if err := restoreDevice(ds); err != nil {
			return nil, badErr(fmt.Sprintf("device %d: ", i), err)
		}
	}
	restoreHost := s.host.Restore
	if own {
		restoreHost = s.host.RestoreOwned
	}
	if err := restoreHost(snap.Host); err != nil {
		return nil, badErr("host memory: ", err)
	}
	if err := s.engine.Restore(snap.Engine); err != nil {
		return nil, badErr("events: ", err)
	}
	s.st = state{Links: cloneLinks(snap.Links), Last: append([]uint64(nil), snap.Last...),
		InFlight: append([]Delivery(nil), snap.InFlight...), Free: append([]int(nil), snap.Free...), Stats: snap.Stats,
		Faults: append([]Fault(nil), snap.Faults...), Reservations: s.st.Reservations, Messages: maps.Clone(snap.Messages),
		SourceBusy: maps.Clone(snap.SourceBusy), SprayNext: slices.Clone(snap.SprayNext)}
	for i := range s.st.Links {
		s.st.Links[i].reindex() // the runs' bounds, which a snapshot does not keep
	}
	s.countDown()
	if s.st.Last == nil {
		s.st.LastMap = make(map[uint64]uint64, len(snap.LastMap))
		for k, v := range snap.LastMap {
			s.st.LastMap[k] = v
		}
	}
	for _, r := range snap.Reservations {
		slot := s.slot(r.Device, r.Index)
		*slot = r.Reservation
		slot.hops = r.Hops
	}
	s.resume = snap.Capture
	return s, nil
}

// checkParams checks what Params.Validate leaves to the caller: the model
// is one there is, and every bandwidth and time is in range.
func checkParams(p *Params) error {
	if p.Model != Aware && p.Model != Free {
		return fmt.Errorf("Model %d: not aware (%d) or free (%d)", p.Model, Aware, Free)
	}
	for _, t := range []struct {
		name string
		ps   uint64
	}{{"Endpoint", p.Endpoint}, {"Switch", p.Switch}} {
		if _, err := units.PS(t.name, t.ps); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		name  string
		lp    LinkParams
		minBW uint64 // 0: the link group only some kinds have (Params.Validate checks it on those)
	}{{"XY", p.XY, 1}, {"Z", p.Z, 1}, {"Ring", p.Ring, 1}, {"InServer", p.InServer, 1}, {"InterServer", p.InterServer, 1}, {"Link", p.Link, 1},
		{"InterRack", p.InterRack, 0}, {"SecondLevel", p.SecondLevel, 0}} {
		if _, err := units.Uint(l.name+".Bandwidth", l.lp.Bandwidth, l.minBW, units.MaxBandwidthBps); err != nil {
			return err
		}
		if _, err := units.PS(l.name+".Latency", l.lp.Latency); err != nil {
			return err
		}
	}
	if err := p.EFA.Validate(); err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"ServerSize", p.ServerSize}, {"PodPorts", p.PodPorts}, {"MaxLinksPerPodPort", p.MaxLinksPerPodPort}, {"InterServerLinks", p.InterServerLinks}, {"MaxFolds", p.MaxFolds}} {
		if _, err := units.Int(c.name, int64(c.v), 0, hwarch.MaxFabricDevices); err != nil {
			return err
		}
	}
	return nil
}

var faultNames = map[FaultKind]string{LinkDown: "link-down", LinkUp: "link-up", DeviceReset: "device-reset"}

// checkSnapshot checks the fabric's part of a snapshot against the system
// built from its configuration, naming the field that fails.
func (s *System) checkSnapshot(snap *Snapshot) error {
	c := snapshotCheck{s: s, snap: snap, nl: len(s.st.Links), nd: snap.Devices}
	for _, part := range []func() error{c.links, c.pathOrder, c.inFlight, c.reservations, c.messages, c.sourceBusy, c.sprayNext, c.faults, c.capture} {
		if err := part(); err != nil {
			return err
		}
	}
	return nil
}

// snapshotCheck checks the parts of a snapshot against the system built
// for it (nl links, nd devices), in this order: links, path order, writes
// in flight and free slots, reservations, parity-mode messages, faults, capture.
type snapshotCheck struct {
	s      *System
	snap   *Snapshot
	nl, nd int
}

// ps checks a time field.
func (snapshotCheck) ps(field string, v uint64) error {
	_, err := units.PS(field, v)
	return err
}

// path checks that a path names links of the system.
func (c snapshotCheck) path(where string, path []int) error {
	for i, id := range path {
		if id < 0 || id >= c.nl {
			return fmt.Errorf("%s: Path[%d]: link %d of %d", where, i, id, c.nl)
		}
	}
	return nil
}

func (c snapshotCheck) links() error {
	if len(c.snap.Links) != c.nl {
		return fmt.Errorf("Links: %d link states for %d links", len(c.snap.Links), c.nl)
	}
	for i, l := range c.snap.Links {
		if err := checkSpans(l.Spans); err != nil {
			return fmt.Errorf("Links[%d].Spans: %w", i, err)
		}
		if k := len(l.Spans); k > 0 {
			if err := c.ps(fmt.Sprintf("Links[%d].Spans[%d].End", i, k-1), l.Spans[k-1].End); err != nil {
				return err
			}
		}
		if err := c.ps(fmt.Sprintf("Links[%d].Busy", i), l.Busy); err != nil {
			return err
		}
		if err := checkArrivals(l.Queue); err != nil {
			return fmt.Errorf("Links[%d].Queue: %w", i, err)
		}
		for k, r := range l.Queue {
			if err := c.ps(fmt.Sprintf("Links[%d].Queue[%d]'s last chunk's crossing", i, k), r.lastEnd()); err != nil {
				return err
			}
			if err := c.ps(fmt.Sprintf("Links[%d].Queue[%d]'s last chunk's arrival", i, k), addTime(r.At, mulTime(r.N-1, r.Every))); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c snapshotCheck) pathOrder() error {
	last := c.s.st.Last
	switch {
	case (last != nil) != (c.snap.Last != nil) || len(c.snap.Last) != len(last):
		return fmt.Errorf("Last: path order table of %d entries, the system needs %d", len(c.snap.Last), len(last))
	case last != nil && len(c.snap.LastMap) != 0:
		return fmt.Errorf("LastMap: %d entries in a system of %d devices, which keeps the dense table", len(c.snap.LastMap), c.nd)
	}
	for i, t := range c.snap.Last {
		if err := c.ps(fmt.Sprintf("Last[%d]", i), t); err != nil {
			return err
		}
	}
	for k, t := range c.snap.LastMap {
		if src, dst := k>>32, k&0xFFFF_FFFF; src >= uint64(c.nd) || dst >= uint64(c.nd) {
			return fmt.Errorf("LastMap: key %#x: path %d → %d in a system of %d devices", k, src, dst, c.nd)
		}
		if err := c.ps(fmt.Sprintf("LastMap[%#x]", k), t); err != nil {
			return err
		}
	}
	return nil
}

func (c snapshotCheck) inFlight() error {
	free := 0
	for i, d := range c.snap.InFlight {
		where := fmt.Sprintf("InFlight[%d]", i)
		if !d.Used {
			if d.Len != 0 || d.Data != nil || d.Path != nil || d.Src != 0 || d.Dst != 0 || d.Addr != 0 || d.Lands != 0 || d.Reduce != (udma.Reduce{}) {
				return fmt.Errorf("%s: a free slot that holds a write", where)
			}
			free++
			continue
		}
		if err := c.delivery(where, d); err != nil {
			return err
		}
	}
	if len(c.snap.Free) != free {
		return fmt.Errorf("Free: %d free slots listed, %d slots are free", len(c.snap.Free), free)
	}
	seen := make(map[int]bool, len(c.snap.Free))
	for i, f := range c.snap.Free {
		if f < 0 || f >= len(c.snap.InFlight) || c.snap.InFlight[f].Used || seen[f] {
			return fmt.Errorf("Free[%d]: slot %d is not a free write slot (or is listed twice)", i, f)
		}
		seen[f] = true
	}
	return nil
}

// delivery checks one write in flight.
func (c snapshotCheck) delivery(where string, d Delivery) error {
	switch {
	case d.Src < 0 || d.Src >= c.nd || d.Dst < 0 || d.Dst >= c.nd:
		return fmt.Errorf("%s: devices %d → %d in a system of %d", where, d.Src, d.Dst, c.nd)
	case d.Len < 0 || uint64(d.Len) > simkernel.AddressLimit || d.Addr > simkernel.AddressLimit-uint64(d.Len):
		return fmt.Errorf("%s: %d bytes at %#x: outside the %d-bit device address space", where, d.Len, d.Addr, simkernel.AddressBits)
	case d.Data != nil && len(d.Data) != d.Len:
		return fmt.Errorf("%s: %d bytes of payload for a write of %d", where, len(d.Data), d.Len)
	}
	if r, err := udma.DecodeReduce(udma.ReduceMeta(d.Reduce)); err != nil || r != d.Reduce {
		return fmt.Errorf("%s: Reduce %+v: not a reduce the engines do", where, d.Reduce)
	}
	if err := c.ps(where+".Lands", d.Lands); err != nil {
		return err
	}
	return c.path(where, d.Path)
}

func (c snapshotCheck) reservations() error {
	held := map[[2]int]bool{}
	for i, r := range c.snap.Reservations {
		where := fmt.Sprintf("Reservations[%d]", i)
		switch {
		case r.Device < 0 || r.Device >= c.nd || r.Index < 0 || r.Index >= c.s.slots():
			return fmt.Errorf("%s: device %d slot %d: out of range", where, r.Device, r.Index)
		case held[[2]int{r.Device, r.Index}]:
			return fmt.Errorf("%s: device %d slot %d is reserved twice", where, r.Device, r.Index)
		case !r.Valid:
			return fmt.Errorf("%s: not valid (only valid reservations are saved)", where)
		case r.Dst < 0 || r.Dst >= c.nd:
			return fmt.Errorf("%s: destination device %d of %d", where, r.Dst, c.nd)
		case r.Addr >= simkernel.AddressLimit:
			return fmt.Errorf("%s: address %#x outside the %d-bit device address space", where, r.Addr, simkernel.AddressBits)
		}
		held[[2]int{r.Device, r.Index}] = true
		if err := c.ps(where+".Start", r.Start); err != nil {
			return err
		}
		if err := c.ps(where+".Lands", r.Lands); err != nil {
			return err
		}
		for j, h := range r.Hops {
			if err := c.ps(fmt.Sprintf("%s.Hops[%d]", where, j), h); err != nil {
				return err
			}
		}
		if err := c.path(where, r.Path); err != nil {
			return err
		}
	}
	return nil
}

func (c snapshotCheck) sourceBusy() error {
	if len(c.snap.SourceBusy) > 0 && c.snap.Params.Model != Free {
		return fmt.Errorf("SourceBusy: %d devices' turns on links outside the contention-free model", len(c.snap.SourceBusy))
	}
	for k, t := range c.snap.SourceBusy {
		if dev, id := k>>32, k&0xFFFF_FFFF; dev >= uint64(c.nd) || id >= uint64(len(c.snap.Links)) {
			return fmt.Errorf("SourceBusy: key %#x: device %d, link %d in a system of %d devices and %d links", k, dev, id, c.nd, len(c.snap.Links))
		}
		if err := c.ps(fmt.Sprintf("SourceBusy[%#x]", k), t); err != nil {
			return err
		}
	}
	return nil
}

// sprayNext checks the NICs' next spines: none but under RouteSpray or
// RouteAdaptive with spines, one per NIC, each a spine.
func (c snapshotCheck) sprayNext() error {
	if len(c.snap.SprayNext) == 0 {
		return nil
	}
	if !c.s.spray {
		return fmt.Errorf("SprayNext: %d NICs' next spines in a system whose writes are not sprayed over spines", len(c.snap.SprayNext))
	}
	so := c.s.topo.Scale
	if len(c.snap.SprayNext) != so.NICCount() {
		return fmt.Errorf("SprayNext: %d NICs' next spines in a network of %d NICs", len(c.snap.SprayNext), so.NICCount())
	}
	for i, j := range c.snap.SprayNext {
		if j >= uint32(so.Spines) {
			return fmt.Errorf("SprayNext[%d]: spine %d of %d", i, j, so.Spines)
		}
	}
	return nil
}

func (c snapshotCheck) messages() error {
	if len(c.snap.Messages) > 0 && (c.snap.Params.Endpoints != EndpointsIdeal || c.snap.Params.Model != Aware) {
		return fmt.Errorf("Messages: %d messages in progress outside the parity mode's aware model", len(c.snap.Messages))
	}
	for k, m := range c.snap.Messages {
		where := fmt.Sprintf("Messages[%#x]", k)
		dev, idx := k>>32, k&0xFFFF_FFFF
		switch {
		case dev >= uint64(c.nd) || idx >= uint64(c.s.slots()):
			return fmt.Errorf("%s: device %d queue slot %d: out of range", where, dev, idx)
		case m.Dst < 0 || m.Dst >= c.nd:
			return fmt.Errorf("%s: destination device %d of %d", where, m.Dst, c.nd)
		case m.Next > simkernel.AddressLimit || m.Bytes > simkernel.AddressLimit:
			return fmt.Errorf("%s: %d bytes up to %#x: outside the %d-bit device address space", where, m.Bytes, m.Next, simkernel.AddressBits)
		}
		if err := c.ps(where+".Injected", m.Injected); err != nil {
			return err
		}
	}
	return nil
}

func (c snapshotCheck) faults() error {
	for i, f := range c.snap.Faults {
		where := fmt.Sprintf("Faults[%d]", i)
		switch f.Kind {
		case LinkDown, LinkUp:
			if f.Link < 0 || f.Link >= c.nl {
				return fmt.Errorf("%s: %s on link %d of %d", where, faultNames[f.Kind], f.Link, c.nl)
			}
		case DeviceReset:
			if f.Device < 0 || f.Device >= c.nd {
				return fmt.Errorf("%s: device reset of device %d of %d", where, f.Device, c.nd)
			}
		default:
			return fmt.Errorf("%s: Kind %d: not link-down (%d), link-up (%d) or device-reset (%d)", where, f.Kind, LinkDown, LinkUp, DeviceReset)
		}
		if err := c.ps(where+".At", uint64(f.At)); err != nil {
			return err
		}
	}
	return nil
}

func (c snapshotCheck) capture() error {
	cs := c.snap.Capture
	if cs == nil {
		return nil
	}
	if err := c.ps("Capture.From", cs.From); err != nil {
		return err
	}
	for i, p := range cs.Pending {
		where := fmt.Sprintf("Capture.Pending[%d]", i)
		if int(p.Header.Src) >= c.nd || int(p.Header.Dst) >= c.nd || len(p.Payload) > int(p.Header.Length) {
			return fmt.Errorf("%s: devices %d → %d, %d bytes: out of range", where, p.Header.Src, p.Header.Dst, len(p.Payload))
		}
		if err := c.ps(where+".At", p.At); err != nil {
			return err
		}
	}
	return nil
}

// The snapshot file (docs/scenarios.md §Snapshot files) is a 72-byte header
// and a payload:
//
//	offset  size  field
//	0       8     magic "NSSNAP\x00\x01"
//	8       4     format version (u32, little-endian): SnapshotVersion
//	12      4     reserved, 0
//	16      8     payload length in bytes (u64): the zstd-compressed encoding
//	24      8     decoded length in bytes (u64): the encoding once decompressed
//	32      8     layout fingerprint (u64): snapenc.Fingerprint of Snapshot
//	40      32    SHA-256 of bytes 8..39 of the header and of the payload
//
// The payload is the Snapshot in the internal/snapenc encoding, compressed
// with zstd. Version 1 files (a 52-byte header and a gob encoding, which
// cannot be decoded safely from untrusted input), version 2 files (host
// memory in a map), version 3 files (whose links kept one free time
// instead of busy spans), version 4 files (without the device id, and
// device state without its boot count and function-level reset counter)
// version 5 files (without the endpoint mode and the ideal DMA timing),
// version 6 files (fabric parameters without Params.InterRack),
// version 7 files (without the nodes and the EFA network, Snapshot.Nodes
// and Params.EFA), version 8 files (fabric parameters without
// Params.SecondLevel), version 9 files (every DMA engine's state written
// in full, where DeviceImage.DMA now keeps an engine as its reset left it
// by its epoch: dma.CompactState), version 10 files (links without
// their chunks' arrivals, LinkState.Queue), version 11 files (links
// without LinkState.Folds), version 12 files (without Snapshot.SourceBusy)
// and version 13 files (EFA parameters without EFAParams.Routing) are
// refused by name.
var snapshotMagic = [8]byte{'N', 'S', 'S', 'N', 'A', 'P', 0, 1}

const (
	snapshotHeader = 72
	sumOffset      = 40
)

// DefaultMaxSnapshotBytes is the loader's default limit (LoadOptions):
// 4 GiB of decoded state and of the system built from it.
const DefaultMaxSnapshotBytes int64 = 4 << 30

// deviceBuildBytes bounds what building one device of a restored system
// takes besides its saved state (0.2 MiB measured for Trn1, 0.65 MiB for
// Trn2 and Trn3): Load charges it against its limit before building.
const deviceBuildBytes = 1 << 20

// snapshotWindow is the zstd window Save compresses with and the largest
// Load accepts: the decompressor's memory, whatever a file's frame says.
const snapshotWindow = 8 << 20

// LoadBuffers bounds what a load takes besides its limit
// (LoadOptions.MaxBytes), whatever the file: the decompressor (its
// snapshotWindow of history and its blocks) and the read buffers.
const LoadBuffers = 10 << 20

// payloadBuffer is the buffer a snapshot's payload is read through.
const payloadBuffer = 64 << 10

// snapshotLayout is the fingerprint of the Snapshot type's encoding.
var snapshotLayout = sync.OnceValues(func() (uint64, error) {
	return snapenc.Fingerprint(reflect.TypeFor[Snapshot]())
})

// LoadOptions bound what Load reads. The zero value takes the defaults.
type LoadOptions struct {
	// MaxBytes bounds the memory a snapshot may make Load take: its
	// decoded state (every slice, map, string and pointed-to value the
	// decoder makes, counted before it is made: snapenc.Limits) and the
	// system built from it (deviceBuildBytes a device) together. The
	// payload and decoded lengths its header declares must each be within
	// it too (checked before anything is read). The file is never held:
	// its payload streams through the checksum and the decompressor into
	// the decoder, which stops where the declared length ends, and the
	// restored system takes the decoded memory pages over instead of
	// copying them. So whatever a file says, Load takes at most MaxBytes
	// plus LoadBuffers for it, but for the models' own copies of the
	// state's other parts as they restore them (docs/scenarios.md
	// §Snapshot files). 0 takes DefaultMaxSnapshotBytes; a negative limit
	// is refused.
	MaxBytes int64
}

// ErrSnapshotLimit marks a snapshot refused because it passes a limit of
// LoadOptions. Errors wrapping it wrap ErrSnapshot too.
var ErrSnapshotLimit = errors.New("snapshot over the loader's limit")

// countingWriter counts what passes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ErrNotSaveable is returned by Save for a system whose devices reach host
// memory that is not the system's (Config.HostPorts).
var ErrNotSaveable = errors.New("the system cannot be saved")

// Save writes the system's snapshot to w. A system built with its own host
// ports per device (Config.HostPorts) is refused (ErrNotSaveable). The
// header, which gives the payload's length and checksum, comes first, so
// Save holds the compressed payload until it is written; SaveFile does not.
func (s *System) Save(w io.Writer) error {
	var raw bytes.Buffer
	decoded, err := s.encodePayload(&raw)
	if err != nil {
		return err
	}
	hdr, err := snapshotHeaderOf(int64(raw.Len()), decoded, func(h hash.Hash) error {
		h.Write(raw.Bytes())
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err = w.Write(raw.Bytes())
	return err
}

// SnapshotFile is a file a snapshot is written into from its start: its
// header is written last, in place, and its payload read back for the
// checksum (internal/output's File is one).
type SnapshotFile interface {
	io.Writer
	io.WriterAt
	io.ReaderAt
}

// SaveFile is Save into an empty file f, without holding the compressed
// payload: a header of zeros, then the payload streamed from the
// compressor into f, then the payload read back through the checksum, and
// the header written over the zeros. The file is the same as Save writes.
func (s *System) SaveFile(f SnapshotFile) error {
	var zero [snapshotHeader]byte
	if _, err := f.Write(zero[:]); err != nil {
		return err
	}
	cw := &countingWriter{w: f}
	decoded, err := s.encodePayload(cw)
	if err != nil {
		return err
	}
	hdr, err := snapshotHeaderOf(cw.n, decoded, func(h hash.Hash) error {
		_, err := io.Copy(h, io.NewSectionReader(f, snapshotHeader, cw.n))
		return err
	})
	if err != nil {
		return err
	}
	_, err = f.WriteAt(hdr[:], 0)
	return err
}

// encodePayload writes the system's snapshot, encoded and compressed, to w
// and returns the encoding's length before compression.
func (s *System) encodePayload(w io.Writer) (decoded int64, err error) {
	if s.cfg.HostPorts != nil {
		return 0, fmt.Errorf("fabric snapshot: its devices' DMA reaches host memory outside the system (Config.HostPorts), which a snapshot cannot keep: %w", ErrNotSaveable)
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(snapshotWindow))
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: zw}
	if err := snapenc.Encode(cw, s.Snapshot()); err != nil {
		zw.Close()
		return 0, fmt.Errorf("fabric snapshot: encoding: %w", err)
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	return cw.n, nil
}

// snapshotHeaderOf is the header of a payload of n bytes decoding to
// decoded bytes, whose checksum sum completes by writing the payload into
// the hash begun with the header's fields.
func snapshotHeaderOf(n, decoded int64, sum func(hash.Hash) error) ([snapshotHeader]byte, error) {
	var hdr [snapshotHeader]byte
	layout, err := snapshotLayout()
	if err != nil {
		return hdr, fmt.Errorf("fabric snapshot: %w", err)
	}
	copy(hdr[:8], snapshotMagic[:])
	binary.LittleEndian.PutUint32(hdr[8:], SnapshotVersion)
	binary.LittleEndian.PutUint64(hdr[16:], uint64(n))
	binary.LittleEndian.PutUint64(hdr[24:], uint64(decoded))
	binary.LittleEndian.PutUint64(hdr[32:], layout)
	h := snapshotHash(hdr[:])
	if err := sum(h); err != nil {
		return hdr, fmt.Errorf("fabric snapshot: reading the payload back for its checksum: %w", err)
	}
	copy(hdr[sumOffset:], h.Sum(nil))
	return hdr, nil
}

// snapshotHash is the checksum begun with a header's fields: the payload
// follows.
func snapshotHash(hdr []byte) hash.Hash {
	h := sha256.New()
	h.Write(hdr[8:sumOffset])
	return h
}

// Load reads a snapshot file and restores the system, within the default
// limits (LoadWith).
func Load(r io.Reader) (*System, error) { return LoadWith(r, LoadOptions{}) }

// LoadWith reads a snapshot file and restores the system. A file that is
// not a snapshot, of another version or layout, truncated, corrupted, over
// a limit of o, or whose state cannot exist is refused with an error
// wrapping ErrSnapshot that names what is wrong, and nothing is built.
//
// r is read once, as a stream, up to one byte past the payload: the
// checksum is computed as the payload passes to the decompressor, and the
// rest of the payload is read for it whatever the decoder met. So a
// truncated, overlong or corrupted file is refused as such, and before
// anything is built, even where decoding its bytes failed first.
func LoadWith(r io.Reader, o LoadOptions) (*System, error) {
	limit := o.MaxBytes
	if limit < 0 {
		return nil, badSnapshot("a limit of %d bytes", limit)
	}
	if limit == 0 {
		limit = DefaultMaxSnapshotBytes
	}
	var hdr [snapshotHeader]byte
	n, size, err := readSnapshotHeader(r, &hdr, limit)
	if err != nil {
		return nil, err
	}
	payload := newPayloadReader(r, &hdr, n)
	snap, charged, decodeErr := decodeSnapshot(payload, size, limit)
	if err := payload.check(); err != nil {
		return nil, err
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	// the page tables that will hold the decoded pages: not in the
	// decoded state, and a page alone in its 2 MiB span costs a leaf
	// larger than itself
	tables := snap.Host.Memory.TableBytes()
	for i := range snap.Device {
		tables += snap.Device[i].Regs.TableBytes() + snap.Device[i].HBM.TableBytes()
	}
	if tables > limit-charged {
		return nil, fmt.Errorf("fabric snapshot: the page tables of its memory pages take %d bytes, over the %d bytes its %d bytes of decoded state leave of the limit of %d bytes (LoadOptions.MaxBytes): %w: %w",
			tables, limit-charged, charged, limit, ErrSnapshotLimit, ErrSnapshot)
	}
	charged += tables
	if left := limit - charged; int64(snap.Devices) > left/deviceBuildBytes {
		return nil, fmt.Errorf("fabric snapshot: a system of %d devices takes about %d MiB to build, over the %d bytes its %d bytes of decoded state leave of the limit of %d bytes (LoadOptions.MaxBytes): %w: %w",
			snap.Devices, int64(snap.Devices)*deviceBuildBytes>>20, left, charged, limit, ErrSnapshotLimit, ErrSnapshot)
	}
	return restore(snap, true)
}

// payloadReader reads a snapshot's payload from its file as a stream and
// checksums it as it goes (after the header's fields), so the file is
// checked without being held.
type payloadReader struct {
	file    io.Reader
	r       *bufio.Reader // the payload: at most want bytes of file
	hdr     *[snapshotHeader]byte
	sum     hash.Hash
	n, want uint64 // bytes read; the payload length the header declares
	err     error  // the first error reading the file, but its end
}

func newPayloadReader(file io.Reader, hdr *[snapshotHeader]byte, n uint64) *payloadReader {
	return &payloadReader{file: file, r: bufio.NewReaderSize(io.LimitReader(file, int64(n)), payloadBuffer),
		hdr: hdr, sum: snapshotHash(hdr[:]), want: n}
}

func (p *payloadReader) Read(b []byte) (int, error) {
	k, err := p.r.Read(b)
	p.sum.Write(b[:k])
	p.n += uint64(k)
	if err != nil && err != io.EOF && p.err == nil {
		p.err = err
	}
	return k, err
}

// check reads what the decompressor left of the payload, and a byte past
// it, and checks the file: the payload as long as the header says,
// nothing after it, and its checksum.
func (p *payloadReader) check() error {
	if _, err := io.Copy(io.Discard, p); err == nil && p.n == p.want {
		var b [1]byte
		switch k, err := io.ReadFull(p.file, b[:]); {
		case k == 1:
			p.n++
		case err != io.EOF && p.err == nil:
			p.err = err
		}
	}
	switch {
	case p.err != nil:
		return badSnapshot("payload: %v", p.err)
	case p.n != p.want:
		return badSnapshot("payload of %d bytes, the header says %d (truncated or trailing data)", p.n, p.want)
	case !bytes.Equal(p.sum.Sum(nil), p.hdr[sumOffset:]):
		return badSnapshot("checksum mismatch (the file is corrupted)")
	}
	return nil
}

// badSnapshot is a refusal of a snapshot file, wrapping ErrSnapshot.
func badSnapshot(format string, args ...any) error {
	return fmt.Errorf("fabric snapshot: "+format+": %w", append(args, ErrSnapshot)...)
}

// readSnapshotHeader reads a snapshot's header into hdr and checks it —
// the magic, this build's version (an older one named with why it is no
// longer read), the reserved word, the payload's length n and decoded
// size within limit, this build's layout fingerprint — and returns n and
// the size.
func readSnapshotHeader(r io.Reader, hdr *[snapshotHeader]byte, limit int64) (n, size uint64, err error) {
	if _, err := io.ReadFull(r, hdr[:12]); err != nil {
		return 0, 0, badSnapshot("header: %v", err)
	}
	if !bytes.Equal(hdr[:8], snapshotMagic[:]) {
		return 0, 0, badSnapshot("not a neuronsim snapshot (magic % x)", hdr[:8])
	}
	if err := checkSnapshotVersion(binary.LittleEndian.Uint32(hdr[8:])); err != nil {
		return 0, 0, err
	}
	if _, err := io.ReadFull(r, hdr[12:]); err != nil {
		return 0, 0, badSnapshot("header: %v", err)
	}
	if res := binary.LittleEndian.Uint32(hdr[12:]); res != 0 {
		return 0, 0, badSnapshot("reserved header word %#x (must be 0)", res)
	}
	n, size = binary.LittleEndian.Uint64(hdr[16:]), binary.LittleEndian.Uint64(hdr[24:])
	if n > uint64(limit) {
		return 0, 0, fmt.Errorf("fabric snapshot: payload of %d bytes, over the limit of %d bytes (LoadOptions.MaxBytes): %w: %w", n, limit, ErrSnapshotLimit, ErrSnapshot)
	}
	if size > uint64(limit) {
		return 0, 0, fmt.Errorf("fabric snapshot: the header declares %d bytes decoded, over the limit of %d bytes (LoadOptions.MaxBytes): %w: %w", size, limit, ErrSnapshotLimit, ErrSnapshot)
	}
	layout, err := snapshotLayout()
	if err != nil {
		return 0, 0, badSnapshot("%v", err)
	}
	if got := binary.LittleEndian.Uint64(hdr[32:]); got != layout {
		return 0, 0, badSnapshot("layout fingerprint %#016x, this build's is %#016x: the file was written by a build whose state types differ", got, layout)
	}
	return n, size, nil
}

// checkSnapshotVersion accepts SnapshotVersion and refuses any other,
// saying why an older one is no longer read.
func checkSnapshotVersion(v uint32) error {
	why := map[uint32]string{
		1:  "version 1 (gob-encoded, written by neuronsim before format version 2) is no longer read: it cannot be decoded safely",
		2:  "version 2 (whose host memory state kept its buffers in a map) is no longer read",
		3:  "version 3 (links with one free time, before their busy spans) is no longer read",
		4:  "version 4 (before the device id, the firmware boot count and the function-level reset counter were kept: an Inf2 system came back as Trn1) is no longer read",
		5:  "version 5 (before the endpoint mode, Params.Endpoints, and the ideal DMA timing, dma.Timing.Ideal, were kept) is no longer read",
		6:  "version 6 (before the fabric parameters kept the Trn3 Gen1 inter-rack links) is no longer read",
		7:  "version 7 (before the nodes of a system and their EFA scale-out network, Snapshot.Nodes and Params.EFA, were kept) is no longer read",
		8:  "version 8 (before the fabric parameters kept the Trn3 Gen2 second-level links, Params.SecondLevel, apart from the inter-server bundle) is no longer read",
		9:  "version 9 (before the DMA engines as their last reset left them were kept by their epoch alone, DeviceImage.DMA a dma.CompactState) is no longer read",
		10: "version 10 (before the links kept when their chunks arrived, LinkState.Queue, which the control writes wait for) is no longer read",
		11: "version 11 (before the links counted the folds of those arrivals, LinkState.Folds) is no longer read",
		12: "version 12 (before the contention-free model kept each device's turns on the links past its own, Snapshot.SourceBusy) is no longer read",
		13: "version 13 (before the EFA parameters kept how a leaf chooses a write's spine, EFAParams.Routing) is no longer read",
		14: "version 14 (before the DMA engines kept the descriptors their queues had fetched ahead, dma.State.Bursts) is no longer read",
	}
	switch w, old := why[v]; {
	case v == SnapshotVersion:
		return nil
	case old:
		return badSnapshot("%s; this build reads version %d, so save the system again with this build", w, SnapshotVersion)
	default:
		return badSnapshot("version %d; this build reads version %d", v, SnapshotVersion)
	}
}

// decodeSnapshot decompresses a snapshot's payload as it streams in and
// decodes it as it is decompressed: the zstd window at most
// snapshotWindow, the decompressed bytes exactly the size the header
// declares (a size already within the limit: the decoder reads no further,
// and the stream must end there), the decoded state charged against the
// limit. It returns the snapshot and the bytes its decoding charged.
func decodeSnapshot(payload io.Reader, size uint64, limit int64) (*Snapshot, int64, error) {
	if size == 0 {
		return nil, 0, badSnapshot("the header declares an empty encoding")
	}
	zr, err := zstd.NewReader(payload, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(snapshotWindow), zstd.WithDecoderMaxMemory(snapshotWindow))
	if err != nil {
		return nil, 0, badSnapshot("%v", err)
	}
	defer zr.Close()
	raw := &decompressed{r: zr}
	var snap Snapshot
	charged, err := snapenc.Decode(raw, int64(size), &snap, snapenc.Limits{MaxBytes: limit})
	if err == nil {
		// The decoder took the declared length: the stream ends there (and
		// its frame checksum is checked at the end).
		var b [1]byte
		_, _ = io.ReadFull(raw, b[:])
	}
	switch {
	case errors.Is(raw.err, zstd.ErrWindowSizeExceeded) || errors.Is(raw.err, zstd.ErrDecoderSizeExceeded):
		return nil, charged, badSnapshot("decompressing: a zstd window over the %d bytes snapshots are written with", snapshotWindow)
	case raw.err != nil && raw.err != io.EOF:
		return nil, charged, badSnapshot("decompressing: %v", raw.err)
	case raw.n > size:
		return nil, charged, badSnapshot("the payload decompresses to more than the %d bytes its header declares", size)
	case raw.err == io.EOF && raw.n < size:
		return nil, charged, badSnapshot("the payload decompresses to %d bytes, its header declares %d", raw.n, size)
	case errors.Is(err, snapenc.ErrLimit):
		return nil, charged, fmt.Errorf("fabric snapshot: decoding: %w (LoadOptions.MaxBytes): %w: %w", err, ErrSnapshotLimit, ErrSnapshot)
	case err != nil:
		return nil, charged, fmt.Errorf("fabric snapshot: decoding: %w: %w", err, ErrSnapshot)
	}
	return &snap, charged, nil
}

// decompressed counts the bytes a decompressor gives and keeps its first
// error (io.EOF at the end of the stream).
type decompressed struct {
	r   io.Reader
	n   uint64
	err error
}

func (d *decompressed) Read(b []byte) (int, error) {
	k, err := d.r.Read(b)
	d.n += uint64(k)
	if err != nil && d.err == nil {
		d.err = err
	}
	return k, err
}
