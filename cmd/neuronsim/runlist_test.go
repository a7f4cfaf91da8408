package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunListRefusesWhatItWouldNotRun: `run --list` lists the shipped
// scenarios and runs none, so a scenario, --out or --mem-limit given with
// it is refused rather than ignored (until 2026-12-07 `run --list x.yaml`
// listed and ran nothing, without a word).
func TestRunListRefusesWhatItWouldNotRun(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--list", "emu-mariana"},
		{"run", "--list", "--out", t.TempDir()},
		{"run", "--list", "--mem-limit", "1G"},
	} {
		_, err := runCLI(t, args...)
		require.Error(t, err, "%v", args)
		assert.ErrorContains(t, err, "--list runs nothing", "%v", args)
	}
	out, err := runCLI(t, "run", "--list")
	require.NoError(t, err)
	assert.Contains(t, out, "emu-mariana")
}
