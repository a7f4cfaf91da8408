package ndl

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// IoctlDeviceBDF is NEURON_IOCTL_DEVICE_BDF = _IOR('N', 101, struct
// neuron_ioctl_device_bdf *) = 0x80084e65 (neuron_ioctl.h 716): the
// driver writes the device's PCI bus, slot and function (ncdev_device_bdf,
// neuron_cdev.c 1468–1475) into the 8-byte DeviceBDF.
const IoctlDeviceBDF uint32 = uint32(IocRead)<<iocDirShift | ioctlPointerSize<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 101

// DeviceBDFSize is sizeof(struct neuron_ioctl_device_bdf): u32 bus, u8
// slot, u8 func, two bytes of padding (neuron_ioctl.h 436–440).
const DeviceBDFSize = 8

// DeviceBDF is struct neuron_ioctl_device_bdf.
type DeviceBDF struct {
	Bus        uint32
	Slot, Func uint8
}

// Encode returns the struct's bytes.
func (b DeviceBDF) Encode() []byte {
	out := make([]byte, DeviceBDFSize)
	le.PutUint32(out, b.Bus)
	out[4], out[5] = b.Slot, b.Func
	return out
}

// DecodeDeviceBDF reads the struct, refusing a bus, slot or function no
// PCI address can have (bus < 256, slot < 32, function < 8).
func DecodeDeviceBDF(p []byte) (DeviceBDF, error) {
	if err := checkLen("neuron_ioctl_device_bdf", p, DeviceBDFSize); err != nil {
		return DeviceBDF{}, err
	}
	b := DeviceBDF{Bus: le.Uint32(p), Slot: p[4], Func: p[5]}
	if b.Bus > 0xFF || b.Slot > 0x1F || b.Func > 7 {
		return b, fmt.Errorf("ndl kernel: DEVICE_BDF reports bus %#x slot %#x function %d: not a PCI address", b.Bus, b.Slot, b.Func)
	}
	return b, nil
}

// String is the address as sysfs names it, in PCI domain 0 (the ioctl
// gives no domain: the Neuron devices of an instance are in domain 0).
func (b DeviceBDF) String() string { return fmt.Sprintf("0000:%02x:%02x.%d", b.Bus, b.Slot, b.Func) }

// SysfsReader is implemented by a KernelSys that can read sysfs files
// (the real one does; a test fake may). The kernel backend reads the
// device's PCI vendor and device id there, since no ioctl reports the
// device id.
type SysfsReader interface {
	ReadSysfs(path string) ([]byte, error)
}

// maxSysfsFile bounds a sysfs attribute read ("0x7264\n" is 7 bytes).
const maxSysfsFile = 64

// pciID reads a sysfs attribute holding a 16-bit hex id ("0x1d0f\n").
func pciID(r SysfsReader, path string) (uint16, error) {
	b, err := r.ReadSysfs(path)
	if err != nil {
		return 0, err
	}
	if len(b) > maxSysfsFile {
		return 0, fmt.Errorf("%s: %d bytes, more than an id", path, len(b))
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 16)
	if err != nil || !strings.HasPrefix(s, "0x") {
		return 0, fmt.Errorf("%s: %q is not a 16-bit hex id", path, s)
	}
	return uint16(v), nil
}

// lookUpPCI asks the driver for the device's PCI address and, when the
// seam reads sysfs, the device id the function reports there. A driver
// that does not know DEVICE_BDF (ENOTTY, EINVAL) gives no address, and a
// sysfs without the function (none mounted) gives no id: found is false;
// any other failure — an unreadable or malformed id, a foreign vendor, a
// device of another generation than the driver's arch — is an error.
func (k *KernelDevice) lookUpPCI(gen hwarch.Generation) (device uint16, found bool, err error) {
	var buf [DeviceBDFSize]byte
	if err := k.sys.Ioctl(k.fd, IoctlDeviceBDF, buf[:]); err != nil {
		if errors.Is(err, syscall.ENOTTY) || errors.Is(err, syscall.EINVAL) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("ndl kernel: %s: DEVICE_BDF: %w", k.path, err)
	}
	bdf, err := DecodeDeviceBDF(buf[:])
	if err != nil {
		return 0, false, err
	}
	k.bdf = bdf.String()
	r, ok := k.sys.(SysfsReader)
	if !ok {
		return 0, false, nil
	}
	dir := "/sys/bus/pci/devices/" + k.bdf + "/"
	vendor, err := pciID(r, dir+"vendor")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil // no sysfs here (a container, say): the id comes from the arch
	}
	if err != nil {
		return 0, false, fmt.Errorf("ndl kernel: %s: %w", k.path, err)
	}
	if device, err = pciID(r, dir+"device"); err != nil {
		return 0, false, fmt.Errorf("ndl kernel: %s: %w", k.path, err)
	}
	g, err := hwarch.GenerationOfDevice(vendor, device)
	if err != nil {
		return 0, false, fmt.Errorf("ndl kernel: %s: PCI function %s: %w", k.path, k.bdf, err)
	}
	if g != gen {
		return 0, false, fmt.Errorf("ndl kernel: %s: PCI function %s is a %s device (%#04x) but the driver reports arch %s",
			k.path, k.bdf, g.Product(), device, gen.KernelName())
	}
	return device, true, nil
}

// BDF returns the device's PCI address as the driver reported it
// ("0000:00:03.0"), or "" when the driver did not say.
func (k *KernelDevice) BDF() string { return k.bdf }
