package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
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
			if e.Name == "thread_name" && strings.HasPrefix(e.Args["name"], "restore 1: neuron") {
				restored++
			}
		case "X":
			ts, d := picos(t, e.Ts), picos(t, e.Dur)
			byTrack[e.Tid] = append(byTrack[e.Tid], span{ts, ts + d})
		}
	}
	assert.Positive(t, restored, "the restored system's tracks are named as such")
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
