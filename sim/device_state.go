package sim

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// DeviceSnapshot is everything a Device holds: its configuration, its
// life-cycle and synchronisation state, its pending events and its two
// memories. Restoring a snapshot and continuing gives exactly what the
// uninterrupted device would have given. It carries configuration only,
// never the device's [Wiring] (its host port, a system's engine and lock):
// whoever restores it attaches the device anew.
type DeviceSnapshot struct {
	Config DeviceConfig
	// System is set when the snapshot was taken from a device of a system
	// (one wired to a system's engine): its events are the system's, so it
	// is restored with its system ([Device.RestoreInSystem]), not alone.
	System bool
	State  DeviceState
	Engine EngineState
	Regs   MemoryState // register and SRAM windows, by register-BAR offset
	HBM    MemoryState // device memory, by device address
	DMA    dma.State
	Cores  []tpb.CoreState
	Host   HostState // the host memory the device reaches (shared by a system's devices)
}

// ErrSystemDevice is returned when a device of a system (one that shares its
// engine) is restored alone: its events live in the system's engine, so it
// is saved and restored with its system.
var ErrSystemDevice = errors.New("a device of a system is saved and restored with its system")

// Snapshot returns a deep copy of the device's whole state; Host is empty
// when the device's host port is not the host-memory model (a guest's
// memory is not the device's state). For a device of a system the Engine
// part is the system's shared engine and System is set; such a snapshot is
// for inspection, and NewDeviceFromSnapshot and Restore refuse it.
func (d *Device) Snapshot() DeviceSnapshot { return d.snapshot(true) }

// SnapshotInSystem is [Device.Snapshot] without the parts a system holds
// for all its devices, which it saves once (sim/fabric's System.Snapshot):
// Engine and Host are left zero. Snapshot copies both, the system's whole
// event queue and host memory, so a system taking its devices' parts with
// it would copy them once per device. The DMA state is returned apart, as
// a [dma.CompactState] (DMA is left zero): every engine its last reset
// left as it was is its epoch alone, where DMA would copy each in full
// (300 KiB a Trn3 device); its Expand gives the DMA state
// [Device.RestoreInSystem] takes.
func (d *Device) SnapshotInSystem() (DeviceSnapshot, dma.CompactState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.st
	st.NCSync = slices.Clone(d.st.NCSync)
	st.TopSPSync = slices.Clone(d.st.TopSPSync)
	return DeviceSnapshot{Config: d.cfg, System: d.system, State: st, Regs: d.regs.State(), HBM: d.hbm.State(), Cores: d.coreStates()},
		d.dma.CompactState()
}

// snapshot is Snapshot, with the events and host memory if shared.
func (d *Device) snapshot(shared bool) DeviceSnapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.st
	st.NCSync = slices.Clone(d.st.NCSync)
	st.TopSPSync = slices.Clone(d.st.TopSPSync)
	snap := DeviceSnapshot{Config: d.cfg, System: d.system, State: st, Regs: d.regs.State(), HBM: d.hbm.State(),
		DMA: d.dma.State(), Cores: d.coreStates()}
	if shared {
		snap.Engine = d.engine.State()
		if d.hostMem != nil {
			snap.Host = d.hostMem.State()
		}
	}
	return snap
}

// State is [Device.Snapshot] under the name of the kernel's snapshot
// convention ([simkernel.Stateful]): a Device's state S is its
// DeviceSnapshot (of which DeviceState, the life-cycle part, is one field).
func (d *Device) State() DeviceSnapshot { return d.Snapshot() }

// The device and its host memory follow the kernel's snapshot convention.
var (
	_ simkernel.Stateful[DeviceSnapshot] = (*Device)(nil)
	_ simkernel.Stateful[HostState]      = (*HostMemory)(nil)
)

// NewDeviceFromSnapshot builds a device alone in the state a snapshot
// recorded, with a private host memory restored from the snapshot's. A
// snapshot whose parts do not fit its configuration (wrong number of NCs or
// TOP_SPs, an unknown phase, events of unknown handlers, pages outside the
// address space) is refused with an error wrapping ErrInvalidState.
func NewDeviceFromSnapshot(s DeviceSnapshot) (*Device, error) {
	return NewWiredDeviceFromSnapshot(s, Wiring{})
}

// NewWiredDeviceFromSnapshot is [NewDeviceFromSnapshot] for a device
// attached to w.Host: a host port that is not the host-memory model (a
// guest's memory) is kept as it is, and the snapshot must then carry no host
// state; a *HostMemory or nil gives the device a private host memory
// restored from the snapshot's. A device of a system is restored with its
// system: w.Engine and a snapshot of such a device are refused with
// [ErrSystemDevice].
func NewWiredDeviceFromSnapshot(s DeviceSnapshot, w Wiring) (*Device, error) {
	if s.System || w.Engine != nil || w.Lock != nil {
		return nil, fmt.Errorf("sim device snapshot of %s: %w", s.Config.Name, ErrSystemDevice)
	}
	cfg := s.Config
	cfg.Ready = true // no boot event: the snapshot's queue says what is pending
	if _, model := w.Host.(*HostMemory); model {
		w.Host = nil // a private host memory, restored below
	} // another port (a guest's memory) is kept: it is not the snapshot's to restore
	d, err := NewWiredDevice(cfg, w)
	if err != nil {
		return nil, fmt.Errorf("sim device snapshot: %w: %w", err, ErrInvalidState)
	}
	d.cfg.Ready = s.Config.Ready
	if err := d.restore(s, true, false); err != nil {
		return nil, err
	}
	return d, nil
}

// Restore replaces the device's state with a snapshot taken from a device of
// the same configuration. On error the device keeps its state.
func (d *Device) Restore(s DeviceSnapshot) error {
	if d.system {
		return fmt.Errorf("sim device %s: restore: %w", d.cfg.Name, ErrSystemDevice)
	}
	if s.Config != d.cfg {
		return fmt.Errorf("sim device %s: restore: snapshot of device %q has another configuration: %w", d.cfg.Name, s.Config.Name, ErrInvalidState)
	}
	// fresh is wired as d is (d.host: its own port, or its host memory,
	// for which fresh gets a private one restored from s).
	fresh, err := NewWiredDeviceFromSnapshot(s, Wiring{Host: d.host})
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	fresh.mu.Lock()
	defer fresh.mu.Unlock()
	// fresh was built from s with every part checked, so what follows cannot
	// fail; the host memory, which may refuse on its own terms, goes first,
	// before anything of the device has changed.
	if d.hostMem != nil && d.hostMem != fresh.hostMem {
		if err := d.hostMem.Restore(fresh.hostMem.State()); err != nil {
			return err
		}
	}
	// The handlers of the fresh engine are closures over fresh; rebind the
	// device's own engine instead of adopting fresh's.
	if err := d.engine.Restore(fresh.engine.State()); err != nil {
		return err
	}
	if err := d.dma.Restore(fresh.dma.State()); err != nil {
		return err
	}
	for nc, c := range d.cores {
		if err := c.Restore(fresh.cores[nc].State()); err != nil {
			return err
		}
	}
	// Restore into the device's own memories and sync blocks: its cores
	// hold pointers to them.
	if err := d.regs.Restore(fresh.regs.State()); err != nil {
		return err
	}
	if err := d.hbm.Restore(fresh.hbm.State()); err != nil {
		return err
	}
	d.setState(fresh.st)
	return nil
}

// setState replaces the device state, copying the sync blocks into the
// device's own slices (which its cores point at).
func (d *Device) setState(st DeviceState) {
	ncs, tops := d.st.NCSync, d.st.TopSPSync
	copy(ncs, st.NCSync)
	copy(tops, st.TopSPSync)
	d.st = st
	d.st.NCSync, d.st.TopSPSync = ncs, tops
}

// RestoreInSystem loads a snapshot into a freshly built device of a system
// (sim/fabric): everything but the events and the host memory, which the
// system restores once for all its devices. The snapshot's configuration
// must be the device's, apart from Ready.
func (d *Device) RestoreInSystem(s DeviceSnapshot) error { return d.restoreInSystem(s, false) }

// RestoreInSystemOwned is [Device.RestoreInSystem] for a snapshot the
// caller gives up, one decoded from a file say: the device's memories keep
// its pages instead of copies ([Memory.RestoreOwned]), so the caller must
// not use them after.
func (d *Device) RestoreInSystemOwned(s DeviceSnapshot) error { return d.restoreInSystem(s, true) }

func (d *Device) restoreInSystem(s DeviceSnapshot, own bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	want, got := d.cfg, s.Config
	want.Ready, got.Ready = false, false
	if want != got {
		return fmt.Errorf("sim device %s: restore: the snapshot is of another configuration (%s): %w", d.cfg.Name, s.Config.Name, ErrInvalidState)
	}
	return d.restore(s, false, own)
}

// restore loads s into a freshly built device; withEngine restores the
// pending events and host memory too (a device alone); own keeps s's
// memory pages (Memory.RestoreOwned). Every part is checked before any is
// changed, so a refused snapshot leaves the device as it was.
func (d *Device) restore(s DeviceSnapshot, withEngine, own bool) error {
	if err := d.checkState(&s.State); err != nil {
		return fmt.Errorf("sim device %s: restore: %w: %w", d.cfg.Name, err, ErrInvalidState)
	}
	if len(s.Cores) != len(d.cores) {
		return fmt.Errorf("sim device %s: restore: %d NeuronCore states, the device has %d: %w", d.cfg.Name, len(s.Cores), len(d.cores), ErrInvalidState)
	}
	// Build every part aside first: the engine, memories, DMA controller and
	// cores each check what they are given.
	if withEngine {
		if err := d.engine.Validate(s.Engine); err != nil {
			return fmt.Errorf("sim device %s: %w", d.cfg.Name, err)
		}
	}
	var regs, hbm Memory
	if err := restoreMemory(&regs, s.Regs, own); err != nil {
		return fmt.Errorf("sim device %s: registers: %w", d.cfg.Name, err)
	}
	if err := restoreMemory(&hbm, s.HBM, own); err != nil {
		return fmt.Errorf("sim device %s: HBM: %w", d.cfg.Name, err)
	}
	if err := d.dma.Validate(s.DMA); err != nil {
		return fmt.Errorf("sim device %s: %w: %w", d.cfg.Name, err, ErrInvalidState)
	}
	for nc, c := range d.cores {
		if err := c.Validate(s.Cores[nc]); err != nil {
			return fmt.Errorf("sim device %s: NC %d: %w: %w", d.cfg.Name, nc, err, ErrInvalidState)
		}
	}
	// The host memory checks its own state and keeps its old one when it
	// refuses; it goes last of what can fail.
	if withEngine && d.hostMem == nil && !reflect.ValueOf(s.Host).IsZero() {
		return fmt.Errorf("sim device %s: restore: host memory state for a device whose host port (%T) is not the host-memory model: %w", d.cfg.Name, d.host, ErrInvalidState)
	}
	if withEngine && d.hostMem != nil {
		if err := d.hostMem.Restore(s.Host); err != nil {
			return fmt.Errorf("sim device %s: %w", d.cfg.Name, err)
		}
	}
	// Nothing below fails: every part was checked above.
	if withEngine {
		if err := d.engine.Restore(s.Engine); err != nil { // checked above: cannot fail
			return fmt.Errorf("sim device %s: %w", d.cfg.Name, err)
		}
	}
	d.regs.Adopt(&regs)
	d.hbm.Adopt(&hbm)
	if err := d.dma.Restore(s.DMA); err != nil { // checked above: cannot fail
		return fmt.Errorf("sim device %s: %w: %w", d.cfg.Name, err, ErrInvalidState)
	}
	for nc, c := range d.cores {
		if err := c.Restore(s.Cores[nc]); err != nil { // checked above: cannot fail
			return fmt.Errorf("sim device %s: NC %d: %w: %w", d.cfg.Name, nc, err, ErrInvalidState)
		}
	}
	d.setState(s.State)
	return nil
}

// restoreMemory restores m from s: a copy, or s's own pages when own
// (Memory.RestoreOwned).
func restoreMemory(m *Memory, s MemoryState, own bool) error {
	if own {
		return m.RestoreOwned(s)
	}
	return m.Restore(s)
}

// checkState validates a DeviceState for this device, naming the field.
func (d *Device) checkState(st *DeviceState) error {
	switch {
	case len(st.NCSync) != d.geo.NeuronCores:
		return fmt.Errorf("NCSync: %d sync blocks, the %s has %d", len(st.NCSync), d.geo.Generation, d.geo.NeuronCores)
	case len(st.TopSPSync) != d.geo.TopSPs:
		return fmt.Errorf("TopSPSync: %d sync blocks, the %s has %d", len(st.TopSPSync), d.geo.Generation, d.geo.TopSPs)
	case int(st.Phase) >= len(phaseNames):
		return fmt.Errorf("Phase %d: not booting (0), ready (1) or device-reset (2)", st.Phase)
	}
	for name, blocks := range map[string][]tpb.SyncState{"NCSync": st.NCSync, "TopSPSync": st.TopSPSync} {
		for i := range blocks {
			for j, e := range blocks[i].Events {
				if e > 1 {
					return fmt.Errorf("%s %d: event %d is %d (events are 0 or 1)", name, i, j, e)
				}
			}
		}
	}
	r := &st.Reset
	if _, err := units.PS("Reset.Until", uint64(r.Until)); err != nil {
		return err
	}
	if !r.Active && (r.Device || r.Acked || r.QEMU || r.Until != 0 || r.Map != (hwarch.ResetMap{})) {
		return fmt.Errorf("Reset: %+v: details of a reset that is not active", *r)
	}
	if st.Phase == PhaseDeviceReset && !(r.Active && r.Device && r.Acked) {
		return fmt.Errorf("Phase %v without an acknowledged device reset in progress", st.Phase)
	}
	return nil
}

func (d *Device) coreStates() []tpb.CoreState {
	out := make([]tpb.CoreState, len(d.cores))
	for i, c := range d.cores {
		out[i] = c.State()
	}
	return out
}
