package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
)

// TestEngineState: exec's table says done only for an engine whose done
// bit is set; one a timed-out run left behind says NOT DONE with the bits
// it holds.
func TestEngineState(t *testing.T) {
	for _, tc := range []struct {
		status uint32
		want   string
	}{
		{hwisa.StatusDone, "done"},
		{hwisa.StatusRunning | hwisa.StatusWaiting, "NOT DONE (running, waiting)"},
		{hwisa.StatusRunning | hwisa.StatusStalled, "NOT DONE (running, stalled)"},
		{0, "NOT DONE (idle)"},
	} {
		assert.Equal(t, tc.want, engineState(tc.status), "status %#x", tc.status)
	}
}
