package arch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

func tables(t *testing.T, g hwarch.Generation) *Tables {
	t.Helper()
	tab, err := For(g, Options{})
	require.NoError(t, err)
	return tab
}

func TestTdrvCounts(t *testing.T) {
	tests := []struct {
		gen                        hwarch.Generation
		tpb, seng, perHBM, perSENG int
	}{
		{hwarch.Sunda, 2, 2, 1, 1},
		{hwarch.Cayman, 8, 4, 2, 2},
		{hwarch.Mariana, 8, 4, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.gen.String(), func(t *testing.T) {
			d := tables(t, tt.gen).Tdrv
			assert.Equal(t, tt.gen, d.Generation())
			assert.Equal(t, tt.tpb, d.NumTPB())
			assert.Equal(t, tt.seng, d.NumSENG())
			assert.Equal(t, tt.perHBM, d.NumTPBPerHBM())
			assert.Equal(t, tt.perSENG, d.NumTPBPerSENG())
		})
	}
}

func TestTdrvPerTPB(t *testing.T) {
	sunda := tables(t, hwarch.Sunda).Tdrv
	for idx, want := range []uint64{0, 1 << 26} { // get_tpb_mem_offset_sunda: idx<<26
		got, err := sunda.TPBMemOffset(idx)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	for idx, want := range []uint64{0, 0x700000} { // 0 for TPB 0, 0x700000 stride otherwise
		got, err := sunda.TPBCSRAPBOffset(idx)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		d := tables(t, g).Tdrv
		for idx := 0; idx < 8; idx++ {
			mem, err := d.TPBMemOffset(idx)
			require.NoError(t, err)
			assert.Equal(t, uint64(0xD000_0000)+uint64(idx)*0x400_0000, mem)
			apb, err := d.TPBCSRAPBOffset(idx)
			require.NoError(t, err)
			assert.Equal(t, uint64(idx/2)*0x1000_0000, apb)
		}
	}
	// Every per-TPB accessor checks device_tpb_idx < num_tpb.
	for _, g := range hwarch.Generations() {
		d := tables(t, g).Tdrv
		for _, idx := range []int{-1, d.NumTPB(), 1000} {
			_, err := d.TPBMemOffset(idx)
			assert.ErrorIs(t, err, ErrTPBIndex, "%s mem %d", g, idx)
			_, err = d.TPBCSRAPBOffset(idx)
			assert.ErrorIs(t, err, ErrTPBIndex, "%s apb %d", g, idx)
			_, err = d.H2DEngine(idx)
			assert.ErrorIs(t, err, ErrTPBIndex, "%s h2d %d", g, idx)
		}
	}
}

func TestTdrvH2D(t *testing.T) {
	m := tables(t, hwarch.Mariana).Tdrv
	assert.Equal(t, [8]int{128, 129, 130, 131, 0, 0, 0, 0}, m.H2DEngineTable())
	for idx, want := range []int{128, 128, 129, 129, 130, 130, 131, 131} { // idx / num_tpb_per_seng
		got, err := m.H2DEngine(idx)
		require.NoError(t, err)
		assert.Equal(t, want, got, "tpb %d", idx)
	}
	// (eng-128) <= 3 as unsigned: below 128 wraps around and fails.
	for eng, want := range map[uint32]bool{0: false, 127: false, 128: true, 131: true, 132: false, 0xFFFF_FFFF: false} {
		assert.Equal(t, want, m.IsH2DEngine(eng), "eng %d", eng)
	}
	s := tables(t, hwarch.Sunda).Tdrv
	for idx, want := range []int{32, 33} {
		got, err := s.H2DEngine(idx)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	assert.True(t, s.IsH2DEngine(32))
	assert.True(t, s.IsH2DEngine(33))
	assert.False(t, s.IsH2DEngine(31))
	assert.False(t, s.IsH2DEngine(34))
	assert.False(t, s.IsH2DEngine(128))
}

func TestTdrvAPB(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		d := tables(t, g).Tdrv
		bases := []uint64{0x10_0000_0000, 0x50_0000_0000, 0x8010_0000_0000, 0x8050_0000_0000}
		offs := []uint64{0x8000_0000, 0x9000_0000, 0xa000_0000, 0xb000_0000}
		for i := range bases {
			b, err := d.APBSEBase(i)
			require.NoError(t, err)
			assert.Equal(t, bases[i], b)
			o, err := d.APBBAROffset(i)
			require.NoError(t, err)
			assert.Equal(t, offs[i], o)
		}
		_, err := d.APBSEBase(4)
		assert.ErrorIs(t, err, ErrIndex)
		_, err = d.APBBAROffset(-1)
		assert.ErrorIs(t, err, ErrIndex)
		// PA → BAR0: an SE2 UDMA engine (driver-facts: SE2 UDMA at BAR0 0xA200_0000, SE base + 0x200_0000).
		bar, err := d.DMAEngineBAR0Offset(0x8010_0000_0000 + 0x200_0000 + 3*0x10_0000)
		require.NoError(t, err)
		assert.Equal(t, uint64(0xA200_0000+3*0x10_0000), bar)
		bar, err = d.DMAEngineBAR0Offset(0x50_0000_0000 + 0xC80_0000 - 4) // last word of SE1
		require.NoError(t, err)
		assert.Equal(t, uint64(0x9C7F_FFFC), bar)
		_, err = d.DMAEngineBAR0Offset(0x50_0000_0000 + 0xC80_0000) // one past SE1
		assert.ErrorIs(t, err, ErrNotMapped)
		assert.Len(t, d.APBSEWindows(), 4)
	}
	s := tables(t, hwarch.Sunda).Tdrv
	bar, err := s.DMAEngineBAR0Offset(0xFFF_F070_0000) // SENG1 UDMA 0
	require.NoError(t, err)
	assert.Equal(t, uint64(0x3070_0000), bar)
}

func TestNXCoreType(t *testing.T) {
	c := tables(t, hwarch.Cayman).Tdrv
	want := []hwarch.CoreType{10, 7, 9, 8, 11}
	for e, w := range want {
		got, ok := c.NXCoreType(hwarch.Engine(e))
		require.True(t, ok)
		assert.Equal(t, w, got)
	}
	got, ok := c.NXCoreType(hwarch.EngineSP + 1)
	assert.False(t, ok)
	assert.EqualValues(t, -1, got)
}
