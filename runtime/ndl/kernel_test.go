package ndl

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// openFake opens a KernelDevice on f and fails the test on error.
func openFake(t *testing.T, f *fakeKernel, opts KernelOptions) *KernelDevice {
	t.Helper()
	k, err := openKernelWith(f, "/dev/neuron0", opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, faults, _ := f.snapshot()
		assert.Empty(t, faults, "the fake driver saw an ABI violation")
	})
	return k
}

func TestKernelOpenIdentity(t *testing.T) {
	tests := []struct {
		arch, rev uint32
		opts      KernelOptions
		device    uint16
	}{
		{2, 0x00, KernelOptions{}, 0x7164},
		{2, 0xFF, KernelOptions{}, 0x7164},
		{2, 0x01, KernelOptions{DeviceID: 0x7264}, 0x7264},
		{3, 0xF0, KernelOptions{}, 0x7364},
		{4, 0x00, KernelOptions{}, 0x7564},
		{4, 0xFF, KernelOptions{DeviceID: 0x7565}, 0x7565},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("arch%d_rev%#x_%#x", tt.arch, tt.rev, tt.device), func(t *testing.T) {
			f := newFakeKernel(tt.arch, tt.rev)
			k := openFake(t, f, tt.opts)
			defer k.Close()

			assert.Equal(t, hwarch.PCIIdentity{Vendor: 0x1D0F, Device: tt.device, Revision: uint8(tt.rev)}, k.Identity())
			g, err := k.Identity().Generation()
			require.NoError(t, err)
			assert.Equal(t, hwarch.Generation(tt.arch), g)

			assert.Equal(t, f.info, k.Info())
			apb := hwarch.MustGeometry(g).BAR0.RegisterBAR(k.Identity().Mode())
			assert.Equal(t, uint64(fakeBar0Size), k.BARSize(apb), "the APB BAR is DEVICE_INFO entry [0]")
			for _, bar := range []int{-1, 0, 1, 2, 3, 4, 5, 6} {
				if bar != apb {
					assert.Zero(t, k.BARSize(bar), "bar %d", bar)
				}
			}

			f.mu.Lock()
			assert.Equal(t, 1, f.nCmd[IoctlDeviceInfo])
			assert.Equal(t, 1, f.nCmd[IoctlDeviceBasicInfo])
			f.mu.Unlock()
		})
	}
}

// Under QEMU a V2 device carries its registers on PCI BAR2, which the driver
// maps as its bar 0: BAR 2 accesses go out as BAR_READ/BAR_WRITE on bar 0 in
// batches, and BAR 0 is refused.
func TestKernelV2QEMURegistersOnBAR2(t *testing.T) {
	f := newFakeKernel(2, 0xFF)
	k := openFake(t, f, KernelOptions{})
	require.NoError(t, k.WriteBAR(2, 0x100, []uint32{7, 8}))
	got := make([]uint32, 2)
	require.NoError(t, k.ReadBAR(2, 0x100, got))
	assert.Equal(t, []uint32{7, 8}, got)
	v, err := k.Read32(2, 0x104)
	require.NoError(t, err)
	assert.Equal(t, uint32(8), v)
	calls, faults, _ := f.snapshot()
	assert.Empty(t, faults)
	require.Len(t, calls, 3, "one batched write, one batched read, one word read")
	for _, c := range calls {
		assert.Equal(t, uint32(0), c.bar, "the driver's bar 0 is the APB BAR")
	}
	assert.ErrorIs(t, k.Write32(0, 0x100, 1), ErrBadBAR)
	_, err = k.Read32(0, 0x100)
	assert.ErrorIs(t, err, ErrBadBAR)
}

func TestKernelBARSizeWithBar2(t *testing.T) {
	k := openFake(t, newFakeKernel(2, 0).withBar2(), KernelOptions{})
	assert.Equal(t, uint64(fakeBar0Size), k.BARSize(0))
	assert.Equal(t, uint64(fakeBar2Size), k.BARSize(2))
	assert.Zero(t, k.BARSize(4), "BAR4 size is not reported by DEVICE_INFO")
}

func TestKernelOpenErrors(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(f *fakeKernel)
		opts   KernelOptions
		is     error
		msg    string
		opened bool // the fd was opened (and must be closed again)
	}{
		{"open fails", func(f *fakeKernel) { f.openErr = syscall.ENOENT }, KernelOptions{}, syscall.ENOENT, "open /dev/neuron0", false},
		{"DEVICE_INFO errno", func(f *fakeKernel) { f.errnos[IoctlDeviceInfo] = syscall.EINVAL }, KernelOptions{}, syscall.EINVAL, "DEVICE_INFO", true},
		{"DEVICE_BASIC_INFO errno", func(f *fakeKernel) { f.errnos[IoctlDeviceBasicInfo] = syscall.EPERM }, KernelOptions{}, syscall.EPERM, "DEVICE_BASIC_INFO", true},
		{"arch mismatch", func(f *fakeKernel) { f.basic.Arch = 3 }, KernelOptions{}, nil, "DEVICE_INFO reports arch 2", true},
		{"revision mismatch", func(f *fakeKernel) { f.basic.Revision = 1 }, KernelOptions{}, nil, "revision 0x1", true},
		{"arch 1", func(f *fakeKernel) { f.info.Arch, f.basic.Arch = 1, 1 }, KernelOptions{}, hwarch.ErrUnknownGeneration, "arch 1", true},
		{"arch 5", func(f *fakeKernel) { f.info.Arch, f.basic.Arch = 5, 5 }, KernelOptions{}, hwarch.ErrUnknownGeneration, "arch 5", true},
		{"arch huge", func(f *fakeKernel) { f.info.Arch, f.basic.Arch = 0x102, 0x102 }, KernelOptions{}, hwarch.ErrUnknownGeneration, "arch 258", true},
		{"revision > 0xff", func(f *fakeKernel) { f.info.Revision, f.basic.Revision = 0x100, 0x100 }, KernelOptions{}, hwarch.ErrBadRevision, "0x100", true},
		{"no APB BAR size", func(f *fakeKernel) { f.info.BarSize[0] = 0 }, KernelOptions{}, nil, "no APB BAR", true},
		{"no APB BAR address", func(f *fakeKernel) { f.info.BarAddress[0] = 0 }, KernelOptions{}, nil, "no APB BAR", true},
		{"BAR window overflows", func(f *fakeKernel) { f.info.BarSize[0] = 1 << 63 }, KernelOptions{}, nil, "overflows", true},
		{"DeviceID of another arch", func(*fakeKernel) {}, KernelOptions{DeviceID: 0x7364}, nil, "0x7364 is a V3", true},
		{"unknown DeviceID", func(*fakeKernel) {}, KernelOptions{DeviceID: 0x1234}, hwarch.ErrUnknownDeviceID, "DeviceID", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKernel(2, 0)
			tt.setup(f)
			k, err := openKernelWith(f, "/dev/neuron0", tt.opts)
			require.Error(t, err)
			assert.Nil(t, k)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			assert.ErrorContains(t, err, tt.msg)
			assert.ErrorContains(t, err, "/dev/neuron0")
			_, faults, openFDs := f.snapshot()
			assert.Empty(t, faults)
			assert.Zero(t, openFDs, "the descriptor is closed again")
			if tt.opened {
				assert.Len(t, f.closed, 1)
			}
		})
	}
}

func TestKernelOpenErrorAlsoReportsCloseError(t *testing.T) {
	f := newFakeKernel(2, 0)
	f.errnos[IoctlDeviceInfo] = syscall.EIO
	f.closeErr = syscall.EINTR
	_, err := openKernelWith(f, "/dev/neuron0", KernelOptions{})
	assert.ErrorIs(t, err, syscall.EIO)
	assert.ErrorIs(t, err, syscall.EINTR)
	assert.ErrorContains(t, err, "close /dev/neuron0")
}

func TestKernelReadWriteRoundTrip(t *testing.T) {
	f := newFakeKernel(3, 0)
	k := openFake(t, f, KernelOptions{})

	tests := []struct {
		name  string
		off   uint64
		words []uint32
	}{
		{"one word at 0", 0, []uint32{0xDEADBEEF}},
		{"one word mid BAR", 0x3064_7010, []uint32{1}},
		{"four words", 0x100, []uint32{1, 2, 3, 4}},
		{"last word", fakeBar0Size - 4, []uint32{0xCAFEF00D}},
		{"ending at the BAR end", fakeBar0Size - 12, []uint32{7, 8, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.resetCalls()
			require.NoError(t, k.WriteBAR(0, tt.off, tt.words))
			got := make([]uint32, len(tt.words))
			require.NoError(t, k.ReadBAR(0, tt.off, got))
			assert.Equal(t, tt.words, got)

			calls, _, _ := f.snapshot()
			require.Len(t, calls, 2)
			wantAddrs := make([]uint64, len(tt.words))
			for i := range wantAddrs {
				wantAddrs[i] = fakeBar0VA + tt.off + 4*uint64(i)
			}
			for i, cmd := range []uint32{IoctlBarWrite, IoctlBarRead} {
				assert.Equal(t, cmd, calls[i].cmd)
				assert.Equal(t, uint32(0), calls[i].bar)
				assert.Equal(t, uint32(len(tt.words)), calls[i].count, "one ioctl carries all the words")
				assert.Equal(t, wantAddrs, calls[i].addrs, "kernel virtual addresses bar_address[0]+off+4i")
			}
		})
	}
}

func TestKernelLongReadIsSplit(t *testing.T) {
	f := newFakeKernel(2, 0)
	k := openFake(t, f, KernelOptions{})
	const n = 2*maxWordsPerIoctl + 452
	const off = 0x2000
	for i := range n {
		f.bar0[off+4*uint64(i)] = uint32(i) ^ 0x5A5A0000
	}
	got := make([]uint32, n)
	require.NoError(t, k.ReadBAR(0, off, got))
	for i := range n {
		require.Equal(t, uint32(i)^0x5A5A0000, got[i], "word %d", i)
	}
	calls, _, _ := f.snapshot()
	require.Len(t, calls, 3)
	for i, c := range calls {
		wantCount := maxWordsPerIoctl
		if i == 2 {
			wantCount = 452
		}
		assert.Equal(t, uint32(wantCount), c.count)
		assert.Equal(t, uint64(fakeBar0VA+off+4*uint64(i*maxWordsPerIoctl)), c.addrs[0])
	}

	// An errno in the second chunk names that chunk's offset and count.
	f.failCmd, f.failAt, f.failErr = IoctlBarRead, f.nCmd[IoctlBarRead]+2, syscall.EIO
	err := k.ReadBAR(0, off, got)
	require.ErrorIs(t, err, syscall.EIO)
	assert.EqualError(t, err, fmt.Sprintf("ndl kernel: BAR_READ bar 0 offset %#x count %d: %v", off+4*maxWordsPerIoctl, maxWordsPerIoctl, syscall.EIO))
}

func TestKernelBar2ReadsOneWordPerIoctl(t *testing.T) {
	f := newFakeKernel(2, 0).withBar2()
	k := openFake(t, f, KernelOptions{})
	f.bar2[0x40], f.bar2[0x44], f.bar2[0x48] = 10, 11, 12

	got := make([]uint32, 3)
	require.NoError(t, k.ReadBAR(2, 0x40, got))
	assert.Equal(t, []uint32{10, 11, 12}, got)

	calls, faults, _ := f.snapshot()
	require.Empty(t, faults)
	require.Len(t, calls, 3, "bar 2 is read one word at a time")
	for i, c := range calls {
		assert.Equal(t, uint32(2), c.bar)
		assert.Equal(t, uint32(1), c.count)
		assert.Equal(t, []uint64{fakeBar2VA + 0x40 + 4*uint64(i)}, c.addrs)
	}

	err := k.ReadBAR(2, fakeBar2Size-4, make([]uint32, 2))
	assert.ErrorIs(t, err, ErrBAROffset)
	err = k.WriteBAR(2, 0, []uint32{1})
	assert.ErrorIs(t, err, ErrBadBAR)
	assert.ErrorContains(t, err, "bar 0 only")
}

func TestKernelAccessErrors(t *testing.T) {
	tests := []struct {
		name  string
		write bool
		bar   int
		off   uint64
		n     int
		is    error
		msg   string
	}{
		{"unaligned read", false, 0, 0x102, 1, ErrAlignment, "read bar 0 offset 0x102 count 1"},
		{"unaligned write", true, 0, 0x1, 2, ErrAlignment, "write bar 0 offset 0x1 count 2"},
		{"read past end", false, 0, fakeBar0Size - 4, 2, ErrBAROffset, "read bar 0 offset 0x3ffffffc count 2"},
		{"write at size", true, 0, fakeBar0Size, 1, ErrBAROffset, "BAR size 0x40000000"},
		{"offset far past end", false, 0, 1 << 62, 1, ErrBAROffset, "offset 0x4000000000000000"},
		{"offset wraps", false, 0, ^uint64(3), 2, ErrBAROffset, "offset 0xfffffffffffffffc"},
		{"bar 4 read", false, 4, 0, 1, ErrBadBAR, "EINVAL"},
		{"bar 4 write", true, 4, 0, 1, ErrBadBAR, "BAR4"},
		{"bar 2 absent", false, 2, 0, 1, ErrBadBAR, "no BAR2"},
		{"bar 2 write", true, 2, 0, 1, ErrBadBAR, "bar 0 only"},
		{"bar 1", false, 1, 0, 1, ErrBadBAR, "read bar 1 offset 0x0 count 1"},
		{"bar 3", true, 3, 0, 1, ErrBadBAR, "bars 0 and 2"},
		{"bar -1", false, -1, 0, 1, ErrBadBAR, "bar -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKernel(4, 0)
			k := openFake(t, f, KernelOptions{})
			words := make([]uint32, tt.n)
			var err error
			if tt.write {
				err = k.WriteBAR(tt.bar, tt.off, words)
			} else {
				err = k.ReadBAR(tt.bar, tt.off, words)
			}
			require.ErrorIs(t, err, tt.is)
			assert.ErrorContains(t, err, tt.msg)
			assert.ErrorContains(t, err, "ndl kernel: ")
			calls, _, _ := f.snapshot()
			assert.Empty(t, calls, "no ioctl for a refused access")
		})
	}
}

// A count that alone exceeds the BAR is refused before the offset is added.
func TestKernelCountLargerThanBAR(t *testing.T) {
	f := newFakeKernel(2, 0)
	f.info.BarSize[0] = 16
	k := openFake(t, f, KernelOptions{})
	assert.ErrorIs(t, k.ReadBAR(0, 0, make([]uint32, 5)), ErrBAROffset)
	assert.NoError(t, k.ReadBAR(0, 0, make([]uint32, 4)))
	assert.NoError(t, k.ReadBAR(0, 12, make([]uint32, 1)))
	assert.ErrorIs(t, k.ReadBAR(0, 12, make([]uint32, 2)), ErrBAROffset)
}

func TestKernelZeroLengthIsNoOp(t *testing.T) {
	f := newFakeKernel(3, 0)
	k := openFake(t, f, KernelOptions{})
	for _, bar := range []int{0, 2, 4, 7} {
		assert.NoError(t, k.ReadBAR(bar, 3, nil))
		assert.NoError(t, k.WriteBAR(bar, fakeBar0Size+8, []uint32{}))
	}
	calls, _, _ := f.snapshot()
	assert.Empty(t, calls)
}

func TestKernelIoctlErrnoPropagates(t *testing.T) {
	tests := []struct {
		name  string
		cmd   uint32
		errno syscall.Errno
		do    func(k *KernelDevice) error
		msg   string
	}{
		{"BAR_READ EIO", IoctlBarRead, syscall.EIO,
			func(k *KernelDevice) error { return k.ReadBAR(0, 0x10, make([]uint32, 3)) },
			"ndl kernel: BAR_READ bar 0 offset 0x10 count 3: "},
		{"BAR_WRITE EINVAL (blocked address)", IoctlBarWrite, syscall.EINVAL,
			func(k *KernelDevice) error { return k.WriteBAR(0, 0x20, []uint32{5}) },
			"ndl kernel: BAR_WRITE bar 0 offset 0x20 count 1: "},
		{"BAR_WRITE EACCES (not attached)", IoctlBarWrite, syscall.EACCES,
			func(k *KernelDevice) error { return k.WriteBAR(0, 0, []uint32{5, 6}) },
			"ndl kernel: BAR_WRITE bar 0 offset 0x0 count 2: "},
		{"DRIVER_INFO_GET EINVAL", IoctlDriverInfoGet, syscall.EINVAL,
			func(k *KernelDevice) error { _, err := k.DriverInfo(); return err },
			"ndl kernel: /dev/neuron0: DRIVER_INFO_GET: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKernel(2, 0)
			k := openFake(t, f, KernelOptions{})
			f.errnos[tt.cmd] = tt.errno
			err := tt.do(k)
			require.ErrorIs(t, err, tt.errno)
			assert.EqualError(t, err, tt.msg+tt.errno.Error())
		})
	}
}

func TestKernelDriverInfo(t *testing.T) {
	f := newFakeKernel(4, 0xF0)
	k := openFake(t, f, KernelOptions{})
	di, err := k.DriverInfo()
	require.NoError(t, err)
	assert.Equal(t, DeviceDriverInfo{Arch: 4, Revision: 0xF0, Version: 0, Size: 24, FeatureFlags1: 0x1FF}, di)
}

func TestKernelClose(t *testing.T) {
	f := newFakeKernel(3, 0xFF)
	k := openFake(t, f, KernelOptions{})
	id := k.Identity()
	require.NoError(t, k.Close())
	_, _, openFDs := f.snapshot()
	assert.Zero(t, openFDs)

	assert.ErrorIs(t, k.ReadBAR(0, 0, make([]uint32, 1)), ErrClosed)
	assert.ErrorIs(t, k.ReadBAR(0, 0, nil), ErrClosed, "closed wins over zero length")
	err := k.WriteBAR(0, 8, []uint32{1})
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorContains(t, err, "write bar 0 offset 0x8 count 1")
	_, err = k.DriverInfo()
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, k.Close(), ErrClosed)

	assert.Equal(t, id, k.Identity(), "identity outlives Close")
	// A Trn2 at revision 0xFF has its registers on BAR2 (driver 2.24.7.0,
	// v3/neuron_dhal_v3.c 2188): DEVICE_INFO entry [0] sizes that BAR.
	apb := hwarch.MustGeometry(hwarch.Cayman).BAR0.RegisterBAR(hwarch.ModeQEMU)
	require.Equal(t, hwarch.BAR2, apb)
	assert.Equal(t, uint64(fakeBar0Size), k.BARSize(apb))
	f.mu.Lock()
	assert.Equal(t, 1, len(f.closed), "close(2) issued once")
	f.mu.Unlock()
}

func TestKernelCloseError(t *testing.T) {
	f := newFakeKernel(3, 0)
	k := openFake(t, f, KernelOptions{})
	f.closeErr = syscall.EIO
	err := k.Close()
	assert.ErrorIs(t, err, syscall.EIO)
	assert.ErrorContains(t, err, "close /dev/neuron0")
	assert.ErrorIs(t, k.ReadBAR(0, 0, make([]uint32, 1)), ErrClosed, "closed even when close(2) failed")
}

func TestKernelConcurrentUse(t *testing.T) {
	f := newFakeKernel(4, 0)
	k := openFake(t, f, KernelOptions{})
	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := uint64(w) * 0x1000
			buf := make([]uint32, 4)
			for r := range rounds {
				src := []uint32{uint32(w), uint32(r), uint32(w * r), 0xFFFFFFFF}
				if err := k.WriteBAR(0, off, src); err != nil {
					errs <- err
					return
				}
				if err := k.ReadBAR(0, off, buf); err != nil {
					errs <- err
					return
				}
				if fmt.Sprint(buf) != fmt.Sprint(src) {
					errs <- fmt.Errorf("worker %d round %d: read %v, wrote %v", w, r, buf, src)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Close racing with accesses: every access either succeeds or sees ErrClosed.
	var wg2 sync.WaitGroup
	for range workers {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			for range rounds {
				err := k.ReadBAR(0, 0, make([]uint32, 2))
				if err != nil && !errors.Is(err, ErrClosed) {
					t.Error(err)
					return
				}
			}
		}()
	}
	assert.NoError(t, k.Close())
	wg2.Wait()
}

func TestKernelSatisfiesDevice(t *testing.T) {
	var d Device = openFake(t, newFakeKernel(2, 0), KernelOptions{})
	require.NoError(t, d.WriteBAR(0, 0x44, []uint32{0x12345678}))
	got := make([]uint32, 1)
	require.NoError(t, d.ReadBAR(0, 0x44, got))
	assert.Equal(t, uint32(0x12345678), got[0])
	assert.NoError(t, d.Close())
}
