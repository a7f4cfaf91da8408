package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// TestDeviceLinks: DeviceLinks gives, for every kind, the devices each
// device has a link of its own to in Build's topology, in port order and
// each once — the torus's neighbour table (device 0 → 12, 3, 4, 1), the
// UltraServer's Z links after it, a ring's two neighbours, a chain's end
// one, a switched fabric's none but Trn3 Gen1's inter-rack peer — and
// refuses what Build refuses.
func TestDeviceLinks(t *testing.T) {
	for _, tc := range []struct {
		k     Kind
		g     hwarch.Generation
		n     int
		d     int
		links []int
	}{
		{KindTorus2D, hwarch.Cayman, 16, 0, []int{12, 3, 4, 1}},
		{KindTorus2D, hwarch.Sunda, 16, 5, []int{1, 4, 9, 6}},
		{KindUltraServer, hwarch.Cayman, 64, 17, []int{29, 16, 21, 18, 1, 33}},
		{KindRing, hwarch.Sunda, 12, 0, []int{11, 1}},
		{KindChain, hwarch.Sunda, 6, 0, []int{1}},
		{KindSwitch, hwarch.Mariana, 32, 3, nil},
		{KindTrn3Gen1, hwarch.Mariana, 64, 3, []int{35}},
		{KindStar, hwarch.Cayman, 8, 0, nil},
		{KindFullyConnected, hwarch.Cayman, 4, 2, []int{0, 1, 3}},
		{KindAuto, hwarch.Cayman, 16, 0, []int{12, 3, 4, 1}},
	} {
		links, err := DeviceLinks(tc.k, tc.g, tc.n, DefaultParams(tc.g))
		require.NoError(t, err, "%s", tc.k)
		require.Len(t, links, tc.n)
		assert.Equal(t, tc.links, links[tc.d], "%s device %d", tc.k, tc.d)
		topo := build(t, tc.k, tc.g, tc.n)
		for a := range tc.n {
			var want []int
			for _, id := range topo.Nodes[a].Ports {
				if to := topo.Links[id].To; to < tc.n {
					want = append(want, to)
				}
			}
			assert.Equal(t, want, links[a], "%s device %d: Build's links", tc.k, a)
		}
	}
	_, err := DeviceLinks(KindUltraServer, hwarch.Cayman, 16, DefaultParams(hwarch.Cayman))
	assert.ErrorIs(t, err, ErrTopology)
}
