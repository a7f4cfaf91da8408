package simkernel

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/units"
)

// fired is one handler call seen by a recorder.
type fired struct {
	At  Time
	Arg uint64
}

// recorder is a Handler that logs its calls.
type recorder struct{ log []fired }

func (r *recorder) HandleEvent(e *Engine, arg uint64) {
	r.log = append(r.log, fired{e.Now(), arg})
}

// newTestEngine returns an engine with a recorder registered as "rec".
func newTestEngine(t testing.TB) (*Engine, HandlerID, *recorder) {
	t.Helper()
	e := NewEngine()
	r := &recorder{}
	id, err := e.Register("rec", r)
	require.NoError(t, err)
	return e, id, r
}

func TestEngineRegister(t *testing.T) {
	e := NewEngine()
	a, err := e.Register("a", &recorder{})
	require.NoError(t, err)
	b, err := e.Register("b", HandlerFunc(func(*Engine, uint64) {}))
	require.NoError(t, err)
	assert.Equal(t, HandlerID(1), a)
	assert.Equal(t, HandlerID(2), b)

	tests := []struct {
		name    string
		regName string
		h       Handler
		is      error
	}{
		{"duplicate", "a", &recorder{}, ErrDuplicateHandler},
		{"empty name", "", &recorder{}, nil},
		{"nil handler", "c", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := e.Register(tc.regName, tc.h)
			require.Error(t, err)
			assert.Zero(t, id)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}
	got, ok := e.Lookup("b")
	assert.True(t, ok)
	assert.Equal(t, b, got)
	name, ok := e.HandlerName(a)
	assert.True(t, ok)
	assert.Equal(t, "a", name)
	_, ok = e.HandlerName(0)
	assert.False(t, ok)
	_, ok = e.HandlerName(3)
	assert.False(t, ok)
}

func TestEngineOrdering(t *testing.T) {
	type sched struct {
		at  Time
		arg uint64
	}
	tests := []struct {
		name  string
		sched []sched
		want  []uint64
	}{
		{"by time", []sched{{30, 3}, {10, 1}, {20, 2}}, []uint64{1, 2, 3}},
		{"same time FIFO", []sched{{5, 1}, {5, 2}, {5, 3}, {5, 4}}, []uint64{1, 2, 3, 4}},
		{"time then sequence", []sched{{9, 1}, {3, 2}, {9, 3}, {3, 4}, {0, 5}}, []uint64{5, 2, 4, 1, 3}},
		{"empty", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, id, r := newTestEngine(t)
			for _, s := range tc.sched {
				require.NoError(t, e.Schedule(s.at, id, s.arg))
			}
			ran, err := e.RunAll(100)
			require.NoError(t, err)
			assert.Equal(t, len(tc.want), ran)
			var got []uint64
			for _, f := range r.log {
				got = append(got, f.Arg)
			}
			assert.Equal(t, tc.want, got)
			assert.Zero(t, e.Pending())
		})
	}
}

func TestEngineHandlerSchedules(t *testing.T) {
	e := NewEngine()
	var log []fired
	var tick HandlerID
	tick, err := e.Register("tick", HandlerFunc(func(e *Engine, n uint64) {
		log = append(log, fired{e.Now(), n})
		if n == 0 {
			return
		}
		// One event now (runs after those already queued for now) and one later.
		require.NoError(t, e.After(0, tick, 0))
		require.NoError(t, e.After(10, tick, n-1))
	}))
	require.NoError(t, err)
	require.NoError(t, e.Schedule(0, tick, 2))
	require.NoError(t, e.Schedule(10, tick, 100+0)) // same time as the first child

	ran := e.RunUntil(20)
	assert.Equal(t, 9, ran)
	assert.Equal(t, []fired{
		{0, 2},    // seq 0: schedules (0, 0) seq 2 and (10, 1) seq 3
		{0, 0},    // seq 2: scheduled at the current time, runs in the same RunUntil
		{10, 100}, // seq 1: schedules (10, 0) seq 4 and (20, 99) seq 5
		{10, 1},   // seq 3: schedules (10, 0) seq 6 and (20, 0) seq 7
		{10, 0},   // seq 4
		{10, 0},   // seq 6
		{20, 99},  // seq 5: schedules (20, 0) seq 8 and (30, 98) seq 9
		{20, 0},   // seq 7
		{20, 0},   // seq 8
	}, log)
	assert.Equal(t, Time(20), e.Now())
	assert.Equal(t, 1, e.Pending())
}

func TestEngineRunUntilBoundaries(t *testing.T) {
	e, id, r := newTestEngine(t)
	for _, at := range []Time{10, 20, 20, 30} {
		require.NoError(t, e.Schedule(at, id, uint64(at)))
	}
	tests := []struct {
		until   Time
		ran     int
		now     Time
		pending int
	}{
		{9, 0, 9, 4},
		{10, 1, 10, 3}, // an event exactly at t runs
		{19, 0, 19, 3},
		{5, 0, 19, 3}, // backwards: nothing runs, clock stays
		{20, 2, 20, 1},
		{100, 1, 100, 0},
		{100, 0, 100, 0},
	}
	for _, tc := range tests {
		ran := e.RunUntil(tc.until)
		assert.Equal(t, tc.ran, ran, "RunUntil(%v)", tc.until)
		assert.Equal(t, tc.now, e.Now(), "RunUntil(%v)", tc.until)
		assert.Equal(t, tc.pending, e.Pending(), "RunUntil(%v)", tc.until)
	}
	assert.Equal(t, []fired{{10, 10}, {20, 20}, {20, 20}, {30, 30}}, r.log)
}

func TestEngineNestedRunUntil(t *testing.T) {
	e, id, r := newTestEngine(t)
	nest, err := e.Register("nest", HandlerFunc(func(e *Engine, _ uint64) {
		e.RunUntil(50) // e.g. an MMIO poll that advances the clock
	}))
	require.NoError(t, err)
	require.NoError(t, e.Schedule(10, nest, 0))
	require.NoError(t, e.Schedule(40, id, 1))
	require.NoError(t, e.Schedule(60, id, 2))
	// The outer run counts the one event it ran; the nested run ran the other.
	assert.Equal(t, 1, e.RunUntil(30))
	assert.Equal(t, Time(50), e.Now())
	assert.Equal(t, []fired{{40, 1}}, r.log)
}

func TestEngineScheduleErrors(t *testing.T) {
	e, id, _ := newTestEngine(t)
	e.RunUntil(100)
	tests := []struct {
		name string
		run  func() error
		is   error
	}{
		{"past", func() error { return e.Schedule(99, id, 0) }, ErrPastEvent},
		{"unknown handler", func() error { return e.Schedule(200, id+1, 0) }, ErrUnknownHandler},
		{"zero handler", func() error { return e.Schedule(200, 0, 0) }, ErrUnknownHandler},
		{"after unknown", func() error { return e.After(1, 77, 0) }, ErrUnknownHandler},
		{"after overflow", func() error { return e.After(MaxTime, id, 0) }, ErrTimeOverflow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), "sim engine:")
			assert.Zero(t, e.Pending())
		})
	}
	require.NoError(t, e.Schedule(100, id, 0), "an event at now is allowed")
	require.NoError(t, e.After(MaxTime-100, id, 0), "the largest time is allowed")
	assert.Equal(t, 2, e.Pending())
}

func TestEngineSequenceExhausted(t *testing.T) {
	e, id, _ := newTestEngine(t)
	require.NoError(t, e.Restore(EngineState{NextSeq: math.MaxUint64 - 1}))
	require.NoError(t, e.Schedule(0, id, 0))
	require.ErrorIs(t, e.Schedule(0, id, 0), ErrSequenceExhausted)
	assert.Equal(t, 1, e.Pending())
}

func TestEngineStepRunAllReset(t *testing.T) {
	e := NewEngine()
	var loop HandlerID
	loop, err := e.Register("loop", HandlerFunc(func(e *Engine, _ uint64) {
		_ = e.After(Nanosecond, loop, 0) // reschedules itself forever
	}))
	require.NoError(t, err)
	assert.False(t, e.Step())
	_, ok := e.NextAt()
	assert.False(t, ok)

	require.NoError(t, e.Schedule(5, loop, 0))
	at, ok := e.NextAt()
	assert.True(t, ok)
	assert.Equal(t, Time(5), at)
	assert.True(t, e.Step())
	assert.Equal(t, Time(5), e.Now())

	ran, err := e.RunAll(10)
	assert.Equal(t, 10, ran)
	require.ErrorIs(t, err, ErrEventLimit)
	assert.Equal(t, 5+10*Nanosecond, e.Now())

	ran, err = e.RunAll(0)
	assert.Zero(t, ran)
	require.ErrorIs(t, err, ErrEventLimit)

	e.Reset()
	assert.Zero(t, e.Now())
	assert.Zero(t, e.Pending())
	assert.Equal(t, EngineState{Queue: []Event{}}, e.State())
	id, ok := e.Lookup("loop")
	assert.True(t, ok, "registrations survive Reset")
	assert.Equal(t, loop, id)
	ran, err = e.RunAll(0)
	assert.Zero(t, ran)
	assert.NoError(t, err, "nothing pending, so no limit error")
}

func TestEngineStateRoundTrip(t *testing.T) {
	e, id, r := newTestEngine(t)
	for i, at := range []Time{50, 10, 30, 10, 70} {
		require.NoError(t, e.Schedule(at, id, uint64(i)))
	}
	e.RunUntil(20)
	s := e.State()
	assert.Equal(t, Time(20), s.Now)
	assert.Equal(t, uint64(5), s.NextSeq)
	assert.Equal(t, []Event{{30, 2, id, 2}, {50, 0, id, 0}, {70, 4, id, 4}}, s.Queue, "run order")

	// State is a deep copy.
	s.Queue[0].Arg = 999
	assert.NotEqual(t, s, e.State())
	s.Queue[0].Arg = 2

	e.RunUntil(1000)
	want := r.log
	r.log = nil

	// Restore (in scrambled order) into a fresh engine with the same
	// registrations and replay: the same calls in the same order.
	e2, id2, r2 := newTestEngine(t)
	require.Equal(t, id, id2)
	scrambled := s
	scrambled.Queue = []Event{s.Queue[2], s.Queue[0], s.Queue[1]}
	require.NoError(t, e2.Restore(scrambled))
	assert.Equal(t, s, e2.State())
	scrambled.Queue[0].At = 0 // Restore copied the queue
	assert.Equal(t, s, e2.State())
	e2.RunUntil(1000)
	assert.Equal(t, want[2:], r2.log)

	// Scheduling after Restore continues the sequence.
	require.NoError(t, e2.Restore(s))
	require.NoError(t, e2.Schedule(30, id2, 7))
	assert.Equal(t, Event{30, 5, id2, 7}, e2.State().Queue[1])
}

func TestEngineRestoreRefusesCorruptState(t *testing.T) {
	e, id, _ := newTestEngine(t)
	require.NoError(t, e.Schedule(10, id, 1))
	require.NoError(t, e.Schedule(20, id, 2))
	e.RunUntil(5)
	before := e.State()

	tests := []struct {
		name  string
		state EngineState
		is    error
	}{
		{"unknown handler", EngineState{Now: 0, NextSeq: 1, Queue: []Event{{0, 0, 9, 0}}}, ErrUnknownHandler},
		{"zero handler", EngineState{NextSeq: 1, Queue: []Event{{}}}, ErrUnknownHandler},
		{"event before now", EngineState{Now: 100, NextSeq: 2, Queue: []Event{{100, 0, id, 0}, {99, 1, id, 0}}}, nil},
		{"seq not below next", EngineState{Now: 0, NextSeq: 1, Queue: []Event{{5, 1, id, 0}}}, nil},
		{"duplicate seq", EngineState{NextSeq: 9, Queue: []Event{{5, 3, id, 0}, {6, 4, id, 0}, {7, 3, id, 0}}}, nil},
		{"zero next seq with events", EngineState{Queue: []Event{{1, 0, id, 0}}}, nil},
		// Issue 13 item 7: a clock or an event past units.MaxTimePS.
		{"now past the latest time", EngineState{Now: math.MaxUint64, NextSeq: 1}, units.ErrRange},
		{"now just past the latest time", EngineState{Now: Time(units.MaxTimePS) + 1, NextSeq: 1}, units.ErrRange},
		{"event past the latest time", EngineState{NextSeq: 1, Queue: []Event{{Time(units.MaxTimePS) + 1, 0, id, 0}}}, units.ErrRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Restore(tc.state)
			require.ErrorIs(t, err, ErrInvalidState)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Contains(t, err.Error(), "sim engine: restore:")
			assert.Equal(t, before, e.State(), "a refused Restore keeps the old state")
		})
	}
	// The engine still works.
	assert.Equal(t, 2, e.RunUntil(100))
}

func TestEngineScheduleDoesNotAllocate(t *testing.T) {
	e, _, _ := newTestEngine(t)
	nop, err := e.Register("nop", HandlerFunc(func(*Engine, uint64) {}))
	require.NoError(t, err)
	const n = 256
	work := func() {
		for i := range n {
			// Scattered times so the heap does real work.
			_ = e.After(Time((i*7919)%1000), nop, uint64(i))
		}
		e.RunUntil(e.Now() + 1000)
	}
	// Grow the queue's buckets: each reaches its working size once the
	// clock's low bits have taken their patterns, a few rounds in.
	for range 64 {
		work()
	}
	allocs := testing.AllocsPerRun(20, work)
	assert.Zero(t, allocs)
}

func TestEngineErrorsAreDistinct(t *testing.T) {
	errs := []error{ErrPastEvent, ErrUnknownHandler, ErrDuplicateHandler, ErrTimeOverflow,
		ErrSequenceExhausted, ErrEventLimit, ErrInvalidState, ErrAddressRange}
	for i, a := range errs {
		for j, b := range errs {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

// TestEngineHeapOrder: many events at few distinct times, scheduled in a
// scrambled order, with a State/Restore round trip half
// way, run in (time, sequence) order.
func TestEngineHeapOrder(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 64, 1000} {
		e, id, r := newTestEngine(t)
		for i := range n {
			require.NoError(t, e.Schedule(Time((i*7919)%13), id, uint64(i)))
		}
		for range n / 2 {
			require.True(t, e.Step())
		}
		require.NoError(t, e.Restore(e.State()))
		_, err := e.RunAll(n)
		require.NoError(t, err)
		require.Len(t, r.log, n)
		for i := 1; i < n; i++ {
			prev, cur := r.log[i-1], r.log[i]
			pa, ca := Time((prev.Arg*7919)%13), Time((cur.Arg*7919)%13)
			if pa > ca || (pa == ca && prev.Arg > cur.Arg) {
				t.Fatalf("%d events: event %d (at %v) ran before event %d (at %v)", n, prev.Arg, pa, cur.Arg, ca)
			}
		}
	}
}

// TestEnginePendingOf: PendingOf lists one handler's pending events in run
// order, leaves the others' out, appends to what it is given, and changes
// nothing: the engine then runs every event as it would have.
func TestEnginePendingOf(t *testing.T) {
	e, id, r := newTestEngine(t)
	other, err := e.Register("other", HandlerFunc(func(*Engine, uint64) {}))
	require.NoError(t, err)
	for _, s := range []struct {
		at  Time
		h   HandlerID
		arg uint64
	}{{9, id, 1}, {3, other, 2}, {9, id, 3}, {1 << 40, id, 4}, {3, id, 5}} {
		require.NoError(t, e.Schedule(s.at, s.h, s.arg))
	}
	pre := []Event{{At: 1}}
	got := e.PendingOf(id, pre)
	require.Len(t, got, 5)
	assert.Equal(t, Event{At: 1}, got[0], "what dst held is kept")
	var args []uint64
	for _, ev := range got[1:] {
		assert.Equal(t, id, ev.Handler)
		args = append(args, ev.Arg)
	}
	assert.Equal(t, []uint64{5, 1, 3, 4}, args, "in run order")
	assert.Empty(t, e.PendingOf(HandlerID(99), nil))
	_, err = e.RunTo(9)
	require.NoError(t, err)
	assert.Len(t, r.log, 3)
	got = e.PendingOf(id, nil)
	require.Len(t, got, 1)
	assert.Equal(t, uint64(4), got[0].Arg)
}
