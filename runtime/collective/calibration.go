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
//   - cayman: fitted to the 8-rank AllGather of §5.3 (d) (7 engines,
//     7.518 µs; RMS error 3.8 %);
//   - mariana: no published table; it takes cayman's, the same runtime's.
func Calibrated(g hwarch.Generation) Calibration {
	if g == hwarch.Sunda {
		return Calibration{Engines: 5, LaunchCost: 52385 * time.Nanosecond}
	}
	return Calibration{Engines: 7, LaunchCost: 7518 * time.Nanosecond}
}

// Ideal is the calibration of the fabric's α-β parity mode (ideal
// endpoints, docs/fabric.md §Parity mode): one DMA engine per rank, so a
// ring step is one write (no slicing over engines), and no launch cost —
// nothing that is not network.
func Ideal() Calibration {
	return Calibration{Engines: 1, LaunchCost: 0}
}
