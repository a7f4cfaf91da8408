package ndl

// The user-space ABI of the Neuron kernel driver that the kernel backend uses
// (neuron_ioctl.h; driver-facts §3). Every struct here is the LP64,
// little-endian layout of its C counterpart, written to and read from a byte
// slice field by field with encoding/binary; no Go struct is ever handed to the
// kernel as-is. Pointer-typed C fields (__u64 *, __u32 *) are uint64 here: the
// caller stores a user-space address in them (see KernelDevice for how that
// memory is kept alive and pinned).

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrABITruncated is returned (wrapped with the struct name and the sizes)
// when a byte slice is too short to hold the driver struct being decoded.
var ErrABITruncated = errors.New("driver struct truncated")

// le is the byte order of every supported target (x86-64 and aarch64).
var le = binary.LittleEndian

// IoctlDir is the direction field of an ioctl command number, as the kernel's
// _IOC_NONE / _IOC_WRITE / _IOC_READ macros (include/uapi/asm-generic/ioctl.h)
// define it on x86-64 and aarch64. The direction is seen from user space:
// _IOC_WRITE means user space writes (the driver reads the argument).
type IoctlDir uint32

// The ioctl directions.
const (
	IocNone      IoctlDir = 0 // _IOC_NONE
	IocWrite     IoctlDir = 1 // _IOC_WRITE
	IocRead      IoctlDir = 2 // _IOC_READ
	IocReadWrite IoctlDir = 3 // _IOC_READ|_IOC_WRITE (_IOWR)
)

// NeuronIoctlBase is the ioctl type ("magic") byte of every Neuron ioctl,
// NEURON_IOCTL_BASE = 'N' (0x4E).
const NeuronIoctlBase = 'N'

// Field positions of an ioctl command number (_IOC_NRSHIFT, _IOC_TYPESHIFT,
// _IOC_SIZESHIFT, _IOC_DIRSHIFT) and the widths that bound them.
const (
	iocNrShift   = 0
	iocTypeShift = 8
	iocSizeShift = 16
	iocDirShift  = 30
	iocSizeMax   = 1<<14 - 1 // _IOC_SIZEBITS = 14
	iocDirMax    = 3         // _IOC_DIRBITS = 2
)

// ioctlPointerSize is the size _IOC encodes for the many Neuron ioctls whose
// "type" argument is a pointer (`struct X *`): 8 on LP64, whatever the real
// struct's size (driver-facts §3, "Important").
const ioctlPointerSize = 8

// IoctlCommand returns the ioctl command number of a Neuron ioctl:
// dir<<30 | size<<16 | 'N'<<8 | nr, as the kernel's _IOC(dir, 'N', nr, size)
// macro computes it on x86-64 and aarch64. A direction above 3 or a size that
// does not fit the 14-bit size field is an error (the kernel's _IOC_TYPECHECK
// would refuse it at compile time).
func IoctlCommand(dir IoctlDir, nr uint8, size uint32) (uint32, error) {
	if dir > iocDirMax {
		return 0, fmt.Errorf("ndl kernel: ioctl direction %d out of range 0..%d", dir, iocDirMax)
	}
	if size > iocSizeMax {
		return 0, fmt.Errorf("ndl kernel: ioctl nr %d: argument size %d does not fit the 14-bit size field (max %d)", nr, size, iocSizeMax)
	}
	return uint32(dir)<<iocDirShift | size<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | uint32(nr)<<iocNrShift, nil
}

// The ioctl numbers the kernel backend issues, written out from the _IOC
// formula (and checked against IoctlCommand and literal values in the tests).
const (
	// IoctlDeviceInfo is NEURON_IOCTL_DEVICE_INFO =
	// _IOR('N', 3, struct neuron_ioctl_device_info *) = 0x80084e03.
	// The argument points to an 80-byte DeviceInfo.
	IoctlDeviceInfo uint32 = uint32(IocRead)<<iocDirShift | ioctlPointerSize<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 3

	// IoctlBarRead is NEURON_IOCTL_BAR_READ =
	// _IOR('N', 11, struct neuron_ioctl_bar_rw *) = 0x80084e0b.
	// The argument points to a 32-byte BarRW.
	IoctlBarRead uint32 = uint32(IocRead)<<iocDirShift | ioctlPointerSize<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 11

	// IoctlBarWrite is NEURON_IOCTL_BAR_WRITE =
	// _IOW('N', 12, struct neuron_ioctl_bar_rw *) = 0x40084e0c.
	// The argument points to a 32-byte BarRW.
	IoctlBarWrite uint32 = uint32(IocWrite)<<iocDirShift | ioctlPointerSize<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 12

	// IoctlDeviceBasicInfo is NEURON_IOCTL_DEVICE_BASIC_INFO =
	// _IOW('N', 100, struct neuron_ioctl_device_basic_info *) = 0x40084e64.
	// Despite the _IOW direction the driver writes the 8-byte DeviceBasicInfo
	// to the argument (ncdev_device_basic_info: copy_to_user).
	IoctlDeviceBasicInfo uint32 = uint32(IocWrite)<<iocDirShift | ioctlPointerSize<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 100

	// IoctlDriverInfoGet is NEURON_IOCTL_DRIVER_INFO_GET =
	// _IOR('N', 110, struct neuron_ioctl_device_driver_info) = 0x80184e6e
	// (a struct type, so the encoded size is the real 24 bytes).
	IoctlDriverInfoGet uint32 = uint32(IocRead)<<iocDirShift | DeviceDriverInfoSize<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 110
)

// ioctlName returns the driver's name of a command number for error messages.
func ioctlName(cmd uint32) string {
	switch cmd {
	case IoctlDeviceInfo:
		return "DEVICE_INFO"
	case IoctlBarRead:
		return "BAR_READ"
	case IoctlBarWrite:
		return "BAR_WRITE"
	case IoctlDeviceBasicInfo:
		return "DEVICE_BASIC_INFO"
	case IoctlDriverInfoGet:
		return "DRIVER_INFO_GET"
	case IoctlDeviceBDF:
		return "DEVICE_BDF"
	case IoctlMemAllocV2MT64:
		return "MEM_ALLOC_V2MT64"
	case IoctlMemFree:
		return "MEM_FREE"
	case IoctlMemBufCopy64:
		return "MEM_BUF_COPY64"
	case IoctlMemset64:
		return "MEMSET64"
	case IoctlMemGetExtendedInfo:
		return "MEM_GET_EXTENDED_INFO"
	}
	return fmt.Sprintf("ioctl %#x", cmd)
}

// Sizes of the driver structs (sizeof on LP64).
const (
	BarRWSize            = 32 // sizeof(struct neuron_ioctl_bar_rw)
	DeviceInfoSize       = 80 // sizeof(struct neuron_ioctl_device_info)
	DeviceBasicInfoSize  = 8  // sizeof(struct neuron_ioctl_device_basic_info)
	DeviceDriverInfoSize = 24 // sizeof(struct neuron_ioctl_device_driver_info)
)

// Array bounds of struct neuron_ioctl_device_info.
const (
	MaxConnectedDevices = 8 // NEURON_IOCTL_MAX_CONNECTED_DEVICES
	MaxBars             = 2 // NEURON_MAX_BARS
)

func checkLen(name string, b []byte, size int) error {
	if len(b) < size {
		return fmt.Errorf("ndl kernel: %s: %w: have %d bytes, want %d", name, ErrABITruncated, len(b), size)
	}
	return nil
}

// BarRW mirrors struct neuron_ioctl_bar_rw (32 bytes), the argument of
// NEURON_IOCTL_BAR_READ and NEURON_IOCTL_BAR_WRITE:
//
//	offset  0  __u32  bar
//	offset  8  __u64 *address  (4 bytes of padding before it)
//	offset 16  __u32 *data
//	offset 24  __u32  count    (4 bytes of tail padding after it)
//
// Address is the user-space address of an array of kernel virtual addresses
// (u64): the driver's ioremap VA of the BAR (DeviceInfo.BarAddress) plus a byte
// offset. For bar 0 the driver copies Count addresses; for any other bar it
// copies only one (ncdev_bar_rw). Data is the user-space address of Count u32
// words, filled by a read and consumed by a write.
type BarRW struct {
	Bar     uint32
	Address uint64
	Data    uint64
	Count   uint32
}

// Encode returns the 32-byte wire form of s; padding bytes are zero.
func (s BarRW) Encode() []byte {
	b := make([]byte, BarRWSize)
	s.encodeTo(b)
	return b
}

// encodeTo writes s into b[:BarRWSize], zeroing the padding.
func (s BarRW) encodeTo(b []byte) {
	b = b[:BarRWSize]
	clear(b)
	le.PutUint32(b[0:], s.Bar)
	le.PutUint64(b[8:], s.Address)
	le.PutUint64(b[16:], s.Data)
	le.PutUint32(b[24:], s.Count)
}

// DecodeBarRW reads a struct neuron_ioctl_bar_rw from the first 32 bytes of
// b. A shorter b is an error wrapping ErrABITruncated; bytes past 32 and the
// padding are ignored.
func DecodeBarRW(b []byte) (BarRW, error) {
	if err := checkLen("struct neuron_ioctl_bar_rw", b, BarRWSize); err != nil {
		return BarRW{}, err
	}
	return BarRW{
		Bar:     le.Uint32(b[0:]),
		Address: le.Uint64(b[8:]),
		Data:    le.Uint64(b[16:]),
		Count:   le.Uint32(b[24:]),
	}, nil
}

// DeviceInfo mirrors struct neuron_ioctl_device_info (80 bytes), filled by
// NEURON_IOCTL_DEVICE_INFO (ncdev_device_info):
//
//	offset  0  __u32 architecture
//	offset  4  __u32 revision
//	offset  8  __u32 connected_device_count
//	offset 12  __u32 connected_devices[8]
//	offset 44  (4 bytes of padding: bar_address is 8-aligned)
//	offset 48  __u64 bar_address[2]
//	offset 64  __u64 bar_size[2]
//
// BarAddress[0]/BarSize[0] are the driver's npdev.bar0 ioremap VA and length:
// whichever PCI BAR is the APB BAR (PCI BAR2 under V2 QEMU, BAR0 otherwise).
// BarAddress[1]/BarSize[1] are npdev.bar2, NULL/0 on V2 and later. BAR4 is not
// reported.
type DeviceInfo struct {
	Arch                 uint32
	Revision             uint32
	ConnectedDeviceCount uint32
	ConnectedDevices     [MaxConnectedDevices]uint32
	BarAddress           [MaxBars]uint64
	BarSize              [MaxBars]uint64
}

// Encode returns the 80-byte wire form of s; the padding is zero.
func (s DeviceInfo) Encode() []byte {
	b := make([]byte, DeviceInfoSize)
	le.PutUint32(b[0:], s.Arch)
	le.PutUint32(b[4:], s.Revision)
	le.PutUint32(b[8:], s.ConnectedDeviceCount)
	for i, d := range s.ConnectedDevices {
		le.PutUint32(b[12+4*i:], d)
	}
	for i := range MaxBars {
		le.PutUint64(b[48+8*i:], s.BarAddress[i])
		le.PutUint64(b[64+8*i:], s.BarSize[i])
	}
	return b
}

// DecodeDeviceInfo reads a struct neuron_ioctl_device_info from the first 80
// bytes of b. A shorter b is an error wrapping ErrABITruncated; the padding
// at 44 and bytes past 80 are ignored. The connected device count is returned
// as the driver wrote it, not checked against the array bound (the driver
// itself refuses counts above 8).
func DecodeDeviceInfo(b []byte) (DeviceInfo, error) {
	if err := checkLen("struct neuron_ioctl_device_info", b, DeviceInfoSize); err != nil {
		return DeviceInfo{}, err
	}
	s := DeviceInfo{
		Arch:                 le.Uint32(b[0:]),
		Revision:             le.Uint32(b[4:]),
		ConnectedDeviceCount: le.Uint32(b[8:]),
	}
	for i := range s.ConnectedDevices {
		s.ConnectedDevices[i] = le.Uint32(b[12+4*i:])
	}
	for i := range MaxBars {
		s.BarAddress[i] = le.Uint64(b[48+8*i:])
		s.BarSize[i] = le.Uint64(b[64+8*i:])
	}
	return s, nil
}

// DeviceBasicInfo mirrors struct neuron_ioctl_device_basic_info (8 bytes),
// filled by NEURON_IOCTL_DEVICE_BASIC_INFO: architecture u32 @0 (enum
// neuron_arch: 2, 3, 4) and revision u32 @4 (the PCI revision byte).
type DeviceBasicInfo struct {
	Arch     uint32
	Revision uint32
}

// Encode returns the 8-byte wire form of s.
func (s DeviceBasicInfo) Encode() []byte {
	b := make([]byte, DeviceBasicInfoSize)
	le.PutUint32(b[0:], s.Arch)
	le.PutUint32(b[4:], s.Revision)
	return b
}

// DecodeDeviceBasicInfo reads a struct neuron_ioctl_device_basic_info from
// the first 8 bytes of b; a shorter b is an error wrapping ErrABITruncated.
func DecodeDeviceBasicInfo(b []byte) (DeviceBasicInfo, error) {
	if err := checkLen("struct neuron_ioctl_device_basic_info", b, DeviceBasicInfoSize); err != nil {
		return DeviceBasicInfo{}, err
	}
	return DeviceBasicInfo{Arch: le.Uint32(b[0:]), Revision: le.Uint32(b[4:])}, nil
}

// DeviceDriverInfo mirrors struct neuron_ioctl_device_driver_info (24
// bytes), filled by NEURON_IOCTL_DRIVER_INFO_GET (ncdev_driver_info):
//
//	offset  0  __u32 architecture
//	offset  4  __u32 revision
//	offset  8  __u32 version        (NEURON_DEVICE_DRIVER_INFO_VERSION0 = 0)
//	offset 12  __u32 size           (sizeof the struct, 24)
//	offset 16  __u64 feature_flags1 (enum neuron_driver_feature_flag bits)
type DeviceDriverInfo struct {
	Arch          uint32
	Revision      uint32
	Version       uint32
	Size          uint32
	FeatureFlags1 uint64
}

// Encode returns the 24-byte wire form of s.
func (s DeviceDriverInfo) Encode() []byte {
	b := make([]byte, DeviceDriverInfoSize)
	le.PutUint32(b[0:], s.Arch)
	le.PutUint32(b[4:], s.Revision)
	le.PutUint32(b[8:], s.Version)
	le.PutUint32(b[12:], s.Size)
	le.PutUint64(b[16:], s.FeatureFlags1)
	return b
}

// DecodeDeviceDriverInfo reads a struct neuron_ioctl_device_driver_info from
// the first 24 bytes of b; a shorter b is an error wrapping ErrABITruncated.
func DecodeDeviceDriverInfo(b []byte) (DeviceDriverInfo, error) {
	if err := checkLen("struct neuron_ioctl_device_driver_info", b, DeviceDriverInfoSize); err != nil {
		return DeviceDriverInfo{}, err
	}
	return DeviceDriverInfo{
		Arch:          le.Uint32(b[0:]),
		Revision:      le.Uint32(b[4:]),
		Version:       le.Uint32(b[8:]),
		Size:          le.Uint32(b[12:]),
		FeatureFlags1: le.Uint64(b[16:]),
	}, nil
}
