package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunNameOfFileAndShipped: a bare word that names both a file in the
// working folder and a shipped scenario is refused, saying how to name
// either; ./NAME runs the file. Until 2026-12-07 the file ran, with no
// word that the shipped scenario of that name did not.
func TestRunNameOfFileAndShipped(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	doc := "name: mine\nsystem: {arch: cayman, devices: 2}\nsteps:\n  - collective: {op: all_reduce, size: 4K}\n"
	for _, name := range []string{"default", "default.yaml"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644))
		_, err := runCLI(t, "run", name, "--out", filepath.Join(dir, "out"))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "names both a file here and the shipped scenario default: give ./"+name+" to run the file", name)
		out, err := runCLI(t, "run", "./"+name, "--out", filepath.Join(dir, "out"))
		require.NoError(t, err, name)
		assert.Contains(t, out, "scenario mine", name)
		require.NoError(t, os.Remove(filepath.Join(dir, name)))
	}
}
