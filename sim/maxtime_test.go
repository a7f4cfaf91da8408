package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
)

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
