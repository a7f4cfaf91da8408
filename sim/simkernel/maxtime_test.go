package simkernel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/units"
)

// TestMaxTimeIsUnitsLimit pins the engine's limit to the one checked
// conversion's.
func TestMaxTimeIsUnitsLimit(t *testing.T) {
	assert.Equal(t, units.MaxTimePS, uint64(MaxTime))
}

// TestEngineRefusesToPassMaxTime: no run, schedule or advance takes the
// clock past MaxTime; each is refused with ErrTimeOverflow and changes
// nothing (issue 13 item 7: the clock used to saturate at 2^64-1 for good).
func TestEngineRefusesToPassMaxTime(t *testing.T) {
	e, id, log := newTestEngine(t)
	require.NoError(t, e.Schedule(MaxTime, id, 1), "an event at MaxTime is allowed")
	tests := []struct {
		name string
		run  func() error
	}{
		{"schedule after MaxTime", func() error { return e.Schedule(MaxTime+1, id, 0) }},
		{"schedule at 2^64-1", func() error { return e.Schedule(Time(1<<64-1), id, 0) }},
		{"after past MaxTime", func() error { return e.After(MaxTime+1, id, 0) }},
		{"run to past MaxTime", func() error { _, err := e.RunTo(MaxTime + 1); return err }},
		{"run for past MaxTime", func() error { _, err := e.RunFor(MaxTime + 1); return err }},
		{"run for 2^64-1", func() error { _, err := e.RunFor(Time(1<<64 - 1)); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.run(), ErrTimeOverflow)
			assert.Zero(t, e.Now())
			assert.Equal(t, 1, e.Pending())
		})
	}
	assert.Zero(t, e.RunUntil(MaxTime+1), "RunUntil past MaxTime runs nothing")
	assert.Zero(t, e.Now())

	ran, err := e.RunFor(MaxTime - 10)
	require.NoError(t, err)
	assert.Zero(t, ran)
	assert.Equal(t, Time(10), e.Room())
	_, err = e.RunFor(11)
	require.ErrorIs(t, err, ErrTimeOverflow)
	assert.Equal(t, MaxTime-10, e.Now(), "a refused run leaves the clock")
	require.ErrorIs(t, e.After(11, id, 0), ErrTimeOverflow)
	ran, err = e.RunFor(10)
	require.NoError(t, err)
	assert.Equal(t, 1, ran)
	assert.Equal(t, MaxTime, e.Now())
	assert.Len(t, log.log, 1)
	assert.Zero(t, e.Room())
	_, err = e.RunFor(1)
	require.ErrorIs(t, err, ErrTimeOverflow)
	ran, err = e.RunFor(0)
	require.NoError(t, err, "standing still at MaxTime is allowed")
	assert.Zero(t, ran)
}
