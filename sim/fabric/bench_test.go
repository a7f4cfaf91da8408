package fabric

import (
	"fmt"
	"runtime"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// BenchmarkBookWrites books 64 KiB writes (16 chunks of 4 KiB) of 7
// engines reading at 23 GB/s, in each model, over a 4-link path of 256 GB/s
// links (a Trn2 torus, 2 hops each way) and a 2-link one (a Trn3 Gen2
// UltraServer's devices of one server, through its first-level switch),
// with the present moving on as the engines do. On the torus each chunk
// leaves gaps the other engines' chunks fill; the Gen2 path's 128 GB/s
// links carry less than the engines read, so the chunks queue on them
// (bookQueue's case, a busy link's). aware-bookRun is the aware model
// booking every link with bookRun (System.slowBook): bookQueue's baseline.
// One op is one write.
func BenchmarkBookWrites(b *testing.B) {
	paths := []struct {
		links    int
		sys      timingSystem
		src, dst int
	}{
		{4, timingSystem{hwarch.Cayman, KindTorus2D, 16}, 0, 10},
		{2, timingSystem{hwarch.Mariana, KindTrn3Gen2, Gen2Servers * Gen2ServerSize}, 0, 1},
	}
	for _, mc := range []struct {
		name string
		m    Model
		slow bool
	}{{"aware", Aware, false}, {"aware-bookRun", Aware, true}, {"free", Free, false}} {
		for _, pc := range paths {
			b.Run(fmt.Sprintf("%s/links=%d", mc.name, pc.links), func(b *testing.B) {
				p := DefaultParams(pc.sys.gen)
				p.Model = mc.m
				s := pc.sys.build(b, p)
				s.slowBook = mc.slow
				path, err := s.path(pc.src, pc.dst)
				if err != nil {
					b.Fatal(err)
				}
				if len(path) != pc.links {
					b.Fatalf("path %d → %d has %d links, want %d", pc.src, pc.dst, len(path), pc.links)
				}
				benchBook(b, s, path)
			})
		}
	}
}

// benchBook is BenchmarkBookWrites on one system's path.
func benchBook(b *testing.B, s *System, path []int) {
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
}

// BenchmarkRingStep is the fabric's host cost per descriptor of a
// timing-only ring step on NeuronSwitch-v1 systems of 2 to 1,024 devices
// (servers of 16): every device writes one 4 KiB chunk to its neighbour's
// memory through the fabric window (its port's Reserve, then Post), the
// step's writes starting together and the next step once the last has
// landed. One op is one descriptor; ns/descriptor is reported so the
// sizes compare (issue 16: within 2× from 2 to 1,024 devices).
func BenchmarkRingStep(b *testing.B) {
	for _, n := range []int{2, 16, 128, 1024} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			s, err := New(Config{Generation: hwarch.Mariana, Devices: n, Kind: KindSwitch, Ready: true, TimingOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]uint64, n)
			for d := range n {
				if dst[d], err = hwarch.FabricAddress((d+1)%n, 0); err != nil {
					b.Fatal(err)
				}
			}
			const chunk = 4096
			var step, last uint64
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				d := i % n
				if d == 0 && i > 0 {
					step = last
					s.engine.RunUntil(sim.Time(step))
				}
				pt := s.ports[d]
				_, lands, err := pt.Reserve(0, 0, dst[d], chunk, sim.Time(step), sim.Time(step))
				if err != nil {
					b.Fatal(err)
				}
				if err := pt.Post(0, 0, dst[d], chunk, nil, udma.Reduce{}, lands); err != nil {
					b.Fatal(err)
				}
				last = max(last, uint64(lands))
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/descriptor")
		})
	}
}

// BenchmarkBuildThousands builds timing-only NeuronSwitch-v1 systems of
// 1,024 and 4,096 devices (servers of 16) and reports the live heap the
// system holds per device (issue 16: host memory per device bounded). One
// op is one system built.
func BenchmarkBuildThousands(b *testing.B) {
	for _, n := range []int{1024, 4096} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			var heap uint64
			for b.Loop() {
				var s *System
				grew := heapGrowth(func() {
					var err error
					if s, err = New(Config{Generation: hwarch.Mariana, Devices: n, Kind: KindSwitch, Ready: true, TimingOnly: true}); err != nil {
						b.Fatal(err)
					}
				})
				runtime.KeepAlive(s)
				heap = max(heap, grew)
			}
			b.ReportMetric(float64(heap)/float64(n), "heap-B/device")
		})
	}
}
