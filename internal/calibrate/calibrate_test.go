package calibrate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/collective"
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
