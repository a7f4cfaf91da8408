package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunNameOfFileAndShipped: a bare word that names both a file in the
// working folder and a shipped scenario is refused, saying how to name
// either; ./NAME runs the file. Until 2026-12-07 the file ran, with no
// word that the shipped scenario of that name did not.
func TestRunNameOfFileAndShipped(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	doc := "name: mine\nsystem: {arch: cayman, devices: 2}\nsteps:\n  - collective: {op: all_reduce, size: 4K}\n"
	for _, name := range []string{"default", "default.yaml"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644))
		_, err := runCLI(t, "run", name, "--out", filepath.Join(dir, "out"))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "names both a file here and the shipped scenario default: give ./"+name+" to run the file", name)
		out, err := runCLI(t, "run", "./"+name, "--out", filepath.Join(dir, "out"))
		require.NoError(t, err, name)
		assert.Contains(t, out, "scenario mine", name)
		require.NoError(t, os.Remove(filepath.Join(dir, name)))
	}
}

// TestRunSummaryFabricBytesInFlight: the summary line's bytes over the
// fabric are counted when booked on the links, so a run stopped with writes
// in flight (a collective timing out on 1 B/s links, which fails the run)
// says they were sent and until when writes are in flight; a run whose
// writes have all landed says "N bytes over the fabric". Until 2026-12-07
// the stopped run read "917516 bytes over the fabric", and then "917516
// bytes sent" until a rank's transfers took 5 engines, not 7: a 128 KiB
// write on each engine and 12 bytes of control writes are sent when it
// stops.
func TestRunSummaryFabricBytesInFlight(t *testing.T) {
	dir := t.TempDir()
	const doc = "name: slow\nsystem: {arch: cayman, devices: 2, mode: timing, buffer_bytes: 4M%s}\nsteps:\n  - collective: {op: all_reduce, algo: ring, size: 1M}\n"
	file := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(doc, "")), 0o644))
	out, err := runCLI(t, "run", file, "--out", filepath.Join(dir, "out"))
	require.NoError(t, err)
	assert.Regexp(t, `scenario slow: 2 devices, 1 step, virtual time \S+, \d+ bytes over the fabric\n`, out)
	assert.NotContains(t, out, "in flight")

	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(doc, ", timing: {link_bw_gbs: 1e-9}")), 0o644))
	out, err = runCLI(t, "run", file, "--out", filepath.Join(dir, "out"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not done after 10s")
	assert.Regexp(t, `scenario slow FAILED after 0 of 1 step: 2 devices, virtual time \S+, 655372 bytes sent over the fabric, writes in flight until \S+\n`, out)
}
