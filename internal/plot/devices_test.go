package plot_test

import (
	"bytes"
	"image/png"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/plot"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// deviceSeries is n sizes' busbw on 2, 4, 8 and 16 devices.
func deviceSeries(n int) []plot.DeviceSeries {
	var out []plot.DeviceSeries
	for i := range n {
		s := plot.DeviceSeries{Label: nccom.FormatSize(int64(1) << (10 + 4*i))}
		for j, d := range []int{2, 4, 8, 16} {
			s.Points = append(s.Points, plot.DevicePoint{Devices: d, BusBW: float64(10*(i+1) + j)})
		}
		out = append(out, s)
	}
	return out
}

// TestDevicesPNG: busbw against device count is a 768×480 PNG, the same
// bytes for the same series; one device count draws too.
func TestDevicesPNG(t *testing.T) {
	a, err := plot.DevicesPNG("t", deviceSeries(3))
	require.NoError(t, err)
	b, err := plot.DevicesPNG("t", deviceSeries(3))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(a, b), "deterministic")
	img, err := png.Decode(bytes.NewReader(a))
	require.NoError(t, err)
	assert.Equal(t, 768, img.Bounds().Dx())
	assert.Equal(t, 480, img.Bounds().Dy())
	one := []plot.DeviceSeries{{Label: "1KiB", Points: []plot.DevicePoint{{Devices: 1, BusBW: 0}}}}
	_, err = plot.DevicesPNG("one", one)
	assert.NoError(t, err)
}

func TestDevicesPNGErrors(t *testing.T) {
	pt := func(d int, bw float64) []plot.DevicePoint { return []plot.DevicePoint{{Devices: d, BusBW: bw}} }
	for name, series := range map[string][]plot.DeviceSeries{
		"none":           nil,
		"too many":       deviceSeries(plot.MaxDeviceSeries + 1),
		"no label":       {{Points: pt(2, 1)}},
		"no points":      {{Label: "x"}},
		"zero devices":   {{Label: "x", Points: pt(0, 1)}},
		"not increasing": {{Label: "x", Points: []plot.DevicePoint{{Devices: 4, BusBW: 1}, {Devices: 4, BusBW: 2}}}},
		"negative":       {{Label: "x", Points: pt(2, -1)}},
		"NaN":            {{Label: "x", Points: pt(2, math.NaN())}},
		"Inf":            {{Label: "x", Points: pt(2, math.Inf(1))}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := plot.DevicesPNG("t", series)
			assert.ErrorIs(t, err, nccom.ErrBadReport)
		})
	}
}
