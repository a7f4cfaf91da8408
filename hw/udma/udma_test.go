package udma

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

func TestEngineBAR0(t *testing.T) {
	tests := []struct {
		g    hwarch.Generation
		eng  int
		want uint64
	}{
		{hwarch.Sunda, 0, 0x3000_0000},
		{hwarch.Sunda, 15, 0x303C_0000},
		{hwarch.Sunda, 16, 0x3070_0000},
		{hwarch.Sunda, 32, 0x3060_0000}, // D2H
		{hwarch.Sunda, 33, 0x30D0_0000}, // H2D
		{hwarch.Cayman, 0, 0x8200_0000},
		{hwarch.Cayman, 33, 0x9410_0000},
		{hwarch.Mariana, 127, 0xB5F0_0000},
		{hwarch.Mariana, 128, 0x680_0000},
		{hwarch.Mariana, 131, 0x4690_0000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.g, tt.eng), func(t *testing.T) {
			got, err := EngineBAR0(hwarch.MustGeometry(tt.g), tt.eng)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	for _, g := range hwarch.Generations() {
		geo := hwarch.MustGeometry(g)
		_, err := EngineBAR0(geo, geo.DMAEngines)
		assert.ErrorIs(t, err, ErrEngine)
		_, err = EngineBAR0(geo, -1)
		assert.ErrorIs(t, err, ErrEngine)
	}
}

func TestH2TEngineAndOwner(t *testing.T) {
	v2 := hwarch.MustGeometry(hwarch.Sunda)
	e, q, err := H2TEngine(v2, 1)
	require.NoError(t, err)
	assert.Equal(t, [2]int{33, 0}, [2]int{e, q})
	v3 := hwarch.MustGeometry(hwarch.Cayman)
	e, q, err = H2TEngine(v3, 5)
	require.NoError(t, err)
	assert.Equal(t, [2]int{130, 1}, [2]int{e, q})
	_, _, err = H2TEngine(v3, 8)
	assert.Error(t, err)
	assert.Equal(t, 2, OwnerNC(v3, 47))
	assert.Equal(t, -1, OwnerNC(v3, 128))
	assert.Equal(t, -1, OwnerNC(v2, 32))
}

func TestCheckRing(t *testing.T) {
	tests := []struct {
		base  uint64
		count uint32
		ok    bool
	}{
		{0x1000, 32, true},
		{0x1000, 8192, true},
		{0x1000, MaxRing, true},
		{0x1000, 31, false},
		{0x1000, 33, false},
		{0x1000, MaxRing + 16, false},
		{0x1040, 64, false},
		{0, 48, true},
	}
	for _, tt := range tests {
		err := CheckRing(tt.base, tt.count)
		if tt.ok {
			assert.NoError(t, err, "%#x/%d", tt.base, tt.count)
		} else {
			assert.ErrorIs(t, err, ErrRing, "%#x/%d", tt.base, tt.count)
		}
	}
}

func TestDescriptorFields(t *testing.T) {
	lc, err := LenCtrl(MaxTransfer, 3, FlagFirst|FlagLast|LenMask)
	require.NoError(t, err)
	d := Descriptor{LenCtrl: lc, Meta: DefaultMetaCtrl, Addr: 0x4000_1234_5678}
	assert.Equal(t, MaxTransfer, d.Len(), "0 encodes 64 KiB")
	assert.Equal(t, uint8(3), d.RingID())
	assert.True(t, d.Has(FlagFirst|FlagLast))
	assert.False(t, d.Has(FlagDMB))
	var b [DescriptorSize]byte
	d.Put(b[:])
	back, err := Decode(b[:])
	require.NoError(t, err)
	assert.Equal(t, d, back)
	_, err = Decode(b[:15])
	assert.Error(t, err)
	for _, n := range []int{0, -1, MaxTransfer + 1} {
		_, err := LenCtrl(n, 1, 0)
		assert.ErrorIs(t, err, ErrBadLength)
	}
	assert.Equal(t, uint32(0x1111), EngineStateWord(StateNormal))
	assert.Equal(t, uint64(0x21000+3*0x1000+0x38), QueueReg(S2M, 3, QTailInc), "S2M queue q at +0x21000 + q·0x1000")
}

// TestStatusText: a status word in words — its errors, or its state when
// it has none — so that a halted queue's message says why.
func TestStatusText(t *testing.T) {
	for st, want := range map[uint32]string{
		0:                                  "",
		StatusBusy:                         "busy",
		StatusHalted:                       "halted",
		StatusHalted | ErrNeighbour:        "a write to another device found no path (a link down, or no device behind the window)",
		StatusHalted | ErrMemoryFull:       "the simulated device's memory budget is used up (serve --max-memory)",
		StatusHalted | ErrDescAddr | 1<<20: "a buffer address lies in no memory the engine reaches; unknown bits 0x100000",
	} {
		if got := StatusText(st); got != want {
			t.Errorf("StatusText(%#x) = %q, want %q", st, got, want)
		}
	}
}
