package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
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

// TestDeviceClockStopsBeforeMaxTime: a device's Sleep and its MMIO accesses
// are refused whole when they would pass MaxTime, and the device keeps
// working below it.
func TestDeviceClockStopsBeforeMaxTime(t *testing.T) {
	h := readyDev(t, hwarch.Cayman, 0)
	// The largest sleep the protocol ever allowed (2^63-1 ns) is refused.
	require.ErrorIs(t, h.d.Sleep(time.Duration(1<<63-1)), units.ErrRange)
	assert.Zero(t, h.d.Now())
	// ~1.8e16 ns, the value, fits units (it is under 2^62 ps only
	// once converted: 1.8e16 ns = 1.8e19 ps > 2^62) — refused too.
	require.ErrorIs(t, h.d.Sleep(time.Duration(18_000_000_000_000_000)), units.ErrRange)
	assert.Zero(t, h.d.Now())

	lat := h.readLatency()
	gap := lat + lat/2 // room for one read, not two
	h.sleep((MaxTime - gap).Duration())
	now := h.d.Now()
	require.LessOrEqual(t, uint64(now), uint64(MaxTime-gap))
	require.ErrorIs(t, h.d.Sleep(time.Duration(MaxTime-now)/time.Duration(Nanosecond)+time.Nanosecond), ErrTimeOverflow)
	assert.Equal(t, now, h.d.Now())

	dst := make([]uint32, 2)
	require.ErrorIs(t, h.d.ReadBAR(h.reg, 0, dst), ErrTimeOverflow, "two reads do not fit")
	assert.Equal(t, now, h.d.Now(), "a refused read does not move the clock")
	_, err := h.d.Read32(h.reg, 0)
	require.NoError(t, err, "one read fits")
	assert.Equal(t, now+lat, h.d.Now())
}
