package nccom_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// sampleReport is a small all_reduce sweep on 32 ranks with simple times.
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

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	assert.Equal(t, string(want), string(got), "differs from %s (go test -update rewrites it)", path)
}

func TestWriteTableGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, sampleReport(t).WriteTable(&buf))
	golden(t, "table.golden", buf.Bytes())
}

func TestWriteTableShape(t *testing.T) {
	rep := sampleReport(t)
	var buf bytes.Buffer
	require.NoError(t, rep.WriteTable(&buf))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")

	t.Run("unit comment first", func(t *testing.T) {
		assert.Equal(t, "# bandwidth unit: GB/s = 1e9 bytes/s; sizes in bytes", lines[0])
	})
	t.Run("metadata comments sorted", func(t *testing.T) {
		assert.Equal(t, []string{
			"# devices: 32", "# model: aware", "# op: all_reduce", "# ranks: 32", "# topology: torus-4x8",
		}, lines[1:6])
	})
	t.Run("header names the columns", func(t *testing.T) {
		assert.Equal(t,
			[]string{"size(B)", "count(elems)", "type", "time:avg(us)", "algbw(GB/s)", "busbw(GB/s)", "algorithm"},
			strings.Fields(lines[6]))
	})
	t.Run("rows right-aligned under the header", func(t *testing.T) {
		header := lines[6]
		for _, l := range lines[7 : 7+len(rep.Rows)] {
			assert.Len(t, l, len(header))
			// every column ends where its header ends
			for _, col := range nccom.Columns() {
				end := strings.Index(header, col) + len(col)
				assert.NotEqual(t, byte(' '), l[end-1], "column %s of %q", col, l)
				if end < len(l) {
					assert.Equal(t, byte(' '), l[end], "column %s of %q", col, l)
				}
			}
		}
	})
	t.Run("numbers rounded like nccom-test", func(t *testing.T) {
		last := strings.Fields(lines[7+len(rep.Rows)-1])
		assert.Equal(t, []string{"536870912", "134217728", "fp32", "9689.51", "55.41", "107.35", "kangaring"}, last)
	})
	t.Run("average line", func(t *testing.T) {
		avg := lines[len(lines)-1]
		assert.Regexp(t, regexp.MustCompile(`^Avg bus bandwidth:\s+\d+\.\d{4}GB/s$`), avg)
		var sum float64
		for _, r := range rep.Rows {
			sum += r.BusBW
		}
		assert.Equal(t, fmt.Sprintf("Avg bus bandwidth:\t%.4fGB/s", sum/float64(len(rep.Rows))), avg)
		assert.Equal(t, sum/float64(len(rep.Rows)), rep.AvgBusBW())
	})
}

func TestAvgBusBW(t *testing.T) {
	tests := []struct {
		name string
		rep  *nccom.Report
		want float64
	}{
		{"nil report", nil, 0},
		{"no rows", &nccom.Report{}, 0},
		{"one row", &nccom.Report{Rows: []nccom.Row{{BusBW: 3}}}, 3},
		{"mean", &nccom.Report{Rows: []nccom.Row{{BusBW: 1}, {BusBW: 2}, {BusBW: 6}}}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.rep.AvgBusBW())
		})
	}
}

func TestWriteTableEmptyAndMinimal(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, (&nccom.Report{}).WriteTable(&buf))
	assert.Equal(t,
		"# bandwidth unit: GB/s = 1e9 bytes/s; sizes in bytes\n"+
			"    size(B)    count(elems)    type    time:avg(us)    algbw(GB/s)    busbw(GB/s)    algorithm\n"+
			"Avg bus bandwidth:\t0.0000GB/s\n",
		buf.String())
}

func TestWriteTableExtraValues(t *testing.T) {
	rep := &nccom.Report{Extra: map[string]any{
		"note":   "two\nlines",
		"empty":  "",
		"ratio":  0.5,
		"list":   []int{1, 2},
		"enable": true,
	}}
	var buf bytes.Buffer
	require.NoError(t, rep.WriteTable(&buf))
	out := buf.String()
	assert.Contains(t, out, "# note: \"two\\nlines\"\n", "a value with a newline is quoted, never breaks the comment")
	assert.Contains(t, out, "# empty: \"\"\n")
	assert.Contains(t, out, "# ratio: 0.5\n")
	assert.Contains(t, out, "# list: [1,2]\n")
	assert.Contains(t, out, "# enable: true\n")
}

func TestReportValidateErrors(t *testing.T) {
	good := nccom.Row{Size: 4, Count: 1, Type: "fp32", Algorithm: "ring"}
	tests := []struct {
		name    string
		rep     *nccom.Report
		wantErr error
	}{
		{"nil", nil, nccom.ErrBadReport},
		{"unknown op", &nccom.Report{Op: "bcast"}, nccom.ErrUnknownOp},
		{"negative ranks", &nccom.Report{Ranks: -1}, nccom.ErrBadReport},
		{"negative size", &nccom.Report{Rows: []nccom.Row{{Size: -1, Type: "fp32", Algorithm: "ring"}}}, nccom.ErrBadReport},
		{"negative count", &nccom.Report{Rows: []nccom.Row{{Count: -1, Type: "fp32", Algorithm: "ring"}}}, nccom.ErrBadReport},
		{"NaN time", &nccom.Report{Rows: []nccom.Row{{TimeUS: math.NaN(), Type: "fp32", Algorithm: "ring"}}}, nccom.ErrBadReport},
		{"Inf algbw", &nccom.Report{Rows: []nccom.Row{{AlgBW: math.Inf(1), Type: "fp32", Algorithm: "ring"}}}, nccom.ErrBadReport},
		{"negative busbw", &nccom.Report{Rows: []nccom.Row{{BusBW: -1, Type: "fp32", Algorithm: "ring"}}}, nccom.ErrBadReport},
		{"no type", &nccom.Report{Rows: []nccom.Row{good, {Algorithm: "ring"}}}, nccom.ErrBadReport},
		{"no algorithm", &nccom.Report{Rows: []nccom.Row{{Type: "fp32"}}}, nccom.ErrBadReport},
		{"reserved extra op", &nccom.Report{Extra: map[string]any{"op": "x"}}, nccom.ErrBadReport},
		{"reserved extra ranks", &nccom.Report{Extra: map[string]any{"ranks": 2}}, nccom.ErrBadReport},
		{"empty extra key", &nccom.Report{Extra: map[string]any{"": 1}}, nccom.ErrBadReport},
		{"extra key with space", &nccom.Report{Extra: map[string]any{"a b": 1}}, nccom.ErrBadReport},
		{"extra key with colon", &nccom.Report{Extra: map[string]any{"a:b": 1}}, nccom.ErrBadReport},
		{"extra NaN", &nccom.Report{Extra: map[string]any{"x": math.NaN()}}, nccom.ErrBadReport},
		{"extra func", &nccom.Report{Extra: map[string]any{"x": func() {}}}, nccom.ErrBadReport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rep.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.wantErr)
			var buf bytes.Buffer
			assert.ErrorIs(t, tt.rep.WriteTable(&buf), tt.wantErr)
			assert.ErrorIs(t, tt.rep.WriteJSON(&buf), tt.wantErr)
			assert.Empty(t, buf.String(), "nothing is written for an invalid report")
		})
	}
}

type failWriter struct{}

var errWrite = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWriteErrorsPropagate(t *testing.T) {
	rep := sampleReport(t)
	assert.ErrorIs(t, rep.WriteTable(failWriter{}), errWrite)
	assert.ErrorIs(t, rep.WriteJSON(failWriter{}), errWrite)
}
