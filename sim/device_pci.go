package sim

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/bar"
)

// Configuration space layout of the model (docs/device-model.md
// §Configuration space): a type-0 header, then the capability list.
const (
	// CapOffsetPM is where the power-management capability sits; it is the
	// first capability of the list.
	CapOffsetPM = 0x40
	// CapOffsetPCIe is where the PCI Express capability sits; it ends the list.
	CapOffsetPCIe = 0x50

	pcieCapLen = 0x3C // a version-2 PCI Express capability of an endpoint

	// MinBARSize is the smallest memory BAR PCI allows (16 bytes).
	MinBARSize = 16
)

// PCIe capability register offsets, relative to the capability.
const (
	pcieFlags   = 0x02
	pcieDevCap  = 0x04
	pcieDevCtl  = 0x08
	pcieDevSta  = 0x0A
	pcieLnkCap  = 0x0C
	pcieLnkCtl  = 0x10
	pcieLnkSta  = 0x12
	pcieDevCap2 = 0x24
	pcieDevCtl2 = 0x28
	pcieLnkCap2 = 0x2C
	pcieLnkCtl2 = 0x30
)

// pciConfig is the PCI-compatible part of the configuration space: the bytes
// the guest reads, and per byte which bits a write may set (wmask) and which
// a write of 1 clears (w1c). Everything else is read-only, as on hardware:
// writes to read-only or reserved bits are ignored. The extended space
// (0x100..0xFFF) holds no capability and reads as zero.
type pciConfig struct {
	space [hwarch.ConfigCompatSize]byte
	init  [hwarch.ConfigCompatSize]byte // the power-on image, for ResetConfig
	wmask [hwarch.ConfigCompatSize]byte
	w1c   [hwarch.ConfigCompatSize]byte
	stats ConfigStats
}

// ConfigStats counts configuration-space accesses. Like the space itself it
// is not part of a DeviceSnapshot.
type ConfigStats struct {
	Reads, Writes uint64 // accesses served
	Refused       uint64 // accesses outside the space or of no bytes
}

func (c *pciConfig) put8(off int, v, wmask uint8) {
	c.space[off], c.wmask[off] = v, wmask
}

func (c *pciConfig) put16(off int, v, wmask uint16) {
	binary.LittleEndian.PutUint16(c.space[off:], v)
	binary.LittleEndian.PutUint16(c.wmask[off:], wmask)
}

func (c *pciConfig) put32(off int, v, wmask uint32) {
	binary.LittleEndian.PutUint32(c.space[off:], v)
	binary.LittleEndian.PutUint32(c.wmask[off:], wmask)
}

func (c *pciConfig) w1c16(off int, mask uint16) {
	binary.LittleEndian.PutUint16(c.w1c[off:], mask)
}

// pcieLink is the link a generation's function reports: speed code (1 =
// 2.5 GT/s … 4 = 16 GT/s, 5 = 32 GT/s) and width. The values are the model's
// choice (the driver reads neither): Gen4 x16 for V2, Gen5 x16 for V3/V4.
func pcieLink(g hwarch.Generation) (speed, width uint32) {
	if g == hwarch.Sunda {
		return 4, 16
	}
	return 5, 16
}

// checkBARSizes refuses BAR sizes a PCI function cannot have: each present
// BAR is a 64-bit BAR, so it sits on an even slot with its upper half on the
// next one, and its size is a power of two no smaller than MinBARSize.
func checkBARSizes(name string, s bar.Sizes) error {
	for b, size := range s {
		if size == 0 {
			continue
		}
		if b%2 == 1 {
			return fmt.Errorf("sim device %s: BAR%d of %#x bytes: slot %d is the upper half of 64-bit BAR%d and cannot hold a BAR of its own", name, b, size, b, b-1)
		}
		if size < MinBARSize || bits.OnesCount64(size) != 1 {
			return fmt.Errorf("sim device %s: BAR%d of %#x bytes: a PCI memory BAR's size is a power of two of at least %d bytes", name, b, size, MinBARSize)
		}
	}
	return nil
}

// newPCIConfig builds the power-on configuration space of a function with
// identity id, generation g and BAR sizes s (already checked by
// checkBARSizes).
func newPCIConfig(id hwarch.PCIIdentity, g hwarch.Generation, s bar.Sizes) *pciConfig {
	c := new(pciConfig)
	c.put16(hwarch.CfgVendorID, id.Vendor, 0)
	c.put16(hwarch.CfgDeviceID, id.Device, 0)
	// No I/O BAR, so I/O space enable is hard-wired 0; memory space, bus
	// master, parity and SERR reporting and INTx disable are writable.
	c.put16(hwarch.CfgCommand, 0, hwarch.CmdMemorySpace|hwarch.CmdBusMaster|hwarch.CmdParityErr|hwarch.CmdSERR|hwarch.CmdIntxDisable)
	c.put16(hwarch.CfgStatus, hwarch.StatusCapList, 0)
	// Error bits of the status register are write-1-to-clear: master data
	// parity error (8), signalled/received target abort (11, 12), received
	// master abort (13), signalled system error (14), detected parity (15).
	c.w1c16(hwarch.CfgStatus, 0xF900)
	c.put8(hwarch.CfgRevision, id.Revision, 0)
	class := hwarch.ClassNeuron
	c.put8(hwarch.CfgClassCode, uint8(class), 0)
	c.put8(hwarch.CfgClassCode+1, uint8(class>>8), 0)
	c.put8(hwarch.CfgClassCode+2, uint8(class>>16), 0)
	c.put8(hwarch.CfgCacheLineSize, 0, 0xFF)
	c.put8(hwarch.CfgHeaderType, 0, 0) // type 0, single function
	for b := 0; b < len(s); b += 2 {
		size := s[b]
		if size == 0 {
			continue
		}
		// A 64-bit prefetchable memory BAR: the address bits at and above
		// the size are writable, the low four bits are its type.
		addrMask := ^(size - 1)
		off := hwarch.CfgBAR0 + 4*b
		c.put32(off, hwarch.BARMem64|hwarch.BARPrefetchable, uint32(addrMask)&^0xF)
		c.put32(off+4, 0, uint32(addrMask>>32))
	}
	c.put16(hwarch.CfgSubsysVendor, id.Vendor, 0)
	c.put16(hwarch.CfgSubsysID, id.Device, 0)
	c.put8(hwarch.CfgCapPointer, CapOffsetPM, 0)
	c.put8(hwarch.CfgInterruptLine, 0, 0xFF) // the firmware's routing note
	c.put8(hwarch.CfgInterruptPin, 1, 0)     // INTA#

	// Power management, version 3, D0 and D3hot only; NoSoftReset set, so
	// D3hot → D0 keeps the device's state.
	p := CapOffsetPM
	c.put8(p, hwarch.CapIDPowerManagement, 0)
	c.put8(p+1, CapOffsetPCIe, 0)
	c.put16(p+2, 0x0003, 0)
	c.put16(p+4, 1<<3, 0x0003)

	// PCI Express capability, version 2, an endpoint.
	p = CapOffsetPCIe
	speed, width := pcieLink(g)
	c.put8(p, hwarch.CapIDPCIExpress, 0)
	c.put8(p+1, 0, 0) // the end of the list
	c.put16(p+pcieFlags, hwarch.PCIeTypeEndpoint<<4|2, 0)
	// Max payload 512 B, extended tags, role-based error reporting.
	c.put32(p+pcieDevCap, 2|1<<5|1<<15, 0)
	// Reset value: relaxed ordering, no snoop, max read request 512 B.
	// Writable: error reporting enables, relaxed ordering, max payload,
	// extended tags, no snoop, max read request.
	c.put16(p+pcieDevCtl, 1<<4|1<<11|2<<12, 0x79FF)
	c.w1c16(p+pcieDevSta, 0x000F) // correctable/non-fatal/fatal/unsupported request detected
	c.put32(p+pcieLnkCap, speed|width<<4|1<<22, 0)
	// ASPM control, read completion boundary, common clock, extended synch.
	c.put16(p+pcieLnkCtl, 0, 0x00CB)
	c.put16(p+pcieLnkSta, uint16(speed|width<<4|1<<12), 0) // slot clock configuration
	// Completion timeout ranges A-D and completion timeout disable.
	c.put32(p+pcieDevCap2, 0x1F, 0)
	c.put16(p+pcieDevCtl2, 0, 0x001F)
	c.put32(p+pcieLnkCap2, ((1<<speed)-1)<<1, 0)  // supported link speeds vector
	c.put16(p+pcieLnkCtl2, uint16(speed), 0x000F) // target link speed
	c.init = c.space
	return c
}

// read copies the bytes at off into p; bytes past the PCI-compatible space
// read as zero. The range was checked by the caller.
func (c *pciConfig) read(off int, p []byte) {
	clear(p)
	if off < len(c.space) {
		copy(p, c.space[off:])
	}
}

// write stores p at off byte by byte: writable bits take the new value,
// write-1-to-clear bits are cleared where p has a 1, every other bit keeps
// its value. A power state the function does not support (D1, D2) is
// ignored, as the PM specification asks.
func (c *pciConfig) write(off int, p []byte) {
	pmcsr := CapOffsetPM + 4
	oldState := c.space[pmcsr] & 3
	for i, v := range p {
		o := off + i
		if o >= len(c.space) {
			break
		}
		b := c.space[o]
		b = b&^c.wmask[o] | v&c.wmask[o]
		b &^= v & c.w1c[o]
		c.space[o] = b
	}
	if st := c.space[pmcsr] & 3; st == 1 || st == 2 {
		c.space[pmcsr] = c.space[pmcsr]&^3 | oldState
	}
}

// checkConfig refuses an access of n bytes at off outside the configuration
// space or of no bytes.
func (d *Device) checkConfig(op string, off uint64, n int) error {
	if n == 0 || n > hwarch.ConfigSpaceSize || off > uint64(hwarch.ConfigSpaceSize-n) {
		d.pci.stats.Refused++
		return fmt.Errorf("sim device %s: config %s of %d bytes at offset %#x: %w (the space is %d bytes, 0x0..%#x)",
			d.cfg.Name, op, n, off, hwarch.ErrConfigAccess, hwarch.ConfigSpaceSize, hwarch.ConfigSpaceSize-1)
	}
	if d.st.Closed {
		return fmt.Errorf("sim device %s: config %s at offset %#x: %w", d.cfg.Name, op, off, hwarch.ErrDeviceClosed)
	}
	return nil
}

// ReadConfig reads len(p) bytes of PCI configuration space at offset off
// into p, little-endian as on the bus. Any length from 1 byte to the whole
// 4 KiB space and any offset are allowed as long as the access lies inside
// the space; an access past its end, or of no bytes, is refused with an
// error wrapping hwarch.ErrConfigAccess. Config accesses take no device time.
func (d *Device) ReadConfig(off uint64, p []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkConfig("read", off, len(p)); err != nil {
		return err
	}
	d.pci.read(int(off), p)
	d.pci.stats.Reads++
	return nil
}

// WriteConfig writes p to PCI configuration space at offset off with the
// same bounds as ReadConfig. Writes to read-only and reserved bits are
// ignored, error bits are cleared by writing 1, and BAR registers keep only
// the address bits their size allows, so writing all-ones to a BAR and
// reading it back yields its size mask (the guest's BAR sizing).
func (d *Device) WriteConfig(off uint64, p []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkConfig("write", off, len(p)); err != nil {
		return err
	}
	d.pci.write(int(off), p)
	d.pci.stats.Writes++
	return nil
}

// ConfigSize returns the size of the configuration space in bytes,
// hwarch.ConfigSpaceSize (4 KiB: a PCI Express function's).
func (d *Device) ConfigSize() uint64 { return hwarch.ConfigSpaceSize }

// ResetConfig returns the configuration space to its power-on image (BAR
// addresses, command register and every other writable field), as a
// function-level or bus reset does. The rest of the device is untouched.
func (d *Device) ResetConfig() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pci.space = d.pci.init
}

// ConfigStats returns the configuration-space access counts.
func (d *Device) ConfigStats() ConfigStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pci.stats
}
