package systemtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/csr"
	"github.com/neuronsim/neuronsim/sim/bar"
)

// The runtime builds its CSR atlas from its own arch tables (seed values);
// the device builds its decode from hw/arch (driver facts). Both must agree
// on every window's BAR0 place, size and device address.
func TestRuntimeAndDeviceAtlasesAgree(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			rt, err := csr.Atlas(arch.MustFor(g, arch.Options{}))
			require.NoError(t, err)
			dev, err := bar.NewAtlas(hwarch.MustGeometry(g))
			require.NoError(t, err)
			byName := map[string]bar.Window{}
			for _, w := range dev.Windows() {
				byName[w.Name] = w
			}
			for _, w := range rt {
				d, ok := byName[w.Name]
				require.True(t, ok, "runtime window %s unknown to the device", w.Name)
				assert.Equal(t, w.BAR0Offset, d.Start, "%s BAR0 offset", w.Name)
				assert.Equal(t, w.Size, d.Size, "%s size", w.Name)
				assert.Equal(t, w.DeviceAddr, d.DeviceAddr, "%s device address", w.Name)
				got, rel, ok := dev.LookupDevice(w.DeviceAddr + w.Size - 4)
				require.True(t, ok, "%s: last device word decodes", w.Name)
				assert.Equal(t, d.DeviceAddr+rel, w.DeviceAddr+w.Size-4)
				_ = got
			}
		})
	}
}

// The runtime finds an engine's control block from its own tables
// (get_seq_params, host-visible); the device decodes it where hw/isa puts it.
func TestEngineControlBlocksAgree(t *testing.T) {
	for _, g := range hwarch.Generations() {
		tables := arch.MustFor(g, arch.Options{})
		for e := isa.Engine(0); e < isa.TopSP; e++ {
			p, err := tables.Khal.SeqParams(hwarch.Engine(e), true)
			require.NoError(t, err)
			off, ok := isa.EngineCtrlOffset(e)
			require.True(t, ok)
			assert.Equal(t, off, p.Seq, "%s %s", g, e)
		}
	}
}
