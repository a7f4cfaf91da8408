package ndl

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every command number against a literal worked out by hand from
// dir<<30 | size<<16 | 'N'(0x4E)<<8 | nr.
func TestIoctlCommandNumbers(t *testing.T) {
	tests := []struct {
		name    string
		got     uint32 // the named constant, or 0 when there is none
		dir     IoctlDir
		nr      uint8
		size    uint32
		literal uint32
	}{
		// 2<<30 = 0x80000000, 8<<16 = 0x00080000, 'N'<<8 = 0x4E00, 3.
		{"DEVICE_INFO", IoctlDeviceInfo, IocRead, 3, 8, 0x80084e03},
		// nr 11 = 0x0B.
		{"BAR_READ", IoctlBarRead, IocRead, 11, 8, 0x80084e0b},
		// 1<<30 = 0x40000000, nr 12 = 0x0C.
		{"BAR_WRITE", IoctlBarWrite, IocWrite, 12, 8, 0x40084e0c},
		// nr 100 = 0x64.
		{"DEVICE_BASIC_INFO", IoctlDeviceBasicInfo, IocWrite, 100, 8, 0x40084e64},
		// size 24 = 0x18 → 0x00180000, nr 110 = 0x6E.
		{"DRIVER_INFO_GET", IoctlDriverInfoGet, IocRead, 110, 24, 0x80184e6e},
		// The memory ioctls (neuron_ioctl.h:613-637): 56 = 0x38, 40 = 0x28,
		// 32 = 0x20; nr 102 = 0x66, 22 = 0x16, 24 = 0x18, 28 = 0x1C, 29 = 0x1D.
		{"MEM_ALLOC_V2MT64", IoctlMemAllocV2MT64, IocRead, 102, 56, 0x80384e66},
		{"MEM_FREE", IoctlMemFree, IocRead, 22, 8, 0x80084e16},
		{"MEM_BUF_COPY64", IoctlMemBufCopy64, IocReadWrite, 24, 40, 0xc0284e18},
		{"MEMSET64", IoctlMemset64, IocRead, 28, 32, 0x80204e1c},
		{"MEM_GET_EXTENDED_INFO", IoctlMemGetExtendedInfo, IocRead, 29, 8, 0x80084e1d},
		// Values printed in driver-facts §3.1, as a check of the formula.
		{"DMA_QUEUE_INIT", 0, IocRead, 33, 8, 0x80084e21},
		{"DMA_QUEUE_COPY_START", 0, IocRead, 35, 8, 0x80084e23},
		{"MEM_ALLOC_V2MT", 0, IocRead, 102, 48, 0x80304e66},
		{"RESOURCE_MMAP_INFO", 0, IocReadWrite, 112, 32, 0xc0204e70},
		{"DMA_QUEUE_INIT_BATCH", 0, IocRead, 133, 12296, 0xb0084e85},
		{"DEVICE_RESET (_IO)", 0, IocNone, 1, 0, 0x00004e01},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, err := IoctlCommand(tt.dir, tt.nr, tt.size)
			require.NoError(t, err)
			assert.Equal(t, tt.literal, cmd, "IoctlCommand = %#x, want %#x", cmd, tt.literal)
			if tt.got != 0 {
				assert.Equal(t, tt.literal, tt.got, "constant = %#x, want %#x", tt.got, tt.literal)
				assert.Equal(t, tt.name, ioctlName(tt.got))
			}
		})
	}
	assert.Equal(t, "ioctl 0x1234", ioctlName(0x1234))
}

func TestIoctlCommandRejectsOutOfRange(t *testing.T) {
	_, err := IoctlCommand(4, 1, 8)
	assert.ErrorContains(t, err, "direction 4")
	_, err = IoctlCommand(IocRead, 7, 1<<14)
	assert.ErrorContains(t, err, "size 16384")
	cmd, err := IoctlCommand(IocRead, 7, 1<<14-1)
	require.NoError(t, err)
	assert.Equal(t, uint32(0xbfff4e07), cmd)
}

func TestABIStructSizes(t *testing.T) {
	assert.Len(t, BarRW{}.Encode(), 32)
	assert.Len(t, DeviceInfo{}.Encode(), 80)
	assert.Len(t, DeviceBasicInfo{}.Encode(), 8)
	assert.Len(t, DeviceDriverInfo{}.Encode(), 24)
	assert.Equal(t, 32, BarRWSize)
	assert.Equal(t, 80, DeviceInfoSize)
	assert.Equal(t, 8, DeviceBasicInfoSize)
	assert.Equal(t, 24, DeviceDriverInfoSize)
}

func TestBarRWLayout(t *testing.T) {
	s := BarRW{Bar: 0x11223344, Address: 0x0102030405060708, Data: 0x1112131415161718, Count: 0xA1A2A3A4}
	want := []byte{
		0x44, 0x33, 0x22, 0x11, 0, 0, 0, 0, // bar @0, padding @4
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // address @8
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, // data @16
		0xA4, 0xA3, 0xA2, 0xA1, 0, 0, 0, 0, // count @24, tail padding @28
	}
	b := s.Encode()
	assert.Equal(t, want, b)

	back, err := DecodeBarRW(b)
	require.NoError(t, err)
	assert.Equal(t, s, back)

	// encodeTo into a dirty buffer clears the padding.
	dirty := make([]byte, 40)
	for i := range dirty {
		dirty[i] = 0xEE
	}
	s.encodeTo(dirty)
	assert.Equal(t, want, dirty[:32])
	assert.Equal(t, byte(0xEE), dirty[32], "encodeTo writes only 32 bytes")
}

func TestDeviceInfoLayout(t *testing.T) {
	s := DeviceInfo{
		Arch: 0x0A0B0C0D, Revision: 0x1A1B1C1D, ConnectedDeviceCount: 0x2A2B2C2D,
		ConnectedDevices: [8]uint32{0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37},
		BarAddress:       [2]uint64{0xffffc90012345678, 0x4142434445464748},
		BarSize:          [2]uint64{0x40000000, 0x5152535455565758},
	}
	b := s.Encode()
	require.Len(t, b, 80)
	le := binary.LittleEndian
	assert.Equal(t, uint32(0x0A0B0C0D), le.Uint32(b[0:]), "arch @0")
	assert.Equal(t, uint32(0x1A1B1C1D), le.Uint32(b[4:]), "revision @4")
	assert.Equal(t, uint32(0x2A2B2C2D), le.Uint32(b[8:]), "connected_device_count @8")
	for i := range 8 {
		assert.Equal(t, uint32(0x30+i), le.Uint32(b[12+4*i:]), "connected_devices[%d] @%d", i, 12+4*i)
	}
	assert.Equal(t, []byte{0, 0, 0, 0}, b[44:48], "padding @44 aligns bar_address to 8")
	assert.Equal(t, uint64(0xffffc90012345678), le.Uint64(b[48:]), "bar_address[0] @48")
	assert.Equal(t, uint64(0x4142434445464748), le.Uint64(b[56:]), "bar_address[1] @56")
	assert.Equal(t, uint64(0x40000000), le.Uint64(b[64:]), "bar_size[0] @64")
	assert.Equal(t, uint64(0x5152535455565758), le.Uint64(b[72:]), "bar_size[1] @72")
	assert.Equal(t, []byte{0x0D, 0x0C, 0x0B, 0x0A}, b[0:4], "little-endian")

	back, err := DecodeDeviceInfo(b)
	require.NoError(t, err)
	assert.Equal(t, s, back)
}

func TestDeviceBasicInfoLayout(t *testing.T) {
	s := DeviceBasicInfo{Arch: 0x01020304, Revision: 0x05060708}
	b := s.Encode()
	assert.Equal(t, []byte{0x04, 0x03, 0x02, 0x01, 0x08, 0x07, 0x06, 0x05}, b)
	back, err := DecodeDeviceBasicInfo(b)
	require.NoError(t, err)
	assert.Equal(t, s, back)
}

func TestDeviceDriverInfoLayout(t *testing.T) {
	s := DeviceDriverInfo{Arch: 0x01020304, Revision: 0x11121314, Version: 0x21222324, Size: 0x31323334, FeatureFlags1: 0x4142434445464748}
	want := []byte{
		0x04, 0x03, 0x02, 0x01, // architecture @0
		0x14, 0x13, 0x12, 0x11, // revision @4
		0x24, 0x23, 0x22, 0x21, // version @8
		0x34, 0x33, 0x32, 0x31, // size @12
		0x48, 0x47, 0x46, 0x45, 0x44, 0x43, 0x42, 0x41, // feature_flags1 @16
	}
	b := s.Encode()
	assert.Equal(t, want, b)
	back, err := DecodeDeviceDriverInfo(b)
	require.NoError(t, err)
	assert.Equal(t, s, back)
}

func TestABIDecodeLengths(t *testing.T) {
	decoders := []struct {
		name   string
		size   int
		decode func([]byte) error
	}{
		{"bar_rw", BarRWSize, func(b []byte) error { _, err := DecodeBarRW(b); return err }},
		{"device_info", DeviceInfoSize, func(b []byte) error { _, err := DecodeDeviceInfo(b); return err }},
		{"device_basic_info", DeviceBasicInfoSize, func(b []byte) error { _, err := DecodeDeviceBasicInfo(b); return err }},
		{"device_driver_info", DeviceDriverInfoSize, func(b []byte) error { _, err := DecodeDeviceDriverInfo(b); return err }},
		{"mem_alloc_v2_mem_type64", MemAllocV2MT64Size, func(b []byte) error { _, err := DecodeMemAllocV2MT64(b); return err }},
		{"mem_free", MemFreeSize, func(b []byte) error { _, err := DecodeMemFree(b); return err }},
		{"mem_buf_copy64", MemBufCopy64Size, func(b []byte) error { _, err := DecodeMemBufCopy64(b); return err }},
		{"memset64", Memset64Size, func(b []byte) error { _, err := DecodeMemset64(b); return err }},
		{"mem_get_extended_info", MemExtendedInfoSize, func(b []byte) error { _, err := DecodeMemExtendedInfo(b); return err }},
	}
	for _, d := range decoders {
		t.Run(d.name, func(t *testing.T) {
			for _, n := range []int{0, 1, d.size - 1} {
				err := d.decode(make([]byte, n))
				require.ErrorIs(t, err, ErrABITruncated, "len %d", n)
				assert.ErrorContains(t, err, d.name)
			}
			require.ErrorIs(t, d.decode(nil), ErrABITruncated)
			assert.NoError(t, d.decode(make([]byte, d.size)))
			assert.NoError(t, d.decode(make([]byte, d.size+7)), "trailing bytes are ignored")
		})
	}
}

// Decoding arbitrary bytes never panics; what decodes re-encodes to the same
// bytes (for bar_rw, with the padding cleared).
func FuzzDecodeDeviceInfo(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 79))
	f.Add(DeviceInfo{Arch: 3, Revision: 0xFF, BarAddress: [2]uint64{fakeBar0VA}, BarSize: [2]uint64{fakeBar0Size}}.Encode())
	f.Add(make([]byte, 200))
	f.Add(bytes.Repeat([]byte{0x30}, 80)) // found by the fuzzer: padding @44 is not a field
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeDeviceInfo(b)
		if len(b) < DeviceInfoSize {
			require.ErrorIs(t, err, ErrABITruncated)
			return
		}
		require.NoError(t, err)
		want := append([]byte(nil), b[:DeviceInfoSize]...)
		clear(want[44:48])
		require.Equal(t, want, s.Encode())
	})
}

func FuzzDecodeBarRW(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 31))
	f.Add(BarRW{Bar: 2, Address: 0x7fff0000, Data: 0x7fff1000, Count: 1}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeBarRW(b)
		if len(b) < BarRWSize {
			require.ErrorIs(t, err, ErrABITruncated)
			return
		}
		require.NoError(t, err)
		want := append([]byte(nil), b[:BarRWSize]...)
		clear(want[4:8])
		clear(want[28:32])
		require.Equal(t, want, s.Encode())
	})
}

func FuzzDecodeDriverInfo(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 7))
	f.Add(DeviceDriverInfo{Arch: 4, Size: 24, FeatureFlags1: 0x1FF}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeDeviceDriverInfo(b)
		if len(b) < DeviceDriverInfoSize {
			require.ErrorIs(t, err, ErrABITruncated)
		} else {
			require.NoError(t, err)
			require.Equal(t, b[:DeviceDriverInfoSize], s.Encode())
		}
		bs, err := DecodeDeviceBasicInfo(b)
		if len(b) < DeviceBasicInfoSize {
			require.ErrorIs(t, err, ErrABITruncated)
		} else {
			require.NoError(t, err)
			require.Equal(t, b[:DeviceBasicInfoSize], bs.Encode())
		}
	})
}

// The memory structs field by field (neuron_ioctl.h:52-62, 100-112, 166-187;
// offsets as gcc lays them out on LP64).
func TestMemStructLayouts(t *testing.T) {
	a := MemAllocV2MT64{Size: 0x0102030405060708, Align: 0x1112131415161718, HostMemory: 0x21222324, DRAMChannel: 0x31323334,
		DRAMRegion: 0x41424344, NC: 0x51525354, MemType: 0x61626364, HandleAddr: 0x7172737475767778, Pad: 0x81828384}
	b := a.Encode()
	require.Len(t, b, 56)
	le := binary.LittleEndian
	for _, f := range []struct {
		off  int
		want uint64
		w    int
	}{{0, a.Size, 8}, {8, a.Align, 8}, {16, 0x21222324, 4}, {20, 0x31323334, 4}, {24, 0x41424344, 4}, {28, 0x51525354, 4},
		{32, 0x61626364, 4}, {36, 0, 4}, {40, a.HandleAddr, 8}, {48, 0x81828384, 4}, {52, 0, 4}} {
		if f.w == 8 {
			assert.Equal(t, f.want, le.Uint64(b[f.off:]), "mem_alloc @%d", f.off)
		} else {
			assert.Equal(t, uint32(f.want), le.Uint32(b[f.off:]), "mem_alloc @%d", f.off)
		}
	}
	back, err := DecodeMemAllocV2MT64(b)
	require.NoError(t, err)
	assert.Equal(t, a, back)

	c := MemBufCopy64{Handle: 7, Buffer: 0x7fff_0000_1000, Size: 65536, Offset: 0x1234, ToMem: 1}
	cb := c.Encode()
	require.Len(t, cb, 40)
	assert.Equal(t, []uint64{7, 0x7fff_0000_1000, 65536, 0x1234}, []uint64{le.Uint64(cb[0:]), le.Uint64(cb[8:]), le.Uint64(cb[16:]), le.Uint64(cb[24:])})
	assert.Equal(t, []byte{1, 0, 0, 0, 0, 0, 0, 0}, cb[32:40], "copy_to_mem_handle @32, tail padding")
	cback, err := DecodeMemBufCopy64(cb)
	require.NoError(t, err)
	assert.Equal(t, c, cback)

	m := Memset64{Handle: 3, Offset: 9, Value: 0xAB, Size: 1 << 33}
	mb := m.Encode()
	require.Len(t, mb, 32)
	assert.Equal(t, uint32(0xAB), le.Uint32(mb[16:]), "value @16")
	assert.Equal(t, []byte{0, 0, 0, 0}, mb[20:24], "padding @20")
	assert.Equal(t, uint64(1<<33), le.Uint64(mb[24:]), "size @24")
	mback, err := DecodeMemset64(mb)
	require.NoError(t, err)
	assert.Equal(t, m, mback)

	e := MemExtendedInfo{Handle: 1, Version: 2, HostMemory: 3, MmapOffset: 4, PA: 5, PID: 6, Size: 7}
	eb := e.Encode()
	require.Len(t, eb, 48)
	assert.Equal(t, []uint64{1, 4, 5, 6, 7}, []uint64{le.Uint64(eb[0:]), le.Uint64(eb[16:]), le.Uint64(eb[24:]), le.Uint64(eb[32:]), le.Uint64(eb[40:])})
	assert.Equal(t, []uint32{2, 3}, []uint32{le.Uint32(eb[8:]), le.Uint32(eb[12:])}, "version @8, host_memory @12")
	eback, err := DecodeMemExtendedInfo(eb)
	require.NoError(t, err)
	assert.Equal(t, e, eback)

	f := MemFree{Handle: 0x0102030405060708}
	assert.Equal(t, []byte{8, 7, 6, 5, 4, 3, 2, 1}, f.Encode())
	fback, err := DecodeMemFree(f.Encode())
	require.NoError(t, err)
	assert.Equal(t, f, fback)
}

// Decoding arbitrary bytes as any memory struct never panics, and what
// decodes re-encodes to the same bytes with the padding cleared.
func FuzzDecodeMemStructs(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 39))
	f.Add(bytes.Repeat([]byte{0xA5}, 56))
	f.Add(MemAllocV2MT64{Size: 1 << 20, MemType: MemTypeTensorsDevice, HandleAddr: 0xc000012345}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(size int, pads []int, decode func([]byte) ([]byte, error)) {
			enc, err := decode(b)
			if len(b) < size {
				require.ErrorIs(t, err, ErrABITruncated)
				return
			}
			require.NoError(t, err)
			want := append([]byte(nil), b[:size]...)
			for _, p := range pads {
				want[p] = 0
			}
			require.Equal(t, want, enc)
		}
		check(MemAllocV2MT64Size, []int{36, 37, 38, 39, 52, 53, 54, 55}, func(b []byte) ([]byte, error) {
			s, err := DecodeMemAllocV2MT64(b)
			return s.Encode(), err
		})
		check(MemBufCopy64Size, []int{36, 37, 38, 39}, func(b []byte) ([]byte, error) {
			s, err := DecodeMemBufCopy64(b)
			return s.Encode(), err
		})
		check(Memset64Size, []int{20, 21, 22, 23}, func(b []byte) ([]byte, error) {
			s, err := DecodeMemset64(b)
			return s.Encode(), err
		})
		check(MemExtendedInfoSize, nil, func(b []byte) ([]byte, error) {
			s, err := DecodeMemExtendedInfo(b)
			return s.Encode(), err
		})
		check(MemFreeSize, nil, func(b []byte) ([]byte, error) {
			s, err := DecodeMemFree(b)
			return s.Encode(), err
		})
	})
}
