package cluster_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// efaCluster builds nodes copies of a system of the catalogue joined by
// EFA (bring-up refuses device indexes from 64 on: at most 64 devices).
func efaCluster(t *testing.T, name string, nodes int, timingOnly bool, buf uint64) (*cluster.Cluster, cluster.Config) {
	t.Helper()
	cfg := systemConfig(t, name, nodes, 1)
	cfg.TimingOnly, cfg.BufferBytes = timingOnly, buf
	c, err := cluster.New(cfg)
	require.NoError(t, err)
	require.NotNil(t, c.System.Topology().Scale, "a system of nodes")
	require.Equal(t, c.System.Topology().Scale.NICs, cfg.NodeNICs(), "the NICs the network built, per node")
	return c, cfg
}

// TestEFAAllReduce (issue 16 acceptance): an all-reduce of random data on
// two trn2.48xlarge instances joined by EFA (32 devices) equals the CPU
// reference, hierarchical (intra-node reduce-scatter, inter-node
// all-reduce over the rails, intra-node all-gather) and as a flat ring over
// every device (one ring, and channels of it: 16, one per NIC, and fewer),
// with nothing dropped; Auto picks Hier there. All-gather and
// reduce-scatter across the nodes (hierarchical, and channelled rings)
// check too.
func TestEFAAllReduce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 32-device system")
	}
	c, cfg := efaCluster(t, "trn2-48xl", 2, false, 1<<20)
	opt := cfg.CollectiveOptions(enc.Options{})
	require.Equal(t, 16, opt.GroupSize, "a node's ranks")
	for _, tc := range []struct {
		op       enc.Op
		algo     enc.Algo
		channels int
		want     enc.Algo
	}{
		{enc.AllReduce, enc.Hier, 0, enc.Hier},
		{enc.AllReduce, enc.Ring, 0, enc.Ring},
		{enc.AllReduce, enc.Ring, 16, enc.Ring}, // the flat ring of one channel per NIC
		{enc.AllGather, enc.Ring, 4, enc.Ring},
		{enc.ReduceScatter, enc.Ring, 8, enc.Ring},
		{enc.AllReduce, enc.Auto, 0, enc.Hier},
		{enc.AllGather, enc.Auto, 0, enc.Hier},
		{enc.ReduceScatter, enc.Auto, 0, enc.Hier},
	} {
		t.Run(fmt.Sprintf("%s-%s-c%d", tc.op, tc.algo, tc.channels), func(t *testing.T) {
			opt := opt
			opt.Channels = tc.channels
			s, err := enc.Build(tc.op, tc.algo, c.Ranks(), 32*4*1024, 4, opt)
			require.NoError(t, err)
			require.Equal(t, tc.want, s.Algo)
			res, err := c.Check(s, enc.Float32, 11, opt)
			require.NoError(t, err)
			assert.Positive(t, res.TimePS)
		})
	}
	st := c.System.Stats()
	assert.Zero(t, st.Dropped+st.LandErrors, st.LastError)
	// The writes between the nodes crossed the EFA links.
	topo := c.System.Topology()
	var efa uint64
	for id, l := range topo.Links {
		if l.Group == "efa-leaf" {
			ls, err := c.System.Link(id)
			require.NoError(t, err)
			efa += ls.Bytes
		}
	}
	assert.Positive(t, efa, "bytes over the NIC-leaf links")
}

// TestEFAAutoChoice: the automatic choice across nodes follows §5.1 as
// documented — Hier for groups of several ranks per node on Trn2 at every
// size; on Trn1 Hier below enc.DefaultFlatRingMin and a flat ring from it
// on; one node keeps the one-node choice — and a sweep's report says so in
// its algorithm column.
func TestEFAAutoChoice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		g     hwarch.Generation
		nodes int
		size  int64
		want  enc.Algo
	}{
		{"trn2-2nodes-small", hwarch.Cayman, 2, 4096, enc.Hier},
		{"trn2-2nodes-large", hwarch.Cayman, 2, 1 << 30, enc.Hier},
		{"trn1-2nodes-below", hwarch.Sunda, 2, enc.DefaultFlatRingMin - 32*4, enc.Hier},
		{"trn1-2nodes-at", hwarch.Sunda, 2, enc.DefaultFlatRingMin, enc.Ring},
		{"trn2-1node", hwarch.Cayman, 1, 4096, enc.Mesh},
		{"trn1-1node-large", hwarch.Sunda, 1, 1 << 30, enc.Ring},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cluster.Config{Generation: tc.g, Devices: 16 * tc.nodes, Nodes: tc.nodes}
			opt := cfg.CollectiveOptions(enc.Options{})
			got := cluster.Largest(enc.AllReduce, enc.Auto, cfg.Devices, []int64{tc.size}, opt)
			require.Len(t, got, 1)
			assert.Equal(t, tc.want, got[0].Algo)
			// The flat ring's channels: one per EFA NIC of a node (8 on
			// trn1.32xlarge, 2 devices a NIC; 16 on trn2.48xlarge).
			nics := map[hwarch.Generation]int{hwarch.Sunda: 8, hwarch.Cayman: 16}[tc.g]
			if tc.nodes == 1 {
				nics = 0
			}
			assert.Equal(t, nics, cfg.NodeNICs())
			assert.Equal(t, nics, opt.Channels)
			assert.Equal(t, 3, cfg.CollectiveOptions(enc.Options{Channels: 3}).Channels, "an explicit count stays")
		})
	}
	if testing.Short() {
		return
	}
	// A timing sweep on 2 × trn1.32xlarge: the report's algorithm column.
	spec, err := fabric.LookupSystem("trn1-32xl")
	require.NoError(t, err)
	tables, err := arch.For(spec.Generation, arch.Options{Switch: switchOf(spec.Generation)})
	require.NoError(t, err)
	p := cluster.DefaultParams(spec.Generation, tables)
	p.Model = fabric.Free
	sweep := func(nodes int, algo enc.Algo, sizes ...int64) *nccom.Report {
		return timingSweep(t, spec, nodes, &p, cluster.Sweep{Op: enc.AllReduce, Algo: algo, Dtype: enc.Float32}, sizes...)
	}
	rep := sweep(2, enc.Auto, 1<<20, enc.DefaultFlatRingMin)
	require.Len(t, rep.Rows, 2)
	assert.Equal(t, "hier", rep.Rows[0].Algorithm)
	assert.Equal(t, "ring", rep.Rows[1].Algorithm)
	assert.Equal(t, 2, rep.Extra["nodes"])
	assert.Equal(t, "rail", rep.Extra["efa_network"])
	// A ring across the nodes runs one channel per NIC, as the runtime's,
	// and the report names them; fewer (--channels) and the report says
	// what its time is worth; a report of no such ring (hierarchical, or a
	// ring inside one node) says nothing of either.
	assert.Equal(t, 8, rep.Extra[cluster.ChannelsKey])
	assert.NotContains(t, rep.Extra, cluster.FlatRingKey)
	// The flat ring auto chose is noted as auto's, at a size of the
	// model's choosing; one asked for (--algo ring) is not.
	assert.Equal(t, cluster.AutoFlatRingNote, rep.Extra[cluster.AutoFlatRingKey])
	assert.Contains(t, cluster.AutoFlatRingNote, "64 MiB")
	one := timingSweep(t, spec, 2, &p, cluster.Sweep{Op: enc.AllReduce, Algo: enc.Ring, Dtype: enc.Float32, Options: enc.Options{Channels: 1}}, 1<<20)
	assert.Equal(t, 1, one.Extra[cluster.ChannelsKey])
	assert.Equal(t, cluster.FlatRingNote, one.Extra[cluster.FlatRingKey])
	assert.NotContains(t, one.Extra, cluster.AutoFlatRingKey)
	for _, rep := range []*nccom.Report{sweep(2, enc.Auto, 1<<20), sweep(1, enc.Ring, 1<<20)} {
		assert.NotContains(t, rep.Extra, cluster.FlatRingKey)
		assert.NotContains(t, rep.Extra, cluster.ChannelsKey)
		assert.NotContains(t, rep.Extra, cluster.AutoFlatRingKey)
	}
}

// TestEFAAcrossSpines: a hierarchical all-reduce and all-gather of random
// data over 4 nodes of a 4-device Trn2 ring, two ranks per device, on a
// fat tree of 4-port leaves (each node a leaf, the nodes joined through the
// spines, oversubscribed 2:1) equal the CPU reference, a node's 8 ranks its
// group.
func TestEFAAcrossSpines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 16-device system")
	}
	g := hwarch.Cayman
	tables := tablesOf(t, g)
	p := cluster.DefaultParams(g, tables)
	p.EFA.Network, p.EFA.LeafPorts, p.EFA.Oversubscription = fabric.FatTree, 4, 2
	cfg := cluster.Config{Generation: g, Devices: 16, Nodes: 4, Switch: switchOf(g), Kind: fabric.KindRing, Params: &p,
		RanksPerDevice: 2, BufferBytes: 1 << 20}
	c, err := cluster.New(cfg)
	require.NoError(t, err)
	so := c.System.Topology().Scale
	require.Equal(t, 4, so.Leaves)
	require.Equal(t, 2, so.Spines)
	opt := cfg.CollectiveOptions(enc.Options{})
	require.Equal(t, 8, opt.GroupSize)
	for _, op := range []enc.Op{enc.AllReduce, enc.AllGather} {
		s, err := enc.Build(op, enc.Auto, c.Ranks(), 32*4*256, 4, opt)
		require.NoError(t, err)
		require.Equal(t, enc.Hier, s.Algo)
		_, err = c.Check(s, enc.Float32, 5, opt)
		require.NoError(t, err, "%s", op)
	}
	var spine uint64
	for id, l := range c.System.Topology().Links {
		if l.Group == "efa-spine" {
			ls, err := c.System.Link(id)
			require.NoError(t, err)
			spine += ls.Bytes
		}
	}
	assert.Positive(t, spine, "the writes between nodes crossed the spines")
}

// TestEFAFlatRingChannels: on two trn2.48xlarge (aware model, timing
// only), a 256 MiB flat-ring all-reduce of one channel is held to the
// NICs it crosses between the nodes; 16 channels, one per NIC, cross
// through all of them and finish in well under half the time, the
// bottleneck moving off the NICs. The report says which it ran: the
// channel count, or the note on what one ring's time is worth.
func TestEFAFlatRingChannels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 32-device system")
	}
	spec, err := fabric.LookupSystem("trn2-48xl")
	require.NoError(t, err)
	run := func(channels int) *nccom.Report {
		return timingSweep(t, spec, 2, nil, cluster.Sweep{Op: enc.AllReduce, Algo: enc.Ring, Dtype: enc.Float32, Options: enc.Options{Channels: channels}}, 256<<20)
	}
	one, all := run(1), run(16)
	require.Len(t, one.Rows, 1)
	require.Len(t, all.Rows, 1)
	t.Logf("256 MiB flat ring on 2 × trn2.48xlarge: 1 channel %.0f µs, 16 channels %.0f µs", one.Rows[0].TimeUS, all.Rows[0].TimeUS)
	assert.Less(t, all.Rows[0].TimeUS, one.Rows[0].TimeUS/2, "16 channels use the 16 NICs")
	bottleneck := func(rep *nccom.Report) string {
		u, ok := rep.Extra[cluster.LinkUsageKey].(cluster.LinkUsage)
		require.True(t, ok)
		return u[0].Bottleneck
	}
	assert.Equal(t, "dev-nic", bottleneck(one))
	assert.NotEqual(t, "dev-nic", bottleneck(all))
	assert.Equal(t, cluster.FlatRingNote, one.Extra[cluster.FlatRingKey])
	assert.NotContains(t, all.Extra, cluster.FlatRingKey)
	assert.Equal(t, 16, all.Extra[cluster.ChannelsKey])
}

// timingSweep runs sw timing-only over sizes on nodes copies of the
// system spec joined by EFA (params nil: the generation's) and returns
// its report.
func timingSweep(t *testing.T, spec fabric.SystemSpec, nodes int, params *fabric.Params, sw cluster.Sweep, sizes ...int64) *nccom.Report {
	t.Helper()
	res, err := cluster.RunSweeps(cluster.SweepSet{
		Config:  cluster.Config{Generation: spec.Generation, Nodes: nodes, Switch: switchOf(spec.Generation), Params: params, TimingOnly: true},
		Systems: []cluster.SweepSystem{{Devices: spec.Devices * nodes, Kind: spec.Kind, Sizes: sizes}},
		Sweep:   sw,
	})
	require.NoError(t, err)
	return res.Reports[0]
}

// trn2NodesUS is the time in µs of op of size bytes on nodes nodes of
// perNode Trn2 devices (a ring each), timing-only, over the EFA network
// that mut makes of the default one.
func trn2NodesUS(t *testing.T, nodes, perNode int, size int64, op enc.Op, mut func(*fabric.EFAParams)) float64 {
	t.Helper()
	g := hwarch.Cayman
	p := cluster.DefaultParams(g, tablesOf(t, g))
	mut(&p.EFA)
	return sweepTimeUS(t, cluster.Config{Generation: g, Nodes: nodes, Switch: switchOf(g), Params: &p, TimingOnly: true},
		cluster.SweepSystem{Devices: perNode * nodes, Kind: fabric.KindRing, Sizes: []int64{size}}, op)
}

// TestEFAMoreSpinesNeverSlower: an all-to-all across the nodes of a
// network of several leaves takes no longer with more spines under fixed
// routing, for spine counts up to the leaf's ports that divide them: each
// spine link then carries its share of the leaf's traffic at its share of
// the bandwidth; sprayed (the default), at most 1 % longer — the NICs'
// turns meet on a spine now and then, and each slower spine link takes
// longer to cross (8 nodes of 4: 682.01 µs with 2 spines, 685.16 with 4);
// adaptive, at most 1 % longer too (on the fat tree 725.05 µs with 2 and
// 4 spines against 721.82 with one).
// With the spine chosen by destination device index mod Spines, a rail's
// traffic all went through one spine, whose link has 1/Spines of the
// leaf's uplink bandwidth: rail-optimised, 4 nodes of 4 Trn2 devices on
// leaves of 2 ports, 16 MiB took 831.5, 900.0 and 1570.4 µs with 1, 2 and
// 4 spines (now 831.5, 831.5; 4 spines, more than the ports, 995.6).
func TestEFAMoreSpinesNeverSlower(t *testing.T) {
	if testing.Short() {
		t.Skip("builds systems of up to 32 devices")
	}
	for _, c := range []struct {
		name   string
		net    fabric.EFANetwork
		nodes  int
		ports  int
		spines []int
	}{
		{"rail-4-nodes-ports-2", fabric.RailOptimised, 4, 2, []int{1, 2}},
		{"rail-8-nodes-ports-4", fabric.RailOptimised, 8, 4, []int{1, 2, 4}},
		{"fat-tree-8-nodes-ports-4", fabric.FatTree, 8, 4, []int{1, 2, 4}},
	} {
		for _, r := range []fabric.EFARouting{fabric.RouteSpray, fabric.RouteFixed, fabric.RouteAdaptive} {
			t.Run(c.name+"-"+r.String(), func(t *testing.T) {
				moreSpinesNeverSlower(t, c.net, c.nodes, c.ports, c.spines, r)
			})
		}
	}
}

// moreSpinesNeverSlower runs TestEFAMoreSpinesNeverSlower's all-to-all of
// 16 MiB on nodes nodes of 4 devices, leaves of ports ports, with each of
// the spine counts in turn under routing r, and holds each time to the one
// before (within 1 % sprayed or adaptive).
func moreSpinesNeverSlower(t *testing.T, net fabric.EFANetwork, nodes, ports int, spines []int, r fabric.EFARouting) {
	t.Helper()
	var prev float64
	for i, s := range spines {
		got := trn2NodesUS(t, nodes, 4, 16<<20, enc.AllToAll, func(e *fabric.EFAParams) {
			e.Network, e.LeafPorts, e.Spines, e.Routing = net, ports, s, r
		})
		t.Logf("%d spines: %.2f µs", s, got)
		if i > 0 && r == fabric.RouteFixed {
			assert.LessOrEqual(t, got, prev, "%d spines against %d", s, spines[i-1])
		}
		if i > 0 && r != fabric.RouteFixed {
			assert.LessOrEqual(t, got, 1.01*prev, "%d spines against %d", s, spines[i-1])
		}
		prev = got
	}
}

// TestEFASprayedPermute: a permute whose flows each cross the spines
// alone (8 nodes of 2 Trn2 devices on a fat tree of 4 ports a leaf,
// oversubscription 4, 4 MiB) keeps its one-spine time with 2 and 4 spines
// when the writes are sprayed (the default) — within the 3 % a write takes
// longer to cross a slower spine link — while fixed routing puts each flow
// on one spine link of 1/spines of the uplink: 421.35 and 757.38 µs
// against 254.48 (docs/fabric.md §EFA, "Spine choice").
func TestEFASprayedPermute(t *testing.T) {
	if testing.Short() {
		t.Skip("builds systems of 16 devices")
	}
	run := func(spines int, r fabric.EFARouting) float64 {
		return trn2NodesUS(t, 8, 2, 4<<20, enc.Permute, func(e *fabric.EFAParams) {
			e.Network, e.LeafPorts, e.Oversubscription, e.Spines, e.Routing = fabric.FatTree, 4, 4, spines, r
		})
	}
	one := run(1, fabric.RouteSpray)
	assert.Equal(t, one, run(1, fabric.RouteFixed), "one spine: nothing to choose")
	for _, spines := range []int{2, 4} {
		sprayed, fixed := run(spines, fabric.RouteSpray), run(spines, fabric.RouteFixed)
		t.Logf("%d spines: sprayed %.2f µs, fixed %.2f µs, one spine %.2f µs", spines, sprayed, fixed, one)
		assert.InEpsilon(t, one, sprayed, 0.03, "%d spines sprayed", spines)
		assert.Greater(t, fixed, 1.5*one, "%d spines fixed: one flow a spine link of 1/%d of the uplink", spines, spines)
	}
}

// TestEFAAdaptiveOversubscribed: an all-to-all of 16 MiB on 8 nodes of 4
// Trn2 devices, rail-optimised, leaves of 4 ports, oversubscription 2 —
// the spine links the busiest class. Sprayed, more spines make it slower
// (the NICs' turns meet on one spine link now and then: 823.23, 863.10
// and 849.13 µs with 2, 3 and 4 spines against 801.10 with one); adaptive
// routing, each write to the least booked spine link, keeps within 0.5 %
// of the one-spine time (802.79, 804.49, 802.79; docs/fabric.md §EFA,
// "Spine choice").
func TestEFAAdaptiveOversubscribed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds systems of 32 devices")
	}
	run := func(spines int, r fabric.EFARouting) float64 {
		return trn2NodesUS(t, 8, 4, 16<<20, enc.AllToAll, func(e *fabric.EFAParams) {
			e.LeafPorts, e.Oversubscription, e.Spines, e.Routing = 4, 2, spines, r
		})
	}
	one := run(1, fabric.RouteAdaptive)
	assert.Equal(t, run(1, fabric.RouteSpray), one, "one spine: nothing to choose")
	for _, spines := range []int{2, 3, 4} {
		adaptive, sprayed := run(spines, fabric.RouteAdaptive), run(spines, fabric.RouteSpray)
		t.Logf("%d spines: adaptive %.2f µs, sprayed %.2f µs, one spine %.2f µs", spines, adaptive, sprayed, one)
		assert.InEpsilon(t, one, adaptive, 0.005, "%d spines adaptive", spines)
		assert.Greater(t, sprayed, 1.02*one, "%d spines sprayed", spines)
	}
}

// TestEFATimeNonDecreasingInLatency: a collective across nodes takes no
// less time when the EFA hop's latency grows. 4 nodes of 4 Trn2 devices,
// 16 MiB hierarchical all-reduce, the minimal message's latency T from 5
// to 12 µs by 100 ns (--efa-latency T). With the collective's 4-byte
// semaphores booked in the links' calendars behind data chunks that reach
// a link after them, T = 7.0, 7.2 µs took 807.58 µs and 7.3 µs 767.30 (9.0
// µs 763.99): a semaphore that came a little later waited ~18 µs behind a
// burst on the destination's NIC link, one that came earlier slipped
// between its chunks.
func TestEFATimeNonDecreasingInLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 71 sweeps of a 16-device system")
	}
	g := hwarch.Cayman
	tables := tablesOf(t, g)
	names := func(fabric.EFASetting) string { return "latency" }
	var prev float64
	var prevT uint64
	for T := uint64(5000); T <= 12000; T += 100 {
		p := cluster.DefaultParams(g, tables)
		ps := T * 1000
		require.NoError(t, fabric.EFASettings{Nodes: 4, Latency: &ps}.Apply(&p, []int{4}, names))
		got := sweepTimeUS(t, cluster.Config{Generation: g, Nodes: 4, Switch: switchOf(g), Params: &p, TimingOnly: true},
			cluster.SweepSystem{Devices: 16, Kind: fabric.KindRing, Sizes: []int64{16 << 20}}, enc.AllReduce)
		if prevT > 0 {
			assert.GreaterOrEqual(t, got, prev, "T %d ns: %.2f µs, below T %d ns: %.2f µs", T, got, prevT, prev)
		}
		prev, prevT = got, T
	}
}

// TestSpinesNote: a sweep across nodes whose spines carried nothing says
// why (cluster.SpinesKey), so that efa-spine's 0 % — or its absence — is
// not read as spines to spare: no spines (one leaf holds every NIC),
// rail-optimised with each rail on one leaf (the default shape of a few
// nodes: its two spines are built and never used), or every write between
// nodes within a leaf; a sweep whose writes crossed the spines, or of one
// node, has no note.
func TestSpinesNote(t *testing.T) {
	if testing.Short() {
		t.Skip("builds systems of up to 16 devices")
	}
	g := hwarch.Cayman
	tables := tablesOf(t, g)
	for _, c := range []struct {
		name  string
		nodes int
		net   fabric.EFANetwork
		ports int
		op    enc.Op
		want  string // a part of the note; "" for none
	}{
		{"one-node", 1, fabric.RailOptimised, 64, enc.AllReduce, ""},
		{"fat-tree-one-leaf", 4, fabric.FatTree, 64, enc.AllReduce, "none: one leaf of 64 ports holds all 16 NICs (4 nodes × 4)"},
		{"rail-each-rail-one-leaf", 2, fabric.RailOptimised, 64, enc.AllReduce, "rail-optimised, each rail's 2 nodes fit one leaf of 64 ports"},
		{"rail-each-rail-one-leaf-alltoall", 4, fabric.RailOptimised, 4, enc.AllToAll, "rail-optimised, each rail's 4 nodes fit one leaf of 4 ports"},
		{"rail-across-leaves", 4, fabric.RailOptimised, 2, enc.AllToAll, ""},
		{"fat-tree-across-leaves", 4, fabric.FatTree, 4, enc.AllReduce, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := cluster.DefaultParams(g, tables)
			p.EFA.Network, p.EFA.LeafPorts = c.net, c.ports
			res, err := cluster.RunSweeps(cluster.SweepSet{
				Config:  cluster.Config{Generation: g, Nodes: c.nodes, Switch: switchOf(g), Params: &p, TimingOnly: true},
				Systems: []cluster.SweepSystem{{Devices: 4 * c.nodes, Kind: fabric.KindRing, Sizes: []int64{1 << 20}}},
				Sweep:   cluster.Sweep{Op: c.op, Dtype: enc.Float32},
			})
			require.NoError(t, err)
			rep := res.Reports[0]
			got, ok := rep.Extra[cluster.SpinesKey].(string)
			if c.want == "" {
				assert.False(t, ok, "no note: %q", got)
				return
			}
			require.True(t, ok, "a note")
			assert.Contains(t, got, c.want)
			u, ok := cluster.LinkUsageOf(rep)
			require.True(t, ok)
			for _, cl := range u[0].Classes {
				if cl.Class == fabric.ClassLabel("efa-spine") {
					assert.Zero(t, cl.Bytes, "the spines carried nothing")
				}
			}
		})
	}
	// A network of spines whose collective kept every write in a leaf (the
	// shape alone does not say so): the general note.
	p := fabric.DefaultParams(g)
	p.EFA.Network, p.EFA.LeafPorts = fabric.FatTree, 4
	topo, err := fabric.BuildNodes(fabric.KindRing, g, 16, 4, p)
	require.NoError(t, err)
	idle := cluster.LinkUsage{{Size: 1, Classes: []cluster.LinkClass{{Class: fabric.ClassLabel("efa-nic"), Bytes: 8}, {Class: fabric.ClassLabel("efa-spine")}}}}
	assert.Contains(t, cluster.SpinesNote(topo.Scale, idle), "every write between nodes stayed within one leaf of 4 ports")
	idle[0].Classes[1].Bytes = 1
	assert.Empty(t, cluster.SpinesNote(topo.Scale, idle))
	assert.Empty(t, cluster.SpinesNote(nil, nil))
}

// TestChannelsOps: channels are checked against the op as well as the
// algorithm — a permute and an alltoall run none and are refused by name —
// and a report's channel and flat-ring notes are only for a flat ring's
// ops: a permute's ring rows over nodes note neither.
func TestChannelsOps(t *testing.T) {
	cfg := cluster.Config{Generation: hwarch.Cayman, Devices: 32, Nodes: 2}
	for _, tc := range []struct {
		op   enc.Op
		algo enc.Algo
		want string // "" accepted
	}{
		{enc.AllReduce, enc.Ring, ""},
		{enc.AllGather, enc.Auto, ""},
		{enc.ReduceScatter, enc.Ring, ""},
		{enc.Permute, enc.Ring, "a permute runs no ring channels"},
		{enc.Permute, enc.Auto, "a permute runs no ring channels"},
		{enc.AllToAll, enc.Auto, "an alltoall runs on mesh"},
		{enc.AllToAll, enc.Mesh, "an alltoall runs on mesh"},
		{enc.AllReduce, enc.Hier, "algo ring or auto, not hier"},
	} {
		err := cfg.CheckChannels(4, tc.op, tc.algo)
		assert.Equal(t, tc.want == "", cfg.ChannelsApply(tc.op, tc.algo), "%v %v", tc.op, tc.algo)
		if tc.want == "" {
			assert.NoError(t, err, "%v %v", tc.op, tc.algo)
			continue
		}
		require.Error(t, err, "%v %v", tc.op, tc.algo)
		assert.Contains(t, err.Error(), tc.want)
	}
	for _, tc := range []struct {
		op   enc.Op
		note bool
	}{{enc.AllReduce, true}, {enc.AllGather, true}, {enc.Permute, false}} {
		rep := &nccom.Report{Op: tc.op.String(), Rows: []nccom.Row{{Algorithm: "ring"}}}
		cluster.NoteFlatRing(rep, 2, 1, 16)
		cluster.NoteAutoFlatRing(rep, 2)
		for _, k := range []string{cluster.ChannelsKey, cluster.FlatRingKey, cluster.AutoFlatRingKey} {
			_, ok := rep.Extra[k]
			assert.Equal(t, tc.note, ok, "%v: %s", tc.op, k)
		}
	}
}

// TestEFAControlWritesNotBehindRelays: a permute across 4 nodes of 4 Trn2
// devices (rail-optimised, so a device's writes to another rail relay
// through a node-mate's NIC) takes in the aware model what it takes in the
// contention-free one, within 1 %: every NIC carries one flow each way, and
// rank 0's releases to the other nodes no longer wait at a NIC's link
// behind a node-mate's relayed 4 MiB (381.29 µs against the free model's
// 248.77 while they did; docs/fabric.md §Models, "Control writes"); and
// the 1 MiB permute's time does not fall as the in-node links' latency
// rises (129.01 µs at 500 ns and 107.82 at 1,650 while they did).
func TestEFAControlWritesNotBehindRelays(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 7 permutes on 16 devices")
	}
	g := hwarch.Cayman
	tables := tablesOf(t, g)
	run := func(m fabric.Model, lat *uint64, size int64) float64 {
		p, err := cluster.RunParams(g, 0, tables, m, fabric.EndpointsReal, cluster.LinkTiming{})
		require.NoError(t, err)
		if lat != nil {
			cluster.LinkTiming{Latency: *lat, SetLatency: true}.Apply(&p)
		}
		return sweepTimeUS(t, cluster.Config{Generation: g, Nodes: 4, Switch: switchOf(g), Params: &p, TimingOnly: true},
			cluster.SweepSystem{Devices: 16, Kind: fabric.KindRing, Sizes: []int64{size}}, enc.Permute)
	}
	aware, free := run(fabric.Aware, nil, 4<<20), run(fabric.Free, nil, 4<<20)
	assert.InEpsilon(t, free, aware, 0.01, "aware %.2f µs, free %.2f µs", aware, free)
	var prev float64
	for _, ns := range []uint64{0, 500, 1500, 1650, 2000} {
		ps := ns * 1000
		got := run(fabric.Aware, &ps, 1<<20)
		assert.GreaterOrEqual(t, got, prev, "in-node latency %d ns: %.2f µs", ns, got)
		prev = got
	}
}
