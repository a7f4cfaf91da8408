package simkernel

import (
	"container/heap"
	"encoding/binary"
	"testing"
)

// benchEvents is the steady-state queue depth of the engine benchmarks: each
// op schedules this many events at scattered times and runs them all.
const benchEvents = 256

// benchDelay spreads events over 1000 ps without a pattern the heap would like.
func benchDelay(i int) Time { return Time((i * 7919) % 1000) }

type nopHandler struct{ sum uint64 }

func (h *nopHandler) HandleEvent(_ *Engine, arg uint64) { h.sum += arg }

func BenchmarkEngineScheduleRun(b *testing.B) {
	e := NewEngine()
	h := &nopHandler{}
	id, err := e.Register("nop", h)
	if err != nil {
		b.Fatal(err)
	}
	round := func() {
		for i := range benchEvents {
			if err := e.After(benchDelay(i), id, uint64(i)); err != nil {
				b.Fatal(err)
			}
		}
		e.RunUntil(e.Now() + 1000)
	}
	round() // grow the heap's backing array: the steady state allocates nothing
	b.ReportAllocs()
	for b.Loop() {
		round()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEvents), "ns/event")
}

// boxedQueue is the baseline: the same events in a container/heap, whose
// Push and Pop go through interface values.
type boxedQueue []Event

func (q boxedQueue) Len() int           { return len(q) }
func (q boxedQueue) Less(i, j int) bool { return q[i].before(&q[j]) }
func (q boxedQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *boxedQueue) Push(x any)        { *q = append(*q, x.(Event)) }
func (q *boxedQueue) Pop() any {
	old := *q
	ev := old[len(old)-1]
	*q = old[:len(old)-1]
	return ev
}

func BenchmarkBaselineContainerHeap(b *testing.B) {
	var q boxedQueue
	var now Time
	var seq uint64
	var handlers = []Handler{&nopHandler{}}
	b.ReportAllocs()
	for b.Loop() {
		for i := range benchEvents {
			heap.Push(&q, Event{At: now + benchDelay(i), Seq: seq, Handler: 1, Arg: uint64(i)})
			seq++
		}
		until := now + 1000
		for len(q) > 0 && q[0].At <= until {
			ev := heap.Pop(&q).(Event)
			now = ev.At
			handlers[ev.Handler-1].HandleEvent(nil, ev.Arg)
		}
		now = until
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEvents), "ns/event")
}

func BenchmarkMemoryReadU32Hit(b *testing.B) {
	var m Memory
	if err := m.Write(0x1000, pattern(PageSize, 1)); err != nil {
		b.Fatal(err)
	}
	var sum uint32
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		v, _ := m.ReadU32(0x1000 + i&(PageSize-4))
		sum += v
		i += 4
	}
	_ = sum
}

func BenchmarkMemoryWriteU32Hit(b *testing.B) {
	var m Memory
	if err := m.WriteU32(0x1000, 1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		_ = m.WriteU32(0x1000+i&(PageSize-4), uint32(i))
		i += 4
	}
}

func BenchmarkBaselineSliceReadU32(b *testing.B) {
	buf := pattern(PageSize, 1)
	var sum uint32
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		sum += binary.LittleEndian.Uint32(buf[i&(PageSize-4):])
		i += 4
	}
	_ = sum
}

func BenchmarkMemoryCopy64KiB(b *testing.B) {
	const n = 64 << 10
	var m Memory
	if err := m.Write(0x10_0000, pattern(n, 1)); err != nil {
		b.Fatal(err)
	}
	// An unaligned destination, so every page pair splits into two chunks.
	if err := m.Copy(0x20_0010, 0x10_0000, n); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Copy(0x20_0010, 0x10_0000, n); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPending is the queue depth of BenchmarkEngineStepPending: about the
// events a system of many devices keeps pending (a completion per busy DMA
// queue and core engine).
const benchPending = 2048

// rescheduler is a handler that schedules one event for each it receives,
// at a scattered time ahead, so the queue stays benchPending deep.
type rescheduler struct {
	id HandlerID
	n  uint64
}

func (h *rescheduler) HandleEvent(e *Engine, arg uint64) {
	h.n++
	_ = e.After(Time(1+(h.n*7919)%5000), h.id, arg)
}

// BenchmarkEngineStepPending is one event's host cost (pop, dispatch,
// schedule) with benchPending events pending.
func BenchmarkEngineStepPending(b *testing.B) {
	e := NewEngine()
	h := &rescheduler{}
	id, err := e.Register("resched", h)
	if err != nil {
		b.Fatal(err)
	}
	h.id = id
	for i := range benchPending {
		if err := e.After(benchDelay(i)*5, id, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Step()
	}
	if e.Pending() != benchPending {
		b.Fatalf("%d events pending, want %d", e.Pending(), benchPending)
	}
}
