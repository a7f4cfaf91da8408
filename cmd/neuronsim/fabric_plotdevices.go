package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/plot"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// devicesPlot is fabric sweep's --plot-devices FILE and --plot-sizes:
// busbw against device count, one line per size, over the systems of a
// --devices list.
type devicesPlot struct {
	file  string
	sizes string
	fs    *pflag.FlagSet
}

func (d *devicesPlot) add(fl *pflag.FlagSet) {
	d.fs = fl
	fl.StringVar(&d.file, "plot-devices", "", "draw busbw against device count, one line per size, to this PNG (needs --devices with at least two counts)")
	fl.StringVar(&d.sizes, "plot-sizes", "", fmt.Sprintf("the sizes --plot-devices draws, comma-separated"+sizeUnits+", each a size of the sweep on every device count (default: every size the sweeps of all counts share; at most %d)", plot.MaxDeviceSeries))
}

// plan checks the flags against the sweep: at least two device counts,
// and the sizes to draw (each a size of every system's sweep). It returns
// the sizes, or nil without --plot-devices, and a note naming the sizes
// the default leaves out (those not on every count's sweep), or "".
func (d *devicesPlot) plan(systems []cluster.SweepSystem) ([]int64, string, error) {
	if d.file == "" {
		if d.fs.Changed("plot-sizes") {
			return nil, "", fmt.Errorf("--plot-sizes: it chooses the lines of --plot-devices; give --plot-devices FILE")
		}
		return nil, "", nil
	}
	if len(systems) < 2 {
		return nil, "", fmt.Errorf("--plot-devices: busbw against device count needs at least two device counts (--devices 2,4,8,…), not %d", len(systems))
	}
	in := func(sizes []int64, s int64) bool { _, ok := slices.BinarySearch(sizes, s); return ok }
	if d.fs.Changed("plot-sizes") {
		var sizes []int64
		for _, part := range strings.Split(d.sizes, ",") {
			s, err := units.ParseBytes("--plot-sizes", strings.TrimSpace(part))
			if err != nil {
				return nil, "", err
			}
			if slices.Contains(sizes, s) {
				return nil, "", fmt.Errorf("--plot-sizes: %s is given twice", units.FormatBytes(s))
			}
			for _, sys := range systems {
				if !in(sys.Sizes, s) {
					return nil, "", fmt.Errorf("--plot-sizes: %s (%d bytes) is not a size of the sweep on %s (%s); give sizes the sweep runs on every count",
						units.FormatBytes(s), s, units.Plural(int64(sys.Devices), "device", "devices"), describeSizes(sys.Sizes))
				}
			}
			sizes = append(sizes, s)
		}
		if len(sizes) > plot.MaxDeviceSeries {
			return nil, "", fmt.Errorf("--plot-sizes: %d sizes; a plot draws at most %d lines", len(sizes), plot.MaxDeviceSeries)
		}
		return sizes, "", nil
	}
	var sizes, left []int64
	for _, s := range systems[0].Sizes {
		all := true
		for _, sys := range systems[1:] {
			all = all && in(sys.Sizes, s)
		}
		if all {
			sizes = append(sizes, s)
		} else {
			left = append(left, s)
		}
	}
	switch {
	case len(sizes) == 0:
		return nil, "", fmt.Errorf("--plot-devices: the sweeps of the device counts share no size (sizes are rounded to a multiple of the element size × ranks); give --plot-sizes")
	case len(sizes) > plot.MaxDeviceSeries:
		return nil, "", fmt.Errorf("--plot-devices: the sweep has %d sizes; a plot draws at most %d lines: choose them with --plot-sizes", len(sizes), plot.MaxDeviceSeries)
	}
	note := ""
	if len(left) > 0 {
		note = fmt.Sprintf("--plot-devices: %s not drawn: not a size of the sweep on every device count (rounded to the ranks)", describeSizes(left))
	}
	return sizes, note, nil
}

// describeSizes names a few sizes of a sorted list ("1KiB, 4KiB, … 1GiB").
func describeSizes(sizes []int64) string {
	var parts []string
	for i, s := range sizes {
		if len(sizes) > 6 && i == 3 {
			parts = append(parts, "…")
			parts = append(parts, units.FormatBytes(sizes[len(sizes)-1]))
			break
		}
		parts = append(parts, units.FormatBytes(s))
	}
	return strings.Join(parts, ", ")
}

// series is the plot's lines: for each size, its busbw on each system.
func devicesSeries(sizes []int64, counts []int, reports []*nccom.Report) ([]plot.DeviceSeries, error) {
	var out []plot.DeviceSeries
	for _, s := range sizes {
		ds := plot.DeviceSeries{Label: units.FormatBytes(s)}
		for i, rep := range reports {
			j := slices.IndexFunc(rep.Rows, func(r nccom.Row) bool { return r.Size == s })
			if j < 0 {
				return nil, fmt.Errorf("--plot-devices: the sweep on %d devices has no result of %d bytes", counts[i], s)
			}
			ds.Points = append(ds.Points, plot.DevicePoint{Devices: counts[i], BusBW: rep.Rows[j].BusBW})
		}
		out = append(out, ds)
	}
	return out, nil
}

// write draws the plot and adds its file to files (committed with the
// sweep's other outputs: written under a temporary name, renamed when the
// whole sweep has succeeded).
func (d *devicesPlot) write(stderr io.Writer, plan *sweepPlan, reports []*nccom.Report, files []*output.File) ([]*output.File, error) {
	if d.file == "" {
		return files, nil
	}
	if plan.devNote != "" {
		fmt.Fprintf(stderr, "neuronsim: %s\n", plan.devNote)
	}
	// The systems are swept in the order given; the plot's x axis wants
	// them by count.
	order := make([]int, len(plan.counts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return plan.counts[a] - plan.counts[b] })
	counts := make([]int, len(order))
	reps := make([]*nccom.Report, len(order))
	for i, k := range order {
		counts[i], reps[i] = plan.counts[k], reports[k]
	}
	series, err := devicesSeries(plan.devSizes, counts, reps)
	if err != nil {
		return files, err
	}
	png, err := plot.DevicesPNG(plan.title+": busbw against devices", series)
	if err != nil {
		return files, fmt.Errorf("--plot-devices: %w", err)
	}
	o, err := output.Create(d.file)
	if err != nil {
		return files, fmt.Errorf("--plot-devices: %w", err)
	}
	files = append(files, o)
	if _, err := o.Write(png); err != nil {
		return files, fmt.Errorf("--plot-devices: %w", err)
	}
	return files, nil
}
