package scenario

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestSnapshotSaveMemoryRefused: a snapshot save over --mem-limit is
// refused with memlimit.ErrTooLarge, the estimate and the limit, and
// writes nothing: one that cannot fit whatever the system holds (1,024
// Trn3 devices' idle state) before anything is built, and one whose
// system holds more memory than the limit leaves room for (a restored
// system with 64 MiB copied on its devices) when the step comes, before
// anything is copied. With the limit raised, the second saves.
func TestSnapshotSaveMemoryRefused(t *testing.T) {
	big := t.TempDir()
	_, err := runDoc(t, big, "name: big\nsystem: {arch: cayman, devices: 2, boot: false, reset: false, buffer_bytes: 128M}\n"+
		"steps:\n  - dma_copy: {bytes: 64M}\n  - snapshot: {save: big.snap}\n", Options{})
	require.NoError(t, err)
	limit := func(m uint64) memlimit.Limit { return memlimit.Limit{Bytes: m << 20, Source: "test"} }
	for _, tc := range []struct {
		name, doc string
		limit     memlimit.Limit
		built     int // systems built before the refusal
		want      string
	}{
		{"1024 what-if Trn3 devices", "name: x\nsystem: {arch: mariana, what_if: true, devices: 1024}\nsteps:\n  - snapshot: {save: s.snap}\n", limit(300), 0,
			"x.yaml: steps[0] (snapshot): saving the system of 1024 devices (at least 57 KiB of state a device) needs about 365 MiB of memory, more than the limit of 300 MiB (test)"},
		{"a restored system with 64 MiB on its devices", "name: x\nsystem: {arch: cayman, devices: 2, boot: false, reset: false, buffer_bytes: 128M}\n" +
			"steps:\n  - snapshot: {restore: " + filepath.Join(big, "big.snap") + "}\n  - snapshot: {save: s.snap}\n", limit(100), 1,
			"steps[1] (snapshot): saving the system of 2 devices to s.snap (a copy of its state and the compressor's buffers, "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built := countBuilds(t)
			dir := t.TempDir()
			_, err := runDoc(t, dir, tc.doc, Options{MemLimit: tc.limit})
			require.Error(t, err)
			assert.ErrorIs(t, err, memlimit.ErrTooLarge)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "more than the limit of "+memlimit.Human(tc.limit.Bytes)+" (test)")
			assert.Equal(t, tc.built, *built)
			assert.NoFileExists(t, filepath.Join(dir, "s.snap"))
			noTemps(t, dir)
			if tc.built > 0 {
				_, err = runDoc(t, dir, tc.doc, Options{MemLimit: limit(1 << 10)})
				require.NoError(t, err)
				assert.FileExists(t, filepath.Join(dir, "s.snap"))
			}
		})
	}
}

// TestSnapshotLoadWithinMemLimit: a snapshot whose header declares more
// than the memory limit leaves (less fabric.LoadBuffers) — a decoded
// length or a payload of 3 GiB, under the loader's default 4 GiB — is
// refused from its header, before anything is decompressed, with
// memlimit.ErrTooLarge and the limit; a tighter --max-size stays the
// loader's own refusal; the file as saved loads within the limit.
func TestSnapshotLoadWithinMemLimit(t *testing.T) {
	dir := t.TempDir()
	_, err := runDoc(t, dir, "name: s\nsystem: {arch: cayman, devices: 2, boot: false, reset: false, buffer_bytes: 1M}\n"+
		"steps:\n  - dma_copy: {bytes: 4K}\n  - snapshot: {save: s.snap}\n", Options{})
	require.NoError(t, err)
	file, err := os.ReadFile(filepath.Join(dir, "s.snap"))
	require.NoError(t, err)
	// crafted is the file with the header's u64 at off set to v.
	crafted := func(off int, v uint64) string {
		b := bytes.Clone(file)
		binary.LittleEndian.PutUint64(b[off:], v)
		path := filepath.Join(t.TempDir(), "crafted.snap")
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return path
	}
	intact := filepath.Join(dir, "s.snap")
	gib := memlimit.Limit{Bytes: 1 << 30, Source: "test"}
	for _, tc := range []struct {
		name    string
		path    string
		o       fabric.LoadOptions
		limit   memlimit.Limit
		want    string
		tooMuch bool // refused by the memory limit (memlimit.ErrTooLarge)
	}{
		{"decoded length of 3 GiB", crafted(24, 3<<30), fabric.LoadOptions{}, gib,
			"loading within the memory limit of 1 GiB (test), less the loader's 10 MiB of buffers (fabric.LoadBuffers): fabric snapshot: the header declares 3221225472 bytes decoded, over the limit of 1063256064 bytes", true},
		{"payload of 3 GiB", crafted(16, 3<<30), fabric.LoadOptions{}, gib,
			"payload of 3221225472 bytes, over the limit of 1063256064 bytes", true},
		{"--max-size tighter", crafted(24, 3<<30), fabric.LoadOptions{MaxBytes: 1 << 20}, gib,
			"the header declares 3221225472 bytes decoded, over the limit of 1048576 bytes", false},
		{"a limit below the buffers", intact, fabric.LoadOptions{}, memlimit.Limit{Bytes: 1 << 20, Source: "test"},
			"over the limit of 1 bytes", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := LoadSnapshotWithin(tc.path, tc.o, tc.limit)
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			assert.ErrorIs(t, err, fabric.ErrSnapshotLimit)
			assert.Contains(t, err.Error(), tc.want)
			if tc.tooMuch {
				assert.ErrorIs(t, err, memlimit.ErrTooLarge)
			} else {
				assert.NotErrorIs(t, err, memlimit.ErrTooLarge)
			}
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "refused from the header, before decompressing")
		})
	}
	base, err := LoadSnapshotWithin(intact, fabric.LoadOptions{}, gib)
	require.NoError(t, err)
	assert.Equal(t, 2, base.System.Topology().Devices)
}
