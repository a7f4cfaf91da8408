// Package kernelfake is a fake of the Neuron kernel driver 2.24.7.0 for
// tests of code that drives /dev/neuronN through runtime/ndl's kernel backend
// (ndl.OpenKernelSys). It serves the identity ioctls (DEVICE_INFO,
// DEVICE_BASIC_INFO, DRIVER_INFO_GET) and the memory ioctls (MEM_ALLOC_V2MT64,
// MEM_FREE, MEM_BUF_COPY64, MEMSET64, MEM_GET_EXTENDED_INFO) the way the
// driver's handlers do: it decodes each argument at the driver's sizes and
// field offsets, dereferences the user pointers in it, refuses what the driver
// refuses with the driver's error (errno or positive return), and keeps the
// driver's quirks (the handle written through a pointer, the kernel pointer in
// MEM_GET_EXTENDED_INFO's mem_handle, the unchecked offset+size sum, the u32
// remaining count of MEM_BUF_COPY64's device-memory loop). Anything the
// driver would mishandle (a short struct, padding that is not zero) is
// recorded as an ABI fault, which tests assert never happens.
//
// It also serves the BAR ioctls (BAR_READ, BAR_WRITE) on a register file:
// every word of the APB BAR is storage that reads back what was written
// (bar.go). The fake must only be driven by an in-process KernelDevice: the
// user pointers in the ioctl structs are dereferenced as Go memory.
package kernelfake

import (
	"fmt"
	"io/fs"
	"sync"
	"syscall"
	"unsafe"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// Constants of the driver the fake keeps.
const (
	pageSize       = 4096        // PAGE_SIZE on x86-64: allocations round up to it (neuron_mempool.c:598)
	maxDMADesc     = 64 * 1024   // MAX_DMA_DESC_SIZE: the bounce chunk of MEM_BUF_COPY (neuron_cdev.c:1105-1108)
	maxNCPerDevice = 8           // MAX_NC_PER_DEVICE (neuron_device.h:11)
	intMax         = 1<<31 - 1   // INT_MAX: the largest device alignment (neuron_mempool.c:690)
	int64Max       = 1<<63 - 1   // INT64_MAX: the largest size (neuron_mempool.c:595)
	hostBase       = 0x4000_0000 // where the fake's host allocations start (GFP_DMA32: below 4 GiB)
	kernelPointer  = 0xffff888000000000
	garbageVersion = 0xDEADBEEF // what the uninitialised version field of MEM_GET_EXTENDED_INFO holds
)

// Options configure a Driver.
type Options struct {
	// Arch and Revision are what the identity ioctls report (enum
	// neuron_arch 2, 3 or 4; the PCI revision byte).
	Arch, Revision uint32
	// ChannelBytes is the device memory of each HBM channel the fake
	// allocates from (0: 64 MiB). Allocations beyond it are ENOMEM.
	ChannelBytes uint64
	// HostBytes is the host memory the fake allocates from (0: 64 MiB).
	HostBytes uint64
	// PID is the pid MEM_GET_EXTENDED_INFO reports (0: 4242).
	PID uint64
	// BDF is the PCI address DEVICE_BDF reports (bus 0, slot 3, function 0
	// by default); NoBDF makes DEVICE_BDF unknown (ENOTTY), as an older
	// driver.
	BDF   ndl.DeviceBDF
	NoBDF bool
	// DeviceID is the PCI device id the fake's sysfs shows for that address
	// (0: the arch's first: 0x7164, 0x7364, 0x7564); NoSysfs makes the fake
	// read no sysfs at all.
	DeviceID uint16
	NoSysfs  bool
}

// chunk is one mem_chunk.
type chunk struct {
	handle  uint64
	host    bool
	channel uint32
	nc      uint32
	pa      uint64
	size    uint64
	data    []byte
}

// Call is one ioctl as the fake decoded it.
type Call struct {
	Cmd  uint32
	Name string
	Arg  []byte // a copy of the argument as the caller passed it
}

// Driver is the fake. Its exported fields are fault injections a test sets
// before (or between) calls; they are read under the driver's lock.
type Driver struct {
	mu  sync.Mutex
	opt Options
	geo *hwarch.Geometry

	// Errno makes every ioctl with that command number fail with the error
	// (after its argument was copied in).
	Errno map[uint32]error
	// CorruptCopyOut, when set, flips the bits of the byte at this offset
	// of an allocation each time MEM_BUF_COPY64 copies that byte out to a
	// user buffer: device memory that does not hold what was written.
	CorruptCopyOut *uint64

	nextFD   int
	open     map[int]bool
	chunks   map[uint64]*chunk
	free     []uint64 // freed handles, reused last-in first-out (neuron_mc_handle.c)
	nextH    uint64
	devNext  []uint64 // per channel: the next free device address
	hostNext uint64
	calls    []Call
	faults   []string
	dmaPairs int               // 64 KiB bounce chunks moved by the driver's DMA
	regs     map[uint64]uint32 // the APB BAR's words written, by offset (at most MaxRegisterWords)
}

// New returns a fake driver of one device.
func New(opt Options) (*Driver, error) {
	if opt.Arch > 0xFF || !hwarch.Generation(opt.Arch).Valid() {
		return nil, fmt.Errorf("kernelfake: arch %d: %w", opt.Arch, hwarch.ErrUnknownGeneration)
	}
	if opt.ChannelBytes == 0 {
		opt.ChannelBytes = 64 << 20
	}
	if opt.HostBytes == 0 {
		opt.HostBytes = 64 << 20
	}
	if opt.PID == 0 {
		opt.PID = 4242
	}
	if opt.BDF == (ndl.DeviceBDF{}) {
		opt.BDF = ndl.DeviceBDF{Slot: 3}
	}
	if opt.DeviceID == 0 {
		opt.DeviceID, _ = hwarch.DefaultDeviceID(hwarch.Generation(opt.Arch))
	}
	geo := hwarch.MustGeometry(hwarch.Generation(opt.Arch))
	d := &Driver{opt: opt, geo: geo, Errno: map[uint32]error{}, nextFD: 3, open: map[int]bool{}, chunks: map[uint64]*chunk{}, regs: map[uint64]uint32{}, nextH: 1, hostNext: hostBase}
	for _, c := range geo.HBM {
		d.devNext = append(d.devNext, c.Base)
	}
	return d, nil
}

// ReadSysfs implements ndl.SysfsReader: the vendor and device files of
// the fake's PCI function (Options.BDF, Options.DeviceID); any other path,
// or every path with Options.NoSysfs, does not exist.
func (d *Driver) ReadSysfs(path string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dir := "/sys/bus/pci/devices/" + d.opt.BDF.String() + "/"
	switch {
	case d.opt.NoSysfs:
	case path == dir+"vendor":
		return []byte(fmt.Sprintf("%#04x\n", hwarch.VendorAmazon)), nil
	case path == dir+"device":
		return []byte(fmt.Sprintf("%#04x\n", d.opt.DeviceID)), nil
	}
	return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
}

// Open implements ndl.KernelSys: an attaching open.
func (d *Driver) Open(string) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fd := d.nextFD
	d.nextFD++
	d.open[fd] = true
	return fd, nil
}

// Close implements ndl.KernelSys.
func (d *Driver) Close(fd int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.open[fd] {
		return syscall.EBADF
	}
	delete(d.open, fd)
	return nil
}

// Faults returns the ABI faults seen so far.
func (d *Driver) Faults() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.faults...)
}

// Calls returns the ioctls issued so far.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Call(nil), d.calls...)
}

// Live returns the number of allocations not freed.
func (d *Driver) Live() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.chunks)
}

// DMAChunks returns how many 64 KiB bounce chunks MEM_BUF_COPY64 moved to or
// from device memory (each one H2T descriptor pair in the real driver).
func (d *Driver) DMAChunks() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dmaPairs
}

// OpenFDs returns the number of open descriptors.
func (d *Driver) OpenFDs() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.open)
}

func (d *Driver) fault(format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	d.faults = append(d.faults, msg)
	return fmt.Errorf("kernelfake: ABI violation: %s", msg)
}

// userPointer turns a user-space address from an ioctl struct back into a
// pointer, as copy_from_user/copy_to_user use it. (Written through the
// pointer's own memory so vet's unsafeptr check, which cannot know the
// caller pinned the memory, stays quiet.)
func userPointer(addr uint64) unsafe.Pointer {
	var p unsafe.Pointer
	*(*uintptr)(unsafe.Pointer(&p)) = uintptr(addr)
	return p
}

func userBytes(addr, n uint64) []byte {
	return unsafe.Slice((*byte)(userPointer(addr)), n)
}

// ioctl numbers of the variants the driver accepts but the fake does not
// decode (it records a fault: the kernel backend never issues them).
const (
	cmdMemAllocV2   = 0x80084e66
	cmdMemAllocV2MT = 0x80304e66
	cmdMemBufCopy   = 0xc0084e18
	cmdMemset       = 0x80084e1c
)

func nr(cmd uint32) uint32 { return cmd & 0xFF }

// Ioctl implements ndl.KernelSys as ncdev_ioctl dispatches (neuron_cdev.c:2629-2810).
func (d *Driver) Ioctl(fd int, cmd uint32, arg []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.open[fd] {
		return syscall.EBADF
	}
	d.calls = append(d.calls, Call{Cmd: cmd, Name: name(cmd), Arg: append([]byte(nil), arg...)})
	if err := d.Errno[cmd]; err != nil {
		return err
	}
	switch {
	case cmd == ndl.IoctlDeviceInfo:
		info := ndl.DeviceInfo{Arch: d.opt.Arch, Revision: d.opt.Revision,
			BarAddress: [ndl.MaxBars]uint64{bar0VA}, BarSize: [ndl.MaxBars]uint64{d.geo.BAR0.MinimumBAR0}}
		return d.copyOut("device_info", arg, info.Encode())
	case cmd == ndl.IoctlDeviceBasicInfo:
		return d.copyOut("device_basic_info", arg, ndl.DeviceBasicInfo{Arch: d.opt.Arch, Revision: d.opt.Revision}.Encode())
	case cmd == ndl.IoctlDriverInfoGet:
		return d.copyOut("device_driver_info", arg, ndl.DeviceDriverInfo{Arch: d.opt.Arch, Revision: d.opt.Revision, Size: ndl.DeviceDriverInfoSize}.Encode())
	case cmd == ndl.IoctlDeviceBDF && !d.opt.NoBDF:
		return d.copyOut("device_bdf", arg, d.opt.BDF.Encode())
	case cmd == ndl.IoctlBarRead || cmd == ndl.IoctlBarWrite:
		return d.barRW(cmd, arg)
	case nr(cmd) == nr(ndl.IoctlMemAllocV2MT64):
		switch cmd {
		case ndl.IoctlMemAllocV2MT64:
			return d.memAlloc(arg)
		case cmdMemAllocV2, cmdMemAllocV2MT:
			return d.fault("MEM_ALLOC variant %#x is not decoded by the fake", cmd)
		}
		return syscall.EINVAL // ncdev_mem_alloc_libnrt: no variant matches (neuron_cdev.c:521-523)
	case cmd == ndl.IoctlMemGetExtendedInfo:
		return d.memInfo(arg)
	case cmd == ndl.IoctlMemFree:
		return d.memFree(arg)
	case nr(cmd) == nr(ndl.IoctlMemBufCopy64):
		switch cmd {
		case ndl.IoctlMemBufCopy64:
			return d.bufCopy(arg)
		case cmdMemBufCopy:
			return d.fault("MEM_BUF_COPY (32-bit) is not decoded by the fake")
		}
		return syscall.EINVAL // neuron_cdev.c:1074-1076
	case nr(cmd) == nr(ndl.IoctlMemset64):
		switch cmd {
		case ndl.IoctlMemset64:
			return d.memset(arg)
		case cmdMemset:
			return d.fault("MEMSET (32-bit) is not decoded by the fake")
		}
		return syscall.EINVAL // neuron_cdev.c:737-739
	}
	return syscall.ENOTTY
}

func name(cmd uint32) string {
	switch cmd {
	case ndl.IoctlDeviceInfo:
		return "DEVICE_INFO"
	case ndl.IoctlDeviceBasicInfo:
		return "DEVICE_BASIC_INFO"
	case ndl.IoctlDriverInfoGet:
		return "DRIVER_INFO_GET"
	case ndl.IoctlDeviceBDF:
		return "DEVICE_BDF"
	case ndl.IoctlMemAllocV2MT64:
		return "MEM_ALLOC_V2MT64"
	case ndl.IoctlMemFree:
		return "MEM_FREE"
	case ndl.IoctlMemBufCopy64:
		return "MEM_BUF_COPY64"
	case ndl.IoctlMemset64:
		return "MEMSET64"
	case ndl.IoctlMemGetExtendedInfo:
		return "MEM_GET_EXTENDED_INFO"
	case ndl.IoctlBarRead:
		return "BAR_READ"
	case ndl.IoctlBarWrite:
		return "BAR_WRITE"
	}
	return fmt.Sprintf("%#x", cmd)
}

// copyOut is copy_to_user of a whole struct into the argument.
func (d *Driver) copyOut(what string, arg, src []byte) error {
	if len(arg) != len(src) {
		return d.fault("%s: user buffer is %d bytes, the driver copies %d", what, len(arg), len(src))
	}
	copy(arg, src)
	return nil
}

// copyIn is copy_from_user of a whole struct: the argument must hold it and
// its padding must be zero (the kernel backend encodes it so).
func (d *Driver) copyIn(what string, arg []byte, size int, pads ...int) error {
	if len(arg) != size {
		return d.fault("%s: argument is %d bytes, the driver copies %d", what, len(arg), size)
	}
	for _, p := range pads {
		if arg[p] != 0 {
			return d.fault("%s: padding byte %d is %#x", what, p, arg[p])
		}
	}
	return nil
}

// memAlloc is ncdev_mem_alloc_libnrt + mc_alloc_internal (neuron_cdev.c:453-546,
// neuron_mempool.c:579-792).
func (d *Driver) memAlloc(arg []byte) error {
	if err := d.copyIn("mem_alloc_v2_mem_type64", arg, ndl.MemAllocV2MT64Size, 36, 37, 38, 39, 52, 53, 54, 55); err != nil {
		return err
	}
	a, _ := ndl.DecodeMemAllocV2MT64(arg)
	if a.Size > int64Max {
		return syscall.EINVAL
	}
	size := (a.Size + pageSize - 1) / pageSize * pageSize
	if a.DRAMChannel >= uint32(len(d.geo.HBM)) || a.NC >= maxNCPerDevice {
		return syscall.EINVAL
	}
	// dram_region: one region (shared mode), so it is forced to 0
	// (neuron_mempool.c:609-610).
	c := &chunk{host: a.HostMemory != 0, channel: a.DRAMChannel, nc: a.NC, size: size}
	if c.host {
		if a.Align != 0 {
			return syscall.EINVAL // neuron_mempool.c:624-629
		}
		if size > d.opt.HostBytes-(d.hostNext-hostBase) {
			return syscall.ENOMEM
		}
		c.pa = d.hostNext | d.geo.HostAddressBit
		d.hostNext += size
	} else {
		if a.Align > intMax {
			return syscall.EINVAL
		}
		align := uint64(pageSize)
		if a.Align > pageSize {
			align = a.Align
		}
		base := d.geo.HBM[a.DRAMChannel].Base
		p := (d.devNext[a.DRAMChannel] + align - 1) / align * align
		if p-base > d.opt.ChannelBytes || size > d.opt.ChannelBytes-(p-base) {
			return syscall.ENOMEM
		}
		c.pa = p
		d.devNext[a.DRAMChannel] = p + size
	}
	c.data = make([]byte, size)
	if n := len(d.free); n > 0 {
		c.handle, d.free = d.free[n-1], d.free[:n-1]
	} else {
		c.handle = d.nextH
		d.nextH++
	}
	// copy_to_user(mem_handle, &mh, sizeof(mc)): 8 bytes through the
	// pointer; on a fault the chunk is freed and the count of bytes not
	// copied returned (neuron_cdev.c:536-545).
	if a.HandleAddr == 0 {
		d.free = append(d.free, c.handle)
		return &ndl.DriverReturnError{Value: 8}
	}
	*(*uint64)(userPointer(a.HandleAddr)) = c.handle
	d.chunks[c.handle] = c
	return nil
}

func (d *Driver) lookup(h uint64) *chunk { return d.chunks[h] }

// memFree is ncdev_mem_free (neuron_cdev.c:688-704).
func (d *Driver) memFree(arg []byte) error {
	if err := d.copyIn("mem_free", arg, ndl.MemFreeSize); err != nil {
		return err
	}
	s, _ := ndl.DecodeMemFree(arg)
	if d.lookup(s.Handle) == nil {
		return syscall.EINVAL
	}
	delete(d.chunks, s.Handle)
	d.free = append(d.free, s.Handle)
	return nil
}

// memInfo is ncdev_mem_get_extended_info (neuron_cdev.c:591-620), with its
// positive EINVAL and its garbage version field.
func (d *Driver) memInfo(arg []byte) error {
	if err := d.copyIn("mem_get_extended_info", arg, ndl.MemExtendedInfoSize); err != nil {
		return err
	}
	s, _ := ndl.DecodeMemExtendedInfo(arg)
	c := d.lookup(s.Handle)
	if c == nil {
		return &ndl.DriverReturnError{Value: uint64(syscall.EINVAL)}
	}
	out := ndl.MemExtendedInfo{Handle: kernelPointer + c.handle*0x100, Version: garbageVersion, PA: c.pa, MmapOffset: c.pa, PID: d.opt.PID, Size: c.size}
	if c.host {
		out.HostMemory = 1
	}
	copy(arg, out.Encode())
	return nil
}

// bufCopy is ncdev_mem_buf_copy for the 64-bit struct (neuron_cdev.c:1042-1144).
func (d *Driver) bufCopy(arg []byte) error {
	if err := d.copyIn("mem_buf_copy64", arg, ndl.MemBufCopy64Size, 36, 37, 38, 39); err != nil {
		return err
	}
	s, _ := ndl.DecodeMemBufCopy64(arg)
	c := d.lookup(s.Handle)
	if c == nil {
		return syscall.EINVAL
	}
	if s.Offset+s.Size > c.size { // unguarded sum, as mc_access_is_within_bounds
		return syscall.EINVAL
	}
	if s.Offset+s.Size < s.Offset {
		return d.fault("mem_buf_copy64: offset %#x + size %#x wraps; the driver's bounds check passes it and writes out of bounds", s.Offset, s.Size)
	}
	if s.Size > 0 && s.Buffer == 0 {
		return &ndl.DriverReturnError{Value: s.Size}
	}
	if c.host {
		user := userBytes(s.Buffer, s.Size)
		if s.ToMem != 0 {
			copy(c.data[s.Offset:], user)
		} else {
			copy(user, c.data[s.Offset:s.Offset+s.Size])
			d.corrupt(c, s.Offset, user)
		}
		return nil
	}
	remaining := uint32(s.Size) // u32 remaining = size (neuron_cdev.c:1103)
	var done uint32
	for remaining > 0 {
		n := min(remaining, maxDMADesc)
		user := userBytes(s.Buffer+uint64(done), uint64(n))
		off := s.Offset + uint64(done)
		if s.ToMem != 0 {
			copy(c.data[off:], user)
		} else {
			copy(user, c.data[off:off+uint64(n)])
			d.corrupt(c, off, user)
		}
		d.dmaPairs++
		remaining -= n
		done += n
	}
	return nil
}

// corrupt applies CorruptCopyOut to bytes of c at offset off copied out to user.
func (d *Driver) corrupt(c *chunk, off uint64, user []byte) {
	if d.CorruptCopyOut == nil {
		return
	}
	if at := *d.CorruptCopyOut; at >= off && at-off < uint64(len(user)) {
		user[at-off] ^= 0xFF
	}
}

// memset is ncdev_memset for the 64-bit struct (neuron_cdev.c:706-756).
func (d *Driver) memset(arg []byte) error {
	if err := d.copyIn("memset64", arg, ndl.Memset64Size, 20, 21, 22, 23); err != nil {
		return err
	}
	s, _ := ndl.DecodeMemset64(arg)
	c := d.lookup(s.Handle)
	if c == nil {
		return syscall.EINVAL
	}
	if s.Offset+s.Size > c.size {
		return syscall.EINVAL
	}
	if s.Offset+s.Size < s.Offset {
		return d.fault("memset64: offset %#x + size %#x wraps", s.Offset, s.Size)
	}
	for i := s.Offset; i < s.Offset+s.Size; i++ {
		c.data[i] = byte(s.Value)
	}
	return nil
}

// Bytes returns a copy of an allocation's contents (the test's own view).
func (d *Driver) Bytes(h ndl.MemHandle) ([]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.lookup(uint64(h))
	if c == nil {
		return nil, false
	}
	return append([]byte(nil), c.data...), true
}
