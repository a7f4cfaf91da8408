package fabricdraw

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// build builds a topology with the generation's default parameters.
func build(t *testing.T, k fabric.Kind, g hwarch.Generation, n int) *fabric.Topology {
	t.Helper()
	topo, err := fabric.Build(k, g, n, fabric.DefaultParams(g))
	require.NoError(t, err)
	return topo
}

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func draw(t *testing.T, topo *fabric.Topology) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, Draw(&b, topo))
	return b.String()
}

// TestDrawGolden compares each drawing with testdata/draw/<name>.golden
// (go test -run TestDrawGolden -update rewrites them).
func TestDrawGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind fabric.Kind
		gen  hwarch.Generation
		n    int
	}{
		{"torus2d-16", fabric.KindTorus2D, hwarch.Cayman, 16},
		{"torus2d-32", fabric.KindTorus2D, hwarch.Cayman, 32},
		{"ultraserver-64", fabric.KindUltraServer, hwarch.Cayman, 64},
		{"ring-12", fabric.KindRing, hwarch.Sunda, 12},
		{"chain-6", fabric.KindChain, hwarch.Sunda, 6},
		{"switch-32", fabric.KindSwitch, hwarch.Mariana, 32},
		{"switch-16", fabric.KindSwitch, hwarch.Mariana, 16},
		{"fully-connected-4", fabric.KindFullyConnected, hwarch.Mariana, 4},
		{"star-8", fabric.KindStar, hwarch.Mariana, 8},
		{"trn1-32xl", fabric.KindTorus2D, hwarch.Sunda, 16},
		{"trn3-gen1-64", fabric.KindTrn3Gen1, hwarch.Mariana, 64},
		{"trn3-gen2-144", fabric.KindTrn3Gen2, hwarch.Mariana, 144},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := draw(t, build(t, tc.kind, tc.gen, tc.n))
			path := filepath.Join("testdata", "draw", tc.name+".golden")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -run TestDrawGolden -update")
			assert.Equal(t, string(want), got)
		})
	}
}

var number = regexp.MustCompile(`\d+`)

// TestDrawTorusGrids: every grid holds each of its 16 devices exactly once
// and no other number.
func TestDrawTorusGrids(t *testing.T) {
	for _, tc := range []struct {
		kind  fabric.Kind
		n     int
		title string
	}{
		{fabric.KindTorus2D, 16, "group"},
		{fabric.KindTorus2D, 32, "group"},
		{fabric.KindTorus2D, 48, "group"},
		{fabric.KindUltraServer, 64, "instance"},
	} {
		out := draw(t, build(t, tc.kind, hwarch.Cayman, tc.n))
		grids := 0
		var counts map[int]int
		check := func() {
			if counts == nil {
				return
			}
			for d := 16 * (grids - 1); d < 16*grids; d++ {
				assert.Equal(t, 1, counts[d], "%s %d: device %d in grid %d", tc.kind, tc.n, d, grids-1)
			}
			assert.Len(t, counts, 16, "%s %d: grid %d", tc.kind, tc.n, grids-1)
		}
		for _, line := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(line, tc.title+" "):
				check()
				grids++
				counts = make(map[int]int)
			case line == "" || !strings.HasPrefix(line, "  "):
				check()
				counts = nil
			case counts != nil:
				for _, s := range number.FindAllString(line, -1) {
					d, err := strconv.Atoi(s)
					require.NoError(t, err)
					counts[d]++
				}
			}
		}
		check()
		assert.Equal(t, tc.n/16, grids, "%s %d", tc.kind, tc.n)
	}
}

// TestDrawTorusRow: device 0's row reads 0 ◄––► 1 ◄––► 2 ◄––► 3 with the
// wrap-around markers at both ends; the vertical wrap markers frame the
// grid.
func TestDrawTorusRow(t *testing.T) {
	out := draw(t, build(t, fabric.KindTorus2D, hwarch.Cayman, 16))
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "◄––►") {
			rows = append(rows, strings.Join(strings.Fields(line), " "))
		}
	}
	require.Len(t, rows, 4)
	assert.Equal(t, "*––► 0 ◄––► 1 ◄––► 2 ◄––► 3 ◄––*", rows[0])
	assert.Equal(t, "*––► 12 ◄––► 13 ◄––► 14 ◄––► 15 ◄––*", rows[3])
	assert.Contains(t, out, "xy links: 256 GB/s, 500 ns per direction")
	assert.Contains(t, out, "B0_s column = SENG s: up, left, down, right")
	// Each ▲/▼/* sits under the last digit of a device.
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if !strings.ContainsAny(line, "▲▼*") || strings.Contains(line, "––") {
			continue
		}
		var row string
		for j := i + 1; j < len(lines) && row == ""; j++ {
			if strings.Contains(lines[j], "––") {
				row = lines[j]
			}
		}
		if row == "" {
			row = rowAbove(lines, i)
		}
		r := []rune(row)
		for c, m := range []rune(line) {
			if m != ' ' {
				require.Less(t, c, len(r), "line %q", line)
				assert.True(t, r[c] >= '0' && r[c] <= '9' && (c+1 == len(r) || r[c+1] == ' '), "%q over %q at %d", line, row, c)
			}
		}
	}
}

func rowAbove(lines []string, i int) string {
	for j := i - 1; j >= 0; j-- {
		if strings.Contains(lines[j], "––") {
			return lines[j]
		}
	}
	return ""
}

// TestDrawMissingLink: arrows come from the links, so a dropped direction
// leaves a gap.
func TestDrawMissingLink(t *testing.T) {
	topo := build(t, fabric.KindRing, hwarch.Sunda, 4)
	var kept []fabric.Link
	for _, l := range topo.Links {
		if !(l.From == 1 && l.To == 2) && !(l.From == 3 && l.To == 0) {
			kept = append(kept, l)
		}
	}
	topo.Links = kept
	out := draw(t, topo)
	assert.Contains(t, out, "   0 ◄––►  1 ◄––   2 ◄––►  3 ◄––*\n")
}

// TestDrawLongRing wraps near 100 columns, a continued line ending in a
// link, and lists every device once.
func TestDrawLongRing(t *testing.T) {
	out := draw(t, build(t, fabric.KindRing, hwarch.Sunda, 100))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var ring []string
	for _, l := range lines[1 : len(lines)-1] {
		assert.LessOrEqual(t, len([]rune(l)), drawWidth, l)
		ring = append(ring, l)
	}
	require.Greater(t, len(ring), 1)
	for _, l := range ring[:len(ring)-1] {
		assert.True(t, strings.HasSuffix(l, "◄––►"), l)
	}
	seen := make(map[string]int)
	for _, l := range ring {
		for _, s := range number.FindAllString(l, -1) {
			seen[s]++
		}
	}
	assert.Len(t, seen, 100)
	for s, c := range seen {
		assert.Equal(t, 1, c, s)
	}
}

// TestDrawFormats: a bandwidth is written exactly, in GB/s with every
// decimal its whole number of bytes per second takes (at most nine), never
// rounded to fewer — a link of 0.015 GB/s (--link-bw 0.015GB/s) was printed
// "0.01 GB/s", one of 99.999 GB/s "100 GB/s"; a latency to the picosecond.
func TestDrawFormats(t *testing.T) {
	for _, tc := range []struct {
		bps  uint64
		want string
	}{
		{256e9, "256 GB/s"},
		{96 << 30, "103.079215104 GB/s (96 GiB/s)"},
		{1.5e9, "1.5 GB/s"},
		{1.23e6, "0.00123 GB/s"},
		{6.25e6, "0.00625 GB/s"}, // 50 Mbps: not "0.01"
		{9.99e6, "0.00999 GB/s"},
		{9_999_999, "0.009999999 GB/s"},
		{1e7, "0.01 GB/s"},
		{15e6, "0.015 GB/s"},
		{125e6, "0.125 GB/s"},
		{99_999e6, "99.999 GB/s"},
		{12_345e6, "12.345 GB/s"},
		{5_357_142_857, "5.357142857 GB/s"}, // a leaf's 37.5 GB/s over 7 spines
		{1, "0.000000001 GB/s"},
		{999_999_999_999_999, "999999.999999999 GB/s"},
		{1e15, "1000000 GB/s"},
	} {
		assert.Equal(t, tc.want, formatBandwidth(tc.bps), "%d B/s", tc.bps)
	}
	assert.Equal(t, "500 ns", formatLatency(500_000))
	assert.Equal(t, "0.25 ns", formatLatency(250))
	assert.Equal(t, "0..15", ranges([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}))
	assert.Equal(t, "0..3, 5, 7..9", ranges([]int{0, 1, 2, 3, 5, 7, 8, 9}))
	assert.Equal(t, "none", ranges(nil))
}

func TestDrawDeterministic(t *testing.T) {
	for _, k := range []fabric.Kind{fabric.KindTorus2D, fabric.KindUltraServer, fabric.KindRing, fabric.KindChain, fabric.KindSwitch, fabric.KindFullyConnected, fabric.KindStar} {
		n := 64
		if k == fabric.KindChain {
			n = 6
		}
		topo := build(t, k, hwarch.Cayman, n)
		assert.Equal(t, draw(t, topo), draw(t, topo), "%s", k)
		other := build(t, k, hwarch.Cayman, n)
		assert.Equal(t, draw(t, topo), draw(t, other), "%s", k)
		assert.True(t, strings.HasPrefix(draw(t, topo), "topology: "+k.String()+", "), "%s", k)
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestDrawErrors(t *testing.T) {
	boom := errors.New("boom")
	topo := build(t, fabric.KindTorus2D, hwarch.Cayman, 16)
	assert.ErrorIs(t, Draw(failWriter{boom}, topo), boom)
	assert.ErrorIs(t, Draw(shortWriter{}, topo), io.ErrShortWrite)

	var b bytes.Buffer
	assert.Error(t, Draw(&b, nil))
	assert.ErrorIs(t, Draw(&b, &fabric.Topology{Kind: fabric.Kind(99)}), fabric.ErrUnknownKind)
	assert.ErrorIs(t, Draw(&b, &fabric.Topology{Kind: fabric.KindAuto}), fabric.ErrUnknownKind)
	assert.ErrorIs(t, Draw(&b, &fabric.Topology{Kind: fabric.KindTorus2D, Devices: 4, Nodes: make([]fabric.Node, 4)}), fabric.ErrTopology)
	assert.ErrorIs(t, Draw(&b, &fabric.Topology{Kind: fabric.KindUltraServer, Devices: 16, Nodes: make([]fabric.Node, 16)}), fabric.ErrTopology)
	assert.ErrorIs(t, Draw(&b, &fabric.Topology{Kind: fabric.KindRing, Devices: 3}), fabric.ErrTopology)
	assert.ErrorIs(t, Draw(&b, &fabric.Topology{Kind: fabric.KindRing, Devices: 2, Nodes: make([]fabric.Node, 2), Links: []fabric.Link{{From: 0, To: 5}}}), fabric.ErrTopology)
	assert.Zero(t, b.Len(), "nothing is written on error")

	// A topology built by hand without links still draws.
	require.NoError(t, Draw(&b, &fabric.Topology{Kind: fabric.KindStar, Devices: 2, Nodes: make([]fabric.Node, 2)}))
	assert.Contains(t, b.String(), "no links")
}
