package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// TestFabricSweepNodes: --nodes 2 on two trn2.48xlarge (--devices 16)
// sweeps 32 ranks over the EFA network, the automatic choice hierarchical
// (a node's 16 ranks its group) and --algo ring the flat ring; on trn1 the
// automatic choice is the flat ring from 64 MiB on; the flat ring runs one
// channel per EFA NIC of a node unless --channels gives another count
// (auto's too, where it takes the flat ring), and fewer than the NICs get
// the flat_ring note; the report names the nodes, the network and the
// channels; functional mode checks the data.
func TestFabricSweepNodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		algos []string
		lines []string // in the output, beside the nodes and devices
	}{
		{"trn2-auto", []string{"--arch", "cayman", "--devices", "16", "--nodes", "2", "-b", "64K", "-e", "16M", "-f", "16"}, []string{"hier", "hier", "hier"}, nil},
		{"trn2-flat-ring", []string{"--arch", "cayman", "--devices", "16", "--nodes", "2", "--algo", "ring", "-b", "64K", "-e", "1M", "-f", "16"}, []string{"ring", "ring"}, []string{"# channels: 16"}},
		{"trn2-flat-ring-one-channel", []string{"--arch", "cayman", "--devices", "16", "--nodes", "2", "--algo", "ring", "--channels", "1", "-b", "64K", "-e", "64K"}, []string{"ring"}, []string{"# channels: 1", "# flat_ring: fewer ring channels"}},
		{"trn2-flat-ring-channels", []string{"--arch", "cayman", "--devices", "16", "--nodes", "2", "--algo", "ring", "--channels", "16", "--mode", "functional", "-b", "64K", "-e", "64K"}, []string{"ring"}, []string{"# channels: 16"}},
		{"trn1-auto-flat-channels", []string{"--arch", "trn1", "--devices", "16", "--nodes", "2", "--model", "free", "--channels", "4", "-b", "1M", "-e", "64M", "-f", "64"}, []string{"hier", "ring"}, []string{"# channels: 4", "# flat_ring:"}},
		{"system-trn2-48xl", []string{"--system", "trn2-48xl", "--nodes", "2", "-b", "64K", "-e", "64K"}, []string{"hier"}, nil},
		{"trn2-hier-no-group-size", []string{"--arch", "cayman", "--devices", "16", "--nodes", "2", "--algo", "hier", "-b", "64K", "-e", "64K"}, []string{"hier"}, nil},
		{"trn1-auto-flat", []string{"--arch", "trn1", "--devices", "16", "--nodes", "2", "--model", "free", "-b", "1M", "-e", "64M", "-f", "64"}, []string{"hier", "ring"}, []string{"# channels: 8"}},
		{"trn2-functional-fat-tree", []string{"--arch", "cayman", "--devices", "16", "--nodes", "2", "--efa-network", "fat-tree", "--oversubscription", "2",
			"--efa-bw", "400Gbps", "--efa-latency", "10000", "--leaf-ports", "8", "--spines", "1", "--mode", "functional", "-b", "64K", "-e", "64K"}, []string{"hier"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "r.json")
			out, err := runCLI(t, append([]string{"fabric", "sweep", "--op", "all_reduce", "--json", js}, tc.args...)...)
			require.NoError(t, err, out)
			f, err := os.Open(js)
			require.NoError(t, err)
			defer f.Close()
			rep, err := nccom.ReadJSON(f)
			require.NoError(t, err)
			assert.Equal(t, 32, rep.Ranks)
			require.Len(t, rep.Rows, len(tc.algos))
			for i, r := range rep.Rows {
				assert.Equal(t, tc.algos[i], r.Algorithm, "row %d", i)
			}
			assert.Contains(t, out, "# nodes: 2")
			assert.Contains(t, out, "# devices: 32")
			for _, l := range tc.lines {
				assert.Contains(t, out, l)
			}
			if !slices.Contains(tc.algos, "ring") {
				assert.NotContains(t, out, "# channels:", "no ring across the nodes")
			}
		})
	}
}

// TestFabricSweepGroupSizeNodes: across nodes hier's group is a node's
// ranks (cluster.Config.CollectiveOptions); --group-size that is not
// them is refused, naming --group-size and --nodes and the node's ranks,
// and one that is them is taken. --group-size 1 or 128 over 2 × 64
// devices once ran flat rings labelled hier, and 8 groups that split the
// nodes.
func TestFabricSweepGroupSizeNodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" accepted
	}{
		{[]string{"--system", "trn3-gen1", "--group-size", "8"}, "--group-size 8: with --nodes 2 hier's group is a node's ranks, 64 (64 devices × 1 rank per device)"},
		{[]string{"--system", "trn3-gen1", "--group-size", "1"}, "--group-size 1: with --nodes 2 hier's group is a node's ranks, 64"},
		{[]string{"--system", "trn3-gen1", "--group-size", "128"}, "--group-size 128: with --nodes 2 hier's group is a node's ranks, 64"},
		{[]string{"--arch", "cayman", "--devices", "4", "--ranks-per-device", "2", "--group-size", "4"}, "--group-size 4: with --nodes 2 hier's group is a node's ranks, 8 (4 devices × 2 ranks per device)"},
		{[]string{"--arch", "cayman", "--devices", "4", "--ranks-per-device", "2", "--group-size", "8"}, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runCLI(t, append([]string{"fabric", "sweep", "--nodes", "2", "--model", "free", "--op", "all_reduce", "--algo", "hier", "-b", "64K", "-e", "64K"}, tc.args...)...)
			if tc.want == "" {
				require.NoError(t, err, out)
				assert.Contains(t, out, " hier\n")
				return
			}
			require.Error(t, err, out)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestFabricSweepChannelsOps: the flat ring's channel notes are only for
// a flat ring across nodes: a permute (whose ring rows are one shift to
// its peers), an alltoall (mesh) and a hierarchical all-reduce print no
// "# channels" nor "# flat_ring" line, on Trn1 (auto's flat ring from
// 64 MiB) and Trn2; --channels is refused for a permute and an alltoall,
// naming the flag and the collective. A permute once printed "# channels:
// 8" and took --channels, which changed nothing.
func TestFabricSweepChannelsOps(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		algo string
	}{
		{"trn2-permute", []string{"--arch", "cayman", "--devices", "4", "--op", "permute", "-b", "1M", "-e", "1M"}, "ring"},
		{"trn1-permute-64M", []string{"--arch", "trn1", "--devices", "4", "--op", "permute", "-b", "64M", "-e", "64M"}, "ring"},
		{"trn2-alltoall", []string{"--arch", "cayman", "--devices", "4", "--op", "alltoall", "-b", "1M", "-e", "1M"}, "mesh"},
		{"trn2-hier", []string{"--arch", "cayman", "--devices", "4", "--op", "all_reduce", "--algo", "hier", "-b", "1M", "-e", "1M"}, "hier"},
		{"trn1-hier-64M", []string{"--arch", "trn1", "--devices", "4", "--op", "all_gather", "-b", "64M", "-e", "64M", "--algo", "hier"}, "hier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"fabric", "sweep", "--nodes", "2", "--model", "free"}, tc.args...)
			out, err := runCLI(t, args...)
			require.NoError(t, err, out)
			assert.Contains(t, out, " "+tc.algo+"\n")
			assert.NotContains(t, out, "# channels:")
			assert.NotContains(t, out, "# flat_ring:")
			assert.NotContains(t, out, "# auto_flat_ring:")
		})
	}
	for _, tc := range []struct{ op, want string }{
		{"permute", "--channels 2: a permute runs no ring channels"},
		{"alltoall", "--channels 2: an alltoall runs on mesh"},
	} {
		for _, algo := range []string{"auto", "ring", "mesh"} {
			_, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "4", "--nodes", "2", "--op", tc.op, "--algo", algo, "--channels", "2", "-b", "1M", "-e", "1M")
			require.Error(t, err, "%s %s", tc.op, algo)
			assert.Contains(t, err.Error(), tc.want, "%s %s", tc.op, algo)
		}
	}
	// auto across nodes is hier at every size on Trn2, and on Trn1 below
	// the flat ring's 64 MiB: channels there would change nothing.
	for _, args := range [][]string{
		{"--arch", "cayman", "-b", "1M", "-e", "1G", "-f", "32"},
		{"--arch", "trn1", "-b", "1M", "-e", "16M", "-f", "4"},
	} {
		args = append([]string{"fabric", "sweep", "--devices", "4", "--nodes", "2", "--channels", "2"}, args...)
		_, err := runCLI(t, args...)
		require.Error(t, err, "%v", args)
		assert.Contains(t, err.Error(), "--channels 2: algo auto runs no flat ring at any size", "%v", args)
		assert.Contains(t, err.Error(), "auto runs hier up to", "%v", args)
	}
}

// TestFabricTopoNodes: fabric topo --nodes draws the NICs, leaves and
// spines with the parameters the flags give.
func TestFabricTopoNodes(t *testing.T) {
	out, err := runCLI(t, "fabric", "topo", "--arch", "cayman", "--devices", "16", "--nodes", "3", "--efa-network", "fat-tree",
		"--leaf-ports", "16", "--oversubscription", "2", "--efa-bw", "400Gbps", "--efa-latency", "20000")
	require.NoError(t, err, out)
	for _, want := range []string{
		"topology: torus2d, 48 devices",
		"3 nodes of 16 devices (torus2d) joined by EFA: fat-tree network, 16 NICs per node (1 device a NIC), 3 leaves of 16 ports, 2 spines, oversubscription 2:1",
		"dev-nic links: 50 GB/s, 9100 ns per direction", // (20,000 − 2·500 − 300 − 500) / 2
		"nic-leaf links: 50 GB/s, 500 ns per direction",
		"leaf-spine links: 200 GB/s, 500 ns per direction", // 16 × 50 / 2 / 2 spines
		"spines: spine0, spine1 ◄––► every leaf",
	} {
		assert.Contains(t, out, want)
	}
}

// TestFabricEFARouting: --efa-routing chooses how a leaf picks a write's
// spine, fabric topo draws it, and a sweep whose writes may cross the
// spines says it (efa_routing); sprayed or adaptive, more spines than a
// leaf's NICs are taken (fixed routing refuses them:
// TestFabricEFAFlagErrors).
func TestFabricEFARouting(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--leaf-ports", "1"}, "spines: spine0, spine1 ◄––► every leaf; sprayed: each NIC sends its writes across the spines to them in turn, from its port on its leaf mod 2"},
		{[]string{"--efa-network", "fat-tree", "--leaf-ports", "2", "--efa-routing", "fixed"}, "spines: spine0, spine1 ◄––► every leaf; fixed routing: a leaf sends a write up to spine p mod 2"},
		{[]string{"--leaf-ports", "1", "--efa-routing", "SPRAY", "--spines", "8"}, "spine7 ◄––► every leaf; sprayed: each NIC sends its writes across the spines to them in turn, from its port on its leaf mod 8\nleaf-spine links: 3.125 GB/s"},
		{[]string{"--leaf-ports", "1", "--efa-routing", "adaptive", "--spines", "4"}, "spine3 ◄––► every leaf; adaptive routing: a leaf sends a write up to the spine whose link from it is booked until the earliest time, the NIC's turn among equals, from its port on its leaf mod 4"},
		{[]string{"--leaf-ports", "1", "--spines", "1"}, "spines: spine0 ◄––► every leaf\n"},
	} {
		args := append([]string{"fabric", "topo", "--arch", "cayman", "--devices", "2", "--nodes", "2"}, c.args...)
		out, err := runCLI(t, args...)
		require.NoError(t, err, "%v: %s", args, out)
		assert.Contains(t, out, c.want, "%v", args)
	}
	for _, r := range []string{"spray", "fixed", "adaptive"} {
		out, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "2", "--nodes", "2", "--efa-network", "fat-tree", "--leaf-ports", "2",
			"--op", "permute", "-b", "1M", "-e", "1M", "--efa-routing", r)
		require.NoError(t, err, out)
		assert.Contains(t, out, "# efa_routing: "+r+"\n")
	}
	// Spines no write crosses: no routing to speak of.
	out, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "2", "--nodes", "2", "--op", "permute", "-b", "1M", "-e", "1M")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "efa_routing")
}

// TestFabricEFAFlagErrors: the EFA flags are refused without --nodes 2 or
// more, out of range, or unreadable, each naming the flag.
func TestFabricEFAFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--efa-bw", "400Gbps"}, "--efa-bw: one node has no EFA network"},
		{[]string{"--oversubscription", "2"}, "--oversubscription: one node has no EFA network"},
		{[]string{"--nodes", "2", "--oversubscription", "0.5"}, "--oversubscription 0.5: a ratio from 1"},
		// Spines past the most NICs on a leaf would carry nothing.
		{[]string{"--nodes", "2", "--leaf-ports", "1", "--spines", "8", "--efa-routing", "fixed"}, "--spines 8: with 2 nodes of 16 devices a leaf holds at most 1 NIC (rail0-leaf0), and under fixed routing (--efa-routing)"},
		// Where no write crosses a spine they change nothing.
		{[]string{"--nodes", "2", "--spines", "4"}, "--spines: changes nothing here: with 2 nodes of 16 devices the network is rail-optimised and each rail's 2 nodes fit one leaf of 64 ports"},
		{[]string{"--nodes", "2", "--efa-network", "fat-tree", "--oversubscription", "2"}, "--oversubscription: changes nothing here: with 2 nodes of 16 devices one leaf of 64 ports holds all 32 NICs (2 nodes × 16), so the network has no spines"},
		{[]string{"--nodes", "2", "--oversubscription", "lots"}, "--oversubscription"},
		{[]string{"--nodes", "0"}, "--nodes 0: must be in 1..16384"},
		{[]string{"--nodes", "99999999999999999999"}, `--nodes "99999999999999999999": must be in 1..16384`}, // its own range, not an int's
		{[]string{"--nodes", "2", "--spines", "4294967296"}, "--spines 4294967296: must be in 1..256"},
		{[]string{"--nodes", "2", "--leaf-ports", "-1"}, "--leaf-ports -1: must be in 1..4096"},
		{[]string{"--nodes", "2", "--devices-per-nic", "16385"}, "--devices-per-nic 16385: must be in 1..16384"},
		{[]string{"--nodes", "2000"}, "--nodes 2000: 2000 nodes of 16 devices are 32000 devices"},
		{[]string{"--nodes", "2", "--efa-network", "torus"}, "accepted words are rail|fat-tree"},
		{[]string{"--nodes", "2", "--efa-routing", "ecmp"}, `unknown EFA routing "ecmp": accepted words are spray|fixed|adaptive`},
		{[]string{"--efa-routing", "fixed"}, "--efa-routing: one node has no EFA network"},
		{[]string{"--nodes", "2", "--efa-routing", "fixed"}, "--efa-routing: changes nothing here: with 2 nodes of 16 devices the network is rail-optimised"},
		// Sprayed, every spine carries writes: more spines than a leaf's
		// NICs are taken (fixed routing refuses them, above).
		{[]string{"--nodes", "2", "--efa-bw", "0"}, `--efa-bw "0": no unit`},
		{[]string{"--nodes", "2", "--efa-bw", "0Gbps"}, `--efa-bw "0Gbps": a bandwidth must be positive`},
		{[]string{"--nodes", "2", "--efa-bw", "1e-400GB/s"}, `--efa-bw "1e-400GB/s": too small`}, // not "0"
		{[]string{"--nodes", "2", "--efa-bw", "1e-300Gbps"}, `--efa-bw "1e-300Gbps": too small`},
		{[]string{"--nodes", "2", "--efa-bw", "5GX"}, `--efa-bw "5GX": unknown unit "GX"`},
		{[]string{"--nodes", "2", "--efa-latency", "100"}, "--efa-latency 100: below the 1800 ns"},
		{[]string{"--nodes", "2", "--efa-latency", "2e10"}, "--efa-latency 2e+10: too long: a latency is at most 10000000000 ns"},
		// A hop of seconds is no network: at most 1 ms (fabric.MaxEFALatencyPS; 10 s was taken).
		{[]string{"--nodes", "2", "--efa-latency", "5e9"}, "--efa-latency 5000000000: too long: a minimal message between two nodes takes at most 1000000 ns (1 ms"},
		{[]string{"--nodes", "2", "--efa-latency", "1000000.001"}, "--efa-latency 1000000.001: too long"},
		{[]string{"--nodes", "2", "--devices-per-nic", "3"}, "--devices-per-nic 3: does not divide the 16 devices of a node"},
		{[]string{"--nodes", "2", "--spines", "0"}, "--spines 0"},
		{[]string{"--nodes", "2", "--oversubscription", "NaN"}, "--oversubscription"},
		{[]string{"--nodes", "3", "--leaf-ports", "0"}, "--leaf-ports"},
		// A spine link out of 1 B/s..10^15 B/s names the flag that made it
		// so and the flags' limit (once EFA.Oversubscription, and 2^50 B/s).
		{[]string{"--nodes", "2", "--efa-bw", "1B/s", "--oversubscription", "1000"}, "--oversubscription 1000: with 2 nodes of 16 devices, leaf rail0-leaf's 2 NICs of 1 B/s (--efa-bw) over an oversubscription of 1000 (--oversubscription) and 2 spines (--spines) leave 0.001 B/s per spine link, less than 1 B/s"},
		{[]string{"--nodes", "2", "--efa-bw", "999TB/s", "--spines", "1"}, "--efa-bw 999000000000000 B/s: with 2 nodes of 16 devices, leaf rail0-leaf's 2 NICs of 999000000000000 B/s (--efa-bw) over an oversubscription of 1 (--oversubscription) and 1 spines (--spines) leave 1.998e+15 B/s per spine link, more than 1000000000000000 B/s (1000TB/s)"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			out, err := runCLI(t, append([]string{"fabric", "topo", "--arch", "cayman", "--devices", "16"}, tc.args...)...)
			require.Error(t, err, out)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestFabricSweepLinkClassesPerSystem: over 2 nodes of each system AWS
// sells, the link table names the EFA classes by what they are (dev-nic,
// nic-leaf, leaf-spine; no "efa-…") and the report says what each class is
// on that system ("# link_classes: …"); on trn1-32xl, whose NIC two
// devices share, the NIC's busy port is nic-leaf, not a leaf switch.
func TestFabricSweepLinkClassesPerSystem(t *testing.T) {
	for _, tc := range []struct {
		system string
		size   string
		want   []string
	}{
		{"trn1-32xl", "16M", []string{"nic-leaf", "nic-leaf = an EFA NIC's port to its leaf switch: the NIC's own bandwidth, shared by the NIC's 2 devices"}},
		{"trn2-48xl", "1M", []string{"dev-nic = a device's link to its EFA NIC (one device a NIC)"}},
		{"trn2-ultraserver", "1M", []string{"z = an UltraServer Z-ring link"}},
		{"trn3-gen1", "64K", []string{"inter-rack = a direct link to the same-position device of the other rack"}},
		{"trn3-gen2", "64K", []string{"inter-server = a device's link to one of the two second-level switches"}},
	} {
		t.Run(tc.system, func(t *testing.T) {
			out, err := runCLI(t, "fabric", "sweep", "--system", tc.system, "--nodes", "2", "--model", "free", "-b", tc.size, "-e", tc.size)
			require.NoError(t, err, out)
			assert.Contains(t, out, "# link_classes: ")
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			assert.NotContains(t, out, "efa-nic")
			assert.NotContains(t, out, "efa-leaf")
			assert.NotContains(t, out, "efa-spine")
		})
	}
}
