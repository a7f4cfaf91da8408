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
	"fmt"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Device is one Neuron PCI function as the runtime sees it. BAR numbers are
// PCI BAR numbers: the registers are on BAR0, or BAR2 for V2 and V3 under QEMU
// (hwarch.BAR0Map.RegisterBAR); device memory is on BAR4.
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
	// Read32 reads the 32-bit word at byte offset off of BAR bar (readl).
	Read32(bar int, off uint64) (uint32, error)
	// Write32 writes one 32-bit word at byte offset off of BAR bar (writel).
	Write32(bar int, off uint64, v uint32) error
	// Close releases the device.
	Close() error
}

// Errors a backend returns (wrapped with the BAR, offset and count). They are
// the hw/arch sentinels, so a simulated device's errors match them too.
var (
	ErrBadBAR    = hwarch.ErrBadBAR
	ErrBAROffset = hwarch.ErrBAROffset
	ErrAlignment = hwarch.ErrAlignment
	ErrClosed    = hwarch.ErrDeviceClosed
	// ErrClockBack marks a device clock read lower than an earlier one
	// (ElapsedPS): a Clock never goes back.
	ErrClockBack = errors.New("the device's clock went back")
)

// Sleeper is implemented by a device with its own clock (a simulated device,
// local or remote): Sleep lets d pass on that clock, running what falls due,
// where the driver would msleep. When the device is also a Clock, Sleep
// moves it by at least d, and refuses a negative d and one that would take
// it past internal/units.MaxTimePS without moving it. After Close, Sleep
// fails with ErrClosed. (runtime/ndl/ndltest checks every backend so.)
type Sleeper interface {
	Sleep(d time.Duration) error
}

// SliceSleeper is implemented by a device whose clock can be run to a
// time in bounded slices (a simulated device), so that whoever serialises
// the device's callers — the remote server — can let other callers in
// between the slices of a long sleep instead of holding them off for all
// the host time it takes.
type SliceSleeper interface {
	Sleeper
	Clock
	// SleepUntil runs the device's clock towards ps, picoseconds as
	// ClockPS reads them, running in order the events that fall due on
	// the way, but at most maxEvents of them (at least one, whatever
	// maxEvents is). It reports done when no event is left due at or
	// before ps: the clock is then at ps, or past it if something else
	// took it there (time never goes back); otherwise the clock is at the
	// last event run and a later call goes on from there. Calls repeated
	// until done leave the device exactly as one Sleep from the clock of
	// the first call to ps would, when nothing else calls the device
	// between them. A ps past internal/units.MaxTimePS is refused without
	// running anything; after Close it fails with ErrClosed.
	SleepUntil(ps uint64, maxEvents int) (done bool, err error)
}

// HostMemory is implemented by a backend that can hand out host memory the
// device's DMA engines reach through its host window (the driver's
// dma_alloc_coherent buffers): a simulated device does. Addresses are host
// physical addresses, without the host bit. HostAlloc returns zeroed
// memory at a multiple of align (a power of two) and refuses a size of 0;
// HostFree takes only an address HostAlloc returned and has not freed yet;
// HostRead and HostWrite take only a range inside one allocated buffer.
// Anything else fails with an error the backend documents.
type HostMemory interface {
	HostAlloc(size, align uint64) (pa uint64, err error)
	HostFree(pa uint64) error
	HostRead(pa uint64, p []byte) error
	HostWrite(pa uint64, p []byte) error
}

// HostBufferLimit is implemented by a HostMemory backend whose allocator
// holds a bounded number of live buffers (a simulated device: 2^20, shared
// by the devices of one system), past which HostAlloc fails. The remote
// server refuses to start with per-connection buffer quotas that add up
// past it, so that no client within its quota is refused for buffers
// other clients took.
type HostBufferLimit interface {
	// HostBufferLimit returns the most host buffers the allocator holds
	// live at once, all its users together; 0 when it sets no such bound.
	HostBufferLimit() int
}

// LazyHostMemory is implemented by a backend whose host memory can hold a
// buffer that is filled when it is read instead of written up front (a
// simulated device does: its host-memory model). A runtime that would
// write millions of DMA descriptors before starting the device — a
// collective on a thousand devices — hands over a function that produces
// them, and the device's reads call it: the host then holds only what the
// device has not read yet.
//
// What the device reads is what fill returns. fill must return the bytes
// the host would have written before the device started: the same bytes for
// an offset whenever it is asked, so a lazy buffer changes no result and no
// time, only the host memory held. It may refuse, with an error, a range it
// no longer holds (a descriptor ring is read once, in order, and what was
// read may be let go) or cannot produce; that error is the read's (a DMA
// engine halts its queue on it, with a ring-address error). fill is called
// with off, the offset in the buffer, and p, at most the rest of it; it runs
// inside the device's read, on the goroutine that is driving the device (in
// a Sleep or a BAR access), and must not call the device.
//
// HostWrite to a lazy buffer is refused; HostRead of it calls fill;
// HostFree releases it as any buffer. A backend that snapshots its host
// memory does not store a lazy buffer's bytes (they were never written).
type LazyHostMemory interface {
	HostAllocLazy(size, align uint64, fill func(off uint64, p []byte) error) (pa uint64, err error)
}

// Sleep waits d as the device sees time: on the device's clock when it has
// one, else on the wall clock.
func Sleep(dev Device, d time.Duration) error {
	if s, ok := dev.(Sleeper); ok {
		return s.Sleep(d)
	}
	time.Sleep(d)
	return nil
}

// Clock is implemented by a device with its own clock (a simulated device,
// local or remote): ClockPS is that clock's time in picoseconds. Durations
// the runtime reports (a collective's time, a program's) are measured on it
// when the device has one, and on the host's clock otherwise. A remote
// device's clock is a request, which can fail. The clock never goes back.
type Clock interface {
	ClockPS() (uint64, error)
}

// ElapsedPS reads the clock now and returns a function that reports the
// picoseconds passed since, on dev's clock when it has one (Clock), else on
// the host's. A failed clock read is returned as the error, and so is a
// clock that went back (ErrClockBack), whatever the backend.
func ElapsedPS(dev Device) (since func() (uint64, error), err error) {
	if c, ok := dev.(Clock); ok {
		start, err := c.ClockPS()
		if err != nil {
			return nil, err
		}
		return func() (uint64, error) {
			now, err := c.ClockPS()
			if err == nil && now < start {
				// A clock that went back would make the difference wrap to
				// about 2^64 ps: every duration measured on it absurd.
				return 0, fmt.Errorf("ndl: the device's clock went back, from %d ps to %d ps: %w", start, now, ErrClockBack)
			}
			return now - start, err
		}, nil
	}
	start := time.Now()
	return func() (uint64, error) { return uint64(time.Since(start).Nanoseconds()) * 1000, nil }, nil
}
