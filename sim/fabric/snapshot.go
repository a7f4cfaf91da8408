package fabric

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// SnapshotVersion is the version of the snapshot format Save writes and
// Load accepts.
const SnapshotVersion = 1

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
	Kind       Kind
	Params     Params
	Revision   uint8
	DMA        dma.Timing
	TimingOnly bool

	Engine sim.EngineState
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
	Regs, HBM sim.MemoryState
	DMA       dma.State
	Cores     []tpb.CoreState
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
	st := s.st
	faults := append([]Fault(nil), s.faults...)
	var res []PortReservation
	for i, pt := range s.ports {
		for j, r := range pt.res {
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
		Version: SnapshotVersion, Generation: s.cfg.Generation, Devices: s.cfg.Devices, Kind: s.cfg.Kind, Params: s.p,
		Revision: s.cfg.Revision, DMA: s.cfg.DMA, TimingOnly: s.cfg.TimingOnly,
		Engine: engine, Host: host,
		Links: append([]LinkState(nil), st.Links...), Last: append([]uint64(nil), st.Last...),
		InFlight: append([]Delivery(nil), st.InFlight...), Free: append([]int(nil), st.Free...),
		Stats: st.Stats, Faults: faults, Reservations: res, Capture: capture,
	}
	if st.LastMap != nil {
		snap.LastMap = make(map[uint64]uint64, len(st.LastMap))
		for k, v := range st.LastMap {
			snap.LastMap[k] = v
		}
	}
	for _, d := range s.devs {
		ds := d.Snapshot()
		snap.Device = append(snap.Device, DeviceImage{Name: ds.Config.Name, RoutingID: ds.Config.RoutingID, Serial: ds.Config.Serial,
			State: ds.State, Regs: ds.Regs, HBM: ds.HBM, DMA: ds.DMA, Cores: ds.Cores})
	}
	return snap
}

// ErrSnapshot marks a snapshot that cannot be restored: a wrong version, a
// corrupted or truncated file, parts that do not fit together.
var ErrSnapshot = errors.New("invalid system snapshot")

// Restore builds a system in the state a snapshot recorded. Nothing is kept
// of a snapshot that does not fit: the error wraps ErrSnapshot and says
// what is wrong.
func Restore(snap *Snapshot) (*System, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("fabric snapshot: "+format+": %w", append(args, ErrSnapshot)...)
	}
	if snap == nil {
		return nil, bad("no snapshot")
	}
	if snap.Version != SnapshotVersion {
		return nil, bad("version %d; this build reads version %d", snap.Version, SnapshotVersion)
	}
	if len(snap.Device) != snap.Devices {
		return nil, bad("%d device states for %d devices", len(snap.Device), snap.Devices)
	}
	p := snap.Params
	s, err := New(Config{Generation: snap.Generation, Devices: snap.Devices, Kind: snap.Kind, Params: &p, Revision: snap.Revision,
		DMA: snap.DMA, TimingOnly: snap.TimingOnly, Ready: true})
	if err != nil {
		return nil, bad("%v", err)
	}
	nl := len(s.st.Links)
	switch {
	case len(snap.Links) != nl:
		return nil, bad("%d link states for %d links", len(snap.Links), nl)
	case (s.st.Last != nil) != (snap.Last != nil) || len(snap.Last) != len(s.st.Last):
		return nil, bad("path order table of %d entries, the system needs %d", len(snap.Last), len(s.st.Last))
	}
	for i, d := range snap.InFlight {
		if !d.Used {
			continue
		}
		if d.Src < 0 || d.Src >= snap.Devices || d.Dst < 0 || d.Dst >= snap.Devices || d.Len < 0 || (d.Data != nil && len(d.Data) != d.Len) {
			return nil, bad("write in flight %d: devices %d → %d, %d bytes: out of range", i, d.Src, d.Dst, d.Len)
		}
		for _, id := range d.Path {
			if id < 0 || id >= nl {
				return nil, bad("write in flight %d: link %d of %d", i, id, nl)
			}
		}
	}
	for _, f := range snap.Free {
		if f < 0 || f >= len(snap.InFlight) || snap.InFlight[f].Used {
			return nil, bad("free slot %d is not a free write slot", f)
		}
	}
	for _, r := range snap.Reservations {
		if r.Device < 0 || r.Device >= snap.Devices || r.Index < 0 || r.Index >= len(s.ports[r.Device].res) || r.Dst < 0 || r.Dst >= snap.Devices {
			return nil, bad("reservation of device %d slot %d: out of range", r.Device, r.Index)
		}
		for _, id := range r.Path {
			if id < 0 || id >= nl {
				return nil, bad("reservation of device %d: link %d of %d", r.Device, id, nl)
			}
		}
	}
	for _, f := range snap.Faults {
		if (f.Kind == LinkDown || f.Kind == LinkUp) && (f.Link < 0 || f.Link >= nl) || f.Kind == DeviceReset && (f.Device < 0 || f.Device >= snap.Devices) {
			return nil, bad("fault %+v: out of range", f)
		}
	}
	for i, d := range s.devs {
		img, ds := snap.Device[i], d.Snapshot()
		if img.Name != ds.Config.Name || img.RoutingID != ds.Config.RoutingID || img.Serial != ds.Config.Serial {
			return nil, bad("device %d is %s (routing id %d), the system's is %s (routing id %d)", i, img.Name, img.RoutingID, ds.Config.Name, ds.Config.RoutingID)
		}
		ds.State, ds.Regs, ds.HBM, ds.DMA, ds.Cores = img.State, img.Regs, img.HBM, img.DMA, img.Cores
		if err := d.RestoreInSystem(ds); err != nil {
			return nil, bad("device %d: %v", i, err)
		}
	}
	if err := s.host.Restore(snap.Host); err != nil {
		return nil, bad("host memory: %v", err)
	}
	if err := s.engine.Restore(snap.Engine); err != nil {
		return nil, bad("events: %v", err)
	}
	s.st = state{Links: append([]LinkState(nil), snap.Links...), Last: append([]uint64(nil), snap.Last...),
		InFlight: append([]Delivery(nil), snap.InFlight...), Free: append([]int(nil), snap.Free...), Stats: snap.Stats}
	if s.st.Last == nil {
		s.st.LastMap = map[uint64]uint64{}
		for k, v := range snap.LastMap {
			s.st.LastMap[k] = v
		}
	}
	s.faults = append([]Fault(nil), snap.Faults...)
	for _, r := range snap.Reservations {
		s.ports[r.Device].res[r.Index] = r.Reservation
		s.ports[r.Device].res[r.Index].hops = r.Hops
	}
	if c := snap.Capture; c != nil {
		for i, p := range c.Pending {
			if int(p.Header.Src) >= snap.Devices || int(p.Header.Dst) >= snap.Devices || len(p.Payload) > int(p.Header.Length) {
				return nil, bad("captured packet %d: devices %d → %d, %d bytes: out of range", i, p.Header.Src, p.Header.Dst, len(p.Payload))
			}
		}
		s.resume = c
	}
	return s, nil
}

// The snapshot file: a header — the magic "NSSNAP\x00\x01", the format
// version (u32, little-endian), the payload's length (u64) and its SHA-256 —
// then the payload, the Snapshot gob-encoded and zstd-compressed.
var snapshotMagic = [8]byte{'N', 'S', 'S', 'N', 'A', 'P', 0, 1}

const snapshotHeader = 8 + 4 + 8 + sha256.Size

// MaxSnapshotBytes bounds what Load decompresses (a guard against a
// crafted file).
const MaxSnapshotBytes = 64 << 30

// Save writes the system's snapshot to w.
func (s *System) Save(w io.Writer) error {
	var raw bytes.Buffer
	zw, err := zstd.NewWriter(&raw, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(zw).Encode(s.Snapshot()); err != nil {
		zw.Close()
		return fmt.Errorf("fabric snapshot: encoding: %w", err)
	}
	if err := zw.Close(); err != nil {
		return err
	}
	var hdr [snapshotHeader]byte
	copy(hdr[:8], snapshotMagic[:])
	binary.LittleEndian.PutUint32(hdr[8:], SnapshotVersion)
	binary.LittleEndian.PutUint64(hdr[12:], uint64(raw.Len()))
	sum := sha256.Sum256(raw.Bytes())
	copy(hdr[20:], sum[:])
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err = w.Write(raw.Bytes())
	return err
}

// Load reads a snapshot file and restores the system. A file that is not
// a snapshot, of another version, truncated or corrupted is refused with an
// error wrapping ErrSnapshot, and nothing is built.
func Load(r io.Reader) (*System, error) {
	var hdr [snapshotHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("fabric snapshot: header: %v: %w", err, ErrSnapshot)
	}
	if !bytes.Equal(hdr[:8], snapshotMagic[:]) {
		return nil, fmt.Errorf("fabric snapshot: not a neuronsim snapshot (magic % x): %w", hdr[:8], ErrSnapshot)
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != SnapshotVersion {
		return nil, fmt.Errorf("fabric snapshot: version %d; this build reads version %d: %w", v, SnapshotVersion, ErrSnapshot)
	}
	n := binary.LittleEndian.Uint64(hdr[12:])
	if n > MaxSnapshotBytes {
		return nil, fmt.Errorf("fabric snapshot: payload of %d bytes: %w", n, ErrSnapshot)
	}
	payload, err := io.ReadAll(io.LimitReader(r, int64(n)+1))
	if err != nil {
		return nil, fmt.Errorf("fabric snapshot: payload: %v: %w", err, ErrSnapshot)
	}
	if uint64(len(payload)) != n {
		return nil, fmt.Errorf("fabric snapshot: payload of %d bytes, the header says %d (truncated or trailing data): %w", len(payload), n, ErrSnapshot)
	}
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:], hdr[20:]) {
		return nil, fmt.Errorf("fabric snapshot: checksum mismatch (the file is corrupted): %w", ErrSnapshot)
	}
	zr, err := zstd.NewReader(bytes.NewReader(payload), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxSnapshotBytes))
	if err != nil {
		return nil, fmt.Errorf("fabric snapshot: %v: %w", err, ErrSnapshot)
	}
	defer zr.Close()
	var snap Snapshot
	if err := gob.NewDecoder(zr).Decode(&snap); err != nil {
		return nil, fmt.Errorf("fabric snapshot: decoding: %v: %w", err, ErrSnapshot)
	}
	return Restore(&snap)
}
