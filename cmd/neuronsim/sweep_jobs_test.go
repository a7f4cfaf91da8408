package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/sweep"
	"github.com/neuronsim/neuronsim/internal/sweepjobs"
	"github.com/neuronsim/neuronsim/internal/units"
)

// jobGrid is a 6-point grid for the job commands' tests.
const jobGrid = "arch: cayman\nmode: timing\naxes:\n  devices: [2, 4]\n  ops: [all_reduce]\n  sizes: [1K, 4K, 16K]\n"

// writeJobGrid writes jobGrid into a fresh folder whose name has a space and
// a quote, and returns its path and hash.
func writeJobGrid(t *testing.T) (path, hash string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "it's a dir")
	require.NoError(t, os.Mkdir(dir, 0o755))
	path = filepath.Join(dir, "grid.yaml")
	require.NoError(t, os.WriteFile(path, []byte(jobGrid), 0o644))
	g, err := sweep.LoadGrid(path)
	require.NoError(t, err)
	require.Equal(t, 6, len(g.Points()))
	return path, g.Hash()
}

// fakeBinary is an executable file standing for neuronsim on the nodes.
func fakeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "neuronsim")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
	return p
}

func TestSweepSlurmCommand(t *testing.T) {
	grid, hash := writeJobGrid(t)
	bin := fakeBinary(t)
	script := filepath.Join(t.TempDir(), "sweep.sbatch")
	out, err := runCLI(t, "sweep", "slurm", grid, "--out", filepath.Join(filepath.Dir(grid), "out"), "--shards", "4",
		"--max-parallel", "2", "--binary", bin, "--script", script, "--time", "1:30:00", "--partition", "cpu")
	require.NoError(t, err)
	assert.Contains(t, out, "bash "+script+" --wait\n", "with --script it says what to type next")
	b, err := os.ReadFile(script)
	require.NoError(t, err)
	s := string(b)
	for _, want := range []string{
		"#SBATCH --array=0-3%2\n",
		"#SBATCH --job-name=" + mustJobName(t, hash, filepath.Join(filepath.Dir(grid), "out")) + "\n",
		"#SBATCH --time=0-01:30:00\n",
		"#SBATCH --partition=cpu\n",
		"grid=" + strings.ReplaceAll("'"+grid+"'", "it's", `it'\''s`) + "\n",
		"neuronsim='" + bin + "'\n",
		"6 points, hash " + hash,
	} {
		assert.Contains(t, s, want)
	}

	// Without --shards: one task per point; without --script: standard output.
	out, err = runCLI(t, "sweep", "slurm", grid, "--out", "/shared/out", "--binary", bin)
	require.NoError(t, err)
	assert.Contains(t, out, "#SBATCH --array=0-5%6\n")

	// A relative --out is made absolute.
	wd, err := os.Getwd()
	require.NoError(t, err)
	out, err = runCLI(t, "sweep", "slurm", grid, "--out", "rel/out", "--binary", bin)
	require.NoError(t, err)
	assert.Contains(t, out, "out='"+filepath.Join(wd, "rel/out")+"'\n")
}

// TestSweepSlurmOtherGridsFolder: a results folder written by another grid
// is refused before a script is written (every task would fail on it), and
// nothing in it changes.
func TestSweepSlurmOtherGridsFolder(t *testing.T) {
	grid, _ := writeJobGrid(t)
	bin := fakeBinary(t)
	other := filepath.Join(t.TempDir(), "other.yaml")
	require.NoError(t, os.WriteFile(other, []byte(strings.Replace(jobGrid, "16K", "32K", 1)), 0o644))
	dir := filepath.Join(t.TempDir(), "out")
	g, err := sweep.LoadGrid(other)
	require.NoError(t, err)
	_, err = sweep.Run(g, sweep.RunOptions{Dir: dir, Shard: sweep.Shard{Index: 0, Count: 6}, Jobs: 1})
	require.NoError(t, err)
	before := tree(t, dir)
	script := filepath.Join(t.TempDir(), "s.sbatch")
	_, err = runCLI(t, "sweep", "slurm", grid, "--out", dir, "--binary", bin, "--script", script)
	require.Error(t, err)
	assert.ErrorIs(t, err, sweep.ErrFolder)
	assert.Contains(t, err.Error(), "written by another grid")
	assert.NoFileExists(t, script)
	assert.Equal(t, before, tree(t, dir), "the folder is left as it was")

	// The folder of the same grid is a restart: accepted.
	out, err := runCLI(t, "sweep", "slurm", other, "--out", dir, "--binary", bin, "--script", script)
	require.NoError(t, err, out)
	assert.FileExists(t, script)
}

// tree reads every file under dir.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		m[p] = string(b)
		return err
	}))
	return m
}

func TestSweepSlurmRefuses(t *testing.T) {
	grid, _ := writeJobGrid(t)
	bin := fakeBinary(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("axes:\n  colour: [red]\n"), 0o644))
	noexec := filepath.Join(t.TempDir(), "plain")
	require.NoError(t, os.WriteFile(noexec, []byte("x"), 0o644))
	for _, c := range []struct {
		name string
		args []string
		is   error
		says string
	}{
		{"no out", []string{grid, "--binary", bin}, nil, "--out DIR is required"},
		{"zero shards", []string{grid, "--out", "/o", "--binary", bin, "--shards", "0"}, units.ErrRange, "--shards 0: must be in 1..1000"},
		{"shards past points", []string{grid, "--out", "/o", "--binary", bin, "--shards", "7"}, units.ErrRange, "--shards 7: must be in 1..6 (at most one shard per point: the grid has 6 points)"},
		{"shards not a number", []string{grid, "--out", "/o", "--binary", bin, "--shards", "four"}, units.ErrSyntax, "--shards"},
		{"max-parallel past shards", []string{grid, "--out", "/o", "--binary", bin, "--shards", "3", "--max-parallel", "4"}, units.ErrRange, "--max-parallel 4: must be in 1..3"},
		{"negative max-parallel", []string{grid, "--out", "/o", "--binary", bin, "--max-parallel", "-1"}, units.ErrRange, "--max-parallel"},
		{"cpus zero", []string{grid, "--out", "/o", "--binary", bin, "--cpus-per-task", "0"}, units.ErrRange, "--cpus-per-task"},
		{"cpus past sweep run's -j", []string{grid, "--out", "/o", "--binary", bin, "--cpus-per-task", "257"}, units.ErrRange, "--cpus-per-task 257: must be in 1..256"},
		{"bad time", []string{grid, "--out", "/o", "--binary", bin, "--time", "soon"}, units.ErrSyntax, "--time"},
		{"time too long", []string{grid, "--out", "/o", "--binary", bin, "--time", "400-0"}, units.ErrRange, "--time"},
		{"bad partition", []string{grid, "--out", "/o", "--binary", bin, "--partition", "a;b"}, sweepjobs.ErrInvalid, "--partition"},
		{"out with a newline", []string{grid, "--out", "/o\nx", "--binary", bin}, sweepjobs.ErrInvalid, "control character"},
		{"missing binary", []string{grid, "--out", "/o", "--binary", "/nonexistent/neuronsim"}, nil, "not an executable file"},
		{"binary not executable", []string{grid, "--out", "/o", "--binary", noexec}, nil, "not an executable file"},
		{"unknown axis", []string{bad, "--out", "/o", "--binary", bin}, sweep.ErrGrid, "unknown axis"},
		{"missing grid", []string{filepath.Join(t.TempDir(), "none.yaml"), "--out", "/o", "--binary", bin}, sweep.ErrGrid, "none.yaml"},
		{"script over the grid", []string{grid, "--out", "/o", "--binary", bin, "--script", grid}, nil, "an input"},
		{"script over the binary", []string{grid, "--out", "/o", "--binary", bin, "--script", bin}, nil, "an input"},
		{"script folder missing", []string{grid, "--out", "/o", "--binary", bin, "--script", "/nonexistent/dir/s.sbatch"}, nil, "/nonexistent/dir"},
		{"empty script", []string{grid, "--out", "/o", "--binary", bin, "--script="}, nil, "--script: empty"},
		{"empty partition", []string{grid, "--out", "/o", "--binary", bin, "--partition="}, nil, "--partition: empty"},
		{"empty binary", []string{grid, "--out", "/o", "--binary="}, nil, "--binary: empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := runCLI(t, append([]string{"sweep", "slurm"}, c.args...)...)
			require.Error(t, err, "output: %s", out)
			assert.Contains(t, err.Error(), c.says)
			if c.is != nil {
				assert.True(t, errors.Is(err, c.is), "%v does not wrap %v", err, c.is)
			}
			assert.Empty(t, out, "a refused command writes nothing")
		})
	}
}

// TestSweepK8sEmptyFiles: -o/--manifest and --merge given empty are
// refused, not taken as left out (standard output, no merge Job).
func TestSweepK8sEmptyFiles(t *testing.T) {
	grid, _ := writeJobGrid(t)
	for _, c := range [][2]string{{"--manifest=", "-o/--manifest: empty"}, {"--merge=", "--merge: empty"}} {
		out, err := runCLI(t, "sweep", "k8s", grid, "--out", "/r", "--image", "i", c[0])
		require.Error(t, err, c[0])
		assert.Contains(t, err.Error(), c[1])
		assert.Empty(t, out, "%s: a refused command writes nothing", c[0])
	}
}

func TestSweepK8sCommand(t *testing.T) {
	grid, hash := writeJobGrid(t)
	dir := t.TempDir()
	manifest, merge := filepath.Join(dir, "sweep.yaml"), filepath.Join(dir, "merge.yaml")
	out, err := runCLI(t, "sweep", "k8s", grid, "--out", "/results/r1", "--image", "registry/neuronsim:v1", "--pvc", "sweeps",
		"--shards", "3", "--parallelism", "2", "-o", manifest, "--merge", merge)
	require.NoError(t, err)
	assert.Contains(t, out, "kubectl wait --for=condition=complete", "with -o it says what to type next")
	name := mustJobName(t, hash, "/results/r1")
	assert.Contains(t, out, "job/"+name)

	b, err := os.ReadFile(manifest)
	require.NoError(t, err)
	d := yaml.NewDecoder(bytes.NewReader(b))
	var cm struct {
		Kind     string
		Metadata struct{ Name string }
		Data     map[string]string
	}
	require.NoError(t, d.Decode(&cm))
	assert.Equal(t, "ConfigMap", cm.Kind)
	assert.Equal(t, name+"-grid", cm.Metadata.Name)
	assert.Equal(t, jobGrid, cm.Data[sweepjobs.GridFileName], "the ConfigMap carries the grid file as it is")
	var job struct {
		Kind     string
		Metadata struct{ Name string }
		Spec     struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int
			Parallelism    int
			Template       struct {
				Spec struct {
					Containers []struct {
						Image string
						Args  []string
					}
				}
			}
		}
	}
	require.NoError(t, d.Decode(&job))
	assert.Equal(t, "Job", job.Kind)
	assert.Equal(t, name, job.Metadata.Name)
	assert.Equal(t, "Indexed", job.Spec.CompletionMode)
	assert.Equal(t, 3, job.Spec.Completions)
	assert.Equal(t, 2, job.Spec.Parallelism)
	require.Len(t, job.Spec.Template.Spec.Containers, 1)
	assert.Equal(t, "registry/neuronsim:v1", job.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, []string{"sweep", "run", "/etc/neuronsim-sweep/grid.yaml", "--out", "/results/r1", "--count", "3", "-j", "1"}, job.Spec.Template.Spec.Containers[0].Args)
	assert.ErrorIs(t, d.Decode(&job), io.EOF, "two documents")

	mb, err := os.ReadFile(merge)
	require.NoError(t, err)
	assert.Contains(t, string(mb), "name: "+name+"-merge\n")

	// The grid sweep k8s embeds runs as the same grid: its hash is the file's.
	g, err := sweep.ParseGrid("embedded", []byte(cm.Data[sweepjobs.GridFileName]))
	require.NoError(t, err)
	assert.Equal(t, hash, g.Hash())

	// Without -o the manifest goes to standard output, and nothing else.
	out, err = runCLI(t, "sweep", "k8s", grid, "--out", "/results/r1", "--image", "img")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "apiVersion: v1\nkind: ConfigMap\n"), out)
	assert.Contains(t, out, "completions: 6\n", "one completion per point by default")
}

func TestSweepK8sRefuses(t *testing.T) {
	grid, _ := writeJobGrid(t)
	big := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(big, []byte(jobGrid+"# "+strings.Repeat("x", sweepjobs.MaxGridBytes)+"\n"), 0o644))
	for _, c := range []struct {
		name string
		args []string
		is   error
		says string
	}{
		{"no out", []string{grid, "--image", "i"}, nil, "--out DIR is required"},
		{"no image", []string{grid, "--out", "/r"}, nil, "--image is required"},
		{"relative out", []string{grid, "--out", "r", "--image", "i"}, sweepjobs.ErrInvalid, "not an absolute path"},
		{"bad pvc", []string{grid, "--out", "/r", "--image", "i", "--pvc", "My_Claim"}, sweepjobs.ErrInvalid, "--pvc"},
		{"shards past points", []string{grid, "--out", "/r", "--image", "i", "--shards", "7"}, units.ErrRange, "--shards 7: must be in 1..6"},
		{"parallelism past shards", []string{grid, "--out", "/r", "--image", "i", "--shards", "2", "--parallelism", "3"}, units.ErrRange, "--parallelism 3: must be in 1..2"},
		{"merge over the manifest", []string{grid, "--out", "/r", "--image", "i", "--merge", "SAME"}, nil, "an input or an earlier output"},
		{"grid too large for a ConfigMap", []string{big, "--out", "/r", "--image", "i"}, units.ErrRange, "ConfigMap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			manifest := filepath.Join(dir, "m.yaml")
			args := []string{"sweep", "k8s", "-o", manifest}
			if !slices.Contains(c.args, "--merge") { // a flag is given once
				args = append(args, "--merge", filepath.Join(dir, "merge.yaml"))
			}
			args = append(args, c.args...)
			for i, a := range args {
				if a == "SAME" {
					args[i] = manifest
				}
			}
			out, err := runCLI(t, args...)
			require.Error(t, err, "output: %s", out)
			assert.Contains(t, err.Error(), c.says)
			if c.is != nil {
				assert.True(t, errors.Is(err, c.is), "%v does not wrap %v", err, c.is)
			}
			ents, _ := os.ReadDir(dir)
			assert.Empty(t, ents, "a refused command writes no file")
		})
	}
}

// mustJobName is the jobs' name of a grid of hash run into out.
func mustJobName(t *testing.T, hash, out string) string {
	t.Helper()
	name, err := sweepjobs.JobName(hash, out)
	require.NoError(t, err)
	return name
}
