package csr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// fakeDevice is an ndl.Device backed by sparse word maps, recording every access.
type fakeDevice struct {
	mu      sync.Mutex
	words   map[int]map[uint64]uint32
	size    uint64
	touched []uint64 // BAR offsets of every word read or written
	failOn  uint64   // a BAR offset whose access fails (0: none)
}

func newFakeDevice(size uint64) *fakeDevice {
	return &fakeDevice{words: map[int]map[uint64]uint32{0: {}, 2: {}}, size: size}
}

func (d *fakeDevice) Identity() hwarch.PCIIdentity {
	return hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: hwarch.DeviceTrn3}
}
func (d *fakeDevice) BARSize(bar int) uint64 { return d.size }
func (d *fakeDevice) Close() error           { return nil }

func (d *fakeDevice) access(bar int, off uint64, n int, fn func(m map[uint64]uint32, i int, a uint64)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	m, ok := d.words[bar]
	if !ok {
		return fmt.Errorf("bar %d: %w", bar, ndl.ErrBadBAR)
	}
	if off+4*uint64(n) > d.size {
		return fmt.Errorf("offset %#x: %w", off, ndl.ErrBAROffset)
	}
	for i := 0; i < n; i++ {
		a := off + 4*uint64(i)
		if d.failOn != 0 && a == d.failOn {
			return errors.New("injected device fault")
		}
		d.touched = append(d.touched, a)
		fn(m, i, a)
	}
	return nil
}

func (d *fakeDevice) ReadBAR(bar int, off uint64, dst []uint32) error {
	return d.access(bar, off, len(dst), func(m map[uint64]uint32, i int, a uint64) { dst[i] = m[a] })
}

func (d *fakeDevice) WriteBAR(bar int, off uint64, src []uint32) error {
	return d.access(bar, off, len(src), func(m map[uint64]uint32, i int, a uint64) { m[a] = src[i] })
}

func (d *fakeDevice) Read32(bar int, off uint64) (uint32, error) {
	var w [1]uint32
	err := d.ReadBAR(bar, off, w[:])
	return w[0], err
}

func (d *fakeDevice) Write32(bar int, off uint64, v uint32) error {
	return d.WriteBAR(bar, off, []uint32{v})
}

const va = 0x7f00_0000_0000

func twoWindows(t *testing.T) (*Layer, *fakeDevice) {
	t.Helper()
	dev := newFakeDevice(1 << 20)
	tab := NewTable(0)
	require.NoError(t, tab.Register(Region{Name: "a", Start: va, End: va + 0x1000, Device: dev, BAR0Offset: 0}))
	require.NoError(t, tab.Register(Region{Name: "b", Start: va + 0x1000, End: va + 0x2000, Device: dev, BAR0Offset: 0x8000}))
	return &Layer{Regions: tab}, dev
}

func TestLastWordOfWindow(t *testing.T) {
	l, dev := twoWindows(t)
	require.NoError(t, l.Write(va+0x1000-4, 0xCAFE), "end-4 is the last addressable word")
	v, err := l.Read(va + 0x1000 - 4)
	require.NoError(t, err)
	assert.Equal(t, uint32(0xCAFE), v)
	assert.Equal(t, uint32(0xCAFE), dev.words[0][0xFFC])

	_, err = l.Read(va + 0x1000 - 3)
	require.ErrorIs(t, err, ErrInvalidAddress)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, -2, e.Status)
	assert.Equal(t, uint64(va+0x1000-3), e.Addr)
	assert.Contains(t, err.Error(), "Invalid address 0x7f0000000ffd 0x7f0000000000-0x7f0000001000")
}

func TestStraddlingBatchIsRefusedWhole(t *testing.T) {
	l, dev := twoWindows(t)
	before := len(dev.touched)
	err := l.WriteArray([]uint64{va + 0xFFC, va + 0x1000}, []uint32{1, 2})
	require.ErrorIs(t, err, ErrInvalidAddress)
	assert.Len(t, dev.touched, before, "nothing was written")
	assert.Empty(t, dev.words[0])
	err = l.ReadArray([]uint64{va + 0x1000, va + 0xFFC}, make([]uint32, 2))
	require.ErrorIs(t, err, ErrInvalidAddress, "the region comes from ptrs[0] alone")
}

func TestLookupErrors(t *testing.T) {
	var none Layer
	_, err := none.Read(va)
	require.ErrorIs(t, err, ErrNoRegions)
	assert.Contains(t, err.Error(), "Failed to get registered csr regions")
	err = none.AXIWrite(va, nil)
	require.ErrorIs(t, err, ErrNoRegions)

	l, _ := twoWindows(t)
	_, err = l.Read(va + 0x2000)
	require.ErrorIs(t, err, ErrRegionNotFound)
	assert.Contains(t, err.Error(), "Region not found for address 0x7f0000002000")
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, StatusRegion, e.Status)

	err = l.ReadArray([]uint64{va, va + 4}, make([]uint32, 1))
	require.Error(t, err, "too few values")
}

func TestBatchesUseRunsOfConsecutiveWords(t *testing.T) {
	l, dev := twoWindows(t)
	ptrs := []uint64{va + 0x1000, va + 0x1004, va + 0x1008, va + 0x1100, va + 0x1000}
	require.NoError(t, l.WriteArray(ptrs, []uint32{1, 2, 3, 4, 5}))
	assert.Equal(t, uint32(5), dev.words[0][0x8000], "later writes win, in order")
	assert.Equal(t, uint32(2), dev.words[0][0x8004])
	assert.Equal(t, uint32(4), dev.words[0][0x8100])
	got := make([]uint32, len(ptrs))
	require.NoError(t, l.ReadArray(ptrs, got))
	assert.Equal(t, []uint32{5, 2, 3, 4, 5}, got)
}

func TestAXIWriteAndMemBuffers(t *testing.T) {
	l, dev := twoWindows(t)
	require.NoError(t, l.MemWriteBuf(va+0x1FF0, []uint32{1, 2, 3, 4}))
	assert.Equal(t, uint32(4), dev.words[0][0x8FFC])
	buf := make([]uint32, 4)
	require.NoError(t, l.MemReadBuf(va+0x1FF0, buf))
	assert.Equal(t, []uint32{1, 2, 3, 4}, buf)
	err := l.AXIWrite(va+0x1FF4, []uint32{1, 2, 3, 4})
	require.ErrorIs(t, err, ErrInvalidAddress, "a burst past the window end")
	assert.Equal(t, uint32(2), dev.words[0][0x8FF4], "and nothing of it was written")
	require.NoError(t, l.RegWrite32(va+8, 7))
	v, err := l.RegRead32(va + 8)
	require.NoError(t, err)
	assert.Equal(t, uint32(7), v)
}

func TestDeviceFaultCarriesCause(t *testing.T) {
	l, dev := twoWindows(t)
	dev.failOn = 0x10
	_, err := l.Read(va + 0x10)
	require.ErrorIs(t, err, ErrDevice)
	assert.Contains(t, err.Error(), "injected device fault")
}

func TestRegisterRefusesBadRegions(t *testing.T) {
	dev := newFakeDevice(1 << 20)
	tab := NewTable(2)
	require.NoError(t, tab.Register(Region{Name: "a", Start: 0x1000, End: 0x2000, Device: dev}))
	for _, r := range []Region{
		{Name: "empty", Start: 0x3000, End: 0x3000, Device: dev},
		{Name: "reversed", Start: 0x4000, End: 0x3000, Device: dev},
		{Name: "misaligned", Start: 0x3002, End: 0x4000, Device: dev},
		{Name: "nodev", Start: 0x3000, End: 0x4000},
		{Name: "overlap", Start: 0x1FFC, End: 0x3000, Device: dev},
	} {
		assert.ErrorIs(t, tab.Register(r), ErrBadRegion, r.Name)
	}
	require.NoError(t, tab.Register(Region{Name: "b", Start: 0x2000, End: 0x3000, Device: dev}))
	assert.ErrorIs(t, tab.Register(Region{Name: "c", Start: 0x3000, End: 0x4000, Device: dev}), ErrTableFull)
	assert.Len(t, tab.Regions(), 2)
	assert.Equal(t, 2, tab.Deregister(0))
	assert.Empty(t, tab.Regions())
}

func TestAtlasPerGeneration(t *testing.T) {
	tests := []struct {
		gen     hwarch.Generation
		windows int
	}{
		{hwarch.Sunda, 2*2 + 6 + 2 + 1},
		{hwarch.Cayman, 8*2 + 16 + 4 + 2 + 4},
		{hwarch.Mariana, 8*2 + 16 + 4 + 2 + 4},
	}
	for _, tt := range tests {
		t.Run(tt.gen.String(), func(t *testing.T) {
			tabs := arch.MustFor(tt.gen, arch.Options{})
			w, err := Atlas(tabs)
			require.NoError(t, err)
			assert.Len(t, w, tt.windows)
			for _, win := range w {
				// The range commands and scenarios check an offset
				// against holds every window.
				assert.NoError(t, tabs.Geometry.CheckRegisters(win.BAR0Offset, win.Size/4), "window %s", win.Name)
			}
			dev := newFakeDevice(tabs.Geometry.BAR0.MinimumBAR0)
			tab := NewTable(0)
			require.NoError(t, RegisterDevice(tab, tabs, dev, 3, va, 0), "windows must not overlap")
			l := &Layer{Regions: tab}
			// A semaphore of NC 1 is reached through the PSUM window of NC 1.
			sem := va + tabs.Geometry.BAR0.TPBWindow(1) + tabs.Geometry.BAR0.SemSetOffset + 4*5
			require.NoError(t, l.Write(sem, 9))
			assert.Equal(t, uint32(9), dev.words[0][tabs.Geometry.BAR0.TPBWindow(1)+tabs.Geometry.BAR0.SemSetOffset+20])
			// MISC RAM is registered.
			_, err = l.Read(va + tabs.Geometry.BAR0.MiscRAM + 0x24)
			require.NoError(t, err)
			// Every TOP_SP window's last word is reachable.
			for ts := 0; ts < tabs.Geometry.TopSPs; ts++ {
				off := tabs.Geometry.BAR0.TopSPWindow(ts) + tabs.Geometry.BAR0.TopSPSize - 4
				_, err := l.Read(va + off)
				require.NoError(t, err, "top_sp %d", ts)
			}
			assert.Equal(t, tt.windows, tab.Deregister(3))
		})
	}
	mw, err := Atlas(arch.MustFor(hwarch.Mariana, arch.Options{}))
	require.NoError(t, err)
	byName := map[string]Window{}
	for _, w := range mw {
		byName[w.Name] = w
	}
	// The seed 003 mariana atlas.
	assert.Equal(t, Window{"tpb7", 0xEC00_0000, 0x200_0000, 0x807000000000}, byName["tpb7"])
	assert.Equal(t, uint64(0xEE00_0000), byName["tpb7_psum"].BAR0Offset)
	assert.Equal(t, Window{"preproc3", 0xCC00_0000, 0x34C_0000, 0x8040_0000_0000 + 0x12_0000_0000}, byName["preproc3"])
	assert.Equal(t, Window{"apb_io_1", 0x4000_0000, 0x2000_0000, 0x808000000000}, byName["apb_io_1"])
	assert.Equal(t, Window{"apb_se_2", 0xA000_0000, 0xC80_0000, 0x801000000000}, byName["apb_se_2"])
	assert.Equal(t, Window{"top_sp9", 0xF2C0_0000, 0x40_0000, 0x8082_C000_0000}, byName["top_sp9"])
}

func TestRegisterDeviceUnderQEMUUsesBAR2(t *testing.T) {
	tabs := arch.MustFor(hwarch.Sunda, arch.Options{})
	dev := newFakeDevice(tabs.Geometry.BAR0.MinimumBAR0)
	tab := NewTable(0)
	require.NoError(t, RegisterDevice(tab, tabs, dev, 0, va, 2))
	l := &Layer{Regions: tab}
	require.NoError(t, l.Write(va+tabs.Geometry.BAR0.QEMUResetReg, 1))
	assert.Equal(t, uint32(1), dev.words[2][tabs.Geometry.BAR0.QEMUResetReg])
	assert.Empty(t, dev.words[0])
}

func TestRegisterDeviceRollsBackOnError(t *testing.T) {
	tabs := arch.MustFor(hwarch.Cayman, arch.Options{})
	tab := NewTable(10) // too small for the whole atlas
	err := RegisterDevice(tab, tabs, newFakeDevice(1<<32), 1, va, 0)
	require.ErrorIs(t, err, ErrTableFull)
	assert.Empty(t, tab.Regions(), "nothing of the device stays registered")
	err = RegisterDevice(NewTable(0), tabs, newFakeDevice(1<<32), 1, ^uint64(0)-0x1000, 0)
	require.ErrorIs(t, err, ErrBadRegion)
}

func TestConcurrentAccess(t *testing.T) {
	l, dev := twoWindows(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				a := va + uint64(g)*4
				assert.NoError(t, l.Write(a, uint32(i)))
				_, err := l.Read(a)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Add(1)
	go func() { // registration races with access
		defer wg.Done()
		for i := 0; i < 50; i++ {
			_ = l.Regions.Register(Region{Name: "x", Start: 0x10_0000 + uint64(i)*0x1000, End: 0x10_1000 + uint64(i)*0x1000, Device: dev, DeviceID: 9})
		}
		l.Regions.Deregister(9)
	}()
	wg.Wait()
	for g := 0; g < 8; g++ {
		assert.Equal(t, uint32(199), dev.words[0][uint64(g)*4])
	}
}

// FuzzCSRNeverLeavesWindow: whatever batch of pointers comes in, every word
// the device sees lies inside the window resolved from ptrs[0].
func FuzzCSRNeverLeavesWindow(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, true)
	f.Add([]byte{0xFC, 0x0F, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0}, false)
	f.Add([]byte{0xFD, 0x0F, 0, 0, 0, 0, 0, 0}, true)
	f.Fuzz(func(t *testing.T, raw []byte, write bool) {
		dev := newFakeDevice(1 << 20)
		tab := NewTable(0)
		require.NoError(t, tab.Register(Region{Name: "a", Start: va, End: va + 0x1000, Device: dev, BAR0Offset: 0x4000}))
		require.NoError(t, tab.Register(Region{Name: "b", Start: va + 0x1000, End: va + 0x1800, Device: dev, BAR0Offset: 0x1000}))
		l := &Layer{Regions: tab}
		var ptrs []uint64
		for len(raw) >= 8 && len(ptrs) < 64 {
			ptrs = append(ptrs, va+binary.LittleEndian.Uint64(raw)%0x2000)
			raw = raw[8:]
		}
		values := make([]uint32, len(ptrs))
		var err error
		if write {
			err = l.WriteArray(ptrs, values)
		} else {
			err = l.ReadArray(ptrs, values)
		}
		if err != nil {
			assert.Empty(t, dev.touched, "a refused batch touches nothing")
			return
		}
		if len(ptrs) == 0 {
			return
		}
		r, _ := tab.find(ptrs[0])
		lo, hi := r.BAR0Offset, r.BAR0Offset+(r.End-r.Start)-4
		for _, a := range dev.touched {
			if a < lo || a > hi {
				t.Fatalf("touched BAR offset %#x outside window %q [%#x, %#x]", a, r.Name, lo, hi)
			}
		}
		assert.Len(t, dev.touched, len(ptrs))
	})
}
