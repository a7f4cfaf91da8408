package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// TestFabricSweepArchProduct: fabric sweep builds the devices --arch names
// — inf2 is an Inferentia2 (PCI id 0x7264), a sunda device of its own, not
// a Trn1 — as serve's --arch does; the report names the product its
// devices report. A product word that contradicts --system is refused.
func TestFabricSweepArchProduct(t *testing.T) {
	for _, tc := range []struct{ arch, product string }{
		{"inf2", "Inf2"}, {"INF2", "Inf2"}, {"trn1", "Trn1"}, {"sunda", "Trn1"}, {"trn2", "Trn2"}, {"mariana", "Trn3"},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "r.json")
			out, err := runCLI(t, "fabric", "sweep", "--arch", tc.arch, "--devices", "2", "-b", "1K", "-e", "1K", "--json", js)
			require.NoError(t, err, out)
			assert.Contains(t, out, "# product: "+tc.product)
			f, err := os.Open(js)
			require.NoError(t, err)
			defer f.Close()
			rep, err := nccom.ReadJSON(f)
			require.NoError(t, err)
			assert.Equal(t, tc.product, rep.Extra["product"])
		})
	}
	_, err := runCLI(t, "fabric", "sweep", "--arch", "inf2", "--system", "trn1-32xl")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--arch inf2 contradicts --system trn1-32xl")
	_, err = runCLI(t, "fabric", "topo", "--arch", "trn1", "--system", "trn1-32xl")
	assert.NoError(t, err)
}

// TestFabricTopoDirectLinks: fabric topo prints each product's own direct
// device-to-device link (docs/fabric.md §Parameters): a ring, a chain and
// the 4×4 torus (a chain's links are the "ring" group) of Trn1
// devices 96 GB/s per direction, of Inf2 96 GiB/s,
// of Trn2 256 GB/s, of Trn3 128 GB/s (chosen). Every ring once printed
// Inf2's 96 GiB/s.
func TestFabricTopoDirectLinks(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--arch", "trn1", "--devices", "8", "--topology", "ring"}, "ring links: 96 GB/s, 500 ns per direction"},
		{[]string{"--arch", "sunda", "--devices", "6"}, "ring links: 96 GB/s, 500 ns per direction"},
		{[]string{"--arch", "inf2", "--devices", "12"}, "ring links: 103.079215104 GB/s (96 GiB/s), 500 ns per direction"},
		{[]string{"--arch", "inf2", "--devices", "6"}, "ring links: 103.079215104 GB/s (96 GiB/s), 500 ns per direction"},
		{[]string{"--arch", "trn2", "--devices", "8"}, "ring links: 256 GB/s, 500 ns per direction"},
		{[]string{"--arch", "trn2", "--devices", "16"}, "xy links: 256 GB/s, 500 ns per direction"},
		{[]string{"--arch", "trn1", "--devices", "16"}, "xy links: 96 GB/s, 500 ns per direction"},
		{[]string{"--arch", "trn3", "--devices", "8", "--topology", "ring"}, "ring links: 128 GB/s, 500 ns per direction"},
		{[]string{"--arch", "trn3", "--switch", "none", "--devices", "16", "--topology", "torus2d"}, "xy links: 128 GB/s, 500 ns per direction"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runCLI(t, append([]string{"fabric", "topo"}, tc.args...)...)
			require.NoError(t, err, out)
			assert.Contains(t, out, tc.want)
		})
	}
}

// TestSwitchedTopologyIsTrn3s: the switched topologies (switch,
// trn3-gen1, trn3-gen2) are built of NeuronSwitch and Trn3's in-server and
// inter-server links, which only mariana has; --topology refuses them on
// sunda and cayman devices, naming the flag and the archs that have them.
// A Trn1 switch once ran on Trn3's link figures, and a Trn2 one was
// refused by the pod-port budget in words no flag of which was named.
// Trn3 takes them, with a non-v1 switch family too.
func TestSwitchedTopologyIsTrn3s(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" accepted
	}{
		{[]string{"--arch", "trn1", "--topology", "switch", "--devices", "4"}, "--topology switch: a switch topology is Trn3's: only mariana (Trn3) systems have NeuronSwitch"},
		{[]string{"--arch", "inf2", "--topology", "switch", "--devices", "4"}, "sunda (Trn1+Inf2) devices are joined by direct links"},
		{[]string{"--arch", "trn2", "--topology", "switch", "--devices", "4"}, "--topology switch: a switch topology is Trn3's"},
		{[]string{"--arch", "trn2", "--topology", "trn3-gen1", "--devices", "64", "--what-if"}, "--topology trn3-gen1: a trn3-gen1 topology is Trn3's"},
		{[]string{"--arch", "trn1", "--topology", "trn3-gen2", "--devices", "144", "--what-if"}, "--topology trn3-gen2: a trn3-gen2 topology is Trn3's"},
		{[]string{"--arch", "trn1", "--topology", "star", "--devices", "4"}, ""},
		{[]string{"--arch", "trn3", "--topology", "switch", "--devices", "4"}, ""},
		{[]string{"--arch", "trn3", "--switch", "none", "--topology", "switch", "--devices", "4"}, ""},
		// The Trn2 UltraServer is Trn2's alone.
		{[]string{"--arch", "trn1", "--topology", "ultraserver", "--devices", "64", "--what-if"}, "--topology ultraserver: an ultraserver topology is Trn2's"},
		{[]string{"--arch", "trn3", "--topology", "ultraserver", "--devices", "64", "--what-if"}, "mariana (Trn3) has no such system"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runCLI(t, append([]string{"fabric", "sweep", "--op", "all_reduce", "-b", "1M", "-e", "1M"}, tc.args...)...)
			if tc.want == "" {
				require.NoError(t, err, out)
				return
			}
			require.Error(t, err, out)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
