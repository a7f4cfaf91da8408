package dma

import (
	"fmt"
	"strconv"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// Timing is the DMA timing model of a device (docs/timing-model.md §DMA).
// Bandwidths are in bytes per second; times in picoseconds.
type Timing struct {
	// Ideal makes the engines take no time at all: no fixed cost, and
	// unbounded engine, HBM and host bandwidth — a transfer completes when
	// it starts (the fabric's ideal endpoints, docs/fabric.md §Parity
	// mode). The other fields must then be zero.
	Ideal           bool
	EngineBandwidth uint64 // one engine's sustained rate
	FixedCost       uint64 // per descriptor pair: fetch, setup, completion (ps)
	HBMBandwidth    uint64 // the device's HBM, shared by every engine
	HostBandwidth   uint64 // the PCIe link to host memory, shared by every engine
}

// Picoseconds per nanosecond.
const nanosecond = 1000

// MaxFixedCost is the largest FixedCost Validate accepts: one second
// (10^12 ps), 20 million times the default; a descriptor that took longer to
// set up would be no DMA engine.
const MaxFixedCost = 1_000_000_000_000

// Validate checks a timing model: an ideal one has no other field set;
// otherwise every bandwidth is positive and at most
// units.MaxBandwidthBps, and FixedCost at most MaxFixedCost. (The zero
// Timing, which Options and sim.DeviceConfig read as "the default", is
// resolved before it is validated.) The error is a *units.Error naming the
// field and wrapping units.ErrRange.
func (t Timing) Validate() error {
	if t.Ideal {
		if t != (Timing{Ideal: true}) {
			return &units.Error{Field: "Ideal", Value: "true", Reason: fmt.Sprintf("ideal engines take no time: bandwidths and fixed cost must be 0, not %+v", Timing{EngineBandwidth: t.EngineBandwidth, FixedCost: t.FixedCost, HBMBandwidth: t.HBMBandwidth, HostBandwidth: t.HostBandwidth}), Err: units.ErrRange}
		}
		return nil
	}
	for _, b := range []struct {
		name string
		v    uint64
	}{{"EngineBandwidth", t.EngineBandwidth}, {"HBMBandwidth", t.HBMBandwidth}, {"HostBandwidth", t.HostBandwidth}} {
		if _, err := units.Uint(b.name, b.v, 1, units.MaxBandwidthBps); err != nil {
			if b.v == 0 {
				return &units.Error{Field: b.name, Value: "0", Reason: "must be positive (bytes per second)", Err: units.ErrRange}
			}
			return err
		}
	}
	if t.FixedCost > MaxFixedCost {
		return &units.Error{Field: "FixedCost", Value: strconv.FormatUint(t.FixedCost, 10) + "ps",
			Reason: "too long (the limit is 1 s, 10^12 ps, per descriptor)", Err: units.ErrRange}
	}
	return nil
}

// DefaultTiming returns the timing of a generation:
//   - EngineBandwidth: the practical peak per engine of trainium-facts §3
//     (17 / 23 / 33 B/ns);
//   - FixedCost: 50 ns per descriptor (chosen: about 60 cycles of engine
//     start-up, trainium-facts §3, at 1.2–1.4 GHz);
//   - HBMBandwidth: 820 GiB/s (Trn1/Inf2), 2.9 TB/s (Trn2), 4.9 TB/s (Trn3)
//     (trainium-facts §1);
//   - HostBandwidth: 16 / 32 / 64 GB/s (chosen: a PCIe Gen4/Gen5/Gen6 x16
//     link's usable rate).
func DefaultTiming(g hwarch.Generation) Timing {
	switch g {
	case hwarch.Sunda:
		return Timing{EngineBandwidth: 17e9, FixedCost: 50 * nanosecond, HBMBandwidth: 820 << 30, HostBandwidth: 16e9}
	case hwarch.Cayman:
		return Timing{EngineBandwidth: 23e9, FixedCost: 50 * nanosecond, HBMBandwidth: 2_900e9, HostBandwidth: 32e9}
	default:
		return Timing{EngineBandwidth: 33e9, FixedCost: 50 * nanosecond, HBMBandwidth: 4_900e9, HostBandwidth: 64e9}
	}
}

// TransferTime returns how long n bytes take at bw bytes/s, in ps, rounded
// up: it is [simkernel.AtRate], the one conversion the models time their
// work with, as a plain uint64.
func TransferTime(n, bw uint64) uint64 {
	return uint64(simkernel.AtRate(n, bw))
}
