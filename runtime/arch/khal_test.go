package arch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

var bigTPBBases = []uint64{0x2000000000, 0x3000000000, 0x6000000000, 0x7000000000,
	0x802000000000, 0x803000000000, 0x806000000000, 0x807000000000}

func TestKhalBaseTables(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		k := tables(t, g).Khal
		assert.Equal(t, bigTPBBases, k.TPBBases())
		for i, b := range bigTPBBases {
			tpb, err := k.TPBBase(i)
			require.NoError(t, err)
			assert.Equal(t, b, tpb)
			psum, err := k.PSUMBase(i)
			require.NoError(t, err)
			assert.Equal(t, b+0x802000000, psum, "PSUM = TPB + 0x802000000")
			pre, err := k.PREPROCBase(i)
			require.NoError(t, err)
			hbm, _ := k.HBMBase(i / 2)
			assert.Equal(t, hbm+0x12_0000_0000+uint64(i%2)*0x1A6_0000, pre)
			// Tiles 4..7 carry the mesh bit; 0..3 do not.
			assert.Equal(t, i >= 4, tpb&MeshHighBit != 0, "tile %d tpb", i)
			assert.Equal(t, i >= 4, psum&MeshHighBit != 0, "tile %d psum", i)
			assert.Equal(t, i >= 4, pre&MeshHighBit != 0, "tile %d preproc", i)
		}
		for _, idx := range []int{8, 9, -1} {
			_, err := k.TPBBase(idx)
			assert.ErrorIs(t, err, ErrIndex, "tpb %d", idx)
			_, err = k.PSUMBase(idx)
			assert.ErrorIs(t, err, ErrIndex, "psum %d", idx)
			_, err = k.PREPROCBase(idx)
			assert.ErrorIs(t, err, ErrIndex, "preproc %d", idx)
		}
		assert.Equal(t, uint64(0x34C_0000), k.PREPROCSize())
	}
	s := tables(t, hwarch.Sunda).Khal
	assert.Equal(t, []uint64{0xFFF_C000_0000, 0xFFF_C400_0000}, s.TPBBases())
	psum, err := s.PSUMBase(1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xFFF_C600_0000), psum)
	pre, err := s.PREPROCBase(1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x18_0000_0000), pre)
	_, err = s.TPBBase(2)
	assert.ErrorIs(t, err, ErrIndex)
}

func TestKhalHBM(t *testing.T) {
	tests := []struct {
		gen   hwarch.Generation
		bases []uint64
		size  uint64
	}{
		{hwarch.Sunda, []uint64{0, 0x1000000000}, 0x400000000},
		{hwarch.Cayman, []uint64{0, 0x4000000000, 0x800000000000, 0x804000000000}, 0x600000000},
		{hwarch.Mariana, []uint64{0, 0x4000000000, 0x800000000000, 0x804000000000}, 0x900000000},
	}
	for _, tt := range tests {
		t.Run(tt.gen.String(), func(t *testing.T) {
			k := tables(t, tt.gen).Khal
			require.Equal(t, len(tt.bases), k.NumHBM())
			for i, b := range tt.bases {
				got, err := k.HBMBase(i)
				require.NoError(t, err)
				assert.Equal(t, b, got)
			}
			_, err := k.HBMBase(len(tt.bases))
			assert.ErrorIs(t, err, ErrIndex)
			assert.Equal(t, tt.size, k.HBMSize())
		})
	}
	// The getter's size is the usable size, not the BAR4 window (0x1000000000 per channel on V3).
	assert.NotEqual(t, uint64(0x1000000000), tables(t, hwarch.Cayman).Khal.HBMSize())
}

func TestKhalIRAM(t *testing.T) {
	s := tables(t, hwarch.Sunda).Khal
	for _, e := range []hwarch.Engine{hwarch.EngineACT, hwarch.EnginePOOL, hwarch.EngineDVE, hwarch.EngineSP} {
		v, err := s.TPBEngIRAMSize(e)
		require.NoError(t, err)
		assert.Equal(t, 8*hwarch.MiB, v, "sunda %s", e)
	}
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		k := tables(t, g).Khal
		for _, e := range hwarch.Engines() {
			v, err := k.TPBEngIRAMSize(e)
			require.NoError(t, err)
			assert.Equal(t, 32*hwarch.KiB, v, "%s %s", g, e)
		}
		_, err := k.TPBEngIRAMSize(5)
		assert.ErrorIs(t, err, ErrIndex)
	}
}

func TestSeqParams(t *testing.T) {
	bases := map[hwarch.Engine]uint64{
		hwarch.EnginePE: 0x802600000, hwarch.EngineACT: 0x802400000,
		hwarch.EnginePOOL: 0x803000000, hwarch.EngineDVE: 0x802B00000,
	}
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		k := tables(t, g).Khal
		for e, base := range bases {
			p, err := k.SeqParams(e, false)
			require.NoError(t, err)
			assert.Equal(t, SeqParams{base, base + 0x20000, base + 0x40000, 0x20000, 0x10000}, p, "%s %s", g, e)
			h, err := k.SeqParams(e, true)
			require.NoError(t, err)
			r := base - 0x800000000
			assert.Equal(t, SeqParams{r, r + 0x20000, r + 0x40000, 0x20000, 0x10000}, h, "%s %s host-visible", g, e)
		}
		sp, err := k.SeqParams(hwarch.EngineSP, false)
		require.NoError(t, err)
		assert.Equal(t, SeqParams{0, 0x20000, 0x40000, 0x20000, 0x10000}, sp)
		sp, err = k.SeqParams(hwarch.EngineSP, true)
		require.NoError(t, err)
		assert.Equal(t, SeqParams{0x2800000, 0x2820000, 0x2840000, 0x20000, 0x10000}, sp)
		_, err = k.SeqParams(5, false)
		assert.ErrorIs(t, err, ErrIndex)
	}
	s := tables(t, hwarch.Sunda).Khal
	for e, base := range bases {
		p, err := s.SeqParams(e, false)
		require.NoError(t, err)
		b := base &^ 0x8_0000_0000 // the cayman bases without the device-full prefix
		assert.Equal(t, SeqParams{b, b + 0x20000, b + 0x40000, 0x10000, 0x4000}, p, "sunda %s", e)
		h, err := s.SeqParams(e, true)
		require.NoError(t, err)
		assert.Equal(t, p, h, "sunda has nothing to rebase")
	}
}

func TestQ7Params(t *testing.T) {
	assert.Equal(t, 1, tables(t, hwarch.Sunda).Khal.NumQ7())
	for _, g := range hwarch.Generations() {
		k := tables(t, g).Khal
		q, err := k.Q7Params(0)
		require.NoError(t, err)
		assert.Equal(t, Q7Params{Base: 0x340_0000, Size: 0x10_0000}, q, "addresses are shared across generations")
		_, err = k.Q7Params(k.NumQ7())
		assert.ErrorIs(t, err, ErrIndex)
	}
	q, err := tables(t, hwarch.Mariana).Khal.Q7Params(1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x350_0000), q.Base)
}

func TestDVETables(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		k := tables(t, g).Khal
		off, ok := k.DVETableOffsets()
		require.True(t, ok)
		assert.Equal(t, DVETables{Opcode: 0x2B82000, ControlFast: 0x2B80000, ControlSlow: 0x2B81000, Datapath: 0x2B86000}, off)
		o, sz := k.DVEParameterRAM()
		assert.Equal(t, uint64(0x2B87000), o)
		assert.Equal(t, uint64(0x400), sz)
		assert.Equal(t, 5, k.DVETableCount())
		sizes := k.DVETableSizes()
		assert.Equal(t, DVETables{Opcode: 0x4000, ControlFast: 0x1000, ControlSlow: 0x1000, Datapath: 0x1000}, sizes)
		// The tables sit side by side below the parameter RAM without overlapping.
		assert.Equal(t, off.ControlFast+sizes.ControlFast, off.ControlSlow)
		assert.Equal(t, off.ControlSlow+sizes.ControlSlow, off.Opcode)
		assert.Equal(t, off.Opcode+sizes.Opcode, off.Datapath)
		assert.Equal(t, off.Datapath+sizes.Datapath, o)
	}
	s := tables(t, hwarch.Sunda).Khal
	_, ok := s.DVETableOffsets()
	assert.False(t, ok, "sunda has sizes only")
	o, _ := s.DVEParameterRAM()
	assert.Equal(t, uint64(0x2B84000), o)
	assert.Zero(t, s.DVETableSizes().ControlSlow, "no control-slow table on sunda")
	assert.Equal(t, 4, s.DVETableCount())
}

func TestConfigOffsetsAbsent(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman} {
		k := tables(t, g).Khal
		for _, c := range ConfigOffsets() {
			for _, e := range hwarch.Engines() {
				v, ok := k.ConfigOffset(c, e)
				assert.False(t, ok, "%s %s: the runtime's 0 means absent", g, c)
				assert.Zero(t, v)
			}
		}
	}
	m := tables(t, hwarch.Mariana).Khal
	for e, want := range []uint64{0xF00, 0xF08, 0xF0C, 0xF04} { // CSWTCH.14, not monotone
		v, ok := m.ConfigOffset(EngFP8Cfg, hwarch.Engine(e))
		require.True(t, ok)
		assert.Equal(t, want, v)
	}
	_, ok := m.ConfigOffset(EngFP8Cfg, hwarch.EngineSP)
	assert.False(t, ok)
	for _, c := range []ConfigOffset{SDMAFP8Cfg, SDMAEMAXCfg, DVEEMAXCfg, ACTEMAXCfg} {
		v, ok := m.ConfigOffset(c, 0)
		assert.True(t, ok, c.String())
		assert.NotZero(t, v, c.String())
	}
	_, ok = m.ConfigOffset(ConfigOffset(99), 0)
	assert.False(t, ok)
	assert.Len(t, ConfigOffsets(), 5)
	assert.Equal(t, "get_eng_fp8_cfg_offset", EngFP8Cfg.String())
	assert.Equal(t, "config(99)", ConfigOffset(99).String())
}

func TestHWDecodeTableParams(t *testing.T) {
	_, err := tables(t, hwarch.Sunda).Khal.HWDecodeTableParams(0, false)
	assert.ErrorIs(t, err, ErrLeafAborts, "the sunda leaf is __noreturn")
	bases := []uint64{0x802670000, 0x802470000, 0x803070000, 0x802B88000}
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		k := tables(t, g).Khal
		for e, b := range bases {
			p, err := k.HWDecodeTableParams(hwarch.Engine(e), false)
			require.NoError(t, err)
			assert.Equal(t, HWDecodeParams{Base: b, HeaderSize: 4096, BlockSize: 0x2000}, p)
			h, err := k.HWDecodeTableParams(hwarch.Engine(e), true)
			require.NoError(t, err)
			assert.Equal(t, b-0x800000000, h.Base)
		}
		_, err := k.HWDecodeTableParams(hwarch.EngineSP, false)
		assert.ErrorIs(t, err, ErrIndex)
	}
}

func TestTopSPLocalRegs(t *testing.T) {
	assert.Equal(t, TopSPLocalRegs{Window: 0x60000, StopSignal: 0x6084c, BasicBlockSwitch: 0x6083c},
		tables(t, hwarch.Sunda).Khal.TopSPLocalRegs())
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		assert.Equal(t, TopSPLocalRegs{StopSignal: 0x615c0, BasicBlockSwitch: 0x615e0, HostTrigger: 0x615A0},
			tables(t, g).Khal.TopSPLocalRegs())
	}
	// Not a constant delta apart: sunda's offsets cannot be reused on cayman.
	s, c := tables(t, hwarch.Sunda).Khal.TopSPLocalRegs(), tables(t, hwarch.Cayman).Khal.TopSPLocalRegs()
	assert.NotEqual(t, int64(c.StopSignal)-int64(s.StopSignal), int64(c.BasicBlockSwitch)-int64(s.BasicBlockSwitch))
}

func TestLocalRegisterOffsets(t *testing.T) {
	assert.Equal(t, uint64(0x4), NXStartCtrlOffset)
	assert.Equal(t, uint64(0x0), NXRunStallOffset)
	assert.Equal(t, uint64(0xa08), NotificSWQueueNum2)
	assert.Equal(t, uint32(0xf0000), NotificEvtSemMask)
	assert.Equal(t, uint32(16), NotificEvtSemShift)
	assert.Equal(t, uint64(0x13a0), XTMemcopyDMAsOffset)
	tests := []struct{ reg, v, want uint32 }{
		{0, 0x5, 0x50000},
		{0xFFFFFFFF, 0, 0xFFF0FFFF},
		{0x12345678, 0xA, 0x123A5678},
		{0, 0x1F, 0xF0000}, // bits past the field are dropped
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, UpdateNotificEventsSemaphores(tt.reg, tt.v), "reg %#x v %#x", tt.reg, tt.v)
	}
	assert.Equal(t, uint64(0x8_0000_0000), HostVisibleRebase)
	assert.Equal(t, uint64(0x8000_0000_0000), MeshHighBit)
}
