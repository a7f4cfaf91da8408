package arch

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGenerationValues(t *testing.T) {
	// The integers are the cross-layer contract (kernel neuron_arch, runtime al_hal_tpb_arch_type).
	assert.EqualValues(t, 0, Invalid)
	assert.EqualValues(t, 1, Reserved1)
	assert.EqualValues(t, 2, Sunda)
	assert.EqualValues(t, 3, Cayman)
	assert.EqualValues(t, 4, Mariana)
	assert.EqualValues(t, 5, NumGenerations)
	assert.Equal(t, []Generation{Sunda, Cayman, Mariana}, Generations())
	for _, g := range []Generation{Invalid, Reserved1, NumGenerations, 200} {
		assert.False(t, g.Valid(), "generation %d", g)
	}
}

func TestGenerationNames(t *testing.T) {
	tests := []struct {
		gen                     Generation
		runtime, kernel, produc string
	}{
		{Sunda, "sunda", "V2", "Trn1+Inf2"},
		{Cayman, "cayman", "V3", "Trn2"},
		{Mariana, "mariana", "V4", "Trn3"},
		{Invalid, "invalid", "INVALID", "none"},
		{Generation(9), "generation(9)", "V?(9)", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.runtime, func(t *testing.T) {
			assert.Equal(t, tt.runtime, tt.gen.String())
			assert.Equal(t, tt.kernel, tt.gen.KernelName())
			assert.Equal(t, tt.produc, tt.gen.Product())
		})
	}
}

func TestParseGeneration(t *testing.T) {
	accepted := map[string]Generation{
		"sunda": Sunda, "cayman": Cayman, "mariana": Mariana,
		"v2": Sunda, "v3": Cayman, "v4": Mariana, "V4": Mariana,
		"trn1": Sunda, "inf2": Sunda, "trn2": Cayman, "trn3": Mariana, " Trn3 ": Mariana,
		"2": Sunda, "3": Cayman, "4": Mariana,
	}
	for word, want := range accepted {
		t.Run(word, func(t *testing.T) {
			g, err := ParseGeneration(word)
			require.NoError(t, err)
			assert.Equal(t, want, g)
		})
	}
	for _, bad := range []string{"", "0", "1", "5", "v1", "inf1", "trn4", "marianaplus", "0x4"} {
		t.Run("reject "+bad, func(t *testing.T) {
			_, err := ParseGeneration(bad)
			require.ErrorIs(t, err, ErrUnknownGeneration)
			assert.Contains(t, err.Error(), "sunda|cayman|mariana|v2|v3|v4|trn1|inf2|trn2|trn3|2|3|4")
		})
	}
}

func TestGenerationOfDevice(t *testing.T) {
	tests := []struct {
		device uint16
		gen    Generation
		prod   string
	}{
		{0x7164, Sunda, "Trn1"},
		{0x7264, Sunda, "Inf2"},
		{0x7364, Cayman, "Trn2"},
		{0x7564, Mariana, "Trn3"},
		{0x7565, Mariana, "Trn3"},
	}
	for _, tt := range tests {
		t.Run(tt.prod, func(t *testing.T) {
			g, err := GenerationOfDevice(0x1D0F, tt.device)
			require.NoError(t, err)
			assert.Equal(t, tt.gen, g)
			assert.Equal(t, tt.prod, ProductOfDevice(tt.device))
		})
	}
	_, err := GenerationOfDevice(0x1D0F, 0x7064) // Inf1: dropped in driver 2.25
	require.ErrorIs(t, err, ErrUnknownDeviceID)
	assert.Contains(t, err.Error(), "0x7064")
	_, err = GenerationOfDevice(0x8086, 0x7164)
	require.ErrorIs(t, err, ErrUnknownVendor)
	assert.Equal(t, "", ProductOfDevice(0x1234))

	for _, g := range Generations() {
		id, err := DefaultDeviceID(g)
		require.NoError(t, err)
		back, err := GenerationOfDevice(VendorAmazon, id)
		require.NoError(t, err)
		assert.Equal(t, g, back)
	}
	_, err = DefaultDeviceID(Reserved1)
	assert.ErrorIs(t, err, ErrUnknownGeneration)
}

func TestRevisionModes(t *testing.T) {
	assert.Equal(t, ModeEMU, ModeOf(0xF0))
	assert.Equal(t, ModeQEMU, ModeOf(0xFF))
	for _, r := range []uint8{0x00, 0x01, 0xEF, 0xF1, 0xFE} {
		assert.Equal(t, ModeSilicon, ModeOf(r), "revision %#x", r)
	}
	id := PCIIdentity{Vendor: VendorAmazon, Device: DeviceTrn3, Revision: RevisionQEMU}
	assert.Equal(t, ModeQEMU, id.Mode())
	assert.Equal(t, "1d0f:7564 rev 0xff", id.String())
	assert.Equal(t, "qemu", id.Mode().String())

	for in, want := range map[string]uint8{"silicon": 0, "emu": 0xF0, "QEMU": 0xFF, "0x01": 1, "240": 0xF0, "010": 10 /* decimal, not octal */} {
		got, err := ParseRevision(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "0x100", "-1", "fast", "0o17", "1_0", "0x"} {
		_, err := ParseRevision(bad)
		assert.ErrorIs(t, err, ErrBadRevision, bad)
	}
}

func TestEngines(t *testing.T) {
	assert.EqualValues(t, 0, EnginePE)
	assert.EqualValues(t, 1, EngineACT)
	assert.EqualValues(t, 2, EnginePOOL)
	assert.EqualValues(t, 3, EngineDVE)
	assert.EqualValues(t, 4, EngineSP)
	assert.Equal(t, 5, NumEngines)
	assert.Len(t, Engines(), NumEngines)
	assert.Equal(t, "DVE", EngineDVE.String())
	assert.Equal(t, "engine(5)", Engine(5).String())
}

func TestCoreTypeEnum(t *testing.T) {
	// Block bases and the mariana_plus block 23..30.
	assert.EqualValues(t, 0, SundaNXACT)
	assert.EqualValues(t, 6, SundaQ7POOL)
	assert.EqualValues(t, 7, CaymanNXACT)
	assert.EqualValues(t, 14, CaymanQ7CCE)
	assert.EqualValues(t, 15, MarianaNXACT)
	assert.EqualValues(t, 22, MarianaQ7CCE)
	assert.EqualValues(t, 23, MarianaPlusNXACT)
	assert.EqualValues(t, 30, MarianaPlusQ7CCE)
	assert.Equal(t, 31, NumCoreTypes)
	assert.Equal(t, "CAYMAN_NX_PE", CaymanNXPE.String())
	assert.Equal(t, "MARIANA_PLUS_Q7_CCE", MarianaPlusQ7CCE.String())
	assert.Equal(t, "SUNDA_Q7_POOL", SundaQ7POOL.String())
	assert.Equal(t, "coretype(31)", CoreType(31).String())
	assert.Equal(t, "coretype(-1)", CoreTypeNone.String())
	// Every value 0..30 has a name.
	for c := CoreType(0); c < NumCoreTypes; c++ {
		assert.NotContains(t, c.String(), "coretype(", "core type %d", c)
	}
}

func TestNXCoreTypeTable(t *testing.T) {
	want := map[Generation][NumEngines]CoreType{
		Cayman:  {10, 7, 9, 8, 11}, // CSWTCH_16_0 @0x9de900
		Sunda:   {3, 0, 2, 1, 4},
		Mariana: {18, 15, 17, 16, 19},
	}
	for g, tab := range want {
		t.Run(g.String(), func(t *testing.T) {
			for e := Engine(0); e < NumEngines; e++ {
				c, ok := NXCoreType(g, e)
				require.True(t, ok)
				assert.Equal(t, tab[e], c, "engine %s", e)
			}
			c, ok := NXCoreType(g, 5)
			assert.False(t, ok)
			assert.EqualValues(t, -1, c, "out of range is the runtime's -1")
		})
	}
	c, ok := NXCoreType(Reserved1, EnginePE)
	assert.False(t, ok)
	assert.Equal(t, CoreTypeNone, c)
}

func TestGeometry(t *testing.T) {
	tests := []struct {
		gen                                   Generation
		ncs, seng, tpbPerSeng, tpbPerHBM, die int
		channels                              []uint64
		active                                uint64
		bar4                                  []uint64
		partition                             uint64
		dmaTotal                              int
		host                                  []int
		topSPs, topSPPerNC                    int
		hostBit, meshBit                      uint64
	}{
		{Sunda, 2, 2, 1, 1, 1, []uint64{0, 0x10_0000_0000}, 16 * GiB, []uint64{0, 16 * GiB}, 0x30000, 34, []int{32, 33}, 6, 3, 1 << 44, 0},
		{Cayman, 8, 4, 2, 2, 2, []uint64{0, 0x40_0000_0000, 0x8000_0000_0000, 0x8040_0000_0000}, 24 * GiB,
			[]uint64{0, 64 * GiB, 128 * GiB, 192 * GiB}, 0x38000, 132, []int{128, 129, 130, 131}, 16, 2, 1 << 46, 1 << 47},
		{Mariana, 8, 4, 2, 2, 2, []uint64{0, 0x40_0000_0000, 0x8000_0000_0000, 0x8040_0000_0000}, 36 * GiB,
			[]uint64{0, 64 * GiB, 128 * GiB, 192 * GiB}, 0x40000, 132, []int{128, 129, 130, 131}, 16, 2, 1 << 46, 1 << 47},
	}
	for _, tt := range tests {
		t.Run(tt.gen.String(), func(t *testing.T) {
			g, err := GeometryOf(tt.gen)
			require.NoError(t, err)
			assert.Equal(t, tt.ncs, g.NeuronCores)
			assert.Equal(t, tt.seng, g.SequencerEngines)
			assert.Equal(t, tt.tpbPerSeng, g.TPBPerSENG)
			assert.Equal(t, tt.tpbPerHBM, g.TPBPerHBM)
			assert.Equal(t, tt.die, g.Dies)
			require.Len(t, g.HBM, len(tt.channels))
			for i, c := range g.HBM {
				assert.Equal(t, tt.channels[i], c.Base, "channel %d base", i)
				assert.Equal(t, tt.active, c.ActiveSize, "channel %d active", i)
				assert.Equal(t, tt.bar4[i], c.BAR4Offset, "channel %d BAR4", i)
			}
			assert.Equal(t, tt.active*uint64(len(tt.channels)), g.HBMBytes())
			assert.Equal(t, 32*MiB, g.SBUFWindowSize)
			assert.Equal(t, 128, g.SBUFPartitions)
			assert.Equal(t, tt.partition, g.SBUFPartitionSize)
			assert.Equal(t, 128*tt.partition, g.SBUFSize())
			assert.Equal(t, 2*MiB, g.PSUMSize)
			assert.Equal(t, 16*KiB, g.PSUMPartitionSize())
			assert.Equal(t, 16, g.DMAEnginesPerNC)
			assert.Equal(t, tt.dmaTotal, g.DMAEngines)
			assert.Equal(t, tt.host, g.HostDMAEngines)
			assert.Equal(t, 16, g.DMAQueuesPerEngine)
			assert.Equal(t, 256, g.SemaphoresPerNC)
			assert.Equal(t, 256, g.EventsPerNC)
			assert.Equal(t, tt.topSPs, g.TopSPs)
			assert.Equal(t, tt.topSPPerNC, g.TopSPsPerNC())
			assert.Equal(t, tt.hostBit, g.HostAddressBit)
			assert.Equal(t, tt.meshBit, g.MeshBit)
			for _, e := range tt.host {
				assert.True(t, g.IsHostDMAEngine(e))
			}
			assert.False(t, g.IsHostDMAEngine(0))
		})
	}
	_, err := GeometryOf(Reserved1)
	require.ErrorIs(t, err, ErrUnknownGeneration)
	assert.Panics(t, func() { MustGeometry(Invalid) })
}

func TestHBMChannelLookup(t *testing.T) {
	g := MustGeometry(Mariana)
	ch, ok := g.HBMChannelOf(0x8040_0000_0000 + 36*GiB - 1)
	assert.True(t, ok)
	assert.Equal(t, 3, ch)
	_, ok = g.HBMChannelOf(0x8040_0000_0000 + 36*GiB) // past the active 36 GiB
	assert.False(t, ok)
	_, ok = MustGeometry(Cayman).HBMChannelOf(24 * GiB) // V3 channel 0 holds 24 of its 64 GiB
	assert.False(t, ok)
}

func TestBAR0Map(t *testing.T) {
	v2 := MustGeometry(Sunda).BAR0
	assert.Equal(t, uint64(0x400_0000), v2.TPBWindow(1))
	assert.Equal(t, uint64(0x1000_0000+5*0x40_0000), v2.TopSPWindow(5))
	assert.Equal(t, uint64(0x30FA_0000), v2.MiscRAM)
	assert.Equal(t, uint64(0x3064_7010), v2.QEMUResetReg)
	assert.Equal(t, 2, v2.APBBARUnderQEMU)
	for _, g := range []Generation{Cayman, Mariana} {
		m := MustGeometry(g).BAR0
		assert.Equal(t, uint64(0xD000_0000+7*0x400_0000), m.TPBWindow(7))
		assert.Equal(t, uint64(0xF000_0000+7*0x40_0000), m.TopSPWindow(7))
		assert.Equal(t, uint64(0xF280_0000), m.TopSPWindow(8))
		assert.Equal(t, uint64(0xF280_0000+7*0x40_0000), m.TopSPWindow(15))
		assert.Equal(t, uint64(0x6C8_4000), m.MiscRAM)
		assert.Equal(t, uint64(0x630_0010), m.QEMUResetReg)
	}
	// Driver 2.24.7.0 (the one the guest runs) takes cayman's registers from
	// BAR2 under QEMU (v3/neuron_dhal_v3.c 2188); mariana is not in it.
	assert.Equal(t, 2, MustGeometry(Cayman).BAR0.APBBARUnderQEMU)
	assert.Equal(t, 0, MustGeometry(Mariana).BAR0.APBBARUnderQEMU)
	for _, g := range Generations() {
		m := MustGeometry(g).BAR0
		assert.Equal(t, uint64(0x270_0000), m.EventsOffset)
		assert.Equal(t, uint64(0x270_1000), m.SemReadOffset)
		assert.Equal(t, uint64(0x270_1400), m.SemSetOffset)
		assert.Equal(t, uint64(0x270_1800), m.SemIncrOffset)
		assert.Equal(t, uint64(0x270_1C00), m.SemDecrOffset)
	}
}

func TestGeometryCloneIsDeep(t *testing.T) {
	g := MustGeometry(Mariana)
	c := g.Clone()
	c.HBM[0].ActiveSize = 1
	c.HostDMAEngines[0] = 7
	c.NeighbourWindows[0] = 9
	assert.Equal(t, 36*GiB, g.HBM[0].ActiveSize)
	assert.Equal(t, 128, g.HostDMAEngines[0])
	assert.Equal(t, uint64(0x10_0000_0000_0000), g.NeighbourWindows[0])
}

func TestSwitchFamily(t *testing.T) {
	f, err := ParseSwitchFamily("v1")
	require.NoError(t, err)
	assert.True(t, f.IsV1())
	f, err = ParseSwitchFamily("NONE")
	require.NoError(t, err)
	assert.False(t, f.IsV1())
	_, err = ParseSwitchFamily("v2")
	assert.True(t, errors.Is(err, ErrUnknownSwitchFamily))
	var s SwitchFamily
	require.NoError(t, s.Set("v1"))
	assert.Equal(t, "v1", s.String())
	require.Error(t, s.Set("x"))
	assert.Equal(t, SwitchV1, s, "a refused Set leaves the value")
}

func TestGenerationFlagValue(t *testing.T) {
	var g Generation
	require.NoError(t, g.Set("trn2"))
	assert.Equal(t, Cayman, g)
	require.Error(t, g.Set("trn9"))
	assert.Equal(t, Cayman, g, "a refused Set leaves the value")
	assert.Equal(t, "arch", g.Type())
}

func TestHostLimits(t *testing.T) {
	assert.Equal(t, 64, MaxNeuronDevices)
	assert.Equal(t, 8, MaxNCPerDevice)
	assert.Equal(t, 16, MaxTSPerDevice)
	for _, g := range Generations() {
		geo := MustGeometry(g)
		assert.LessOrEqual(t, geo.NeuronCores, MaxNCPerDevice)
		assert.LessOrEqual(t, geo.TopSPs, MaxTSPerDevice)
	}
}

// TestCheckRegisters: a run of registers must lie in the generation's
// register BAR (MinimumBAR0) at a 4-byte aligned offset; the refusal names
// the offset and the range.
func TestCheckRegisters(t *testing.T) {
	for _, tc := range []struct {
		gen    Generation
		off, n uint64
		err    error
		msg    string
	}{
		{Mariana, 0, 1, nil, ""},
		{Mariana, 0xFFFF_FFFC, 1, nil, ""},
		{Mariana, 0xFFFF_FFF8, 2, nil, ""},
		{Sunda, 0x3FFF_FFFC, 1, nil, ""},
		{Mariana, 0x1_0000_0000, 1, ErrBAROffset, "0x100000000: BAR access out of range: a mariana device's register BAR is 4 GiB, word offsets 0x0..0xfffffffc"},
		{Mariana, 1<<64 - 1, 1, ErrBAROffset, "0xffffffffffffffff: BAR access out of range: a mariana device's register BAR is 4 GiB, word offsets 0x0..0xfffffffc"},
		{Mariana, 1<<64 - 4, 1, ErrBAROffset, "0xfffffffffffffffc: BAR access out of range"},
		{Cayman, 0xFFFF_FFFC, 2, ErrBAROffset, "0xfffffffc: BAR access out of range: 2 words from it run past the end; a cayman device's register BAR is 4 GiB, word offsets 0x0..0xfffffffc"},
		{Mariana, 0, 1<<62 + 1, ErrBAROffset, "0x0: BAR access out of range: 4611686018427387905 words from it run past the end"},
		{Sunda, 0x4000_0000, 1, ErrBAROffset, "0x40000000: BAR access out of range: a sunda device's register BAR is 1 GiB, word offsets 0x0..0x3ffffffc"},
		{Mariana, 0x6C8_4026, 1, ErrAlignment, "0x6c84026: BAR offset not 4-byte aligned: a register is a 32-bit word at a multiple of 4"},
	} {
		err := MustGeometry(tc.gen).CheckRegisters(tc.off, tc.n)
		if tc.err == nil {
			assert.NoError(t, err, "%s %#x ×%d", tc.gen, tc.off, tc.n)
			continue
		}
		assert.ErrorIs(t, err, tc.err, "%s %#x ×%d", tc.gen, tc.off, tc.n)
		assert.ErrorContains(t, err, tc.msg)
	}
}
