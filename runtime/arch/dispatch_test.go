package arch

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

func TestDispatchSelectsOnceFromPCIIdentity(t *testing.T) {
	var d Dispatch
	_, err := d.Tables()
	require.ErrorIs(t, err, ErrNotSelected, "no silent default before selection")
	assert.False(t, d.Selected())

	id := hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: 0x7565, Revision: hwarch.RevisionEMU}
	tab, err := d.Select(id, Options{Switch: hwarch.SwitchV1})
	require.NoError(t, err)
	assert.Equal(t, hwarch.Mariana, tab.Generation)
	assert.Equal(t, 32, tab.Soc.MaxDevs())
	got, err := d.Tables()
	require.NoError(t, err)
	assert.Same(t, tab, got)

	again, err := d.Select(hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: 0x7564}, Options{Switch: hwarch.SwitchV1})
	require.NoError(t, err, "the same generation again is fine")
	assert.Same(t, tab, again)

	_, err = d.Select(hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: 0x7364}, Options{})
	require.ErrorIs(t, err, ErrAlreadySelected)
	_, err = d.Select(id, Options{Switch: hwarch.SwitchNone})
	require.ErrorIs(t, err, ErrAlreadySelected, "different options are a different selection")
	got, _ = d.Tables()
	assert.Same(t, tab, got, "a refused selection changes nothing")
}

func TestDispatchRefusesUnknownDevice(t *testing.T) {
	var d Dispatch
	_, err := d.Select(hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: 0x7064}, Options{})
	require.ErrorIs(t, err, hwarch.ErrUnknownDeviceID)
	_, err = d.Select(hwarch.PCIIdentity{Vendor: 0x10de, Device: 0x7164}, Options{})
	require.ErrorIs(t, err, hwarch.ErrUnknownVendor)
	assert.False(t, d.Selected())
}

func TestDispatchConcurrentSelect(t *testing.T) {
	var d Dispatch
	var wg sync.WaitGroup
	results := make([]*Tables, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tab, err := d.Select(hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: 0x7364}, Options{})
			assert.NoError(t, err)
			results[i] = tab
		}()
	}
	wg.Wait()
	for _, r := range results {
		assert.Same(t, results[0], r)
	}
}

func TestForRejectsInvalidGeneration(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Invalid, hwarch.Reserved1, hwarch.NumGenerations} {
		_, err := For(g, Options{})
		assert.ErrorIs(t, err, hwarch.ErrUnknownGeneration, "generation %d", g)
	}
	assert.Panics(t, func() { MustFor(hwarch.Invalid, Options{}) })
}

// The tables and the shared geometry must agree where they overlap.
func TestTablesAgreeWithGeometry(t *testing.T) {
	for _, g := range hwarch.Generations() {
		tab := MustFor(g, Options{})
		geo := tab.Geometry
		assert.Equal(t, geo.NeuronCores, tab.Tdrv.NumTPB())
		assert.Equal(t, geo.SequencerEngines, tab.Tdrv.NumSENG())
		assert.Equal(t, geo.TPBPerHBM, tab.Tdrv.NumTPBPerHBM())
		assert.Equal(t, geo.TPBPerSENG, tab.Tdrv.NumTPBPerSENG())
		assert.Equal(t, geo.SBUFPartitionSize, tab.Soc.ValidSBUFPartitionSize())
		assert.Equal(t, geo.SBUFPartitions, int(tab.Soc.NumSBUFPartitions()))
		assert.Equal(t, geo.SBUFWindowSize, tab.Soc.SBUFWindowSize())
		assert.Equal(t, len(geo.HBM), tab.Khal.NumHBM())
		assert.Equal(t, geo.HBM[0].ActiveSize, tab.Khal.HBMSize())
		for i, c := range geo.HBM {
			b, err := tab.Khal.HBMBase(i)
			require.NoError(t, err)
			assert.Equal(t, c.Base, b)
		}
		for nc := 0; nc < geo.NeuronCores; nc++ {
			mem, err := tab.Tdrv.TPBMemOffset(nc)
			require.NoError(t, err)
			assert.Equal(t, geo.BAR0.TPBWindow(nc), mem, "%s nc %d", g, nc)
			h2d, err := tab.Tdrv.H2DEngine(nc)
			require.NoError(t, err)
			assert.True(t, geo.IsHostDMAEngine(h2d), "%s nc %d h2d %d", g, nc, h2d)
			tpb, err := tab.Khal.TPBBase(nc)
			require.NoError(t, err)
			assert.True(t, tab.Soc.IsAddressInSBUF(tpb), "%s nc %d: TPB base is an SBUF window", g, nc)
		}
		for e := range hwarch.NumEngines {
			assert.Equal(t, geo.IsHostDMAEngine(e), tab.Tdrv.IsH2DEngine(uint32(e)))
		}
		for _, e := range geo.HostDMAEngines {
			assert.True(t, tab.Tdrv.IsH2DEngine(uint32(e)))
		}
	}
}
