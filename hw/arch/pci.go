package arch

import (
	"errors"
	"fmt"

	"github.com/neuronsim/neuronsim/internal/units"
)

// PCI identity values (driver-facts §1).
const (
	VendorAmazon uint16 = 0x1D0F // AMZN_VENDOR_ID

	DeviceTrn1  uint16 = 0x7164 // Trainium1 → V2
	DeviceInf2  uint16 = 0x7264 // Inferentia2 → V2
	DeviceTrn2  uint16 = 0x7364 // Trainium2 → V3
	DeviceTrn3  uint16 = 0x7564 // Trainium3 → V4
	DeviceTrn3B uint16 = 0x7565 // Trainium3, second id → V4
)

// PCI revision ids with a special meaning; every other revision is silicon.
const (
	RevisionEMU  uint8 = 0xF0 // hardware emulator (driver: narch_is_emu)
	RevisionQEMU uint8 = 0xFF // QEMU ("inkling") simulation (driver: narch_is_qemu)
)

// Errors of the PCI identity.
var (
	ErrUnknownVendor   = errors.New("unknown PCI vendor")
	ErrUnknownDeviceID = errors.New("unknown PCI device id")
	ErrBadRevision     = errors.New("bad PCI revision")
)

// Mode says whether a device is real silicon or one of the emulation targets.
// It is derived from the PCI revision alone.
type Mode uint8

// The modes.
const (
	ModeSilicon Mode = iota // any revision other than 0xF0 and 0xFF
	ModeEMU                 // revision 0xF0
	ModeQEMU                // revision 0xFF
)

// ModeOf returns the mode a PCI revision selects.
func ModeOf(revision uint8) Mode {
	switch revision {
	case RevisionEMU:
		return ModeEMU
	case RevisionQEMU:
		return ModeQEMU
	default:
		return ModeSilicon
	}
}

// String returns "silicon", "emu" or "qemu".
func (m Mode) String() string {
	switch m {
	case ModeSilicon:
		return "silicon"
	case ModeEMU:
		return "emu"
	case ModeQEMU:
		return "qemu"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

var deviceGenerations = []struct {
	device uint16
	gen    Generation
	name   string
}{
	{DeviceTrn1, Sunda, "Trn1"},
	{DeviceInf2, Sunda, "Inf2"},
	{DeviceTrn2, Cayman, "Trn2"},
	{DeviceTrn3, Mariana, "Trn3"},
	{DeviceTrn3B, Mariana, "Trn3"},
}

// GenerationOfDevice maps a PCI vendor and device id to a generation, as the
// driver's neuron_pci_set_device_architecture does. A foreign vendor or an
// unknown device id is an error naming the value and the known ids.
func GenerationOfDevice(vendor, device uint16) (Generation, error) {
	if vendor != VendorAmazon {
		return Invalid, fmt.Errorf("%w %#04x (want %#04x)", ErrUnknownVendor, vendor, VendorAmazon)
	}
	for _, d := range deviceGenerations {
		if d.device == device {
			return d.gen, nil
		}
	}
	return Invalid, fmt.Errorf("%w %#04x: known ids are 0x7164 (Trn1), 0x7264 (Inf2), 0x7364 (Trn2), 0x7564 and 0x7565 (Trn3)",
		ErrUnknownDeviceID, device)
}

// DefaultDeviceID returns the device id a simulated device of generation g
// reports by default: Trn1 for sunda, Trn2 for cayman, the first Trn3 id for
// mariana.
func DefaultDeviceID(g Generation) (uint16, error) {
	for _, d := range deviceGenerations {
		if d.gen == g {
			return d.device, nil
		}
	}
	return 0, fmt.Errorf("%w %d", ErrUnknownGeneration, uint8(g))
}

// DefaultProduct returns the product of the device id a simulated device
// of generation g reports by default (DefaultDeviceID): "Trn1" for sunda,
// "Trn2", "Trn3"; "" for an unknown generation.
func DefaultProduct(g Generation) string {
	def, err := DefaultDeviceID(g)
	if err != nil {
		return ""
	}
	return ProductOfDevice(def)
}

// ProductOfDevice returns the product name of a device id ("Trn1", "Inf2",
// "Trn2", "Trn3"), or "" when the id is unknown.
func ProductOfDevice(device uint16) string {
	for _, d := range deviceGenerations {
		if d.device == device {
			return d.name
		}
	}
	return ""
}

// PCIIdentity is what a PCI function reports in its configuration space and
// what the runtime's arch selection reads.
type PCIIdentity struct {
	Vendor   uint16
	Device   uint16
	Revision uint8
}

// Generation returns the generation the identity selects.
func (id PCIIdentity) Generation() (Generation, error) {
	return GenerationOfDevice(id.Vendor, id.Device)
}

// Mode returns silicon, EMU or QEMU from the revision.
func (id PCIIdentity) Mode() Mode { return ModeOf(id.Revision) }

// String formats the identity as "1d0f:7564 rev 0xf0".
func (id PCIIdentity) String() string {
	return fmt.Sprintf("%04x:%04x rev %#02x", id.Vendor, id.Device, id.Revision)
}

// ParseRevision reads a PCI revision from "silicon" (0x00), "emu" (0xF0),
// "qemu" (0xFF) or a number such as "0x01" or "240".
func ParseRevision(s string) (uint8, error) {
	switch units.Word(s) {
	case "silicon":
		return 0, nil
	case "emu":
		return RevisionEMU, nil
	case "qemu":
		return RevisionQEMU, nil
	}
	v, err := units.ParseUint("revision", s, 0xFF) // 010 is ten, never octal
	if err != nil {
		return 0, fmt.Errorf("%w %q: want silicon, emu, qemu or a number 0..0xff", ErrBadRevision, s)
	}
	return uint8(v), nil
}

// PCI configuration space of a Neuron function as the simulated device
// presents it (docs/device-model.md §Configuration space). Offsets are the
// PCI Local Bus and PCI Express Base specifications' type-0 header ones.
const (
	// ConfigSpaceSize is the configuration space of a PCI Express function:
	// the 256-byte PCI-compatible space and the extended space to 4 KiB.
	ConfigSpaceSize = 4096
	// ConfigCompatSize is the PCI-compatible part (the header and the
	// capability list).
	ConfigCompatSize = 256

	CfgVendorID      = 0x00  // u16
	CfgDeviceID      = 0x02  // u16
	CfgCommand       = 0x04  // u16
	CfgStatus        = 0x06  // u16
	CfgRevision      = 0x08  // u8
	CfgClassCode     = 0x09  // u24: prog-if, subclass, base class
	CfgCacheLineSize = 0x0C  // u8
	CfgLatencyTimer  = 0x0D  // u8
	CfgHeaderType    = 0x0E  // u8
	CfgBIST          = 0x0F  // u8
	CfgBAR0          = 0x10  // six u32 BAR registers, 0x10..0x27
	CfgSubsysVendor  = 0x2C  // u16
	CfgSubsysID      = 0x2E  // u16
	CfgROMBAR        = 0x30  // u32
	CfgCapPointer    = 0x34  // u8
	CfgInterruptLine = 0x3C  // u8
	CfgInterruptPin  = 0x3D  // u8
	CfgExtCapStart   = 0x100 // the first extended capability header

	// ClassNeuron is the class code the model reports: base class 0x08
	// (system peripheral), subclass 0x80 (other), programming interface 0.
	// The value is the model's choice (the driver matches on vendor and
	// device id only, neuron_pci.c 31-42).
	ClassNeuron uint32 = 0x08_80_00

	// Command register bits.
	CmdMemorySpace  uint16 = 1 << 1    // decode memory BARs
	CmdBusMaster    uint16 = 1 << 2    // the function may DMA
	CmdParityErr    uint16 = 1 << 6    // parity error response
	CmdSERR         uint16 = 1 << 8    // SERR# enable
	CmdIntxDisable  uint16 = 1 << 10   // INTx emulation disable
	StatusCapList   uint16 = 1 << 4    // the capability list at CfgCapPointer exists
	StatusIntxState uint16 = 1 << 3    // an INTx is pending (never, this driver polls)
	BARMem64        uint32 = 0b10 << 1 // BAR type: 64-bit memory
	BARPrefetchable uint32 = 1 << 3    // BAR type: prefetchable

	CapIDPowerManagement uint8 = 0x01 // power-management capability
	CapIDPCIExpress      uint8 = 0x10 // PCI Express capability
	// PCIeTypeEndpoint is the device/port type field (bits 7:4 of the PCI
	// Express Capabilities register) of a PCI Express endpoint.
	PCIeTypeEndpoint = 0
)

// ErrConfigAccess is the error of a configuration-space access outside the
// space or of no bytes.
var ErrConfigAccess = errors.New("bad PCI configuration space access")

// DeviceOfProduct returns the PCI device id a product word names ("trn1"
// 0x7164, "inf2" 0x7264, "trn2" 0x7364, "trn3" 0x7564; case and spaces
// ignored), and false for any other word (a generation name such as
// "sunda" names no single product).
func DeviceOfProduct(word string) (uint16, bool) {
	w := units.Word(word)
	for _, d := range deviceGenerations {
		if units.Word(d.name) == w {
			return d.device, true
		}
	}
	return 0, false
}
