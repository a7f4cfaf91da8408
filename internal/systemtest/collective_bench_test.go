package systemtest

import (
	"fmt"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// benchCollective times one ring all-reduce of size bytes on a mariana
// switch system of n devices (the host time per collective), reporting the
// virtual time and the descriptor pairs it took.
func benchCollective(b *testing.B, n int, size int64, timingOnly bool) {
	sched, err := enc.Build(enc.AllReduce, enc.Ring, n, size, 4, enc.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c := newCluster(b, hwarch.Mariana, n, timingOnly, collective.LayoutOf(sched, 0).End+4096)
	if !timingOnly {
		if err := c.WriteInputs(sched, cluster.RandomInputs(sched, enc.Float32, 1)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var last collective.Result
	for b.Loop() {
		if last, err = c.Run(sched, enc.Float32); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(last.TimePS)/1e6, "virtual-us")
	b.ReportMetric(float64(last.Descriptors), "descriptors")
}

// BenchmarkAllReduceTimingOnly: host time per 64 MiB ring all-reduce by
// device count in timing-only mode, and the target point: 32
// devices, 1 GiB, under one second of host time.
func BenchmarkAllReduceTimingOnly(b *testing.B) {
	for _, n := range []int{2, 4, 8, 16, 32} {
		b.Run(fmt.Sprintf("%ddev/64MiB", n), func(b *testing.B) { benchCollective(b, n, 64<<20, true) })
	}
	b.Run("32dev/1GiB", func(b *testing.B) { benchCollective(b, 32, 1<<30, true) })
}

// BenchmarkAllReduceFunctional: the same with real data moved and reduced
// (4 MiB, so 32 devices' buffers stay small).
func BenchmarkAllReduceFunctional(b *testing.B) {
	for _, n := range []int{2, 4, 8, 16, 32} {
		b.Run(fmt.Sprintf("%ddev/4MiB", n), func(b *testing.B) { benchCollective(b, n, 4<<20, false) })
	}
}
