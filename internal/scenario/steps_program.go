package scenario

import (
	"fmt"
	"path/filepath"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa/asm"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/program"
	"github.com/neuronsim/neuronsim/sim/simkernel"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// ProgramStep holds the fields of a validate or exec step: a program
// written in the assembler's syntax, from a file relative to the scenario
// or inline, and the core it is for.
type ProgramStep struct {
	Device  int    `yaml:"device"`
	Core    int    `yaml:"core"`
	Program string `yaml:"program"` // a .s file
	Source  string `yaml:"source"`  // or the text itself
	Expect  string `yaml:"expect"`  // validate: valid (default) or invalid
}

// ValidateStep runs the runtime's validators on every engine block of a
// program and checks that it is valid (or, with expect: invalid, that it
// is not).
type ValidateStep ProgramStep

// ExecStep validates, stages and runs a program on a core.
type ExecStep ProgramStep

// Kind implements Action.
func (*ValidateStep) Kind() string { return "validate" }

// Kind implements Action.
func (*ExecStep) Kind() string { return "exec" }

func (st *ValidateStep) programStep() *ProgramStep { return (*ProgramStep)(st) }
func (st *ExecStep) programStep() *ProgramStep     { return (*ProgramStep)(st) }

func (st *ValidateStep) check(c *checkContext) error { return st.programStep().check(c) }
func (st *ExecStep) check(c *checkContext) error     { return st.programStep().check(c) }

// expect is what a validate step expects, as a word (units.Word: any
// case): valid (the default) or invalid.
func (ps *ProgramStep) expect() string {
	if ps.Expect == "" {
		return "valid"
	}
	return units.Word(ps.Expect)
}

// check checks a validate or exec step's fields.
func (ps *ProgramStep) check(c *checkContext) error {
	if (ps.Program == "") == (ps.Source == "") {
		return c.d.Errorf(c.n, c.p, "give exactly one of program (a file) and source (the text)")
	}
	if ps.Expect != "" && c.kind != "validate" {
		// An exec step validates its program and fails on an invalid
		// one, whatever expect says: the key would change nothing.
		return c.errorf("expect", "%s: expect applies to validate steps only (an exec step fails on an invalid program)", ps.Expect)
	}
	if e := ps.expect(); e != "valid" && e != "invalid" {
		return c.errorf("expect", "expected valid or invalid, got %q", ps.Expect)
	}
	if err := c.device(ps.Device, "device"); err != nil {
		return err
	}
	return c.core(ps.Core, "core")
}

// programFile is a program step's file, read and assembled.
type programFile struct {
	name string
	bin  []byte
}

// source returns a program step's text and its name.
func (run *runner) source(ps *ProgramStep) (string, []byte, error) {
	if ps.Source != "" {
		return "<source>", []byte(ps.Source), nil
	}
	path := run.p.programPath(ps)
	b, err := run.p.read(path)
	return path, b, err
}

// programPath is the path of a program step's file: relative to the
// scenario's, or absolute.
func (p *Parsed) programPath(ps *ProgramStep) string {
	path := ps.Program
	if !filepath.IsAbs(path) && p.file != "" {
		path = filepath.Join(filepath.Dir(p.file), path)
	}
	return path
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

// programOf is the running step's program: the one precheck assembled, or
// (for a step precheck did not see) assembled now.
func (run *runner) programOf(ps *ProgramStep) (programFile, error) {
	if pf, ok := run.programs[run.index]; ok {
		return pf, nil
	}
	return run.assemble(ps)
}

func (st *ValidateStep) run(run *runner) error {
	ps := st.programStep()
	pf, err := run.programOf(ps)
	if err != nil {
		return err
	}
	name, bin := pf.name, pf.bin
	runner, err := run.c.Runner(ps.Device, ps.Core)
	if err != nil {
		return err
	}
	_, _, err = program.Validate(bin, runner.Validator)
	want := ps.expect()
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

func (st *ExecStep) run(run *runner) error {
	ps := st.programStep()
	pf, err := run.programOf(ps)
	if err != nil {
		return err
	}
	runner, err := run.c.Runner(ps.Device, ps.Core)
	if err != nil {
		return err
	}
	runner.MaxTimePS, runner.MaxHostTime = ExecMaxTimePS, ExecMaxHostTime
	res, err := runner.Run(pf.bin)
	if err != nil {
		return err
	}
	for _, e := range res.Engines {
		run.printf("neuron%d core %d %s: %s, busy %v", ps.Device, ps.Core, e.Engine, units.Plural(int64(e.Retired), "record", "records"), e.Busy)
	}
	// the queues its dma_trigger records rang: one halted fails the step
	_, err = run.c.Devices[ps.Device].Doorbells(pf.bin)
	return err
}

// ExecMaxTimePS is the most device time an exec step's run may take, 10 s
// (neuronsim exec's default --max-time): the run is stopped there.
const ExecMaxTimePS = 10_000_000_000_000

// ExecMaxHostTime is the most host time an exec step's run may take, 10
// minutes (neuronsim exec's default --max-host-time): the run is stopped
// there.
const ExecMaxHostTime = 10 * time.Minute

// checkExecTime refuses, before anything is built, an exec step's program
// that must take more than ExecMaxTimePS on core nc of a gen device
// (tpb.MinProgramPS, a lower bound from its records' costs): it could
// only be stopped at the limit.
func checkExecTime(gen hwarch.Generation, nc int, pf programFile) error {
	least, err := tpb.MinProgramPS(gen, nc, pf.bin)
	if err != nil {
		return fmt.Errorf("%s: %w", pf.name, err)
	}
	if least > ExecMaxTimePS {
		return fmt.Errorf("%s: the program takes at least %v of device time on %s (its records' costs), more than the %v an exec step may run: it cannot finish",
			pf.name, simkernel.Time(least), gen, simkernel.Time(ExecMaxTimePS))
	}
	return nil
}
