package scenario

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A restore takes the system back to the snapshot's time, before slices
// the trace already holds. The restored system's tracks are named apart,
// so the run after the restore does not overlay the one before it on the
// same tracks (it did: the second all-reduce's 216 slices lay on the
// first's, at the same times, and nothing in the trace said so).
func TestTraceRestoredSystemOnTracksOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	doc := "name: t\n" + small + `steps:
  - snapshot: {save: s.snap}
  - collective: {op: all_reduce, algo: ring, size: 64K}
  - snapshot: {restore: s.snap}
  - collective: {op: all_reduce, algo: ring, size: 64K}
outputs: {trace: trace.json}
`
	_, err := runDoc(t, dir, doc, Options{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	require.NoError(t, err)
	var tr struct {
		TraceEvents []struct {
			Name string            `json:"name"`
			Ph   string            `json:"ph"`
			Ts   json.Number       `json:"ts"`
			Dur  json.Number       `json:"dur"`
			Tid  int               `json:"tid"`
			Args map[string]string `json:"args"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(b, &tr))
	restored := 0
	type span struct{ ts, end uint64 }
	byTrack := map[int][]span{}
	for _, e := range tr.TraceEvents {
		switch e.Ph {
		case "M":
			if e.Name == "thread_name" && strings.HasPrefix(e.Args["name"], "restore at step 2: neuron") {
				restored++
			}
		case "X":
			ts, d := picos(t, e.Ts), picos(t, e.Dur)
			byTrack[e.Tid] = append(byTrack[e.Tid], span{ts, ts + d})
		}
	}
	assert.Positive(t, restored, "the restored system's tracks are named after the step, as the report numbers it")
	for tid, ss := range byTrack {
		for i := 1; i < len(ss); i++ { // sorted by start
			assert.LessOrEqual(t, ss[i-1].end, ss[i].ts, "track %d: a slice starts inside the one before it", tid)
		}
	}
}

// picos reads a trace time, microseconds with six decimals, as picoseconds.
func picos(t *testing.T, n json.Number) uint64 {
	t.Helper()
	us, frac, ok := strings.Cut(string(n), ".")
	require.True(t, ok && len(frac) == 6, "time %s: want six decimals", n)
	v, err := strconv.ParseUint(us+frac, 10, 64)
	require.NoError(t, err)
	return v
}

// TestTraceRestoreTracksNumberedAsTheReport: a restored system's tracks are
// named after the step that restored it as the report numbers it ("step 2:
// snapshot" → "restore at step 2: neuron0 …"), alike whether the scenario
// runs on its own or on a snapshot the command line restores first
// (`neuronsim snapshot restore FILE SCENARIO`), whose system the file's
// steps start on: its tracks are named as a run without it names them.
// Until 2026-12-07 the tracks were "restore N" counting every restore run,
// the command line's too: on a snapshot the file's steps 2 and 4 were
// "restore 2" and "restore 3", and the file's first steps "restore 1".
func TestTraceRestoreTracksNumberedAsTheReport(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "base.snap")
	_, err := runDoc(t, dir, "name: base\n"+small+"steps:\n  - snapshot: {save: "+snap+"}\n", Options{})
	require.NoError(t, err)
	doc := "name: t\n" + small + `steps:
  - snapshot: {save: s.snap}
  - collective: {op: all_reduce, algo: ring, size: 64K}
  - snapshot: {restore: s.snap}
  - collective: {op: all_reduce, algo: ring, size: 64K}
  - snapshot: {restore: s.snap}
  - collective: {op: all_reduce, algo: ring, size: 64K}
outputs: {trace: trace.json}
`
	want := []string{"", "restore at step 2: ", "restore at step 4: "}
	for _, onSnapshot := range []bool{false, true} {
		out := t.TempDir()
		var p *Parsed
		if onSnapshot {
			p = parseOnSnapshot(t, snap, doc, "")
		} else {
			p, err = Parse(filepath.Join(out, "x.yaml"), []byte(doc))
			require.NoError(t, err)
		}
		_, err := p.Run(Options{OutDir: out})
		require.NoError(t, err, "on a snapshot: %v", onSnapshot)
		report, err := os.ReadFile(filepath.Join(out, "report.txt"))
		require.NoError(t, err)
		for _, h := range []string{"\nstep 2: snapshot\n", "\nstep 4: snapshot\n"} {
			assert.Contains(t, string(report), h, "on a snapshot: %v", onSnapshot)
		}
		assert.Equal(t, want, sliceEpochs(t, filepath.Join(out, "trace.json")), "on a snapshot: %v", onSnapshot)
	}
}

// sliceEpochs returns the prefixes before "neuron" of the trace's tracks
// that hold slices, sorted.
func sliceEpochs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var tr struct {
		TraceEvents []struct {
			Name string            `json:"name"`
			Ph   string            `json:"ph"`
			Tid  int               `json:"tid"`
			Args map[string]string `json:"args"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(b, &tr))
	names := map[int]string{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "M" && e.Name == "thread_name" {
			epoch, _, ok := strings.Cut(e.Args["name"], "neuron")
			require.True(t, ok, "track %q names no device", e.Args["name"])
			names[e.Tid] = epoch
		}
	}
	seen := map[string]bool{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" {
			seen[names[e.Tid]] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
