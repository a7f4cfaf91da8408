package scenario

import (
	"fmt"
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

// TestOutputNamingADirectoryRefused: an output key or a snapshot save
// naming a directory (a trailing slash) is refused at its key when the file
// is read; until 2026-12-07 the slash was dropped as the path was joined to
// the output directory and a file of that name was written.
func TestOutputNamingADirectoryRefused(t *testing.T) {
	const head = "name: x\nsystem: {arch: cayman, devices: 2, mode: timing, buffer_bytes: 4M}\nsteps:\n" +
		"  - sweep: {op: all_reduce, min: 8, max: 16}\n"
	for _, tc := range []struct{ doc, want string }{
		{head + "outputs: {json: sub/}\n", "outputs.json: sub/: names a directory"},
		{head + "outputs: {report: r/.}\n", "outputs.report: r/.: names a directory"},
		{head + "outputs: {trace: ..}\n", "outputs.trace: ..: names a directory"},
		{head + "  - snapshot: {save: snaps/}\n", "steps[1].snapshot.save: snaps/: names a directory"},
	} {
		_, err := Parse(filepath.Join(t.TempDir(), "x.yaml"), []byte(tc.doc))
		require.Error(t, err, tc.doc)
		assert.ErrorContains(t, err, tc.want)
	}
}

// TestResetOfEveryCoreSaysDeviceReset: a reset step listing every
// NeuronCore of the device is a whole-device reset (the runtime sends the
// driver's whole-device map, bringup.Device.ResetTPBs), which clears the
// device's registers as `reset: {device: N}` does; the report says so
// rather than calling it a reset of those NeuronCores (until 2026-12-07 it
// read "NeuronCores [0 1 2 3 4 5 6 7] reset" while register 0x100 read 0
// after it).
func TestResetOfEveryCoreSaysDeviceReset(t *testing.T) {
	dir := t.TempDir()
	doc := "name: x\nsystem: {arch: cayman, devices: 1, mode: timing, buffer_bytes: 4M}\nsteps:\n" +
		"  - csr_write: {device: 0, offset: 0x100, value: 5}\n" +
		"  - reset: {device: 0, tpbs: [0, 1, 2, 3, 4, 5, 6, 7]}\n" +
		"  - csr_read: {device: 0, offset: 0x100, expect: 0}\n" +
		"  - reset: {device: 0, tpbs: [1]}\n"
	_, err := runDoc(t, dir, doc, Options{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "neuron0: device reset (tpbs lists every NeuronCore, 0..7) in 400.0056ms")
	assert.Contains(t, string(b), "neuron0: NeuronCores [1] reset in 100.003ms")
}

// TestFabricBytesInFlightAtTheEnd: the fabric counts a write's bytes when
// it is booked on the links, not when it lands, so a run that ends with
// writes in flight (a collective that timed out on 1 B/s links) says the
// bytes were sent and until when writes are in flight; one whose writes
// have all landed reports the bytes alone. Until 2026-12-07 the timed-out
// collective's 917,516 bytes were reported as "fabric bytes 917516", as if
// they had crossed.
func TestFabricBytesInFlightAtTheEnd(t *testing.T) {
	const sys = "name: x\nsystem: {arch: cayman, devices: 2, mode: timing, buffer_bytes: 4M%s}\nsteps:\n"
	for _, tc := range []struct {
		name, timing, step string
		inFlight           bool
	}{
		{"complete", "", "  - collective: {op: all_reduce, algo: ring, size: 1M}\n", false},
		{"timed out", ", timing: {link_bw_gbs: 1e-9}", "  - collective: {op: all_reduce, algo: ring, size: 1M, expect_error: \"not done\"}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sum, err := runDoc(t, dir, fmt.Sprintf(sys, tc.timing)+tc.step, Options{})
			require.NoError(t, err)
			require.NotZero(t, sum.FabricBytes)
			b, err := os.ReadFile(filepath.Join(dir, "report.txt"))
			require.NoError(t, err)
			if !tc.inFlight {
				assert.Zero(t, sum.InFlightUntil)
				assert.Contains(t, string(b), fmt.Sprintf("fabric bytes %d, 1 of 1 steps done", sum.FabricBytes))
				assert.NotContains(t, string(b), "in flight")
				return
			}
			assert.Greater(t, sum.InFlightUntil, sum.VirtualTime, "the writes land after the run's end")
			assert.Contains(t, string(b), fmt.Sprintf("fabric bytes %d sent, writes in flight until %v, 1 of 1 steps done", sum.FabricBytes, sum.InFlightUntil))
		})
	}
}
