package scenario

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/isa/asm"
	"github.com/neuronsim/neuronsim/internal/inputfile"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// within runs f, failing the test if it has not returned in 10 s (a read
// of a FIFO blocks).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

// sparseFile makes a file of n bytes that are a hole (no disk, and never to
// be read).
func sparseFile(t *testing.T, path string, n int64) string {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(n))
	require.NoError(t, f.Close())
	return path
}

// TestLoadRefusesUnboundedFiles: a scenario file that is a FIFO, a device,
// a directory or larger than the YAML decoder takes is refused before it
// is read — without blocking, and naming the file and the limit.
func TestLoadRefusesUnboundedFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	big := sparseFile(t, filepath.Join(dir, "big.yaml"), 10<<30)
	over := sparseFile(t, filepath.Join(dir, "over.yaml"), strictyaml.MaxBytes+1)
	for _, tc := range []struct {
		name, path string
		err        error
		want       string
	}{
		{"fifo", fifo, inputfile.ErrNotRegular, "scenario: " + fifo + ": is a FIFO (named pipe), not a regular file"},
		{"device", os.DevNull, inputfile.ErrNotRegular, "scenario: " + os.DevNull + ": is a character device, not a regular file"},
		{"directory", dir, inputfile.ErrNotRegular, "scenario: " + dir + ": is a directory, not a regular file"},
		{"10 GiB sparse", big, inputfile.ErrTooLarge, "scenario: " + big + ": more than 1048576 bytes; the YAML decoder reads documents up to 1 MiB"},
		{"one byte past 1 MiB", over, inputfile.ErrTooLarge, "scenario: " + over + ": more than 1048576 bytes; the YAML decoder reads documents up to 1 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			within(t, "Load("+tc.path+")", func() { _, err = Load(tc.path) })
			require.ErrorIs(t, err, tc.err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	fsys := fstest.MapFS{"big.yaml": {Data: make([]byte, strictyaml.MaxBytes+1)}}
	_, err := LoadFS(fsys, "big.yaml")
	require.ErrorIs(t, err, inputfile.ErrTooLarge)
	assert.Equal(t, "scenario: big.yaml: more than 1048576 bytes; the YAML decoder reads documents up to 1 MiB", err.Error())
}

// TestProgramFilesBounded: a program file a step names that is a FIFO, a
// device or larger than asm reads is refused by the precheck, naming the
// step and the file, before any device is brought up.
func TestProgramFilesBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.s")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	big := sparseFile(t, filepath.Join(dir, "big.s"), asm.MaxSource+1)
	for _, tc := range []struct {
		name, program string
		err           error
		want          string
	}{
		{"fifo", "fifo.s", inputfile.ErrNotRegular, "steps[0] (validate): " + fifo + ": is a FIFO (named pipe), not a regular file"},
		{"device", os.DevNull, inputfile.ErrNotRegular, "steps[0] (validate): " + os.DevNull + ": is a character device, not a regular file"},
		{"past MaxSource", "big.s", inputfile.ErrTooLarge, "steps[0] (validate): " + big + ": more than 403701760 bytes; " + asm.MaxSourceWhy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built := countBuilds(t)
			file := filepath.Join(dir, "x.yaml")
			p, err := Parse(file, []byte("name: x\n"+small+"steps:\n  - validate: {program: "+tc.program+"}\n"))
			require.NoError(t, err)
			within(t, "Run", func() { _, err = p.Run(Options{OutDir: t.TempDir()}) })
			require.ErrorIs(t, err, tc.err)
			assert.Equal(t, file+": "+tc.want, err.Error())
			assert.Zero(t, *built, "no device is brought up")
		})
	}
	fsys := fstest.MapFS{
		"x.yaml": {Data: []byte("name: x\n" + small + "steps:\n  - validate: {program: big.s}\n")},
		"big.s":  {Data: make([]byte, asm.MaxSource+1)},
	}
	p, err := LoadFS(fsys, "x.yaml")
	require.NoError(t, err)
	_, err = p.Run(Options{OutDir: t.TempDir()})
	require.ErrorIs(t, err, inputfile.ErrTooLarge)
	assert.Contains(t, err.Error(), "big.s: more than 403701760 bytes")
}

// TestSnapshotFilesRegular: a snapshot to restore that is a FIFO or a
// device is refused without blocking, from the command line's restore
// (LoadSnapshot) and from a step's.
func TestSnapshotFilesRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.snap")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	for _, path := range []string{fifo, os.DevNull} {
		var err error
		within(t, "LoadSnapshot("+path+")", func() { _, err = LoadSnapshot(path, fabric.LoadOptions{}) })
		require.ErrorIs(t, err, inputfile.ErrNotRegular)
		assert.Contains(t, err.Error(), "snapshot: "+path+": is a ")
	}
	p, err := Parse(filepath.Join(dir, "x.yaml"), []byte("name: x\n"+small+"steps:\n  - snapshot: {restore: "+fifo+"}\n"))
	require.NoError(t, err)
	within(t, "Run", func() { _, err = p.Run(Options{OutDir: t.TempDir()}) })
	require.ErrorIs(t, err, inputfile.ErrNotRegular)
	assert.Contains(t, err.Error(), "steps[0] (snapshot): restore "+fifo+": "+fifo+": is a FIFO (named pipe), not a regular file")
}
