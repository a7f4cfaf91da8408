package kernelfake

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// The fake refuses what the driver's handlers refuse, with their errors,
// for raw arguments the kernel backend never sends.
func TestDriverRefusals(t *testing.T) {
	var handle uint64
	var pin runtime.Pinner
	pin.Pin(&handle)
	defer pin.Unpin()
	addr := uint64(uintptr(unsafe.Pointer(&handle)))
	alloc := func(a ndl.MemAllocV2MT64) []byte { a.HandleAddr = addr; return a.Encode() }
	tests := []struct {
		name string
		cmd  uint32
		arg  []byte
		want error
	}{
		{"size above INT64_MAX", ndl.IoctlMemAllocV2MT64, alloc(ndl.MemAllocV2MT64{Size: 1 << 63}), syscall.EINVAL},
		{"channel", ndl.IoctlMemAllocV2MT64, alloc(ndl.MemAllocV2MT64{Size: 1, DRAMChannel: 2}), syscall.EINVAL},
		{"nc 8", ndl.IoctlMemAllocV2MT64, alloc(ndl.MemAllocV2MT64{Size: 1, NC: 8}), syscall.EINVAL},
		{"host align", ndl.IoctlMemAllocV2MT64, alloc(ndl.MemAllocV2MT64{Size: 1, HostMemory: 1, Align: 4096}), syscall.EINVAL},
		{"align above INT_MAX", ndl.IoctlMemAllocV2MT64, alloc(ndl.MemAllocV2MT64{Size: 1, Align: 1 << 31}), syscall.EINVAL},
		{"no room", ndl.IoctlMemAllocV2MT64, alloc(ndl.MemAllocV2MT64{Size: 64<<20 + 1}), syscall.ENOMEM},
		{"unknown size variant", 0x80404e66, alloc(ndl.MemAllocV2MT64{Size: 1}), syscall.EINVAL},
		{"free unknown", ndl.IoctlMemFree, ndl.MemFree{Handle: 5}.Encode(), syscall.EINVAL},
		{"copy unknown", ndl.IoctlMemBufCopy64, ndl.MemBufCopy64{Handle: 5, Buffer: addr, Size: 1}.Encode(), syscall.EINVAL},
		{"memset unknown", ndl.IoctlMemset64, ndl.Memset64{Handle: 5, Size: 1}.Encode(), syscall.EINVAL},
		{"info unknown: +EINVAL", ndl.IoctlMemGetExtendedInfo, ndl.MemExtendedInfo{Handle: 5}.Encode(), &ndl.DriverReturnError{Value: 22}},
		{"handle pointer NULL: 8 bytes not copied", ndl.IoctlMemAllocV2MT64, ndl.MemAllocV2MT64{Size: 1}.Encode(), &ndl.DriverReturnError{Value: 8}},
		{"BAR_READ with NULL pointers", ndl.IoctlBarRead, make([]byte, ndl.BarRWSize), syscall.EFAULT},
		{"BAR_WRITE with NULL pointers", ndl.IoctlBarWrite, make([]byte, ndl.BarRWSize), syscall.EFAULT},
		{"unknown ioctl", 0xc0084eff, make([]byte, 8), syscall.ENOTTY},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(Options{Arch: 2})
			if err != nil {
				t.Fatal(err)
			}
			fd, _ := d.Open("/dev/neuron0")
			err = d.Ioctl(fd, tt.cmd, tt.arg)
			var dr *ndl.DriverReturnError
			if want, ok := tt.want.(*ndl.DriverReturnError); ok {
				if !errors.As(err, &dr) || dr.Value != want.Value {
					t.Fatalf("got %v, want a positive return %d", err, want.Value)
				}
			} else if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if d.Live() != 0 {
				t.Fatalf("%d allocations left after a refusal", d.Live())
			}
			if f := d.Faults(); len(f) != 0 {
				t.Fatalf("faults: %v", f)
			}
		})
	}
}

// A short argument or non-zero padding is an ABI fault, never decoded.
func TestDriverABIFaults(t *testing.T) {
	d, err := New(Options{Arch: 3})
	if err != nil {
		t.Fatal(err)
	}
	fd, _ := d.Open("/dev/neuron0")
	bad := ndl.MemBufCopy64{Handle: 1}.Encode()
	bad[36] = 1
	for _, c := range []struct {
		cmd uint32
		arg []byte
	}{
		{ndl.IoctlMemAllocV2MT64, make([]byte, 48)},
		{ndl.IoctlMemBufCopy64, bad},
		{ndl.IoctlMemGetExtendedInfo, make([]byte, 8)},
	} {
		if err := d.Ioctl(fd, c.cmd, c.arg); err == nil {
			t.Fatalf("cmd %#x with a bad argument succeeded", c.cmd)
		}
	}
	if got := len(d.Faults()); got != 3 {
		t.Fatalf("%d faults recorded, want 3: %v", got, d.Faults())
	}
}

// The BAR ioctls refuse what ncdev_bar_rw refuses, and the register file
// keeps what BAR_WRITE stored.
func TestDriverBARs(t *testing.T) {
	d, err := New(Options{Arch: 3})
	if err != nil {
		t.Fatal(err)
	}
	fd, _ := d.Open("/dev/neuron0")
	var addrs [2]uint64
	var data [2]uint32
	var pin runtime.Pinner
	pin.Pin(&addrs[0])
	pin.Pin(&data[0])
	defer pin.Unpin()
	rw := func(bar uint32, count uint32, va ...uint64) []byte {
		copy(addrs[:], va)
		return ndl.BarRW{Bar: bar, Address: uint64(uintptr(unsafe.Pointer(&addrs[0]))), Data: uint64(uintptr(unsafe.Pointer(&data[0]))), Count: count}.Encode()
	}
	end := bar0VA + d.geo.BAR0.MinimumBAR0
	tests := []struct {
		name  string
		cmd   uint32
		bar   uint32
		count uint32
		va    []uint64
		want  error
	}{
		{"write bar 2", ndl.IoctlBarWrite, 2, 1, []uint64{bar0VA}, syscall.EINVAL},
		{"write past the BAR", ndl.IoctlBarWrite, 0, 1, []uint64{end}, syscall.EINVAL},
		{"write below the BAR", ndl.IoctlBarWrite, 0, 1, []uint64{bar0VA - 4}, syscall.EINVAL},
		{"write with the second address past the BAR", ndl.IoctlBarWrite, 0, 2, []uint64{end - 4, end}, syscall.EINVAL},
		{"read bar 4", ndl.IoctlBarRead, 4, 1, []uint64{bar0VA}, syscall.EINVAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data = [2]uint32{0xA5A5A5A5, 0x5A5A5A5A}
			if err := d.Ioctl(fd, tt.cmd, rw(tt.bar, tt.count, tt.va...)); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	if len(d.regs) != 0 {
		t.Fatalf("refused writes stored %d words", len(d.regs))
	}
	data = [2]uint32{7, 9}
	if err := d.Ioctl(fd, ndl.IoctlBarWrite, rw(0, 2, bar0VA+0x100, end-4)); err != nil {
		t.Fatal(err)
	}
	data = [2]uint32{}
	if err := d.Ioctl(fd, ndl.IoctlBarRead, rw(0, 2, end-4, bar0VA+0x100)); err != nil {
		t.Fatal(err)
	}
	if data != [2]uint32{9, 7} {
		t.Fatalf("read back %v, want [9 7]", data)
	}
	// A BAR_READ of bar 2 copies one address but reads count words: the
	// driver would overrun its buffer, so the fake records a fault.
	if err := d.Ioctl(fd, ndl.IoctlBarRead, rw(2, 2, bar0VA, bar0VA+4)); err == nil {
		t.Fatal("BAR_READ bar 2 count 2 succeeded")
	}
	if got := len(d.Faults()); got != 1 {
		t.Fatalf("%d faults, want 1: %v", got, d.Faults())
	}
}
