package fabric

import (
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// BenchmarkBookWrites books 64 KiB writes (16 chunks of 4 KiB) of 7
// engines reading at 23 GB/s over a 4-hop path of 256 GB/s links, in the
// aware model: each chunk leaves gaps the other engines' chunks fill, the
// calendar's common case, with the present moving on as the engines do.
// One op is one write.
func BenchmarkBookWrites(b *testing.B) {
	for _, m := range []Model{Aware, Free} {
		b.Run(m.String(), func(b *testing.B) {
			p := DefaultParams(hwarch.Cayman)
			p.Model = m
			s, err := New(Config{Generation: hwarch.Cayman, Devices: 16, Kind: KindTorus2D, Params: &p, Ready: true, TimingOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			path, err := s.path(0, 10)
			if err != nil {
				b.Fatal(err)
			}
			const n = 64 << 10
			dur := 50*ns + dma.TransferTime(n, 23e9)
			var clock [7]uint64
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				e := i % len(clock)
				start := clock[e]
				clock[e] = start + dur
				if now := uint64(s.engine.Now()); start > now {
					s.engine.RunUntil(sim.Time(start)) // the present moves on: spans over are dropped
				}
				s.timing(path, n, start, start+dur, nil)
				i++
			}
		})
	}
}
