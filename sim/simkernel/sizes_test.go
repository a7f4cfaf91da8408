package simkernel

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Sinks keep what the test makes alive, without boxing it.
var (
	byteSink  []byte
	eventSink []Event
	pageSink  map[uint64]*Page
	regSink   map[uint64]uint32
)

// TestSizesBoundAllocations: AllocBytes, SliceBytes and MapBytes are at
// least what the Go runtime allocates for a byte slice, a page map and a
// register map made with their size hint, and at most twice it, from the
// smallest to past the size where a map splits its tables.
func TestSizesBoundAllocations(t *testing.T) {
	// measure is the least of three runs (a background allocation can
	// fall in one).
	measure := func(make func()) uint64 {
		least := ^uint64(0)
		for range 3 {
			var a, b runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&a)
			make()
			runtime.ReadMemStats(&b)
			byteSink, eventSink, pageSink, regSink = nil, nil, nil, nil
			least = min(least, b.TotalAlloc-a.TotalAlloc)
		}
		return least
	}
	for _, n := range []int{0, 1, 7, 8, 9, 100, 896, 897, 1000, 5000, 100000} {
		for _, tc := range []struct {
			name string
			est  uint64
			make func()
		}{
			{"bytes", SliceBytes(n, 1), func() { byteSink = make([]byte, n) }},
			{"events", SliceBytes(n, eventSize), func() { eventSink = make([]Event, n) }},
			{"page map", MapBytes(n, 16), func() {
				m := make(map[uint64]*Page, n)
				for i := range n {
					m[uint64(i)*7919] = nil
				}
				pageSink = m
			}},
			{"register map", MapBytes(n, 16), func() {
				m := make(map[uint64]uint32, n)
				for i := range n {
					m[uint64(i)*4] = 1
				}
				regSink = m
			}},
		} {
			got := measure(tc.make)
			assert.GreaterOrEqual(t, tc.est, got, "%s of %d: estimate %d, allocated %d", tc.name, n, tc.est, got)
			if got > 256 {
				assert.LessOrEqual(t, tc.est, 2*got, "%s of %d: estimate %d, allocated %d", tc.name, n, tc.est, got)
			}
		}
	}
}
