package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/sweep"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// TestSweepNodesMatchesFabricSweep: a grid point of 2 × trn2-48xl over
// the EFA network gives the time and algorithm fabric sweep --system
// trn2-48xl --nodes 2 gives for the same size, with the same EFA
// overrides as flags (and without any): auto resolves to hier over a
// node's ranks as on the command line.
func TestSweepNodesMatchesFabricSweep(t *testing.T) {
	clearJobEnv(t)
	type rep struct {
		Results []struct {
			Size      int64   `json:"size(B)"`
			TimeUS    float64 `json:"time:avg(us)"`
			Algorithm string  `json:"algorithm"`
		} `json:"results"`
	}
	for _, tc := range []struct {
		name, efa string
		algos     []string
		flags     []string
	}{
		// Two leaves of 16 ports, so that the oversubscription of their
		// uplinks to the spines acts (with one leaf it is refused).
		{"efa overrides", "efa:\n  network: fat-tree\n  latency_ns: 20000\n  oversubscription: 2\n  leaf_ports: 16\n", []string{"auto", "ring", "hier"},
			[]string{"--efa-network", "fat-tree", "--efa-latency", "20000", "--oversubscription", "2", "--leaf-ports", "16"}},
		{"defaults", "", []string{"auto"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			grid := filepath.Join(tmp, "nodes.yaml")
			algos := ""
			for i, a := range tc.algos {
				if i > 0 {
					algos += ", "
				}
				algos += a
			}
			src := "axes:\n  systems: [trn2-48xl]\n  nodes: [2]\n  ops: [all_reduce]\n  algos: [" + algos + "]\n  sizes: [64K, 1M]\noutputs:\n  plots: false\n" + tc.efa
			require.NoError(t, os.WriteFile(grid, []byte(src), 0o644))
			dir := filepath.Join(tmp, "results")
			_, _, err := runCLI2(t, "sweep", "run", grid, "--out", dir)
			require.NoError(t, err)
			f, err := sweep.ReadFolder(dir)
			require.NoError(t, err)
			require.Len(t, f.Results, 2*len(tc.algos))
			for i, algo := range tc.algos {
				js := filepath.Join(tmp, algo+".json")
				args := append([]string{"fabric", "sweep", "--system", "trn2-48xl", "--nodes", "2", "--op", "all_reduce", "--algo", algo,
					"-b", "64K", "-e", "1M", "-f", "16", "--json", js}, tc.flags...)
				_, err := runCLI(t, args...)
				require.NoError(t, err)
				data, err := os.ReadFile(js)
				require.NoError(t, err)
				var r rep
				require.NoError(t, json.Unmarshal(data, &r))
				require.Len(t, r.Results, 2)
				for j, want := range r.Results {
					got := f.Results[2*i+j]
					require.Equal(t, sweep.StatusOK, got.Status, got.Error)
					assert.Equal(t, [3]int{16, 2, 32}, [3]int{got.Devices, got.Nodes, got.Ranks})
					assert.Equal(t, want.Size, got.Size)
					assert.Equal(t, want.TimeUS, got.Row.TimeUS, "%s of %d B", algo, got.Size)
					assert.Equal(t, want.Algorithm, got.Row.Algorithm, "%s of %d B", algo, got.Size)
					if algo == "auto" {
						assert.Equal(t, "hier", got.Row.Algorithm, "auto over two nodes of ranks")
					}
				}
			}
		})
	}
}

// TestSweepNamesCarryNodes: a fabric sweep over several nodes says so in
// every name it gives — the plots' title (with the system too), the --plot
// legend, the --json file of each device count (NAME-<nodes>x<N>devices,
// N a node's devices) — so the outputs of runs on other systems or node
// counts cannot be taken for each other. Once a 2-node sweep of 2 and 4
// devices a node wrote r-4devices.json and r-8devices.json, the names a
// one-node sweep of 4 and 8 devices writes, under a title without nodes.
func TestSweepNamesCarryNodes(t *testing.T) {
	for _, tc := range []struct {
		label string
		nodes int
		want  string
	}{
		{"", 1, "Trn2 all_reduce, fp32 (aware model)"},
		{"trn2-48xl (16 devices)", 1, "trn2-48xl (16 devices): Trn2 all_reduce, fp32 (aware model)"},
		{"", 2, "2 nodes over EFA: Trn2 all_reduce, fp32 (aware model)"},
		{"trn2-48xl (16 devices)", 4, "trn2-48xl (16 devices) × 4 nodes over EFA: Trn2 all_reduce, fp32 (aware model)"},
	} {
		assert.Equal(t, tc.want, sweepTitle(tc.label, tc.nodes, "Trn2 all_reduce, fp32 (aware model)"))
	}
	for _, tc := range []struct {
		counts []int
		nodes  int
		i      int
		want   string
	}{
		{[]int{16}, 2, 0, "r.json"},
		{[]int{2, 4}, 1, 1, "r-4devices.json"},
		{[]int{4, 8}, 2, 0, "r-2x2devices.json"},
		{[]int{4, 8}, 2, 1, "r-2x4devices.json"},
		{[]int{96, 192}, 3, 1, "r-3x64devices.json"},
	} {
		assert.Equal(t, tc.want, jsonPath("r.json", tc.counts, tc.nodes, tc.i), "%v on %d nodes", tc.counts, tc.nodes)
	}
	assert.Equal(t, "8 devices", devicesLabel(8, 1))
	assert.Equal(t, "8 devices (2 nodes × 4)", devicesLabel(8, 2))

	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	out, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "2,4", "--nodes", "2", "-b", "64K", "-e", "64K",
		"--json", js, "--plot", filepath.Join(dir, "p.png"), "--plot-devices", filepath.Join(dir, "d.png"))
	require.NoError(t, err, out)
	for _, n := range []int{2, 4} {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("r-2x%ddevices.json", n)))
		require.NoError(t, err, "the report of 2 nodes of %d devices", n)
		rep, err := nccom.ReadJSON(f)
		f.Close()
		require.NoError(t, err)
		assert.EqualValues(t, 2, rep.Extra["nodes"])
		assert.EqualValues(t, 2*n, rep.Extra["devices"])
	}
	for _, n := range []int{4, 8} {
		_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("r-%ddevices.json", n)))
		assert.ErrorIs(t, err, os.ErrNotExist, "no name a one-node sweep of %d devices would write", n)
	}
}
