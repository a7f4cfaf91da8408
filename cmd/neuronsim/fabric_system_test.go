package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/plotutil"

	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestFabricTopoSystems: fabric topo --system draws every system of the
// catalogue as the hardware is — its topology and device count, past
// get_max_devs (the Trn3 UltraServers' 64 and 144) without --what-if.
func TestFabricTopoSystems(t *testing.T) {
	for _, s := range fabric.Systems {
		t.Run(s.Name, func(t *testing.T) {
			out, err := runCLI(t, "fabric", "topo", "--system", s.Name)
			require.NoError(t, err)
			assert.Contains(t, out, fmt.Sprintf("topology: %s, %d devices", s.Kind, s.Devices))
		})
	}
}

// TestFabricSystemFlags: flags that agree with --system are accepted;
// each one that contradicts it is refused naming both; --what-if does not
// go with a named system; an unknown name lists the names.
func TestFabricSystemFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--system", "trn3-gen1", "--arch", "trn3", "--devices", "64", "--topology", "trn3-gen1", "--switch", "v1"},
		{"--system", "trn3-gen1", "--topology", "auto"},
		{"--system", "TRN1-32XL", "--arch", "sunda", "--switch", "none", "--devices", "16"},
	} {
		_, err := runCLI(t, append([]string{"fabric", "topo"}, args...)...)
		assert.NoError(t, err, "%v", args)
	}
	for name, tt := range map[string]struct {
		args []string
		want []string
	}{
		"arch":          {[]string{"--arch", "cayman"}, []string{"--arch cayman contradicts --system trn3-gen1", "a mariana system"}},
		"arch as typed": {[]string{"--arch", "trn2"}, []string{"--arch trn2 contradicts --system trn3-gen1", "a mariana system"}}, // the word given, not its generation
		"devices":       {[]string{"--devices", "32"}, []string{"--devices 32 contradicts --system trn3-gen1", "64 devices"}},
		"list":          {[]string{"--devices", "64,32"}, []string{"--devices 64,32 contradicts --system trn3-gen1"}},
		"topology":      {[]string{"--topology", "switch"}, []string{"--topology switch contradicts --system trn3-gen1", "topology trn3-gen1"}},
		"switch":        {[]string{"--switch", "none"}, []string{"--switch none contradicts --system trn3-gen1", "switch v1"}},
		"what-if":       {[]string{"--what-if"}, []string{"--what-if with --system trn3-gen1", "its own device count (64)"}},
		"server":        {[]string{"--server-size", "8"}, []string{"--server-size", "servers fixed"}},
		"unknown":       {[]string{"--system", "trn4"}, []string{`unknown system "trn4"`, "trn1-32xl|trn2-48xl|trn2-ultraserver|trn3-gen1|trn3-gen2"}},
		"torus arch":    {[]string{"--system", "trn2-48xl", "--arch", "sunda"}, []string{"--arch sunda contradicts --system trn2-48xl", "a cayman system"}},
	} {
		t.Run(name, func(t *testing.T) {
			args := tt.args
			if args[0] != "--system" {
				args = append([]string{"--system", "trn3-gen1"}, args...)
			}
			for _, cmd := range []string{"topo", "sweep"} {
				_, err := runCLI(t, append([]string{"fabric", cmd}, args...)...)
				require.Error(t, err, cmd)
				for _, w := range tt.want {
					assert.ErrorContains(t, err, w, cmd)
				}
			}
		})
	}
}

// TestFabricSweepSystem: a sweep on a named system runs on its shape and
// names it; its JSON report holds the link use of every result (a
// bottleneck class of the system's links) and its table the link table.
func TestFabricSweepSystem(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.json")
	out, err := runCLI(t, "fabric", "sweep", "--system", "trn3-gen1", "-b", "1M", "-e", "16M", "-f", "4", "--json", file)
	require.NoError(t, err)
	for _, s := range []string{"# system: trn3-gen1", "# devices: 64", "# topology: trn3-gen1", "# switch: v1", "# arch: mariana",
		"# link utilisation (aware model)"} {
		assert.Contains(t, out, s)
	}
	assert.Regexp(t, regexp.MustCompile(`\n\s+16777216\s+(in-server|inter-server|inter-rack)\s+\d+\.\d\s+\d+\.\d\s+(in-server|inter-server|inter-rack)\s+\d+\.\d\n`), out)
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var doc struct {
		Results []map[string]any `json:"results"`
		System  string           `json:"neuronsim_system"`
		Usage   []struct {
			Size       int64  `json:"size"`
			Bottleneck string `json:"bottleneck"`
			Classes    []struct {
				Class       string  `json:"class"`
				Utilisation float64 `json:"utilisation"`
			} `json:"classes"`
		} `json:"neuronsim_link_usage"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	assert.Equal(t, "trn3-gen1", doc.System)
	require.Len(t, doc.Usage, len(doc.Results))
	for i, u := range doc.Usage {
		assert.Equal(t, doc.Results[i]["size(B)"], float64(u.Size))
		require.Len(t, u.Classes, 3)
		assert.Equal(t, u.Classes[0].Class, u.Bottleneck)
		assert.GreaterOrEqual(t, u.Classes[0].Utilisation, u.Classes[1].Utilisation)
	}
}

// TestFabricSweepGen2 is the sizing question of issue 16 — how much does
// the second-level switch limit a 144-chip all-reduce? — answered by one
// command.
func TestFabricSweepGen2(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("brings up a 144-device system: skipped under -short and the race detector")
	}
	out, err := runCLI(t, "fabric", "sweep", "--system", "trn3-gen2", "--op", "all_reduce", "-b", "1M", "-e", "16M", "-f", "4")
	require.NoError(t, err)
	assert.Contains(t, out, "# devices: 144")
	assert.Contains(t, out, "# topology: trn3-gen2")
	assert.Regexp(t, regexp.MustCompile(`\n\s+16777216\s+(in-server|inter-server)\s+\d+\.\d\s+\d+\.\d\s+(in-server|inter-server)\s+\d+\.\d\n`), out)
}

// TestPlotDevices: --plot-devices draws busbw against device count, one
// line per size — every size of the sweep, or those of --plot-sizes —
// each in its own colour; it needs two device counts and sizes every
// count's sweep has, and writes nothing when refused.
func TestPlotDevices(t *testing.T) {
	dir := t.TempDir()
	base := []string{"fabric", "sweep", "--arch", "cayman", "--devices", "8,2,4", "--topology", "ring", "-b", "64K", "-e", "16M", "-f", "16"}
	for _, tc := range []struct {
		extra []string
		lines int
	}{
		{nil, 3}, // 64K, 1M, 16M
		{[]string{"--plot-sizes", "1M,16M"}, 2},
	} {
		file := filepath.Join(dir, fmt.Sprintf("d%d.png", tc.lines))
		_, err := runCLI(t, append(append(base, "--plot-devices", file), tc.extra...)...)
		require.NoError(t, err)
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(raw))
		require.NoError(t, err)
		assert.Equal(t, image.Rect(0, 0, 768, 480), img.Bounds())
		for i := range tc.lines + 1 {
			n := colourPixels(img, plotutil.Color(i))
			if i < tc.lines {
				assert.Greater(t, n, 40, "line %d of %d is drawn", i, tc.lines)
			} else {
				assert.Zero(t, n, "no line %d", i)
			}
		}
	}
	for name, tt := range map[string]struct {
		args []string
		want string
	}{
		"one count":      {[]string{"fabric", "sweep", "--devices", "16"}, "needs at least two device counts"},
		"system":         {[]string{"fabric", "sweep", "--system", "trn1-32xl"}, "needs at least two device counts"},
		"size not swept": {append(base, "--plot-sizes", "2M"), "--plot-sizes: 2MiB (2097152 bytes) is not a size of the sweep on 8 devices"},
		"twice":          {append(base, "--plot-sizes", "1M,1M"), "1MiB is given twice"},
		"bad size":       {append(base, "--plot-sizes", "1X"), `--plot-sizes "1X"`},
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, "refused.png")
			_, err := runCLI(t, append(tt.args, "--plot-devices", file)...)
			assert.ErrorContains(t, err, tt.want)
			assert.NoFileExists(t, file)
		})
	}
	_, err := runCLI(t, append(base, "--plot-sizes", "1M")...)
	assert.ErrorContains(t, err, "--plot-sizes: it chooses the lines of --plot-devices")
}

// near reports whether two 16-bit colour channels are within 32 of each
// other's 256 levels (a line's anti-aliased edge still counts).
func near(a, b uint32) bool { return max(a, b)-min(a, b) <= 32<<8 }

// colourPixels counts the pixels of about colour c in the right half of img,
// where the lines run to their last device count and the legend (top
// left) is not.
func colourPixels(img image.Image, c color.Color) int {
	r0, g0, b0, _ := c.RGBA()
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X + b.Dx()/2; x < b.Max.X; x++ {
			r, g, bb, _ := img.At(x, y).RGBA()
			if near(r, r0) && near(g, g0) && near(bb, b0) {
				n++
			}
		}
	}
	return n
}

// TestLinkTableInSweep: fabric sweep prints the link table after
// nccom-test's, one line per size, not the link use as a comment line.
func TestLinkTableInSweep(t *testing.T) {
	out, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "16", "-b", "1M", "-e", "4M", "-f", "4")
	require.NoError(t, err)
	assert.NotContains(t, out, "link_usage")
	_, table, ok := strings.Cut(out, "Avg bus bandwidth")
	require.True(t, ok)
	assert.Regexp(t, regexp.MustCompile(`# link utilisation \(aware model\)[^\n]*\n\s+size\(B\)\s+bottleneck\s+util\(%\)\s+mean\(%\)\s+next\s+util\(%\)\n\s+1048576\s+xy\s+\d+\.\d\s+\d+\.\d\s+-\s+-\n\s+4194304\s+xy`), table)
}
