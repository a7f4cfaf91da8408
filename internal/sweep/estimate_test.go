package sweep

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestEstimates: on a 100-point grid (testdata/estimate.yaml: 4 to 16 Trn2
// devices, two ops, two models, five sizes; a few to tens of ms each) every
// point's estimated host time, as sweep plan gives it (the model
// calibrated by Calibrate), is within 2× of its measured host time. Both
// are CPU time, so other processes on a busy machine do not count; each
// point is measured twice, and up to 4 times while outside the bound, and
// its best measurement counts (a collection or a cold cache lands on one
// run, not on four).
func TestEstimates(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED TestEstimates under -short: it times 100 simulation points (several seconds)")
	}
	if raceEnabled {
		t.Skip("SKIPPED TestEstimates under -race: the race detector multiplies host times unevenly")
	}
	if !cpuTimeWorks {
		t.Skip("SKIPPED TestEstimates: no CPU-time clock (getrusage) on this system")
	}
	g, err := LoadGrid("testdata/estimate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 100 {
		t.Fatalf("testdata/estimate.yaml has %d points, want 100", g.Len())
	}
	cal, err := Calibrate()
	if err != nil {
		t.Fatal(err)
	}
	est := g.Plan(cal).Items
	type miss struct {
		i        int
		ratio    float64
		measured []time.Duration
	}
	var bad []miss
	var ratios []float64
	deadline := time.Now().Add(60 * time.Second)
	for i := range g.points {
		want := time.Duration(est[i].HostSeconds * float64(time.Second))
		best := time.Duration(math.MaxInt64)
		var all []time.Duration
		for range 4 {
			start := cpuTime()
			if _, err := g.runPoint(i); err != nil {
				t.Fatalf("point %d: %v", i, err)
			}
			d := cpuTime() - start
			all = append(all, d)
			best = min(best, d)
			if r := float64(want) / float64(best); len(all) >= 2 && r >= 0.5 && r <= 2 {
				break
			}
		}
		r := float64(want) / float64(best)
		ratios = append(ratios, r)
		if r < 0.5 || r > 2 {
			bad = append(bad, miss{i, r, all})
		}
		if time.Now().After(deadline) {
			t.Fatalf("TestEstimates took over a minute at point %d: the machine is far too slow for its bound", i)
		}
	}
	sort.Float64s(ratios)
	t.Logf("estimate/measured over %d points: min %.2f, median %.2f, max %.2f (calibration %v for the reference points)",
		len(ratios), ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1], cal.Reference)
	if len(bad) > 0 {
		var b strings.Builder
		for _, m := range bad {
			p := g.points[m.i]
			fmt.Fprintf(&b, "\n  point %d (%d devices, %s, %s, %d B): estimated %.2f ms, measured %v: ratio %.2f",
				m.i, p.Devices, p.Op, p.Model, p.Size, est[m.i].HostSeconds*1e3, m.measured, m.ratio)
		}
		t.Errorf("%d of %d estimates are not within 2× of the measured host time:%s", len(bad), g.Len(), b.String())
	}
}
