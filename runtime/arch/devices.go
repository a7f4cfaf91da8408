package arch

import (
	"errors"
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
)

// MaxWhatIfDevices is the most devices a what-if system holds (a system
// larger than any shipped: the command line's --what-if, a scenario's or a
// sweep grid's what_if): the devices the fabric window names in its 14-bit
// device index (hwarch.MaxFabricDevices). Past the driver's
// MAX_NEURON_DEVICE_COUNT (hwarch.MaxNeuronDevices, 64) such devices are
// brought up the what-if way, each by its index (bringup.Options.WhatIf,
// cluster.Config.WhatIf); the bring-up of a real system stays bounded by
// the driver's 64 routing ids (bringup.MaxRoutingID).
const MaxWhatIfDevices = hwarch.MaxFabricDevices

// ErrDeviceCount marks a device count a system cannot hold.
var ErrDeviceCount = errors.New("device count out of range")

// DeviceCountError is a device count outside 1..Limit: Limit is the SoC's
// get_max_devs (MaxDevs), or MaxWhatIfDevices when the system is a
// what-if. Reason words it for a caller's message, which names the setting
// (a flag, a file's key) and spells the what-if its own way.
type DeviceCountError struct {
	Devices    int
	Generation hwarch.Generation
	Switch     hwarch.SwitchFamily
	MaxDevs    int  // get_max_devs of the generation and switch
	WhatIf     bool // the bound was lifted to MaxWhatIfDevices
	Limit      int  // the bound applied: MaxDevs, or MaxWhatIfDevices with WhatIf
}

// Reason says which range the count broke: a what-if system's 1..16384,
// or the generation and switch's 1..get_max_devs. whatIfKey spells how
// the caller's user asks for a what-if system ("--what-if",
// "what_if: true"); when it is not empty and the count passes get_max_devs
// of a system that is not a what-if, the reason adds that it allows up to
// MaxWhatIfDevices.
func (e *DeviceCountError) Reason(whatIfKey string) string {
	if e.WhatIf {
		return fmt.Sprintf("a what-if system holds 1..%d devices (the fabric window's 14-bit device index)", e.Limit)
	}
	why := fmt.Sprintf("a %s system with switch %s holds 1..%d devices (get_max_devs)", e.Generation, e.Switch, e.MaxDevs)
	if whatIfKey != "" && e.Devices > e.MaxDevs {
		why += fmt.Sprintf("; %s allows up to %d", whatIfKey, MaxWhatIfDevices)
	}
	return why
}

func (e *DeviceCountError) Error() string {
	return fmt.Sprintf("%d devices: %s", e.Devices, e.Reason(""))
}

// Unwrap returns ErrDeviceCount and units.ErrRange.
func (e *DeviceCountError) Unwrap() []error { return []error{ErrDeviceCount, units.ErrRange} }

// DeviceLimit returns the most devices a system of this SoC holds: its
// get_max_devs, or with whatIf (a system larger than any shipped)
// MaxWhatIfDevices. The command line's --devices and --what-if, a
// scenario's system.devices and what_if and a sweep grid's devices axis
// and what_if are all bounded by it (CheckDevices, CheckDevicesField).
func (s *Soc) DeviceLimit(whatIf bool) int {
	if whatIf {
		return MaxWhatIfDevices
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

// CheckDevicesField is CheckDevices for a count a user gave: field names
// where ("--devices", "system.devices", "axes.devices[0]"), value is the
// count as given (a literal past int's range keeps its digits there, n
// being saturated), whatIf says whether the system is a what-if, and
// whatIfKey spells the what-if there for the hint (see
// DeviceCountError.Reason; empty: no hint). The refusal is a *units.Error
// of the field whose Err is the *DeviceCountError, so it wraps
// units.ErrRange and ErrDeviceCount.
func (s *Soc) CheckDevicesField(field, value string, n int, whatIf bool, whatIfKey string) error {
	var de *DeviceCountError
	if !errors.As(s.CheckDevices(n, whatIf), &de) {
		return nil
	}
	return &units.Error{Field: field, Value: value, Reason: de.Reason(whatIfKey), Err: de}
}
