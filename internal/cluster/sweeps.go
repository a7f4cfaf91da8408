package cluster

import (
	"fmt"
	"io"

	"github.com/neuronsim/neuronsim/internal/progress"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/fabric"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

// SweepSystem is one system of a SweepSet: its device count, its topology
// and the sizes swept on it.
type SweepSystem struct {
	Devices int
	Kind    fabric.Kind
	Sizes   []int64
}

// SweepSet is one collective swept on one system per device count (the
// command line's fabric sweep with a --devices list): each system built,
// brought up and swept in turn, nccom-test's report of each returned.
type SweepSet struct {
	// Config is every system's configuration; Devices, Kind and
	// BufferBytes (what the largest size needs, BufferNeed) are each
	// system's own.
	Config  Config
	Systems []SweepSystem
	// Sweep is the collective; its Sizes and Progress are each system's.
	Sweep Sweep
	// Engines is the DMA engines each rank spreads its transfers over;
	// 0 keeps the generation's calibrated count.
	Engines int
	// Capture, when not nil, records the fabric's packets; a pcap holds
	// one system's (each system's clock starts at 0), so only with one.
	Capture *Capture
	// Progress, when not nil, returns the progress bar of a system's sweep.
	Progress func(SweepSystem) *progress.Bar
}

// Capture records a system's fabric packets to a pcap stream.
type Capture struct {
	// Open returns where the pcap goes; it is called once the system is
	// built, and its error ends the sweep as it is.
	Open func() (io.Writer, error)
	// MaxBytes bounds the pcap: the capture stops cleanly there
	// (capture.Options.MaxBytes).
	MaxBytes uint64
}

// CaptureStats is what a capture recorded.
type CaptureStats struct {
	Packets     uint64 // packets written
	NotRecorded uint64 // packets lost or past MaxBytes
	Full        bool   // the capture stopped at MaxBytes
	MaxBytes    uint64
}

// CaptureError is a failure of the capture itself (its writer, its flush).
type CaptureError struct{ Err error }

func (e *CaptureError) Error() string { return "capture: " + e.Err.Error() }

// Unwrap returns the capture's error.
func (e *CaptureError) Unwrap() error { return e.Err }

// SweepResult is what a SweepSet did: a report per system, in order, and
// with a capture what it recorded (also in the report's Extra:
// pcap_packets, pcap_packets_not_recorded, pcap_stopped).
type SweepResult struct {
	Reports []*nccom.Report
	Capture CaptureStats
}

// RunSweeps runs the set's sweep on each of its systems. A size that
// fails stops it: the error comes with the reports of the systems swept
// before, and the report of the sizes the failing system ran before that
// size (Cluster.Sweep: marked under IncompleteKey), last; the systems
// after it are not run.
func RunSweeps(set SweepSet) (SweepResult, error) {
	var res SweepResult
	if set.Capture != nil && len(set.Systems) > 1 {
		return res, fmt.Errorf("cluster: a capture of %d systems: a pcap holds one system's packets: %w", len(set.Systems), ErrConfig)
	}
	for _, sys := range set.Systems {
		rep, err := set.runOne(sys, &res.Capture)
		if err != nil {
			if rep != nil {
				res.Reports = append(res.Reports, rep)
			}
			return res, err
		}
		res.Reports = append(res.Reports, rep)
	}
	return res, nil
}

// runOne builds one system, brings it up and sweeps it; a size that fails
// returns the report of the sizes before it with its error.
func (set *SweepSet) runOne(sys SweepSystem, stats *CaptureStats) (*nccom.Report, error) {
	cfg, sw := set.Config, set.Sweep
	cfg.Devices, cfg.Kind = sys.Devices, sys.Kind
	sw.Options = cfg.CollectiveOptions(sw.Options)
	rpd := max(cfg.RanksPerDevice, 1)
	need, err := BufferNeed(sw.Op, sw.Algo, sys.Devices*rpd, sw.Dtype, sys.Sizes, sw.Options)
	if err != nil {
		return nil, err
	}
	cfg.BufferBytes = need
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if set.Engines != 0 {
		c.Exec.Engines = set.Engines
	}
	var w *capture.Writer
	if set.Capture != nil {
		if err := c.System.CheckCapture(); err != nil {
			return nil, &CaptureError{err}
		}
		out, err := set.Capture.Open()
		if err != nil {
			return nil, err
		}
		if w, err = capture.NewWriter(out, capture.Options{MaxBytes: set.Capture.MaxBytes}); err != nil {
			return nil, &CaptureError{err}
		}
		c.System.SetCapture(w, 0)
	}
	sw.Sizes, sw.Progress = sys.Sizes, nil
	if set.Progress != nil {
		sw.Progress = set.Progress(sys)
	}
	rep, err := c.Sweep(sw)
	if err != nil {
		return rep, err // the sizes done, if a size failed
	}
	if w == nil {
		return rep, nil
	}
	if err := c.System.FlushCapture(); err != nil {
		return nil, &CaptureError{err}
	}
	written, lost := c.System.CaptureStats()
	*stats = CaptureStats{Packets: written, NotRecorded: lost, Full: w.Full(), MaxBytes: w.MaxBytes()}
	rep.Extra["pcap_packets"] = written
	if lost > 0 {
		rep.Extra["pcap_packets_not_recorded"] = lost
	}
	if w.Full() {
		rep.Extra["pcap_stopped"] = fmt.Sprintf("--pcap-max %d bytes reached", w.MaxBytes())
	}
	return rep, nil
}
