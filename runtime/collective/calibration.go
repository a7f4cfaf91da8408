package collective

import (
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Calibration is the collectives' software parameters of a generation,
// fitted to the published nccom-test tables (internal/calibrate,
// `neuronsim fabric calibrate`, docs/timing-model.md §Calibration).
type Calibration struct {
	// Engines is how many DMA engines a rank's transfers effectively run
	// on: the published large-message bandwidth is that of this many.
	Engines int
	// LaunchCost is the runtime's fixed cost per collective.
	LaunchCost time.Duration
}

// Calibrated returns the fitted parameters of a generation:
//
//   - sunda: fitted to the 2-rank AllReduce of trainium-facts §5.3 (a)
//     (5 engines, 52.385 µs; RMS error 7.9 %);
//   - cayman: fitted to the 8-rank AllGather of §5.3 (d) (5 engines,
//     7.818 µs; RMS error 1.5 %; 7 engines and 7.518 µs, RMS 3.8 %, until
//     the control queue took an engine of its own, 2026-12-07);
//   - mariana: no published table; it takes cayman's, the same runtime's.
func Calibrated(g hwarch.Generation) Calibration {
	if g == hwarch.Sunda {
		return Calibration{Engines: 5, LaunchCost: 52385 * time.Nanosecond}
	}
	return Calibration{Engines: 5, LaunchCost: 7818 * time.Nanosecond}
}

// Ideal is the calibration of the fabric's α-β parity mode (ideal
// endpoints, docs/fabric.md §Parity mode): one DMA engine per rank, so a
// ring step is one write (no slicing over engines), and no launch cost —
// nothing that is not network.
func Ideal() Calibration {
	return Calibration{Engines: 1, LaunchCost: 0}
}
