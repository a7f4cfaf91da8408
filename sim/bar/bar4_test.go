package bar

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

const gib = hwarch.GiB

func mustBAR4(t testing.TB, g hwarch.Generation, m hwarch.Mode, size uint64) *BAR4 {
	t.Helper()
	b, err := NewBAR4(hwarch.MustGeometry(g), m, size)
	require.NoError(t, err)
	return b
}

type xlate struct {
	off  uint64
	addr uint64
	ok   bool
}

func checkTranslate(t *testing.T, b *BAR4, tests []xlate) {
	t.Helper()
	for _, tt := range tests {
		addr, ok := b.Translate(tt.off)
		assert.Equal(t, tt.ok, ok, "BAR4 offset %#x", tt.off)
		if tt.ok {
			assert.Equal(t, tt.addr, addr, "BAR4 offset %#x", tt.off)
		} else {
			assert.Zero(t, addr)
		}
	}
}

func TestBAR4SundaSquashed(t *testing.T) {
	for _, m := range allModes { // the QEMU rule is V3/V4 only
		t.Run(m.String(), func(t *testing.T) {
			b := mustBAR4(t, hwarch.Sunda, m, DefaultSizes(hwarch.MustGeometry(hwarch.Sunda), m)[hwarch.BAR4])
			checkTranslate(t, b, []xlate{
				{0, 0, true},
				{0x1234_5678, 0x1234_5678, true},
				{16*gib - 4, 16*gib - 4, true},
				{16 * gib, 0x10_0000_0000, true}, // ch1: the 48 GiB device gap is squashed
				{16*gib + 0x100, 0x10_0000_0100, true},
				{32*gib - 4, 0x10_0000_0000 + 16*gib - 4, true},
				{32 * gib, 0, false},
				{math.MaxUint64 &^ 3, 0, false},
			})
			assert.Equal(t, []HBMWindow{
				{Channel: 0, BAR4Offset: 0, Size: 16 * gib, DeviceAddr: 0},
				{Channel: 1, BAR4Offset: 16 * gib, Size: 16 * gib, DeviceAddr: 0x10_0000_0000},
			}, b.Windows())
			assert.Equal(t, 16*gib, b.ChannelSize(0))
			assert.Equal(t, 16*gib, b.ChannelSize(1))
			assert.Zero(t, b.ChannelSize(2))
		})
	}
}

func TestBAR4BigChips(t *testing.T) {
	active := map[hwarch.Generation]uint64{hwarch.Cayman: 24 * gib, hwarch.Mariana: 36 * gib}
	bases := []uint64{0, 0x40_0000_0000, 0x8000_0000_0000, 0x8040_0000_0000}
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		for _, m := range []hwarch.Mode{hwarch.ModeSilicon, hwarch.ModeEMU} {
			t.Run(g.String()+"/"+m.String(), func(t *testing.T) {
				b := mustBAR4(t, g, m, 256*gib)
				var tests []xlate
				for ch, base := range bases {
					off := uint64(ch) * 64 * gib
					tests = append(tests,
						xlate{off, base, true},
						xlate{off + 0x10_0000, base + 0x10_0000, true},
						xlate{off + active[g] - 4, base + active[g] - 4, true},
						xlate{off + active[g], 0, false}, // the gap up to the next 64 GiB stride
						xlate{off + 64*gib - 4, 0, false},
					)
					assert.Equal(t, active[g], b.ChannelSize(ch))
				}
				tests = append(tests, xlate{256 * gib, 0, false}, xlate{math.MaxUint64 &^ 3, 0, false})
				checkTranslate(t, b, tests)
				require.Len(t, b.Windows(), 4)
			})
		}
	}
}

func TestBAR4QEMU(t *testing.T) {
	bases := []uint64{0, 0x40_0000_0000, 0x8000_0000_0000, 0x8040_0000_0000}
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		for _, size := range []uint64{DefaultQEMUBAR4, 4 * hwarch.MiB, 64 * gib, 8 * gib} {
			t.Run(fmt.Sprintf("%s/%#x", g, size), func(t *testing.T) {
				b := mustBAR4(t, g, hwarch.ModeQEMU, size)
				ch := size / 4
				var tests []xlate
				for n, base := range bases {
					off := uint64(n) * ch
					tests = append(tests,
						xlate{off, base, true},
						xlate{off + ch - 4, base + ch - 4, true},
					)
					assert.Equal(t, ch, b.ChannelSize(n), "channel %d", n)
					assert.Equal(t, HBMWindow{Channel: n, BAR4Offset: off, Size: ch, DeviceAddr: base}, b.Windows()[n])
				}
				tests = append(tests, xlate{size, 0, false})
				checkTranslate(t, b, tests)
				assert.Zero(t, b.ChannelSize(4))
				assert.Zero(t, b.ChannelSize(-1))
			})
		}
	}
	t.Run("default 16 GiB is 4 GiB per channel", func(t *testing.T) {
		b := mustBAR4(t, hwarch.Mariana, hwarch.ModeQEMU, DefaultQEMUBAR4)
		assert.Equal(t, 16*gib, DefaultQEMUBAR4)
		for n := range 4 {
			assert.Equal(t, 4*gib, b.ChannelSize(n))
		}
		checkTranslate(t, b, []xlate{{4 * gib, 0x40_0000_0000, true}, {12*gib + 8, 0x8040_0000_0008, true}})
	})
}

func TestBAR4BadQEMUSize(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		for _, size := range []uint64{4, 1 * hwarch.MiB, 3 * hwarch.MiB, 4*hwarch.MiB + 4, 6 * hwarch.MiB, 16*gib + hwarch.MiB, 512 * gib, 1 << 62} {
			t.Run(fmt.Sprintf("%s/%#x", g, size), func(t *testing.T) {
				_, err := NewBAR4(hwarch.MustGeometry(g), hwarch.ModeQEMU, size)
				require.Error(t, err)
				assert.Contains(t, err.Error(), "QEMU BAR4 size")
			})
		}
	}
	// A V3/V4 QEMU device without a BAR4 (the driver tolerates one that
	// fails to map) has no HBM windows.
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		b, err := NewBAR4(hwarch.MustGeometry(g), hwarch.ModeQEMU, 0)
		require.NoError(t, err)
		assert.Empty(t, b.Windows())
	}
	// Silicon and V2 QEMU take any size: the windows are cut to fit.
	for _, g := range hwarch.Generations() {
		for _, m := range allModes {
			if m == hwarch.ModeQEMU && g != hwarch.Sunda {
				continue
			}
			b, err := NewBAR4(hwarch.MustGeometry(g), m, 0)
			require.NoError(t, err, "%s %s", g, m)
			assert.Empty(t, b.Windows())
		}
	}
}

func TestBAR4CutToSize(t *testing.T) {
	b := mustBAR4(t, hwarch.Cayman, hwarch.ModeSilicon, 80*gib)
	assert.Equal(t, 24*gib, b.ChannelSize(0))
	assert.Equal(t, 16*gib, b.ChannelSize(1)) // 64..80 GiB
	assert.Zero(t, b.ChannelSize(2))
	checkTranslate(t, b, []xlate{{80*gib - 4, 0x40_0000_0000 + 16*gib - 4, true}, {80 * gib, 0, false}})

	b = mustBAR4(t, hwarch.Sunda, hwarch.ModeSilicon, 4096)
	assert.Equal(t, []HBMWindow{{Channel: 0, Size: 4096}}, b.Windows())
}

func TestBAR4WindowsIsACopy(t *testing.T) {
	b := mustBAR4(t, hwarch.Mariana, hwarch.ModeSilicon, 256*gib)
	ws := b.Windows()
	ws[0].DeviceAddr = 0xBAD
	addr, ok := b.Translate(0)
	require.True(t, ok)
	assert.Zero(t, addr)
}

func TestDefaultSizes(t *testing.T) {
	tests := []struct {
		g    hwarch.Generation
		m    hwarch.Mode
		want Sizes
	}{
		{hwarch.Sunda, hwarch.ModeSilicon, Sizes{0: 1 * gib, 4: 32 * gib}},
		{hwarch.Sunda, hwarch.ModeEMU, Sizes{0: 1 * gib, 4: 32 * gib}},
		{hwarch.Sunda, hwarch.ModeQEMU, Sizes{2: 1 * gib, 4: 32 * gib}}, // registers on BAR2, no BAR0
		{hwarch.Cayman, hwarch.ModeSilicon, Sizes{0: 4 * gib, 4: 256 * gib}},
		{hwarch.Cayman, hwarch.ModeEMU, Sizes{0: 4 * gib, 4: 256 * gib}},
		{hwarch.Cayman, hwarch.ModeQEMU, Sizes{2: 4 * gib, 4: 16 * gib}}, // driver 2.24.7.0: registers on BAR2
		{hwarch.Mariana, hwarch.ModeSilicon, Sizes{0: 4 * gib, 4: 256 * gib}},
		{hwarch.Mariana, hwarch.ModeEMU, Sizes{0: 4 * gib, 4: 256 * gib}},
		{hwarch.Mariana, hwarch.ModeQEMU, Sizes{0: 4 * gib, 4: 16 * gib}},
	}
	for _, tt := range tests {
		t.Run(tt.g.String()+"/"+tt.m.String(), func(t *testing.T) {
			geo := hwarch.MustGeometry(tt.g)
			s := DefaultSizes(geo, tt.m)
			assert.Equal(t, tt.want, s)
			// The defaults hold the atlas and build a BAR4 decode.
			a := mustAtlas(t, tt.g)
			assert.LessOrEqual(t, a.End(), s[geo.BAR0.RegisterBAR(tt.m)])
			_, err := NewBAR4(geo, tt.m, s[hwarch.BAR4])
			assert.NoError(t, err)
		})
	}
}

func TestDefaultMMIOLatency(t *testing.T) {
	want := map[hwarch.Generation]hwarch.MMIOLatency{
		hwarch.Sunda:   {Read: 1000 * time.Nanosecond, Write: 120 * time.Nanosecond},
		hwarch.Cayman:  {Read: 900 * time.Nanosecond, Write: 100 * time.Nanosecond},
		hwarch.Mariana: {Read: 800 * time.Nanosecond, Write: 100 * time.Nanosecond},
	}
	for _, g := range hwarch.Generations() {
		l := DefaultMMIOLatency(g)
		assert.Equal(t, want[g], l, g.String())
		assert.Greater(t, l.Read, l.Write, "a non-posted read costs more than a posted write")
		assert.Positive(t, l.Write)
	}
}
