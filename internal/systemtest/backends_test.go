package systemtest

import (
	"testing"

	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/sim"
)

// The in-process backend: the simulated device is the ndl.Device.
var _ ndl.Device = (*sim.Device)(nil)
var _ ndl.Sleeper = (*sim.Device)(nil)

func backends() []backend {
	return []backend{
		{"inprocess", func(t testing.TB, d *sim.Device) ndl.Device { return d }},
	}
}
