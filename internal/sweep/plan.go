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
	"strconv"
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

// featureCounter measures a schedule's features from its transfers, given
// one at a time in any order with their step's index (enc.Count's visit).
type featureCounter struct {
	f    features
	sent [][]uint64 // sent[step]: a bit per rank that sends in the step
}

// newFeatureCounter measures a schedule of ranks ranks.
func newFeatureCounter(ranks int) *featureCounter {
	return &featureCounter{f: features{ranks: ranks}}
}

// add counts transfer x of step st.
func (fc *featureCounter) add(st int, x enc.Xfer) {
	fc.f.xfers++
	fc.f.bytes += x.Len
	for len(fc.sent) <= st {
		fc.sent = append(fc.sent, nil)
	}
	if x.Src < 0 || x.Src >= fc.f.ranks {
		return
	}
	if fc.sent[st] == nil {
		fc.sent[st] = make([]uint64, (fc.f.ranks+63)/64)
	}
	if w, bit := &fc.sent[st][x.Src/64], uint64(1)<<(x.Src%64); *w&bit == 0 {
		*w |= bit
		fc.f.rankSteps++
	}
}

// features returns the features of the schedule whose transfers were
// added; head is the schedule (its steps need not be there).
func (fc *featureCounter) features(head *enc.Schedule) features {
	f := fc.f
	f.buffers = collective.LayoutOf(head, 0).End
	return f
}

// The constants of the host-time model, in nanoseconds of CPU time of the
// machine they were fitted on (a 2-core x86-64 machine), by least squares
// of the relative error (weights 1/measured², non-negative) over every
// point of testdata/estimate*.yaml, testdata/fit/*.yaml (every generation,
// 1 to 64 devices, 1 to 4 ranks per device, timing and functional, both
// models) and the reference points, each point's CPU time the best of 2
// or 3 runs as a sweep runs them (no collection between), with the
// reference points' total work held to their total time (Calibrate scales
// every estimate by that ratio); TestEstimates keeps them honest. The
// block's first line says when and on how many points. To refit them (after a change to what a point costs the host), run
//
//	NEURONSIM_FIT_ESTIMATES=1 go test ./internal/sweep/ -run TestFitEstimates -count=1 -v
//
// (about 2 minutes) and paste the block it prints over this one.
//
// workBase is a point's own: the schedule, the tables, the executor.
// Bringing a device up through the runtime (workPerDevice) is most of a
// small point, and more than in proportion to the devices (workDevPair, by
// generation, per device squared: measured, a point of 16 devices costs
// more than four of 4), and each rank adds its queues and buffers
// (workPerRank). A
// transfer is cut into a descriptor per DMA engine of its rank
// (collective.Calibrated's engines; one with ideal endpoints): workPerDesc,
// and workDescRank per rank, the ranks whose events share the fabric's
// queue; each step a rank sends in costs its semaphores and program
// (workRankStep). A byte moved costs little in timing mode (workPerByte by
// model: the fabric moves chunks, not bytes), and a lot in functional mode
// (generated, copied, reduced and checked: workPerByteFn, and
// workPerByteHF for bf16 and fp16, converted to reduce), and so does a byte
// of the ranks' buffers (features.payload: generated, copied in and out,
// checked against the CPU reference): workPerBufFn, workPerBufHF.
var (
	// Fitted by TestFitEstimates on 2026-12-02: 832 points.
	workBase      = 126.2
	workPerDevice = map[hwarch.Generation]float64{hwarch.Sunda: 26.4e3, hwarch.Cayman: 67.7e3, hwarch.Mariana: 72.5e3}
	workDevPair   = map[hwarch.Generation]float64{hwarch.Sunda: 400.8, hwarch.Cayman: 4486.0, hwarch.Mariana: 3638.0}
	workPerRank   = 24.9e3
	workPerDesc   = 874.4
	workDescRank  = 4.651
	workRankStep  = 4888.0
	workPerByte   = map[fabric.Model]float64{fabric.Aware: 0.003889, fabric.Free: 0.002273}
	workPerByteFn = 1.075
	workPerByteHF = 2.259
	workPerBufFn  = 2.763
	workPerBufHF  = 4.576
)

// The constants of the memory model (spec.mem).
var (
	memPerDevice   = map[hwarch.Generation]uint64{hwarch.Sunda: 480 << 10, hwarch.Cayman: 1 << 20, hwarch.Mariana: 1 << 20}
	memPerXfer     = uint64(1 << 10)
	memBytesPerMem = int64(512) // functional mode: a byte of heap per this many bytes moved besides the payloads (the fabric's chunk records; measured 1/400..1/560)
)

// work is the point's host-time model in reference nanoseconds, rounded
// to a whole number so that sharding by it is exact.
func (f features) work() uint64 {
	descs := float64(f.xfers) * float64(f.engines)
	w := workBase + workPerDevice[f.gen]*float64(f.devices) + workDevPair[f.gen]*float64(f.devices)*float64(f.devices) + workPerRank*float64(f.ranks) +
		descs*(workPerDesc+workDescRank*float64(f.ranks)) + workRankStep*float64(f.rankSteps)
	switch {
	case f.functional && (f.dtype == enc.BFloat16 || f.dtype == enc.Float16):
		w += workPerByteHF*float64(f.bytes) + workPerBufHF*f.payload()
	case f.functional:
		w += workPerByteFn*float64(f.bytes) + workPerBufFn*f.payload()
	default:
		w += workPerByte[f.model] * float64(f.bytes)
	}
	return uint64(math.Min(math.Round(w), math.MaxInt64))
}

// payload is the bytes of the ranks' buffer areas: in functional mode
// what is generated, copied in and out and checked against the CPU
// reference, whether or not the schedule moves it.
func (f features) payload() float64 { return float64(f.buffers) * float64(f.ranks) }

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
			if _, err := g.cpuTimeOf(i); err != nil { // a run to warm up
				return Calibration{}, fmt.Errorf("sweep: calibration: %w", err)
			}
			best, err := g.bestCPUTime(i, 3)
			if err != nil {
				return Calibration{}, fmt.Errorf("sweep: calibration: %w", err)
			}
			total += best
			work += g.specs[i].feat.work()
		}
	}
	return Calibration{Scale: total.Seconds() / float64(work), Reference: total}, nil
}

// cpuTimeOf runs point i of g once and returns the CPU time it took.
func (g *Grid) cpuTimeOf(i int) (time.Duration, error) {
	start := cpuTime()
	_, err := g.runPoint(i)
	return cpuTime() - start, err
}

// bestCPUTime runs point i of g the given number of times and returns the
// least CPU time of those runs: a collection or a cold cache lands on one
// run, not on all.
func (g *Grid) bestCPUTime(i, runs int) (time.Duration, error) {
	best := time.Duration(math.MaxInt64)
	for range runs {
		d, err := g.cpuTimeOf(i)
		if err != nil {
			return 0, err
		}
		best = min(best, d)
	}
	return best, nil
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
	fmt.Fprintln(tw, "#\thash\tsystem\tdevices\tnodes\ttopology\tranks\tmodel\tlink_bw\tlink_latency\top\talgo\tchannels\tdtype\tsize(B)\tmode\thost(ms)\tmem")
	for _, it := range p.Items {
		sys := it.System
		if sys == "" {
			sys = it.devicesWord() // Inf2 where it is, else the generation
		}
		channels := "-" // the points channels do not apply to
		if it.Channels > 0 {
			channels = strconv.Itoa(it.Channels)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%.1f\t%s\n", it.Index, it.Hash, sys, it.Devices, it.Nodes, it.Topology,
			it.Ranks, it.Model, optText(it.LinkBW, "B/s"), optText(it.LinkLatency, "ps"), it.Op, it.Algo, channels, it.Dtype, it.Size, it.Mode,
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
