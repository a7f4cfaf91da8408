package scenario

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSweepMinZero: a sweep's min: 0 takes the command line's -b 0 rule
// (nccom.CheckRange): with a step it runs, its first size one granule as
// every size below the granule does; with a factor, which would never grow
// it, it is refused at min; max below min is refused at max. Until
// 2026-12-07 min: 0 was refused ("min must be positive and max at least
// min", at max) while `fabric sweep -b 0` ran.
func TestSweepMinZero(t *testing.T) {
	const head = "name: x\nsystem: {arch: cayman, devices: 2, mode: timing, buffer_bytes: 4M}\nsteps:\n"
	dir := t.TempDir()
	sum, err := runDoc(t, dir, head+"  - sweep: {op: all_reduce, min: 0, max: 4K, step: 1K}\n", Options{})
	require.NoError(t, err)
	require.Len(t, sum.Sweeps, 1)
	var sizes []int64
	for _, r := range sum.Sweeps[0].Rows {
		sizes = append(sizes, r.Size)
	}
	assert.Equal(t, []int64{4, 1024, 2048, 3072, 4096}, sizes, "0 runs one granule (an fp32 element)")

	for _, tc := range []struct{ step, want string }{
		{"{op: all_reduce, min: 0, max: 4K, factor: 2}", "steps[0].sweep.min: 0: factor 2 would never grow it: give at least 1 byte, or step instead"},
		{"{op: all_reduce, min: 8K, max: 4K}", "steps[0].sweep.max: 4KiB: below min (8KiB)"},
	} {
		_, err := Parse(filepath.Join(t.TempDir(), "x.yaml"), []byte(head+"  - sweep: "+tc.step+"\n"))
		require.Error(t, err, tc.step)
		assert.ErrorContains(t, err, tc.want)
	}
}
