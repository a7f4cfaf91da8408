package cluster_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// The α-β parameters of the parity tests: B = 50 GB/s with 1 GB = 2^30 B,
// α = 500 ns per link.
const (
	parityBW    = 50 << 30
	parityAlpha = 500_000 // ps
)

// parityRingAllReduce runs a ring all-reduce of size bytes (float32) on n
// devices behind one switch (KindStar), timing only, in the parity mode
// with model m, and returns its time in ns.
func parityRingAllReduce(t *testing.T, m fabric.Model, n int, size int64) float64 {
	t.Helper()
	g := hwarch.Mariana
	tables := tablesOf(t, g)
	p := cluster.IdealParams(g, tables, m, parityBW, parityAlpha)
	s, err := enc.Build(enc.AllReduce, enc.Ring, n, size, 4, enc.Options{})
	require.NoError(t, err)
	c, err := cluster.New(cluster.Config{Generation: g, Devices: n, Switch: switchOf(g), Kind: fabric.KindStar, Params: &p,
		TimingOnly: true, BufferBytes: collective.LayoutOf(s, 0).End})
	require.NoError(t, err)
	require.Equal(t, collective.Ideal().Engines, c.Exec.Engines, "one engine per rank: one write per ring step")
	require.Zero(t, c.Exec.LaunchCost, "no launch cost")
	res, err := c.Run(s, enc.Float32)
	require.NoError(t, err, "ring all-reduce of %d bytes on %d ranks", size, n)
	return float64(res.TimePS) / 1000
}

// alphaBetaStep is the analytical cost of one ring step behind a switch
// without δ, in ns: 2α + k·S/(nB), k = 1 contention free (cut-through),
// 2 contention aware (store and forward on both links).
func alphaBetaStep(m fabric.Model, n int, size int64) float64 {
	k := 1.0
	if m == fabric.Aware {
		k = 2
	}
	return 2*parityAlpha/1000 + k*float64(size)/float64(n)/parityBW*1e9
}

// TestParityRingAllReduce: in the parity mode a ring all-reduce of S bytes
// on n NPUs behind one switch takes 2(n−1)·(2α + S/(nB) + δ) + γ
// contention free and 2(n−1)·(2α + 2S/(nB) + δ) + γ contention aware,
// within 0.5 % for every n = 2 … 32 and S = 64 KiB … 256 MiB (the largest
// size only without -short).
//
// δ and γ are what the executor's protocol leaves, which the parity mode
// keeps because they are messages, not endpoint costs: δ, per step, is the
// credit a rank grants its writer before the writer may send — a 4-byte
// write over the same two links, on the critical path: 2α, plus the SP
// records that wait for the step's arrivals and grant it (≈ 55 ns) and
// those that wait for it and trigger the step's data (≈ 54 ns); γ, once
// per collective, is the release (rank 0's go, 2α), the finish (every rank
// to rank 0, 2α) and their records. The test fits δ and γ by least squares
// of the relative error (the claim is relative; the host's poll of rank 0
// is within 1/1000 of the time spent, so a long run's absolute error is
// larger) and holds them to that explanation (2α < δ < 2α + 250 ns, 4α < γ
// < 4α + 500 ns: measured δ = 2α + 109 ns and γ = 4α + 180 ns in both
// models). With the host's default BAR cost (800 ns a read) the times
// jittered by up to 0.8 µs with the phase of the poll, and a fit over the
// large sizes only gave γ = 3.8 µs free, 4.7 µs aware — 18.6 % over the
// time at 64 KiB on 2 ranks; the parity mode's host accesses cost 1 ns
// (fabric.IdealMMIO).
func TestParityRingAllReduce(t *testing.T) {
	sizes := []int64{64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20}
	if testing.Short() {
		sizes = sizes[:6]
	}
	ranks := []int{2, 4, 8, 16, 32}
	alpha := parityAlpha / 1000.0 // ns
	for _, m := range []fabric.Model{fabric.Free, fabric.Aware} {
		t.Run(m.String(), func(t *testing.T) {
			type run struct {
				n    int
				size int64
				got  float64
			}
			var runs []run
			// Weighted least squares of y = T − 2(n−1)·(2α + kS/(nB)) against
			// x = 2(n−1), weight 1/T²: the relative error.
			var sw, sx, sy, sxx, sxy float64
			for _, n := range ranks {
				for _, size := range sizes {
					got := parityRingAllReduce(t, m, n, size)
					runs = append(runs, run{n, size, got})
					x, y, w := 2*float64(n-1), got-2*float64(n-1)*alphaBetaStep(m, n, size), 1/(got*got)
					sw, sx, sy, sxx, sxy = sw+w, sx+w*x, sy+w*y, sxx+w*x*x, sxy+w*x*y
				}
			}
			delta := (sw*sxy - sx*sy) / (sw*sxx - sx*sx)
			gamma := (sy - delta*sx) / sw
			t.Logf("%s: δ = %.1f ns per step (2α + %.1f ns), γ = %.1f ns per collective (4α + %.1f ns)", m, delta, delta-2*alpha, gamma, gamma-4*alpha)
			assert.Greater(t, delta, 2*alpha, "δ holds the credit's 2α")
			assert.Less(t, delta, 2*alpha+250, "δ beyond the credit is the SP's records")
			assert.Greater(t, gamma, 4*alpha, "γ holds the release's and the finish's 2α each")
			assert.Less(t, gamma, 4*alpha+500, "γ beyond the release and finish is their records")
			for _, r := range runs {
				want := 2*float64(r.n-1)*(alphaBetaStep(m, r.n, r.size)+delta) + gamma
				what := fmt.Sprintf("%s ring all-reduce, n = %d, S = %d", m, r.n, r.size)
				t.Logf("%s n=%2d S=%9d: %12.1f ns, formula %12.1f (%+.3f %%)", m, r.n, r.size, r.got, want, 100*(r.got-want)/want)
				assert.InEpsilon(t, want, r.got, 0.005, what)
			}
		})
	}
}
