// Package plot draws nccom-test reports (runtime/enc/nccom) as images for
// the command line and the scenarios: bus bandwidth against size, one line
// per report. It is the drawing side of a sweep, kept out of runtime/ (a
// runtime tool prints tables and JSON; pictures are the command line's).
package plot

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// Series is one line of a plot ([Write], [PNG]): a report and its legend
// entry.
type Series struct {
	// Label is the legend entry; "" means "<Ranks> devices".
	Label string
	// Report holds the points: one per row, size against bus bandwidth.
	Report *nccom.Report
}

// Plot size, in inches of a 96-dpi PNG (768×480 pixels).
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
)

// MaxSeries bounds the lines of one [PNG], as [MaxDeviceSeries] those of
// a [DevicesPNG]: the legend of more runs off the image, its last entries
// not drawn.
const MaxSeries = MaxDeviceSeries

// Write writes a PNG image to path of bus bandwidth (GB/s, y axis, from 0)
// against size (bytes, x axis, logarithmic with ticks at powers of two
// labelled "1KiB", "1MiB", …), one line with point markers per series, and
// a legend with each series' Label, or "N devices" (N = the report's Ranks)
// when the label is empty. title is the plot's title.
//
// The output is a deterministic function of the input: the same series give
// the same bytes (no timestamp or other metadata is written). The file is
// written in PNG whatever the extension of path.
//
// Errors (wrapping [nccom.ErrBadReport]): no series or more than
// [MaxSeries], a nil report, a report
// without rows or failing [nccom.Report.Validate], a size of 0 (it has no place on
// a log axis); and any error creating or writing the file. The file is
// written atomically (internal/output): on an error, path is as it was.
func Write(path string, title string, series []Series) error {
	png, err := PNG(title, series)
	if err != nil {
		return err
	}
	if err := output.WriteFile(path, png); err != nil {
		return fmt.Errorf("nccom: plot %q: %w", title, err)
	}
	return nil
}

// PNG draws what [Write] writes and returns the PNG's bytes.
func PNG(title string, series []Series) (png []byte, err error) {
	lo, hi, err := sizeRange(title, series)
	if err != nil {
		return nil, err
	}

	// gonum/plot panics on some degenerate inputs; the checks above should
	// rule them out, and this turns any that remain into an error.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: plot %q: drawing failed: %v", nccom.ErrBadReport, title, p)
		}
	}()

	p := busbwPlot(title, "size (bytes)", pow2Ticks{})
	for i, s := range series {
		pts := make(plotter.XYs, len(s.Report.Rows))
		for j, r := range s.Report.Rows {
			pts[j].X = float64(r.Size)
			pts[j].Y = r.BusBW
		}
		label := s.Label
		if label == "" {
			label = units.Plural(int64(s.Report.Ranks), "rank", "ranks")
		}
		if err := addLine(p, title, i, pts, label); err != nil {
			return nil, err
		}
	}

	// Powers of two around the data, with room when there is one size.
	lo = math.Exp2(math.Floor(math.Log2(lo)))
	hi = math.Exp2(math.Ceil(math.Log2(hi)))
	if lo == hi {
		lo, hi = lo/2, hi*2
	}
	p.X.Min, p.X.Max = lo, hi
	p.Y.Min = 0
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.Y.Max *= 1.08 // headroom so the top line does not run along the border
	return encodePNG(p, title)
}

// busbwPlot returns an empty plot of bus bandwidth (y, GB/s) against a
// logarithmic x axis labelled xlabel with ticks marked by ticks, its
// legend at the top left and a grid: what both of the package's plots
// start from.
func busbwPlot(title, xlabel string, ticks gplot.Ticker) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "busbw (GB/s, 1 GB = 1e9 bytes)"
	p.X.Scale = gplot.LogScale{}
	p.X.Tick.Marker = ticks
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	p.Legend.YOffs = -vg.Points(8)
	p.Add(plotter.NewGrid())
	return p
}

// addLine adds series i's points to p as a line with point markers in the
// series' own colour, dashes and shape, and its label to the legend.
func addLine(p *gplot.Plot, title string, i int, pts plotter.XYs, label string) error {
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return fmt.Errorf("%w: plot %q: series %d: %v", nccom.ErrBadReport, title, i, err)
	}
	line.Color = plotutil.Color(i)
	line.Dashes = plotutil.Dashes(i)
	points.Color = plotutil.Color(i)
	points.Shape = plotutil.Shape(i)
	p.Add(line, points)
	p.Legend.Add(label, line, points)
	return nil
}

// encodePNG renders p at the package's size and returns the PNG's bytes.
func encodePNG(p *gplot.Plot, title string) ([]byte, error) {
	wt, err := p.WriterTo(plotWidth, plotHeight, "png")
	if err != nil {
		return nil, fmt.Errorf("nccom: plot %q: %w", title, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("nccom: plot %q: encoding PNG: %w", title, err)
	}
	return buf.Bytes(), nil
}

// sizeRange checks that every series can be drawn and returns the smallest
// and largest size of all of them.
func sizeRange(title string, series []Series) (lo, hi float64, err error) {
	if len(series) == 0 {
		return 0, 0, fmt.Errorf("%w: plot %q: no series", nccom.ErrBadReport, title)
	}
	if len(series) > MaxSeries {
		return 0, 0, fmt.Errorf("%w: plot %q: %d series, more than the %d the legend holds", nccom.ErrBadReport, title, len(series), MaxSeries)
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for i, s := range series {
		if s.Report == nil {
			return 0, 0, fmt.Errorf("%w: plot %q: series %d (%q) has no report", nccom.ErrBadReport, title, i, s.Label)
		}
		if len(s.Report.Rows) == 0 {
			return 0, 0, fmt.Errorf("%w: plot %q: series %d (%q) has no rows", nccom.ErrBadReport, title, i, s.Label)
		}
		if err := s.Report.Validate(); err != nil {
			return 0, 0, fmt.Errorf("plot %q: series %d (%q): %w", title, i, s.Label, err)
		}
		for _, r := range s.Report.Rows {
			if r.Size <= 0 {
				return 0, 0, fmt.Errorf("%w: plot %q: series %d (%q): size %d cannot be drawn on a log axis", nccom.ErrBadReport, title, i, s.Label, r.Size)
			}
			lo = math.Min(lo, float64(r.Size))
			hi = math.Max(hi, float64(r.Size))
		}
	}
	return lo, hi, nil
}

// pow2Ticks puts a tick at every power of two in range and labels at most
// about eight of them, evenly spaced in exponent.
type pow2Ticks struct{}

func (pow2Ticks) Ticks(min, max float64) []gplot.Tick {
	if !(min > 0) || !(max >= min) || math.IsInf(max, 0) {
		return nil
	}
	lo := int(math.Ceil(math.Log2(min)))
	hi := int(math.Floor(math.Log2(max)))
	stride := 1
	for (hi-lo)/stride+1 > 8 {
		stride++
	}
	var ticks []gplot.Tick
	for e := lo; e <= hi; e++ {
		t := gplot.Tick{Value: math.Exp2(float64(e))}
		if (e-lo)%stride == 0 {
			t.Label = pow2Label(e)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

func pow2Label(e int) string {
	if e < 0 || e > 62 {
		return "2^" + strconv.Itoa(e)
	}
	return nccom.FormatSize(int64(1) << e)
}
