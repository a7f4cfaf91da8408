package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRestoreReportsTheSnapshotsTime: a restore step reports the virtual
// time the snapshot holds, the time its save step reported, not the time
// after the runtime has brought the restored system up again (until
// 2026-12-07 it reported that, 10.8 µs later on two Trn2 devices, as the
// snapshot's time).
func TestRestoreReportsTheSnapshotsTime(t *testing.T) {
	dir := t.TempDir()
	doc := "name: x\nsystem: {arch: cayman, devices: 2, mode: timing, buffer_bytes: 4M}\nsteps:\n" +
		"  - collective: {op: all_reduce, algo: ring, size: 1M}\n" +
		"  - snapshot: {save: s.snap}\n" +
		"  - snapshot: {restore: s.snap}\n"
	_, err := runDoc(t, dir, doc, Options{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	saved := regexp.MustCompile(`system saved at (\S+) to s\.snap`).FindStringSubmatch(string(b))
	restored := regexp.MustCompile(`system restored from s\.snap, saved at (\S+);`).FindStringSubmatch(string(b))
	require.Len(t, saved, 2, "%s", b)
	require.Len(t, restored, 2, "%s", b)
	assert.Equal(t, saved[1], restored[1], "the restore reports the snapshot's time")
}
