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
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// features are what a point's estimates are made from.
type features struct {
	gen        hwarch.Generation
	devices    int
	functional bool
	model      fabric.Model
	dtype      enc.Dtype
	ranks      int
	engines    int    // DMA engines a rank spreads a transfer over
	xfers      int64  // the schedule's transfers
	rankSteps  int64  // over the steps, the ranks that send in each
	bytes      int64  // the bytes the transfers move
	buffers    uint64 // each rank's buffer area (collective.LayoutOf's End)
}

func featuresOf(s *enc.Schedule) features {
	f := features{ranks: s.Ranks, buffers: collective.LayoutOf(s, 0).End}
	mark := make([]int, s.Ranks)
	for k, st := range s.Steps {
		f.xfers += int64(len(st.Xfers))
		for _, x := range st.Xfers {
			f.bytes += x.Len
			if x.Src >= 0 && x.Src < len(mark) && mark[x.Src] != k+1 {
				mark[x.Src] = k + 1
				f.rankSteps++
			}
		}
	}
	return f
}

// The constants of the host-time model, in nanoseconds of CPU time of the
// machine they were fitted on (a 2-core x86-64 machine, 267 points of
// every generation, 1 to 64 devices and 1 to 4 ranks per device, least
// squares of the relative error; TestEstimates keeps them honest).
// Bringing a device up through the runtime is most of a small point
// (Trn1's far less than Trn2's and Trn3's), and each rank adds its queues
// and buffers. A transfer is cut into a descriptor per DMA engine of its
// rank (collective.Calibrated's engines; one with ideal endpoints), whose
// cost grows with the ranks whose events share the fabric's queue; each
// step a rank sends in costs its semaphores and program. A byte moved
// costs little in timing mode (the fabric moves chunks, not bytes), and a
// lot in functional mode (generated, copied, reduced and checked; bf16 and
// fp16 about 1.6× more, converted to reduce): fitted on 64 functional
// points of 1 to 8 devices, 64 KiB to 4 MiB (small sizes cost less a byte,
// large ones more: within 1.5× on TestEstimates' functional grid).
var (
	workBase      = 56e3 // a point: the schedule, the tables, the executor
	workPerDevice = map[hwarch.Generation]float64{hwarch.Sunda: 171e3, hwarch.Cayman: 1234e3, hwarch.Mariana: 1234e3}
	workPerRank   = 24.4e3
	workPerDesc   = 1548.0                                                              // a descriptor of a transfer
	workDescRank  = 10.9                                                                // a descriptor, per rank of the collective
	workRankStep  = 14.8e3                                                              // a rank's step
	workPerByte   = map[fabric.Model]float64{fabric.Aware: 0.0105, fabric.Free: 0.0060} // timing mode
	workPerByteFn = 8.0                                                                 // functional mode
	workPerByteHF = 13.0                                                                // functional mode, bf16 and fp16 (converted to reduce)

	memPerDevice   = map[hwarch.Generation]uint64{hwarch.Sunda: 480 << 10, hwarch.Cayman: 1 << 20, hwarch.Mariana: 1 << 20}
	memPerXfer     = uint64(1 << 10)
	memBytesPerMem = int64(512) // functional mode: a byte of heap per this many bytes moved besides the payloads (the fabric's chunk records; measured 1/400..1/560)
)

// work is the point's host-time model in reference nanoseconds, rounded
// to a whole number so that sharding by it is exact.
func (f features) work() uint64 {
	descs := float64(f.xfers) * float64(f.engines)
	w := workBase + workPerDevice[f.gen]*float64(f.devices) + workPerRank*float64(f.ranks) +
		descs*(workPerDesc+workDescRank*float64(f.ranks)) + workRankStep*float64(f.rankSteps)
	switch {
	case f.functional && (f.dtype == enc.BFloat16 || f.dtype == enc.Float16):
		w += workPerByteHF * float64(f.bytes)
	case f.functional:
		w += workPerByteFn * float64(f.bytes)
	default:
		w += workPerByte[f.model] * float64(f.bytes)
	}
	return uint64(math.Min(math.Round(w), math.MaxInt64))
}

// mem is the point's host-memory estimate in bytes: in timing mode
// cluster.TimingMemory (what the command line's timing sweeps are checked
// against: the devices, the schedule, the SP programs and the descriptors a
// streamed run holds); in functional mode what the devices, the transfers
// and the fabric's records hold, doubled for the Go collector's headroom
// (as cluster.FunctionalMemory counts it), and cluster.FunctionalMemory on
// top.
func (s *spec) mem() uint64 {
	if s.timing {
		return s.memNeed // cluster.TimingMemory
	}
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
// measured by timing reference points.
type Calibration struct {
	// Scale is seconds of this machine per reference nanosecond.
	Scale float64
	// Reference is the reference points' measured host time (the best of
	// a few runs of each, summed).
	Reference time.Duration
}

var (
	refOnce sync.Once
	refCal  Calibration
	refErr  error
)

// Calibrate times the reference points (referenceGrids: a few milliseconds
// each, of two generations, two algorithms and two ops) in CPU time, the
// best of three runs of each after one to warm up, and returns this
// machine's scale: their measured time over their modelled work. It is
// measured once per process. CPU time, not wall time: a busy machine's
// other processes stretch a point's wall time, not the work it is.
func Calibrate() (Calibration, error) {
	refOnce.Do(func() { refCal, refErr = calibrate() })
	return refCal, refErr
}

func calibrate() (Calibration, error) {
	var total time.Duration
	var work uint64
	for _, src := range referenceGrids {
		g, err := ParseGrid("(reference points)", []byte(src))
		if err != nil {
			return Calibration{}, err
		}
		for i := range g.points {
			best := time.Duration(math.MaxInt64)
			for k := range 4 {
				start := cpuTime()
				if _, err := g.runPoint(i); err != nil {
					return Calibration{}, fmt.Errorf("sweep: calibration: %w", err)
				}
				if k > 0 {
					best = min(best, cpuTime()-start)
				}
			}
			total += best
			work += g.specs[i].feat.work()
		}
	}
	return Calibration{Scale: total.Seconds() / float64(work), Reference: total}, nil
}

// referenceGrids are the calibration's points: 8 Trn1 and 4 Trn2 devices,
// ring and mesh, AllReduce and AllGather of 64 KiB in timing mode.
var referenceGrids = []string{`arch: sunda
axes:
  devices: [8]
  ops: [all_reduce, all_gather]
  algos: [ring, mesh]
  sizes: [64K]
`, `arch: cayman
axes:
  devices: [4]
  ops: [all_reduce, all_gather]
  algos: [ring, mesh]
  sizes: [64K]
`}

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
	fmt.Fprintln(tw, "#\thash\tsystem\tdevices\tnodes\ttopology\tranks\tmodel\tlink_bw\tlink_latency\top\talgo\tdtype\tsize(B)\tmode\thost(ms)\tmem")
	for _, it := range p.Items {
		sys := it.System
		if sys == "" {
			sys = it.Arch
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%.1f\t%s\n", it.Index, it.Hash, sys, it.Devices, it.Nodes, it.Topology,
			it.Ranks, it.Model, optText(it.LinkBW, "B/s"), optText(it.LinkLatency, "ps"), it.Op, it.Algo, it.Dtype, it.Size, it.Mode,
			it.HostSeconds*1e3, memlimit.Human(it.MemBytes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total: %s, estimated host time %.3g s with one worker, peak memory %s per worker (calibration: %.3g s per reference ns)\n",
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
