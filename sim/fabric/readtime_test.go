package fabric

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// TestChunksRead: the ready-time table New computes gives, for every
// chunk count of a descriptor's largest write and past it, and for a chunk
// other than the configured one (ideal endpoints: one chunk of the
// write), exactly AtRate(k·c, engine bandwidth) — the division the aware
// model made per chunk before the table, so no time it books moves.
func TestChunksRead(t *testing.T) {
	for _, chunk := range []int{64, 1000, 4096, udma.MaxTransfer, 1 << 20} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			p := DefaultParams(hwarch.Cayman)
			p.ChunkBytes = chunk
			s, err := New(Config{Generation: hwarch.Cayman, Devices: 16, Kind: KindTorus2D, Params: &p, Ready: true, TimingOnly: true})
			require.NoError(t, err)
			c := uint64(chunk)
			for k := range uint64(udma.MaxTransfer/chunk + 3) {
				require.Equal(t, uint64(simkernel.AtRate(k*c, s.engineBW)), s.chunksRead(k, c), "%d chunks of %d bytes", k, c)
			}
			for _, other := range []uint64{1, 7, c + 1} {
				for k := range uint64(4) {
					require.Equal(t, uint64(simkernel.AtRate(k*other, s.engineBW)), s.chunksRead(k, other), "%d chunks of %d bytes", k, other)
				}
			}
		})
	}
}

// TestReadyRun: the run readyRun gives a write's first link is what
// bookQueue takes it for — chunk 0 and 1 and the last at readyTimes'
// times, each of chunks 2..m−2 no earlier than the one before and at most
// step after it — for writes of any size read from start until sent (the
// first chunks at start when sent comes sooner than the read), on the
// tables New computes (which never decrease: a bound is always given for
// them) and on random ones: even, uneven, decreasing, and tables whose
// chunks take longer than the whole write's read (AtRate of a write that
// is not whole chunks).
func TestReadyRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	runs := 0
	for _, chunk := range []int{256, 4096, 10000} {
		for _, gen := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman, hwarch.Mariana} {
			p := DefaultParams(gen)
			p.ChunkBytes = chunk
			s, err := New(Config{Generation: gen, Devices: 2, Kind: KindAuto, Params: &p, Ready: true, TimingOnly: true})
			require.NoError(t, err)
			require.NotEqual(t, ^uint64(0), s.readStep, "%s chunk %d: AtRate's table never decreases", gen, chunk)
			table := slices.Clone(s.readTime)
			for tc := range 400 {
				switch tc % 4 {
				case 0:
					s.readTime = table
				case 1, 2: // even give or take a few ps, or uneven
					s.readTime = slices.Clone(table)
					step := rng.Uint64N(1 + 2*table[1])
					for k := 1; k < len(s.readTime); k++ {
						s.readTime[k] = s.readTime[k-1] + step + rng.Uint64N([]uint64{3, step + 1}[tc%4-1])
					}
				case 3: // decreasing somewhere
					s.readTime = slices.Clone(table)
					k := 2 + rng.IntN(len(table)-2)
					s.readTime[k] = s.readTime[k-1] - min(s.readTime[k-1], 1+rng.Uint64N(1000))
				}
				s.readStep = largestStep(s.readTime)
				for range 50 {
					c := uint64(chunk)
					n := 1 + rng.IntN(len(s.readTime)*chunk)
					if rng.IntN(2) == 0 {
						n = chunk * (1 + rng.IntN(len(s.readTime)-1))
					}
					m := (uint64(n) + c - 1) / c
					start := rng.Uint64N(1 << 40)
					if rng.IntN(5) == 0 {
						start = ^uint64(0) - rng.Uint64N(1<<40)
					}
					sent := addTime(start, rng.Uint64N(2*s.readTime[min(m, uint64(len(s.readTime)-1))]+1))
					r, ok := s.readyRun(n, c, m, start, sent)
					at := s.readyTimes(n, c, start, sent)
					if !ok {
						continue
					}
					runs++
					require.Equal(t, int(m), r.m)
					require.Equal(t, [3]uint64{at[0], at[1], at[m-1]}, [3]uint64{r.first, r.second, r.last}, "%d bytes from %d until %d", n, start, sent)
					for k := 2; k < int(m)-1; k++ {
						if at[k] < at[k-1] || at[k]-at[k-1] > r.step {
							t.Fatalf("%d bytes from %d until %d: chunk %d ready at %d, chunk %d at %d, not within a step of %d after it", n, start, sent, k, at[k], k-1, at[k-1], r.step)
						}
					}
				}
			}
		}
	}
	require.Greater(t, runs, 50_000, "writes given a run")
}
