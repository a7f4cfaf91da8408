package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSnapshotAfterFailedCollective: a collective that fails part-way (a
// link down under it) leaves programs on engines still waiting; a
// snapshot saved after it, restored, gives what going on from the save
// gives — the same later steps take the same device time and leave the
// same system, byte for byte — for each way the collective fails.
func TestSnapshotAfterFailedCollective(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	const sys = "system: {arch: mariana, devices: 8, mode: functional, reset: false, buffer_bytes: 4M}\n"
	for _, tc := range []struct {
		name, fail, after string
	}{
		{"link down",
			"  - fault: {kind: link_down, device: 5, to: l1-sw0, in: 60us}\n" +
				"  - collective: {op: all_reduce, algo: ring, size: 1M, expect_error: \"links down\"}\n",
			"  - fault: {kind: link_up, device: 5, to: l1-sw0}\n  - recover: {}\n" +
				"  - collective: {op: all_reduce, algo: ring, size: 1M}\n  - dma_copy: {device: 5, bytes: 4K}\n"},
		{"device reset",
			"  - fault: {kind: device_reset, device: 3, in: 60us}\n" +
				"  - collective: {op: all_reduce, algo: ring, size: 1M, expect_error: \"device 3 does not answer\"}\n",
			"  - recover: {}\n  - collective: {op: all_reduce, algo: ring, size: 1M}\n  - collective: {op: all_gather, size: 64K}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			saving := "name: saving\n" + sys + "steps:\n  - collective: {op: all_reduce, algo: ring, size: 1M}\n" + tc.fail +
				"  - snapshot: {save: mid.snap}\n" + tc.after + "  - snapshot: {save: end-saving.snap}\noutputs: {report: saving.txt}\n"
			restoring := "name: restoring\n" + sys + "steps:\n  - snapshot: {restore: mid.snap}\n" + tc.after +
				"  - snapshot: {save: end-restoring.snap}\noutputs: {report: restoring.txt}\n"
			for _, doc := range []string{saving, restoring} {
				_, err := runDoc(t, dir, doc, Options{})
				require.NoError(t, err)
			}
			// The report of the steps after the save and after the restore.
			tail := func(name, from string) string {
				b, err := os.ReadFile(filepath.Join(dir, name))
				require.NoError(t, err)
				s := string(b)
				i := strings.Index(s, from)
				require.GreaterOrEqual(t, i, 0, "%s in %s", from, name)
				s = s[i:]
				s = s[strings.IndexByte(s, '\n')+1:]
				// What each step did and the run's time and traffic, not
				// its step numbers or files.
				var keep []string
				for _, line := range strings.Split(s, "\n") {
					switch {
					case strings.HasPrefix(line, "  ") && !strings.Contains(line, "  (this report)") && !strings.HasSuffix(line, " bytes"):
						keep = append(keep, line)
					case strings.HasPrefix(line, "virtual time"):
						keep = append(keep, line[:strings.LastIndex(line, ",")])
					}
				}
				return strings.Join(keep, "\n")
			}
			a, b := tail("saving.txt", "system saved at"), tail("restoring.txt", "system restored from")
			a = strings.ReplaceAll(a, "end-saving.snap", "end.snap")
			b = strings.ReplaceAll(b, "end-restoring.snap", "end.snap")
			require.NotEmpty(t, a)
			assert.Equal(t, a, b, "the steps after the save and after the restore")
			ea, err := os.ReadFile(filepath.Join(dir, "end-saving.snap"))
			require.NoError(t, err)
			eb, err := os.ReadFile(filepath.Join(dir, "end-restoring.snap"))
			require.NoError(t, err)
			assert.True(t, string(ea) == string(eb), "the system saved at the end, after the save and after the restore")
		})
	}
}

// TestRestoreOverAFailedCollective: a snapshot restored by a step of a run
// in which a collective failed part-way is the snapshot's system alone —
// nothing the failed collective held on the system left behind follows it
// — so the steps after the restore do what they do in a run that only
// restores it.
func TestRestoreOverAFailedCollective(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	const sys = "system: {arch: mariana, devices: 8, mode: functional, reset: false, buffer_bytes: 4M}\n"
	dir := t.TempDir()
	_, err := runDoc(t, dir, "name: clean\n"+sys+"steps:\n  - collective: {op: all_reduce, algo: ring, size: 1M}\n  - snapshot: {save: clean.snap}\n", Options{})
	require.NoError(t, err)
	after := "  - snapshot: {restore: clean.snap}\n  - collective: {op: all_reduce, algo: ring, size: 1M}\n  - dma_copy: {device: 5, bytes: 4K}\n"
	for _, tc := range []struct{ name, before string }{
		{"link down", "  - fault: {kind: link_down, device: 5, to: l1-sw0, in: 60us}\n" +
			"  - collective: {op: all_reduce, algo: ring, size: 1M, expect_error: \"links down\"}\n"},
		{"device reset", "  - fault: {kind: device_reset, device: 3, in: 60us}\n" +
			"  - collective: {op: all_reduce, algo: ring, size: 1M, expect_error: \"device 3 does not answer\"}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failed := "name: failed\n" + sys + "steps:\n  - collective: {op: all_reduce, algo: ring, size: 1M}\n" + tc.before + after +
				"  - snapshot: {save: end-failed.snap}\noutputs: {report: failed.txt}\n"
			only := "name: only\n" + sys + "steps:\n" + after + "  - snapshot: {save: end-only.snap}\noutputs: {report: only.txt}\n"
			for _, doc := range []string{failed, only} {
				_, err := runDoc(t, dir, doc, Options{})
				require.NoError(t, err)
			}
			ea, err := os.ReadFile(filepath.Join(dir, "end-failed.snap"))
			require.NoError(t, err)
			eb, err := os.ReadFile(filepath.Join(dir, "end-only.snap"))
			require.NoError(t, err)
			assert.True(t, string(ea) == string(eb), "the system saved at the end, after a restore over a failed collective and after a restore alone")
		})
	}
}
