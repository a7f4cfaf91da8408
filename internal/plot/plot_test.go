package plot_test

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/plot"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// sampleReport is a 32-rank all_reduce report of five sizes.
func sampleReport(t testing.TB) *nccom.Report {
	t.Helper()
	rep := &nccom.Report{
		Op:    "all_reduce",
		Ranks: 32,
		Extra: map[string]any{"model": "aware", "devices": 32, "topology": "torus-4x8"},
	}
	times := []uint64{58_000_000, 61_250_000, 95_500_000, 1_234_567_890, 9_689_510_000}
	sizes := []int64{1024, 65536, 1 << 20, 64 << 20, 512 << 20}
	algos := []string{"rdh", "rdh", "ring", "ring", "kangaring"}
	for i, s := range sizes {
		row, err := nccom.NewRow(rep.Op, rep.Ranks, s, 4, "fp32", times[i], algos[i])
		require.NoError(t, err)
		rep.Rows = append(rep.Rows, row)
	}
	return rep
}

// scaledReport is sampleReport on ranks ranks with times scaled by slow.
func scaledReport(t *testing.T, ranks int, slow float64) *nccom.Report {
	t.Helper()
	base := sampleReport(t)
	rep := &nccom.Report{Op: base.Op, Ranks: ranks}
	for _, r := range base.Rows {
		row, err := nccom.NewRow(rep.Op, ranks, r.Size, 4, r.Type, uint64(r.TimeUS*1e6*slow), r.Algorithm)
		require.NoError(t, err)
		rep.Rows = append(rep.Rows, row)
	}
	return rep
}

func TestPlot(t *testing.T) {
	dir := t.TempDir()
	series := []plot.Series{
		{Report: scaledReport(t, 2, 1)},
		{Report: scaledReport(t, 8, 1.3)},
		{Label: "32 devices (aware)", Report: scaledReport(t, 32, 1.7)},
	}
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	require.NoError(t, plot.Write(a, "all_reduce busbw", series))
	require.NoError(t, plot.Write(b, "all_reduce busbw", series))

	first, err := os.ReadFile(a)
	require.NoError(t, err)
	second, err := os.ReadFile(b)
	require.NoError(t, err)
	require.NotEmpty(t, first)
	assert.Equal(t, []byte("\x89PNG\r\n\x1a\n"), first[:8], "PNG magic bytes")
	assert.True(t, bytes.Equal(first, second), "two runs give the same bytes")

	img, err := png.Decode(bytes.NewReader(first))
	require.NoError(t, err)
	assert.Equal(t, 768, img.Bounds().Dx())
	assert.Equal(t, 480, img.Bounds().Dy())
}

func TestPlotEdgeCases(t *testing.T) {
	dir := t.TempDir()
	one := &nccom.Report{Ranks: 4, Rows: []nccom.Row{{Size: 1, Count: 1, Type: "int8", Algorithm: "ring"}}}
	tests := []struct {
		name   string
		series []plot.Series
	}{
		{"single point of size 1 with zero bandwidth", []plot.Series{{Report: one}}},
		{"huge size", []plot.Series{{Report: &nccom.Report{Rows: []nccom.Row{
			{Size: 1 << 62, Count: 1, Type: "int8", TimeUS: 1, AlgBW: 1, BusBW: 1, Algorithm: "ring"},
			{Size: 1<<63 - 1, Count: 1, Type: "int8", TimeUS: 1, AlgBW: 1, BusBW: 2, Algorithm: "ring"},
		}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".png")
			require.NoError(t, plot.Write(path, tt.name, tt.series))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, []byte("\x89PNG"), b[:4])
		})
	}
}

func TestPlotErrors(t *testing.T) {
	dir := t.TempDir()
	good := plot.Series{Report: sampleReport(t)}
	tests := []struct {
		name   string
		path   string
		series []plot.Series
	}{
		{"no series", "x.png", nil},
		{"nil report", "x.png", []plot.Series{good, {Label: "empty"}}},
		{"no rows", "x.png", []plot.Series{{Report: &nccom.Report{Ranks: 2}}}},
		{"size zero", "x.png", []plot.Series{{Report: &nccom.Report{Rows: []nccom.Row{{Type: "fp32", Algorithm: "ring"}}}}}},
		{"invalid row", "x.png", []plot.Series{{Report: &nccom.Report{Rows: []nccom.Row{{Size: 4, BusBW: -1, Type: "fp32", Algorithm: "ring"}}}}}},
		{"more lines than the legend holds", "x.png", slices.Repeat([]plot.Series{good}, plot.MaxSeries+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.path)
			err := plot.Write(path, "t", tt.series)
			assert.ErrorIs(t, err, nccom.ErrBadReport)
			assert.NoFileExists(t, path)
		})
	}
	t.Run("unwritable path", func(t *testing.T) {
		err := plot.Write(filepath.Join(dir, "missing", "dir", "x.png"), "t", []plot.Series{good})
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
}
