package arch

import (
	"errors"
	"fmt"
	"time"
)

// Errors of a BAR access, shared by every side of the device seam: the
// simulated device returns them and the runtime's backends re-export them, so
// errors.Is matches whichever device answered.
var (
	ErrBadBAR       = errors.New("no such BAR")
	ErrBAROffset    = errors.New("BAR access out of range")
	ErrAlignment    = errors.New("BAR offset not 4-byte aligned")
	ErrDeviceClosed = errors.New("device closed")
)

// PCI BAR numbers of a Neuron function (driver-facts §2.1).
const (
	BAR0 = 0 // APB registers (all but V2 and V3 under QEMU)
	BAR2 = 2 // APB registers on V2 and V3 under QEMU (driver 2.24.7.0); unused otherwise on V2+
	BAR4 = 4 // the window onto device memory (HBM)
)

// RegisterBAR returns the PCI BAR that carries the APB registers in a mode:
// BAR2 for V2 and V3 under QEMU, BAR0 otherwise (the driver's "bar0"
// pointer; see BAR0Map.APBBARUnderQEMU for the driver versions).
func (m BAR0Map) RegisterBAR(mode Mode) int {
	if mode == ModeQEMU {
		return m.APBBARUnderQEMU
	}
	return m.APBBAR
}

// CheckRegisters refuses n consecutive 32-bit registers from offset off of
// the register BAR that do not all lie in it, or whose offset is not
// 4-byte aligned (the device reads and writes whole words). The register
// BAR is BAR0.MinimumBAR0 bytes: the BAR the simulated device and the
// kernel fake map, and every window the runtime's csr layer registers lies
// below it. The error names the offset and the range, and wraps
// ErrAlignment or ErrBAROffset; the caller names the flag or field.
func (g *Geometry) CheckRegisters(off, n uint64) error {
	size := g.BAR0.MinimumBAR0
	bar := fmt.Sprintf("a %s device's register BAR is %d GiB, word offsets 0x0..%#x", g.Generation, size/GiB, size-4)
	switch {
	case off >= size:
		return fmt.Errorf("%#x: %w: %s", off, ErrBAROffset, bar)
	case off%4 != 0:
		return fmt.Errorf("%#x: %w: a register is a 32-bit word at a multiple of 4", off, ErrAlignment)
	case n > (size-off)/4:
		return fmt.Errorf("%#x: %w: %d words from it run past the end; %s", off, ErrBAROffset, n, bar)
	}
	return nil
}

// MMIOLatency is the modelled cost of one BAR access: a non-posted read
// waits for its completion, a posted write only for the link.
type MMIOLatency struct {
	Read  time.Duration
	Write time.Duration
}
