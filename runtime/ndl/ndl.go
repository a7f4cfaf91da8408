// Package ndl is the runtime's device access layer: the Device interface the
// rest of the runtime reads and writes registers through, and its backends
// (the in-process simulated device is wired by cmd/ and tests; the kernel
// backend drives /dev/neuronN through the driver's ioctls; the remote backend
// talks to `neuronsim serve`).
//
// Device's method signatures use only builtin and hw/ types, so sim.Device
// satisfies it without importing the runtime (DESIGN.md, "the one rule").
package ndl

import (
	"errors"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Device is one Neuron PCI function as the runtime sees it.
type Device interface {
	// Identity returns the PCI vendor, device id and revision.
	Identity() hwarch.PCIIdentity
	// BARSize returns the size in bytes of PCI BAR bar (0 when absent).
	BARSize(bar int) uint64
	// ReadBAR reads len(dst) consecutive 32-bit words starting at byte
	// offset off of BAR bar.
	ReadBAR(bar int, off uint64, dst []uint32) error
	// WriteBAR writes src as consecutive 32-bit words starting at byte
	// offset off of BAR bar.
	WriteBAR(bar int, off uint64, src []uint32) error
	// Close releases the device.
	Close() error
}

// Errors a backend returns (wrapped with the BAR, offset and count).
var (
	ErrBadBAR    = errors.New("no such BAR")
	ErrBAROffset = errors.New("BAR access out of range")
	ErrAlignment = errors.New("BAR offset not 4-byte aligned")
	ErrClosed    = errors.New("device closed")
)
