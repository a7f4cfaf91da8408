package nccom_test

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

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
	series := []nccom.Series{
		{Report: scaledReport(t, 2, 1)},
		{Report: scaledReport(t, 8, 1.3)},
		{Label: "32 devices (aware)", Report: scaledReport(t, 32, 1.7)},
	}
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	require.NoError(t, nccom.Plot(a, "all_reduce busbw", series))
	require.NoError(t, nccom.Plot(b, "all_reduce busbw", series))

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
		series []nccom.Series
	}{
		{"single point of size 1 with zero bandwidth", []nccom.Series{{Report: one}}},
		{"huge size", []nccom.Series{{Report: &nccom.Report{Rows: []nccom.Row{
			{Size: 1 << 62, Count: 1, Type: "int8", TimeUS: 1, AlgBW: 1, BusBW: 1, Algorithm: "ring"},
			{Size: 1<<63 - 1, Count: 1, Type: "int8", TimeUS: 1, AlgBW: 1, BusBW: 2, Algorithm: "ring"},
		}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".png")
			require.NoError(t, nccom.Plot(path, tt.name, tt.series))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, []byte("\x89PNG"), b[:4])
		})
	}
}

func TestPlotErrors(t *testing.T) {
	dir := t.TempDir()
	good := nccom.Series{Report: sampleReport(t)}
	tests := []struct {
		name   string
		path   string
		series []nccom.Series
	}{
		{"no series", "x.png", nil},
		{"nil report", "x.png", []nccom.Series{good, {Label: "empty"}}},
		{"no rows", "x.png", []nccom.Series{{Report: &nccom.Report{Ranks: 2}}}},
		{"size zero", "x.png", []nccom.Series{{Report: &nccom.Report{Rows: []nccom.Row{{Type: "fp32", Algorithm: "ring"}}}}}},
		{"invalid row", "x.png", []nccom.Series{{Report: &nccom.Report{Rows: []nccom.Row{{Size: 4, BusBW: -1, Type: "fp32", Algorithm: "ring"}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.path)
			err := nccom.Plot(path, "t", tt.series)
			assert.ErrorIs(t, err, nccom.ErrBadReport)
			assert.NoFileExists(t, path)
		})
	}
	t.Run("unwritable path", func(t *testing.T) {
		err := nccom.Plot(filepath.Join(dir, "missing", "dir", "x.png"), "t", []nccom.Series{good})
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
}
