package ndl

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clocked is a Device with its own clock (the methods of Device are not
// called).
type clocked struct {
	Device
	ps uint64
}

func (c *clocked) ClockPS() (uint64, error) {
	if c.ps == 0 {
		return 0, errors.New("clock unreadable")
	}
	return c.ps, nil
}

// TestElapsedPS: on a device with a clock, the elapsed time is the device's;
// without one, the host's (non-decreasing). A clock that went back is an
// error, not a wrapped difference.
func TestElapsedPS(t *testing.T) {
	c := &clocked{ps: 1_000}
	since, err := ElapsedPS(c)
	require.NoError(t, err)
	c.ps += 2_500_000
	ps, err := since()
	require.NoError(t, err)
	assert.Equal(t, uint64(2_500_000), ps)
	c.ps = 999 // before the start: the difference would wrap to about 2^64
	_, err = since()
	assert.ErrorIs(t, err, ErrClockBack)
	assert.ErrorContains(t, err, "from 1000 ps to 999 ps")
	c.ps = 0
	_, err = since()
	assert.ErrorContains(t, err, "clock unreadable", "a failed read is reported")
	_, err = ElapsedPS(c)
	assert.ErrorContains(t, err, "clock unreadable")

	var host Device = struct{ Device }{}
	hs, err := ElapsedPS(host)
	require.NoError(t, err)
	a, _ := hs()
	b, _ := hs()
	assert.LessOrEqual(t, a, b)
}
