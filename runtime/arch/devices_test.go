package arch

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// TestDeviceLimit: a system holds 1..get_max_devs devices of its
// generation and switch, or 1..MAX_NEURON_DEVICE_COUNT as a what-if; the
// refusal carries what a caller words its message from.
func TestDeviceLimit(t *testing.T) {
	tests := []struct {
		gen    hwarch.Generation
		sw     hwarch.SwitchFamily
		whatIf bool
		limit  int
	}{
		{hwarch.Sunda, hwarch.SwitchNone, false, 16},
		{hwarch.Cayman, hwarch.SwitchNone, false, 16},
		{hwarch.Mariana, hwarch.SwitchNone, false, 16},
		{hwarch.Mariana, hwarch.SwitchV1, false, 32},
		{hwarch.Cayman, hwarch.SwitchNone, true, hwarch.MaxNeuronDevices},
		{hwarch.Mariana, hwarch.SwitchV1, true, hwarch.MaxNeuronDevices},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/what-if=%v", tt.gen, tt.sw, tt.whatIf), func(t *testing.T) {
			soc := MustFor(tt.gen, Options{Switch: tt.sw}).Soc
			assert.Equal(t, tt.limit, soc.DeviceLimit(tt.whatIf))
			for _, n := range []int{1, tt.limit} {
				assert.NoError(t, soc.CheckDevices(n, tt.whatIf), "%d devices", n)
			}
			for _, n := range []int{0, -1, tt.limit + 1} {
				err := soc.CheckDevices(n, tt.whatIf)
				require.ErrorIs(t, err, ErrDeviceCount, "%d devices", n)
				var de *DeviceCountError
				require.True(t, errors.As(err, &de))
				assert.Equal(t, DeviceCountError{Devices: n, Generation: tt.gen, Switch: tt.sw, MaxDevs: soc.MaxDevs(), WhatIf: tt.whatIf, Limit: tt.limit}, *de)
			}
		})
	}
	err := MustFor(hwarch.Mariana, Options{Switch: hwarch.SwitchV1}).Soc.CheckDevices(33, false)
	assert.EqualError(t, err, "33 devices: a mariana system with switch v1 holds 1..32 devices (get_max_devs)")
	err = MustFor(hwarch.Cayman, Options{}).Soc.CheckDevices(65, true)
	assert.EqualError(t, err, "65 devices: a system holds 1..64 devices (MAX_NEURON_DEVICE_COUNT)")
}
