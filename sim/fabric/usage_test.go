package fabric

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// starSystem is a timing-only star of n Mariana devices, every link of
// bandwidth bw, in model m.
func starSystem(t *testing.T, n int, m Model, bw uint64) *System {
	t.Helper()
	p := DefaultParams(hwarch.Mariana)
	p.Model = m
	p.Link = LinkParams{Bandwidth: bw, Latency: 500 * ns}
	s, err := New(Config{Generation: hwarch.Mariana, Devices: n, Kind: KindStar, Params: &p, Ready: true, TimingOnly: true})
	require.NoError(t, err)
	return s
}

// TestCountersOverAnInterval: the counters taken over an interval and
// summed by class give, for one write of n bytes over a 2-hop switch path,
// n bytes on each of its two links (2n in the class, bytes × hops), each
// link busy the serialisation of the chunks it carried — in both models —
// and nothing on the links off the path.
func TestCountersOverAnInterval(t *testing.T) {
	const bw = 10e9
	for _, m := range []Model{Aware, Free} {
		t.Run(m.String(), func(t *testing.T) {
			s := starSystem(t, 3, m, bw)
			warm, _ := s.path(2, 0)
			s.timing(warm, 4096, 0, 0, nil) // traffic before the interval: not counted
			before := s.Counters()
			path, err := s.path(0, 1)
			require.NoError(t, err)
			require.Len(t, path, 2)
			const n = 1 << 20
			s.timing(path, n, 0, 0, nil)
			d, err := s.Counters().Since(before)
			require.NoError(t, err)
			busy := uint64(simkernel.AtRate(n, bw)) // n is a whole number of chunks; each chunk's c/B is exact here
			for id, c := range d {
				if id == path[0] || id == path[1] {
					assert.Equal(t, LinkCounter{Bytes: n, Busy: busy}, c, "link %s", s.topo.LinkName(id))
				} else {
					assert.Zero(t, c, "link %s is off the path", s.topo.LinkName(id))
				}
			}
			classes, err := s.topo.Classes(d)
			require.NoError(t, err)
			require.Len(t, classes, 1)
			u := classes[0]
			assert.Equal(t, "link", u.Group)
			assert.Equal(t, 6, u.Links, "3 devices × 2 directions")
			assert.Equal(t, uint64(2*n), u.Bytes, "bytes × hops")
			assert.Equal(t, 2*busy, u.Busy)
			assert.Equal(t, path[0], u.Busiest, "the first of the equally busy links")
			assert.Equal(t, busy, u.MaxBusy)
			assert.InDelta(t, 0.5, u.Utilisation(2*busy), 1e-12)
			assert.InDelta(t, 2.0/6/2, u.MeanUtilisation(2*busy), 1e-12)
		})
	}
}

// TestFreeModelOffersMoreThanTime: two devices writing to a third at once
// share the switch's link to it. The aware model serialises them there:
// that link is busy for at most the time that passed. The free model lets
// both cross at once and counts the load offered: 2n/B on that link in
// the time of one write, a utilisation of about 2.
func TestFreeModelOffersMoreThanTime(t *testing.T) {
	const bw, n = 10e9, 1 << 20
	for _, m := range []Model{Aware, Free} {
		s := starSystem(t, 3, m, bw)
		a, _ := s.path(0, 2)
		b, _ := s.path(1, 2)
		_, l1 := s.timing(a, n, 0, 0, nil)
		_, l2 := s.timing(b, n, 0, 0, nil)
		elapsed := max(l1, l2)
		classes, err := s.topo.Classes(s.Counters())
		require.NoError(t, err)
		u := classes[0]
		assert.Equal(t, a[1], u.Busiest, "%s: the switch's link to the destination", m)
		if m == Aware {
			assert.LessOrEqual(t, u.Utilisation(elapsed), 1.0)
			assert.Greater(t, u.Utilisation(elapsed), 0.9)
		} else {
			assert.Greater(t, u.Utilisation(elapsed), 1.9, "the free model counts the load offered")
		}
	}
}

// TestCountersRefusals: counters of other links, or counters that went
// backwards, are refused.
func TestCountersRefusals(t *testing.T) {
	s := starSystem(t, 2, Aware, 10e9)
	c := s.Counters()
	_, err := c.Since(c[:1])
	assert.ErrorIs(t, err, ErrCounters)
	later := append(Counters(nil), c...)
	later[0].Bytes = 10
	_, err = c.Since(later)
	assert.ErrorIs(t, err, ErrCounters)
	assert.ErrorContains(t, err, "link 0")
	_, err = s.topo.Classes(c[:1])
	assert.ErrorIs(t, err, ErrCounters)
	d, err := later.Since(c)
	require.NoError(t, err)
	assert.Equal(t, uint64(10), d[0].Bytes)
	// The folds of a link's arrival queue are counted and differenced so.
	s.st.Links[1].Folds = 3
	folded := s.Counters()
	assert.Equal(t, uint64(3), folded[1].Folds)
	d, err = folded.Since(c)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), d[1].Folds)
	_, err = c.Since(folded)
	assert.ErrorIs(t, err, ErrCounters, "fewer folds than before")
	assert.ErrorContains(t, err, "link 1")
}

// TestCountersSurviveSnapshot: the counters are kept in the links' state,
// so a restored system reads what the saved one counted.
func TestCountersSurviveSnapshot(t *testing.T) {
	s := starSystem(t, 3, Aware, 10e9)
	path, _ := s.path(0, 1)
	s.timing(path, 1<<16, 0, 0, nil)
	var b bytes.Buffer
	require.NoError(t, s.Save(&b))
	r, err := Load(&b)
	require.NoError(t, err)
	assert.Equal(t, s.Counters(), r.Counters())
	assert.NotZero(t, r.Counters()[path[0]].Bytes)
}

// BenchmarkCountersOverACollective is what a sweep adds per size: two
// copies of the counters, their difference and the sums by class, on the
// 144-device Trn3 Gen2 UltraServer (864 directed links).
func BenchmarkCountersOverACollective(b *testing.B) {
	spec, err := LookupSystem("trn3-gen2")
	require.NoError(b, err)
	cfg := spec.Config()
	cfg.TimingOnly, cfg.Ready = true, true
	s, err := New(cfg)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		before := s.Counters()
		d, err := s.Counters().Since(before)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.topo.Classes(d); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCountersSaturate: a link whose counters are near their bounds (the
// free model's Busy is the load offered, which can pass the time that
// passed) holds Busy at units.MaxTimePS and Bytes at 2^64−1 rather than
// wrapping or passing the bound, and the system still saves and loads (the
// loader refuses a Busy past units.MaxTimePS).
func TestCountersSaturate(t *testing.T) {
	for _, m := range []Model{Free, Aware} {
		t.Run(m.String(), func(t *testing.T) {
			s := starSystem(t, 3, m, 10e9)
			path, _ := s.path(0, 1)
			for _, id := range path {
				s.st.Links[id].Bytes = ^uint64(0) - 10
				s.st.Links[id].Busy = units.MaxTimePS - 10
			}
			s.timing(path, 1<<16, 0, 0, nil)
			for _, id := range path {
				assert.Equal(t, ^uint64(0), s.st.Links[id].Bytes, "link %d bytes", id)
				assert.Equal(t, units.MaxTimePS, s.st.Links[id].Busy, "link %d busy", id)
			}
			var b bytes.Buffer
			require.NoError(t, s.Save(&b))
			r, err := Load(&b)
			require.NoError(t, err)
			assert.Equal(t, s.Counters(), r.Counters())
		})
	}
}
