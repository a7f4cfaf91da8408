package simkernel

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Errors returned by the engine and by Restore. Test for them with [errors.Is];
// the returned errors wrap them with the details (times, handler, index).
var (
	// ErrPastEvent is returned when an event is scheduled before the current time.
	ErrPastEvent = errors.New("event time is in the past")
	// ErrUnknownHandler is returned for a HandlerID that was never registered.
	ErrUnknownHandler = errors.New("unknown event handler")
	// ErrDuplicateHandler is returned by Register for a name already registered.
	ErrDuplicateHandler = errors.New("event handler name already registered")
	// ErrTimeOverflow is returned when a time would pass [MaxTime]: an event
	// scheduled after it, or a run or advance that would take the clock past
	// it. Nothing is scheduled or run then.
	ErrTimeOverflow = errors.New("virtual time would pass its maximum")
	// ErrSequenceExhausted is returned when no sequence number is left to
	// give a new event (only reachable through a restored state).
	ErrSequenceExhausted = errors.New("event sequence numbers exhausted")
	// ErrEventLimit is returned by RunAll when it stopped at its event limit
	// with events still pending.
	ErrEventLimit = errors.New("event limit reached with events pending")
	// ErrInvalidState is returned by Restore (of an [Engine] or a [Memory])
	// when the state given is inconsistent; the old state is kept.
	ErrInvalidState = errors.New("invalid state")
)

// HandlerID names a registered [Handler] inside an [EngineState]. IDs are
// handed out by [Engine.Register] in registration order starting at 1; the
// zero HandlerID is never assigned, so a zeroed Event is always refused.
type HandlerID uint32

// Handler receives events. The engine calls HandleEvent with its clock set to
// the event's time; the handler may schedule further events, including at the
// current time.
type Handler interface {
	HandleEvent(e *Engine, arg uint64)
}

// HandlerFunc adapts an ordinary function to a [Handler].
type HandlerFunc func(e *Engine, arg uint64)

// HandleEvent calls f(e, arg).
func (f HandlerFunc) HandleEvent(e *Engine, arg uint64) { f(e, arg) }

// Event is one pending event: at time At, call handler Handler with Arg.
// Seq is assigned when the event is scheduled and breaks ties between events
// at the same time, so they run in the order they were scheduled.
type Event struct {
	At      Time
	Seq     uint64
	Handler HandlerID
	Arg     uint64
}

// before reports whether a runs before b: by time, then by sequence.
func (a *Event) before(b *Event) bool {
	return a.At < b.At || (a.At == b.At && a.Seq < b.Seq)
}

// EngineState is the whole mutable state of an [Engine]: the clock, the next
// sequence number to assign, and the pending events. It holds handler IDs
// only; the owner re-registers its handlers (in the same order) before
// restoring a state saved from another engine.
type EngineState struct {
	// Now is the current virtual time.
	Now Time
	// NextSeq is the sequence number the next scheduled event will get; every
	// pending event's Seq is below it.
	NextSeq uint64
	// Queue holds the pending events. State returns them in run order;
	// Restore accepts any order.
	Queue []Event
}

// Engine is a deterministic discrete-event engine over virtual time.
//
// Events run in (time, sequence) order. The queue is a radix heap of Event
// values (eventQueue), so scheduling does not allocate once its buckets'
// arrays have grown to the working size.
//
// The zero Engine is ready to use. An Engine is not safe for concurrent use;
// its owner (the Device) holds a mutex around it.
type Engine struct {
	now     Time
	nextSeq uint64
	queue   eventQueue

	handlers []Handler // index = HandlerID - 1
	names    []string  // index = HandlerID - 1
	byName   map[string]HandlerID
}

// NewEngine returns an empty engine at time 0 with no handlers.
func NewEngine() *Engine { return &Engine{} }

// Register adds h under name and returns its ID. Names must be non-empty and
// unique; a duplicate name returns an error wrapping [ErrDuplicateHandler].
// Registrations survive Reset and Restore; IDs are assigned in registration
// order, so an owner that registers the same handlers in the same order gets
// the same IDs, which is what makes a saved [EngineState] portable.
func (e *Engine) Register(name string, h Handler) (HandlerID, error) {
	switch {
	case name == "":
		return 0, errors.New("sim engine: register: empty handler name")
	case h == nil:
		return 0, fmt.Errorf("sim engine: register %q: nil handler", name)
	}
	if id, ok := e.byName[name]; ok {
		return 0, fmt.Errorf("sim engine: register %q (already ID %d): %w", name, id, ErrDuplicateHandler)
	}
	if uint64(len(e.handlers)) >= math.MaxUint32 {
		return 0, fmt.Errorf("sim engine: register %q: too many handlers", name)
	}
	if e.byName == nil {
		e.byName = make(map[string]HandlerID)
	}
	e.handlers = append(e.handlers, h)
	e.names = append(e.names, name)
	id := HandlerID(len(e.handlers))
	e.byName[name] = id
	return id, nil
}

// Lookup returns the ID registered under name.
func (e *Engine) Lookup(name string) (HandlerID, bool) {
	id, ok := e.byName[name]
	return id, ok
}

// HandlerName returns the name id was registered under.
func (e *Engine) HandlerName(id HandlerID) (string, bool) {
	if !e.known(id) {
		return "", false
	}
	return e.names[id-1], true
}

func (e *Engine) known(id HandlerID) bool {
	return id != 0 && uint64(id) <= uint64(len(e.handlers))
}

// Now returns the current virtual time.
func (e *Engine) Now() Time { return e.now }

// Pending returns the number of events waiting to run.
func (e *Engine) Pending() int { return e.queue.len() }

// PendingOf appends to dst the events waiting to run that call handler h,
// in run order (time, then the order they were scheduled in). It walks the
// whole queue: for reports at the end of a run, not for an event's path.
func (e *Engine) PendingOf(h HandlerID, dst []Event) []Event {
	n := len(dst)
	for _, ev := range e.queue.events(nil) {
		if ev.Handler == h {
			dst = append(dst, ev)
		}
	}
	slices.SortFunc(dst[n:], compareEvents)
	return dst
}

// NextAt returns the time of the next event, and false if none is pending.
func (e *Engine) NextAt() (Time, bool) {
	if e.queue.len() == 0 {
		return 0, false
	}
	return e.queue.peek(), true
}

// Schedule queues a call of handler h with arg at time at. An event at the
// current time is allowed and runs after the events already queued for that
// time. It returns an error wrapping [ErrPastEvent] if at is before Now,
// [ErrTimeOverflow] if at is after [MaxTime], or [ErrUnknownHandler] if h was
// not registered; nothing is queued then.
func (e *Engine) Schedule(at Time, h HandlerID, arg uint64) error {
	if !e.known(h) {
		return fmt.Errorf("sim engine: schedule at %v: handler ID %d: %w", at, h, ErrUnknownHandler)
	}
	if at < e.now {
		return fmt.Errorf("sim engine: schedule %q at %v, before now (%v): %w", e.names[h-1], at, e.now, ErrPastEvent)
	}
	if at > MaxTime {
		return fmt.Errorf("sim engine: schedule %q at %dps, after the latest time %dps (%v): %w", e.names[h-1], uint64(at), uint64(MaxTime), MaxTime, ErrTimeOverflow)
	}
	if e.nextSeq == math.MaxUint64 {
		return fmt.Errorf("sim engine: schedule %q at %v: %w", e.names[h-1], at, ErrSequenceExhausted)
	}
	e.queue.push(Event{At: at, Seq: e.nextSeq, Handler: h, Arg: arg})
	e.nextSeq++
	return nil
}

// After queues a call of handler h with arg at Now+d. It returns an error
// wrapping [ErrTimeOverflow] if Now+d is after [MaxTime], and otherwise
// fails as Schedule does.
func (e *Engine) After(d Time, h HandlerID, arg uint64) error {
	if err := e.fits("schedule after", d); err != nil {
		return err
	}
	return e.Schedule(e.now+d, h, arg)
}

// fits checks that the clock can move d forward without passing [MaxTime].
func (e *Engine) fits(op string, d Time) error {
	if d > MaxTime || e.now > MaxTime-d {
		return fmt.Errorf("sim engine: %s %dps from %dps: past the latest time %dps (%v): %w",
			op, uint64(d), uint64(e.now), uint64(MaxTime), MaxTime, ErrTimeOverflow)
	}
	return nil
}

// Room returns how much virtual time is left before the clock reaches
// [MaxTime].
func (e *Engine) Room() Time {
	if e.now >= MaxTime {
		return 0
	}
	return MaxTime - e.now
}

// Step runs the next event, first setting the clock to its time. It reports
// whether an event ran.
func (e *Engine) Step() bool {
	if e.queue.len() == 0 {
		return false
	}
	e.run(e.queue.pop())
	return true
}

// run runs ev, first setting the clock to its time.
func (e *Engine) run(ev Event) {
	e.now = ev.At
	e.handlers[ev.Handler-1].HandleEvent(e, ev.Arg)
}

// RunUntil runs, in order, every event due at or before t, including events
// that handlers schedule on the way, then sets the clock to t. It returns the
// number of events run. Time never moves backwards, nor past [MaxTime]: if t
// is before Now or after MaxTime, RunUntil runs nothing and leaves the clock
// alone. [Engine.RunTo] and [Engine.RunFor] do the same and report a t past
// MaxTime as an error; use them for times that come from outside.
//
// A handler may itself call RunUntil or Step (a nested run, as when an MMIO
// poll inside a handler advances the clock); the clock stays monotonic, and
// each call counts only the events it ran itself.
func (e *Engine) RunUntil(t Time) (ran int) {
	if t < e.now || t > MaxTime {
		return 0
	}
	for {
		ev, ok := e.queue.popUntil(t)
		if !ok {
			break
		}
		e.run(ev)
		ran++
	}
	if t > e.now { // a nested run may already have gone further
		e.now = t
	}
	return ran
}

// RunTo is [Engine.RunUntil] refusing a t after [MaxTime] with an error
// wrapping [ErrTimeOverflow], running nothing then.
func (e *Engine) RunTo(t Time) (ran int, err error) {
	if t > MaxTime {
		return 0, fmt.Errorf("sim engine: run to %dps: past the latest time %dps (%v): %w", uint64(t), uint64(MaxTime), MaxTime, ErrTimeOverflow)
	}
	return e.RunUntil(t), nil
}

// RunFor runs the events due in the next d of virtual time and moves the
// clock d forward (RunUntil(Now+d)). A d that would take the clock past
// [MaxTime] is refused with an error wrapping [ErrTimeOverflow]: nothing runs
// and the clock stays where it is.
func (e *Engine) RunFor(d Time) (ran int, err error) {
	if err := e.fits("run for", d); err != nil {
		return 0, err
	}
	return e.RunUntil(e.now + d), nil
}

// RunAll runs events until none is pending or limit events have run; the
// limit guards against handlers that reschedule themselves forever. The clock
// is left at the last event's time. It returns the number of events run, and
// an error wrapping [ErrEventLimit] if it stopped at the limit with events
// still pending. A limit of zero or less runs nothing.
func (e *Engine) RunAll(limit int) (ran int, err error) {
	for ran < limit && e.Step() {
		ran++
	}
	if e.queue.len() > 0 {
		return ran, fmt.Errorf("sim engine: ran %d events, %d still pending (next at %v): %w",
			ran, e.queue.len(), e.queue.peek(), ErrEventLimit)
	}
	return ran, nil
}

// Reset drops every pending event and sets the clock and the sequence
// counter to zero. Handler registrations are kept.
func (e *Engine) Reset() {
	e.queue.reset(0)
	e.now = 0
	e.nextSeq = 0
}

// State returns a deep copy of the engine's mutable state, with the queue in
// run order.
func (e *Engine) State() EngineState {
	q := e.queue.events(make([]Event, 0, e.queue.len()))
	slices.SortFunc(q, compareEvents)
	return EngineState{Now: e.now, NextSeq: e.nextSeq, Queue: q}
}

// Restore replaces the engine's mutable state with a copy of s. It checks
// that the clock and every event's time are at most units.MaxTimePS (the
// latest time a clock may reach), that every event names a registered
// handler, is not before s.Now, and has
// a sequence number below s.NextSeq that no other event shares. A state that
// fails a check is refused with an error wrapping [ErrInvalidState] that
// names the offending event, and the engine keeps its old state.
func (e *Engine) Restore(s EngineState) error {
	if err := e.Validate(s); err != nil {
		return err
	}
	e.queue.load(s.Now, slices.Clone(s.Queue))
	e.now = s.Now
	e.nextSeq = s.NextSeq
	return nil
}

// Validate makes the checks of [Engine.Restore] without changing anything:
// an owner restoring several parts checks them all first, and then restores
// each, which cannot fail.
func (e *Engine) Validate(s EngineState) error {
	if _, err := units.PS("engine: Now", uint64(s.Now)); err != nil {
		return fmt.Errorf("sim engine: restore: %w: %w", err, ErrInvalidState)
	}
	for i := range s.Queue {
		ev := &s.Queue[i]
		if _, err := units.PS(fmt.Sprintf("engine: event %d (seq %d): At", i, ev.Seq), uint64(ev.At)); err != nil {
			return fmt.Errorf("sim engine: restore: %w: %w", err, ErrInvalidState)
		}
		if !e.known(ev.Handler) {
			return fmt.Errorf("sim engine: restore: event %d (at %v, seq %d): handler ID %d: %w: %w",
				i, ev.At, ev.Seq, ev.Handler, ErrUnknownHandler, ErrInvalidState)
		}
		if ev.At < s.Now {
			return fmt.Errorf("sim engine: restore: event %d (seq %d) at %v is before now (%v): %w",
				i, ev.Seq, ev.At, s.Now, ErrInvalidState)
		}
		if ev.Seq >= s.NextSeq {
			return fmt.Errorf("sim engine: restore: event %d (at %v) has seq %d, not below next seq %d: %w",
				i, ev.At, ev.Seq, s.NextSeq, ErrInvalidState)
		}
	}
	if len(s.Queue) > 1 {
		seqs := make([]uint64, len(s.Queue))
		for i := range s.Queue {
			seqs[i] = s.Queue[i].Seq
		}
		slices.Sort(seqs)
		for i := 1; i < len(seqs); i++ {
			if seqs[i] == seqs[i-1] {
				return fmt.Errorf("sim engine: restore: two events share seq %d: %w", seqs[i], ErrInvalidState)
			}
		}
	}
	return nil
}
