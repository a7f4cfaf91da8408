package sim

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/bar"
)

// Function-level reset (docs/device-model.md §Function-level reset): what
// a PCIe FLR, or a vfio-user client's DEVICE_RESET, does to the function.

// FunctionReset resets the function as a PCIe function-level reset does:
// the configuration space returns to its power-on image; every DMA engine
// and queue to its reset state, transfers in flight cancelled (their
// completion events, already queued, find a newer epoch and do nothing);
// every NeuronCore's engines idle; the register file, the semaphores and
// events, the MISC RAM mailbox, the QEMU reset register and any reset in
// progress to their power-on values (the events of that reset are
// dropped); and the firmware boots again — every read returns 0xDEADBEEF
// for FirmwareTiming.Boot of device time, then the registers answer as
// after power-on. Device memory (HBM) and the host memory are kept, and so
// are the counters, which count the reset in FunctionResets. Other devices
// of the system are not touched.
//
// It takes the device's lock and may be called from any goroutine, with
// events pending, but not from an event handler. A closed device is
// refused with an error wrapping hwarch.ErrDeviceClosed; a boot that would
// end past [MaxTime], with one wrapping [ErrTimeOverflow] — in both cases
// nothing changes.
func (d *Device) FunctionReset() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st.Closed {
		return fmt.Errorf("sim device %s: function-level reset: %w", d.cfg.Name, hwarch.ErrDeviceClosed)
	}
	boot := FromDuration(d.cfg.Firmware.Boot)
	if boot > d.engine.Room() {
		return fmt.Errorf("sim device %s: function-level reset at %v: the firmware's boot of %v would end past the latest time %v: %w",
			d.cfg.Name, d.engine.Now(), boot, MaxTime, ErrTimeOverflow)
	}
	d.pci.space = d.pci.init
	d.dma.Reset()
	for _, c := range d.cores {
		c.Reset()
	}
	for i := range d.st.NCSync {
		d.st.NCSync[i].Reset()
	}
	for i := range d.st.TopSPSync {
		d.st.TopSPSync[i].Reset()
	}
	d.regs.Clear()
	d.st.Misc = [bar.MiscRAMSize / 4]uint32{}
	d.st.QEMUReg = 0
	// A new sequence number: the acknowledgement and completion events of
	// a reset in progress no longer match.
	d.st.Reset = ResetState{Seq: d.st.Reset.Seq + 1}
	d.st.Stats.FunctionResets++
	d.st.Boot++ // the boot event of an earlier boot, still pending, no longer matches
	d.st.Phase = PhaseBooting
	if err := d.engine.After(boot, d.hBoot, d.st.Boot); err != nil {
		d.st.Stats.LostEvents++ // not reached: the room was checked above
	}
	return nil
}

// bootEvent is the firmware's boot completing, for the boot it names: a
// boot a function-level reset has since restarted is ignored.
func (d *Device) bootEvent(boot uint64) {
	if boot != d.st.Boot {
		return
	}
	d.bootDone()
}
