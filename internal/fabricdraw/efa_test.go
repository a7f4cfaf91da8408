package fabricdraw

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestDrawEFAGolden compares the drawings of systems of several nodes with
// testdata/draw/efa-<name>.golden (go test -run TestDrawEFAGolden -update
// rewrites them): node 0 as its kind, the copies, the NICs, the leaves and
// the spines with their links' parameters.
func TestDrawEFAGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  fabric.Kind
		gen   hwarch.Generation
		nd    int
		nodes int
		mut   func(*fabric.EFAParams)
	}{
		{"2x-trn1-32xl-rail", fabric.KindTorus2D, hwarch.Sunda, 16, 2, nil},
		{"3x-trn2-48xl-fat-tree", fabric.KindTorus2D, hwarch.Cayman, 16, 3, func(e *fabric.EFAParams) {
			e.Network, e.LeafPorts, e.Oversubscription = fabric.FatTree, 16, 2
		}},
		{"2x-trn3-switch-8-one-leaf", fabric.KindSwitch, hwarch.Mariana, 8, 2, func(e *fabric.EFAParams) { e.Network = fabric.FatTree }},
		// 24 NICs on leaves of 5: the last leaf's spine links carry less,
		// and the drawing says which leaves have which.
		{"3x-trn1-32xl-uneven-leaves", fabric.KindTorus2D, hwarch.Sunda, 16, 3, func(e *fabric.EFAParams) {
			e.Network, e.LeafPorts = fabric.FatTree, 5
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fabric.DefaultParams(tc.gen)
			if tc.mut != nil {
				tc.mut(&p.EFA)
			}
			topo, err := fabric.BuildNodes(tc.kind, tc.gen, tc.nd*tc.nodes, tc.nodes, p)
			require.NoError(t, err)
			got := draw(t, topo)
			path := filepath.Join("testdata", "draw", "efa-"+tc.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -run TestDrawEFAGolden -update")
			assert.Equal(t, string(want), got)
			// Every NIC is on exactly one leaf line (the leaves are few here).
			so := topo.Scale
			for m := range so.Nodes {
				for k := range so.NICs {
					name := topo.Nodes[so.NIC(m, k)].Name
					n := 0
					for _, line := range strings.Split(got, "\n") {
						if strings.Contains(line, "leaf") && strings.Contains(line, " "+name+",") || strings.HasSuffix(strings.SplitN(line, " (", 2)[0], " "+name) {
							n++
						}
					}
					if so.NICs*so.Nodes <= 9*so.Leaves { // leaf lines list every NIC
						assert.Equal(t, 1, n, "%s on one leaf line", name)
					}
				}
			}
		})
	}
}
