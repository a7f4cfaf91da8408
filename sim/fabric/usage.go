package fabric

import (
	"errors"
	"fmt"
)

// Link utilisation (docs/fabric.md §Link utilisation). Every directed link
// counts the bytes it carried and the time it was busy (LinkState.Bytes,
// LinkState.Busy), booked when a write is reserved:
//
//   - aware model: Busy is the serialisation time of every chunk the link
//     carried (each chunk's c/B on that link), the time its calendar is
//     booked; it can never exceed the time that passed;
//   - free model: Busy is bytes/B of every write that crossed the link, the
//     load it would have carried: the model makes no write wait for any
//     link but its source's own, so a shared link (a switch's link to a
//     device many write to) can be offered more than the time that passed,
//     a utilisation above 100 %: the oversubscription the aware model would
//     have turned into waiting.
//
// The counters are statistics, not state that decides any timing: they are
// read as Counters (a copy) and differenced over an interval (Since), so a
// caller takes them over one collective without resetting anything. They
// are kept in LinkState, so a snapshot saves them and a restored system
// continues counting from them (the snapshot's format is unchanged).

// LinkCounter is what one directed link has carried: its bytes, and the
// picoseconds it was busy (booked) carrying them; and how many times its
// queue of chunks on their way was folded (LinkState.Folds), after which
// the control writes through it waited an upper bound of their wait.
type LinkCounter struct {
	Bytes uint64
	Busy  uint64
	Folds uint64
}

// Counters are every directed link's counters at one moment, by link id
// (Topology.Links).
type Counters []LinkCounter

// ErrCounters marks two Counters that cannot be differenced: of systems
// with different links, or a later one below an earlier one (a system
// restored from an earlier snapshot between them).
var ErrCounters = errors.New("link counters do not follow each other")

// Counters returns a copy of every directed link's counters.
func (s *System) Counters() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := make(Counters, len(s.st.Links))
	for i := range s.st.Links {
		l := &s.st.Links[i]
		c[i] = LinkCounter{Bytes: l.Bytes, Busy: l.Busy, Folds: l.Folds}
	}
	return c
}

// Since returns c − before, link by link: what every link carried between
// the two readings.
func (c Counters) Since(before Counters) (Counters, error) {
	if len(c) != len(before) {
		return nil, fmt.Errorf("fabric: counters of %d links since counters of %d: %w", len(c), len(before), ErrCounters)
	}
	d := make(Counters, len(c))
	for i := range c {
		if c[i].Bytes < before[i].Bytes || c[i].Busy < before[i].Busy || c[i].Folds < before[i].Folds {
			return nil, fmt.Errorf("fabric: link %d: %d bytes, %d ps busy, %d folds, below the earlier %d bytes, %d ps, %d folds: %w",
				i, c[i].Bytes, c[i].Busy, c[i].Folds, before[i].Bytes, before[i].Busy, before[i].Folds, ErrCounters)
		}
		d[i] = LinkCounter{Bytes: c[i].Bytes - before[i].Bytes, Busy: c[i].Busy - before[i].Busy, Folds: c[i].Folds - before[i].Folds}
	}
	return d, nil
}

// ClassUsage is the use of one class of links — the directed links of one
// Link.Group ("xy", "z", "in-server", "inter-server", "inter-rack",
// "ring", "link", or any group a topology names) — over an interval.
type ClassUsage struct {
	Group string
	Links int    // directed links in the class
	Bytes uint64 // bytes all of them carried
	Busy  uint64 // ps all of them were busy, summed
	// Busiest is the link id of the class's busiest link (the first of
	// them on a tie), and MaxBusy its busy ps and MaxBytes its bytes.
	Busiest  int
	MaxBusy  uint64
	MaxBytes uint64
}

// Utilisation is the busiest link's busy time over elapsed ps (0 for no
// elapsed time). Above 1 only in the free model (the load offered).
func (u ClassUsage) Utilisation(elapsed uint64) float64 {
	if elapsed == 0 {
		return 0
	}
	return float64(u.MaxBusy) / float64(elapsed)
}

// MeanUtilisation is the class's mean link busy time — over every directed
// link of the class, idle ones included — over elapsed ps.
func (u ClassUsage) MeanUtilisation(elapsed uint64) float64 {
	if elapsed == 0 || u.Links == 0 {
		return 0
	}
	return float64(u.Busy) / float64(u.Links) / float64(elapsed)
}

// Classes sums counters c (of this topology's links, by link id) by link
// group, the classes in the order their first link appears. Sums saturate
// rather than wrap.
func (t *Topology) Classes(c Counters) ([]ClassUsage, error) {
	if len(c) != len(t.Links) {
		return nil, fmt.Errorf("fabric: counters of %d links for a topology of %d: %w", len(c), len(t.Links), ErrCounters)
	}
	var out []ClassUsage
	at := map[string]int{}
	for id, l := range t.Links {
		i, ok := at[l.Group]
		if !ok {
			i = len(out)
			at[l.Group] = i
			out = append(out, ClassUsage{Group: l.Group, Busiest: id})
		}
		u := &out[i]
		u.Links++
		u.Bytes = addTime(u.Bytes, c[id].Bytes)
		u.Busy = addTime(u.Busy, c[id].Busy)
		if c[id].Busy > u.MaxBusy {
			u.Busiest, u.MaxBusy, u.MaxBytes = id, c[id].Busy, c[id].Bytes
		}
	}
	return out, nil
}
