package scenario

import (
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// Step is one step of a scenario: a mapping with exactly one key, the
// step's kind, whose value holds its fields.
type Step struct {
	Kind       string
	BringUp    *BringUpStep
	CSRRead    *CSRReadStep
	CSRWrite   *CSRWriteStep
	DVELoad    *DVELoadStep
	Validate   *ProgramStep
	Exec       *ProgramStep
	DMACopy    *DMACopyStep
	Collective *CollectiveStep
	Sweep      *SweepStep
	Fault      *FaultStep
	Recover    *RecoverStep
	Snapshot   *SnapshotStep
	Reset      *ResetStep

	// implicit names a step the command line added (a snapshot restore
	// or save), which is not one of the file's steps, for messages.
	implicit string
}

// BringUpStep reports how each device was brought up and checks it.
type BringUpStep struct {
	ExpectReset       *bool `yaml:"expect_reset"`        // whether bring-up ran a hardware reset
	ExpectRegisterBAR *int  `yaml:"expect_register_bar"` // the BAR the registers were found in
}

// ResetStep resets a device through the runtime, as the driver's reset
// worker does: the whole device, or the NeuronCores listed in tpbs (a TPB
// reset of that map). The runtime then brings the system up again.
type ResetStep struct {
	Device int   `yaml:"device"`
	TPBs   []int `yaml:"tpbs"`
}

// CSRReadStep reads a register (a register-BAR offset) and checks it.
type CSRReadStep struct {
	Device int     `yaml:"device"`
	Offset uint64  `yaml:"offset,required"`
	Expect *uint32 `yaml:"expect"`
}

// CSRWriteStep writes a register.
type CSRWriteStep struct {
	Device int    `yaml:"device"`
	Offset uint64 `yaml:"offset,required"`
	Value  uint32 `yaml:"value"`
}

// DVELoadStep loads the default DVE tables on cores of devices (default:
// every core of every device).
type DVELoadStep struct {
	Devices []int `yaml:"devices"`
	Cores   []int `yaml:"cores"`
}

// ProgramStep validates (validate) or runs (exec) a program written in the
// assembler's syntax, from a file relative to the scenario or inline.
type ProgramStep struct {
	Device  int    `yaml:"device"`
	Core    int    `yaml:"core"`
	Program string `yaml:"program"` // a .s file
	Source  string `yaml:"source"`  // or the text itself
	Expect  string `yaml:"expect"`  // validate: valid (default) or invalid
}

// DMACopyStep copies bytes host → device → host through a core's queue and
// checks them.
type DMACopyStep struct {
	Device int  `yaml:"device"`
	Core   int  `yaml:"core"`
	Bytes  Size `yaml:"bytes,required"`
}

// CollectiveStep runs one collective; with check (functional mode) its
// result is compared with the CPU reference.
type CollectiveStep struct {
	Op          string `yaml:"op,required"`
	Algo        string `yaml:"algo"` // default auto
	Size        Size   `yaml:"size,required"`
	Dtype       string `yaml:"dtype"`        // default fp32
	Chunks      *int   `yaml:"chunks"`       // 1..enc.MaxChunks; default 1
	ExpectError string `yaml:"expect_error"` // the run must fail with this in its error
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
}

// FaultStep schedules a fault In from now: link_down / link_up of the link
// from device Device to node To (a device number or a switch name such as
// l1-sw0), or device_reset of Device.
type FaultStep struct {
	Kind   string        `yaml:"kind,required"`
	In     time.Duration `yaml:"in"`
	Device int           `yaml:"device"`
	To     string        `yaml:"to"`
}

// RecoverStep brings reset devices up again after a failed collective.
type RecoverStep struct{}

// SnapshotStep saves the whole system to a file, or replaces it with the
// one a file holds (paths relative to the output directory). Either way the
// runtime lets go of the system and brings it up again without a reset, so
// a run that saves and continues and one that restores and continues do
// the same.
type SnapshotStep struct {
	Save    string `yaml:"save"`
	Restore string `yaml:"restore"`
}

// stepKinds maps a step's key to where its fields go.
var stepKinds = []string{"bringup", "csr_read", "csr_write", "dve_load", "validate", "exec", "dma_copy", "collective", "sweep", "fault", "recover", "snapshot", "reset"}

// UnmarshalStrict reads a one-key mapping.
func (s *Step) UnmarshalStrict(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return d.Errorf(n, path, "expected a step: a mapping with one key, one of: %s", strings.Join(stepKinds, ", "))
	}
	key, val := n.Content[0], n.Content[1]
	s.Kind = key.Value
	p := path + "." + key.Value
	var target any
	switch key.Value {
	case "bringup":
		s.BringUp = new(BringUpStep)
		target = s.BringUp
	case "csr_read":
		s.CSRRead = new(CSRReadStep)
		target = s.CSRRead
	case "csr_write":
		s.CSRWrite = new(CSRWriteStep)
		target = s.CSRWrite
	case "dve_load":
		s.DVELoad = new(DVELoadStep)
		target = s.DVELoad
	case "validate":
		s.Validate = new(ProgramStep)
		target = s.Validate
	case "exec":
		s.Exec = new(ProgramStep)
		target = s.Exec
	case "dma_copy":
		s.DMACopy = new(DMACopyStep)
		target = s.DMACopy
	case "collective":
		s.Collective = new(CollectiveStep)
		target = s.Collective
	case "sweep":
		s.Sweep = new(SweepStep)
		target = s.Sweep
	case "fault":
		s.Fault = new(FaultStep)
		target = s.Fault
	case "recover":
		s.Recover = new(RecoverStep)
		target = s.Recover
	case "snapshot":
		s.Snapshot = new(SnapshotStep)
		target = s.Snapshot
	case "reset":
		s.Reset = new(ResetStep)
		target = s.Reset
	default:
		return d.Errorf(key, path, "unknown step %q; expected one of: %s", key.Value, strings.Join(stepKinds, ", "))
	}
	if val.Kind == yaml.ScalarNode && (val.Tag == "!!null" || val.Value == "") {
		return nil // "- bringup:" with no fields
	}
	return d.Node(val, p, target)
}

// check validates a step against the resolved system.
func (s *Step) check(d *strictyaml.Decoder, n *yaml.Node, path string, r *resolved) error {
	ncs := hwarch.MustGeometry(r.gen).NeuronCores
	p := path + "." + s.Kind
	at := func(field string) *yaml.Node { return find(n, s.Kind+"."+field) }
	dev := func(i int, field string) error {
		if i < 0 || i >= r.devices {
			return d.Errorf(at(field), p+"."+field, "device %d: the system has devices 0..%d", i, r.devices-1)
		}
		return nil
	}
	core := func(i int, field string) error {
		if i < 0 || i >= ncs {
			return d.Errorf(at(field), p+"."+field, "core %d: a %s device has NeuronCores 0..%d (num_tpb)", i, r.gen, ncs-1)
		}
		return nil
	}
	words := func(field, v string, parse func(string) error) error {
		if v == "" {
			return nil
		}
		if err := parse(v); err != nil {
			return d.Errorf(at(field), p+"."+field, "%v", err)
		}
		return nil
	}
	algo := func(v string) error { _, err := enc.ParseAlgo(v); return err }
	dtype := func(v string) error { _, err := enc.ParseDtype(v); return err }
	op := func(v string) error { _, err := enc.ParseOp(v); return err }
	// collectiveWords checks the op, algorithm and dtype of a collective or
	// sweep step.
	collectiveWords := func(opV, algoV, dtypeV string) error {
		for _, w := range []struct {
			f, v string
			p    func(string) error
		}{{"op", opV, op}, {"algo", algoV, algo}, {"dtype", dtypeV, dtype}} {
			if err := words(w.f, w.v, w.p); err != nil {
				return err
			}
		}
		return nil
	}
	switch s.Kind {
	case "csr_read":
		return dev(s.CSRRead.Device, "device")
	case "csr_write":
		return dev(s.CSRWrite.Device, "device")
	case "dve_load":
		for _, i := range s.DVELoad.Devices {
			if err := dev(i, "devices"); err != nil {
				return err
			}
		}
		for _, c := range s.DVELoad.Cores {
			if err := core(c, "cores"); err != nil {
				return err
			}
		}
	case "validate", "exec":
		ps := s.Validate
		if s.Kind == "exec" {
			ps = s.Exec
		}
		if (ps.Program == "") == (ps.Source == "") {
			return d.Errorf(n, p, "give exactly one of program (a file) and source (the text)")
		}
		if ps.Expect != "" && ps.Expect != "valid" && ps.Expect != "invalid" {
			return d.Errorf(at("expect"), p+".expect", "expected valid or invalid, got %q", ps.Expect)
		}
		if err := dev(ps.Device, "device"); err != nil {
			return err
		}
		return core(ps.Core, "core")
	case "dma_copy":
		if s.DMACopy.Bytes <= 0 || s.DMACopy.Bytes > 1<<30 {
			return d.Errorf(at("bytes"), p+".bytes", "a copy of 1 byte to 1 GiB, not %d", s.DMACopy.Bytes)
		}
		if err := dev(s.DMACopy.Device, "device"); err != nil {
			return err
		}
		return core(s.DMACopy.Core, "core")
	case "collective":
		c := s.Collective
		if err := collectiveWords(c.Op, c.Algo, c.Dtype); err != nil {
			return err
		}
		if c.Size <= 0 || uint64(c.Size) > r.buffers {
			return d.Errorf(at("size"), p+".size", "a size of 1 byte to system.buffer_bytes (%d), not %d", r.buffers, c.Size)
		}
		if c.Chunks != nil && (*c.Chunks < 1 || *c.Chunks > enc.MaxChunks) {
			return d.Errorf(at("chunks"), p+".chunks", "1..%d pieces, not %d", enc.MaxChunks, *c.Chunks)
		}
		chunks := 0
		if c.Chunks != nil {
			chunks = *c.Chunks
		}
		return buffersFor(d, at("size"), p+".size", r, c.Op, c.Algo, c.Dtype, []int64{int64(c.Size)}, enc.Options{Chunks: chunks}, "it")
	case "sweep":
		c := s.Sweep
		if err := collectiveWords(c.Op, c.Algo, c.Dtype); err != nil {
			return err
		}
		if c.Min <= 0 || c.Max < c.Min {
			return d.Errorf(at("max"), p+".max", "min must be positive and max at least min (%d, %d)", c.Min, c.Max)
		}
		if c.Factor != nil && *c.Factor < 2 {
			return d.Errorf(at("factor"), p+".factor", "a factor of at least 2, not %d", *c.Factor)
		}
		if c.Step != nil && *c.Step < 1 {
			return d.Errorf(at("step"), p+".step", "a step of at least 1 byte, not %d", *c.Step)
		}
		if c.Factor != nil && c.Step != nil {
			return d.Errorf(at("step"), p+".step", "give one of factor and step, not both")
		}
		sizes, err := sweepSizesFor(c, r.devices*r.ranksPer)
		if err != nil {
			return d.Errorf(at("max"), p, "%v", err)
		}
		return buffersFor(d, at("max"), p+".max", r, c.Op, c.Algo, c.Dtype, sizes, enc.Options{}, "the sweep's largest size")
	case "reset":
		for _, c := range s.Reset.TPBs {
			if err := core(c, "tpbs"); err != nil {
				return err
			}
		}
		return dev(s.Reset.Device, "device")
	case "snapshot":
		if (s.Snapshot.Save == "") == (s.Snapshot.Restore == "") {
			return d.Errorf(n, p, "give exactly one of save and restore (a file in the output directory)")
		}
	case "fault":
		f := s.Fault
		switch f.Kind {
		case "link_down", "link_up":
			if f.To == "" {
				return d.Errorf(at("kind"), p+".to", "a link fault names its far end in to (a device number or a switch such as l1-sw0)")
			}
		case "device_reset":
		default:
			return d.Errorf(at("kind"), p+".kind", "expected link_down, link_up or device_reset, got %q", f.Kind)
		}
		if f.In < 0 {
			return d.Errorf(at("in"), p+".in", "a fault cannot be in the past (%v)", f.In)
		}
		return dev(f.Device, "device")
	}
	return nil
}

// buffersFor checks, before anything runs, that a collective (or a sweep:
// the largest size of each algorithm it runs, cluster.Largest) builds on
// the system's ranks and fits in system.buffer_bytes. The run checks every
// size again before it starts a sweep.
func buffersFor(d *strictyaml.Decoder, n *yaml.Node, path string, r *resolved, opS, algoS, dtypeS string, sizes []int64, opt enc.Options, what string) error {
	op, algo, dt := words(opS, algoS, dtypeS)
	ranks := r.devices * r.ranksPer
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
