package systemtest

import (
	"fmt"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// BenchmarkAllReduceTimingOnly: host time of one ring all-reduce on a
// mariana switch system in timing-only mode, by device count and size.
// The target is the 32-device 1 GiB point under one second.
func BenchmarkAllReduceTimingOnly(b *testing.B) {
	for _, tc := range []struct {
		devices int
		size    int64
	}{{2, 1 << 30}, {8, 1 << 30}, {32, 1 << 20}, {32, 1 << 30}} {
		b.Run(fmt.Sprintf("%ddev/%dMiB", tc.devices, tc.size>>20), func(b *testing.B) {
			sched, err := enc.Build(enc.AllReduce, enc.Ring, tc.devices, tc.size, 4, enc.Options{})
			if err != nil {
				b.Fatal(err)
			}
			need := uint64(enc.LayoutOf(sched, 0).End) + 4096
			x := newCluster(b, hwarch.Mariana, tc.devices, true, need).Exec
			b.ReportAllocs()
			var last enc.Result
			for b.Loop() {
				if last, err = x.Run(sched, enc.Float32); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(last.TimePS)/1e6, "virtual-us")
			b.ReportMetric(float64(last.Descriptors), "descriptors")
		})
	}
}
