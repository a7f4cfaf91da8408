package arch

import (
	"errors"
	"fmt"
)

// A device reaches another device's memory in two ways (docs/fabric.md):
//
//   - a neighbour window (V3/V4): an engine of SENG s writes at
//     NeighbourWindows[s] + a device address of the neighbour the driver's
//     table puts in column s (driver-facts §2.3, §6) — one link away;
//   - the fabric window (the model's, every generation): bit 62 set, the
//     destination's device index in bits 61..48 and a device address of it
//     in bits 47..0. The switched fabric of Trn3 routes by (rack, server,
//     chip) in upper address bits (trainium-facts §4); the real encoding is
//     not public, so the model routes by device index, over as many links
//     and switches as the topology puts between the two.

// NeighbourWindowSize is the span of one B0 neighbour window.
const NeighbourWindowSize = 0x4_0000_0000_0000

// FabricWindowBit marks a device address in the fabric window.
const FabricWindowBit = 1 << 62

// MaxFabricDevices is how many devices the fabric window can name (14 bits).
const MaxFabricDevices = 1 << 14

// DeviceAddressBits is the width of a device address (48 bits).
const DeviceAddressBits = 48

const deviceAddressMask = 1<<DeviceAddressBits - 1

// ErrFabricAddress marks a device index or address the fabric window cannot
// hold.
var ErrFabricAddress = errors.New("not representable in the fabric window")

// FabricAddress returns the fabric-window address of device address addr
// on device index dev.
func FabricAddress(dev int, addr uint64) (uint64, error) {
	if dev < 0 || dev >= MaxFabricDevices || addr > deviceAddressMask {
		return 0, fmt.Errorf("fabric address of device %d address %#x: %w (devices 0..%d, addresses below 2^48)",
			dev, addr, ErrFabricAddress, MaxFabricDevices-1)
	}
	return FabricWindowBit | uint64(dev)<<DeviceAddressBits | addr, nil
}

// DecodeFabricAddress splits a fabric-window address into its device index
// and device address; ok is false for any other address.
func DecodeFabricAddress(a uint64) (dev int, addr uint64, ok bool) {
	if a&^(FabricWindowBit|(MaxFabricDevices-1)<<DeviceAddressBits|deviceAddressMask) != 0 || a&FabricWindowBit == 0 {
		return 0, 0, false
	}
	return int(a >> DeviceAddressBits & (MaxFabricDevices - 1)), a & deviceAddressMask, true
}

// NeighbourWindow reports whether a device address lies in a B0 neighbour
// window, and which: the SENG s whose column of the neighbour table the
// window reaches, and the neighbour's device address.
func (g *Geometry) NeighbourWindow(a uint64) (seng int, remote uint64, ok bool) {
	for s, base := range g.NeighbourWindows {
		if a >= base && a-base < NeighbourWindowSize {
			return s, a - base, true
		}
	}
	return 0, 0, false
}
