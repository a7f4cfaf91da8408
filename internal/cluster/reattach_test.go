package cluster_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestReattachTakesTheNeighbours: after Reattach the collectives address
// the neighbours of the system attached — a restored snapshot's topology,
// which need not be the one the cluster was built with — not those of the
// system left behind.
func TestReattachTakesTheNeighbours(t *testing.T) {
	for _, tc := range []struct {
		name       string
		built, got fabric.Kind
	}{
		{"torus to ring", fabric.KindTorus2D, fabric.KindRing},
		{"ring to torus", fabric.KindRing, fabric.KindTorus2D},
		{"same", fabric.KindTorus2D, fabric.KindTorus2D},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := cluster.New(cluster.Config{Generation: hwarch.Cayman, Devices: 16, Kind: tc.built, TimingOnly: true, BufferBytes: 1 << 20})
			require.NoError(t, err)
			sys, err := fabric.New(fabric.Config{Generation: hwarch.Cayman, Devices: 16, Kind: tc.got, TimingOnly: true, Ready: true})
			require.NoError(t, err)
			require.NoError(t, c.Reattach(sys))
			if want := sys.Topology().Neighbours; len(want) == 0 {
				assert.Empty(t, c.Exec.Neighbours, "a ring has no neighbour windows")
			} else {
				assert.Equal(t, want, c.Exec.Neighbours)
			}
		})
	}
}
