package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/hw/isa/asm"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/plot"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/dve"
	"github.com/neuronsim/neuronsim/runtime/enc"
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
	base *Base                        // the system restored in place of the described one, or nil
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
	p := &Parsed{Scenario: &sc, sys: r, read: os.ReadFile, base: base}
	if base != nil {
		p.Steps = append([]Step{{Kind: "snapshot", Snapshot: &SnapshotStep{Restore: base.From}, implicit: "the restore of " + base.From}}, p.Steps...)
	}
	return p, nil
}

// Load reads and checks a scenario file; its program files are read
// relative to it.
func Load(path string) (*Parsed, error) { return LoadWith(path, nil) }

// LoadWith is Load for a scenario run on a restored system (see ParseWith).
func LoadWith(path string, base *Base) (*Parsed, error) {
	data, err := os.ReadFile(path)
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
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	p, err := ParseWith(name, data, base)
	if err != nil {
		return nil, err
	}
	p.read = func(path string) ([]byte, error) { return fs.ReadFile(fsys, filepath.ToSlash(path)) }
	return p, nil
}

// AddSnapshotSteps makes the run restore the system from restore (if set)
// before its steps and save it to save (if set) after them. The command
// line's snapshot restore uses LoadWith instead, which takes the system
// from the snapshot.
func (p *Parsed) AddSnapshotSteps(restore, save string) {
	if restore != "" {
		p.Steps = append([]Step{{Kind: "snapshot", Snapshot: &SnapshotStep{Restore: restore}, implicit: "the restore of " + restore}}, p.Steps...)
	}
	if save != "" {
		p.Steps = append(p.Steps, Step{Kind: "snapshot", Snapshot: &SnapshotStep{Save: save}, implicit: "the save to " + save})
	}
}

// LoadSnapshot reads a snapshot file within the limits o and restores the
// system it holds, as the base of a scenario (ParseWith). Errors name the
// file.
func LoadSnapshot(path string, o fabric.LoadOptions) (*Base, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	sys, err := fabric.LoadWith(f, o)
	if err != nil {
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
	Steps       int
	VirtualTime time.Duration
	FabricBytes uint64
	Sweeps      []*nccom.Report
	Outputs     []string // files written, the report last
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
// touched (only the report is replaced).
func (p *Parsed) Run(opt Options) (*Summary, error) {
	r := p.sys
	dir := p.Outputs.Dir
	if opt.OutDir != "" {
		dir = opt.OutDir
	}
	if dir == "" {
		dir = "neuronsim-out"
	}
	run := &runner{p: p, r: r, dir: dir, load: opt.Snapshot}
	defer run.abort()
	if err := run.precheck(opt); err != nil {
		return nil, err
	}
	params := r.params
	c, err := buildCluster(cluster.Config{Generation: r.gen, Devices: r.devices, Switch: r.family, Kind: r.kind, Params: &params,
		TimingOnly: r.timing, RanksPerDevice: r.ranksPer, BufferBytes: r.buffers, Revision: r.revision, Boot: r.boot, Reset: r.reset})
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
	sum := &Summary{Name: p.Name, Devices: r.devices}
	if p.Outputs.Pcap != "" {
		f, err := run.create(run.outPath(p.Outputs.Pcap))
		if err != nil {
			return nil, fmt.Errorf("%s: outputs.pcap: %w", p.file, err)
		}
		if run.pcap, err = capture.NewWriter(f, capture.Options{MaxBytes: uint64(p.Outputs.PcapMax)}); err != nil {
			return nil, fmt.Errorf("%s: outputs.pcap: %w", p.file, err)
		}
		c.System.SetCapture(run.pcap, 0)
	}
	if p.Outputs.Trace != "" {
		run.trace = trace.New(0)
		if p.Outputs.TraceMax > 0 {
			run.trace.SetMaxBytes(uint64(p.Outputs.TraceMax))
		}
		run.traceSystem()
	}
	fmt.Fprintf(&run.report, "scenario %s: %s\n", p.Name, p.Description)
	fmt.Fprintf(&run.report, "system: %s, %s, switch %s, revision %#02x, topology %s, model %s, mode %s\n",
		r.gen, units.Plural(int64(r.devices), "device", "devices"), r.family, r.revision, c.System.Topology().Kind, params.Model, c.Mode())
	var stepErr error
	for i := range p.Steps {
		s := &p.Steps[i]
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "step %d/%d: %s\n", i+1, len(p.Steps), s.Kind)
		}
		fmt.Fprintf(&run.report, "\nstep %d: %s\n", i, s.Kind)
		run.index = i
		if err := run.step(s); err != nil {
			stepErr = fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
			fmt.Fprintf(&run.report, "  FAILED: %v\n", err)
			break
		}
		sum.Steps++
	}
	sum.VirtualTime = time.Duration(c.System.Now()) / time.Duration(sim.Nanosecond) * time.Nanosecond
	sum.FabricBytes = c.System.Stats().Bytes
	sum.Sweeps = run.sweeps
	fmt.Fprintf(&run.report, "\nvirtual time %v, fabric bytes %d, %d of %d steps done\n", sum.VirtualTime, sum.FabricBytes, sum.Steps, len(p.Steps))
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
	n := 0
	for j := range i {
		if p.Steps[j].implicit == "" {
			n++
		}
	}
	return fmt.Sprintf("steps[%d] (%s)", n, s.Kind)
}

// runner carries a run's state.
type runner struct {
	p      *Parsed
	c      *cluster.Cluster
	r      *resolved
	report bytes.Buffer
	sweeps []*nccom.Report
	dve    map[int]*dve.Loader
	dir    string // the output directory
	trace  *trace.Recorder
	pcap   *capture.Writer // the pcap output's writer, or nil
	load   fabric.LoadOptions
	index  int // the step running

	files    []*output.File          // outputs written so far, not yet committed, in order
	saved    map[string]*output.File // snapshot saves by path, for a later restore of the same run
	restores map[int]*fabric.System  // systems loaded by precheck, by step index
	programs map[int]programFile     // programs read and assembled by precheck, by step index
	manifest output.Manifest         // the files committed
}

// programFile is a program step's file, read and assembled.
type programFile struct {
	name string
	bin  []byte
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
		d.SetTrace(deviceTracer{run.trace, d.Config().Name + " "})
	}
}

func (run *runner) printf(format string, args ...any) {
	fmt.Fprintf(&run.report, "  "+format+"\n", args...)
}

// step runs one step.
func (run *runner) step(s *Step) error {
	c := run.c
	switch s.Kind {
	case "bringup":
		for i, d := range c.Devices {
			up := d.Up
			run.printf("neuron%d: %s rev %#02x (%s), registers in BAR%d, routing id %d, waited %d not-ready reads, reset %v",
				i, up.Generation, up.Identity.Revision, up.Mode, up.Dev.(interface{ RegisterBAR() int }).RegisterBAR(), up.RoutingID, up.ReadyRetries, up.Reset)
			var hbm []string
			for _, b := range up.HBMChannelBytes {
				hbm = append(hbm, fmt.Sprintf("%d MiB", b>>20))
			}
			run.printf("  HBM channels as the driver sizes them: %s", strings.Join(hbm, ", "))
			for _, st := range up.Steps {
				run.printf("  %s: %s", st.Name, st.Detail)
			}
			if e := s.BringUp.ExpectReset; e != nil && up.Reset != *e {
				return fmt.Errorf("neuron%d: bring-up reset %v, expected %v: %w", i, up.Reset, *e, ErrFailed)
			}
			if e := s.BringUp.ExpectRegisterBAR; e != nil && up.Dev.(interface{ RegisterBAR() int }).RegisterBAR() != *e {
				return fmt.Errorf("neuron%d: registers in BAR%d, expected BAR%d: %w", i, up.Dev.(interface{ RegisterBAR() int }).RegisterBAR(), *e, ErrFailed)
			}
		}
	case "csr_read":
		st := s.CSRRead
		up := c.Devices[st.Device].Up
		v, err := up.CSR.Read(up.VA(st.Offset))
		if err != nil {
			return err
		}
		run.printf("neuron%d register %#x = %#08x", st.Device, st.Offset, v)
		if st.Expect != nil && v != *st.Expect {
			return fmt.Errorf("neuron%d register %#x = %#08x, expected %#08x: %w", st.Device, st.Offset, v, *st.Expect, ErrFailed)
		}
	case "csr_write":
		st := s.CSRWrite
		up := c.Devices[st.Device].Up
		if err := up.CSR.Write(up.VA(st.Offset), st.Value); err != nil {
			return err
		}
		run.printf("neuron%d register %#x ← %#08x", st.Device, st.Offset, st.Value)
	case "dve_load":
		return run.dveLoad(s.DVELoad)
	case "validate", "exec":
		return run.program(s)
	case "dma_copy":
		return run.dmaCopy(s.DMACopy)
	case "collective":
		return run.collective(s.Collective)
	case "sweep":
		return run.sweep(s.Sweep)
	case "fault":
		return run.fault(s.Fault)
	case "recover":
		if err := c.Recover(); err != nil {
			return err
		}
		run.printf("devices brought up again; queues given back")
	case "snapshot":
		return run.snapshot(s.Snapshot)
	case "reset":
		return run.reset(s.Reset)
	}
	return nil
}

func (run *runner) reset(st *ResetStep) error {
	c := run.c
	up := c.Devices[st.Device].Up
	start := c.System.Now()
	what := "device"
	if len(st.TPBs) == 0 {
		if err := up.ResetDevice(); err != nil {
			return err
		}
	} else {
		var mask uint32
		for _, nc := range st.TPBs {
			mask |= 1 << nc
		}
		if err := up.ResetTPBs(mask); err != nil {
			return err
		}
		what = fmt.Sprintf("NeuronCores %v", st.TPBs)
	}
	took := time.Duration(c.System.Now()-start) / time.Duration(sim.Nanosecond) * time.Nanosecond
	run.printf("neuron%d: %s reset in %v", st.Device, what, took)
	// Its engines and queues are back to power-on: the runtime lets go of
	// the system and brings it up again (no further reset).
	run.dve = nil
	if err := c.Reattach(c.System); err != nil {
		return err
	}
	run.traceSystem()
	return nil
}

// outPath is a file of the output directory (an absolute path as is).
func (run *runner) outPath(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(run.dir, name)
}

func (run *runner) snapshot(st *SnapshotStep) error {
	c := run.c
	run.dve = nil // the runtime lets go of everything, DVE caches included
	if st.Save != "" {
		c.Exec.Release()
		path := run.outPath(st.Save)
		if old := run.saved[path]; old != nil {
			old.Abort() // saved again: the later one is the output
		}
		f, err := run.create(path)
		if err != nil {
			return err
		}
		if err := c.System.Save(f); err != nil {
			return err
		}
		if run.saved == nil {
			run.saved = map[string]*output.File{}
		}
		run.saved[path] = f
		run.printf("system saved at %v to %s (%d bytes)", time.Duration(c.System.Now())/time.Duration(sim.Nanosecond)*time.Nanosecond, st.Save, f.Size())
		return c.Reattach(c.System)
	}
	sys := run.restores[run.index]
	if sys == nil {
		// Saved by an earlier step of this run: read from the output not
		// yet committed.
		path := run.outPath(st.Restore)
		from := path
		if f := run.saved[path]; f != nil {
			from = f.Temp()
		}
		var err error
		if sys, err = loadSnapshot(from, run.load); err != nil {
			return fmt.Errorf("restore %s: %w", st.Restore, err)
		}
		if err := run.fits(st.Restore, sys); err != nil {
			return err
		}
	}
	delete(run.restores, run.index)
	if run.pcap != nil {
		// The capture goes on with the restored system (continuing the
		// saved one's capture, if it had one); the system left behind
		// writes what has happened on it. A pcap cannot go back in time.
		if err := c.System.StopCapture(); err != nil {
			return err
		}
		if last, ok := run.pcap.LastPS(); ok && uint64(sys.Now()) < last {
			return fmt.Errorf("%s is at %v, before packets the pcap output already holds (up to %v): a capture cannot go back in time; restore before any fabric traffic, or drop outputs.pcap",
				st.Restore, time.Duration(sys.Now())/time.Duration(sim.Nanosecond)*time.Nanosecond, time.Duration(last/1000)*time.Nanosecond)
		}
		sys.SetCapture(run.pcap, 0)
	}
	if err := c.Reattach(sys); err != nil {
		return err
	}
	run.traceSystem()
	run.printf("system restored from %s at %v", st.Restore, time.Duration(sys.Now())/time.Duration(sim.Nanosecond)*time.Nanosecond)
	return nil
}

func (run *runner) dveLoad(st *DVELoadStep) error {
	devs := st.Devices
	if len(devs) == 0 {
		for i := range run.c.Devices {
			devs = append(devs, i)
		}
	}
	if run.dve == nil {
		run.dve = map[int]*dve.Loader{}
	}
	var bytes uint64
	loads := 0
	for _, i := range devs {
		d := run.c.Devices[i]
		l := run.dve[i]
		if l == nil {
			l = dve.NewLoader(d.DMA, d.Mem, run.c.Tables)
			run.dve[i] = l
		}
		cores := st.Cores
		if len(cores) == 0 {
			for nc := range d.Up.Geometry.NeuronCores {
				cores = append(cores, nc)
			}
		}
		for _, nc := range cores {
			rep, err := l.Load(nc, nil)
			if err != nil {
				return fmt.Errorf("neuron%d core %d: %w", i, nc, err)
			}
			bytes += rep.Bytes
			loads++
		}
	}
	run.printf("default DVE tables on %s of %s: %s moved", units.Plural(int64(loads), "core", "cores"), units.Plural(int64(len(devs)), "device", "devices"), units.Plural(int64(bytes), "byte", "bytes"))
	return nil
}

// source returns a program step's text and its name.
func (run *runner) source(ps *ProgramStep) (string, []byte, error) {
	if ps.Source != "" {
		return "<source>", []byte(ps.Source), nil
	}
	path := ps.Program
	if !filepath.IsAbs(path) && run.p.file != "" {
		path = filepath.Join(filepath.Dir(run.p.file), path)
	}
	b, err := run.p.read(path)
	return path, b, err
}

// assemble reads and assembles a program step's program.
func (run *runner) assemble(ps *ProgramStep) (programFile, error) {
	name, src, err := run.source(ps)
	if err != nil {
		return programFile{}, err
	}
	bin, err := asm.Assemble(name, src)
	if err != nil {
		return programFile{}, err
	}
	return programFile{name, bin}, nil
}

func (run *runner) program(s *Step) error {
	ps := s.Validate
	if s.Kind == "exec" {
		ps = s.Exec
	}
	pf, ok := run.programs[run.index]
	if !ok {
		var err error
		if pf, err = run.assemble(ps); err != nil {
			return err
		}
	}
	name, bin := pf.name, pf.bin
	runner, err := run.c.Runner(ps.Device, ps.Core)
	if err != nil {
		return err
	}
	if s.Kind == "validate" {
		_, _, err := program.Validate(bin, runner.Validator)
		want := ps.Expect
		if want == "" {
			want = "valid"
		}
		got := "valid"
		if err != nil {
			got = "invalid"
			run.printf("%s: %v", name, err)
		}
		run.printf("%s: %s, %s on %s", name, units.Plural(int64(len(bin)/64), "record", "records"), got, run.r.gen)
		if got != want {
			return fmt.Errorf("%s is %s on %s, expected %s: %w", name, got, run.r.gen, want, ErrFailed)
		}
		return nil
	}
	res, err := runner.Run(bin)
	if err != nil {
		return err
	}
	for _, e := range res.Engines {
		run.printf("neuron%d core %d %s: %s, busy %v", ps.Device, ps.Core, e.Engine, units.Plural(int64(e.Retired), "record", "records"), e.Busy)
	}
	return nil
}

func (run *runner) dmaCopy(st *DMACopyStep) error {
	d := run.c.Devices[st.Device]
	n := uint64(st.Bytes)
	h, err := d.Mem.Alloc(dmem.Request{Size: n, Channel: dmem.Any, NC: st.Core, Name: "scenario.copy"})
	if err != nil {
		return err
	}
	defer d.Mem.Free(h)
	blk, err := d.Mem.Info(h)
	if err != nil {
		return err
	}
	host := d.DMA.Host()
	src, err := host.HostAlloc(n, 4096)
	if err != nil {
		return err
	}
	defer host.HostFree(src)
	dst, err := host.HostAlloc(n, 4096)
	if err != nil {
		return err
	}
	defer host.HostFree(dst)
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + int(run.p.System.Seed))
	}
	if err := host.HostWrite(src, data); err != nil {
		return err
	}
	geo := d.Up.Geometry
	start := run.c.System.Now()
	if _, err := d.DMA.Copy(st.Core, blk.Addr, geo.HostAddress(src), n); err != nil {
		return err
	}
	if _, err := d.DMA.Copy(st.Core, geo.HostAddress(dst), blk.Addr, n); err != nil {
		return err
	}
	took := run.c.System.Now() - start
	back := make([]byte, n)
	if err := host.HostRead(dst, back); err != nil {
		return err
	}
	if run.r.timing {
		run.printf("neuron%d core %d: %s host → device → host in %v (timing-only: bytes from the host move, the way back does not)", st.Device, st.Core, units.Plural(int64(n), "byte", "bytes"), took)
		return nil
	}
	if !bytes.Equal(data, back) {
		return fmt.Errorf("neuron%d core %d: the bytes copied back differ: %w", st.Device, st.Core, ErrFailed)
	}
	run.printf("neuron%d core %d: %s host → device → host in %v, checked", st.Device, st.Core, units.Plural(int64(n), "byte", "bytes"), took)
	return nil
}

// words parses a collective's op, algo and dtype (checked at parse time).
func words(opS, algoS, dtypeS string) (enc.Op, enc.Algo, enc.Dtype) {
	op, _ := enc.ParseOp(opS)
	algo := enc.Auto
	if algoS != "" {
		algo, _ = enc.ParseAlgo(algoS)
	}
	d := enc.Float32
	if dtypeS != "" {
		d, _ = enc.ParseDtype(dtypeS)
	}
	return op, algo, d
}

func (run *runner) collective(st *CollectiveStep) error {
	op, algo, d := words(st.Op, st.Algo, st.Dtype)
	opt := enc.Options{Chunks: 1}
	if st.Chunks != nil {
		opt.Chunks = *st.Chunks
	}
	sch, err := enc.Build(op, algo, run.c.Ranks(), int64(st.Size), d.Size(), opt)
	if err != nil {
		return err
	}
	if need := collective.LayoutOf(sch, 0).End; need > run.r.buffers {
		return fmt.Errorf("%s of %d bytes needs %d bytes of buffers per rank; system.buffer_bytes is %d", op, st.Size, need, run.r.buffers)
	}
	var res collective.Result
	if run.r.timing {
		res, err = run.c.Run(sch, d)
	} else {
		res, err = run.c.Check(sch, d, run.p.System.Seed, opt)
	}
	if st.ExpectError != "" {
		if err == nil {
			return fmt.Errorf("%s succeeded; expected an error containing %q: %w", op, st.ExpectError, ErrFailed)
		}
		if !strings.Contains(err.Error(), st.ExpectError) {
			return fmt.Errorf("%s failed with %q, not containing %q: %w", op, err, st.ExpectError, ErrFailed)
		}
		run.printf("%s %s of %d bytes failed as expected: %v", sch.Algo, op, st.Size, err)
		return nil
	}
	if err != nil {
		return err
	}
	row, err := nccom.NewRow(op.String(), run.c.Ranks(), int64(st.Size), d.Size(), d.String(), res.TimePS, sch.Algo.String())
	if err != nil {
		return err
	}
	check := "timing only"
	if !run.r.timing {
		check = "checked against the CPU reference"
	}
	run.printf("%s %s of %s (%s) on %s: %.2f us, algbw %.2f GB/s, busbw %.2f GB/s, %s",
		sch.Algo, op, units.Plural(int64(st.Size), "byte", "bytes"), d, units.Plural(int64(run.c.Ranks()), "rank", "ranks"), row.TimeUS, row.AlgBW, row.BusBW, check)
	return nil
}

func (run *runner) sweep(st *SweepStep) error {
	op, algo, d := words(st.Op, st.Algo, st.Dtype)
	sizes, err := run.sweepSizes(st)
	if err != nil {
		return err
	}
	need, err := cluster.BufferNeed(op, algo, run.c.Ranks(), d, sizes, enc.Options{})
	if err != nil {
		return err
	}
	if need > run.r.buffers {
		return fmt.Errorf("the sweep's largest size needs %d bytes of buffers per rank; system.buffer_bytes is %d", need, run.r.buffers)
	}
	rep, err := run.c.Sweep(cluster.Sweep{Op: op, Algo: algo, Dtype: d, Sizes: sizes, Seed: run.p.System.Seed})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		run.printf("%s", line)
	}
	run.sweeps = append(run.sweeps, rep)
	return nil
}

func (run *runner) fault(st *FaultStep) error {
	s := run.c.System
	// st.In was checked against units.MaxTimePS at parse time, so the sum
	// does not wrap; it may still pass the latest time a clock may reach.
	in := sim.FromDuration(st.In)
	f := fabric.Fault{At: s.Now() + in, Device: st.Device}
	if uint64(f.At) > units.MaxTimePS {
		return fmt.Errorf("a fault in %v from now (%v) passes the latest virtual time, %v", st.In, s.Now(), sim.Time(units.MaxTimePS))
	}
	switch st.Kind {
	case "device_reset":
		f.Kind = fabric.DeviceReset
	default:
		f.Kind = fabric.LinkDown
		if st.Kind == "link_up" {
			f.Kind = fabric.LinkUp
		}
		to, err := node(s.Topology(), st.To)
		if err != nil {
			return err
		}
		id, ok := s.LinkBetween(st.Device, to)
		if !ok {
			return fmt.Errorf("no link from neuron%d to %s in a %s topology", st.Device, st.To, s.Topology().Kind)
		}
		f.Link = id
	}
	if err := s.ScheduleFault(f); err != nil {
		return err
	}
	run.printf("%s scheduled at %v (in %v)", st.Kind, time.Duration(f.At)/time.Duration(sim.Nanosecond)*time.Nanosecond, st.In)
	return nil
}

// node finds a topology node by device number or name.
func node(t *fabric.Topology, name string) (int, error) {
	if i, err := strconv.Atoi(name); err == nil && i >= 0 && i < t.Devices {
		return i, nil
	}
	for i, n := range t.Nodes {
		if n.Name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no node %q in the topology", name)
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
			fmt.Fprintf(&run.report, "\npcap %s: stopped at outputs.pcap_max (%s) after %d packets; %d packets not recorded\n",
				o.Pcap, memlimit.Human(run.pcap.MaxBytes()), written, lost)
		} else if lost > 0 {
			fmt.Fprintf(&run.report, "\npcap %s: %d packets, %d not recorded (too many in flight)\n", o.Pcap, written, lost)
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
				o.Trace, memlimit.Human(run.trace.MaxBytes()), dropped)
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
		fmt.Fprintf(&b, "status: FAILED: %v\n(no other output of this run was kept; files in %s not listed below are not this run's)\n\n", runErr, run.dir)
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

// loadSnapshot reads and restores a snapshot file within the limits o.
func loadSnapshot(path string, o fabric.LoadOptions) (*fabric.System, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return fabric.LoadWith(f, o)
}

// fits checks that a restored system is one this scenario's steps can run
// on: the same generation and device count.
func (run *runner) fits(name string, sys *fabric.System) error {
	if got := sys.Topology().Devices; got != run.r.devices {
		return fmt.Errorf("%s holds a system of %s; this scenario's has %d", name, units.Plural(int64(got), "device", "devices"), run.r.devices)
	}
	if g := sys.Device(0).Config().Generation; g != run.r.gen {
		return fmt.Errorf("%s holds a %s system; this scenario's is %s", name, g, run.r.gen)
	}
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
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Kind != "validate" && s.Kind != "exec" {
			continue
		}
		ps := s.Validate
		if s.Kind == "exec" {
			ps = s.Exec
		}
		pf, err := run.assemble(ps)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
		}
		if run.programs == nil {
			run.programs = map[int]programFile{}
		}
		run.programs[i] = pf
	}
	limit := opt.MemLimit
	if limit.Bytes == 0 {
		limit = memlimit.Default()
	}
	for i := range p.Steps {
		need, what, err := run.memoryOf(&p.Steps[i])
		if err != nil {
			return fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
		}
		if err := limit.Check(what, need); err != nil {
			return fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
		}
	}
	type out struct{ where, path string }
	outs := []out{{"outputs.report", run.outPath(run.reportName())}}
	hasSweep := false
	for i := range p.Steps {
		hasSweep = hasSweep || p.Steps[i].Kind == "sweep"
	}
	if hasSweep {
		outs = append(outs, out{"outputs.json", run.outPath(run.jsonName())})
		if p.Outputs.Plot != "" {
			outs = append(outs, out{"outputs.plot", run.outPath(p.Outputs.Plot)})
		}
	}
	if p.Outputs.Pcap != "" {
		outs = append(outs, out{"outputs.pcap", run.outPath(p.Outputs.Pcap)})
	}
	if p.Outputs.Trace != "" {
		outs = append(outs, out{"outputs.trace", run.outPath(p.Outputs.Trace)})
	}
	saved := map[string]bool{}
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Kind != "snapshot" {
			continue
		}
		if st := s.Snapshot; st.Save != "" {
			path := run.outPath(st.Save)
			if !saved[path] {
				outs = append(outs, out{p.stepName(i) + ".save", path})
			}
			saved[path] = true
			continue
		}
		path := run.outPath(s.Snapshot.Restore)
		if saved[path] {
			continue // saved by an earlier step: checked when restored
		}
		sys := (*fabric.System)(nil)
		if p.base != nil && s.implicit != "" && s.Snapshot.Restore == p.base.From {
			if p.base.used {
				return fmt.Errorf("%s: %s: the system restored from it has been run on already; load the snapshot again", p.file, p.stepName(i))
			}
			p.base.used = true
			sys = p.base.System
		} else {
			var err error
			if sys, err = loadSnapshot(path, run.load); err != nil {
				return fmt.Errorf("%s: %s: restore %s: %w", p.file, p.stepName(i), s.Snapshot.Restore, err)
			}
			if err := run.fits(s.Snapshot.Restore, sys); err != nil {
				return fmt.Errorf("%s: %s: %w", p.file, p.stepName(i), err)
			}
		}
		if run.restores == nil {
			run.restores = map[int]*fabric.System{}
		}
		run.restores[i] = sys
	}
	if err := os.MkdirAll(run.dir, 0o755); err != nil {
		return fmt.Errorf("%s: outputs.dir: %w", p.file, err)
	}
	seen := map[string]string{}
	for _, o := range outs {
		abs, err := filepath.Abs(o.path)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", p.file, o.where, err)
		}
		if other, ok := seen[abs]; ok {
			return fmt.Errorf("%s: %s: %s is also %s's file", p.file, o.where, o.path, other)
		}
		seen[abs] = o.where
		if err := output.Check(o.path); err != nil {
			return fmt.Errorf("%s: %s: %w", p.file, o.where, err)
		}
	}
	return nil
}

// memoryOf estimates the host memory a step holds at its peak and names
// it: a functional collective or sweep (cluster.FunctionalMemory), a DMA
// copy (its data and the copy read back, both host buffers, the device
// pages, doubled for the collector's headroom). Other steps hold little.
func (run *runner) memoryOf(s *Step) (uint64, string, error) {
	r := run.r
	ranks := r.devices * r.ranksPer
	switch s.Kind {
	case "collective":
		if r.timing {
			return 0, "", nil
		}
		st := s.Collective
		op, algo, d := words(st.Op, st.Algo, st.Dtype)
		opt := enc.Options{Chunks: 1}
		if st.Chunks != nil {
			opt.Chunks = *st.Chunks
		}
		need, err := cluster.FunctionalMemory(op, algo, ranks, d, []int64{int64(st.Size)}, opt)
		return need, fmt.Sprintf("a functional %s of %s on %d ranks", op, memlimit.Human(uint64(st.Size)), ranks), err
	case "sweep":
		if r.timing {
			return 0, "", nil
		}
		st := s.Sweep
		op, algo, d := words(st.Op, st.Algo, st.Dtype)
		sizes, err := run.sweepSizes(st)
		if err != nil {
			return 0, "", err
		}
		need, err := cluster.FunctionalMemory(op, algo, ranks, d, sizes, enc.Options{})
		return need, fmt.Sprintf("a functional %s sweep up to %s on %d ranks", op, memlimit.Human(uint64(sizes[len(sizes)-1])), ranks), err
	case "dma_copy":
		n := uint64(s.DMACopy.Bytes)
		return 2 * 5 * n, fmt.Sprintf("a DMA copy of %s", memlimit.Human(n)), nil
	}
	return 0, "", nil
}

// sweepSizes returns a sweep step's sizes.
func (run *runner) sweepSizes(st *SweepStep) ([]int64, error) {
	return sweepSizesFor(st, run.r.devices*run.r.ranksPer)
}

// sweepSizesFor returns a sweep step's sizes on a number of ranks.
func sweepSizesFor(st *SweepStep, ranks int) ([]int64, error) {
	op, _, d := words(st.Op, st.Algo, st.Dtype)
	var factor, step int64 // nccom.Sizes: 0 is neither given (checked at parse time)
	if st.Factor != nil {
		factor = *st.Factor
	}
	if st.Step != nil {
		step = int64(*st.Step)
	}
	return nccom.Sizes(int64(st.Min), int64(st.Max), factor, step, op.SizeAlign(d.Size(), ranks))
}
