package fabric

import (
	"errors"
	"fmt"

	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// FaultKind is what an injected fault does.
type FaultKind uint8

// The faults.
const (
	LinkDown    FaultKind = iota + 1 // a link stops carrying writes; those in flight on it are lost
	LinkUp                           // it carries them again
	DeviceReset                      // a device resets (sim.Device.FaultReset): writes landing on it meanwhile are lost
)

// String names the kind as scenarios write it: link_down, link_up or
// device_reset.
func (k FaultKind) String() string {
	switch k {
	case LinkDown:
		return "link_down"
	case LinkUp:
		return "link_up"
	case DeviceReset:
		return "device_reset"
	}
	return fmt.Sprintf("fault kind %d", uint8(k))
}

// Fault is one injected fault: at time At, Kind on Link (a directed link;
// see LinkBetween) or Device.
type Fault struct {
	At     simkernel.Time
	Kind   FaultKind
	Link   int
	Device int
}

// ErrFault marks a fault that cannot be scheduled.
var ErrFault = errors.New("invalid fault")

// ScheduleFault makes the fault happen at its time on the system's clock.
// A time before now, an unknown kind, link or device is an error.
func (s *System) ScheduleFault(f Fault) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch f.Kind {
	case LinkDown, LinkUp:
		if f.Link < 0 || f.Link >= len(s.st.Links) {
			return fmt.Errorf("fabric: fault on link %d of %d: %w", f.Link, len(s.st.Links), ErrFault)
		}
	case DeviceReset:
		if f.Device < 0 || f.Device >= len(s.devs) {
			return fmt.Errorf("fabric: fault on device %d of %d: %w", f.Device, len(s.devs), ErrFault)
		}
	default:
		return fmt.Errorf("fabric: fault kind %d: %w", f.Kind, ErrFault)
	}
	s.st.Faults = append(s.st.Faults, f)
	if err := s.engine.Schedule(f.At, s.hFault, uint64(len(s.st.Faults)-1)); err != nil {
		s.st.Faults = s.st.Faults[:len(s.st.Faults)-1]
		return fmt.Errorf("fabric: fault at %v: %w: %w", f.At, err, ErrFault)
	}
	return nil
}

// FaultCount is how many faults the system was given (ScheduleFault calls
// that succeeded, a restored snapshot's first): the last one's index, plus
// one.
func (s *System) FaultCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.st.Faults)
}

// PendingFault is a scheduled fault that has not happened yet: Index is
// its place among the faults the system was given (the order of
// ScheduleFault calls, a restored snapshot's first).
type PendingFault struct {
	Index int
	Fault
}

// PendingFaults lists the faults scheduled that have not happened yet, in
// the order they will happen: those whose time the clock has not reached,
// and any at the present that the clock stopped before carrying out. A
// run that ends with one of them pending never saw it.
func (s *System) PendingFaults() []PendingFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PendingFault
	for _, ev := range s.engine.PendingOf(s.hFault, nil) {
		if i := ev.Arg; i < uint64(len(s.st.Faults)) {
			out = append(out, PendingFault{Index: int(i), Fault: s.st.Faults[i]})
		}
	}
	return out
}

// fault carries out scheduled fault i.
func (s *System) fault(i int) {
	if i < 0 || i >= len(s.st.Faults) {
		return
	}
	f := s.st.Faults[i]
	switch f.Kind {
	case LinkDown, LinkUp:
		s.setDown(f.Link, f.Kind == LinkDown)
	case DeviceReset:
		s.devs[f.Device].FaultReset()
		// Its DMA engines are reset: the writes they had reserved will
		// never be posted.
		clear(s.st.Reservations[f.Device])
	}
	s.st.Stats.Faults++
}

// Describe says what the fabric knows of a failure: the links that are
// down and the last write it lost or could not land. The empty string when
// nothing is wrong.
func (s *System) Describe() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var down []string
	for id, l := range s.st.Links {
		if l.Down {
			down = append(down, s.topo.LinkName(id))
		}
	}
	msg := ""
	if len(down) > 0 {
		msg = fmt.Sprintf("links down: %v", down)
	}
	if s.st.Stats.LastError != "" {
		if msg != "" {
			msg += "; "
		}
		msg += "last lost write: " + s.st.Stats.LastError
	}
	return msg
}
