package calibrate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// TestCalibratedIsTheFit: the parameters the executor uses by default
// (collective.Calibrated) are what fitting the published tables gives, and the
// errors are those docs/timing-model.md reports. A model change that moves
// the fit fails here: re-run `neuronsim fabric calibrate` and update both.
func TestCalibratedIsTheFit(t *testing.T) {
	rmsBound := map[string]float64{Targets[0].Name: 0.08, Targets[1].Name: 0.04}
	for _, tg := range Targets {
		t.Run(tg.Name, func(t *testing.T) {
			f, err := FitTarget(tg)
			require.NoError(t, err)
			cal := collective.Calibrated(tg.Generation)
			assert.Equal(t, cal.Engines, f.Engines)
			assert.Equal(t, cal.LaunchCost, f.LaunchCost)
			assert.Less(t, f.RMS, rmsBound[tg.Name])
			for _, r := range f.Rows {
				assert.Less(t, r.Error, 0.25, "size %d", r.Size)
				assert.Greater(t, r.Error, -0.25, "size %d", r.Size)
			}
		})
	}
}

func TestBestLaunch(t *testing.T) {
	tg := Target{Points: []Point{{1, us(10)}, {2, us(20)}}}
	// A model 3 µs short everywhere gets exactly 3 µs; one already too slow
	// gets none.
	assert.Equal(t, us(3), bestLaunch(tg, []time.Duration{us(7), us(17)}))
	assert.Equal(t, time.Duration(0), bestLaunch(tg, []time.Duration{us(11), us(25)}))
}

// TestDefaultPolicyShown: a fit that fixes its algorithm — (a) runs the
// ring — also reports the same sizes under the runtime's policy, which is
// what a default sweep of that system runs: mesh below 1 MiB, RDH from
// 1 MiB to 56 MiB, ring above; the ring rows are the fit's own, and every
// row's time is what the system built with its default (calibrated)
// parameters gives for the policy's algorithm. A fit that runs the policy
// already — (d) — has none.
func TestDefaultPolicyShown(t *testing.T) {
	f, err := FitTarget(Targets[0])
	require.NoError(t, err)
	require.Len(t, f.Default, len(f.Rows))
	assert.GreaterOrEqual(t, f.DefaultRMS, f.RMS)
	c, err := cluster.New(cluster.Config{Generation: Targets[0].Generation, Devices: Targets[0].Devices,
		RanksPerDevice: Targets[0].RanksPer, TimingOnly: true, BufferBytes: 1 << 20})
	require.NoError(t, err)
	for i, r := range f.Default {
		want := enc.Ring
		switch {
		case r.Size < 1<<20:
			want = enc.Mesh
		case r.Size <= 56<<20:
			want = enc.RDH
		}
		assert.Equal(t, want, r.Algo, "size %d", r.Size)
		assert.Equal(t, f.Rows[i].Published, r.Published)
		if want == enc.Ring {
			assert.Equal(t, f.Rows[i], r, "size %d: the fit's own row", r.Size)
		}
		if r.Size <= 4<<20 { // the system as a default sweep builds it
			s, err := enc.Build(Targets[0].Op, enc.Auto, Targets[0].RanksPer, r.Size, 4, enc.Options{})
			require.NoError(t, err)
			res, err := c.Run(s, enc.Float32)
			require.NoError(t, err)
			assert.Equal(t, time.Duration(res.TimePS/1000), r.Model, "size %d", r.Size)
		}
	}
	d, err := FitTarget(Targets[1])
	require.NoError(t, err)
	assert.Nil(t, d.Default)
	for _, r := range d.Rows {
		assert.Equal(t, enc.Mesh, r.Algo)
	}
}
