package plot

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// DevicePoint is one point of a [DeviceSeries]: the bus bandwidth (GB/s)
// measured on a system of Devices devices.
type DevicePoint struct {
	Devices int
	BusBW   float64
}

// DeviceSeries is one line of [DevicesPNG]: one size's bus bandwidth at
// each device count, in increasing device count.
type DeviceSeries struct {
	Label  string // the legend entry ("1MiB")
	Points []DevicePoint
}

// MaxDeviceSeries bounds the lines of one [DevicesPNG] (beyond it, the
// lines' colours, dashes and markers no longer tell them apart).
const MaxDeviceSeries = 32

// DevicesPNG draws bus bandwidth (GB/s, y axis, from 0) against device
// count (x axis, logarithmic, a tick labelled at every device count of the
// points), one line with point markers per series, and a legend of the
// series' labels, and returns the PNG's bytes. The output is a
// deterministic function of the input.
//
// Errors (wrapping [nccom.ErrBadReport]): no series or more than
// [MaxDeviceSeries], a series without points or with an empty label, a
// device count below 1 or not increasing along a series, a bus bandwidth
// that is negative or not finite.
func DevicesPNG(title string, series []DeviceSeries) (png []byte, err error) {
	counts, err := checkDeviceSeries(title, series)
	if err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: plot %q: drawing failed: %v", nccom.ErrBadReport, title, p)
		}
	}()
	p := busbwPlot(title, "devices", countTicks(counts))
	for i, s := range series {
		pts := make(plotter.XYs, len(s.Points))
		for j, q := range s.Points {
			pts[j].X, pts[j].Y = float64(q.Devices), q.BusBW
		}
		if err := addLine(p, title, i, pts, s.Label); err != nil {
			return nil, err
		}
	}
	lo, hi := float64(counts[0]), float64(counts[len(counts)-1])
	if lo == hi {
		lo, hi = lo/2, hi*2
	} else {
		pad := math.Pow(hi/lo, 0.05)
		lo, hi = lo/pad, hi*pad
	}
	p.X.Min, p.X.Max = lo, hi
	p.Y.Min = 0
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.Y.Max *= 1.08 + 0.06*float64(min(len(series), 10)) // headroom for the legend's lines above the data
	return encodePNG(p, title)
}

// checkDeviceSeries checks that every series can be drawn and returns
// every device count of the points, sorted, once each.
func checkDeviceSeries(title string, series []DeviceSeries) ([]int, error) {
	if len(series) == 0 || len(series) > MaxDeviceSeries {
		return nil, fmt.Errorf("%w: plot %q: %d series (1..%d)", nccom.ErrBadReport, title, len(series), MaxDeviceSeries)
	}
	seen := map[int]bool{}
	for i, s := range series {
		if s.Label == "" || len(s.Points) == 0 {
			return nil, fmt.Errorf("%w: plot %q: series %d (%q) has no label or no points", nccom.ErrBadReport, title, i, s.Label)
		}
		for j, q := range s.Points {
			switch {
			case q.Devices < 1 || j > 0 && q.Devices <= s.Points[j-1].Devices:
				return nil, fmt.Errorf("%w: plot %q: series %q: device count %d at point %d (counts at least 1, increasing)", nccom.ErrBadReport, title, s.Label, q.Devices, j)
			case math.IsNaN(q.BusBW) || math.IsInf(q.BusBW, 0) || q.BusBW < 0:
				return nil, fmt.Errorf("%w: plot %q: series %q: busbw %v at %d devices (want a finite number ≥ 0)", nccom.ErrBadReport, title, s.Label, q.BusBW, q.Devices)
			}
			seen[q.Devices] = true
		}
	}
	counts := make([]int, 0, len(seen))
	for n := range seen {
		counts = append(counts, n)
	}
	slices.Sort(counts)
	return counts, nil
}

// countTicks puts a labelled tick at every device count plotted (at most
// about twelve labels, evenly spaced in index).
type countTicks []int

func (c countTicks) Ticks(min, max float64) []gplot.Tick {
	stride := (len(c) + 11) / 12
	var ticks []gplot.Tick
	for i, n := range c {
		if v := float64(n); v < min || v > max {
			continue
		}
		t := gplot.Tick{Value: float64(n)}
		if i%stride == 0 {
			t.Label = strconv.Itoa(n)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
