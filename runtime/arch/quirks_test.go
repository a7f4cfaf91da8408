package arch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Each quirk the seeds call out has a test of its own here; the per-table
// tests cover the plain values.

// Queue id 0x0e is skipped by <arch>_queue_idx; a direct "id - 0x0b" lookup
// would accept it and would map 0x0f to 4.
func TestQuirkQueueIdxGapAt0x0e(t *testing.T) {
	for _, g := range hwarch.Generations() {
		s := tables(t, g).Soc
		_, err := s.RelQueueIdx(0x0e)
		require.ErrorIs(t, err, ErrInvalidQueueID, g.String())
		rel, err := s.RelQueueIdx(0x0f)
		require.NoError(t, err)
		assert.Equal(t, uint32(3), rel, g.String())
	}
}

// get_inter_rdh_dma_id returns -1 past index 2, and the comparison is unsigned.
func TestQuirkInterRDHSentinel(t *testing.T) {
	for _, g := range hwarch.Generations() {
		s := tables(t, g).Soc
		assert.Equal(t, NoInterRDHDMA, s.InterRDHDMAID(3))
		assert.Equal(t, int32(-1), s.InterRDHDMAID(^uint32(0)), "a negative index seen as unsigned is past the table")
		assert.NotEqual(t, NoInterRDHDMA, s.InterRDHDMAID(2))
	}
}

// Mariana's fabric extent doubles with a NeuronSwitch-v1; sunda and cayman ignore the switch.
func TestQuirkMarianaV1Doubling(t *testing.T) {
	none := MustFor(hwarch.Mariana, Options{Switch: hwarch.SwitchNone}).Soc
	v1 := MustFor(hwarch.Mariana, Options{Switch: hwarch.SwitchV1}).Soc
	assert.Equal(t, 2*none.MaxDevs(), v1.MaxDevs())
	assert.Equal(t, 2*none.MeshMaxFolds(), v1.MeshMaxFolds())
	for _, g := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman} {
		a := MustFor(g, Options{Switch: hwarch.SwitchNone}).Soc
		b := MustFor(g, Options{Switch: hwarch.SwitchV1}).Soc
		assert.Equal(t, a.MaxDevs(), b.MaxDevs(), g.String())
		assert.Equal(t, a.MeshMaxFolds(), b.MeshMaxFolds(), g.String())
	}
}

// Where the runtime's getter returns a literal 0 for "feature absent", the Go
// accessor says ok=false and never offers 0 as an offset.
func TestQuirkAbsentFeaturesAreNotZeroOffsets(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman} {
		k := tables(t, g).Khal
		for _, c := range ConfigOffsets() {
			_, ok := k.ConfigOffset(c, hwarch.EnginePE)
			assert.False(t, ok, "%s %s", g, c)
		}
	}
	_, ok := tables(t, hwarch.Sunda).Khal.DVETableOffsets()
	assert.False(t, ok)
}

// The sunda leaves that assert or abort are errors, never values.
func TestQuirkSundaLeavesAbort(t *testing.T) {
	s := tables(t, hwarch.Sunda)
	_, err := s.Soc.MaxLinksPerPodPort()
	assert.ErrorIs(t, err, ErrLeafAborts)
	_, err = s.Khal.HWDecodeTableParams(hwarch.EnginePE, true)
	assert.ErrorIs(t, err, ErrLeafAborts)
	assert.Contains(t, err.Error(), "sunda")
}

// Every indexed accessor refuses an index past its table with a sentinel
// error instead of panicking or reading a neighbour.
func TestQuirkOutOfRangeIndices(t *testing.T) {
	for _, g := range hwarch.Generations() {
		tab := tables(t, g)
		checks := []struct {
			name string
			err  error
			want error
		}{
			{"TPBMemOffset", second(tab.Tdrv.TPBMemOffset(tab.Tdrv.NumTPB())), ErrTPBIndex},
			{"TPBCSRAPBOffset", second(tab.Tdrv.TPBCSRAPBOffset(-1)), ErrTPBIndex},
			{"H2DEngine", second(tab.Tdrv.H2DEngine(8)), ErrTPBIndex},
			{"APBSEBase", second(tab.Tdrv.APBSEBase(tab.Tdrv.NumSENG())), ErrIndex},
			{"SENGIdxFromTPBIdx", second(tab.Soc.SENGIdxFromTPBIdx(tab.Tdrv.NumTPB())), ErrTPBIndex},
			{"P2PPortFoldN", second(tab.Soc.P2PPortFoldN(TDRVHWPortInvalid + 1)), ErrIndex},
			{"TPBBase", second(tab.Khal.TPBBase(8)), ErrIndex},
			{"PSUMBase", second(tab.Khal.PSUMBase(8)), ErrIndex},
			{"PREPROCBase", second(tab.Khal.PREPROCBase(8)), ErrIndex},
			{"HBMBase", second(tab.Khal.HBMBase(4)), ErrIndex},
			{"TPBEngIRAMSize", second(tab.Khal.TPBEngIRAMSize(hwarch.NumEngines)), ErrIndex},
			{"SeqParams", second(tab.Khal.SeqParams(hwarch.NumEngines, false)), ErrIndex},
			{"Q7Params", second(tab.Khal.Q7Params(2)), ErrIndex},
		}
		for _, c := range checks {
			assert.ErrorIs(t, c.err, c.want, "%s %s", g, c.name)
		}
		_, ok := tab.Tdrv.NXCoreType(hwarch.NumEngines)
		assert.False(t, ok)
	}
}

func second[T any](_ T, err error) error { return err }
