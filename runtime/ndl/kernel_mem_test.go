package ndl_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/ndl/kernelfake"
)

// openMemFake opens a KernelDevice on a fresh fake driver and checks, when
// the test ends, that the fake saw no ABI violation.
func openMemFake(t *testing.T, opt kernelfake.Options) (*ndl.KernelDevice, *kernelfake.Driver) {
	t.Helper()
	drv, err := kernelfake.New(opt)
	require.NoError(t, err)
	return openOn(t, drv, drv), drv
}

func openOn(t *testing.T, sys ndl.KernelSys, drv *kernelfake.Driver) *ndl.KernelDevice {
	t.Helper()
	k, err := ndl.OpenKernelSys(sys, "/dev/neuron0", ndl.KernelOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.Empty(t, drv.Faults(), "the fake driver saw an ABI violation")
	})
	return k
}

func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*13+i>>9) ^ seed
	}
	return p
}

func TestKernelMemRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		arch uint32
		host bool
		size int
		nc   int
	}{
		{2, false, 1<<20 + 13, 1},
		{3, false, 64 << 10, 5},
		{4, false, 3, 0},
		{3, true, 200_000, 2},
	} {
		t.Run(fmt.Sprintf("arch%d_host%v_%d", tt.arch, tt.host, tt.size), func(t *testing.T) {
			k, drv := openMemFake(t, kernelfake.Options{Arch: tt.arch, Revision: 0xFF})
			geo := hwarch.MustGeometry(hwarch.Generation(tt.arch))
			h, err := k.MemAlloc(ndl.MemRequest{Size: uint64(tt.size), Host: tt.host, NC: tt.nc})
			require.NoError(t, err)
			info, err := k.MemInfo(h)
			require.NoError(t, err)
			assert.Equal(t, h, info.Handle)
			assert.Equal(t, tt.host, info.Host)
			assert.Equal(t, uint64((tt.size+4095)/4096*4096), info.Size, "rounded up to pages")
			assert.Equal(t, info.PA, info.MmapOffset)
			assert.Equal(t, uint64(4242), info.PID)
			if tt.host {
				assert.NotZero(t, info.PA&geo.HostAddressBit, "host memory carries the host bit")
			} else {
				_, ok := geo.HBMChannelOf(info.PA)
				assert.True(t, ok, "device memory at %#x lies in an HBM channel", info.PA)
			}

			src := pattern(tt.size, 0x5A)
			require.NoError(t, k.CopyToMem(h, 0, src))
			back := make([]byte, tt.size)
			require.NoError(t, k.CopyFromMem(h, 0, back))
			assert.True(t, bytes.Equal(src, back), "read back what was written")
			mem, ok := drv.Bytes(h)
			require.True(t, ok)
			assert.Equal(t, src, mem[:tt.size], "the bytes are in the driver's allocation")

			chunks := 2 * ((tt.size + 65535) / 65536)
			if tt.host {
				chunks = 0 // host memory is a plain copy, no DMA
			}
			assert.Equal(t, chunks, drv.DMAChunks(), "64 KiB bounce chunks through the H2T DMA")

			require.NoError(t, k.Memset(h, 1, 2, 0xC3))
			require.NoError(t, k.CopyFromMem(h, 0, back[:min(4, tt.size)]))
			want := append([]byte{src[0]}, 0xC3, 0xC3)
			if tt.size > 3 {
				want = append(want, src[3])
			}
			assert.Equal(t, want, back[:min(4, tt.size)])

			require.NoError(t, k.MemFree(h))
			assert.Zero(t, drv.Live())
			_, err = k.MemInfo(h)
			require.ErrorIs(t, err, syscall.EINVAL)
			assert.ErrorContains(t, err, "knows no such handle")
			require.NoError(t, k.Close())
		})
	}
}

// The argument layouts as the driver reads them, checked on the bytes the
// backend actually passed.
func TestKernelMemArguments(t *testing.T) {
	k, drv := openMemFake(t, kernelfake.Options{Arch: 3})
	h, err := k.MemAlloc(ndl.MemRequest{Size: 8192, Align: 1 << 16, Channel: 2, NC: 7})
	require.NoError(t, err)
	require.NoError(t, k.CopyToMem(h, 100, []byte{1, 2, 3}))
	calls := drv.Calls()
	var names []string
	for _, c := range calls {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"DEVICE_INFO", "DEVICE_BASIC_INFO", "DEVICE_BDF", "MEM_ALLOC_V2MT64", "MEM_GET_EXTENDED_INFO", "MEM_BUF_COPY64"}, names)
	le := binary.LittleEndian
	named := func(name string) []byte {
		for _, c := range calls {
			if c.Name == name {
				return c.Arg
			}
		}
		t.Fatalf("no %s call", name)
		return nil
	}
	a := named("MEM_ALLOC_V2MT64")
	require.Len(t, a, 56)
	assert.Equal(t, uint64(8192), le.Uint64(a[0:]), "size @0")
	assert.Equal(t, uint64(1<<16), le.Uint64(a[8:]), "align @8")
	assert.Equal(t, uint32(0), le.Uint32(a[16:]), "host_memory @16")
	assert.Equal(t, uint32(2), le.Uint32(a[20:]), "dram_channel @20")
	assert.Equal(t, uint32(0), le.Uint32(a[24:]), "dram_region @24")
	assert.Equal(t, uint32(7), le.Uint32(a[28:]), "nc_id @28")
	assert.Equal(t, uint32(ndl.MemTypeTensorsDevice), le.Uint32(a[32:]), "mem_type @32")
	assert.NotZero(t, le.Uint64(a[40:]), "mem_handle pointer @40")
	c := named("MEM_BUF_COPY64")
	require.Len(t, c, 40)
	assert.Equal(t, uint64(h), le.Uint64(c[0:]), "mem_handle @0")
	assert.NotZero(t, le.Uint64(c[8:]), "buffer @8")
	assert.Equal(t, uint64(3), le.Uint64(c[16:]), "size @16")
	assert.Equal(t, uint64(100), le.Uint64(c[24:]), "offset @24")
	assert.Equal(t, uint32(1), le.Uint32(c[32:]), "copy_to_mem_handle @32")
	info, err := k.MemInfo(h)
	require.NoError(t, err)
	assert.Zero(t, info.PA%(1<<16), "aligned as asked")
	assert.Equal(t, hwarch.MustGeometry(hwarch.Cayman).HBM[2].Base, info.PA, "in channel 2")
}

func TestKernelMemRequestRefused(t *testing.T) {
	tests := []struct {
		name string
		req  ndl.MemRequest
		msg  string
	}{
		{"size 0", ndl.MemRequest{}, "size 0"},
		{"device size past a channel", ndl.MemRequest{Size: 16<<30 + 1}, "1 B .. 16GiB"},
		{"host size past 1 TiB", ndl.MemRequest{Size: 1<<40 + 1, Host: true}, "1 B .. 1TiB"},
		{"host align", ndl.MemRequest{Size: 4096, Host: true, Align: 4096}, "no aligned host memory"},
		{"align not a power of two", ndl.MemRequest{Size: 4096, Align: 3 << 12}, "align 12288"},
		{"align too large", ndl.MemRequest{Size: 4096, Align: 1 << 31}, "align 2147483648"},
		{"channel", ndl.MemRequest{Size: 4096, Channel: 2}, "HBM channels 0..1"},
		{"negative channel", ndl.MemRequest{Size: 4096, Channel: -1}, "channel -1"},
		{"NC", ndl.MemRequest{Size: 4096, NC: 2}, "NeuronCores 0..1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, drv := openMemFake(t, kernelfake.Options{Arch: 2})
			_, err := k.MemAlloc(tt.req)
			require.ErrorIs(t, err, ndl.ErrMemRequest)
			assert.ErrorContains(t, err, "MEM_ALLOC_V2MT64")
			assert.ErrorContains(t, err, tt.msg)
			assert.Len(t, drv.Calls(), 3, "refused before any memory ioctl")
		})
	}
}

func TestKernelMemDriverRefusals(t *testing.T) {
	t.Run("ENOMEM", func(t *testing.T) {
		k, _ := openMemFake(t, kernelfake.Options{Arch: 2, ChannelBytes: 1 << 20})
		_, err := k.MemAlloc(ndl.MemRequest{Size: 1<<20 + 1})
		require.ErrorIs(t, err, syscall.ENOMEM)
		assert.EqualError(t, err, "ndl kernel: /dev/neuron0: MEM_ALLOC_V2MT64 (1048577B of device memory, channel 0, NC 0): "+syscall.ENOMEM.Error())
	})
	t.Run("copy EPERM (DMA timeout)", func(t *testing.T) {
		k, drv := openMemFake(t, kernelfake.Options{Arch: 3})
		h, err := k.MemAlloc(ndl.MemRequest{Size: 4096})
		require.NoError(t, err)
		drv.Errno[ndl.IoctlMemBufCopy64] = syscall.EPERM
		err = k.CopyToMem(h, 16, make([]byte, 32))
		require.ErrorIs(t, err, syscall.EPERM)
		assert.ErrorContains(t, err, "MEM_BUF_COPY64 to handle 1 offset 16 count 32")
	})
	t.Run("range", func(t *testing.T) {
		k, drv := openMemFake(t, kernelfake.Options{Arch: 4})
		h, err := k.MemAlloc(ndl.MemRequest{Size: 100})
		require.NoError(t, err)
		n := len(drv.Calls())
		for _, c := range []struct {
			off uint64
			n   int
		}{{4096, 1}, {4000, 97}, {1<<64 - 1, 2}} {
			err := k.CopyToMem(h, c.off, make([]byte, c.n))
			require.ErrorIs(t, err, ndl.ErrMemRange, "%+v", c)
			assert.ErrorContains(t, err, "of 4096 bytes")
			require.ErrorIs(t, k.CopyFromMem(h, c.off, make([]byte, c.n)), ndl.ErrMemRange)
			require.ErrorIs(t, k.Memset(h, c.off, uint64(c.n), 1), ndl.ErrMemRange)
		}
		assert.Len(t, drv.Calls(), n, "refused without an ioctl")
		require.NoError(t, k.CopyToMem(h, 4095, []byte{9}), "the last byte of the page")
		require.NoError(t, k.CopyToMem(h, 0, nil), "zero length")
	})
	t.Run("unknown handle", func(t *testing.T) {
		k, _ := openMemFake(t, kernelfake.Options{Arch: 2})
		err := k.CopyToMem(77, 0, []byte{1})
		require.ErrorIs(t, err, syscall.EINVAL)
		assert.ErrorContains(t, err, "MEM_GET_EXTENDED_INFO handle 77: the driver knows no such handle")
		require.ErrorIs(t, k.MemFree(77), syscall.EINVAL)
	})
	t.Run("closed", func(t *testing.T) {
		k, _ := openMemFake(t, kernelfake.Options{Arch: 2})
		h, err := k.MemAlloc(ndl.MemRequest{Size: 1})
		require.NoError(t, err)
		require.NoError(t, k.Close())
		_, err = k.MemAlloc(ndl.MemRequest{Size: 1})
		assert.ErrorIs(t, err, ndl.ErrClosed)
		assert.ErrorIs(t, k.CopyToMem(h, 0, []byte{1}), ndl.ErrClosed)
		assert.ErrorIs(t, k.CopyFromMem(h, 0, []byte{1}), ndl.ErrClosed)
		assert.ErrorIs(t, k.Memset(h, 0, 1, 0), ndl.ErrClosed)
		assert.ErrorIs(t, k.MemFree(h), ndl.ErrClosed)
		_, err = k.MemInfo(h)
		assert.ErrorIs(t, err, ndl.ErrClosed)
	})
}

// A copy longer than the chunk goes out as several MEM_BUF_COPY64 ioctls at
// consecutive offsets (the driver's u32 remaining count forbids one of 4 GiB).
func TestKernelMemCopySplit(t *testing.T) {
	k, drv := openMemFake(t, kernelfake.Options{Arch: 3})
	h, err := k.MemAlloc(ndl.MemRequest{Size: 3 * 4096})
	require.NoError(t, err)
	ndl.SetCopyChunk(k, 4096)
	src := pattern(10000, 7)
	require.NoError(t, k.CopyToMem(h, 100, src))
	back := make([]byte, len(src))
	require.NoError(t, k.CopyFromMem(h, 100, back))
	assert.Equal(t, src, back)
	le := binary.LittleEndian
	var got [][3]uint64 // offset, size, to-mem of each MEM_BUF_COPY64
	for _, c := range drv.Calls() {
		if c.Cmd == ndl.IoctlMemBufCopy64 {
			got = append(got, [3]uint64{le.Uint64(c.Arg[24:]), le.Uint64(c.Arg[16:]), uint64(le.Uint32(c.Arg[32:]))})
		}
	}
	assert.Equal(t, [][3]uint64{{100, 4096, 1}, {4196, 4096, 1}, {8292, 1808, 1}, {100, 4096, 0}, {4196, 4096, 0}, {8292, 1808, 0}}, got)
}

// tamper is a KernelSys that lets a test rewrite what the fake driver
// answers, to check the backend's range checks of the kernel's values.
type tamper struct {
	*kernelfake.Driver
	after func(cmd uint32, arg []byte)
}

func (s tamper) Ioctl(fd int, cmd uint32, arg []byte) error {
	err := s.Driver.Ioctl(fd, cmd, arg)
	if err == nil && s.after != nil {
		s.after(cmd, arg)
	}
	return err
}

func TestKernelMemAnswerChecks(t *testing.T) {
	le := binary.LittleEndian
	info := func(edit func(b []byte)) func(uint32, []byte) {
		return func(cmd uint32, b []byte) {
			if cmd == ndl.IoctlMemGetExtendedInfo {
				edit(b)
			}
		}
	}
	tests := []struct {
		name  string
		host  bool
		after func(uint32, []byte)
		msg   string
	}{
		{"host_memory 2", false, info(func(b []byte) { le.PutUint32(b[12:], 2) }), "host_memory 2"},
		{"size 0", false, info(func(b []byte) { le.PutUint64(b[40:], 0) }), "size 0"},
		{"size overflows", false, info(func(b []byte) {
			le.PutUint64(b[16:], 0x1000)
			le.PutUint64(b[24:], 0x1000)
			le.PutUint64(b[40:], 1<<64-1)
		}), "fits 64 bits"},
		{"mmap offset", false, info(func(b []byte) { le.PutUint64(b[16:], 0x1000) }), "mmap_offset 0x1000"},
		{"pid 0", false, info(func(b []byte) { le.PutUint64(b[32:], 0) }), "pid 0"},
		{"pid huge", false, info(func(b []byte) { le.PutUint64(b[32:], 1<<22+1) }), "pid 4194305"},
		{"device pa outside HBM", false, info(func(b []byte) {
			le.PutUint64(b[24:], 0x7000_0000_0000)
			le.PutUint64(b[16:], 0x7000_0000_0000)
		}), "not inside one HBM channel"},
		{"host pa without the host bit", true, info(func(b []byte) {
			pa := le.Uint64(b[24:]) &^ (1 << 46)
			le.PutUint64(b[24:], pa)
			le.PutUint64(b[16:], pa)
		}), "carries bit 46"},
		{"wrong location", false, info(func(b []byte) {
			le.PutUint32(b[12:], 1)
			pa := le.Uint64(b[24:]) | 1<<46
			le.PutUint64(b[24:], pa)
			le.PutUint64(b[16:], pa)
		}), "host memory of 4096 bytes, asked for device memory"},
		{"handle 0", false, func(cmd uint32, b []byte) {
			if cmd == ndl.IoctlMemAllocV2MT64 {
				*(*uint64)(userPointer(le.Uint64(b[40:]))) = 0 // the pinned handle word the driver filled
			}
		}, "handle 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			drv, err := kernelfake.New(kernelfake.Options{Arch: 3})
			require.NoError(t, err)
			k := openOn(t, tamper{drv, tt.after}, drv)
			_, err = k.MemAlloc(ndl.MemRequest{Size: 4096, Host: tt.host})
			require.ErrorIs(t, err, ndl.ErrDriverAnswer)
			assert.ErrorContains(t, err, tt.msg)
			if tt.name != "handle 0" {
				assert.Zero(t, drv.Live(), "a refused answer frees the allocation again")
			}
		})
	}
}

// TestKernelMemLiveHandleRefused: a driver that answers an allocation
// with a handle an earlier one holds and has not freed is refused, and
// the earlier allocation keeps its size and place (its handle was taken
// over before).
func TestKernelMemLiveHandleRefused(t *testing.T) {
	le := binary.LittleEndian
	drv, err := kernelfake.New(kernelfake.Options{Arch: 3})
	require.NoError(t, err)
	var first uint64
	k := openOn(t, tamper{drv, func(cmd uint32, b []byte) {
		if cmd != ndl.IoctlMemAllocV2MT64 {
			return
		}
		h := (*uint64)(userPointer(le.Uint64(b[40:]))) // the pinned handle word the driver filled
		if first == 0 {
			first = *h
			return
		}
		*h = first
	}}, drv)
	h, err := k.MemAlloc(ndl.MemRequest{Size: 4096})
	require.NoError(t, err)
	_, err = k.MemAlloc(ndl.MemRequest{Size: 8192, Host: true})
	require.ErrorIs(t, err, ndl.ErrDriverAnswer)
	assert.ErrorContains(t, err, fmt.Sprintf("handle %d, which an earlier allocation holds", h))
	require.NoError(t, k.MemFree(h), "the first allocation is still the handle's")
}

// userPointer turns a user address from an ioctl struct into a pointer
// (written through the pointer's memory so vet's unsafeptr check stays quiet).
func userPointer(addr uint64) unsafe.Pointer {
	var p unsafe.Pointer
	*(*uintptr)(unsafe.Pointer(&p)) = uintptr(addr)
	return p
}

func TestDriverReturnError(t *testing.T) {
	err := error(&ndl.DriverReturnError{Value: 8})
	assert.ErrorIs(t, err, syscall.EFAULT)
	var d *ndl.DriverReturnError
	require.True(t, errors.As(fmt.Errorf("wrapped: %w", err), &d))
	assert.Equal(t, uint64(8), d.Value)
	assert.Contains(t, err.Error(), "ioctl returned 8")
}
