package sweep

// Plan: each point's estimated host time and memory. The host time is a
// model of what running a point costs — bringing its devices up, moving its
// transfers, touching its bytes — in "work" units (nanoseconds of the
// machine the constants were measured on), scaled to this machine by timing
// a small reference point ([Calibrate]). The scale is one factor for every
// point, so the partition of a grid into shards, made from the work alone,
// is the same on every machine.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"text/tabwriter"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// features are what a point's estimates are made from.
type features struct {
	gen        hwarch.Generation
	devices    int
	functional bool
	model      fabric.Model
	ranks      int
	xfers      int64 // the schedule's transfers
	bytes      int64 // the bytes they move
}

func featuresOf(s *enc.Schedule) features {
	f := features{ranks: s.Ranks}
	for _, st := range s.Steps {
		f.xfers += int64(len(st.Xfers))
		for _, x := range st.Xfers {
			f.bytes += x.Len
		}
	}
	return f
}

// The constants of the host-time model, in nanoseconds of the machine they
// were measured on (a 2-core x86-64 CI machine; BenchmarkPoint and
// TestEstimates keep them honest). Bringing a device up through the
// runtime is most of a small point; a transfer costs its descriptors, its
// semaphores and its events on the fabric; a byte moved costs little in
// timing mode (the fabric moves chunks, not bytes) and a lot in functional
// mode (generated, copied, reduced and checked).
var (
	workBase       = 150e3 // a point: the schedule, the tables, the executor
	workPerDevice  = map[hwarch.Generation]float64{hwarch.Sunda: 150e3, hwarch.Cayman: 1050e3, hwarch.Mariana: 1050e3}
	workPerXfer    = 21e3
	workPerByte    = 0.012 // timing mode
	workPerByteFn  = 9.0   // functional mode
	memPerDevice   = map[hwarch.Generation]uint64{hwarch.Sunda: 480 << 10, hwarch.Cayman: 1 << 20, hwarch.Mariana: 1 << 20}
	memPerXfer     = uint64(1 << 10)
	memBytesPerMem = int64(128) // timing mode: a byte of heap per this many bytes moved (the fabric's chunk records)
)

// work is the point's host-time model in reference nanoseconds, rounded
// to a whole number so that sharding by it is exact.
func (f features) work() uint64 {
	w := workBase + workPerDevice[f.gen]*float64(f.devices) + workPerXfer*float64(f.xfers)
	if f.functional {
		w += workPerByteFn * float64(f.bytes)
	} else {
		w += workPerByte * float64(f.bytes)
	}
	return uint64(math.Min(math.Round(w), math.MaxInt64))
}

// mem is the point's host-memory estimate in bytes: in timing mode what the
// devices, the transfers and the fabric's records hold, doubled for the Go
// collector's headroom (as cluster.FunctionalMemory counts it); in
// functional mode cluster.FunctionalMemory on top.
func (s *spec) mem() uint64 {
	f := s.feat
	live := memPerDevice[f.gen]*uint64(f.devices) + memPerXfer*uint64(f.xfers) + uint64(f.bytes/memBytesPerMem)
	return 2*live + s.memNeed
}

// Estimate is a point's estimated cost.
type Estimate struct {
	// Work is the host-time model in reference nanoseconds: what shards
	// are balanced by.
	Work uint64 `json:"work"`
	// HostSeconds is Work scaled to this machine (Calibration).
	HostSeconds float64 `json:"host_seconds"`
	// MemBytes is the host memory the point holds at its peak.
	MemBytes uint64 `json:"mem_bytes"`
}

// Calibration is the factor from work to this machine's host time,
// measured by timing a reference point.
type Calibration struct {
	// Scale is seconds of this machine per reference nanosecond.
	Scale float64
	// Reference is the reference point's measured host time (the best of
	// a few runs).
	Reference time.Duration
}

// The reference point: a ring AllReduce of 64 KiB on 4 Trn2 devices in
// timing mode, a few milliseconds.
var (
	refOnce sync.Once
	refCal  Calibration
	refErr  error
)

// Calibrate times the reference point (the best of three runs, so that a
// busy machine's worst moments are left out) and returns the scale of this
// machine; it is measured once per process.
func Calibrate() (Calibration, error) {
	refOnce.Do(func() {
		g, err := ParseGrid("(reference point)", []byte(referenceGrid))
		if err != nil {
			refErr = err
			return
		}
		best := time.Duration(math.MaxInt64)
		for range 3 {
			start := time.Now()
			if _, err := g.runPoint(0); err != nil {
				refErr = fmt.Errorf("sweep: calibration: %w", err)
				return
			}
			best = min(best, time.Since(start))
		}
		refCal = Calibration{Scale: best.Seconds() / float64(g.specs[0].feat.work()), Reference: best}
	})
	return refCal, refErr
}

const referenceGrid = `arch: cayman
axes:
  devices: [4]
  ops: [all_reduce]
  algos: [ring]
  sizes: [64K]
`

// Estimates returns every point's estimate with calibration c.
func (g *Grid) Estimates(c Calibration) []Estimate {
	out := make([]Estimate, len(g.points))
	for i := range g.specs {
		w := g.specs[i].feat.work()
		out[i] = Estimate{Work: w, HostSeconds: float64(w) * c.Scale, MemBytes: g.specs[i].mem()}
	}
	return out
}

// Plan is a grid's points with their estimates, for `sweep plan`.
type Plan struct {
	Format    int     `json:"format"`
	Grid      string  `json:"grid"` // the grid's hash
	Points    int     `json:"points"`
	Groups    int     `json:"groups"`
	HostTotal float64 `json:"host_seconds_total"` // one worker
	MemPeak   uint64  `json:"mem_bytes_peak"`     // the largest point's, per worker
	// Scale is the calibration: seconds of this machine per reference
	// nanosecond of work.
	Scale float64       `json:"scale"`
	Items []PlannedItem `json:"items"`
}

// PlannedItem is a point of a Plan.
type PlannedItem struct {
	Point
	Estimate
}

// Plan returns the grid's plan with calibration c.
func (g *Grid) Plan(c Calibration) *Plan {
	est := g.Estimates(c)
	p := &Plan{Format: Format, Grid: g.hash, Points: len(g.points), Scale: c.Scale}
	if len(g.groups) > 0 {
		p.Groups = g.groups[len(g.groups)-1] + 1
	}
	for i, pt := range g.points {
		p.Items = append(p.Items, PlannedItem{pt, est[i]})
		p.HostTotal += est[i].HostSeconds
		p.MemPeak = max(p.MemPeak, est[i].MemBytes)
	}
	return p
}

// WriteJSON writes the plan as indented JSON.
func (p *Plan) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes the plan as a table: one line per point with its axes,
// hash and estimates, then the totals.
func (p *Plan) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "grid %s: %s in %s\n", p.Grid, units.Plural(int64(p.Points), "point", "points"), units.Plural(int64(p.Groups), "group", "groups"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\thash\tsystem\tdevices\ttopology\tranks\tmodel\tlink_bw\tlink_latency\top\talgo\tdtype\tsize(B)\tmode\thost(ms)\tmem")
	for _, it := range p.Items {
		sys := it.System
		if sys == "" {
			sys = it.Arch
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%.1f\t%s\n", it.Index, it.Hash, sys, it.Devices, it.Topology,
			it.Ranks, it.Model, optText(it.LinkBW, "B/s"), optText(it.LinkLatency, "ps"), it.Op, it.Algo, it.Dtype, it.Size, it.Mode,
			it.HostSeconds*1e3, memlimit.Human(it.MemBytes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total: %s, estimated host time %.1f s with one worker, peak memory %s per worker (calibration: %.3g s per reference ns)\n",
		units.Plural(int64(p.Points), "point", "points"), p.HostTotal, memlimit.Human(p.MemPeak), p.Scale)
	return err
}

func optText(v *uint64, unit string) string {
	if v == nil {
		return "default"
	}
	return fmt.Sprintf("%d%s", *v, unit)
}

// memLimit is the host memory a functional point may plan to use
// (internal/memlimit's default: 3/4 of physical memory).
func memLimit() memlimit.Limit { return memlimit.Default() }
