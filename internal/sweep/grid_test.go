package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/strictyaml"
)

// gridYAML is a Trn2 grid with these axes lines.
func gridYAML(axes string) string { return "arch: cayman\naxes:\n" + axes }

func mustGrid(t *testing.T, src string) *Grid {
	t.Helper()
	g, err := ParseGrid("grid.yaml", []byte(src))
	require.NoError(t, err)
	return g
}

// TestGridExpansion: the points nest in the documented axis order (the
// size innermost), each resolved (auto topologies to the real one), and
// each hash is the first 16 hex digits of SHA-256 of the point's
// canonical encoding.
func TestGridExpansion(t *testing.T) {
	g := mustGrid(t, gridYAML(`  devices: [2, 16]
  ops: [all_reduce, all_gather]
  models: [aware, free]
  sizes: [1K, 64K]
`))
	pts := g.Points()
	require.Len(t, pts, 16)
	var got []string
	for i, p := range pts {
		assert.Equal(t, i, p.Index)
		got = append(got, fmt.Sprintf("%d %s %s %s %d", p.Devices, p.Topology, p.Model, p.Op, p.Size))
		h := sha256.Sum256([]byte(p.canonical()))
		assert.Equal(t, hex.EncodeToString(h[:8]), p.Hash)
		assert.Contains(t, p.canonical(), fmt.Sprintf("format=%d\n", HashFormat))
	}
	assert.Equal(t, []string{
		"2 ring aware all_reduce 1024", "2 ring aware all_reduce 65536", "2 ring aware all_gather 1024", "2 ring aware all_gather 65536",
		"2 ring free all_reduce 1024", "2 ring free all_reduce 65536", "2 ring free all_gather 1024", "2 ring free all_gather 65536",
		"16 torus2d aware all_reduce 1024", "16 torus2d aware all_reduce 65536", "16 torus2d aware all_gather 1024", "16 torus2d aware all_gather 65536",
		"16 torus2d free all_reduce 1024", "16 torus2d free all_reduce 65536", "16 torus2d free all_gather 1024", "16 torus2d free all_gather 65536",
	}, got)
	assert.Equal(t, "auto", pts[0].Algo, "the default algorithm")
	assert.Equal(t, "fp32", pts[0].Dtype, "the default data type")
	assert.Equal(t, 1, pts[0].RanksPer)
	assert.Nil(t, pts[0].LinkBW)
	assert.Len(t, g.Hash(), 16)
}

// TestGridHashStable: layout, comments, key order and spellings of the
// same value do not change a grid's hash or its points'; any input does.
func TestGridHashStable(t *testing.T) {
	a := mustGrid(t, "arch: cayman\naxes:\n  devices: [2, 4]\n  ops: [all_reduce]\n  sizes: [1K, 1M]\n  link_bw: [50GB/s]\n")
	b := mustGrid(t, "# the same grid\naxes:\n  link_bw: [\"50e9B/s\"]\n  sizes:\n    - 1024\n    - 1MiB\n  ops: [allr]\n  devices: [2, 4]\narch: trn2\n")
	assert.Equal(t, a.Hash(), b.Hash())
	assert.Equal(t, a.Points(), b.Points())
	for _, other := range []string{
		"arch: cayman\naxes:\n  devices: [2, 4]\n  ops: [all_reduce]\n  sizes: [1K, 1M]\n  link_bw: [51GB/s]\n",
		"arch: cayman\naxes:\n  devices: [2, 4]\n  ops: [all_reduce]\n  sizes: [1K, 2M]\n  link_bw: [50GB/s]\n",
		"arch: cayman\naxes:\n  devices: [2, 4]\n  ops: [all_reduce]\n  sizes: [1K, 1M]\n  link_bw: [50GB/s]\noutputs:\n  plots: false\n",
		"arch: cayman\nmode: functional\naxes:\n  devices: [2, 4]\n  ops: [all_reduce]\n  sizes: [1K, 1M]\n  link_bw: [50GB/s]\n",
		"arch: mariana\naxes:\n  devices: [2, 4]\n  ops: [all_reduce]\n  sizes: [1K, 1M]\n  link_bw: [50GB/s]\n",
	} {
		assert.NotEqual(t, a.Hash(), mustGrid(t, other).Hash(), other)
	}
	// The same point in two grids has the same hash.
	c := mustGrid(t, "arch: cayman\naxes:\n  devices: [4]\n  ops: [all_reduce]\n  sizes: [1M]\n  link_bw: [50GB/s]\n")
	assert.Equal(t, a.Points()[3].Hash, c.Points()[0].Hash)
}

// TestGridSystems: the systems axis takes the named systems' generation,
// devices and topology; with devices it comes first.
func TestGridSystems(t *testing.T) {
	g := mustGrid(t, "arch: sunda\naxes:\n  systems: [trn1-32xl]\n  devices: [2]\n  ops: [all_reduce]\n  sizes: [4K]\n")
	pts := g.Points()
	require.Len(t, pts, 2)
	assert.Equal(t, [3]any{"trn1-32xl", 16, "torus2d"}, [3]any{pts[0].System, pts[0].Devices, pts[0].Topology})
	assert.Equal(t, [3]any{"", 2, "ring"}, [3]any{pts[1].System, pts[1].Devices, pts[1].Topology})
	g = mustGrid(t, "axes:\n  systems: [trn1-32xl, trn2-48xl]\n  ops: [all_reduce]\n  sizes: {min: 1K, max: 4K, factor: 2}\n")
	assert.Equal(t, 6, g.Len())
	assert.Equal(t, "cayman", g.Points()[3].Arch)
	// A switch family applies to the systems it changes something on
	// (rtarch.CheckSwitch): trn3-gen1's mariana; trn2-48xl's cayman keeps
	// its default, and its point says so.
	g = mustGrid(t, "switch: none\naxes:\n  systems: [trn2-48xl, trn3-gen1]\n  ops: [all_reduce]\n  sizes: [4K]\n")
	require.Len(t, g.Points(), 2)
	assert.Equal(t, [2]string{"trn2-48xl", "none"}, [2]string{g.Points()[0].System, g.Points()[0].Switch})
	assert.Equal(t, [2]string{"trn3-gen1", "none"}, [2]string{g.Points()[1].System, g.Points()[1].Switch})
	g = mustGrid(t, "switch: v1\naxes:\n  systems: [trn2-48xl, trn3-gen1]\n  ops: [all_reduce]\n  sizes: [4K]\n")
	assert.Equal(t, [2]string{"none", "v1"}, [2]string{g.Points()[0].Switch, g.Points()[1].Switch})
}

// TestGridErrors: every bad grid is refused at plan time with an error
// that wraps ErrGrid (and strictyaml's ErrStrict) and names the file, the
// line, the field and the value.
func TestGridErrors(t *testing.T) {
	base := "  devices: [2]\n  ops: [all_reduce]\n  sizes: [1K]\n"
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown axis", gridYAML(base + "  device_count: [2]\n"), []string{"grid.yaml:6:3", "axes.device_count", `unknown axis "device_count"`, "the axes are systems, devices"}},
		{"empty axis", gridYAML("  devices: []\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:3:12", "axes.devices", "empty axis"}},
		{"empty sizes", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: []\n"), []string{"axes.sizes", "empty axis"}},
		{"axis twice", gridYAML(base + "  ops: [all_gather]\n"), []string{"grid.yaml:6:3", `axis "ops" given twice (first at line 4)`}},
		{"unknown key", "arch: cayman\nshards: 4\naxes:\n" + base, []string{"grid.yaml:2:1", `unknown key "shards"`}},
		{"no axes", "arch: cayman\n", []string{`missing key "axes"`}},
		{"no sizes", gridYAML("  devices: [2]\n  ops: [all_reduce]\n"), []string{`missing axis "sizes"`}},
		{"no ops", gridYAML("  devices: [2]\n  sizes: [1K]\n"), []string{`missing axis "ops"`}},
		{"no systems", gridYAML("  ops: [all_reduce]\n  sizes: [1K]\n"), []string{`no systems: give the axis "devices"`}},
		{"devices without arch", "axes:\n" + base, []string{"axes.devices", "need the grid's arch"}},
		{"device count above get_max_devs", gridYAML("  devices: [2, 32]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:3:16: axes.devices[1]: 32: a cayman system with switch none holds 1..16 devices (get_max_devs); what_if: true allows up to 16384"}},
		{"device count past int64", gridYAML("  devices: [99999999999999999999]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:3:13: axes.devices[0]: 99999999999999999999: a cayman system with switch none holds 1..16 devices (get_max_devs); what_if: true allows up to 16384"}},
		{"device count -3", gridYAML("  devices: [-3]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:3:13: axes.devices[0]: -3: a cayman system with switch none holds 1..16 devices (get_max_devs)"}},
		{"what-if device count above 16384", "what_if: true\n" + gridYAML("  devices: [16385]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:4:13: axes.devices[0]: 16385: a what-if system holds 1..16384 devices (the fabric window's 14-bit device index)"}},
		{"what-if device count past int64", "what_if: true\n" + gridYAML("  devices: [99999999999999999999]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:4:13: axes.devices[0]: 99999999999999999999: a what-if system holds 1..16384 devices"}},
		{"what-if device count 0", "what_if: true\n" + gridYAML("  devices: [0]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:4:13: axes.devices[0]: 0: a what-if system holds 1..16384 devices"}},
		{"what-if with every count within get_max_devs", "what_if: true\n" + gridYAML("  devices: [2, 16]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:4:12: axes.devices: every count (at most 16) is within get_max_devs (16 for cayman with switch none), so what_if: true would change nothing"}},
		{"what-if device count -3", "what_if: true\n" + gridYAML("  devices: [-3]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:4:13: axes.devices[0]: -3: a what-if system holds 1..16384 devices"}},
		// 16384 devices are a what-if system; a collective runs on at most 4096 ranks.
		{"what-if 16384 devices, one collective", "what_if: true\n" + gridYAML("  devices: [16384]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:4:12", "axes.devices[0]: 16384: 16384 devices × 1 rank per device is 16384 ranks; a collective runs on at most 4096"}},
		{"29 Gen2 UltraServers, one collective", "arch: mariana\naxes:\n  systems: [trn3-gen2]\n  nodes: [29]\n  ops: [all_reduce]\n  sizes: [1M]\n",
			[]string{"grid.yaml:4:11", "axes.nodes[0]: 29: 29 nodes of 144 devices × 1 rank per device are 4176 ranks; a collective runs on at most 4096 (at most 28 such nodes)"}},
		{"device count 0", gridYAML("  devices: [0]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"axes.devices[0]", "0"}},
		{"device count not a number", gridYAML("  devices: [two]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"axes.devices[0]", "two"}},
		{"device listed twice", gridYAML("  devices: [2, 2]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"axes.devices[1]", "listed twice"}},
		{"unknown op", gridYAML("  devices: [2]\n  ops: [all_reduce, broadcast]\n  sizes: [1K]\n"), []string{"grid.yaml:4:21", "axes.ops[1]", `"broadcast"`}},
		{"unknown algo", gridYAML(base + "  algos: [tree]\n"), []string{"axes.algos[0]", `"tree"`}},
		{"unknown dtype", gridYAML(base + "  dtypes: [fp64]\n"), []string{"axes.dtypes[0]", `"fp64"`}},
		{"unknown model", gridYAML(base + "  models: [exact]\n"), []string{"axes.models[0]", `"exact"`, "aware|free"}},
		{"unknown topology", gridYAML(base + "  topologies: [hypercube]\n"), []string{"axes.topologies[0]", `"hypercube"`}},
		{"unknown system", "axes:\n  systems: [trn9]\n  ops: [all_reduce]\n  sizes: [1K]\n", []string{"axes.systems[0]", `"trn9"`, "trn2-48xl"}},
		{"system of another arch", "arch: cayman\naxes:\n  systems: [trn1-32xl]\n  ops: [all_reduce]\n  sizes: [1K]\n", []string{"axes.systems[0]", "trn1-32xl is a sunda system"}},
		{"topology without devices", "axes:\n  systems: [trn2-48xl]\n  topologies: [ring]\n  ops: [all_reduce]\n  sizes: [1K]\n", []string{"axes.topologies", "devices axis"}},
		{"impossible topology", gridYAML("  devices: [6]\n  topologies: [torus2d]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"axes.topologies[0]", "impossible system: torus2d of 6 cayman devices"}},
		// The switched topologies are Trn3's (fabric.Kind.GenerationRefusal);
		// a cayman switch was refused by the pod-port budget, naming no key.
		{"switch on cayman", gridYAML("  devices: [4]\n  topologies: [ring, switch]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"grid.yaml:4:22: axes.topologies[1]: switch: a switch topology is Trn3's: only mariana (Trn3) systems have NeuronSwitch"}},
		{"switch on sunda", "arch: sunda\naxes:\n  devices: [4]\n  topologies: [switch]\n  ops: [all_reduce]\n  sizes: [1K]\n", []string{"axes.topologies[0]: switch: a switch topology is Trn3's"}},
		{"buffers past HBM", gridYAML("  devices: [2]\n  ops: [all_gather]\n  algos: [ring]\n  sizes: [64G]\n"), []string{"axes.sizes[0]: 68719476736 B: the ring all_gather of it needs", "out of device memory"}}, // the size, not the system,
		{"impossible algorithm", gridYAML("  devices: [6]\n  algos: [rdh]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"axes.sizes[0]", "impossible point", "power-of-two"}},
		{"mesh refuses permute's op", gridYAML("  devices: [4]\n  algos: [ring]\n  ops: [alltoall]\n  sizes: [1K]\n"), []string{"impossible point", "ring does not implement alltoall"}},
		{"size not a multiple", gridYAML("  devices: [3]\n  ops: [all_gather]\n  sizes: [1K]\n"), []string{"axes.sizes[0]", "not a multiple of 12 B"}},
		{"size syntax", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [1Q]\n"), []string{"axes.sizes[0]", `"1Q"`}},
		{"size too large", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [2T]\n  dtypes: [fp32]\n") + "mode: functional\n", []string{"axes.sizes[0]", "memory"}},
		{"size too large for the devices", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [4K, 64G]\n  dtypes: [fp32]\n"), []string{"axes.sizes[1]: 68719476736 B", "more than the device memory of 2", "out of device memory"}}, // once blamed on axes.devices[0]
		{"range without factor", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: {min: 1K, max: 1M}\n"), []string{"axes.sizes", "factor or step"}},
		{"range with both", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: {min: 1K, max: 1M, factor: 2, step: 1K}\n"), []string{"axes.sizes.step", "not both"}},
		{"range factor 1", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: {min: 1K, max: 1M, factor: 1}\n"), []string{"axes.sizes.factor", "1"}},
		{"range unknown key", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: {min: 1K, max: 1M, by: 2}\n"), []string{"axes.sizes.by", `unknown key "by"`}},
		// A range's errors at the bound they name, in the command line's
		// words (nccom.SizesIn; once all at axes.sizes, "nccom: bad sweep: …").
		{"range backwards", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: {min: 1M, max: 1K, factor: 2}\n"), []string{"grid.yaml:5:25: axes.sizes.max: 1KiB: below axes.sizes.min (1MiB)"}},
		{"range from 0 by a factor", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: {min: 0, max: 1K, factor: 2}\n"), []string{"grid.yaml:5:16: axes.sizes.min: 0: axes.sizes.factor 2 would never grow it: give at least 1 byte, or axes.sizes.step instead"}},
		{"range of too many steps", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: {min: 1, max: 1M, step: 1}\n"), []string{"grid.yaml:5:34: axes.sizes.step: 1B: 1B to 1MiB by 1 bytes is 1048576 points (at most 10000) (all_reduce in fp32 over 2 ranks)"}},
		{"range below the granule", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: {min: 1, max: 3, step: 1}\n"), []string{"grid.yaml:5:24: axes.sizes.max: 3B: below the alignment 4B"}},
		{"range past the largest collective", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: {min: 1, max: 8388607T, factor: 2}\n"), []string{"grid.yaml:5:24: axes.sizes.max: 8388607TiB: above the largest collective, 1048576TiB"}},
		{"link_bw without unit", gridYAML(base + "  link_bw: [50]\n"), []string{"axes.link_bw[0]", "no unit"}},
		{"link_bw zero", gridYAML(base + "  link_bw: [0GB/s]\n"), []string{"axes.link_bw[0]", "positive"}},
		{"link_latency negative", gridYAML(base + "  link_latency: [-5]\n"), []string{"axes.link_latency[0]", "negative"}},
		{"link_latency too large", gridYAML(base + "  link_latency: [1e18]\n"), []string{"axes.link_latency[0]", "too long"}},
		{"link_latency duration too long", gridYAML(base + "  link_latency: [11s]\n"), []string{"axes.link_latency[0]", `"11s": too long`}},
		{"link_latency finer than a ps", gridYAML(base + "  link_latency: [0.0001ns]\n"), []string{"axes.link_latency[0]", `"0.0001ns": 0.1 ps is not a whole number of ps: the resolution is 1 ps`}}, // once 0 ps
		{"link_latency number finer than a ps", gridYAML(base + "  link_latency: [1, 1.0005]\n"), []string{"axes.link_latency[1]", `"1.0005": 1000.5 ps is not a whole number of ps`}},
		{"link_latency duration finer than a ns", gridYAML(base + "  link_latency: [1.0000005us]\n"), []string{"axes.link_latency[0]", "1000000.5 ps is not a whole number"}},
		{"link_latency bad unit", gridYAML(base + "  link_latency: [5 parsecs]\n"), []string{"axes.link_latency[0]", "nanoseconds"}},
		{"ranks per device above NCs", gridYAML(base + "  ranks_per_device: [1, 9]\n"), []string{"axes.ranks_per_device[1]", "8 NeuronCores"}},
		{"ranks per device 0", gridYAML(base + "  ranks_per_device: [0]\n"), []string{"axes.ranks_per_device[0]"}},
		{"mode", "arch: cayman\nmode: fast\naxes:\n" + base, []string{"grid.yaml:2:7", "mode", `"fast"`, "timing|functional"}},
		{"endpoints", "arch: cayman\nendpoints: perfect\naxes:\n" + base, []string{"endpoints", `"perfect"`}},
		{"ideal without link axes", "arch: cayman\nendpoints: ideal\naxes:\n" + base, []string{"endpoints", "link_bw and link_latency"}},
		{"switch", "arch: cayman\nswitch: v2\naxes:\n" + base, []string{"switch", `"v2"`}},
		{"switch changes nothing", "arch: cayman\nswitch: v1\naxes:\n" + base, []string{"grid.yaml:2:9: switch", `"v1": the switch family changes nothing on cayman: its runtime tables with switch v1 are those with none, its default (a switch family applies to mariana only)`}},
		{"switch changes nothing on the systems", "switch: v1\naxes:\n  systems: [trn2-48xl, trn1-32xl]\n  ops: [all_reduce]\n  sizes: [1K]\n", []string{"switch", "changes nothing on cayman"}},
		{"arch", "arch: trn9\naxes:\n" + base, []string{"arch", `"trn9"`}},
		{"seed in timing mode", "arch: cayman\nseed: 3\naxes:\n" + base, []string{"seed", "applies to mode functional"}},
		{"seed negative", "arch: cayman\nmode: functional\nseed: -3\naxes:\n" + base, []string{"seed"}},
		{"axis not a list", gridYAML("  devices: 2\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"axes.devices", "expected a sequence"}},
		{"axis value a list", gridYAML("  devices: [[2]]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"axes.devices[0]", "expected a single value"}},
		{"same point twice", gridYAML("  devices: [2]\n  topologies: [auto, ring]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{"twice", "auto resolves to ring"}},
		// A value listed twice at its second place, as other axes say it
		// (once "points 0 and 1 are the same simulation" at axes, and
		// "topology auto resolves to ring" of no auto).
		{"system listed twice", "axes:\n  systems: [trn2-48xl, trn2-48xl]\n  ops: [all_reduce]\n  sizes: [1K]\n", []string{"grid.yaml:2:24: axes.systems[1]: trn2-48xl listed twice (axes.systems[0])"}},
		{"topology listed twice", gridYAML("  devices: [2]\n  topologies: [ring, ring]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{`grid.yaml:4:22: axes.topologies[1]: "ring" listed twice`}},
		{"too many device counts", "arch: mariana\nwhat_if: true\naxes:\n  devices: [" + seq(MaxAxisValues+1) + "]\n  ops: [all_reduce]\n  sizes: [1K]\n", []string{"axes.devices", "1025 values; an axis has at most 1024"}},
		{"too many values", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  link_latency: [" + seq(MaxAxisValues+1) + "]\n  sizes: [1K]\n"), []string{"axes.link_latency", "at most 1024"}},
		{"too many points", gridYAML("  devices: [2, 4, 8, 16]\n  ops: [all_reduce, all_gather]\n  models: [aware, free]\n  dtypes: [fp32, bf16]\n  ranks_per_device: [1, 2, 4, 8]\n  link_latency: [" + seq(1000) + "]\n  sizes: [4K]\n"), []string{"more than 100000 points"}},
		{"too many points by size", gridYAML("  devices: [2, 4, 8, 16]\n  ops: [all_reduce]\n  link_latency: ["+seq(1000)+"]\n  sizes: {min: 4K, max: 1G, step: 32M}\n") + "outputs:\n  plots: false\n", []string{"more than 100000 points"}},
		{"plots of too many groups", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  models: [aware, free]\n  link_latency: [" + seq(MaxPlots/2+1) + "]\n  sizes: [1K]\n"), []string{"outputs.plots", "plots: false"}},
		// A collective of 0 bytes, refused as fabric sweep -b 0 -e 0 is
		// (once planned, run and merged).
		{"size 0", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [0]\n"), []string{"grid.yaml:5:11: axes.sizes[0]: 0 (0 B): below the alignment 4B"}},
		{"size 0 among others", gridYAML("  devices: [2]\n  ops: [all_gather]\n  sizes: [1K, 0]\n"), []string{"grid.yaml:5:15: axes.sizes[1]: 0 (0 B): below the alignment 8B", "all_gather in fp32 over 2 ranks"}},
		// what_if with named systems only changes nothing (once accepted),
		// as --what-if with --system and a scenario's what_if with a name.
		{"what-if with named systems only", "what_if: true\naxes:\n  systems: [trn3-gen2]\n  ops: [all_reduce]\n  sizes: [1M]\n", []string{"grid.yaml:1:10: what_if: true: the grid has no devices axis, and a named system (trn3-gen2) is built at its own device count"}},
		// A quoted number is a string, refused where a number is expected
		// as a scenario's devices: "16" is (once accepted).
		{"device count quoted", gridYAML("  devices: [\"2\"]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{`grid.yaml:3:13: axes.devices[0]: expected an integer, got the string "2"`}},
		{"nodes quoted", gridYAML(base + "  nodes: ['2']\n"), []string{`axes.nodes[0]: expected an integer, got the string "2"`}},
		{"ranks per device quoted", gridYAML(base + "  ranks_per_device: [\"1\"]\n"), []string{`axes.ranks_per_device[0]: expected an integer, got the string "1"`}},
		{"channels quoted", gridYAML(base + "  channels: [\"1\"]\n"), []string{`axes.channels[0]: expected an integer, got the string "1"`}},
		{"factor quoted", gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: {min: 1K, max: 1M, factor: \"2\"}\n"), []string{`axes.sizes.factor: expected an integer, got the string "2"`}},
		{"efa leaf_ports quoted", gridYAML(base+"  nodes: [2]\n") + "efa: {leaf_ports: \"8\"}\n", []string{`efa.leaf_ports: expected an integer, got the string "8"`}},
		{"efa oversubscription quoted", gridYAML(base+"  nodes: [2]\n") + "efa: {oversubscription: \"2\"}\n", []string{`efa.oversubscription: expected a number, got the string "2"`}},
		{"seed quoted", "arch: cayman\nmode: functional\nseed: \"3\"\naxes:\n" + base, []string{`grid.yaml:3:7: seed: expected an integer, got the string "3"`}},
		// YAML 1.1's and Go's integer forms, refused as the command line
		// and a scenario refuse them.
		{"device count hex", gridYAML("  devices: [0x2]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{`axes.devices[0]: expected a plain decimal integer, got "0x2" (no 0x, 0o or 0b prefix: write 2)`}},
		{"device count plus", gridYAML("  devices: [+2]\n  ops: [all_reduce]\n  sizes: [1K]\n"), []string{`axes.devices[0]: expected a plain decimal integer, got "+2" (no '+' sign: write 2)`}},
		{"nodes underscore", gridYAML(base + "  nodes: [1_6]\n"), []string{`axes.nodes[0]: expected a plain decimal integer, got "1_6" (no underscores: write 16)`}},
		{"ranks per device octal", gridYAML(base + "  ranks_per_device: [0o2]\n"), []string{`axes.ranks_per_device[0]: expected a plain decimal integer, got "0o2"`}},
		{"channels hex", gridYAML(base + "  channels: [0x2]\n"), []string{`axes.channels[0]: expected a plain decimal integer, got "0x2"`}},
		{"seed octal", "arch: cayman\nmode: functional\nseed: 0o7\naxes:\n" + base, []string{`seed: expected a decimal or 0x hex integer, got "0o7" (no 0o or 0b prefix: write 7)`}},
		// The seed is 0..2^63−1, what merge's SQLite INTEGER holds (once
		// 2^63 planned and ran, and the error said 2^64−1).
		{"seed 2^63", "arch: cayman\nmode: functional\nseed: 9223372036854775808\naxes:\n" + base, []string{"grid.yaml:3:7: seed: \"9223372036854775808\": a grid's seed is 0..2^63−1 (9223372036854775807): sweep merge writes it to SQLite's INTEGER, which is signed"}},
		{"seed 2^64", "arch: cayman\nmode: functional\nseed: 18446744073709551616\naxes:\n" + base, []string{"seed: \"18446744073709551616\": a grid's seed is 0..2^63−1"}},
		{"two documents", gridYAML(base) + "---\narch: sunda\n", []string{"grid.yaml:6:1: more than one document; a sweep grid file holds exactly one"}}, // once "a scenario file"
		{"yaml syntax", "arch: [cayman\n", []string{"grid.yaml"}},
		{"alias", "arch: &a cayman\nmode: *a\naxes:\n" + base, []string{"aliases are not supported"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGrid("grid.yaml", []byte(tc.src))
			require.Error(t, err, "%v", g)
			assert.Nil(t, g)
			assert.ErrorIs(t, err, ErrGrid)
			assert.ErrorIs(t, err, strictyaml.ErrStrict)
			assert.True(t, strings.HasPrefix(err.Error(), "grid.yaml"), err.Error())
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestGridNulls: a key of a grid given YAML null (`key:`, `~`, `null`)
// or a null item is refused at its key path and line, wrapping ErrGrid:
// the decoder would take a null efa block, outputs section or
// outputs.plots as the key left out, its default, which a user who typed
// the key did not ask for. The nulls the decoder refused already (a
// word's, an axis') stay refused with their own messages.
func TestGridNulls(t *testing.T) {
	const base = "axes:\n  systems: [trn2-48xl]\n  nodes: [2]\n  ops: [all_reduce]\n  sizes: [64K]\n"
	for _, tc := range []struct {
		name, src string
		want      string
	}{
		{"efa block empty", base + "efa:\n", "grid.yaml:6:5: efa: null: give a value, or leave the key out for its default"},
		{"efa block ~", base + "efa: ~\n", "grid.yaml:6:6: efa: null: give a value"},
		{"outputs null", base + "outputs: null\n", "grid.yaml:6:10: outputs: null: give a value"},
		{"plots null", base + "outputs:\n  plots:\n", "grid.yaml:7:9: outputs.plots: null: give a value"},
		{"plots ~ in flow", base + "outputs: {plots: ~}\n", "grid.yaml:6:18: outputs.plots: null: give a value"},
		{"efa key null", base + "efa: {spines: null}\n", "efa.spines: expected a single value, got a null"},
		{"what_if null", base + "what_if:\n", "what_if: expected true or false, got null"},
		{"axis item null", "axes:\n  systems: [trn2-48xl, ~]\n  ops: [all_reduce]\n  sizes: [64K]\n", "axes.systems[1]: expected a single value, got a null"},
		{"range bound null", "axes:\n  systems: [trn2-48xl]\n  ops: [all_reduce]\n  sizes: {min: 1K, max: 1M, factor: ~}\n", "axes.sizes.factor: expected a single value, got a null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGrid("grid.yaml", []byte(tc.src))
			require.Error(t, err, "%v", g)
			assert.ErrorIs(t, err, ErrGrid)
			assert.ErrorIs(t, err, strictyaml.ErrStrict)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// The same grids with the keys given, or left out, parse.
	for _, src := range []string{base, base + "efa: {spines: 1, leaf_ports: 1}\n", base + "outputs: {plots: true}\n"} {
		_, err := ParseGrid("grid.yaml", []byte(src))
		require.NoError(t, err, src)
	}
}

// TestGridWhatIfDevices: a grid with what_if takes device counts past the
// driver's 64 up to 16,384, as fabric sweep --what-if and a scenario's
// what_if do (rtarch.Soc.CheckDevicesField); its points of 65 and 1,024
// devices plan (each system brought up once, the what-if way).
func TestGridWhatIfDevices(t *testing.T) {
	if raceEnabled {
		t.Skip("a 1,024-device bring-up")
	}
	g := mustGrid(t, "arch: mariana\nwhat_if: true\naxes:\n  devices: [65, 1024]\n  ops: [all_reduce]\n  sizes: [64K]\noutputs:\n  plots: false\n")
	pts := g.Points()
	require.Len(t, pts, 2)
	for i, n := range []int{65, 1024} {
		assert.Equal(t, n, pts[i].Devices)
		assert.Equal(t, n, pts[i].Ranks)
		assert.Equal(t, "switch", pts[i].Topology)
	}
}

// seq is "0, 1, …, n-1".
func seq(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, i)
	}
	return b.String()
}

// TestPlanBudget: a grid whose schedules hold more transfers than the
// plan may build is refused, naming the bound.
func TestPlanBudget(t *testing.T) {
	src := gridYAML("  devices: [16]\n  ops: [all_reduce]\n  algos: [ring]\n  sizes: [64K, 128K]\n")
	_, err := parseGrid("grid.yaml", []byte(src), 1000)
	require.ErrorIs(t, err, ErrGrid)
	assert.Contains(t, err.Error(), "more than 1000 transfers")
	g, err := parseGrid("grid.yaml", []byte(src), 1440)
	require.NoError(t, err, "two schedules of 720 transfers fit in 1440")
	assert.Equal(t, 2, g.Len())
}

// TestDocsGrid: the grid of docs/sweeps.md is a valid grid.
func TestDocsGrid(t *testing.T) {
	doc, err := os.ReadFile("../../docs/sweeps.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	require.True(t, ok, "docs/sweeps.md has a yaml block")
	src, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	g, err := ParseGrid("docs/sweeps.md", []byte(src))
	require.NoError(t, err)
	assert.Greater(t, g.Len(), 1000)
}

// TestLoadGrid: a missing file, a FIFO (without blocking) and one above
// MaxGridBytes are refused.
func TestLoadGrid(t *testing.T) {
	_, err := LoadGrid("testdata/no-such-grid.yaml")
	require.ErrorIs(t, err, ErrGrid)
	assert.Contains(t, err.Error(), "no-such-grid.yaml")
	fifo := filepath.Join(t.TempDir(), "fifo.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	_, err = LoadGrid(fifo)
	require.ErrorIs(t, err, ErrGrid)
	assert.Equal(t, "sweep: grid: "+fifo+": is a FIFO (named pipe), not a regular file: "+ErrGrid.Error(), err.Error())
	big := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, MaxGridBytes+1), 0o644))
	_, err = LoadGrid(big)
	require.ErrorIs(t, err, ErrGrid)
	assert.Contains(t, err.Error(), big+": more than 1048576 bytes; a grid file is at most 1 MiB")
	_, err = ParseGrid("big.yaml", make([]byte, MaxGridBytes+1))
	require.ErrorIs(t, err, ErrGrid)
	assert.Contains(t, err.Error(), "larger than")
}

// FuzzGrid: no input panics the parser, and every error wraps ErrGrid; a
// grid that parses has points with unique hashes, in index order.
func FuzzGrid(f *testing.F) {
	for _, s := range []string{
		gridYAML("  devices: [2, 4]\n  ops: [all_reduce]\n  sizes: [1K, 1M]\n"),
		gridYAML("  devices: [3]\n  ops: [all_gather, reduce_scatter]\n  algos: [ring, mesh, auto]\n  sizes: {min: 1K, max: 1M, factor: 4}\n"),
		"axes:\n  systems: [trn2-48xl]\n  ops: [alltoall]\n  algos: [mesh]\n  sizes: {min: 0, max: 64K, step: 16K}\n",
		"arch: mariana\nswitch: v1\nmode: functional\nseed: 7\nendpoints: ideal\naxes:\n  devices: [2]\n  ops: [permute]\n  link_bw: [50GB/s]\n  link_latency: [500, 1us]\n  models: [free]\n  ranks_per_device: [2]\n  dtypes: [bf16]\n  sizes: [64]\n",
		"arch: cayman\nwhat_if: true\naxes:\n  devices: [24]\n  topologies: [ring, chain, star]\n  ops: [all_reduce]\n  sizes: [4K]\noutputs:\n  plots: false\n",
		"axes:\n  systems: [trn2-48xl]\n  nodes: [1, 2]\n  ops: [all_reduce]\n  algos: [auto, hier]\n  sizes: [64K]\nefa:\n  network: fat-tree\n  oversubscription: 2\n  bandwidth: 400Gbps\n  latency_ns: 20000\n  leaf_ports: 8\n  spines: 2\n  devices_per_nic: 2\n",
		"arch: sunda\naxes:\n  devices: [2]\n  nodes: [2]\n  ops: [all_gather]\n  sizes: [4K]\nefa:\n  bandwidth: 400\n",
		"axes: {}\n", "axes:\n  sizes: []\n", "- 1\n", "",
		"axes:\n  systems: [trn2-48xl]\n  nodes: [2]\n  ops: [all_reduce]\n  sizes: [64K]\nefa:\noutputs: {plots: ~}\n",
		"arch: cayman\nwhat_if: null\naxes:\n  devices: [2, ~]\n  ops: [all_reduce]\n  sizes: {min: 1K, max: ~, factor: 2}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return // keeps each input's expansion (up to MaxPoints points) fast
		}
		g, err := parseGrid("fuzz.yaml", []byte(src), 1<<16) // a small budget keeps each input fast
		if err != nil {
			if !errors.Is(err, ErrGrid) {
				t.Fatalf("error does not wrap ErrGrid: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for i, p := range g.Points() {
			if p.Index != i || seen[p.Hash] || len(p.Hash) != 16 {
				t.Fatalf("point %d: index %d, hash %q (seen %v)", i, p.Index, p.Hash, seen[p.Hash])
			}
			seen[p.Hash] = true
		}
		if g.Len() == 0 || g.Len() > MaxPoints {
			t.Fatalf("%d points", g.Len())
		}
	})
}

// TestGridSpinesUsed: the efa block's spines or oversubscription, which
// act on the spine links alone, are refused at their key when no point of
// the grid has a spine a write could cross (each rail on one leaf, or one
// leaf for every NIC), as fabric sweep --spines is; one point that has
// spines is enough.
func TestGridSpinesUsed(t *testing.T) {
	const axes = "axes:\n  systems: [trn2-48xl]\n  ops: [all_reduce]\n  sizes: [64K]\n"
	for _, tc := range []struct{ src, want string }{
		{axes + "  nodes: [2]\nefa: {spines: 4}\n", "grid.yaml:6:15: efa.spines: changes nothing here: with 2 nodes of 16 devices the network is rail-optimised and each rail's 2 nodes fit one leaf of 64 ports"},
		{axes + "  nodes: [2, 3]\nefa: {network: fat-tree, oversubscription: 2}\n", "efa.oversubscription: changes nothing here: with 2 nodes of 16 devices one leaf of 64 ports holds all 32 NICs (2 nodes × 16), so the network has no spines"},
	} {
		_, err := ParseGrid("grid.yaml", []byte(tc.src))
		require.ErrorIs(t, err, ErrGrid, tc.src)
		assert.Contains(t, err.Error(), tc.want, tc.src)
		assert.Contains(t, err.Error(), "no other point of the grid has a spine either", tc.src)
	}
	for _, src := range []string{
		axes + "  nodes: [2, 8]\nefa: {spines: 4, leaf_ports: 4}\n",                               // 8 nodes: each rail over two leaves
		axes + "  nodes: [1, 2]\nefa: {network: fat-tree, leaf_ports: 16, oversubscription: 2}\n", // two leaves
	} {
		_, err := ParseGrid("grid.yaml", []byte(src))
		require.NoError(t, err, src)
	}
}

// TestGridWordsAnyCase: a word value is read whatever its case
// (units.Word), as on the command line and in a scenario: mode, endpoints,
// models, topologies, systems, ops, algos, dtypes, channels' nics.
func TestGridWordsAnyCase(t *testing.T) {
	for _, src := range []string{
		"arch: CAYMAN\nmode: FUNCTIONAL\naxes:\n  devices: [2]\n  ops: [ALL_REDUCE]\n  algos: [RING]\n  dtypes: [BF16]\n  sizes: [1K]\n",
		"arch: cayman\nendpoints: IDEAL\naxes:\n  devices: [4]\n  topologies: [RING]\n  models: [FREE]\n  link_bw: [50GB/s]\n  link_latency: [500]\n  ops: [all_reduce]\n  sizes: [1K]\n",
		"axes:\n  systems: [TRN1-32XL]\n  nodes: [2]\n  channels: [NICS]\n  algos: [ring]\n  ops: [all_reduce]\n  sizes: [64K]\n",
	} {
		_, err := ParseGrid("grid.yaml", []byte(src))
		require.NoError(t, err, src)
	}
}
