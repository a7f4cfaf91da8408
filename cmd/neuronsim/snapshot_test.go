package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSnapshotCommands: save after a scenario, restore before another,
// and a damaged file refused.
func TestSnapshotCommands(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "sys.snap")
	out, err := runCLI(t, "snapshot", "save", "qemu-cayman", snap, "--out", filepath.Join(dir, "a"))
	require.NoError(t, err, out)
	assert.Contains(t, out, "saved "+snap)
	steps := filepath.Join(dir, "steps.yaml")
	require.NoError(t, os.WriteFile(steps, []byte("name: steps\nsystem: {arch: cayman, revision: qemu, mode: functional}\nsteps:\n  - dma_copy: {bytes: 4K}\n"), 0o644))
	out, err = runCLI(t, "snapshot", "restore", snap, steps, "--out", filepath.Join(dir, "b"))
	require.NoError(t, err, out)
	assert.Contains(t, out, "scenario steps: 1 device, 2 steps")

	// A limit below what the file takes refuses it, naming the limit.
	_, err = runCLI(t, "snapshot", "restore", snap, steps, "--out", filepath.Join(dir, "b2"), "--max-size", "1K")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "over the limit of 1024 bytes")
	_, err = runCLI(t, "snapshot", "restore", snap, steps, "--max-size", "-1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--max-size")

	b, err := os.ReadFile(snap)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(snap, b[:len(b)/2], 0o644))
	_, err = runCLI(t, "snapshot", "restore", snap, steps, "--out", filepath.Join(dir, "c"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid system snapshot")
}
