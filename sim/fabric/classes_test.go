package fabric

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClassLabelsPerSystem: over 2 nodes of each system AWS sells, the
// classes of link reports name are what the links are — the EFA
// network's by their two ends (dev-nic, nic-leaf, leaf-spine), never
// "efa-…" — and the legend says what each is on that system: a Trn1 NIC
// shared by 2 devices (so its busy port, nic-leaf, is the NIC), a Gen2
// UltraServer's inter-server links each to one of two second-level
// switches. Once a Trn1 node's busy NIC read as "efa-leaf".
func TestClassLabelsPerSystem(t *testing.T) {
	for _, tc := range []struct {
		system  string
		classes []string
		legend  []string // in the legend
	}{
		{"trn1-32xl", []string{"xy", "dev-nic", "nic-leaf", "leaf-spine"},
			[]string{"dev-nic = a device's link to its EFA NIC (2 devices a NIC, each with a link of its own)", "nic-leaf = an EFA NIC's port to its leaf switch: the NIC's own bandwidth, shared by the NIC's 2 devices", "xy = a torus link"}},
		{"trn2-48xl", []string{"xy", "dev-nic", "nic-leaf", "leaf-spine"},
			[]string{"dev-nic = a device's link to its EFA NIC (one device a NIC)", "nic-leaf = an EFA NIC's port to its leaf switch: the NIC's own bandwidth, one device a NIC"}},
		{"trn2-ultraserver", []string{"xy", "z", "dev-nic", "nic-leaf", "leaf-spine"},
			[]string{"z = an UltraServer Z-ring link", "dev-nic = a device's link to its EFA NIC (one device a NIC)"}},
		{"trn3-gen1", []string{"in-server", "inter-server", "inter-rack", "dev-nic", "nic-leaf", "leaf-spine"},
			[]string{"in-server = a device's link to its server's in-server switch", "inter-server = a device's link to the inter-server switch", "inter-rack = a direct link"}},
		{"trn3-gen2", []string{"in-server", "inter-server", "dev-nic", "nic-leaf", "leaf-spine"},
			[]string{"in-server = a device's link to its server's first-level switch", "inter-server = a device's link to one of the two second-level switches"}},
	} {
		t.Run(tc.system, func(t *testing.T) {
			spec, err := LookupSystem(tc.system)
			require.NoError(t, err)
			cfg := spec.Cluster(2)
			topo, err := BuildNodes(cfg.Kind, cfg.Generation, cfg.Devices, cfg.Nodes, *cfg.Params)
			require.NoError(t, err)
			var got []string
			for _, l := range topo.Links {
				if c := ClassLabel(l.Group); !slices.Contains(got, c) {
					got = append(got, c)
				}
			}
			assert.ElementsMatch(t, tc.classes, got)
			legend := topo.ClassLegend()
			for _, w := range tc.legend {
				assert.Contains(t, legend, w)
			}
			assert.NotContains(t, legend, "efa-")
			for id := range topo.Links {
				assert.NotContains(t, topo.LinkName(id), "(efa-", "a link's name gives its class as reports do")
			}
			assert.Len(t, strings.Split(legend, "; "), len(tc.classes), "one entry a class: %s", legend)
		})
	}
}
