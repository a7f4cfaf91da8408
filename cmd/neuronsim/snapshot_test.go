package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/memlimit"
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

// TestSnapshotSaveMemLimit: `snapshot save` over --mem-limit is refused
// with the estimate and the limit, and FILE is not written: 1,024 Trn3
// what-if devices before anything is built, a system restored with 64 MiB
// on its devices when the save comes, before anything is copied.
func TestSnapshotSaveMemLimit(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.snap")
	bigDoc := filepath.Join(dir, "big.yaml")
	const sys = "system: {arch: cayman, devices: 2, boot: false, reset: false, buffer_bytes: 128M}\n"
	require.NoError(t, os.WriteFile(bigDoc, []byte("name: big\n"+sys+"steps:\n  - dma_copy: {bytes: 64M}\n"), 0o644))
	out, err := runCLI(t, "snapshot", "save", bigDoc, big, "--out", filepath.Join(dir, "big"))
	require.NoError(t, err, out)
	for _, tc := range []struct {
		name, doc, limit, want string
	}{
		{"1024 what-if Trn3 devices", "name: x\nsystem: {arch: mariana, what_if: true, devices: 1024}\nsteps:\n  - bringup:\n", "300M",
			"saving the system of 1024 devices (at least 57 KiB of state a device) needs about 365 MiB of memory, more than the limit of 300 MiB (--mem-limit)"},
		{"a restored system with 64 MiB on its devices", "name: x\n" + sys + "steps:\n  - snapshot: {restore: " + big + "}\n", "100M",
			"saving the system of 2 devices to " + filepath.Join(dir, "s.snap") + " (a copy of its state and the compressor's buffers, "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := filepath.Join(t.TempDir(), "x.yaml")
			require.NoError(t, os.WriteFile(doc, []byte(tc.doc), 0o644))
			snap := filepath.Join(dir, "s.snap")
			_, err := runCLI(t, "snapshot", "save", doc, snap, "--out", t.TempDir(), "--mem-limit", tc.limit)
			require.Error(t, err)
			assert.ErrorIs(t, err, memlimit.ErrTooLarge)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "more than the limit of "+tc.limit[:3]+" MiB (--mem-limit)")
			assert.NoFileExists(t, snap)
		})
	}
}

// TestSnapshotRestoreMemLimit: `snapshot restore` of a file whose header
// declares a decoded length of 3 GiB (under the default --max-size of 4
// GiB) is refused from the header under --mem-limit 1G, with
// memlimit.ErrTooLarge and the limit.
func TestSnapshotRestoreMemLimit(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "sys.snap")
	out, err := runCLI(t, "snapshot", "save", "qemu-cayman", snap, "--out", filepath.Join(dir, "a"))
	require.NoError(t, err, out)
	b, err := os.ReadFile(snap)
	require.NoError(t, err)
	binary.LittleEndian.PutUint64(b[24:], 3<<30)
	require.NoError(t, os.WriteFile(snap, b, 0o644))
	steps := filepath.Join(dir, "steps.yaml")
	require.NoError(t, os.WriteFile(steps, []byte("name: steps\nsteps:\n  - dma_copy: {bytes: 4K}\n"), 0o644))
	_, err = runCLI(t, "snapshot", "restore", snap, steps, "--out", filepath.Join(dir, "b"), "--mem-limit", "1G")
	require.Error(t, err)
	assert.ErrorIs(t, err, memlimit.ErrTooLarge)
	assert.Contains(t, err.Error(), "loading within the memory limit of 1 GiB (--mem-limit), less the loader's 10 MiB of buffers (fabric.LoadBuffers): fabric snapshot: the header declares 3221225472 bytes decoded, over the limit of 1063256064 bytes")
}
