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
	"github.com/neuronsim/neuronsim/internal/units"
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
}

// Parse reads a scenario from data (file names it in errors and locates
// program files), checking every value against the system it describes.
func Parse(file string, data []byte) (*Parsed, error) {
	var sc Scenario
	if err := Decode(file, data, &sc); err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	sc.file = file
	r, err := sc.check(&Decoder{File: file}, &root)
	if err != nil {
		return nil, err
	}
	return &Parsed{Scenario: &sc, sys: r, read: os.ReadFile}, nil
}

// Load reads and checks a scenario file; its program files are read
// relative to it.
func Load(path string) (*Parsed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(path, data)
}

// LoadFS reads and checks scenario name of a file system (the shipped,
// embedded ones); its program files are read from the same file system.
func LoadFS(fsys fs.FS, name string) (*Parsed, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	p, err := Parse(name, data)
	if err != nil {
		return nil, err
	}
	p.read = func(path string) ([]byte, error) { return fs.ReadFile(fsys, filepath.ToSlash(path)) }
	return p, nil
}

// AddSnapshotSteps makes the run restore the system from restore (if set)
// before its steps and save it to save (if set) after them: the command
// line's snapshot restore and save.
func (p *Parsed) AddSnapshotSteps(restore, save string) {
	if restore != "" {
		p.Steps = append([]Step{{Kind: "snapshot", Snapshot: &SnapshotStep{Restore: restore}}}, p.Steps...)
	}
	if save != "" {
		p.Steps = append(p.Steps, Step{Kind: "snapshot", Snapshot: &SnapshotStep{Save: save}})
	}
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
}

// Summary is what a run did.
type Summary struct {
	Name        string
	Devices     int
	Steps       int
	VirtualTime time.Duration
	FabricBytes uint64
	Sweeps      []*nccom.Report
	Outputs     []string // files written
}

// Run runs the scenario: the system is built and every device brought up
// through the runtime, then the steps in order. The report (and the other
// outputs) are written under the output directory; a failing step stops the
// run with an error naming it, after the report so far is written.
func (p *Parsed) Run(opt Options) (*Summary, error) {
	r := p.sys
	params := r.params
	c, err := cluster.New(cluster.Config{Generation: r.gen, Devices: r.devices, Switch: r.family, Kind: r.kind, Params: &params,
		TimingOnly: r.timing, RanksPerDevice: r.ranksPer, BufferBytes: r.buffers, Revision: r.revision, Boot: r.boot, Reset: r.reset})
	if err != nil {
		return nil, fmt.Errorf("%s: system: %w", p.file, err)
	}
	if r.engines != 0 {
		c.Exec.Engines = r.engines
	}
	if r.launchCost != nil {
		c.Exec.LaunchCost = *r.launchCost
	}
	dir := p.Outputs.Dir
	if opt.OutDir != "" {
		dir = opt.OutDir
	}
	if dir == "" {
		dir = "neuronsim-out"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("scenario outputs: %w", err)
	}
	sum := &Summary{Name: p.Name, Devices: r.devices}
	var pcapFile *os.File
	var pcap *capture.Writer
	if p.Outputs.Pcap != "" {
		path := filepath.Join(dir, p.Outputs.Pcap)
		if pcapFile, err = os.Create(path); err != nil {
			return nil, fmt.Errorf("scenario outputs: %w", err)
		}
		defer pcapFile.Close()
		if pcap, err = capture.NewWriter(pcapFile, capture.Options{}); err != nil {
			return nil, err
		}
		c.System.SetCapture(pcap, 0)
		sum.Outputs = append(sum.Outputs, path)
	}
	run := &runner{p: p, c: c, r: r, dir: dir, pcap: pcap, load: opt.Snapshot}
	if p.Outputs.Trace != "" {
		run.trace = trace.New(0)
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
		if err := run.step(s); err != nil {
			stepErr = fmt.Errorf("%s: steps[%d] (%s): %w", p.file, i, s.Kind, err)
			fmt.Fprintf(&run.report, "  FAILED: %v\n", err)
			break
		}
		sum.Steps++
	}
	sum.VirtualTime = time.Duration(c.System.Now()) / time.Duration(sim.Nanosecond) * time.Nanosecond
	sum.FabricBytes = c.System.Stats().Bytes
	sum.Sweeps = run.sweeps
	fmt.Fprintf(&run.report, "\nvirtual time %v, fabric bytes %d, %d of %d steps done\n", sum.VirtualTime, sum.FabricBytes, sum.Steps, len(p.Steps))
	if err := run.outputs(dir, sum); err != nil && stepErr == nil {
		stepErr = err
	}
	if pcapFile != nil {
		if err := c.System.FlushCapture(); err != nil && stepErr == nil {
			stepErr = err
		}
	}
	return sum, stepErr
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
		var b bytes.Buffer
		if err := c.System.Save(&b); err != nil {
			return err
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return err
		}
		run.printf("system saved at %v to %s (%d bytes)", time.Duration(c.System.Now())/time.Duration(sim.Nanosecond)*time.Nanosecond, st.Save, b.Len())
		return c.Reattach(c.System)
	}
	f, err := os.Open(run.outPath(st.Restore))
	if err != nil {
		return err
	}
	defer f.Close()
	sys, err := fabric.LoadWith(f, run.load)
	if err != nil {
		return err
	}
	if got := sys.Topology().Devices; got != run.r.devices {
		return fmt.Errorf("%s holds a system of %s; this scenario's has %d", st.Restore, units.Plural(int64(got), "device", "devices"), run.r.devices)
	}
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

func (run *runner) program(s *Step) error {
	ps := s.Validate
	if s.Kind == "exec" {
		ps = s.Exec
	}
	name, src, err := run.source(ps)
	if err != nil {
		return err
	}
	bin, err := asm.Assemble(name, src)
	if err != nil {
		return err
	}
	runner, err := run.c.Runner(ps.Device, ps.Core)
	if err != nil {
		return err
	}
	if s.Kind == "validate" {
		blocks, err := program.Split(bin)
		if err == nil {
			for _, b := range blocks {
				if err = runner.Validator.FinalInstValidityCheck(b.Bytes, uint32(b.Engine)); err != nil {
					break
				}
			}
		}
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
	if need := enc.LayoutOf(sch, 0).End; need > run.r.buffers {
		return fmt.Errorf("%s of %d bytes needs %d bytes of buffers per rank; system.buffer_bytes is %d", op, st.Size, need, run.r.buffers)
	}
	var res enc.Result
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
	align := int64(d.Size())
	if op == enc.AllGather || op == enc.ReduceScatter || op == enc.AllToAll {
		align *= int64(run.c.Ranks())
	}
	var factor, step int64 // nccom.Sizes: 0 is neither given (checked at parse time)
	if st.Factor != nil {
		factor = *st.Factor
	}
	if st.Step != nil {
		step = int64(*st.Step)
	}
	sizes, err := nccom.Sizes(int64(st.Min), int64(st.Max), factor, step, align)
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

// outputs writes the report, the sweeps' JSON and plot.
func (run *runner) outputs(dir string, sum *Summary) error {
	name := run.p.Outputs.Report
	if name == "" {
		name = "report.txt"
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, run.report.Bytes(), 0o644); err != nil {
		return err
	}
	sum.Outputs = append(sum.Outputs, path)
	if run.trace != nil {
		path := filepath.Join(dir, run.p.Outputs.Trace)
		var b bytes.Buffer
		if err := run.trace.WriteJSON(&b); err != nil {
			return err
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return err
		}
		sum.Outputs = append(sum.Outputs, path)
	}
	if len(run.sweeps) > 0 {
		js := run.p.Outputs.JSON
		if js == "" {
			js = "sweep.json"
		}
		path := filepath.Join(dir, js)
		var b bytes.Buffer
		if err := run.sweeps[len(run.sweeps)-1].WriteJSON(&b); err != nil {
			return err
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return err
		}
		sum.Outputs = append(sum.Outputs, path)
		if run.p.Outputs.Plot != "" {
			var series []nccom.Series
			for _, rep := range run.sweeps {
				series = append(series, nccom.Series{Label: fmt.Sprintf("%s, %s", rep.Op, units.Plural(int64(rep.Ranks), "rank", "ranks")), Report: rep})
			}
			path := filepath.Join(dir, run.p.Outputs.Plot)
			if err := nccom.Plot(path, run.p.Name, series); err != nil {
				return err
			}
			sum.Outputs = append(sum.Outputs, path)
		}
	}
	return nil
}
