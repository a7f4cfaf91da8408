package ndl

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// clocked is a Device with its own clock (the methods of Device are not
// called).
type clocked struct {
	Device
	ps uint64
}

func (c *clocked) ClockPS() uint64 { return c.ps }

// TestElapsedPS: on a device with a clock, the elapsed time is the device's;
// without one, the host's (non-decreasing).
func TestElapsedPS(t *testing.T) {
	c := &clocked{ps: 1_000}
	since := ElapsedPS(c)
	c.ps += 2_500_000
	assert.Equal(t, uint64(2_500_000), since())

	var host Device = struct{ Device }{}
	hs := ElapsedPS(host)
	a := hs()
	assert.LessOrEqual(t, a, hs())
}
