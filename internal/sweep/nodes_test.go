package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestExistingGridHashes: the nodes axis leaves the hashes of the grids of
// one node as they were: the example grid's hash and its first point's
// (before the nodes axis: 5dabcd65c6d168e0 and b762762fdbfff9d0), so a
// results folder's points keep their names.
func TestExistingGridHashes(t *testing.T) {
	g, err := LoadGrid("../../scenarios/sweeps/example.yaml")
	require.NoError(t, err)
	assert.Equal(t, "5dabcd65c6d168e0", g.Hash())
	assert.Equal(t, "b762762fdbfff9d0", g.Points()[0].Hash)
	for _, p := range g.Points() {
		assert.Equal(t, 1, p.Nodes)
		assert.Nil(t, p.EFA)
		assert.NotContains(t, p.canonical(), "nodes")
	}
	// nodes: [1] is the default: the same grid.
	src := "arch: cayman\naxes:\n  devices: [2]\n  ops: [all_reduce]\n  sizes: [64K]\n"
	one := mustGrid(t, src)
	assert.Equal(t, one.Hash(), mustGrid(t, strings.Replace(src, "axes:\n", "axes:\n  nodes: [1]\n", 1)).Hash())
}

// TestGridNodes: the nodes axis nests after the systems; a point of N
// nodes has its system's devices per node, N × the ranks, the efa block's
// overrides (and they, with the count, in its hash), and the collective
// options of a node's ranks; its estimate counts every node's devices.
func TestGridNodes(t *testing.T) {
	src := "axes:\n  systems: [trn2-48xl]\n  nodes: [1, 2]\n  ops: [all_reduce]\n  algos: [auto]\n  sizes: [64K, 1M]\n"
	efa := "efa:\n  network: fat-tree\n  bandwidth: 400Gbps\n  latency_ns: 20000\n"
	g := mustGrid(t, src+efa)
	pts := g.Points()
	require.Len(t, pts, 4)
	for i, want := range []struct{ nodes, ranks int }{{1, 16}, {1, 16}, {2, 32}, {2, 32}} {
		p, s := pts[i], g.specs[i]
		assert.Equal(t, [3]int{16, want.nodes, want.ranks}, [3]int{p.Devices, p.Nodes, p.Ranks}, "point %d", i)
		assert.Equal(t, 16*want.nodes, s.feat.devices, "point %d: the estimate's devices are every node's", i)
		cfg := s.config(&p, 0)
		assert.Equal(t, [2]int{32 / 2 * want.nodes, want.nodes}, [2]int{cfg.Devices, cfg.Nodes})
		if want.nodes == 1 {
			assert.Nil(t, p.EFA, "one node has no EFA network")
			assert.Zero(t, s.opts.GroupSize)
			continue
		}
		require.NotNil(t, p.EFA)
		assert.Equal(t, "fat-tree", *p.EFA.Network)
		assert.Equal(t, uint64(50e9), *p.EFA.Bandwidth)
		assert.Equal(t, uint64(20e6), *p.EFA.LatencyPS)
		assert.Equal(t, 16, s.opts.GroupSize, "a node's ranks")
		assert.Equal(t, 16, s.opts.Channels, "one flat-ring channel per EFA NIC of a node")
		assert.Zero(t, p.Channels, "auto runs hier across Trn2 nodes: no channels")
		assert.Contains(t, p.canonical(), "channels=\"0\"\n")
		assert.Equal(t, fabric.FatTree, s.params.EFA.Network, "applied")
		assert.Equal(t, uint64(50e9), s.params.EFA.NICBandwidth, "applied")
		assert.Contains(t, p.canonical(), "nodes=\"2\"\n")
	}
	assert.Greater(t, g.specs[2].feat.work(), g.specs[0].feat.work(), "twice the devices cost more")
	// The one-node points are the same without the efa block; the others
	// are not, and differ by any override.
	plain := mustGrid(t, src)
	assert.Equal(t, plain.Points()[0].Hash, pts[0].Hash)
	assert.NotEqual(t, plain.Points()[2].Hash, pts[2].Hash)
	other := mustGrid(t, src+strings.Replace(efa, "20000", "21000", 1))
	assert.NotEqual(t, other.Points()[2].Hash, pts[2].Hash)
	// Fewer NICs (two devices on each): fewer channels, another point.
	pairs := mustGrid(t, src+efa+"  devices_per_nic: 2\n")
	assert.Zero(t, pairs.Points()[2].Channels, "auto's hier: no channels")
	assert.Equal(t, 8, pairs.specs[2].opts.Channels)
	assert.NotEqual(t, pairs.Points()[2].Hash, pts[2].Hash)
	assert.Zero(t, pairs.Points()[0].Channels, "one node: no channels")
	// Seen from a results folder: the manifest's points read back.
	dir := t.TempDir()
	require.NoError(t, g.prepare(dir))
	m, err := readManifest(dir)
	require.NoError(t, err)
	assert.Equal(t, pts, m.Points)
}

// TestGridEFARouting: the efa block's routing (any case) is applied to
// the points of several nodes, is in their hash, their manifest and their
// merged report; left out, a point has the hash it had before the routing
// could be given (no routing line in its encoding).
func TestGridEFARouting(t *testing.T) {
	src := "axes:\n  systems: [trn2-48xl]\n  nodes: [2]\n  ops: [all_reduce]\n  algos: [ring]\n  sizes: [64K]\n"
	efa := "efa:\n  network: fat-tree\n  leaf_ports: 16\n"
	plain := mustGrid(t, src+efa)
	assert.NotContains(t, plain.Points()[0].canonical(), "routing")
	assert.Equal(t, fabric.RouteSpray, plain.specs[0].params.EFA.Routing, "the default")
	for _, r := range []struct {
		word string
		want fabric.EFARouting
	}{{"fixed", fabric.RouteFixed}, {"SPRAY", fabric.RouteSpray}, {"Adaptive", fabric.RouteAdaptive}} {
		g := mustGrid(t, src+efa+"  routing: "+r.word+"\n")
		p := g.Points()[0]
		require.NotNil(t, p.EFA.Routing)
		assert.Equal(t, r.want.String(), *p.EFA.Routing)
		assert.Equal(t, r.want, g.specs[0].params.EFA.Routing, "applied")
		assert.Contains(t, p.canonical(), "efa.routing=\""+r.want.String()+"\"\n")
		assert.NotEqual(t, plain.Points()[0].Hash, p.Hash, "given, even as the default, it is in the hash")
		gr := group{first: p}
		assert.Equal(t, r.want.String(), gr.report(0).Extra["efa_routing"])
		dir := t.TempDir()
		require.NoError(t, g.prepare(dir))
		m, err := readManifest(dir)
		require.NoError(t, err)
		assert.Equal(t, g.Points(), m.Points)
	}
}

// TestGridNodesErrors: a bad node count or efa block is refused by
// fabric.EFASettings.Check (or Apply), positioned at its value.
func TestGridNodesErrors(t *testing.T) {
	base := "axes:\n  systems: [trn2-48xl]\n  ops: [all_reduce]\n  sizes: [1M]\n"
	with := func(nodes, efa string) string {
		s := base
		if nodes != "" {
			s = strings.Replace(s, "axes:\n", "axes:\n  nodes: "+nodes+"\n", 1)
		}
		if efa != "" {
			s += "efa:\n" + efa
		}
		return s
	}
	tests := []struct {
		name, src string
		is        error
		want      []string
	}{
		{"nodes 0", with("[0]", ""), units.ErrRange, []string{"grid.yaml:2:11", "axes.nodes[0]", "0"}},
		{"nodes 0 among others", with("[2, 0]", ""), units.ErrRange, []string{"grid.yaml:2:14", "axes.nodes[1]"}},
		{"nodes negative", with("[-2]", ""), units.ErrRange, []string{"grid.yaml:2:11", "axes.nodes[0]"}},
		{"nodes not a number", with("[two]", ""), units.ErrSyntax, []string{"grid.yaml:2:11", "axes.nodes[0]", "two"}},
		{"nodes twice", with("[2, 2]", ""), ErrGrid, []string{"grid.yaml:2:14", "axes.nodes[1]", "listed twice"}},
		{"nodes past the fabric", with("[2000]", ""), fabric.ErrParams, []string{"grid.yaml:2:11", "axes.nodes[0]: 2000", "more than the fabric's"}},
		{"efa key with the axis left out", with("", "  spines: 2\n"), fabric.ErrParams, []string{"grid.yaml:6:11", "efa.spines", "every point has one node", "left out"}},
		{"efa key with one node", with("[1]", "  network: rail\n"), fabric.ErrParams, []string{"grid.yaml:7:12", "efa.network", "every point has one node", "[1]"}},
		{"bandwidth without a unit", with("[2]", "  bandwidth: 400\n"), units.ErrSyntax, []string{"grid.yaml:7:14", "efa.bandwidth", "400"}},
		{"bandwidth of a bad unit", with("[2]", "  bandwidth: 400Gbs\n"), units.ErrSyntax, []string{"grid.yaml:7:14", "efa.bandwidth", "400Gbs"}},
		{"bandwidth zero", with("[2]", "  bandwidth: 0Gbps\n"), units.ErrRange, []string{"grid.yaml:7:14", "efa.bandwidth"}},
		{"network unknown", with("[2]", "  network: torus\n"), fabric.ErrUnknownEFANetwork, []string{"grid.yaml:7:12", "efa.network", `"torus"`}},
		{"routing unknown", with("[2]", "  routing: ecmp\n"), fabric.ErrUnknownEFARouting, []string{"grid.yaml:7:12", "efa.routing", `"ecmp"`}},
		{"routing where no spine is crossed", with("[2]", "  routing: fixed\n"), fabric.ErrParams, []string{"grid.yaml:7:12", "efa.routing", "changes nothing here"}},
		{"oversubscription below 1", with("[2]", "  oversubscription: 0.5\n"), units.ErrRange, []string{"grid.yaml:7:21", "efa.oversubscription", "0.5"}},
		{"leaf_ports 0", with("[2]", "  leaf_ports: 0\n"), units.ErrRange, []string{"grid.yaml:7:15", "efa.leaf_ports"}},
		{"spines too many", with("[2]", "  spines: 100000\n"), units.ErrRange, []string{"grid.yaml:7:11", "efa.spines"}},
		{"devices_per_nic not dividing", with("[2]", "  devices_per_nic: 3\n"), fabric.ErrParams, []string{"grid.yaml:7:20", "efa.devices_per_nic: 3", "does not divide the 16 devices"}},
		{"latency below the path", with("[2]", "  latency_ns: 1\n"), fabric.ErrParams, []string{"grid.yaml:7:15", "efa.latency_ns: 1: below", "below"}},
		{"latency negative", with("[2]", "  latency_ns: -1\n"), units.ErrRange, []string{"grid.yaml:7:15", "efa.latency_ns"}},
		{"latency not a number", with("[2]", "  latency_ns: 5us\n"), units.ErrSyntax, []string{"grid.yaml:7:15", "efa.latency_ns", "5us"}},
		{"hier on one node", strings.Replace(with("[1, 2]", ""), "  ops:", "  algos: [hier]\n  ops:", 1), ErrGrid, []string{"grid.yaml:4:11", "axes.algos[0]", "hier runs across nodes", "trn2-48xl is one node", "axes.nodes"}},
		{"unknown efa key", with("[2]", "  nics: 2\n"), strictyaml.ErrStrict, []string{"grid.yaml:7:3", `unknown key "nics"`}},
		{"efa key a list", with("[2]", "  spines: [2]\n"), strictyaml.ErrStrict, []string{"grid.yaml:7:11", "efa.spines", "expected a single value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGrid("grid.yaml", []byte(tc.src))
			require.Error(t, err, "%v", g)
			assert.ErrorIs(t, err, ErrGrid)
			assert.ErrorIs(t, err, tc.is)
			assert.True(t, strings.HasPrefix(err.Error(), "grid.yaml:"), err.Error())
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			var se *fabric.EFASettingError
			if errors.Is(tc.is, fabric.ErrParams) {
				assert.True(t, errors.As(err, &se), "the error is fabric.EFASettings': %v", err)
			}
		})
	}
}

// TestNodesExampleGrid: scenarios/sweeps/nodes.yaml (docs/sweeps.md) is a
// valid grid of one and two nodes: 4 points of one node, and of two nodes
// auto and ring each with one channel and with 16 (one per NIC).
func TestNodesExampleGrid(t *testing.T) {
	g, err := LoadGrid("../../scenarios/sweeps/nodes.yaml")
	require.NoError(t, err)
	require.Equal(t, 10, g.Len())
	assert.Equal(t, [2]int{1, 2}, [2]int{g.Points()[0].Nodes, g.Points()[9].Nodes})
	var got []string
	for _, p := range g.Points() {
		got = append(got, fmt.Sprintf("%d/%s/%d", p.Nodes, p.Algo, p.Channels))
	}
	// Across the nodes auto runs hier at both sizes: once, with no channels.
	assert.Equal(t, []string{"1/auto/0", "1/auto/0", "1/ring/0", "1/ring/0", "2/auto/0", "2/auto/0", "2/ring/1", "2/ring/1", "2/ring/16", "2/ring/16"}, got)
}

// TestFormatOneFolder: a results folder written before the nodes axis
// (format 1: no nodes fields) goes on being used: its points, of one node,
// have the same hashes, so a run skips every point done and merge writes
// the outputs a new folder gets; a format-1 file holding a nodes field is
// refused (it was never written).
func TestFormatOneFolder(t *testing.T) {
	g := mustGrid(t, "arch: cayman\naxes:\n  devices: [2, 4]\n  ops: [all_reduce]\n  sizes: [1K, 64K]\noutputs:\n  plots: false\n")
	newDir, oldDir := t.TempDir(), t.TempDir()
	run(t, g, newDir, All, 1)
	merge(t, newDir)
	// The folder format 1 wrote: the same files without the nodes fields.
	for rel, data := range tree(t, newDir, HostDir, MergedDir) {
		old := strings.NewReplacer(`"format":2`, `"format":1`, `"format": 2`, `"format": 1`, `"nodes":1,`, "", "  \"nodes\": 1,\n", "").Replace(data)
		require.NotContains(t, old, `"nodes"`, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(oldDir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(oldDir, rel), []byte(old), 0o644))
	}
	st := run(t, g, oldDir, All, 1)
	assert.Equal(t, RunStats{Points: 4, Skipped: 4}, st)
	merge(t, oldDir)
	want, got := tree(t, filepath.Join(newDir, MergedDir)), tree(t, filepath.Join(oldDir, MergedDir))
	assert.Equal(t, want, got)

	// A format-1 manifest with a nodes field is refused.
	m := filepath.Join(oldDir, ManifestName)
	data, err := os.ReadFile(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(m, []byte(strings.Replace(string(data), `"devices":2,`, `"devices":2,"nodes":1,`, 1)), 0o644))
	_, err = Run(g, RunOptions{Dir: oldDir, Shard: All, Jobs: 1})
	require.ErrorIs(t, err, ErrFolder)
	assert.Contains(t, err.Error(), "format 1 has no nodes or efa fields")
}

// TestMergedFlatRingNote: a merged group of several nodes with a ring row
// names the flat ring's channels, as fabric sweep's report does — a grid
// runs one per EFA NIC of a node (Point.Channels), so never the note of
// fewer (cluster.FlatRingNote); a group of one node, or of no ring row,
// names neither.
func TestMergedFlatRingNote(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int
		algos []string
		want  bool
	}{
		{"ring across nodes", 2, []string{"hier", "ring"}, true},
		{"hier across nodes", 2, []string{"hier", "hier"}, false},
		{"ring in one node", 1, []string{"ring"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr := group{first: Point{Op: "all_reduce", Ranks: 32, Nodes: tc.nodes, Dtype: "fp32"}}
			if tc.nodes > 1 {
				gr.first.Channels = 16
			}
			for i, a := range tc.algos {
				p := gr.first
				p.Size = int64(1024 << i)
				gr.results = append(gr.results, PointResult{Point: p, Status: StatusOK, Row: &Row{Count: 256, TimeUS: 1, Algorithm: a}})
			}
			rep := gr.report(0)
			require.Len(t, rep.Rows, len(tc.algos))
			assert.NotContains(t, rep.Extra, cluster.FlatRingKey)
			if tc.want {
				assert.Equal(t, 16, rep.Extra[cluster.ChannelsKey])
			} else {
				assert.NotContains(t, rep.Extra, cluster.ChannelsKey)
			}
		})
	}
}

// TestMergedEFAKeys: a merged group of several nodes names the efa
// block's settings as fabric sweep's report names its flags, each with its
// unit where it has one: the latency efa_latency_ps (it was efa_latency,
// a number of ps with no word of the unit), "default" when left out.
func TestMergedEFAKeys(t *testing.T) {
	lat, bw := uint64(20e6), uint64(25e9)
	for _, tc := range []struct {
		name string
		efa  *EFA
		want map[string]any
	}{
		{"given", &EFA{LatencyPS: &lat, Bandwidth: &bw}, map[string]any{"efa_latency_ps": "20000000", "efa_bandwidth_Bps": "25000000000"}},
		{"left out", nil, map[string]any{"efa_latency_ps": "default", "efa_bandwidth_Bps": "default"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr := group{first: Point{Op: "all_reduce", Ranks: 32, Nodes: 2, Dtype: "fp32", EFA: tc.efa}}
			rep := gr.report(0)
			for k, v := range tc.want {
				assert.Equal(t, v, rep.Extra[k], k)
			}
			assert.NotContains(t, rep.Extra, "efa_latency")
		})
	}
}

// TestGridChannels: the channels axis nests inside the algorithms: points
// of several nodes with algo ring or auto run each value (nics, the
// default, resolved to a node's EFA NICs), the others once with none; the
// channels are in a point's hash, its group and its merged report, which
// carries the flat_ring note when they are fewer than the NICs.
func TestGridChannels(t *testing.T) {
	src := "axes:\n  systems: [trn2-48xl]\n  nodes: [1, 2]\n  ops: [all_reduce]\n  algos: [hier, ring]\n  channels: [1, nics]\n  sizes: [1M]\n"
	g, err := ParseGrid("grid.yaml", []byte(strings.Replace(src, "hier, ", "", 1)))
	require.NoError(t, err)
	var got []string
	for _, p := range g.Points() {
		got = append(got, fmt.Sprintf("%d/%s/%d", p.Nodes, p.Algo, p.Channels))
	}
	assert.Equal(t, []string{"1/ring/0", "2/ring/1", "2/ring/16"}, got, "one node: the ring once, with no channels")
	g = mustGrid(t, strings.Replace(src, "nodes: [1, 2]", "nodes: [2]", 1))
	got = got[:0]
	for i, p := range g.Points() {
		got = append(got, fmt.Sprintf("%s/%d/%d", p.Algo, p.Channels, g.specs[i].opts.Channels))
	}
	assert.Equal(t, []string{"hier/0/16", "ring/1/1", "ring/16/16"}, got, "hier once; the ring per value")
	pts := g.Points()
	assert.NotEqual(t, pts[1].Hash, pts[2].Hash)
	assert.Contains(t, pts[1].canonical(), "channels=\"1\"\n")
	// The default axis is [nics]: the same points as a grid that names it.
	def := mustGrid(t, strings.Replace(strings.Replace(src, "nodes: [1, 2]", "nodes: [2]", 1), "  channels: [1, nics]\n", "", 1))
	assert.Equal(t, pts[2].Hash, def.Points()[1].Hash)
	// Merged, each channel count is a group; fewer than the NICs get the note.
	for _, p := range pts[1:] {
		gr := group{first: p}
		gr.results = append(gr.results, PointResult{Point: p, Status: StatusOK, Row: &Row{Count: 256, TimeUS: 1, Algorithm: "ring"}})
		rep := gr.report(0)
		assert.Equal(t, p.Channels, rep.Extra[cluster.ChannelsKey])
		if p.Channels < 16 {
			assert.Equal(t, cluster.FlatRingNote, rep.Extra[cluster.FlatRingKey])
		} else {
			assert.NotContains(t, rep.Extra, cluster.FlatRingKey)
		}
	}
	// Two devices a NIC: nics is 8.
	pairs := mustGrid(t, strings.Replace(src, "nodes: [1, 2]", "nodes: [2]", 1)+"efa:\n  devices_per_nic: 2\n")
	assert.Equal(t, 8, pairs.Points()[2].Channels)
	assert.Equal(t, 16, pairs.Points()[2].Devices)
}

// TestGridChannelsErrors: a bad channels value, one that does not divide
// a node's ranks, two values of one count, and an axis no point uses are
// refused at their position.
func TestGridChannelsErrors(t *testing.T) {
	with := func(nodes, algos, channels string) string {
		return "axes:\n  systems: [trn2-48xl]\n  nodes: " + nodes + "\n  ops: [all_reduce]\n  algos: " + algos + "\n  channels: " + channels + "\n  sizes: [1M]\n"
	}
	for _, tc := range []struct {
		name, src string
		is        error
		want      []string
	}{
		{"zero", with("[2]", "[ring]", "[0]"), units.ErrRange, []string{"grid.yaml:6:14", "axes.channels[0]", "or nics"}},
		{"too many", with("[2]", "[ring]", "[257]"), units.ErrRange, []string{"grid.yaml:6:14", "axes.channels[0]"}},
		{"a word", with("[2]", "[ring]", "[nic]"), units.ErrSyntax, []string{"grid.yaml:6:14", "axes.channels[0]", `"nic"`}},
		{"twice", with("[2]", "[ring]", "[4, 4]"), ErrGrid, []string{"grid.yaml:6:17", "axes.channels[1]", "listed twice"}},
		{"nics and its count", with("[2]", "[ring]", "[16, nics]"), ErrGrid, []string{"grid.yaml:6:18", "axes.channels[1]", "16 channels twice on 2 nodes of trn2-48xl", "16 EFA NICs"}},
		{"not dividing", with("[2]", "[auto]", "[3]"), ErrGrid, []string{"grid.yaml:6:14", "axes.channels[0]", "3 channels do not divide a node's 16 ranks: each channel enters a node at its own local rank (2 nodes of trn2-48xl)"}},
		{"one node", with("[1]", "[ring]", "[4]"), ErrGrid, []string{"grid.yaml:6:13", "axes.channels", "the channels apply to none"}},
		{"hier only", with("[2]", "[hier]", "[4]"), ErrGrid, []string{"grid.yaml:6:13", "axes.channels", "apply to none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGrid("grid.yaml", []byte(tc.src))
			require.Error(t, err, "%v", g)
			assert.ErrorIs(t, err, ErrGrid)
			assert.ErrorIs(t, err, tc.is)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestGridRingOrder: a point whose rings run along the links in another
// order than rank order (a torus ring, kangaring or hier, a permute, auto)
// records it (ring_order), in its hash too, and runs in it; a point that
// ignores it (mesh, rdh) or whose ring order is rank order (a ring
// topology, Trn3's switches) has none, and keeps the hash it had before
// the rings ran along the links.
func TestGridRingOrder(t *testing.T) {
	g := mustGrid(t, "axes:\n  systems: [trn2-48xl, trn3-gen1]\n  ops: [all_reduce, permute]\n  algos: [ring, mesh, auto]\n  sizes: [64K]\n")
	seen := 0
	for i, p := range g.Points() {
		ignores := p.Op == "all_reduce" && p.Algo == "mesh"
		if p.System == "trn3-gen1" || ignores {
			assert.Empty(t, p.RingOrder, "point %d: %s %s on %s", i, p.Op, p.Algo, p.System)
			assert.NotContains(t, p.canonical(), "ring_order")
			if p.System == "trn3-gen1" {
				assert.Nil(t, g.specs[i].opts.RingOrder, "point %d: rank order", i)
			}
			continue
		}
		seen++
		assert.Equal(t, "0-3 7-4 8-11 15-12", p.RingOrder, "point %d: %s %s", i, p.Op, p.Algo)
		assert.Contains(t, p.canonical(), "ring_order=\"0-3 7-4 8-11 15-12\"\n")
		assert.Equal(t, []int{0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12}, g.specs[i].opts.RingOrder, "point %d runs in it", i)
		q := p
		q.RingOrder = ""
		assert.NotEqual(t, p.Hash, hashHex(q.canonical()), "point %d: the order is in the hash", i)
	}
	assert.Equal(t, 5, seen)
}

// TestGridRingOrderFollowsTopology: a point's ring order is its system's
// own topology's — a grid's `topologies` axis is not the auto topology —
// so a ring of 16 Trn2 devices runs in rank order, along its links, and
// the torus of the same devices in its boustrophedon; the order a point
// runs in is the one its cluster, built as the run builds it, gives.
func TestGridRingOrderFollowsTopology(t *testing.T) {
	g := mustGrid(t, "arch: cayman\naxes:\n  devices: [16]\n  topologies: [ring, torus2d]\n  ops: [permute]\n  sizes: [64K]\n")
	want := map[string][]int{"ring": nil, "torus2d": {0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12}}
	require.Len(t, g.Points(), 2)
	for i, p := range g.Points() {
		assert.Equal(t, want[p.Topology], g.specs[i].opts.RingOrder, "point %d on %s", i, p.Topology)
		built := g.specs[i].config(&g.points[i], 0).CollectiveOptions(enc.Options{Channels: p.Channels})
		assert.Equal(t, built.RingOrder, g.specs[i].opts.RingOrder, "point %d: the cluster it runs on", i)
	}
	assert.Empty(t, g.Points()[0].RingOrder)
}
