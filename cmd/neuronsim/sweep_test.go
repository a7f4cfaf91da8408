package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/sweep"
)

const exampleGrid = "../../scenarios/sweeps/example.yaml"

// runCLI2 runs the command line in-process and returns stdout and stderr.
func runCLI2(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// clearJobEnv unsets the workload managers' variables for the test (a test
// run inside a Slurm job or a Kubernetes pod would see its own).
func clearJobEnv(t *testing.T) {
	for _, k := range []string{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "JOB_COMPLETION_INDEX"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Setenv(k, v) // restored after the test
			os.Unsetenv(k)
		}
	}
}

// TestSweepPlanCLI: sweep plan prints the count, a line per point with its
// hash and estimates, and the totals; --json is the same plan as JSON.
func TestSweepPlanCLI(t *testing.T) {
	g, err := sweep.LoadGrid(exampleGrid)
	require.NoError(t, err)
	out, _, err := runCLI2(t, "sweep", "plan", exampleGrid)
	require.NoError(t, err)
	assert.Contains(t, out, "grid "+g.Hash()+": 48 points in 24 groups\n")
	for _, p := range g.Points() {
		assert.Regexp(t, regexp.MustCompile(`(?m)^`+strconv.Itoa(p.Index)+` +`+p.Hash+` +cayman +[0-9]+ +1 +ring +`), out)
	}
	assert.Regexp(t, `total: 48 points, estimated host time [0-9.]+ s with one worker, peak memory .* per worker`, out)

	out, _, err = runCLI2(t, "sweep", "plan", exampleGrid, "--json")
	require.NoError(t, err)
	var plan sweep.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	assert.Equal(t, 48, plan.Points)
	assert.Equal(t, g.Hash(), plan.Grid)
	require.Len(t, plan.Items, 48)
	for i, it := range plan.Items {
		assert.Equal(t, g.Points()[i].Hash, it.Hash)
		assert.Positive(t, it.HostSeconds)
		assert.Positive(t, it.MemBytes)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestSweepCLI: run -j 2 and merge --sqlite write the folder; a second run
// skips everything and says so; a shard from Slurm's environment runs that
// shard; merge of a folder with a missing point lists it and fails after
// writing what it has.
//
// Under the race detector (every point and plot ten times slower) a
// 12-point grid stands in for the example.
func TestSweepCLI(t *testing.T) {
	clearJobEnv(t)
	grid := exampleGrid
	if raceEnabled {
		grid = filepath.Join(t.TempDir(), "small.yaml")
		require.NoError(t, os.WriteFile(grid, []byte("arch: cayman\naxes:\n  devices: [2, 3, 4]\n  ops: [all_reduce]\n  algos: [ring]\n  models: [aware, free]\n  sizes: [64K, 1M]\n"), 0o644))
	}
	g, err := sweep.LoadGrid(grid)
	require.NoError(t, err)
	n := itoa(g.Len())
	dir := filepath.Join(t.TempDir(), "results")
	_, stderr, err := runCLI2(t, "sweep", "run", grid, "--out", dir, "-j", "2")
	require.NoError(t, err)
	assert.Contains(t, stderr, "the whole grid of "+n+" points: "+n+" ran, 0 skipped (already done), 0 failed")
	_, stderr, err = runCLI2(t, "sweep", "run", grid, "--out", dir)
	require.NoError(t, err)
	assert.Contains(t, stderr, n+" points: 0 ran, "+n+" skipped (already done), 0 failed")

	db := filepath.Join(dir, "points.db")
	_, stderr, err = runCLI2(t, "sweep", "merge", dir, "--sqlite", db)
	require.NoError(t, err)
	for _, f := range []string{filepath.Join(dir, "merged", "report.json"), filepath.Join(dir, "merged", "points.csv"), filepath.Join(dir, "merged", "busbw-0000.png"), db} {
		assert.Contains(t, stderr, "wrote "+f+"\n")
		assert.FileExists(t, f)
	}

	// Slurm's environment picks the shard; a point of it removed is rerun.
	idx, err := g.Shard(sweep.Shard{Index: 1, Count: 4})
	require.NoError(t, err)
	lost := g.Points()[idx[0]]
	require.NoError(t, os.Remove(filepath.Join(dir, "points", lost.Hash+".json")))
	_, stderr, err = runCLI2(t, "sweep", "merge", dir)
	require.ErrorIs(t, err, sweep.ErrIncomplete)
	assert.Contains(t, err.Error(), "point "+itoa(lost.Index)+" ("+lost.Hash+") missing: no result file")
	assert.Contains(t, stderr, "1 missing or failed")
	t.Setenv("SLURM_ARRAY_TASK_ID", "6")
	t.Setenv("SLURM_ARRAY_TASK_MIN", "5")
	t.Setenv("SLURM_ARRAY_TASK_MAX", "8")
	_, stderr, err = runCLI2(t, "sweep", "run", grid, "--out", dir, "-v")
	require.NoError(t, err)
	assert.Regexp(t, `point `+itoa(lost.Index)+` `+lost.Hash+`: [0-9.]+ ms: ok\n`, stderr, "-v prints the point it ran")
	assert.Equal(t, 1, strings.Count(stderr, " ms: "), "and only that one")
	assert.Contains(t, stderr, "shard 1/4 (SLURM_ARRAY_TASK_ID) of "+itoa(len(idx))+" points: 1 ran, "+itoa(len(idx)-1)+" skipped")
	_, _, err = runCLI2(t, "sweep", "merge", dir)
	require.NoError(t, err)
}

// TestSweepBadInput: each bad input is a clear error naming what is wrong,
// and a results folder is never changed by a refused run.
func TestSweepBadInput(t *testing.T) {
	clearJobEnv(t)
	dir := filepath.Join(t.TempDir(), "results")
	other := filepath.Join(t.TempDir(), "other.yaml")
	require.NoError(t, os.WriteFile(other, []byte("arch: cayman\naxes:\n  devices: [2]\n  ops: [all_reduce]\n  sizes: [1K]\n"), 0o644))
	unknown := filepath.Join(t.TempDir(), "unknown.yaml")
	require.NoError(t, os.WriteFile(unknown, []byte("arch: cayman\naxes:\n  devices: [2]\n  ops: [all_reduce]\n  sizes: [1K]\n  speed: [1]\n"), 0o644))
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	require.NoError(t, os.WriteFile(empty, []byte("arch: cayman\naxes:\n  devices: [2]\n  ops: []\n  sizes: [1K]\n"), 0o644))
	_, _, err := runCLI2(t, "sweep", "run", other, "--out", dir)
	require.NoError(t, err)
	before := snapshotDir(t, dir)

	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "plan", unknown}, `unknown.yaml:6:3: axes.speed: unknown axis "speed"`},
		{[]string{"sweep", "plan", empty}, "empty.yaml:4:8: axes.ops: empty axis"},
		{[]string{"sweep", "run", unknown, "--out", dir}, `unknown axis "speed"`},
		{[]string{"sweep", "run", exampleGrid, "--out", dir}, "written by another grid"},
		{[]string{"sweep", "run", other, "--out", dir, "--shard", "4/4"}, "--shard 4/4: index 4 is past the count"},
		{[]string{"sweep", "run", other, "--out", dir, "--shard", "3/0"}, "--shard 3/0: N"},
		{[]string{"sweep", "run", other, "--out", dir, "--shard", "-1/2"}, "--shard -1/2: I"},
		{[]string{"sweep", "run", other, "--out", dir, "--shard", "a/b"}, "--shard a/b: N \"b\": not a decimal number"},
		{[]string{"sweep", "run", other, "--out", dir, "--count", "4"}, "JOB_COMPLETION_INDEX is not set"},
		{[]string{"sweep", "run", other, "--out", dir, "--count", "4", "--shard", "0/4"}, "--count"},
		{[]string{"sweep", "run", other, "--out", dir, "-j", "0"}, "-j/--jobs"},
		{[]string{"sweep", "run", other}, "--out"},
		{[]string{"sweep", "merge", filepath.Join(t.TempDir(), "nothing")}, "not a results folder"},
		{[]string{"sweep", "merge", dir, "--sqlite="}, "--sqlite: empty"},
		{[]string{"sweep", "plan", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			_, _, err := runCLI2(t, tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, before, snapshotDir(t, dir), "the results folder is unchanged")
		})
	}
	t.Run("JOB_COMPLETION_INDEX past --count", func(t *testing.T) {
		t.Setenv("JOB_COMPLETION_INDEX", "4")
		_, _, err := runCLI2(t, "sweep", "run", other, "--out", dir, "--count", "4")
		require.ErrorIs(t, err, sweep.ErrShard)
		assert.Contains(t, err.Error(), "JOB_COMPLETION_INDEX=4 is past --count 4")
	})
}

func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[path] = fi.ModTime().String() + "\n" + string(b)
		}
		return nil
	}))
	return out
}

// TestStaticBinary: no package the command line links, outside the
// standard library, needs cgo (the SQLite driver is pure Go), so a
// CGO_ENABLED=0 build is complete and static.
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED TestStaticBinary under -short: it runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("SKIPPED TestStaticBinary: no go command on PATH")
	}
	cmd := exec.Command(goBin, "list", "-deps", "-f", "{{if and .CgoFiles (not .Standard)}}{{.ImportPath}}{{end}}", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "packages that need cgo")
	deps, err := exec.Command(goBin, "list", "-deps", ".").Output()
	require.NoError(t, err)
	assert.Contains(t, string(deps), "modernc.org/sqlite\n")
}
