// Package benchcpu runs benchmarks whose timed work comes in batches between
// untimed set-up, and reports the process CPU time of the timed parts beside
// the wall time, which other processes on a shared machine inflate.
package benchcpu

import "testing"

// Batches runs b.N operations in batches of at most batch. For each batch of
// n operations it calls before(n) and after(n) with the timer stopped and
// timed(n) with it running; before or after may be nil. It reports
// allocations and, where the platform measures it, the process CPU time of
// the timed calls per operation as "cpu-ns/op".
func Batches(b *testing.B, batch int, before, timed, after func(n int)) {
	b.Helper()
	var cpu int64
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		if before != nil {
			b.StopTimer()
			before(n)
			b.StartTimer()
		}
		c0 := ProcessCPU()
		timed(n)
		cpu += ProcessCPU() - c0
		if after != nil {
			b.StopTimer()
			after(n)
			b.StartTimer()
		}
		done += n
	}
	if cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}
