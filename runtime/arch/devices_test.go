package arch

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
)

// TestDeviceLimit: a system holds 1..get_max_devs devices of its
// generation and switch, or 1..MaxWhatIfDevices (the fabric window's
// 16,384) as a what-if; the refusal carries what a caller words its
// message from.
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
		{hwarch.Cayman, hwarch.SwitchNone, true, 16384},
		{hwarch.Mariana, hwarch.SwitchV1, true, 16384},
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
				assert.ErrorIs(t, err, units.ErrRange, "%d devices", n)
				var de *DeviceCountError
				require.True(t, errors.As(err, &de))
				assert.Equal(t, DeviceCountError{Devices: n, Generation: tt.gen, Switch: tt.sw, MaxDevs: soc.MaxDevs(), WhatIf: tt.whatIf, Limit: tt.limit}, *de)
			}
		})
	}
	assert.Equal(t, hwarch.MaxFabricDevices, MaxWhatIfDevices, "a what-if system holds what the fabric window names")
	err := MustFor(hwarch.Mariana, Options{Switch: hwarch.SwitchV1}).Soc.CheckDevices(33, false)
	assert.EqualError(t, err, "33 devices: a mariana system with switch v1 holds 1..32 devices (get_max_devs)")
	err = MustFor(hwarch.Cayman, Options{}).Soc.CheckDevices(16385, true)
	assert.EqualError(t, err, "16385 devices: a what-if system holds 1..16384 devices (the fabric window's 14-bit device index)")
}

// TestCheckDevicesField: the one wording of a device count refused, for
// every caller (a flag, a scenario key, a grid axis): the setting, the
// value as given (digits past int64 too) and the range broken, with the
// what-if hint only where the count passes get_max_devs of a system that
// is not a what-if and the caller has a what-if to offer.
func TestCheckDevicesField(t *testing.T) {
	v1 := MustFor(hwarch.Mariana, Options{Switch: hwarch.SwitchV1}).Soc
	const whatIfRange = "a what-if system holds 1..16384 devices (the fabric window's 14-bit device index)"
	const v1Range = "a mariana system with switch v1 holds 1..32 devices (get_max_devs)"
	for _, tc := range []struct {
		value  string
		n      int
		whatIf bool
		key    string
		want   string // "" for accepted
	}{
		{"65", 65, true, "what_if: true", ""},
		{"1024", 1024, true, "what_if: true", ""},
		{"16384", 16384, true, "what_if: true", ""},
		{"32", 32, false, "what_if: true", ""},
		{"16385", 16385, true, "what_if: true", "system.devices 16385: " + whatIfRange},
		{"0", 0, true, "what_if: true", "system.devices 0: " + whatIfRange},
		{"-3", -3, true, "what_if: true", "system.devices -3: " + whatIfRange},
		{"99999999999999999999", math.MaxInt, true, "what_if: true", "system.devices 99999999999999999999: " + whatIfRange},
		{"33", 33, false, "what_if: true", "system.devices 33: " + v1Range + "; what_if: true allows up to 16384"},
		{"99999999999999999999", math.MaxInt, false, "what_if: true", "system.devices 99999999999999999999: " + v1Range + "; what_if: true allows up to 16384"},
		{"0", 0, false, "what_if: true", "system.devices 0: " + v1Range}, // no hint: a what-if does not help
		{"-3", -3, false, "what_if: true", "system.devices -3: " + v1Range},
		{"33", 33, false, "", "system.devices 33: " + v1Range}, // a caller without a what-if
	} {
		t.Run(fmt.Sprintf("%s/what-if=%v/%q", tc.value, tc.whatIf, tc.key), func(t *testing.T) {
			err := v1.CheckDevicesField("system.devices", tc.value, tc.n, tc.whatIf, tc.key)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.EqualError(t, err, tc.want)
			var ue *units.Error
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, "system.devices", ue.Field)
			assert.Equal(t, tc.value, ue.Value)
			assert.ErrorIs(t, err, units.ErrRange)
			assert.ErrorIs(t, err, ErrDeviceCount)
		})
	}
}
