package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// CollectiveStep runs one collective; with check (functional mode) its
// result is compared with the CPU reference.
type CollectiveStep struct {
	Op          string `yaml:"op,required"`
	Algo        string `yaml:"algo"` // default auto
	Size        Size   `yaml:"size,required"`
	Dtype       string `yaml:"dtype"`        // default fp32
	Chunks      *int   `yaml:"chunks"`       // 1..enc.MaxChunks; default 1
	Channels    *int   `yaml:"channels"`     // the flat ring's across nodes; default one per EFA NIC of a node
	ExpectError string `yaml:"expect_error"` // the run must fail with this in its error
}

// Kind implements Action.
func (*CollectiveStep) Kind() string { return "collective" }

func (st *CollectiveStep) check(c *checkContext) error {
	r := c.r
	if err := c.collectiveWords(st.Op, st.Algo, st.Dtype); err != nil {
		return err
	}
	if st.Size <= 0 || uint64(st.Size) > r.buffers {
		return c.errorf("size", "a size of 1 byte to system.buffer_bytes (%d), not %d", r.buffers, st.Size)
	}
	if st.Chunks != nil && (*st.Chunks < 1 || *st.Chunks > enc.MaxChunks) {
		return c.errorf("chunks", "1..%d pieces, not %d", enc.MaxChunks, *st.Chunks)
	}
	if err := c.channels(st.Channels, st.Op, st.Algo); err != nil {
		return err
	}
	if err := c.autoChannels(st.Channels, st.Op, st.Algo, []int64{int64(st.Size)}, st.options()); err != nil {
		return err
	}
	if err := c.countCollectives("size", 1); err != nil {
		return err
	}
	return buffersFor(c.d, c.at("size"), c.p+".size", r, st.Op, st.Algo, st.Dtype, []int64{int64(st.Size)}, st.options(), "it")
}

// MaxCollectives bounds the collectives a scenario runs — a collective
// step's one, a sweep step's sizes — and so its report (each a line of
// about 180 bytes, kept in memory until the run ends, with each sweep's
// rows for the plot) and most of its host time: 17,000 sweep steps of
// 10,000 sizes fit in a 1 MiB file.
const MaxCollectives = 100_000

// countCollectives adds n collectives to the scenario's count, refusing
// at field the step that takes it past MaxCollectives.
func (c *checkContext) countCollectives(field string, n int) error {
	c.r.collectives += n
	if c.r.collectives > MaxCollectives {
		return c.errorf(field, "this step takes the collectives the scenario runs (a collective step's one, a sweep's sizes) to %d, past the %d a scenario may run: split the steps over several files", c.r.collectives, MaxCollectives)
	}
	return nil
}

// options are the collective's build options (chunks default to 1; the
// channels, unset, to the system's: stepChannels).
func (st *CollectiveStep) options() enc.Options {
	opt := enc.Options{Chunks: 1, Channels: stepChannels(st.Channels)}
	if st.Chunks != nil {
		opt.Chunks = *st.Chunks
	}
	return opt
}

// stepChannels is a step's channels as enc.Options has them: 0, unset,
// takes one per EFA NIC of a node (cluster.Config.CollectiveOptions).
func stepChannels(ch *int) int {
	if ch == nil {
		return 0
	}
	return *ch
}

// channels checks a step's channels, if given, on the step's system, op
// and algorithm (cluster.Config.CheckChannels: none for a permute or an
// alltoall).
func (c *checkContext) channels(ch *int, opS, algoS string) error {
	if ch == nil {
		return nil
	}
	op, algo, _ := words(opS, algoS, "")
	if err := c.r.clusterConfig().CheckChannels(*ch, op, algo); err != nil {
		return c.errorf("channels", "%v", err)
	}
	return nil
}

// autoChannels refuses a step's channels, if given, where its algorithm
// is auto and auto runs no flat ring at any of its sizes
// (cluster.Config.CheckAutoChannels: hier across nodes), so that they
// would change nothing.
func (c *checkContext) autoChannels(ch *int, opS, algoS string, sizes []int64, opt enc.Options) error {
	op, algo, _ := words(opS, algoS, "")
	if ch == nil || algo != enc.Auto {
		return nil
	}
	if err := c.r.clusterConfig().CheckAutoChannels(op, sizes, c.r.options(opt)); err != nil {
		return c.errorf("channels", "%v", err)
	}
	return nil
}

// memory is what the collective holds at its peak: functional, its
// payloads (cluster.FunctionalMemory); timing-only, its SP programs and
// the descriptors streamed to it on every device of the system
// (cluster.TimingMemory), which grow as the square of the ranks for a ring.
func (st *CollectiveStep) memory(r *resolved) (uint64, string, error) {
	op, algo, d := words(st.Op, st.Algo, st.Dtype)
	return r.collectiveMemory(op, algo, d, []int64{int64(st.Size)}, st.options(),
		fmt.Sprintf("%s of %s", op, memlimit.Human(uint64(st.Size))))
}

// collectiveMemory is the memory a collective or a sweep of sizes holds at
// its largest (cluster.FunctionalMemory, or timing-only
// cluster.TimingMemory with the executor's engines) on the system's ranks,
// and what names it for the refusal ("a functional all_reduce of 1 GiB on
// 64 ranks").
func (r *resolved) collectiveMemory(op enc.Op, algo enc.Algo, d enc.Dtype, sizes []int64, opt enc.Options, what string) (uint64, string, error) {
	ranks := r.devices * r.ranksPer
	opt = r.options(opt)
	if !r.timing {
		need, err := cluster.FunctionalMemory(op, algo, ranks, d, sizes, opt)
		return need, fmt.Sprintf("a functional %s on %d ranks", what, ranks), err
	}
	engines := r.engines
	if engines == 0 {
		engines = collective.Calibrated(r.gen).Engines // as cluster.New sets the executor
	}
	need, err := cluster.TimingMemory(op, algo, r.devices, ranks, engines, d, sizes, opt)
	return need, fmt.Sprintf("a timing-only %s on %d ranks of %d devices", what, ranks, r.devices), err
}

func (st *CollectiveStep) run(run *runner) error {
	op, algo, d := words(st.Op, st.Algo, st.Dtype)
	opt := run.r.options(st.options())
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
	run.printf("%s %s of %s (%s) on %s: %.2f µs, algbw %.2f GB/s, busbw %.2f GB/s, %s",
		sch.Algo, op, units.Plural(int64(st.Size), "byte", "bytes"), d, units.Plural(int64(run.c.Ranks()), "rank", "ranks"), row.TimeUS, row.AlgBW, row.BusBW, check)
	return nil
}

// SweepStep runs a collective over a range of sizes (nccom-test's -b -e -f).
type SweepStep struct {
	Op     string `yaml:"op,required"`
	Algo   string `yaml:"algo"`
	Dtype  string `yaml:"dtype"`
	Min    Size   `yaml:"min,required"`
	Max    Size   `yaml:"max,required"`
	Factor *int64 `yaml:"factor"` // at least 2
	Step   *Size  `yaml:"step"`   // at least 1 byte; not with factor; default (max-min)/10
	// Channels are the flat ring's across nodes; default one per EFA NIC
	// of a node.
	Channels *int `yaml:"channels"`
}

// Kind implements Action.
func (*SweepStep) Kind() string { return "sweep" }

// sweepKeys name a sweep step's range in nccom.CheckRange's errors.
var sweepKeys = nccom.RangeNames{Min: "min", Max: "max", Factor: "factor", Step: "step"}

func (st *SweepStep) check(c *checkContext) error {
	if err := c.collectiveWords(st.Op, st.Algo, st.Dtype); err != nil {
		return err
	}
	if st.Factor != nil && *st.Factor < 2 {
		return c.errorf("factor", "a factor of at least 2, not %d", *st.Factor)
	}
	var factor int64
	if st.Factor != nil {
		factor = *st.Factor
	}
	// The command line's rule for -b/-e/-f (nccom.CheckRange): min 0 runs
	// one granule first, as any size below it does, unless a factor would
	// never grow it.
	if err := nccom.CheckRange(int64(st.Min), int64(st.Max), factor, sweepKeys); err != nil {
		var re *nccom.RangeError
		if errors.As(err, &re) {
			return c.errorf(re.Name, "%s: %s", re.Value, re.Reason)
		}
		return c.errorf("max", "%v", err)
	}
	if st.Step != nil && *st.Step < 1 {
		return c.errorf("step", "a step of at least 1 byte, not %d", *st.Step)
	}
	if st.Factor != nil && st.Step != nil {
		return c.errorf("step", "give one of factor and step, not both")
	}
	if err := c.channels(st.Channels, st.Op, st.Algo); err != nil {
		return err
	}
	sizes, err := st.sizes(c.r)
	if err != nil {
		var re *nccom.RangeError
		if errors.As(err, &re) {
			return c.errorf(re.Name, "%s: %s", re.Value, re.Reason)
		}
		return c.d.Errorf(c.at("max"), c.p, "%v", err)
	}
	if err := c.autoChannels(st.Channels, st.Op, st.Algo, sizes, st.options()); err != nil {
		return err
	}
	if err := c.countCollectives("max", len(sizes)); err != nil {
		return err
	}
	return buffersFor(c.d, c.at("max"), c.p+".max", c.r, st.Op, st.Algo, st.Dtype, sizes, st.options(), "the sweep's largest size")
}

// options are the sweep's build options: its channels, unset to the
// system's (stepChannels).
func (st *SweepStep) options() enc.Options {
	return enc.Options{Channels: stepChannels(st.Channels)}
}

// memory is what the sweep holds at its largest size, functional or
// timing-only (resolved.collectiveMemory).
func (st *SweepStep) memory(r *resolved) (uint64, string, error) {
	op, algo, d := words(st.Op, st.Algo, st.Dtype)
	sizes, err := st.sizes(r)
	if err != nil {
		return 0, "", err
	}
	return r.collectiveMemory(op, algo, d, sizes, st.options(),
		fmt.Sprintf("%s sweep up to %s", op, memlimit.Human(uint64(sizes[len(sizes)-1]))))
}

// sizes returns the sweep's sizes on the system's ranks, each aligned as
// the op needs (enc.Op.SizeAlign).
func (st *SweepStep) sizes(r *resolved) ([]int64, error) {
	ranks := r.devices * r.ranksPer
	op, _, d := words(st.Op, st.Algo, st.Dtype)
	var factor, step int64 // nccom.Sizes: 0 is neither given (checked at parse time)
	if st.Factor != nil {
		factor = *st.Factor
	}
	if st.Step != nil {
		step = int64(*st.Step)
	}
	return nccom.SizesIn(int64(st.Min), int64(st.Max), factor, step, op.SizeAlign(d.Size(), ranks), sweepKeys)
}

func (st *SweepStep) run(run *runner) error {
	op, algo, d := words(st.Op, st.Algo, st.Dtype)
	sizes, err := st.sizes(run.r)
	if err != nil {
		return err
	}
	need, err := cluster.BufferNeed(op, algo, run.c.Ranks(), d, sizes, run.r.options(st.options()))
	if err != nil {
		return err
	}
	if need > run.r.buffers {
		return fmt.Errorf("the sweep's largest size needs %d bytes of buffers per rank; system.buffer_bytes is %d", need, run.r.buffers)
	}
	rep, err := run.c.Sweep(cluster.Sweep{Op: op, Algo: algo, Dtype: d, Sizes: sizes, Seed: run.p.System.Seed, Options: st.options()})
	if err != nil {
		if !cluster.Incomplete(rep) {
			return err
		}
		// A size failed: the sizes before it are kept, as fabric sweep
		// keeps them (Run's keepIncomplete), and the run still fails.
		if perr := run.printSweep(rep); perr != nil {
			return errors.Join(err, perr)
		}
		run.incomplete = true
		return err
	}
	return run.printSweep(rep)
}

// printSweep names a sweep's system and parameters in its report, prints
// its tables into the run's report and keeps it for the outputs.
func (run *runner) printSweep(rep *nccom.Report) error {
	if run.r.system != "" {
		rep.Extra["system"] = run.r.system
	}
	maps.Copy(rep.Extra, run.r.overrides(&run.p.System))
	var b bytes.Buffer
	if err := cluster.WriteTables(&b, rep); err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		run.printf("%s", line)
	}
	run.sweeps = append(run.sweeps, rep)
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

// buffersFor checks, before anything runs, that a collective (or a sweep:
// the largest size of each algorithm it runs, cluster.Largest) builds on
// the system's ranks and fits in system.buffer_bytes. The run checks every
// size again before it starts a sweep.
func buffersFor(d *strictyaml.Decoder, n *yaml.Node, path string, r *resolved, opS, algoS, dtypeS string, sizes []int64, opt enc.Options, what string) error {
	op, algo, dt := words(opS, algoS, dtypeS)
	ranks := r.devices * r.ranksPer
	opt = r.options(opt) // across nodes: a node's ranks the group size
	var need uint64
	for _, rep := range cluster.Largest(op, algo, ranks, sizes, opt) {
		nd, err := cluster.BufferNeed(op, rep.Algo, ranks, dt, []int64{rep.Size}, opt)
		if err != nil {
			return d.Errorf(n, path, "on %d ranks: %v", ranks, err)
		}
		need = max(need, nd)
	}
	if need > r.buffers {
		return d.Errorf(n, path, "%s needs %d bytes of buffers per rank (%s); system.buffer_bytes is %d (%s)",
			what, need, memlimit.Human(need), r.buffers, memlimit.Human(r.buffers))
	}
	return nil
}
