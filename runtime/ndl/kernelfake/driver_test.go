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
		{"BAR ioctls are not served", ndl.IoctlBarRead, make([]byte, ndl.BarRWSize), syscall.ENOTTY},
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
