package scenario

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/memlimit"
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
		{"1024 what-if Trn3 devices", "name: x\nsystem: {arch: mariana, what_if: true, devices: 1024}\nsteps:\n  - snapshot: {save: s.snap}\n", limit(600), 0,
			"x.yaml: steps[0] (snapshot): saving the system of 1024 devices (at least 398.3 KiB of state a device) needs about 706.3 MiB of memory, more than the limit of 600 MiB (test)"},
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
