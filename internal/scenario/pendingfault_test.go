package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFaultAfterTheLastStep: a run that ends before a fault it scheduled
// fails, naming the step and the fault's time against the run's end — the
// steps after it ran on a system without the fault, whatever the scenario
// meant — and writes no outputs but the report; a fault that happens, or
// one a later save carries into its snapshot (reported, and happening in
// the run that restores it), lets the run succeed.
func TestFaultAfterTheLastStep(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	const sys = "system: {arch: mariana, devices: 4, reset: false}\n"
	for _, tc := range []struct {
		name, steps string
		err         []string // empty: the run succeeds
		report      string   // a line the report holds
	}{
		{"never happens", "  - fault: {kind: link_down, device: 1, to: l1-sw0, in: 1ms}\n  - collective: {op: all_reduce, size: 64K}\n",
			[]string{"steps[0] (fault): link_down of neuron1:0→l1-sw0:1 (in-server) at ", "after the last step ended at ", "the run ended before the fault"}, "FAILED"},
		{"device reset never happens", "  - fault: {kind: device_reset, device: 2, in: 5s}\n",
			[]string{"steps[0] (fault): device_reset of neuron2 at 6.00002s, 5s after the last step ended at 1.00002s"}, "FAILED"},
		{"happens", "  - fault: {kind: link_down, device: 1, to: l1-sw0, in: 1us}\n  - collective: {op: all_reduce, size: 64K, expect_error: \"links down\"}\n",
			nil, "virtual time"},
		{"carried by a snapshot", "  - fault: {kind: device_reset, device: 2, in: 5s}\n  - snapshot: {save: s.snap}\n",
			nil, "pending at the end: device_reset of neuron2 at 6.00002s, 4.9999808s after the last step ended at 1.0000392s (steps[0] (fault)), carried by the snapshot saved to s.snap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			doc := "name: x\n" + sys + "steps:\n" + tc.steps + "outputs: {report: r.txt, trace: t.json}\n"
			_, err := runDoc(t, dir, doc, Options{})
			if len(tc.err) == 0 {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrFaultNotHappened)
				for _, s := range tc.err {
					assert.Contains(t, err.Error(), s)
				}
			}
			_, terr := os.Stat(filepath.Join(dir, "t.json"))
			assert.Equal(t, len(tc.err) == 0, terr == nil, "the trace is written only by a run that succeeds: %v", terr)
			b, rerr := os.ReadFile(filepath.Join(dir, "r.txt"))
			require.NoError(t, rerr)
			assert.Contains(t, string(b), tc.report)
		})
	}
}

// TestRestoredPendingFault: a fault a restored snapshot carries, still
// pending when the run that restored it ends, was not the run's to
// schedule: the report says so and the run succeeds.
func TestRestoredPendingFault(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	const sys = "system: {arch: mariana, devices: 4, reset: false}\n"
	_, err := runDoc(t, dir, "name: a\n"+sys+"steps:\n  - fault: {kind: device_reset, device: 2, in: 5s}\n  - snapshot: {save: s.snap}\noutputs: {report: a.txt}\n", Options{})
	require.NoError(t, err)
	_, err = runDoc(t, dir, "name: b\n"+sys+"steps:\n  - snapshot: {restore: s.snap}\noutputs: {report: b.txt}\n", Options{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "b.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "pending at the end: device_reset of neuron2 at 6.00002s, ")
	assert.Contains(t, string(b), ", scheduled before the restored snapshot was taken")
}
