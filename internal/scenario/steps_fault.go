package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// FaultStep schedules a fault In from now: link_down / link_up of the link
// from device Device to node To (a device number or a switch name such as
// l1-sw0), or device_reset of Device.
type FaultStep struct {
	FaultKind string        `yaml:"kind,required"` // link_down, link_up or device_reset
	In        time.Duration `yaml:"in"`
	Device    int           `yaml:"device"`
	To        string        `yaml:"to"`
}

// Kind implements Action (the fault's own kind is FaultKind).
func (*FaultStep) Kind() string { return "fault" }

// faultKind is the fault's kind as a word (units.Word: any case).
func (st *FaultStep) faultKind() string { return units.Word(st.FaultKind) }

func (st *FaultStep) check(c *checkContext) error {
	switch st.faultKind() {
	case "link_down", "link_up":
		if st.To == "" {
			return c.d.Errorf(c.at("kind"), c.p+".to", "a link fault names its far end in to (a device number or a switch such as l1-sw0)")
		}
	case "device_reset":
		if st.To != "" {
			return c.errorf("to", "%s: a device_reset has no far end; to applies to link_down and link_up", st.To)
		}
	default:
		return c.errorf("kind", "expected link_down, link_up or device_reset, got %q", st.FaultKind)
	}
	if st.In < 0 {
		return c.errorf("in", "a fault cannot be in the past (%v)", st.In)
	}
	if err := c.device(st.Device, "device"); err != nil {
		return err
	}
	if st.To == "" {
		return nil
	}
	if i, err := strconv.Atoi(st.To); err == nil {
		// A device number (node reads it so): one of the system's, not
		// the link's own end.
		if err := c.device(i, "to"); err != nil {
			return err
		}
		if i == st.Device {
			return c.errorf("to", "%d: the link's own device (device %d); a link joins two nodes", i, st.Device)
		}
	}
	return c.link(st.Device, st.To)
}

func (st *FaultStep) run(run *runner) error {
	s := run.c.System
	// st.In was checked against units.MaxTimePS at parse time, so the sum
	// does not wrap; it may still pass the latest time a clock may reach.
	in := sim.FromDuration(st.In)
	f := fabric.Fault{At: s.Now() + in, Device: st.Device}
	if uint64(f.At) > units.MaxTimePS {
		return fmt.Errorf("a fault in %v from now (%v) passes the latest virtual time, %v", st.In, s.Now(), sim.Time(units.MaxTimePS))
	}
	switch st.faultKind() {
	case "device_reset":
		f.Kind = fabric.DeviceReset
	default:
		f.Kind = fabric.LinkDown
		if st.faultKind() == "link_up" {
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
	run.scheduled()
	run.printf("%s scheduled at %v (in %v)", st.faultKind(), time.Duration(f.At)/time.Duration(sim.Nanosecond)*time.Nanosecond, st.In)
	return nil
}

// node finds a topology node by device number or name.
func node(t *fabric.Topology, name string) (int, error) {
	if i, err := strconv.Atoi(name); err == nil && i >= 0 && i < t.Devices {
		return i, nil
	}
	if i, ok := t.NodeNamed(name); ok {
		return i, nil
	}
	return 0, fmt.Errorf("no node %q in the topology", name)
}

// link refuses a link fault from device a to node to (a device number or
// a switch's or NIC's name) that the system has no link for — a name no
// node has, the ring's 0 and 2, two devices of a switched system (joined
// through a switch), devices of two nodes (joined through the EFA
// network) — naming where a's links go: the step would fail when it ran,
// after the steps before it.
func (c *checkContext) link(a int, to string) error {
	t, err := c.r.graph()
	if err != nil {
		return nil // the system is refused when it is built, saying why
	}
	b, err := node(t, to)
	if err != nil {
		return c.errorf("to", "%s: no node of that name in a %s (neuron%d's links go to %s)", to, c.r.systemShape(), a, linkList(t, a))
	}
	if _, ok := t.LinkBetween(a, b); ok {
		return nil
	}
	return c.errorf("to", "%s: no link joins neuron%d and %s in a %s (neuron%d's links go to %s)", to, a, t.Nodes[b].Name, c.r.systemShape(), a, linkList(t, a))
}

// linkList names the far ends of device d's links, in port order, each
// once.
func linkList(t *fabric.Topology, d int) string {
	var names []string
	for _, id := range t.Nodes[d].Ports {
		if n := t.Nodes[t.Links[id].To].Name; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

// faultRecord is a fault a step of the run scheduled on the current
// system (runner.faults holds it by its index among the system's faults):
// the step, and the snapshot (a later save step's file) that carries it if
// it was still pending then.
type faultRecord struct {
	step    string
	savedIn string
}

// scheduled records that the step running scheduled the system's latest
// fault (without walking the events: a file of thousands of fault steps
// would walk them once each).
func (run *runner) scheduled() {
	if run.faults == nil {
		run.faults = map[int]*faultRecord{}
	}
	run.faults[run.c.System.FaultCount()-1] = &faultRecord{step: run.p.stepName(run.index)}
}

// savedFaults notes that the snapshot just saved to path carries the
// faults of the run still pending.
func (run *runner) savedFaults(path string) {
	for _, p := range run.c.System.PendingFaults() {
		if rec := run.faults[p.Index]; rec != nil {
			rec.savedIn = path
		}
	}
}

// checkFaults fails a run that ended with a fault it scheduled still
// pending: the fault never happened, so the steps after it ran on a
// system without it, whatever the scenario meant. A fault a later save
// step carried into its snapshot is reported, not refused: it happens in
// a run that restores that snapshot. A restored system's own pending
// faults (scheduled before its snapshot was taken) are reported too.
func (run *runner) checkFaults() error {
	sys := run.c.System
	now := sys.Now()
	var missed []string
	for _, p := range sys.PendingFaults() {
		what := faultText(sys, p.Fault, now)
		switch rec := run.faults[p.Index]; {
		case rec == nil:
			fmt.Fprintf(&run.report, "\npending at the end: %s, scheduled before the restored snapshot was taken\n", what)
		case rec.savedIn != "":
			fmt.Fprintf(&run.report, "\npending at the end: %s (%s), carried by the snapshot saved to %s: it happens in a run that restores it\n", what, rec.step, rec.savedIn)
		default:
			missed = append(missed, fmt.Sprintf("%s: %s", rec.step, what))
		}
	}
	if len(missed) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", run.p.file, strings.Join(missed, "; "), ErrFaultNotHappened)
}

// ErrFaultNotHappened marks a run that ended before a fault it scheduled.
var ErrFaultNotHappened = errors.New("the run ended before the fault: a fault happens only while a later step runs the system (give it a smaller in, or add a step after it that runs long enough)")

// faultText says what fault f does and when, against the present now:
// "link_down of neuron0:1→neuron1:0 (xy) at 1ms, 880µs after the last step
// ended at 120µs".
func faultText(sys *fabric.System, f fabric.Fault, now sim.Time) string {
	target := fmt.Sprintf("neuron%d", f.Device)
	if f.Kind != fabric.DeviceReset {
		target = sys.Topology().LinkName(f.Link)
	}
	ns := func(t sim.Time) time.Duration { return time.Duration(t/sim.Nanosecond) * time.Nanosecond }
	return fmt.Sprintf("%s of %s at %v, %v after the last step ended at %v", f.Kind, target, ns(f.At), ns(f.At-now), ns(now))
}
