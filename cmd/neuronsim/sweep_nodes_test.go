package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/sweep"
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
		{"efa overrides", "efa:\n  network: fat-tree\n  latency_ns: 20000\n  oversubscription: 2\n", []string{"auto", "ring", "hier"},
			[]string{"--efa-network", "fat-tree", "--efa-latency", "20000", "--oversubscription", "2"}},
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
