package ndl

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// Kernel virtual addresses the fake driver reports for its BARs, in the
// x86-64 vmalloc/ioremap range like the real driver's.
const (
	fakeBar0VA   = 0xffffc90010000000
	fakeBar0Size = 0x4000_0000 // 1 GiB, as a V2 BAR0
	fakeBar2VA   = 0xffffc90090000000
	fakeBar2Size = 0x10000
)

// errFakeABI marks an argument the real driver would have mishandled (a short
// struct, a wild address, a count it would overrun). Tests assert it never
// happens.
var errFakeABI = errors.New("fake kernel: ABI violation")

// fakeCall records one ioctl as the fake driver decoded it.
type fakeCall struct {
	cmd   uint32
	bar   uint32
	count uint32
	addrs []uint64 // the kernel virtual addresses copied in
}

// fakeKernel implements KernelSys as the Neuron driver would behave: it
// decodes the byte layouts it is handed, dereferences the user pointers in a
// struct neuron_ioctl_bar_rw (address list, data words) and serves sparse
// in-memory BARs addressed by kernel virtual address.
type fakeKernel struct {
	mu sync.Mutex

	info   DeviceInfo
	basic  DeviceBasicInfo
	driver DeviceDriverInfo
	bar0   map[uint64]uint32 // word at BAR offset
	bar2   map[uint64]uint32

	openErr  error
	closeErr error
	errnos   map[uint32]error // error injected per command
	failAt   int              // with failCmd: fail the failAt-th (1-based) call of failCmd
	failCmd  uint32
	failErr  error
	nCmd     map[uint32]int
	nextFD   int
	open     map[int]bool
	closed   []int
	calls    []fakeCall
	abiFault []string
}

// newFakeKernel returns a fake of a device of the given arch and revision
// with a 1 GiB APB BAR and no BAR2 (as on V2 and later).
func newFakeKernel(arch, rev uint32) *fakeKernel {
	f := &fakeKernel{
		bar0:   map[uint64]uint32{},
		bar2:   map[uint64]uint32{},
		errnos: map[uint32]error{},
		nCmd:   map[uint32]int{},
		open:   map[int]bool{},
		nextFD: 3,
	}
	f.info = DeviceInfo{
		Arch: arch, Revision: rev,
		ConnectedDeviceCount: 2,
		ConnectedDevices:     [MaxConnectedDevices]uint32{1, 3},
		BarAddress:           [MaxBars]uint64{fakeBar0VA, 0},
		BarSize:              [MaxBars]uint64{fakeBar0Size, 0},
	}
	f.basic = DeviceBasicInfo{Arch: arch, Revision: rev}
	f.driver = DeviceDriverInfo{Arch: arch, Revision: rev, Version: 0, Size: DeviceDriverInfoSize, FeatureFlags1: 0x1FF}
	return f
}

// withBar2 makes the fake report a mapped BAR2 (entry [1] of DEVICE_INFO).
func (f *fakeKernel) withBar2() *fakeKernel {
	f.info.BarAddress[1] = fakeBar2VA
	f.info.BarSize[1] = fakeBar2Size
	return f
}

func (f *fakeKernel) Open(path string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.openErr != nil {
		return -1, f.openErr
	}
	fd := f.nextFD
	f.nextFD++
	f.open[fd] = true
	return fd, nil
}

func (f *fakeKernel) Close(fd int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.open[fd] {
		return syscall.EBADF
	}
	delete(f.open, fd)
	f.closed = append(f.closed, fd)
	return f.closeErr
}

func (f *fakeKernel) fault(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	f.abiFault = append(f.abiFault, msg)
	return fmt.Errorf("%w: %s", errFakeABI, msg)
}

func (f *fakeKernel) Ioctl(fd int, cmd uint32, arg []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.open[fd] {
		return syscall.EBADF
	}
	f.nCmd[cmd]++
	if err := f.errnos[cmd]; err != nil {
		return err
	}
	if f.failErr != nil && cmd == f.failCmd && f.nCmd[cmd] == f.failAt {
		return f.failErr
	}
	switch cmd {
	case IoctlDeviceInfo:
		return f.copyOut("device_info", arg, f.info.Encode())
	case IoctlDeviceBasicInfo:
		return f.copyOut("device_basic_info", arg, f.basic.Encode())
	case IoctlDriverInfoGet:
		return f.copyOut("device_driver_info", arg, f.driver.Encode())
	case IoctlBarRead, IoctlBarWrite:
		return f.barRW(cmd, arg)
	}
	return syscall.ENOTTY
}

// copyOut is copy_to_user of a whole struct: the user buffer must hold it.
func (f *fakeKernel) copyOut(name string, arg, src []byte) error {
	if len(arg) != len(src) {
		return f.fault("%s: user buffer is %d bytes, the driver copies %d", name, len(arg), len(src))
	}
	copy(arg, src)
	return nil
}

// userPointer turns a user-space address read from an ioctl struct back into
// a pointer, as the kernel's copy_from_user/copy_to_user use it. (Written
// through the pointer's own memory so vet's unsafeptr check, which cannot know
// the memory is pinned, stays quiet.)
func userPointer(addr uint64) unsafe.Pointer {
	var p unsafe.Pointer
	*(*uintptr)(unsafe.Pointer(&p)) = uintptr(addr)
	return p
}

// barRW is ncdev_bar_rw + ncdev_bar_read / ncdev_bar_write over the fake BARs.
func (f *fakeKernel) barRW(cmd uint32, arg []byte) error {
	if len(arg) != BarRWSize {
		return f.fault("bar_rw: argument is %d bytes, want %d", len(arg), BarRWSize)
	}
	for _, i := range []int{4, 5, 6, 7, 28, 29, 30, 31} {
		if arg[i] != 0 {
			return f.fault("bar_rw: padding byte %d is %#x", i, arg[i])
		}
	}
	rw, err := DecodeBarRW(arg)
	if err != nil {
		return f.fault("bar_rw: %v", err)
	}
	if rw.Address == 0 || rw.Data == 0 {
		return syscall.EFAULT
	}
	if rw.Count == 0 {
		return f.fault("bar_rw: count 0 (kmalloc(0) in the driver)")
	}
	// "BAR2 reads are always sequential": only bar 0 copies count addresses.
	addressCount := uint32(1)
	if rw.Bar == 0 {
		addressCount = rw.Count
	}
	addrs := append([]uint64(nil), unsafe.Slice((*uint64)(userPointer(rw.Address)), addressCount)...)
	data := unsafe.Slice((*uint32)(userPointer(rw.Data)), rw.Count)
	f.calls = append(f.calls, fakeCall{cmd: cmd, bar: rw.Bar, count: rw.Count, addrs: addrs})

	if cmd == IoctlBarWrite {
		if rw.Bar != 0 {
			return syscall.EINVAL
		}
		for i, a := range addrs {
			mem, off, ok := f.decodeVA(a)
			if !ok || mem == nil {
				return syscall.EINVAL // offset > bar0_size
			}
			mem[off] = data[i]
		}
		return nil
	}
	if rw.Bar != 0 && rw.Bar != 2 {
		return syscall.EINVAL
	}
	if rw.Count > addressCount {
		// reg_read32_array would read past the one-entry address buffer.
		return f.fault("bar_rw: BAR_READ bar %d count %d reads past the %d address(es) copied in", rw.Bar, rw.Count, addressCount)
	}
	for i, a := range addrs {
		mem, off, ok := f.decodeVA(a)
		if !ok {
			return f.fault("bar_rw: readl of wild kernel address %#x", a)
		}
		data[i] = mem[off]
	}
	return nil
}

// decodeVA maps a kernel virtual address to a fake BAR and 4-aligned offset.
func (f *fakeKernel) decodeVA(a uint64) (map[uint64]uint32, uint64, bool) {
	if a%4 != 0 {
		return nil, 0, false
	}
	switch {
	case a >= f.info.BarAddress[0] && a-f.info.BarAddress[0] < f.info.BarSize[0]:
		return f.bar0, a - f.info.BarAddress[0], true
	case f.info.BarSize[1] != 0 && a >= f.info.BarAddress[1] && a-f.info.BarAddress[1] < f.info.BarSize[1]:
		return f.bar2, a - f.info.BarAddress[1], true
	}
	return nil, 0, false
}

// snapshot returns copies of what the tests assert on.
func (f *fakeKernel) snapshot() (calls []fakeCall, faults []string, openFDs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...), append([]string(nil), f.abiFault...), len(f.open)
}

func (f *fakeKernel) resetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}
