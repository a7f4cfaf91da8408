package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
)

// TestHostPorts: Config.HostPorts gives each device its own host port (a
// vfio-user client's memory); a count that is not one per device is
// refused.
func TestHostPorts(t *testing.T) {
	ports := []sim.HostPort{sim.NewHostMemory(), sim.NewHostMemory()}
	s, err := New(Config{Generation: hwarch.Cayman, Devices: 2, HostPorts: ports})
	require.NoError(t, err)
	for i, d := range s.Devices() {
		assert.Same(t, ports[i].(*sim.HostMemory), d.HostPort().(*sim.HostMemory))
	}
	_, err = New(Config{Generation: hwarch.Cayman, Devices: 2, HostPorts: ports[:1]})
	assert.ErrorIs(t, err, ErrConfig)
	s, err = New(Config{Generation: hwarch.Cayman, Devices: 2})
	require.NoError(t, err)
	assert.Same(t, s.Device(0).HostPort().(*sim.HostMemory), s.Device(1).HostPort().(*sim.HostMemory), "one shared host memory")
}
