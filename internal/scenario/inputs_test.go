package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestOutputIsNotAnInput: an output that is the same file as one the run
// reads — the scenario file, a step's program, a snapshot it restores —
// by its path, a symbolic link or a hard link, is refused before
// anything is built, naming the output's key and the input; every file is
// left as it was.
func TestOutputIsNotAnInput(t *testing.T) {
	dir := t.TempDir()
	put := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return path
	}
	prog := put("prog.s", ".engine pe\nnop last\n")
	require.NoError(t, os.Link(prog, filepath.Join(dir, "hard.s")))
	require.NoError(t, os.Symlink("prog.s", filepath.Join(dir, "soft.s")))
	one, err := fabric.New(fabric.Config{Generation: 3, Devices: 2, Ready: true})
	require.NoError(t, err)
	var snap bytes.Buffer
	require.NoError(t, one.Save(&snap))
	snapPath := put("sys.snap", snap.String())
	require.NoError(t, os.Link(snapPath, filepath.Join(dir, "hard.snap")))

	validate := "  - validate: {program: prog.s}\n"
	for _, tc := range []struct {
		name, file, steps, outputs string
		save                       string // the snapshot the command line saves
		base                       bool   // the run is on the system of sys.snap (snapshot restore)
		want                       string // after "FILE: "
	}{
		{name: "report is the scenario", file: "self.yaml", outputs: "outputs: {dir: ., report: self.yaml}\n",
			want: "outputs.report self.yaml: the same file as the scenario file " + filepath.Join(dir, "self.yaml")},
		{name: "report is a program", file: "x.yaml", steps: validate, outputs: "outputs: {dir: ., report: prog.s}\n",
			want: "outputs.report prog.s: the same file as steps[0] (validate).program " + prog},
		{name: "report is a hard link to a program", file: "x.yaml", steps: validate, outputs: "outputs: {dir: ., report: hard.s}\n",
			want: "outputs.report hard.s: the same file as steps[0] (validate).program " + prog},
		{name: "trace is a symbolic link to a program", file: "x.yaml", steps: validate, outputs: "outputs: {dir: ., trace: soft.s}\n",
			want: "outputs.trace soft.s: the same file as steps[0] (validate).program " + prog},
		{name: "pcap is a restored snapshot", file: "x.yaml", steps: "  - snapshot: {restore: sys.snap}\n", outputs: "outputs: {dir: ., pcap: sys.snap}\n",
			want: "outputs.pcap sys.snap: the same file as steps[0] (snapshot).restore sys.snap"},
		{name: "save over a restored snapshot", file: "x.yaml", steps: "  - snapshot: {restore: sys.snap}\n  - snapshot: {save: hard.snap}\n", outputs: "outputs: {dir: .}\n",
			want: "steps[1] (snapshot).save hard.snap: the same file as steps[0] (snapshot).restore sys.snap"},
		{name: "command line save over the scenario", file: "small.yaml", save: "small.yaml",
			want: "the snapshot saved " + filepath.Join(dir, "small.yaml") + ": the same file as the scenario file " + filepath.Join(dir, "small.yaml")},
		{name: "command line save over a program", file: "x.yaml", steps: validate, save: "hard.s",
			want: "the snapshot saved " + filepath.Join(dir, "hard.s") + ": the same file as steps[0] (validate).program " + prog},
		{name: "report over the snapshot restored", file: "x.yaml", base: true, outputs: "outputs: {dir: ., report: hard.snap}\n",
			want: "outputs.report hard.snap: the same file as the snapshot restored " + snapPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built := countBuilds(t)
			sys := small
			var base *Base
			if tc.base {
				sys = ""
				base, err = LoadSnapshot(snapPath, fabric.LoadOptions{})
				require.NoError(t, err)
			}
			file := put(tc.file, "name: x\n"+sys+"steps:\n"+tc.steps+tc.outputs)
			before := snapshotDir(t, dir)
			t.Chdir(dir) // outputs.dir "." is the scenario's folder
			p, err := LoadWith(file, base)
			require.NoError(t, err)
			if tc.save != "" {
				p.AddSnapshotSteps("", filepath.Join(dir, tc.save))
			}
			_, err = p.Run(Options{})
			require.Error(t, err)
			assert.Equal(t, file+": "+tc.want+", which it would replace; nothing was run", err.Error())
			assert.Zero(t, *built, "nothing is built")
			assert.Equal(t, before, snapshotDir(t, dir), "every file is as it was")
		})
	}
}

// snapshotDir is the contents of every regular file of dir by name.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	m := map[string]string{}
	for _, e := range es {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		m[e.Name()] = string(b)
	}
	return m
}

// TestOwnSnapshotIsNotAnInput: a snapshot the run saves and then restores
// is its own output, not an input: the run is not refused.
func TestOwnSnapshotIsNotAnInput(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	_, err := runDoc(t, dir, "name: a\n"+small+"steps:\n  - snapshot: {save: sys.snap}\n  - snapshot: {restore: sys.snap}\n  - snapshot: {save: sys.snap}\n", Options{})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "sys.snap"))
}
