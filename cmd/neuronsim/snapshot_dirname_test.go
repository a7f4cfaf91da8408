package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSnapshotSaveToADirectoryNameRefused: `snapshot save SCENARIO DIR/`
// names a directory; it is refused before anything runs, where until
// 2026-12-07 the slash was dropped and a file DIR was written.
func TestSnapshotSaveToADirectoryNameRefused(t *testing.T) {
	dir := t.TempDir()
	_, err := runCLI(t, "snapshot", "save", "qemu-cayman", filepath.Join(dir, "snaps")+"/", "--out", filepath.Join(dir, "a"))
	require.Error(t, err)
	assert.ErrorContains(t, err, "names a directory")
	_, err = os.Stat(filepath.Join(dir, "snaps"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing written")
}

// TestSnapshotCommandsRefuseEmptyOut: an empty --out of `snapshot save`
// and `snapshot restore` is refused as `run`'s is, where until 2026-12-07 it was taken as
// --out left out (the scenario's directory).
func TestSnapshotCommandsRefuseEmptyOut(t *testing.T) {
	dir := t.TempDir()
	_, err := runCLI(t, "snapshot", "save", "qemu-cayman", filepath.Join(dir, "s.snap"), "--out", "")
	require.Error(t, err)
	assert.ErrorContains(t, err, "--out: empty")
	_, err = runCLI(t, "snapshot", "restore", filepath.Join(dir, "s.snap"), "qemu-cayman", "--out", "")
	require.Error(t, err)
	assert.ErrorContains(t, err, "--out: empty")
}
