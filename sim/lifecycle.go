package sim

import (
	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/bar"
)

// The device's life cycle (driver-facts §8): power-on and firmware boot,
// then resets requested through the MISC RAM mailbox (type at +0x1EC, TPB map
// at +0x1D8, trigger at +0x800; the firmware acknowledges by writing 0 to
// +0x1EC and holds +0x808 bit 3 until the work is done) or, under the QEMU
// revision, through the QEMU reset register, which reads back non-zero until
// the reset is done (on V3/V4 a store of 0 there is the driver's device
// reset). Until boot completes every read returns 0xDEADBEEF;
// during a device reset every read outside the MISC RAM and the QEMU reset
// register does; during a TPB reset reads of the NCs and TOP_SPs being reset
// do. Writes that meet 0xDEADBEEF are dropped.

func (d *Device) registerHandlers() error {
	var err error
	if d.hBoot, err = d.register("fw-boot", HandlerFunc(func(_ *Engine, boot uint64) { d.bootEvent(boot) })); err != nil {
		return err
	}
	if d.hAck, err = d.register("fw-reset-ack", HandlerFunc(func(_ *Engine, arg uint64) { d.resetAck(arg>>1, arg&1 != 0) })); err != nil {
		return err
	}
	if d.hDone, err = d.register("fw-reset-done", HandlerFunc(func(_ *Engine, seq uint64) { d.resetDone(seq) })); err != nil {
		return err
	}
	d.hDMA, err = d.register("dma-done", d.dma) // the controller's Fire
	return err
}

// powerOn starts the firmware boot.
func (d *Device) powerOn() {
	d.st.Phase = PhaseBooting
	if d.cfg.Ready {
		d.bootDone()
		return
	}
	_ = d.engine.After(FromDuration(d.cfg.Firmware.Boot), d.hBoot, d.st.Boot)
}

func (d *Device) misc(off uint64) *uint32 { return &d.st.Misc[off/4] }

// bootDone brings the firmware up and fills the mailbox words it owns.
func (d *Device) bootDone() {
	d.st.Phase = PhaseReady
	*d.misc(hwarch.MiscFWAPIVersion) = d.cfg.FWAPI
	*d.misc(hwarch.MiscRoutingID) = d.cfg.RoutingID
	*d.misc(hwarch.MiscSerialLo) = uint32(d.cfg.Serial)
	*d.misc(hwarch.MiscSerialHi) = uint32(d.cfg.Serial >> 32)
	*d.misc(hwarch.MiscFWStatus) = 0
}

// miscWrite stores a mailbox word; a non-zero write to the trigger hands the
// request at +0x1EC to the firmware.
func (d *Device) miscWrite(off uint64, v uint32) {
	*d.misc(off) = v
	if off != hwarch.MiscTrigger || v == 0 {
		return
	}
	switch *d.misc(hwarch.MiscResetRequest) {
	case hwarch.ResetTypeDevice:
		d.startReset(true, hwarch.ResetMap{}, false)
	case hwarch.ResetTypeTPB:
		d.startReset(false, d.geo.DecodeTPBResetMap(*d.misc(hwarch.MiscResetTPBMap)), false)
	default:
		// A FW-IO command (or garbage): the model serves none, so the
		// firmware drops the doorbell and answers nothing.
		d.st.Stats.UnservedTriggers++
		*d.misc(hwarch.MiscTrigger) = 0
	}
}

// qemuResetWrite is a store to the QEMU reset register under the QEMU
// revision. V2 writes 1 for a device reset (driver 2.24.7.0,
// v2/neuron_dhal_v2.c 160–166); a store of 0 there starts nothing. V3/V4
// write the TPB map the driver builds (v3/neuron_dhal_v3.c 339–351), which
// for a device reset is 0 (nr_get_tpb_reset_map, v3 301–316, fills it only
// for a TPB reset): so 0, and a map that covers every NC, reset the device,
// and the register then reads back the whole-device map until the reset is
// done. The register reads non-zero until the reset it started is done.
func (d *Device) qemuResetWrite(v uint32) {
	if d.geo.Generation == hwarch.Sunda {
		if v == 0 {
			if !d.st.Reset.Active || !d.st.Reset.QEMU {
				d.st.QEMUReg = 0
			}
			return
		}
		d.st.QEMUReg = v
		d.startReset(true, hwarch.ResetMap{}, true)
		return
	}
	all := uint32(1)<<d.geo.NeuronCores - 1
	m := d.geo.DecodeTPBResetMap(v)
	device := v == 0 || m.NCs == all
	if v == 0 {
		v = d.geo.TPBResetMap(all)
	}
	if d.st.Reset.Active && d.st.Reset.QEMU {
		d.st.QEMUReg |= v
	} else {
		d.st.QEMUReg = v
	}
	d.startReset(device, m, true)
}

// startReset begins a reset or coalesces a request into the running one.
func (d *Device) startReset(device bool, m hwarch.ResetMap, qemu bool) {
	d.st.Stats.ResetRequests++
	*d.misc(hwarch.MiscFWStatus) |= hwarch.FWStatusResetActive
	r := &d.st.Reset
	if r.Active {
		r.Device = r.Device || device
		r.Map.NCs |= m.NCs
		r.Map.TopSPs |= m.TopSPs
		r.QEMU = r.QEMU || qemu
		if r.Acked {
			// Acknowledge the joining request too, and keep the reset running
			// until that acknowledgement has been given: the ack is scheduled
			// first, so it runs before a completion due at the same time.
			ack := d.ackDelay(qemu)
			_ = d.engine.After(ack, d.hAck, ackArg(r.Seq, qemu))
			r.Until = max(r.Until, d.engine.Now()+ack)
			d.beginWork()
		}
		return
	}
	*r = ResetState{Active: true, Device: device, Map: m, QEMU: qemu, Seq: r.Seq + 1}
	_ = d.engine.After(d.ackDelay(qemu), d.hAck, ackArg(r.Seq, qemu))
}

// ackArg packs the argument of an acknowledgement event: the reset's
// sequence number and whether the request came through the mailbox.
func ackArg(seq uint64, qemu bool) uint64 {
	if qemu {
		return seq << 1
	}
	return seq<<1 | 1
}

// ackDelay is how long the firmware takes to acknowledge a request; the QEMU
// path has no mailbox handshake.
func (d *Device) ackDelay(qemu bool) Time {
	if qemu {
		return 0
	}
	return FromDuration(d.cfg.Firmware.ResetAck)
}

// resetAck acknowledges a request — for a mailbox request +0x1EC and the
// trigger read 0 from now on — and, for the first request of a reset, starts
// its work.
func (d *Device) resetAck(seq uint64, mailbox bool) {
	r := &d.st.Reset
	if !r.Active || r.Seq != seq {
		return
	}
	if mailbox {
		*d.misc(hwarch.MiscResetRequest) = 0
		*d.misc(hwarch.MiscTrigger) = 0
	}
	if !r.Acked {
		r.Acked = true
		d.beginWork()
	}
}

// beginWork (re)starts the acknowledged reset's work, which ends its
// duration from now.
func (d *Device) beginWork() {
	r := &d.st.Reset
	dur := d.cfg.Firmware.TPBReset
	switch {
	case r.QEMU:
		dur = d.cfg.Firmware.QEMUReset
	case r.Device:
		dur = d.cfg.Firmware.DeviceReset
	}
	if r.Device {
		d.st.Phase = PhaseDeviceReset
	}
	r.Until = max(r.Until, d.engine.Now()+FromDuration(dur))
	_ = d.engine.Schedule(r.Until, d.hDone, r.Seq)
}

func (d *Device) resetDone(seq uint64) {
	r := &d.st.Reset
	if !r.Active || r.Seq != seq || d.engine.Now() < r.Until {
		return
	}
	if r.Device {
		for i := range d.st.NCSync {
			d.st.NCSync[i].Reset()
		}
		for i := range d.st.TopSPSync {
			d.st.TopSPSync[i].Reset()
		}
		d.regs.Clear()
		d.dma.Reset()
		for _, c := range d.cores {
			c.Reset()
		}
		d.st.Stats.DeviceResets++
	} else {
		d.resetUnits(r.Map)
		d.st.Stats.TPBResets++
	}
	d.st.Phase = PhaseReady
	d.st.QEMUReg = 0
	*d.misc(hwarch.MiscFWStatus) &^= hwarch.FWStatusResetActive
	*r = ResetState{Seq: r.Seq}
}

// resetUnits clears the state of the NCs and TOP_SPs of a TPB reset.
func (d *Device) resetUnits(m hwarch.ResetMap) {
	for nc := range d.st.NCSync {
		if m.NCs&(1<<nc) != 0 {
			d.cores[nc].Reset()
			d.st.NCSync[nc].Reset()
			_ = d.regs.Fill(d.geo.BAR0.TPBWindow(nc), d.geo.BAR0.TPBStride, 0)
		}
	}
	d.dma.ResetEngines(func(e int) bool {
		nc := udma.OwnerNC(d.geo, e)
		return nc >= 0 && m.NCs&(1<<nc) != 0
	})
	for t := range d.st.TopSPSync {
		if m.TopSPs&(1<<t) != 0 {
			d.st.TopSPSync[t].Reset()
			_ = d.regs.Fill(d.geo.BAR0.TopSPWindow(t), d.geo.BAR0.TopSPSize, 0)
		}
	}
}

// blockedByReset reports whether a window (nil: an unmapped offset) answers
// 0xDEADBEEF because the reset in progress covers it.
func (d *Device) blockedByReset(w *bar.Window) bool {
	if d.st.Phase == PhaseDeviceReset {
		return w == nil || (w.Kind != bar.Misc && w.Kind != bar.QEMUReset)
	}
	r := &d.st.Reset
	if w == nil || !r.Active || !r.Acked {
		return false
	}
	switch w.Kind {
	case bar.SBUF, bar.PSUM, bar.NCSync:
		return r.Map.NCs&(1<<w.Index) != 0
	case bar.TopSP, bar.TopSPSync:
		return r.Map.TopSPs&(1<<w.Index) != 0
	}
	return false
}

// FaultReset resets the whole device at once, unasked — an injected fault
// (sim/fabric schedules it), with no mailbox handshake: from now until the
// reset's work is done reads return 0xDEADBEEF, and every engine, queue and
// semaphore comes back cleared. It is called from the system's event loop,
// which holds the lock.
func (d *Device) FaultReset() {
	d.startReset(true, hwarch.ResetMap{}, false)
	d.resetAck(d.st.Reset.Seq, false)
}
