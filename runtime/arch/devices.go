package arch

import (
	"errors"
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// ErrDeviceCount marks a device count a system cannot hold.
var ErrDeviceCount = errors.New("device count out of range")

// DeviceCountError is a device count outside 1..Limit: Limit is the SoC's
// get_max_devs (MaxDevs), or MAX_NEURON_DEVICE_COUNT when the count is a
// what-if past the real systems. Callers word their own message from its
// fields (a flag and a scenario key name the what-if differently).
type DeviceCountError struct {
	Devices    int
	Generation hwarch.Generation
	Switch     hwarch.SwitchFamily
	MaxDevs    int  // get_max_devs of the generation and switch
	WhatIf     bool // the bound was lifted to MAX_NEURON_DEVICE_COUNT
	Limit      int  // the bound applied: MaxDevs, or MAX_NEURON_DEVICE_COUNT with WhatIf
}

func (e *DeviceCountError) Error() string {
	if e.WhatIf {
		return fmt.Sprintf("%d devices: a system holds 1..%d devices (MAX_NEURON_DEVICE_COUNT)", e.Devices, e.Limit)
	}
	return fmt.Sprintf("%d devices: a %s system with switch %s holds 1..%d devices (get_max_devs)", e.Devices, e.Generation, e.Switch, e.MaxDevs)
}

// Unwrap returns ErrDeviceCount.
func (e *DeviceCountError) Unwrap() error { return ErrDeviceCount }

// DeviceLimit returns the most devices a system of this SoC holds: its
// get_max_devs, or with whatIf (a system larger than any shipped)
// MAX_NEURON_DEVICE_COUNT. The command line's --devices and --what-if and
// a scenario's system.devices and what_if are both bounded by it.
func (s *Soc) DeviceLimit(whatIf bool) int {
	if whatIf {
		return hwarch.MaxNeuronDevices
	}
	return s.maxDevs
}

// CheckDevices checks a system's device count against DeviceLimit: nil,
// or a *DeviceCountError.
func (s *Soc) CheckDevices(n int, whatIf bool) error {
	limit := s.DeviceLimit(whatIf)
	if n >= 1 && n <= limit {
		return nil
	}
	return &DeviceCountError{Devices: n, Generation: s.gen, Switch: s.switchFamily, MaxDevs: s.maxDevs, WhatIf: whatIf, Limit: limit}
}
