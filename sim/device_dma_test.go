package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// TestHBMApart: every device's HBM channels are apart from its host,
// neighbour and fabric windows (so its DMA decode tries HBM first), and a
// geometry whose channel reaches into one of them is not.
func TestHBMApart(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := newDev(t, DeviceConfig{Generation: g, Revision: rev, Ready: true})
		assert.True(t, h.d.hbmApart)
	})
	geo := *hwarch.MustGeometry(hwarch.Mariana)
	sizes := make([]uint64, len(geo.HBM))
	for ch, c := range geo.HBM {
		sizes[ch] = c.ActiveSize
	}
	require.True(t, hbmApart(&geo, sizes))
	last := len(geo.HBM) - 1
	top := geo.HBM[last].Base + sizes[last]
	for _, tc := range []struct {
		name   string
		modify func(g *hwarch.Geometry, sizes []uint64)
	}{
		{"host-window-inside", func(g *hwarch.Geometry, _ []uint64) { g.HostAddressBit = top - 1 }},
		{"neighbour-window-inside", func(g *hwarch.Geometry, _ []uint64) {
			g.NeighbourWindows = []uint64{top - 1}
		}},
		{"neighbour-window-over-all", func(g *hwarch.Geometry, _ []uint64) { g.NeighbourWindows = []uint64{0} }},
		{"past-the-fabric-bit", func(_ *hwarch.Geometry, sizes []uint64) { sizes[last] = hwarch.FabricWindowBit }},
		{"past-the-top", func(_ *hwarch.Geometry, sizes []uint64) { sizes[last] = ^uint64(0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := geo
			g.HBM = append(g.HBM[:0:0], geo.HBM...)
			s := append([]uint64(nil), sizes...)
			tc.modify(&g, s)
			assert.False(t, hbmApart(&g, s))
		})
	}
}

// decodeProbes returns the addresses the decode tests try on d: both ends
// of a host buffer allocated for it, the edges of every HBM channel, of
// every neighbour window and of every on-chip window, then extra.
func decodeProbes(t *testing.T, d *Device, extra ...uint64) []uint64 {
	t.Helper()
	pa, err := d.HostAlloc(1<<16, 4096)
	require.NoError(t, err)
	addrs := []uint64{d.geo.HostAddress(pa), d.geo.HostAddress(pa + 1<<16 - 4)}
	for ch, c := range d.geo.HBM {
		addrs = append(addrs, c.Base, c.Base+d.hbmSize[ch]-4, c.Base+d.hbmSize[ch], c.Base+c.WindowSize-4)
	}
	for _, w := range d.geo.NeighbourWindows {
		addrs = append(addrs, w, w+hwarch.NeighbourWindowSize-4)
	}
	for _, w := range d.atlas.Windows() {
		addrs = append(addrs, w.DeviceAddr, w.DeviceAddr+w.Size-4)
	}
	return append(addrs, extra...)
}

// TestDecodeHBMFirst: the DMA decode with HBM tried first resolves every
// kind of address — HBM edges and overruns, host memory, neighbour and
// fabric windows, on-chip windows, unmapped space — to the same target or
// the same error as the decode in its full order.
func TestDecodeHBMFirst(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := newDev(t, DeviceConfig{Generation: g, Revision: rev, Ready: true})
		d := h.d
		addrs := decodeProbes(t, d, 1<<62, 1<<62|1<<48, ^uint64(0)-3)
		require.True(t, d.hbmApart)
		for _, addr := range addrs {
			for _, n := range []int{4, 1 << 16} {
				d.hbmApart = true
				fast, fastErr := d.decode(addr, n)
				d.hbmApart = false
				full, fullErr := d.decode(addr, n)
				d.hbmApart = true
				where := fmt.Sprintf("[%#x, +%d)", addr, n)
				assert.Equal(t, full, fast, where)
				assert.Equal(t, fmt.Sprint(fullErr), fmt.Sprint(fastErr), where)
			}
		}
	})
}

// TestCheckFast: deviceBus.Check, which finds HBM and fabric-window
// ranges without decode, gives every kind of address — HBM edges and
// overruns, host memory, neighbour and fabric windows (within one device,
// across two, on a device with and without a fabric), on-chip windows,
// unmapped space — the class and the error decode gives.
func TestCheckFast(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := newDev(t, DeviceConfig{Generation: g, Revision: rev, Ready: true})
		d := h.d
		addrs := decodeProbes(t, d, 0, 1<<62, 1<<62|1<<48-4, 1<<62|1<<48,
			1<<62|(hwarch.MaxFabricDevices-1)<<48|(1<<48-4), 1<<63|1<<62, ^uint64(0)-3)
		require.NotNil(t, d.fastCheck)
		for _, f := range []dma.Fabric{nil, nopFabric{}} {
			d.fabric = f
			for _, addr := range addrs {
				for _, n := range []int{-1, 0, 4, 8, 1 << 16} {
					class, err := (*deviceBus)(d).Check(addr, n)
					full, fullErr := d.decode(addr, n)
					where := fmt.Sprintf("[%#x, +%d), fabric %v", addr, n, f != nil)
					assert.Equal(t, full.class, class, where)
					assert.Equal(t, fmt.Sprint(fullErr), fmt.Sprint(err), where)
				}
			}
		}
	})
}

// TestFabricApart: a host window that holds a fabric-window address, or is
// not one bit's, turns Check's fast path off.
func TestFabricApart(t *testing.T) {
	for _, tc := range []struct {
		bit  uint64
		want bool
	}{{0, true}, {1 << 46, true}, {1 << 61, true}, {1 << 62, false}, {1 << 63, true}, {1<<46 | 1<<45, false}} {
		assert.Equal(t, tc.want, fabricApart(&hwarch.Geometry{HostAddressBit: tc.bit}), "host bit %#x", tc.bit)
	}
}

// TestRemoteOnlyByFabric: on a device with a fabric, a plain DMA read,
// write or copy of a neighbour or fabric address (an instruction fetch from
// one) is refused with dma.ErrNeighbour and touches nothing: another
// device's memory is reached only by a write the fabric carries.
func TestRemoteOnlyByFabric(t *testing.T) {
	h := newDev(t, DeviceConfig{Generation: hwarch.Mariana, Ready: true})
	d := h.d
	d.AttachFabric(nopFabric{})
	hbm := d.geo.HBM[0].Base
	want := []byte{0xAB, 0xCD, 0xEF, 0x01}
	require.NoError(t, d.hbm.Write(hbm, want))
	bus := (*deviceBus)(d)
	for _, remote := range []uint64{hwarch.FabricWindowBit | 5<<hwarch.DeviceAddressBits | 0x1000, d.geo.NeighbourWindows[1] + 0x40} {
		for _, tc := range []struct {
			name string
			do   func() error
		}{
			{"read", func() error { return bus.ReadDMA(remote, make([]byte, 4)) }},
			{"write", func() error { return bus.WriteDMA(remote, []byte{1, 2, 3, 4}) }},
			{"copy-from", func() error { return bus.CopyDMA(hbm+0x100, remote, 4) }},
			{"copy-to", func() error { return bus.CopyDMA(remote, hbm, 4) }},
		} {
			t.Run(fmt.Sprintf("%s/%#x", tc.name, remote), func(t *testing.T) {
				assert.ErrorIs(t, tc.do(), dma.ErrNeighbour)
				got := make([]byte, 4)
				require.NoError(t, d.hbm.Read(hbm, got))
				assert.Equal(t, want, got, "HBM untouched")
				require.NoError(t, d.hbm.Read(hbm+0x100, got))
				assert.Equal(t, make([]byte, 4), got, "HBM untouched")
			})
		}
	}
}

// nopFabric is an attached fabric that carries nothing.
type nopFabric struct{}

func (nopFabric) Reserve(int, int, uint64, int, Time, Time) (Time, Time, error) { return 0, 0, nil }
func (nopFabric) Post(int, int, uint64, int, []byte, udma.Reduce, Time) error   { return nil }
