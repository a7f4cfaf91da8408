package scenario

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// Step is one step of a scenario: a mapping with exactly one key, the
// step's kind, whose value holds its fields (docs/scenarios.md §Steps).
type Step struct {
	// Action is what the step does: one of the *XxxStep types, decoded
	// from the value of the step's key.
	Action Action

	// implicit names a step the command line added (a snapshot restore
	// or save), which is not one of the file's steps, for messages.
	implicit string
}

// Kind is the step's key in the file ("bringup", "collective", ...).
func (s *Step) Kind() string { return s.Action.Kind() }

// An Action is one kind of step: a struct whose fields are the keys of the
// step's mapping, checked against the resolved system when the file is
// parsed and run on the built system.
//
// Adding a step kind is a file that declares its type and implements
// Action, and a line in actions; docs/scenarios.md §Steps lists it.
type Action interface {
	// Kind is the step's key in the file; it is unique among actions.
	Kind() string
	// check refuses, with the value's position, what cannot run on the
	// system: indices beyond it, unknown words, sizes that do not fit.
	check(c *checkContext) error
	// run does the step, writing what it did to the report.
	run(run *runner) error
}

// memoryPlanner is an Action that holds a noticeable amount of host memory
// while it runs: need bytes at its peak, what naming it for the refusal
// (precheck compares it with the run's memory limit).
type memoryPlanner interface {
	memory(r *resolved) (need uint64, what string, err error)
}

// programAction is an Action that assembles a program: precheck reads and
// assembles it before anything is built.
type programAction interface {
	programStep() *ProgramStep
}

// actions is every step kind, in the order messages list them: a new
// value of each, into which a step's fields decode.
var actions = []func() Action{
	newAction[BringUpStep],
	newAction[CSRReadStep],
	newAction[CSRWriteStep],
	newAction[DVELoadStep],
	newAction[ValidateStep],
	newAction[ExecStep],
	newAction[DMACopyStep],
	newAction[CollectiveStep],
	newAction[SweepStep],
	newAction[FaultStep],
	newAction[RecoverStep],
	newAction[SnapshotStep],
	newAction[ResetStep],
}

// newAction makes a new *T as an Action.
func newAction[T any, P interface {
	*T
	Action
}]() Action {
	return P(new(T))
}

// stepKinds are the kinds of actions, in order; actionOf finds a kind's
// constructor.
var stepKinds, actionOf = indexActions(actions)

// indexActions lists the kinds of the actions and maps each to its
// constructor; a kind registered twice is a programming error.
func indexActions(list []func() Action) ([]string, map[string]func() Action) {
	kinds := make([]string, 0, len(list))
	byKind := make(map[string]func() Action, len(list))
	for _, mk := range list {
		k := mk().Kind()
		if _, dup := byKind[k]; dup {
			panic(fmt.Sprintf("scenario: step kind %q registered twice", k))
		}
		kinds = append(kinds, k)
		byKind[k] = mk
	}
	return kinds, byKind
}

// UnmarshalStrict reads a one-key mapping: the key picks the action, its
// value fills the action's fields.
func (s *Step) UnmarshalStrict(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return d.Errorf(n, path, "expected a step: a mapping with one key, one of: %s", strings.Join(stepKinds, ", "))
	}
	key, val := n.Content[0], n.Content[1]
	mk, ok := actionOf[key.Value]
	if !ok {
		return d.Errorf(key, path, "unknown step %q; expected one of: %s", key.Value, strings.Join(stepKinds, ", "))
	}
	s.Action = mk()
	if val.Kind == yaml.ScalarNode && val.ShortTag() == "!!null" {
		// "- bringup:": the step with no fields, decoded as an empty
		// mapping so that a kind's required keys are still missing
		// (a null struct is not checked for them: `- csr_write:` wrote 0
		// to register 0 of device 0). A quoted "" is no null: the
		// decoder refuses it as the mapping it is not.
		val = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: key.Line, Column: key.Column}
	}
	return d.Node(val, path+"."+key.Value, s.Action)
}

// check validates a step against the resolved system; n is the step's
// node and path its place ("steps[2]").
func (s *Step) check(d *strictyaml.Decoder, n *yaml.Node, path string, r *resolved) error {
	kind := s.Kind()
	return s.Action.check(&checkContext{d: d, n: n, kind: kind, p: path + "." + kind, r: r})
}

// checkContext is what a step's check needs: the decoder for positioned
// errors, the step's node and path, the resolved system.
type checkContext struct {
	d    *strictyaml.Decoder
	n    *yaml.Node // the step's node (a one-key mapping)
	kind string
	p    string // the path of the step's fields: "steps[2].collective"
	r    *resolved
}

// at is the node of one of the step's fields (or the closest one found).
func (c *checkContext) at(field string) *yaml.Node { return find(c.n, c.kind+"."+field) }

// errorf is an error at one of the step's fields.
func (c *checkContext) errorf(field, format string, args ...any) error {
	return c.d.Errorf(c.at(field), c.p+"."+field, format, args...)
}

// device refuses device index i (from field) beyond the system.
func (c *checkContext) device(i int, field string) error {
	if i < 0 || i >= c.r.devices {
		return c.errorf(field, "device %d: the system has devices 0..%d", i, c.r.devices-1)
	}
	return nil
}

// core refuses NeuronCore index i (from field) beyond the generation's.
func (c *checkContext) core(i int, field string) error {
	if ncs := hwarch.MustGeometry(c.r.gen).NeuronCores; i < 0 || i >= ncs {
		return c.errorf(field, "core %d: a %s device has NeuronCores 0..%d (num_tpb)", i, c.r.gen, ncs-1)
	}
	return nil
}

// indexList checks a list of device or NeuronCore indices given as field
// (what names one: "device", "core"): each by check, and the list itself —
// given, it is not empty (an empty list would be the key left out, the
// step's default, which the user did not write) and no index is listed
// twice. Errors are at the field, or at the repeated item
// ("steps[0].dve_load.devices[2]").
func (c *checkContext) indexList(field, what string, list []int, check func(i int, field string) error) error {
	n := child(child(c.n, c.kind), field)
	if n == nil {
		return nil // left out: the step's default
	}
	if len(list) == 0 {
		return c.errorf(field, "empty: list at least one %s index, or leave the key out for the step's default", what)
	}
	first := make(map[int]int, len(list))
	for j, i := range list {
		if err := check(i, field); err != nil {
			return err
		}
		if k, dup := first[i]; dup {
			at := n
			if n.Kind == yaml.SequenceNode && j < len(n.Content) {
				at = n.Content[j]
			}
			return c.d.Errorf(at, fmt.Sprintf("%s.%s[%d]", c.p, field, j), "%s %d again (it is %s[%d] already): list each %s once", what, i, field, k, what)
		}
		first[i] = j
	}
	return nil
}

// register refuses a register offset (from field) outside the register BAR
// of the generation, or not 4-byte aligned.
func (c *checkContext) register(off uint64, field string) error {
	if err := hwarch.MustGeometry(c.r.gen).CheckRegisters(off, 1); err != nil {
		return c.errorf(field, "%v", err)
	}
	return nil
}

// collectiveWords checks the op, algorithm and dtype of a collective or
// sweep step (an empty algorithm or dtype takes its default), and refuses
// hier on a system of one node.
func (c *checkContext) collectiveWords(op, algo, dtype string) error {
	for _, w := range []struct {
		field, v string
		parse    func(string) error
	}{
		{"op", op, func(v string) error { _, err := enc.ParseOp(v); return err }},
		{"algo", algo, func(v string) error { _, err := enc.ParseAlgo(v); return err }},
		{"dtype", dtype, func(v string) error { _, err := enc.ParseDtype(v); return err }},
	} {
		if w.v == "" {
			continue
		}
		if err := w.parse(w.v); err != nil {
			return c.errorf(w.field, "%v", err)
		}
	}
	// Hier's group is a node's ranks (cluster.Config.CollectiveOptions),
	// and a scenario has no key for another: on one node it has none.
	if a, _ := enc.ParseAlgo(algo); algo != "" && a == enc.Hier && c.r.nodes == 1 {
		return c.errorf("algo", "%s: its groups are the nodes (a node's ranks each), and this system is one node; give system.nodes 2 or more", algo)
	}
	return nil
}

// hasSweep reports whether one of steps is a sweep: the steps that make
// the JSON and plot outputs.
// sweepSteps counts the sweep steps: the lines of outputs.plot.
func sweepSteps(steps []Step) int {
	n := 0
	for _, s := range steps {
		if _, ok := s.Action.(*SweepStep); ok {
			n++
		}
	}
	return n
}

func hasSweep(steps []Step) bool {
	return slices.ContainsFunc(steps, func(s Step) bool { _, ok := s.Action.(*SweepStep); return ok })
}
