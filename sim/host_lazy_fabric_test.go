package sim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestHostAllocLazySystem: the devices of a system share its host memory,
// lazy buffers too: one device's lazy buffer reads through every device
// and through the system's host memory as its fill's bytes, and is freed
// by another.
func TestHostAllocLazySystem(t *testing.T) {
	sys, err := fabric.New(fabric.Config{Generation: hwarch.Cayman, Devices: 2, Ready: true})
	require.NoError(t, err)
	calls := 0
	fill := func(off uint64, p []byte) error {
		calls++
		for i := range p {
			p[i] = byte(off) + byte(i) + 1
		}
		return nil
	}
	pa, err := sys.Device(0).HostAllocLazy(4096, 4096, fill)
	require.NoError(t, err)
	for i, read := range []func(uint64, []byte) error{sys.Device(0).HostRead, sys.Device(1).HostRead, sys.Host().Read} {
		got := make([]byte, 2)
		require.NoError(t, read(pa+16, got))
		assert.Equal(t, []byte{17, 18}, got, "reader %d", i)
	}
	assert.Equal(t, 3, calls)
	assert.ErrorIs(t, sys.Device(1).HostWrite(pa, []byte{1}), sim.ErrHostLazy)
	require.NoError(t, sys.Device(1).HostFree(pa))
	assert.ErrorIs(t, sys.Device(0).HostRead(pa, make([]byte, 1)), sim.ErrHostRange)
}
