package arch

import "fmt"

// The driver's routing-id → device-index tables (driver-facts §6): the
// /dev/neuronN number of a device is derived from the routing id its
// firmware reports.
var (
	trn1DeviceIndex  = [16]int{0, 4, 1, 5, 3, 7, 2, 6, 12, 8, 13, 9, 15, 11, 14, 10}
	torusDeviceIndex = [16]int{0, 3, 4, 7, 12, 15, 8, 11, 1, 2, 5, 6, 13, 14, 9, 10}
)

// DeviceIndexOfRoutingID returns the device index (/dev/neuronN) the driver
// gives a device of PCI device id dev with routing id rid: Trn1 and
// Trn2/Trn3 map rid%16 through their tables and keep the group of 16; Inf2 is
// the identity.
func DeviceIndexOfRoutingID(dev uint16, rid int) (int, error) {
	if rid < 0 || rid >= MaxNeuronDevices {
		return 0, fmt.Errorf("routing id %d: out of range 0..%d", rid, MaxNeuronDevices-1)
	}
	group := rid / 16 * 16
	switch dev {
	case DeviceTrn1:
		return group + trn1DeviceIndex[rid%16], nil
	case DeviceInf2:
		return rid, nil
	case DeviceTrn2, DeviceTrn3, DeviceTrn3B:
		return group + torusDeviceIndex[rid%16], nil
	}
	return 0, fmt.Errorf("%w %#04x", ErrUnknownDeviceID, dev)
}

// RoutingIDOfDeviceIndex is the inverse of DeviceIndexOfRoutingID.
func RoutingIDOfDeviceIndex(dev uint16, index int) (int, error) {
	for rid := index / 16 * 16; rid < index/16*16+16 && rid < MaxNeuronDevices; rid++ {
		i, err := DeviceIndexOfRoutingID(dev, rid)
		if err != nil {
			return 0, err
		}
		if i == index {
			return rid, nil
		}
	}
	return 0, fmt.Errorf("device index %d: no routing id of the driver's 0..%d maps to it (a what-if device past them: WhatIfRoutingID)", index, MaxNeuronDevices-1)
}

// WhatIfRoutingID returns the routing id of device index index in a system
// that may be a what-if one, larger than the driver's MaxNeuronDevices: the
// driver's (RoutingIDOfDeviceIndex) for the first 64 devices, and past
// them the index itself — a what-if device past the 64th is addressed by
// its fabric-window device index (FabricAddress), so index < MaxFabricDevices.
func WhatIfRoutingID(dev uint16, index int) (int, error) {
	if index < MaxNeuronDevices {
		return RoutingIDOfDeviceIndex(dev, index)
	}
	if index >= MaxFabricDevices {
		return 0, fmt.Errorf("device index %d: %w (devices 0..%d)", index, ErrFabricAddress, MaxFabricDevices-1)
	}
	return index, nil
}

// WhatIfDeviceIndex is the inverse of WhatIfRoutingID: the device index of
// routing id rid, the driver's (DeviceIndexOfRoutingID) below
// MaxNeuronDevices and the routing id itself past them.
func WhatIfDeviceIndex(dev uint16, rid int) (int, error) {
	if rid < MaxNeuronDevices {
		return DeviceIndexOfRoutingID(dev, rid)
	}
	if rid >= MaxFabricDevices {
		return 0, fmt.Errorf("routing id %d: %w (devices 0..%d)", rid, ErrFabricAddress, MaxFabricDevices-1)
	}
	return rid, nil
}

// ConnectedDevices returns the device indices the driver reports as
// connected to device index i of a system of n devices (DEVICE_INFO's
// connected_devices; driver-facts §6; trainium-facts §4). The driver does
// not discover links: it picks a table by the instance, which the count
// stands for here:
//   - n a multiple of 16 (trn1.32xl, trn2/trn3 instances): TorusNeighbours;
//   - otherwise a ring (inf2.48xl), or a chain when chain is set (inf2.24xl):
//     RingNeighbours.
//
// A topology builder that wants a ring or a chain of any length calls
// RingNeighbours itself: on a multiple of 16 devices this table is the
// torus's, whose groups of 16 are not joined to one another.
func ConnectedDevices(n, i int, chain bool) ([]int, error) {
	if n%16 == 0 && n > 0 {
		return TorusNeighbours(n, i)
	}
	return RingNeighbours(n, i, chain)
}

// ChainTable reports whether the driver's table for a system of n devices
// that is not a multiple of 16 is a chain rather than a ring: inf2.24xl's 6
// devices, whose ends have one neighbour (driver-facts §6). The argument
// ConnectedDevices takes as chain for such a system.
func ChainTable(n int) bool { return n == 6 }

// TorusNeighbours returns device i's neighbours in the driver's 4×4 2D
// torus table of a system of n devices, n a multiple of 16: the torus of
// i's group of 16, in the order up, left, down, right (device 0 → 12, 3,
// 4, 1; column = SENG index), the group kept in the upper bits — each group
// of 16 is a torus of its own, joined to no other.
func TorusNeighbours(n, i int) ([]int, error) {
	if n <= 0 || n%16 != 0 || i < 0 || i >= n {
		return nil, fmt.Errorf("torus neighbours: device %d of %d (a multiple of 16 devices)", i, n)
	}
	group, d := i/16*16, i%16
	r, c := d/4, d%4
	at := func(r, c int) int { return group + (r+4)%4*4 + (c+4)%4 }
	return []int{at(r-1, c), at(r, c-1), at(r+1, c), at(r, c+1)}, nil
}

// RingNeighbours returns device i's neighbours on a bidirectional ring of
// n devices (or a chain when chain is set): the previous and the next
// device, each once; the ends of a chain have one. One device has none,
// and two are each other's only neighbour.
func RingNeighbours(n, i int, chain bool) ([]int, error) {
	if n <= 0 || i < 0 || i >= n {
		return nil, fmt.Errorf("ring neighbours: device %d of %d", i, n)
	}
	var out []int
	if i > 0 || (!chain && n > 2) {
		out = append(out, (i+n-1)%n)
	}
	if i < n-1 || (!chain && n > 2) {
		if next := (i + 1) % n; len(out) == 0 || out[0] != next {
			out = append(out, next)
		}
	}
	return out, nil
}
