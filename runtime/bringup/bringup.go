// Package bringup brings a Neuron device up for the runtime the way the
// kernel driver's probe and reset worker do (driver-facts §1, §8): probe the
// PCI identity for the generation and EMU/QEMU mode, wait until the firmware
// answers (reads stop returning 0xDEADBEEF), reset the device through the
// MISC RAM mailbox or the QEMU reset register, read the routing id and serial
// number, register the device's CSR windows in the runtime's region table,
// and select the arch tables. It works over any ndl.Device: a simulated
// device, a remote one or /dev/neuronN.
package bringup

import (
	"errors"
	"fmt"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/csr"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// Errors of bring-up, returned wrapped with the step and the values seen.
var (
	ErrNotReady     = errors.New("device not ready (reads still return 0xDEADBEEF)")
	ErrResetTimeout = errors.New("reset not completed in time")
	ErrRoutingID    = errors.New("bad routing id")
	ErrSmallBAR     = errors.New("register BAR too small")
)

// MaxRoutingID bounds the routing id a device may report (< 64, the
// driver's MAX_NEURON_DEVICE_COUNT; PDS allows 128).
const MaxRoutingID = hwarch.MaxNeuronDevices

// MaxWhatIfRoutingID bounds the routing id of a device of a what-if system
// (Options.WhatIf): a device past the driver's 64 reports its device index,
// which the fabric window names in 14 bits (hwarch.MaxFabricDevices).
const MaxWhatIfRoutingID = hwarch.MaxFabricDevices

// RoutingIDLimit is the bound bring-up holds a routing id to: MaxRoutingID,
// or MaxWhatIfRoutingID for a what-if system.
func RoutingIDLimit(whatIf bool) uint32 {
	if whatIf {
		return MaxWhatIfRoutingID
	}
	return MaxRoutingID
}

// DefaultVABase is where bring-up places device 0's register BAR in the
// runtime's virtual address space when Options.VABase is 0; device i sits
// VAStride further on.
const (
	DefaultVABase = 0x7F00_0000_0000
	VAStride      = 0x1_0000_0000 // 4 GiB, the largest register BAR
)

// Options tune a bring-up. The zero value follows the driver.
type Options struct {
	// Switch is the NeuronSwitch family for the arch tables.
	Switch hwarch.SwitchFamily
	// Dispatch is the runtime's arch selection; nil uses a private one.
	// Devices of one runtime share it (one chip type per host).
	Dispatch *arch.Dispatch
	// Table is the region table to register into; nil makes a new one.
	Table *csr.Table
	// VABase is the virtual address of the register BAR; 0 places it at
	// DefaultVABase + routing id × VAStride.
	VABase uint64
	// Policy overrides DefaultPolicy when non-nil.
	Policy *Policy
	// NoReset skips the hardware reset (the driver's no_reset module parameter).
	NoReset bool
	// WhatIf brings up a device of a what-if system, one larger than the
	// driver's 64 devices (docs/fabric.md §Thousands of devices): its
	// routing id may be any below MaxWhatIfRoutingID — a device past the
	// 64th reports its fabric-window device index — and its register BAR
	// sits at DefaultVABase + routing id × VAStride as any other's. Off (a
	// real system, the default), a routing id of 64 or more is refused as
	// the driver refuses it (ErrRoutingID).
	WhatIf bool
}

// Step is one thing bring-up did, for reports and tests.
type Step struct {
	Name   string // probe, wait-ready, reset, routing-id, register-csr, select-tables
	Detail string
}

// Device is a device brought up for the runtime.
type Device struct {
	Dev        ndl.Device
	Identity   hwarch.PCIIdentity
	Generation hwarch.Generation
	Mode       hwarch.Mode
	Geometry   *hwarch.Geometry
	Tables     *arch.Tables
	Policy     Policy

	RoutingID uint32
	Serial    uint64
	// HBMChannelBytes is each HBM channel's size as the driver sizes it:
	// the active size, or BAR4 size / 4 on V3/V4 under QEMU.
	HBMChannelBytes []uint64

	// CSR is the csr_* layer over Table, in which the device's windows are
	// registered from VABase on.
	CSR    *csr.Layer
	Table  *csr.Table
	VABase uint64

	// ReadyRetries counts the 0xDEADBEEF answers waited through; Reset
	// says whether a hardware reset ran.
	ReadyRetries int
	Reset        bool
	Steps        []Step
}

// BringUp runs the whole bring-up on dev.
func BringUp(dev ndl.Device, opts Options) (*Device, error) {
	d, err := probe(dev, opts)
	if err != nil {
		return nil, err
	}
	if err := d.waitReady(); err != nil {
		return nil, err
	}
	switch {
	case d.Policy.SkipReset:
		d.step("reset", "skipped (no_reset, forced on %s EMU)", d.Generation.Product())
	case opts.NoReset:
		d.step("reset", "skipped (no_reset)")
	default:
		if err := d.ResetDevice(); err != nil {
			return nil, err
		}
	}
	if err := d.readIdentity(opts.WhatIf); err != nil {
		return nil, err
	}
	if err := d.registerCSR(opts); err != nil {
		return nil, err
	}
	dispatch := opts.Dispatch
	if dispatch == nil {
		dispatch = &arch.Dispatch{}
	}
	t, err := dispatch.Select(d.Identity, arch.Options{Switch: opts.Switch})
	if err != nil {
		return nil, fmt.Errorf("bring-up %s: %w", d.Identity, err)
	}
	d.Tables = t
	d.step("select-tables", "%s, switch %s", t.Generation, t.Options.Switch)
	return d, nil
}

func probe(dev ndl.Device, opts Options) (*Device, error) {
	id := dev.Identity()
	g, err := id.Generation()
	if err != nil {
		return nil, fmt.Errorf("bring-up probe: %w", err)
	}
	geo := hwarch.MustGeometry(g)
	d := &Device{Dev: dev, Identity: id, Generation: g, Mode: id.Mode(), Geometry: geo}
	d.Policy = DefaultPolicy(g, d.Mode)
	if opts.Policy != nil {
		d.Policy = *opts.Policy
	}
	need := geo.BAR0.MiscRAM + hwarch.MiscFWStatus + 4
	if size := dev.BARSize(d.Policy.RegisterBAR); size < need {
		return nil, fmt.Errorf("bring-up probe %s: %w: BAR%d is %#x bytes, the MISC RAM needs %#x", id, ErrSmallBAR, d.Policy.RegisterBAR, size, need)
	}
	d.HBMChannelBytes = ChannelBytes(geo, d.Mode, dev.BARSize(hwarch.BAR4))
	d.step("probe", "%s %s (%s), %s, registers on BAR%d", id, g.Product(), g, d.Mode, d.Policy.RegisterBAR)
	return d, nil
}

// ChannelBytes is each HBM channel's size as the driver sizes it on a
// device of geometry geo in mode, whose BAR4 is bar4Size bytes: the active
// size, or BAR4 size / 4 on V3/V4 under QEMU (Device.HBMChannelBytes).
func ChannelBytes(geo *hwarch.Geometry, mode hwarch.Mode, bar4Size uint64) []uint64 {
	out := make([]uint64, len(geo.HBM))
	for ch, c := range geo.HBM {
		out[ch] = c.ActiveSize
		if mode == hwarch.ModeQEMU && geo.Generation != hwarch.Sunda {
			out[ch] = bar4Size / 4
		}
	}
	return out
}

func (d *Device) step(name, format string, args ...any) {
	d.Steps = append(d.Steps, Step{name, fmt.Sprintf(format, args...)})
}

// HBMBytes returns the device memory as the driver sizes it.
func (d *Device) HBMBytes() uint64 {
	var n uint64
	for _, b := range d.HBMChannelBytes {
		n += b
	}
	return n
}

// readMisc reads a MISC RAM word through the register BAR (readl).
func (d *Device) readMisc(off uint64) (uint32, error) {
	v, err := d.Dev.Read32(d.Policy.RegisterBAR, d.Geometry.BAR0.MiscRAM+off)
	if err != nil {
		return 0, fmt.Errorf("bring-up %s: read MISC RAM +%#x: %w", d.Identity, off, err)
	}
	return v, nil
}

func (d *Device) writeReg(off uint64, v uint32) error {
	if err := d.Dev.Write32(d.Policy.RegisterBAR, off, v); err != nil {
		return fmt.Errorf("bring-up %s: write BAR%d +%#x: %w", d.Identity, d.Policy.RegisterBAR, off, err)
	}
	return nil
}

// readReady reads a MISC RAM word, retrying while it returns 0xDEADBEEF as
// the driver's init-time reads do.
func (d *Device) readReady(off uint64, retries int) (uint32, error) {
	for try := 0; ; try++ {
		v, err := d.readMisc(off)
		if err != nil || v != hwarch.NotReady {
			return v, err
		}
		if try >= retries {
			return 0, fmt.Errorf("bring-up %s: MISC RAM +%#x after %d retries %v apart: %w", d.Identity, off, retries, d.Policy.ReadyInterval, ErrNotReady)
		}
		d.ReadyRetries++
		if err := ndl.Sleep(d.Dev, d.Policy.ReadyInterval); err != nil {
			return 0, err
		}
	}
}

func (d *Device) waitReady() error {
	if _, err := d.readReady(hwarch.MiscFWAPIVersion, d.Policy.ReadyRetries); err != nil {
		return err
	}
	d.step("wait-ready", "firmware answered after %d 0xDEADBEEF retries", d.ReadyRetries)
	return nil
}

func (d *Device) readIdentity(whatIf bool) error {
	rid, err := d.readReady(hwarch.MiscRoutingID, d.Policy.RoutingRetries)
	if err != nil {
		return err
	}
	if limit := RoutingIDLimit(whatIf); rid >= limit {
		why := fmt.Sprintf("must be < %d, the driver's MAX_NEURON_DEVICE_COUNT; a what-if system allows < %d", limit, MaxWhatIfRoutingID)
		if whatIf {
			why = fmt.Sprintf("must be < %d, the devices the fabric window names, even in a what-if system", limit)
		}
		return fmt.Errorf("bring-up %s: %w %d (%s)", d.Identity, ErrRoutingID, rid, why)
	}
	lo, err := d.readMisc(hwarch.MiscSerialLo)
	if err != nil {
		return err
	}
	hi, err := d.readMisc(hwarch.MiscSerialHi)
	if err != nil {
		return err
	}
	d.RoutingID, d.Serial = rid, uint64(hi)<<32|uint64(lo)
	d.step("routing-id", "routing id %d, serial %#016x", rid, d.Serial)
	return nil
}

// registerCSR registers the device's windows and checks the csr path by
// reading the routing id back through csr_read.
func (d *Device) registerCSR(opts Options) error {
	d.Table = opts.Table
	if d.Table == nil {
		d.Table = csr.NewTable(0)
	}
	d.VABase = opts.VABase
	if d.VABase == 0 {
		d.VABase = DefaultVABase + uint64(d.RoutingID)*VAStride
	}
	tables, err := arch.For(d.Generation, arch.Options{Switch: opts.Switch})
	if err != nil {
		return err
	}
	if err := csr.RegisterDevice(d.Table, tables, d.Dev, d.RoutingID, d.VABase, d.Policy.RegisterBAR); err != nil {
		return fmt.Errorf("bring-up %s: %w", d.Identity, err)
	}
	d.CSR = &csr.Layer{Regions: d.Table}
	got, err := d.CSR.Read(d.MiscVA(hwarch.MiscRoutingID))
	if err != nil {
		return fmt.Errorf("bring-up %s: csr_read of the routing id: %w", d.Identity, err)
	}
	if got != d.RoutingID {
		return fmt.Errorf("bring-up %s: csr_read of the routing id gave %d, readl gave %d", d.Identity, got, d.RoutingID)
	}
	d.step("register-csr", "%d windows from VA %#x", len(d.Table.Regions()), d.VABase)
	return nil
}

// MiscVA returns the runtime virtual address of a MISC RAM word.
func (d *Device) MiscVA(off uint64) uint64 { return d.VABase + d.Geometry.BAR0.MiscRAM + off }

// VA returns the runtime virtual address of a register BAR offset.
func (d *Device) VA(barOffset uint64) uint64 { return d.VABase + barOffset }

// ResetDevice resets the whole device as the driver's reset worker does.
func (d *Device) ResetDevice() error { return d.reset(hwarch.TPBResetMapAll) }

// ResetTPBs resets the NCs of the bit mask ncs (and the TOP_SPs they own).
func (d *Device) ResetTPBs(ncs uint32) error {
	all := uint32(1)<<d.Geometry.NeuronCores - 1
	if ncs == 0 || ncs&^all != 0 {
		return fmt.Errorf("bring-up %s: TPB reset of NC mask %#x: the device has NCs %#x", d.Identity, ncs, all)
	}
	if ncs == all {
		return d.reset(hwarch.TPBResetMapAll)
	}
	return d.reset(ncs)
}

// reset runs one reset of nc map ncMap (TPBResetMapAll for the device):
//   - V3/V4 under QEMU: the TPB map goes to the QEMU reset register, which is
//     polled until 0; no mailbox. For a device reset the map is 0, as driver
//     2.24.7.0 builds it (v3/neuron_dhal_v3.c 301–316, 339–351);
//   - V2 under QEMU: 1 goes to the QEMU reset register, then the mailbox
//     handshake starts the firmware reset, and the wait polls the QEMU
//     register until 0;
//   - otherwise: the mailbox handshake, then the wait on +0x808 bit 3.
func (d *Device) reset(ncMap uint32) error {
	p := d.Policy
	if p.QEMUResetPath && !p.QEMUThenFWIO {
		m := d.Geometry.TPBResetMap(ncMap)
		if ncMap == hwarch.TPBResetMapAll {
			m = 0
		}
		if err := d.writeReg(d.Geometry.BAR0.QEMUResetReg, m); err != nil {
			return err
		}
		if err := d.pollQEMU(); err != nil {
			return err
		}
		d.Reset = true
		return nil
	}
	if p.QEMUThenFWIO {
		if err := d.writeReg(d.Geometry.BAR0.QEMUResetReg, 1); err != nil {
			return err
		}
	}
	if err := d.firmwareReset(ncMap); err != nil {
		return err
	}
	if p.QEMUThenFWIO {
		if err := d.pollQEMU(); err != nil {
			return err
		}
	} else if err := d.waitStatus(); err != nil {
		return err
	}
	d.Reset = true
	return nil
}

// pollQEMU polls the QEMU reset register until it reads 0, as driver
// 2.24.7.0 does (v2/neuron_dhal_v2.c 211–231, v3/neuron_dhal_v3.c 384–404):
// QEMUPollTries reads, each followed by a QEMUPoll sleep (the read's value
// is judged after it) and, while non-zero, by try × StatusBackoff more.
func (d *Device) pollQEMU() error {
	for try := 0; try < d.Policy.QEMUPollTries; try++ {
		v, err := d.Dev.Read32(d.Policy.RegisterBAR, d.Geometry.BAR0.QEMUResetReg)
		if err != nil {
			return fmt.Errorf("bring-up %s: poll QEMU reset register: %w", d.Identity, err)
		}
		if err := ndl.Sleep(d.Dev, d.Policy.QEMUPoll); err != nil {
			return err
		}
		if v == 0 {
			d.step("reset-wait", "QEMU reset register %#x cleared at %s", d.Geometry.BAR0.QEMUResetReg, units.Plural(int64(try+1), "read", "reads"))
			return nil
		}
		if err := ndl.Sleep(d.Dev, time.Duration(try)*d.Policy.StatusBackoff); err != nil {
			return err
		}
	}
	return fmt.Errorf("bring-up %s: QEMU reset register still non-zero after %d reads: %w", d.Identity, d.Policy.QEMUPollTries, ErrResetTimeout)
}

// WaitResetDone waits, as the driver waits after a reset, while the
// firmware reports one in progress (FW status +0x808 bit 3): for a reset the
// runtime did not ask for itself (a fault, another agent). It polls within
// the policy's status budget; ErrResetTimeout if the reset outlasts it.
func (d *Device) WaitResetDone() error { return d.waitStatus() }

// Resetting reads the FW status once and reports whether a reset is in
// progress (bit 3), without waiting.
func (d *Device) Resetting() (bool, error) {
	st, err := d.readMisc(hwarch.MiscFWStatus)
	if err != nil {
		return false, err
	}
	return st&hwarch.FWStatusResetActive != 0, nil
}

// waitStatus reads the FW status up to StatusRetries times until bit 3
// clears, sleeping try × StatusBackoff after read try (counted from 0), as
// driver 2.24.7.0 does (v2/neuron_dhal_v2.c 189–209, v3/neuron_dhal_v3.c
// 362–382): the first two reads are back to back, the last is
// StatusBackoff × (n−1)(n−2)/2 after the first.
func (d *Device) waitStatus() error {
	st := uint32(0)
	for try := 0; try < d.Policy.StatusRetries; try++ {
		var err error
		if st, err = d.readMisc(hwarch.MiscFWStatus); err != nil {
			return err
		}
		if st&hwarch.FWStatusResetActive == 0 {
			d.step("reset-wait", "FW status bit 3 clear after %s", units.Plural(int64(try+1), "read", "reads"))
			return nil
		}
		if err := ndl.Sleep(d.Dev, time.Duration(try)*d.Policy.StatusBackoff); err != nil {
			return err
		}
	}
	return fmt.Errorf("bring-up %s: FW status %#x still has bit 3 after %d reads: %w", d.Identity, st, d.Policy.StatusRetries, ErrResetTimeout)
}

// firmwareReset is the mailbox handshake: TPB map, type, trigger; then poll
// +0x1EC for the acknowledgement, re-triggering when it is late.
func (d *Device) firmwareReset(ncMap uint32) error {
	misc := d.Geometry.BAR0.MiscRAM
	typ, retrig := hwarch.ResetTypeDevice, d.Policy.DeviceRetrig
	if ncMap != hwarch.TPBResetMapAll {
		typ, retrig = hwarch.ResetTypeTPB, d.Policy.TPBRetrig
		if err := d.writeReg(misc+hwarch.MiscResetTPBMap, d.Geometry.TPBResetMap(ncMap)); err != nil {
			return err
		}
	}
	trigger := func() error {
		if err := d.writeReg(misc+hwarch.MiscResetRequest, typ); err != nil {
			return err
		}
		return d.writeReg(misc+hwarch.MiscTrigger, 1)
	}
	if err := trigger(); err != nil {
		return err
	}
	var waited, sinceTrigger time.Duration
	polls, triggers := 0, 1
	for {
		v, err := d.readMisc(hwarch.MiscResetRequest)
		if err != nil {
			return err
		}
		if v == 0 {
			break
		}
		if waited >= d.Policy.ResetGiveUp {
			return fmt.Errorf("bring-up %s: reset type %d not acknowledged (+0x1EC = %#x) after %v and %d triggers: %w",
				d.Identity, typ, v, waited, triggers, ErrResetTimeout)
		}
		if sinceTrigger >= retrig {
			if err := trigger(); err != nil {
				return err
			}
			triggers++
			sinceTrigger = 0
		}
		if err := ndl.Sleep(d.Dev, d.Policy.AckPoll); err != nil {
			return err
		}
		polls++
		waited += d.Policy.AckPoll
		sinceTrigger += d.Policy.AckPoll
	}
	kind := "device"
	if typ == hwarch.ResetTypeTPB {
		kind = fmt.Sprintf("TPB map %#x", d.Geometry.TPBResetMap(ncMap))
	}
	d.step("reset", "%s reset acknowledged after %s, %s", kind, units.Plural(int64(polls), "poll", "polls"), units.Plural(int64(triggers), "trigger", "triggers"))
	return nil
}
