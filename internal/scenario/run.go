package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/hw/isa/asm"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/inputfile"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/plot"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/dve"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/runtime/program"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
	"github.com/neuronsim/neuronsim/sim/trace"
)

// ErrFailed marks a scenario whose step did not do what it said it would
// (an expected value, an expected error).
var ErrFailed = errors.New("scenario failed")

// Parsed is a scenario read and checked, ready to run.
type Parsed struct {
	*Scenario
	sys  *resolved
	read func(string) ([]byte, error) // reads the program files it names
	fsys fs.FS                        // the file system it and its programs are read from (nil: the host's)
	base *Base                        // the system restored in place of the described one, or nil
}

// readProgram reads a program file a scenario names: a regular file of at
// most asm.MaxSource bytes, as asm reads it.
func readProgram(path string) ([]byte, error) {
	return inputfile.Read(path, asm.MaxSource, asm.MaxSourceWhy)
}

// Parse reads a scenario from data (file names it in errors and locates
// program files), checking every value against the system it describes.
func Parse(file string, data []byte) (*Parsed, error) { return ParseWith(file, data, nil) }

// ParseWith is Parse for a scenario run on a restored system (base, or nil
// for none): the system section may then be left out, and the keys it
// gives must agree with the snapshot. The run restores base first.
func ParseWith(file string, data []byte, base *Base) (*Parsed, error) {
	var sc Scenario
	if err := strictyaml.Decode(file, data, &sc); err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	sc.file = file
	r, err := sc.check(&strictyaml.Decoder{File: file}, &root, base)
	if err != nil {
		return nil, err
	}
	p := &Parsed{Scenario: &sc, sys: r, read: readProgram, base: base}
	if base != nil {
		p.Steps = append([]Step{{Action: &SnapshotStep{Restore: base.From}, implicit: "the restore of " + base.From}}, p.Steps...)
	}
	return p, nil
}

// Load reads and checks a scenario file; its program files are read
// relative to it. The file must be a regular file (a FIFO or a device is
// refused before it is opened) of at most strictyaml.MaxBytes, as the
// decoder takes; a program file one of at most asm.MaxSource.
func Load(path string) (*Parsed, error) { return LoadWith(path, nil) }

// LoadWith is Load for a scenario run on a restored system (see ParseWith).
func LoadWith(path string, base *Base) (*Parsed, error) {
	data, err := inputfile.Read(path, strictyaml.MaxBytes, strictyaml.MaxBytesWhy)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return ParseWith(path, data, base)
}

// LoadFS reads and checks scenario name of a file system (the shipped,
// embedded ones); its program files are read from the same file system.
func LoadFS(fsys fs.FS, name string) (*Parsed, error) { return LoadFSWith(fsys, name, nil) }

// LoadFSWith is LoadFS for a scenario run on a restored system (see
// ParseWith).
func LoadFSWith(fsys fs.FS, name string, base *Base) (*Parsed, error) {
	data, err := inputfile.ReadFS(fsys, name, strictyaml.MaxBytes, strictyaml.MaxBytesWhy)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	p, err := ParseWith(name, data, base)
	if err != nil {
		return nil, err
	}
	p.fsys = fsys
	p.read = func(path string) ([]byte, error) {
		return inputfile.ReadFS(fsys, filepath.ToSlash(path), asm.MaxSource, asm.MaxSourceWhy)
	}
	return p, nil
}

// AddSnapshotSteps makes the run restore the system from restore (if set)
// before its steps and save it to save (if set) after them. The command
// line's snapshot restore uses LoadWith instead, which takes the system
// from the snapshot.
func (p *Parsed) AddSnapshotSteps(restore, save string) {
	if restore != "" {
		p.Steps = append([]Step{{Action: &SnapshotStep{Restore: restore}, implicit: "the restore of " + restore}}, p.Steps...)
	}
	if save != "" {
		p.Steps = append(p.Steps, Step{Action: &SnapshotStep{Save: save}, implicit: "the save to " + save})
	}
}

// LoadSnapshot reads a snapshot file within the limits o and the default
// memory limit and restores the system it holds, as the base of a scenario
// (LoadSnapshotWithin).
func LoadSnapshot(path string, o fabric.LoadOptions) (*Base, error) {
	return LoadSnapshotWithin(path, o, memlimit.Limit{})
}

// LoadSnapshotWithin reads a snapshot file within the limits o and restores
// the system it holds, as the base of a scenario (ParseWith). What loading
// may take is bounded by the memory limit too (the zero Limit:
// memlimit.Default()), less fabric.LoadBuffers: a file whose header
// declares more is refused before anything is decompressed, with an error
// wrapping memlimit.ErrTooLarge and fabric.ErrSnapshotLimit. Errors name
// the file.
func LoadSnapshotWithin(path string, o fabric.LoadOptions, limit memlimit.Limit) (*Base, error) {
	sys, err := loadSnapshot(path, o, limit)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe), errors.Is(err, inputfile.ErrNotRegular):
		return nil, fmt.Errorf("snapshot: %w", err) // names the file
	case err != nil:
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return &Base{From: path, System: sys}, nil
}

// Options tune a run.
type Options struct {
	// OutDir overrides the scenario's output directory.
	OutDir string
	// Progress, when set, receives a line per step as it starts.
	Progress io.Writer
	// Snapshot bounds what a snapshot restore step may load (zero:
	// fabric.DefaultMaxSnapshotBytes).
	Snapshot fabric.LoadOptions
	// MemLimit bounds the memory the run's steps may plan to use
	// (functional collectives and sweeps, DMA copies); the zero Limit
	// means memlimit.Default().
	MemLimit memlimit.Limit
}

// Summary is what a run did.
type Summary struct {
	Name        string
	Devices     int
	Steps       int // steps done: all of them unless the run failed
	Total       int // steps the scenario has (those the command line added too)
	VirtualTime time.Duration
	// FabricBytes are the bytes of the writes booked on the fabric, counted
	// when booked: those still in flight at the run's end (a collective
	// that timed out, a run stopped at a limit) are in it.
	FabricBytes uint64
	// InFlightUntil, when not 0, is when the last of those writes lands
	// (rounded up to the nanosecond): the run ended at VirtualTime with
	// writes still in flight. 0: every write booked has landed (or been
	// lost) by the run's end.
	InFlightUntil time.Duration
	Sweeps        []*nccom.Report
	Outputs       []string // files written, the report last
}

// Run runs the scenario: the system is built and every device brought up
// through the runtime, then the steps in order.
//
// Before anything is built, everything that can be known is checked
// (precheck): every output path can be written, every program file exists
// and assembles, every snapshot to restore loads and fits the system, and
// the memory the steps plan to use is within opt.MemLimit.
//
// Outputs are written under temporary names and take their own names only
// when the whole run has succeeded (internal/output); the report comes last
// and lists every file the run wrote with its size. A failing step stops
// the run with an error naming it; its report says FAILED at the top, the
// other outputs are dropped, and the files an earlier run left are not
// touched (only the report is replaced) — but for a sweep step stopped by
// a size that fails, whose finished sizes are kept (keepIncomplete).
func (p *Parsed) Run(opt Options) (*Summary, error) {
	r := p.sys
	dir := p.Outputs.Dir
	if opt.OutDir != "" {
		dir = opt.OutDir
	}
	if dir == "" {
		dir = "neuronsim-out"
	}
	if opt.MemLimit.Bytes == 0 {
		opt.MemLimit = memlimit.Default()
	}
	run := &runner{p: p, r: r, dir: dir, load: opt.Snapshot, limit: opt.MemLimit}
	defer run.abort()
	if err := run.precheck(opt); err != nil {
		return nil, err
	}
	c, err := buildCluster(r.clusterConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: system: %w", p.file, err)
	}
	run.c = c
	if r.engines != 0 {
		c.Exec.Engines = r.engines
	}
	if r.launchCost != nil {
		c.Exec.LaunchCost = *r.launchCost
	}
	sum := &Summary{Name: p.Name, Devices: r.devices, Total: len(p.Steps)}
	if p.Outputs.Pcap != "" {
		if err := c.System.CheckCapture(); err != nil {
			return nil, fmt.Errorf("%s: outputs.pcap: %w", p.file, err)
		}
		f, err := run.create(run.outPath(p.Outputs.Pcap))
		if err != nil {
			return nil, fmt.Errorf("%s: outputs.pcap: %w", p.file, err)
		}
		most := uint64(capture.DefaultMaxBytes)
		if n := p.Outputs.PcapMax; n != nil {
			most = uint64(*n)
		}
		if run.pcap, err = capture.NewWriter(f, capture.Options{MaxBytes: most}); err != nil {
			return nil, fmt.Errorf("%s: outputs.pcap: %w", p.file, err)
		}
		c.System.SetCapture(run.pcap, 0)
	}
	if p.Outputs.Trace != "" {
		run.trace = trace.New(0)
		if n := p.Outputs.TraceMax; n != nil {
			run.trace.SetMaxBytes(uint64(*n))
		}
		run.traceSystem()
	}
	fmt.Fprintf(&run.report, "scenario %s: %s\n", p.Name, p.Description)
	devices := units.Plural(int64(r.devices), "device", "devices")
	if so := c.System.Topology().Scale; so != nil {
		devices += fmt.Sprintf(" (%d nodes of %d over EFA, %s network)", so.Nodes, so.NodeDevices, so.Network)
	}
	fmt.Fprintf(&run.report, "system: %s, %s, switch %s, revision %#02x, topology %s, model %s, mode %s\n",
		r.gen, devices, r.family, r.revision, c.System.Topology().Kind, r.params.Model, c.Mode())
	var stepErr error
	for i := range p.Steps {
		s := &p.Steps[i]
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "step %d/%d: %s\n", i+1, len(p.Steps), s.Kind())
		}
		fmt.Fprintf(&run.report, "\n%s\n", p.stepHeader(i))
		run.index = i
		if err := s.Action.run(run); err != nil {
			stepErr = fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
			fmt.Fprintf(&run.report, "  FAILED: %v\n", err)
			break
		}
		sum.Steps++
	}
	sum.VirtualTime = time.Duration(c.System.Now()) / time.Duration(sim.Nanosecond) * time.Nanosecond
	sum.FabricBytes = c.System.Stats().Bytes
	if last := c.System.LastLanding(); last > c.System.Now() {
		sum.InFlightUntil = time.Duration((last + sim.Nanosecond - 1) / sim.Nanosecond)
	}
	sum.Sweeps = run.sweeps
	fabricBytes := fmt.Sprintf("fabric bytes %d", sum.FabricBytes)
	if sum.InFlightUntil != 0 {
		fabricBytes += fmt.Sprintf(" sent, writes in flight until %v", sum.InFlightUntil)
	}
	fmt.Fprintf(&run.report, "\nvirtual time %v, %s, %d of %d steps done\n", sum.VirtualTime, fabricBytes, sum.Steps, len(p.Steps))
	if stepErr != nil && run.incomplete {
		stepErr = run.keepIncomplete(stepErr)
	}
	if stepErr == nil {
		stepErr = run.checkFaults()
	}
	if stepErr == nil {
		stepErr = run.finish()
	}
	if err := run.writeReport(stepErr); err != nil && stepErr == nil {
		stepErr = err
	}
	sum.Outputs = run.manifest.Paths()
	return sum, stepErr
}

// buildCluster builds and brings up a run's system (a variable so tests can
// see whether a run got that far).
var buildCluster = cluster.New

// stepName names step i in messages: "steps[2] (collective)" by its index
// among the file's steps, or what the command line added.
func (p *Parsed) stepName(i int) string {
	s := &p.Steps[i]
	if s.implicit != "" {
		return fmt.Sprintf("%s (snapshot)", s.implicit)
	}
	return fmt.Sprintf("steps[%d] (%s)", p.fileIndex(i), s.Kind())
}

// stepHeader is step i's line in the report, numbered as the file numbers
// it (stepName's steps[N] is "step N"): a step the command line added is
// named, not numbered.
func (p *Parsed) stepHeader(i int) string {
	s := &p.Steps[i]
	if s.implicit != "" {
		return fmt.Sprintf("%s: %s (from the command line)", s.implicit, s.Kind())
	}
	return fmt.Sprintf("step %d: %s", p.fileIndex(i), s.Kind())
}

// fileIndex is step i's index among the steps the file gives.
func (p *Parsed) fileIndex(i int) int {
	n := 0
	for j := range i {
		if p.Steps[j].implicit == "" {
			n++
		}
	}
	return n
}

// runner carries a run's state.
type runner struct {
	p      *Parsed
	c      *cluster.Cluster
	r      *resolved
	report bytes.Buffer
	sweeps []*nccom.Report
	// incomplete: the step that failed is a sweep stopped by a size, its
	// report (the sizes before it, marked cluster.IncompleteKey) last in
	// sweeps.
	incomplete bool
	kept       bool // keepIncomplete wrote the json of that sweep
	dve        map[int]*dve.Loader
	dir        string // the output directory
	trace      *trace.Recorder
	// epoch prefixes the current system's trace tracks: a restored
	// system's time may go back before slices the trace already holds, so
	// its tracks are named apart, after the step that restored it as the
	// report numbers it ("restore at step 2: neuron0 …"), instead of
	// overlaying them (restoreEpoch).
	epoch  string
	pcap   *capture.Writer // the pcap output's writer, or nil
	load   fabric.LoadOptions
	limit  memlimit.Limit       // the memory the steps may plan to use (Options.MemLimit)
	index  int                  // the step running
	faults map[int]*faultRecord // the faults the run's steps scheduled on the current system, by their index there

	files    []*output.File          // outputs written so far, not yet committed, in order
	saved    map[string]*output.File // snapshot saves by path, for a later restore of the same run
	restores map[int]*fabric.System  // systems loaded by precheck, by step index
	programs map[int]programFile     // programs read and assembled by precheck, by step index
	manifest output.Manifest         // the files committed
}

// create starts an output of the run.
func (run *runner) create(path string) (*output.File, error) {
	f, err := output.Create(path)
	if err != nil {
		return nil, err
	}
	run.files = append(run.files, f)
	return f, nil
}

// abort drops every output not committed (a failed run leaves nothing that
// looks complete).
func (run *runner) abort() {
	for _, f := range run.files {
		f.Abort()
	}
}

// deviceTracer names one device's tracks in the system's trace.
type deviceTracer struct {
	rec    *trace.Recorder
	prefix string
}

// Slice implements sim.Tracer.
func (t deviceTracer) Slice(track, name string, start, end uint64, args map[string]string) {
	t.rec.Slice(t.prefix+track, name, start, end, args)
}

// traceSystem points every device of the (current) system at the trace.
func (run *runner) traceSystem() {
	if run.trace == nil {
		return
	}
	for _, d := range run.c.System.Devices() {
		d.SetTrace(deviceTracer{run.trace, run.epoch + d.Config().Name + " "})
	}
}

// restoreEpoch is the prefix of the trace tracks of the system step i
// restores: for a step of the file, "restore at step N: " by the step's
// number in the report (stepHeader). A restore the command line added
// before every step (snapshot restore FILE SCENARIO) gives the system the
// file's steps start on, with nothing in the trace before it: its tracks
// are named as a run without it names them, so that a scenario's tracks
// are named alike however it is run (until 2026-12-07 that restore counted
// as "restore 1", and the file's first restore step, step 2 of the
// report, was "restore 2"); one added later is named as the report names
// it ("the restore of FILE: ").
func (p *Parsed) restoreEpoch(i int) string {
	switch s := &p.Steps[i]; {
	case s.implicit == "":
		return fmt.Sprintf("restore at step %d: ", p.fileIndex(i))
	case i == 0:
		return ""
	default:
		return s.implicit + ": "
	}
}

func (run *runner) printf(format string, args ...any) {
	fmt.Fprintf(&run.report, "  "+format+"\n", args...)
}

// outPath is a file of the output directory (an absolute path as is).
func (run *runner) outPath(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(run.dir, name)
}

// finish writes the outputs that are made at the end — the trace, the
// last sweep's JSON, the plot — and the rest of the pcap, then commits
// every output but the report.
func (run *runner) finish() error {
	o := &run.p.Outputs
	if run.pcap != nil {
		if err := run.c.System.FlushCapture(); err != nil {
			return fmt.Errorf("%s: outputs.pcap: %w", run.p.file, err)
		}
		written, lost := run.c.System.CaptureStats()
		if run.pcap.Full() {
			fmt.Fprintf(&run.report, "\npcap %s: stopped at outputs.pcap_max (%s) after %s; %d not recorded\n",
				o.Pcap, units.FormatBytes(int64(run.pcap.MaxBytes())), units.Plural(int64(written), "packet", "packets"), lost)
		} else if lost > 0 {
			fmt.Fprintf(&run.report, "\npcap %s: %s, %d not recorded (too many in flight)\n", o.Pcap, units.Plural(int64(written), "packet", "packets"), lost)
		}
	}
	if run.trace != nil {
		f, err := run.create(run.outPath(o.Trace))
		if err != nil {
			return fmt.Errorf("%s: outputs.trace: %w", run.p.file, err)
		}
		if err := run.trace.WriteJSON(f); err != nil {
			return fmt.Errorf("%s: outputs.trace: %w", run.p.file, err)
		}
		if run.trace.Full() {
			_, dropped := run.trace.Len()
			fmt.Fprintf(&run.report, "\ntrace %s: stopped at outputs.trace_max (%s); %d slices not recorded\n",
				o.Trace, units.FormatBytes(int64(run.trace.MaxBytes())), dropped)
		} else if _, dropped := run.trace.Len(); dropped > 0 {
			fmt.Fprintf(&run.report, "\ntrace %s: stopped (%s); %d slices not recorded\n", o.Trace, run.trace.Stopped(), dropped)
		}
	}
	if len(run.sweeps) > 0 {
		f, err := run.create(run.outPath(run.jsonName()))
		if err != nil {
			return fmt.Errorf("%s: outputs.json: %w", run.p.file, err)
		}
		if err := run.sweeps[len(run.sweeps)-1].WriteJSON(f); err != nil {
			return fmt.Errorf("%s: outputs.json: %w", run.p.file, err)
		}
		if o.Plot != "" {
			var series []plot.Series
			for _, rep := range run.sweeps {
				series = append(series, plot.Series{Label: fmt.Sprintf("%s, %s", rep.Op, units.Plural(int64(rep.Ranks), "rank", "ranks")), Report: rep})
			}
			png, err := plot.PNG(run.p.Name, series)
			if err != nil {
				return fmt.Errorf("%s: outputs.plot: %w", run.p.file, err)
			}
			f, err := run.create(run.outPath(o.Plot))
			if err != nil {
				return fmt.Errorf("%s: outputs.plot: %w", run.p.file, err)
			}
			if _, err := f.Write(png); err != nil {
				return fmt.Errorf("%s: outputs.plot: %w", run.p.file, err)
			}
		}
	}
	for _, f := range run.files {
		if err := f.Commit(); err != nil {
			if errors.Is(err, output.ErrDone) {
				continue // a snapshot saved again, dropped
			}
			return err
		}
		run.manifest.Add(f.Path(), f.Size())
	}
	run.files = nil
	return nil
}

// keepIncomplete ends a run whose sweep step failed at a size, the sizes
// before it kept as fabric sweep keeps them: its rows are in the report
// (printed by the step, "# incomplete: …" above them) and, when that step
// is the last sweep step of the scenario — the one outputs.json is of —
// written to the json, marked "neuronsim_incomplete"; the plot and the
// pcap are not written (a picture or a capture cannot say it is
// incomplete), nor is any other output, as for every failed run. The
// error, err, names the size; what was kept is added to it.
func (run *runner) keepIncomplete(err error) error {
	kept := "the rows of the sizes before it are in the report"
	var werr error
	if run.lastSweepStep() == run.index {
		if werr = run.writeIncompleteJSON(); werr == nil {
			kept += fmt.Sprintf(" and written to outputs.json (%s), marked incomplete (neuronsim_incomplete)", run.jsonName())
			run.kept = true
		}
	}
	var dropped []string
	if run.p.Outputs.Plot != "" {
		dropped = append(dropped, "outputs.plot")
	}
	if run.p.Outputs.Pcap != "" {
		dropped = append(dropped, "outputs.pcap")
	}
	if len(dropped) > 0 {
		kept += "; " + strings.Join(dropped, ", ") + " not written"
	}
	if werr != nil {
		return fmt.Errorf("%w (%s; writing outputs.json: %v)", err, kept, werr)
	}
	return fmt.Errorf("%w (%s)", err, kept)
}

// lastSweepStep is the index of the scenario's last sweep step (-1: none).
func (run *runner) lastSweepStep() int {
	for i := len(run.p.Steps) - 1; i >= 0; i-- {
		if _, ok := run.p.Steps[i].Action.(*SweepStep); ok {
			return i
		}
	}
	return -1
}

// writeIncompleteJSON writes and commits the json of the last sweep, the
// one stopped by a size.
func (run *runner) writeIncompleteJSON() error {
	f, err := output.Create(run.outPath(run.jsonName()))
	if err != nil {
		return err
	}
	defer f.Abort() // after Commit, nothing happens
	if err := run.sweeps[len(run.sweeps)-1].WriteJSON(f); err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	run.manifest.Add(f.Path(), f.Size())
	return nil
}

// jsonName is the sweep JSON's file name.
func (run *runner) jsonName() string {
	if js := run.p.Outputs.JSON; js != "" {
		return js
	}
	return "sweep.json"
}

// reportName is the report's file name.
func (run *runner) reportName() string {
	if name := run.p.Outputs.Report; name != "" {
		return name
	}
	return "report.txt"
}

// writeReport writes the report: a status line first — complete, or FAILED
// with the error — then every step's result, then the files this run wrote
// with their sizes. A failed run's other outputs are dropped first.
func (run *runner) writeReport(runErr error) error {
	if runErr != nil {
		run.abort()
		run.files = nil
	}
	var b bytes.Buffer
	if runErr != nil {
		other := "no other output of this run was kept"
		if run.kept {
			other = fmt.Sprintf("of its other outputs only %s was kept, the failed sweep's finished sizes marked incomplete", run.jsonName())
		}
		fmt.Fprintf(&b, "status: FAILED: %v\n(%s; files in %s not listed below are not this run's)\n\n", runErr, other, run.dir)
	} else {
		fmt.Fprintf(&b, "status: complete\n\n")
	}
	b.Write(run.report.Bytes())
	path := run.outPath(run.reportName())
	fmt.Fprintf(&b, "\nfiles this run wrote:\n")
	run.manifest.WriteTo(&b, run.dir)
	fmt.Fprintf(&b, "  %s  (this report)\n", run.reportName())
	f, err := output.Create(path)
	if err != nil {
		return fmt.Errorf("%s: outputs.report: %w", run.p.file, err)
	}
	defer f.Abort()
	if _, err := f.Write(b.Bytes()); err != nil {
		return fmt.Errorf("%s: outputs.report: %w", run.p.file, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("%s: outputs.report: %w", run.p.file, err)
	}
	run.manifest.Add(path, f.Size())
	return nil
}

// precheck checks, before anything is built, what the run will need: the
// output directory and every output path (none twice), every snapshot to
// restore (it loads and fits the system; one saved by an earlier step is
// checked when it is restored), every program (it reads and assembles),
// and the memory the steps plan to use against opt.MemLimit.
func (run *runner) precheck(opt Options) error {
	p := run.p
	if err := output.CheckDir(run.dir); err != nil {
		return fmt.Errorf("%s: outputs.dir: %w", p.file, err)
	}
	if err := run.precheckPrograms(); err != nil {
		return err
	}
	if err := run.precheckMemory(opt.MemLimit); err != nil {
		return err
	}
	outs := run.outputs()
	if err := run.precheckNotInputs(outs); err != nil {
		return err
	}
	if err := run.precheckRestores(); err != nil {
		return err
	}
	if err := os.MkdirAll(run.dir, 0o755); err != nil {
		return fmt.Errorf("%s: outputs.dir: %w", p.file, err)
	}
	paths := make([]string, len(outs))
	for i, o := range outs {
		paths[i] = o.path
	}
	if j, i, file, ok := output.FindSame(paths); ok {
		return fmt.Errorf("%s: %s; nothing was run", p.file, output.Same(outs[j].where, outs[j].path, outs[i].where, outs[i].path, file))
	}
	for _, o := range outs {
		if err := output.Check(o.path); err != nil {
			return fmt.Errorf("%s: %s: %w", p.file, o.where, err)
		}
	}
	return nil
}

// precheckPrograms reads and assembles the program of every step that has
// one, for the step to run, and refuses an exec step's program with an
// engine block that has no last record or records after it
// (program.CheckEnds), or that must take more device time than an exec
// step may run (checkExecTime).
func (run *runner) precheckPrograms() error {
	p := run.p
	for i := range p.Steps {
		pa, ok := p.Steps[i].Action.(programAction)
		if !ok {
			continue
		}
		pf, err := run.assemble(pa.programStep())
		if err != nil {
			return fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
		}
		if _, exec := pa.(*ExecStep); exec {
			if err := program.CheckEnds(pf.bin); err != nil {
				return fmt.Errorf("%s: %s: %s: %w", p.file, p.stepName(i), pf.name, err)
			}
			if err := checkExecTime(run.r.gen, pa.programStep().Core, pf); err != nil {
				return fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
			}
		}
		if run.programs == nil {
			run.programs = map[int]programFile{}
		}
		run.programs[i] = pf
	}
	return nil
}

// precheckMemory refuses a step that plans to hold more host memory than
// limit (the zero Limit: memlimit.Default()), and a system whose devices
// alone would (cluster.FixedTimingMemory: each device's model, its share
// of the fabric and the runtime's stack on it; a what-if system of
// thousands of devices holds gigabytes before any step runs).
func (run *runner) precheckMemory(limit memlimit.Limit) error {
	p := run.p
	if limit.Bytes == 0 {
		limit = memlimit.Default()
	}
	for i := range p.Steps {
		m, ok := p.Steps[i].Action.(memoryPlanner)
		if !ok {
			continue
		}
		need, what, err := m.memory(run.r)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
		}
		if err := limit.Check(what, need); err != nil {
			return fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
		}
	}
	what := "the system of " + units.Plural(int64(run.r.devices), "device", "devices")
	if err := limit.Check(what, cluster.FixedTimingMemory(run.r.devices)); err != nil {
		return fmt.Errorf("%s: system: %w", p.file, err)
	}
	return nil
}

// outputFile is an output the run will write (or, in inputs, a file it
// reads): the key or step that names it, and its path.
type outputFile struct{ where, path string }

// outputs lists the files the run will write: the report, the sweep JSON
// and plot (with a sweep), the pcap, the trace, then every snapshot save
// (a path saved twice once).
func (run *runner) outputs() []outputFile {
	p := run.p
	outs := []outputFile{{"outputs.report", run.outPath(run.reportName())}}
	if hasSweep(p.Steps) {
		outs = append(outs, outputFile{"outputs.json", run.outPath(run.jsonName())})
		if p.Outputs.Plot != "" {
			outs = append(outs, outputFile{"outputs.plot", run.outPath(p.Outputs.Plot)})
		}
	}
	if p.Outputs.Pcap != "" {
		outs = append(outs, outputFile{"outputs.pcap", run.outPath(p.Outputs.Pcap)})
	}
	if p.Outputs.Trace != "" {
		outs = append(outs, outputFile{"outputs.trace", run.outPath(p.Outputs.Trace)})
	}
	saved := map[string]bool{}
	for i := range p.Steps {
		st, ok := p.Steps[i].Action.(*SnapshotStep)
		if !ok || st.Save == "" {
			continue
		}
		path := run.outPath(st.Save)
		if !saved[path] {
			where := p.stepName(i) + ".save"
			if p.Steps[i].implicit != "" {
				where = "the snapshot saved"
			}
			outs = append(outs, outputFile{where, path})
		}
		saved[path] = true
	}
	return outs
}

// inputs lists the files of the host's file system the run reads, each
// named as the scenario names it: the scenario file, every step's program
// file, every snapshot restored — but one an earlier step of the run
// saves, which is its own output.
func (run *runner) inputs() []outputFile {
	p := run.p
	var ins []outputFile
	if p.fsys == nil && p.file != "" {
		ins = append(ins, outputFile{"the scenario file", p.file})
	}
	saved := map[string]bool{}
	for i := range p.Steps {
		switch st := p.Steps[i].Action.(type) {
		case programAction:
			if ps := st.programStep(); ps.Program != "" && p.fsys == nil {
				ins = append(ins, outputFile{p.stepName(i) + ".program", p.programPath(ps)})
			}
		case *SnapshotStep:
			if st.Save != "" {
				saved[run.outPath(st.Save)] = true
				continue
			}
			path := run.outPath(st.Restore)
			switch {
			case saved[path]:
			case p.Steps[i].implicit != "":
				ins = append(ins, outputFile{"the snapshot restored", path})
			default:
				ins = append(ins, outputFile{p.stepName(i) + ".restore", path})
			}
		}
	}
	return ins
}

// precheckNotInputs refuses an output that is the same file as one the run
// reads (the same path, or a symbolic or hard link to it): writing it would
// replace the scenario, a program or a snapshot the run was given.
func (run *runner) precheckNotInputs(outs []outputFile) error {
	ins := run.inputs()
	for _, o := range outs {
		for _, in := range ins {
			if output.SameFile(o.path, in.path) {
				return fmt.Errorf("%s: %s %s: the same file as %s %s, which it would replace; nothing was run", run.p.file, o.where, o.path, in.where, in.path)
			}
		}
	}
	return nil
}

// precheckRestores loads every snapshot a step restores and checks that it
// fits the system, for the step to run — but one an earlier step saves,
// which is checked when it is restored. The restore the command line added
// for a base takes the base's system (once).
func (run *runner) precheckRestores() error {
	p := run.p
	saved := map[string]bool{}
	for i := range p.Steps {
		s := &p.Steps[i]
		st, ok := s.Action.(*SnapshotStep)
		if !ok {
			continue
		}
		if st.Save != "" {
			saved[run.outPath(st.Save)] = true
			continue
		}
		path := run.outPath(st.Restore)
		if saved[path] {
			continue // saved by an earlier step: checked when restored
		}
		sys := (*fabric.System)(nil)
		if p.base != nil && s.implicit != "" && st.Restore == p.base.From {
			if p.base.used {
				return fmt.Errorf("%s: %s: the system restored from it has been run on already; load the snapshot again", p.file, p.stepName(i))
			}
			p.base.used = true
			sys = p.base.System
		} else {
			var err error
			if sys, err = loadSnapshot(path, run.load, run.limit); err != nil {
				return fmt.Errorf("%s: %s: restore %s: %w", p.file, p.stepName(i), st.Restore, err)
			}
			if err := run.fits(st.Restore, sys); err != nil {
				return fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
			}
		}
		if run.restores == nil {
			run.restores = map[int]*fabric.System{}
		}
		run.restores[i] = sys
	}
	return nil
}
