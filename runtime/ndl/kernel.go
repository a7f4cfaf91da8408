package ndl

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// ErrKernelUnsupported is returned by OpenKernel on an OS or architecture the
// kernel backend does not drive: it needs Linux on a 64-bit little-endian
// target whose ioctl encoding is the generic one (x86-64 or aarch64, the only
// hosts the Neuron driver is built for).
var ErrKernelUnsupported = errors.New("kernel backend unsupported on this OS/architecture")

// maxWordsPerIoctl bounds the count of one BAR_READ / BAR_WRITE. The driver
// kmallocs count*8 bytes of addresses and count*4 bytes of data per call, so a
// long access is split into calls of at most this many words (8 KiB of
// addresses each) rather than asking the kernel for one large allocation.
const maxWordsPerIoctl = 1024

// KernelSys is the seam between KernelDevice and the operating system: open
// a device node, issue an ioctl whose argument is the byte buffer arg (the
// kernel receives &arg[0]), close the descriptor. The Linux implementation
// uses the standard syscall package; tests substitute a fake that decodes arg
// exactly as the driver would (runtime/ndl/kernelfake), through
// OpenKernelSys.
//
// Any pointer stored inside arg (BarRW.Address, BarRW.Data) must stay valid
// and unmoved for the duration of Ioctl; KernelDevice pins that memory with a
// runtime.Pinner before the call and unpins it after.
type KernelSys interface {
	Open(path string) (fd int, err error)
	Ioctl(fd int, cmd uint32, arg []byte) error
	Close(fd int) error
}

// KernelOptions tunes OpenKernelWithOptions.
type KernelOptions struct {
	// DeviceID is the PCI device id Identity reports. None of the driver's
	// info ioctls (DEVICE_INFO, DEVICE_BASIC_INFO, DRIVER_INFO_GET) returns the
	// device id, only the arch (enum neuron_arch) and the PCI revision, so by
	// default (DeviceID 0) the backend asks the driver for the device's PCI
	// address (DEVICE_BDF) and reads the id from sysfs
	// (/sys/bus/pci/devices/ADDR/device; an Inf2 is 0x7264); when the
	// driver does not answer DEVICE_BDF or the seam reads no sysfs
	// (SysfsReader), it is derived from the arch with hw/arch.DefaultDeviceID:
	// V2 → 0x7164 (Trn1), V3 → 0x7364 (Trn2), V4 → 0x7564 (Trn3). A sysfs id
	// or a DeviceID whose generation differs from the arch the driver
	// reports is an error.
	DeviceID uint16
}

// KernelDevice is a Device backed by the Neuron kernel driver: one open
// /dev/neuronN on which register reads and writes are NEURON_IOCTL_BAR_READ
// and NEURON_IOCTL_BAR_WRITE ioctls addressed by kernel virtual address (the
// driver's ioremap of the BAR, taken from NEURON_IOCTL_DEVICE_INFO, plus the
// offset).
//
// BAR numbers are PCI BAR numbers, as on every ndl.Device. The APB
// (register) BAR — PCI BAR0, or BAR2 on V2 and V3 under QEMU — is what the driver
// calls bar0: BAR_READ/BAR_WRITE with bar 0 and DEVICE_INFO
// bar_address[0]/bar_size[0]. Any other BAR 2 maps onto entry [1] (the
// driver's bar2, NULL/0 on V2 and later, so reads fail with ErrBadBAR there).
// BAR 4 (device memory) is not reachable through these ioctls.
//
// A KernelDevice is safe for concurrent use; calls are serialised by a mutex.
type KernelDevice struct {
	mu     sync.Mutex
	sys    KernelSys
	fd     int
	path   string
	closed bool
	info   DeviceInfo
	id     hwarch.PCIIdentity
	apbBAR int    // PCI BAR of the registers: the driver's bar 0
	bdf    string // PCI address from DEVICE_BDF, or ""
	geo    *hwarch.Geometry

	// Memory handles allocated through this device (MemAlloc), with what
	// MEM_GET_EXTENDED_INFO said of them; guarded by mu.
	mem map[MemHandle]MemInfo
	// copyChunk is the most bytes one MEM_BUF_COPY64 carries:
	// MaxBufCopyChunk (tests lower it).
	copyChunk int

	// Scratch memory of the BAR ioctls, reused under mu. addrs is handed to
	// the kernel by address and pinned for each call; arg is the bar_rw struct
	// itself, passed as the ioctl argument.
	addrs  []uint64
	arg    [BarRWSize]byte
	pinner runtime.Pinner
}

// KernelDevice implements Device.
var _ Device = (*KernelDevice)(nil)

// OpenKernel opens a Neuron device node such as "/dev/neuron0" through the
// kernel driver, with the default options (device id derived from the arch).
// See OpenKernelWithOptions.
func OpenKernel(path string) (*KernelDevice, error) {
	return OpenKernelWithOptions(path, KernelOptions{})
}

// OpenKernelWithOptions opens a Neuron device node (O_RDWR, which attaches
// the process: BAR_WRITE needs an attached process) and reads its identity:
// NEURON_IOCTL_DEVICE_INFO for the APB BAR's kernel virtual address and size,
// NEURON_IOCTL_DEVICE_BASIC_INFO for the arch and PCI revision. On any failure
// the descriptor is closed again. On an OS other than Linux x86-64/aarch64 it
// returns an error wrapping ErrKernelUnsupported.
func OpenKernelWithOptions(path string, opts KernelOptions) (*KernelDevice, error) {
	return openKernelWith(hostKernelSys(), path, opts)
}

// OpenKernelSys is OpenKernelWithOptions on an explicit KernelSys: the
// host's system calls are replaced by sys (a fake driver in tests).
func OpenKernelSys(sys KernelSys, path string, opts KernelOptions) (*KernelDevice, error) {
	return openKernelWith(sys, path, opts)
}

// openKernelWith is OpenKernelWithOptions on an explicit syscall seam.
func openKernelWith(sys KernelSys, path string, opts KernelOptions) (*KernelDevice, error) {
	fd, err := sys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ndl kernel: open %s: %w", path, err)
	}
	k := &KernelDevice{sys: sys, fd: fd, path: path, addrs: make([]uint64, maxWordsPerIoctl), mem: map[MemHandle]MemInfo{}, copyChunk: MaxBufCopyChunk}
	if err := k.identify(opts); err != nil {
		if cerr := sys.Close(fd); cerr != nil {
			err = errors.Join(err, fmt.Errorf("ndl kernel: close %s: %w", path, cerr))
		}
		return nil, err
	}
	return k, nil
}

// identify issues DEVICE_INFO and DEVICE_BASIC_INFO and fills info and id.
func (k *KernelDevice) identify(opts KernelOptions) error {
	var buf [DeviceInfoSize]byte
	if err := k.sys.Ioctl(k.fd, IoctlDeviceInfo, buf[:]); err != nil {
		return fmt.Errorf("ndl kernel: %s: DEVICE_INFO: %w", k.path, err)
	}
	info, err := DecodeDeviceInfo(buf[:])
	if err != nil {
		return err
	}
	var bbuf [DeviceBasicInfoSize]byte
	if err := k.sys.Ioctl(k.fd, IoctlDeviceBasicInfo, bbuf[:]); err != nil {
		return fmt.Errorf("ndl kernel: %s: DEVICE_BASIC_INFO: %w", k.path, err)
	}
	basic, err := DecodeDeviceBasicInfo(bbuf[:])
	if err != nil {
		return err
	}

	if info.Arch != basic.Arch || info.Revision != basic.Revision {
		return fmt.Errorf("ndl kernel: %s: DEVICE_INFO reports arch %d revision %#x but DEVICE_BASIC_INFO reports arch %d revision %#x",
			k.path, info.Arch, info.Revision, basic.Arch, basic.Revision)
	}
	if basic.Arch > 0xFF || !hwarch.Generation(basic.Arch).Valid() {
		return fmt.Errorf("ndl kernel: %s: driver reports arch %d: %w (want 2 (V2), 3 (V3) or 4 (V4))",
			k.path, basic.Arch, hwarch.ErrUnknownGeneration)
	}
	gen := hwarch.Generation(basic.Arch)
	if basic.Revision > 0xFF {
		return fmt.Errorf("ndl kernel: %s: driver reports PCI revision %#x: %w (a PCI revision is one byte)",
			k.path, basic.Revision, hwarch.ErrBadRevision)
	}
	if info.BarAddress[0] == 0 || info.BarSize[0] == 0 {
		return fmt.Errorf("ndl kernel: %s: DEVICE_INFO reports no APB BAR (bar_address[0] %#x, bar_size[0] %#x)",
			k.path, info.BarAddress[0], info.BarSize[0])
	}
	for i := range MaxBars {
		if info.BarAddress[i]+info.BarSize[i] < info.BarAddress[i] {
			return fmt.Errorf("ndl kernel: %s: DEVICE_INFO bar_address[%d] %#x + bar_size[%d] %#x overflows 64 bits",
				k.path, i, info.BarAddress[i], i, info.BarSize[i])
		}
	}

	device := opts.DeviceID
	inSysfs, found, err := k.lookUpPCI(gen)
	if err != nil {
		return err
	}
	if device == 0 && found {
		device = inSysfs
	} else if device == 0 {
		if device, err = hwarch.DefaultDeviceID(gen); err != nil {
			return fmt.Errorf("ndl kernel: %s: %w", k.path, err)
		}
	} else {
		g, err := hwarch.GenerationOfDevice(hwarch.VendorAmazon, device)
		if err != nil {
			return fmt.Errorf("ndl kernel: %s: option DeviceID: %w", k.path, err)
		}
		if g != gen {
			return fmt.Errorf("ndl kernel: %s: option DeviceID %#04x is a %s (%s) device but the driver reports arch %d (%s)",
				k.path, device, g.KernelName(), g.Product(), basic.Arch, gen.KernelName())
		}
	}

	k.info = info
	k.id = hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: device, Revision: uint8(basic.Revision)}
	k.geo = hwarch.MustGeometry(gen)
	k.apbBAR = k.geo.BAR0.RegisterBAR(k.id.Mode())
	return nil
}

// Identity returns the PCI identity: vendor 0x1D0F, the device id (from
// KernelOptions.DeviceID or derived from the arch; the driver does not report
// it) and the PCI revision from DEVICE_BASIC_INFO. It stays valid after Close.
func (k *KernelDevice) Identity() hwarch.PCIIdentity { return k.id }

// Info returns the struct neuron_ioctl_device_info read by
// NEURON_IOCTL_DEVICE_INFO when the device was opened (arch, revision,
// connected devices, BAR kernel virtual addresses and sizes).
func (k *KernelDevice) Info() DeviceInfo { return k.info }

// BARSize returns the size of a BAR as NEURON_IOCTL_DEVICE_INFO reported it:
// the APB BAR → bar_size[0]; any other BAR 2 → bar_size[1] (0 on V2 and later,
// where the driver maps no BAR2). BAR 4 → 0: the driver does map BAR4 (device
// memory) but DEVICE_INFO does not report its size, so through this backend it
// is unknown and unreachable. Any other BAR → 0. The cached sizes stay
// available after Close.
func (k *KernelDevice) BARSize(bar int) uint64 {
	switch {
	case bar == k.apbBAR:
		return k.info.BarSize[0]
	case bar == 2:
		return k.info.BarSize[1]
	}
	return 0
}

// DriverInfo issues NEURON_IOCTL_DRIVER_INFO_GET and returns the driver's
// struct neuron_ioctl_device_driver_info (arch, revision, struct version and
// size, feature_flags1).
func (k *KernelDevice) DriverInfo() (DeviceDriverInfo, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return DeviceDriverInfo{}, fmt.Errorf("ndl kernel: %s: DRIVER_INFO_GET: %w", k.path, ErrClosed)
	}
	var buf [DeviceDriverInfoSize]byte
	if err := k.sys.Ioctl(k.fd, IoctlDriverInfoGet, buf[:]); err != nil {
		return DeviceDriverInfo{}, fmt.Errorf("ndl kernel: %s: DRIVER_INFO_GET: %w", k.path, err)
	}
	return DecodeDeviceDriverInfo(buf[:])
}

// ReadBAR reads len(dst) 32-bit words from byte offset off of BAR bar with
// NEURON_IOCTL_BAR_READ.
//
//   - BAR 0: one ioctl per maxWordsPerIoctl words, each carrying the array of
//     kernel virtual addresses bar_address[0]+off+4i.
//   - BAR 2: the driver copies in only one address for any bar but 0 yet
//     reads count words (ncdev_bar_rw), so only count=1 is safe: one ioctl per
//     word. Fails with ErrBadBAR where the driver maps no BAR2 (V2 and later).
//   - BAR 4 and any other BAR: ErrBadBAR without an ioctl (the driver answers
//     BAR_READ on bar 4 with EINVAL).
//
// off must be 4-aligned (ErrAlignment) and off+4*len(dst) within the BAR
// (ErrBAROffset). A zero-length read is a no-op. After Close: ErrClosed.
func (k *KernelDevice) ReadBAR(bar int, off uint64, dst []uint32) error {
	return k.access(IoctlBarRead, "read", bar, off, dst)
}

// WriteBAR writes src as 32-bit words at byte offset off of BAR bar with
// NEURON_IOCTL_BAR_WRITE. The driver accepts writes to bar 0 only, so any
// other BAR is ErrBadBAR; alignment, range, zero length and Close behave as in
// ReadBAR. The driver itself refuses writes to some blocked addresses (EINVAL,
// returned wrapped).
func (k *KernelDevice) WriteBAR(bar int, off uint64, src []uint32) error {
	return k.access(IoctlBarWrite, "write", bar, off, src)
}

// access validates one ReadBAR / WriteBAR and issues its ioctls.
func (k *KernelDevice) access(cmd uint32, op string, bar int, off uint64, words []uint32) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return fmt.Errorf("ndl kernel: %s bar %d offset %#x count %d: %w", op, bar, off, len(words), ErrClosed)
	}
	if len(words) == 0 {
		return nil
	}
	base, size, err := k.window(cmd, bar)
	if err != nil {
		return fmt.Errorf("ndl kernel: %s bar %d offset %#x count %d: %w", op, bar, off, len(words), err)
	}
	if off%4 != 0 {
		return fmt.Errorf("ndl kernel: %s bar %d offset %#x count %d: %w", op, bar, off, len(words), ErrAlignment)
	}
	n := uint64(len(words))
	if n > size/4 || off > size-4*n {
		return fmt.Errorf("ndl kernel: %s bar %d offset %#x count %d: %w (BAR size %#x)", op, bar, off, len(words), ErrBAROffset, size)
	}

	ioctlBar, step := uint32(0), maxWordsPerIoctl
	if bar != k.apbBAR {
		ioctlBar, step = uint32(bar), 1 // only count=1 is safe for any bar but the driver's bar 0
	}
	for start := 0; start < len(words); start += step {
		chunk := words[start:min(start+step, len(words))]
		chunkOff := off + 4*uint64(start)
		if err := k.barRW(cmd, ioctlBar, base+chunkOff, chunk); err != nil {
			return fmt.Errorf("ndl kernel: %s bar %d offset %#x count %d: %w", ioctlName(cmd), bar, chunkOff, len(chunk), err)
		}
	}
	return nil
}

// window returns the kernel virtual address and size of the BAR an access
// goes to, or an error wrapping ErrBadBAR naming why the BAR is unreachable.
func (k *KernelDevice) window(cmd uint32, bar int) (base, size uint64, err error) {
	switch {
	case bar == k.apbBAR:
		return k.info.BarAddress[0], k.info.BarSize[0], nil
	case bar == 0:
		return 0, 0, fmt.Errorf("%w: the registers are on PCI BAR%d in this mode; the driver maps no BAR0", ErrBadBAR, k.apbBAR)
	case bar == 2 && cmd == IoctlBarWrite:
		return 0, 0, fmt.Errorf("%w: the driver's BAR_WRITE accepts bar 0 only", ErrBadBAR)
	case bar == 2:
		if k.info.BarAddress[1] == 0 || k.info.BarSize[1] == 0 {
			return 0, 0, fmt.Errorf("%w: the driver maps no BAR2 on this device (DEVICE_INFO bar_address[1] %#x, bar_size[1] %#x)",
				ErrBadBAR, k.info.BarAddress[1], k.info.BarSize[1])
		}
		return k.info.BarAddress[1], k.info.BarSize[1], nil
	case bar == 4:
		return 0, 0, fmt.Errorf("%w: BAR4 (device memory) is not reachable through BAR_READ/BAR_WRITE (the driver returns EINVAL)", ErrBadBAR)
	}
	return 0, 0, fmt.Errorf("%w: the driver's BAR ioctls know bars 0 and 2 only", ErrBadBAR)
}

// barRW issues one BAR_READ or BAR_WRITE of len(words) words at the
// consecutive kernel virtual addresses va, va+4, ... The struct
// neuron_ioctl_bar_rw carries the user-space addresses of two Go arrays — the
// address list (k.addrs) and the data words — so both are pinned with
// k.pinner (the GC may neither move nor free them while the kernel holds their
// addresses) and kept alive until the ioctl has returned.
func (k *KernelDevice) barRW(cmd uint32, bar uint32, va uint64, words []uint32) error {
	addrs := k.addrs[:len(words)]
	for i := range addrs {
		addrs[i] = va + 4*uint64(i)
	}
	k.pinner.Pin(&addrs[0])
	k.pinner.Pin(&words[0])
	defer k.pinner.Unpin()

	BarRW{
		Bar:     bar,
		Address: userAddress(&addrs[0]),
		Data:    userAddress(&words[0]),
		Count:   uint32(len(words)),
	}.encodeTo(k.arg[:])
	err := k.sys.Ioctl(k.fd, cmd, k.arg[:])
	runtime.KeepAlive(addrs)
	runtime.KeepAlive(words)
	return err
}

// userAddress returns the address of *p as the kernel sees a user-space
// pointer. This and the ioctl call itself are the package's only uses of
// unsafe; the caller must pin *p for as long as the kernel may use the address.
func userAddress[T any](p *T) uint64 {
	return uint64(uintptr(unsafe.Pointer(p)))
}

// Read32 reads one word with ReadBAR.
func (k *KernelDevice) Read32(bar int, off uint64) (uint32, error) {
	var w [1]uint32
	err := k.ReadBAR(bar, off, w[:])
	return w[0], err
}

// Write32 writes one word with WriteBAR.
func (k *KernelDevice) Write32(bar int, off uint64, v uint32) error {
	w := [1]uint32{v}
	return k.WriteBAR(bar, off, w[:])
}

// Close closes the device node. Later calls of ReadBAR, WriteBAR,
// DriverInfo and Close return an error wrapping ErrClosed; Identity, Info and
// BARSize keep returning the values read at open. The descriptor counts as
// closed even when close(2) reports an error, which is returned wrapped.
func (k *KernelDevice) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return fmt.Errorf("ndl kernel: close %s: %w", k.path, ErrClosed)
	}
	k.closed = true
	if err := k.sys.Close(k.fd); err != nil {
		return fmt.Errorf("ndl kernel: close %s: %w", k.path, err)
	}
	return nil
}
