package scenario

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestRestoreRefusesTimingItDoesNotHold: a scenario that restores a
// snapshot — by `neuronsim snapshot restore` (a Base) or by a
// `snapshot: {restore: …}` step — and gives a topology, model or fabric
// timing key the snapshot's system does not hold is refused at the key,
// with the snapshot's value; a key that agrees, and the executor's keys
// (which a snapshot does not carry), are accepted.
func TestRestoreRefusesTimingItDoesNotHold(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	const timed = "system: {arch: cayman, devices: 2, boot: false, reset: false, buffer_bytes: 1M, timing: {link_bw_gbs: 50, link_latency_ns: 300}}\n"
	_, err := runDoc(t, dir, "name: a\n"+timed+"steps:\n  - snapshot: {save: sys.snap}\n", Options{})
	require.NoError(t, err)
	path := filepath.Join(dir, "sys.snap")
	for _, tc := range []struct {
		name, sys string // the scenario's system section's keys (besides the step form's own)
		want      string // "" when accepted
	}{
		{"bandwidth differs", "timing: {link_bw_gbs: 60}", "system.timing.link_bw_gbs: 60, but the snapshot %s holds a system with links of bandwidth 50 GB/s (ring)"},
		{"bandwidth agrees", "timing: {link_bw_gbs: 50}", ""},
		{"latency differs", "timing: {link_latency_ns: 500}", "system.timing.link_latency_ns: 500, but the snapshot %s holds a system with links of latency 300 ns (ring)"},
		{"latency agrees", "timing: {link_latency_ns: 300.0}", ""},
		{"endpoint delay differs", "timing: {endpoint_delay_ns: 100}", "system.timing.endpoint_delay_ns: 100, but the snapshot %s holds a system with an endpoint delay of 500 ns"},
		{"switch latency differs", "timing: {switch_latency_ns: 1}", "system.timing.switch_latency_ns: 1, but the snapshot %s holds a system with a switch latency of 300 ns"},
		{"chunks differ", "timing: {chunk_bytes: 8K}", "system.timing.chunk_bytes: 8K, but the snapshot %s holds a system with chunks of 4096 bytes"},
		{"model differs", "model: free", "system.model: free, but the snapshot %s holds a system with model aware"},
		{"topology differs", "topology: chain", "system.topology: chain, but the snapshot %s holds a system with topology ring"},
		{"topology auto", "topology: auto", ""},
		{"executor keys are the runtime's", "timing: {engines: 2, launch_cost_ns: 10}", ""},
	} {
		t.Run(tc.name+"/base", func(t *testing.T) {
			base, err := LoadSnapshot(path, fabric.LoadOptions{})
			require.NoError(t, err)
			_, err = ParseWith("more.yaml", []byte("name: more\nsystem: {"+tc.sys+"}\n"), base)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrStrict)
			assert.Contains(t, err.Error(), "more.yaml:2:")
			assert.Contains(t, err.Error(), fmtWant(tc.want, path))
		})
		t.Run(tc.name+"/step", func(t *testing.T) {
			doc := "name: b\nsystem: {arch: cayman, devices: 2, boot: false, reset: false, buffer_bytes: 1M, " + tc.sys + "}\n" +
				"steps:\n  - snapshot: {restore: " + path + "}\n  - dma_copy: {bytes: 4K}\n"
			_, err := runDoc(t, t.TempDir(), doc, Options{})
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "steps[0] (snapshot): ")
			assert.Contains(t, err.Error(), fmtWant(tc.want, path))
		})
	}
}

// fmtWant puts the snapshot's path into a wanted message.
func fmtWant(want, path string) string { return fmt.Sprintf(want, path) }

// TestRestoreStepRefusesEFAItDoesNotHold: a `snapshot: {restore: …}` step
// refuses a snapshot whose EFA network is not the one system.efa makes,
// at system.efa with both networks, as the command line's restore does.
func TestRestoreStepRefusesEFAItDoesNotHold(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	const sys = "system: {arch: cayman, devices: 2, nodes: 2, boot: false, reset: false, buffer_bytes: 1M, "
	_, err := runDoc(t, dir, "name: a\n"+sys+"efa: {bandwidth: 50GiB/s}}\nsteps:\n  - snapshot: {save: efa.snap}\n", Options{})
	require.NoError(t, err)
	path := filepath.Join(dir, "efa.snap")
	for _, tc := range []struct {
		name, efa, want string // want: "" when accepted
	}{
		{"bandwidth differs", "efa: {bandwidth: 100GiB/s}", "system.efa: network rail, oversubscription 1, bandwidth 107374182400 B/s"},
		{"bandwidth agrees", "efa: {bandwidth: 50GiB/s}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "name: b\n" + sys + tc.efa + "}\nsteps:\n  - snapshot: {restore: " + path + "}\n"
			_, err := runDoc(t, t.TempDir(), doc, Options{})
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "steps[0] (snapshot): ")
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "but the snapshot "+path+" holds a system with an EFA network of network rail, oversubscription 1, bandwidth 53687091200 B/s")
		})
	}
}
