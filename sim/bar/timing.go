package bar

import (
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// DefaultMMIOLatency returns the modelled cost of one BAR access per
// generation (docs/timing-model.md §MMIO). A read is a non-posted PCIe
// transaction: the CPU waits for the completion, a round trip through the
// root complex, the device's PCIe endpoint and its APB fabric. A write is
// posted: the CPU only pays for issuing it. No published figure exists for
// Neuron devices; the values are the model's choice, in the range measured
// for PCIe Gen4/Gen5 endpoints (0.6–1.5 µs reads, ~0.1 µs writes), newer
// generations a little faster. Every value is overridable.
func DefaultMMIOLatency(g hwarch.Generation) hwarch.MMIOLatency {
	switch g {
	case hwarch.Sunda:
		return hwarch.MMIOLatency{Read: 1000 * time.Nanosecond, Write: 120 * time.Nanosecond}
	case hwarch.Cayman:
		return hwarch.MMIOLatency{Read: 900 * time.Nanosecond, Write: 100 * time.Nanosecond}
	default:
		return hwarch.MMIOLatency{Read: 800 * time.Nanosecond, Write: 100 * time.Nanosecond}
	}
}
