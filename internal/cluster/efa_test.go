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
	spec, err := fabric.LookupSystem(name)
	require.NoError(t, err)
	cfg := cluster.Config{Generation: spec.Generation, Devices: nodes * spec.Devices, Nodes: nodes, Switch: switchOf(spec.Generation),
		Kind: spec.Kind, TimingOnly: timingOnly, BufferBytes: buf}
	c, err := cluster.New(cfg)
	require.NoError(t, err)
	require.NotNil(t, c.System.Topology().Scale, "a system of nodes")
	return c, cfg
}

// TestEFAAllReduce (issue 16 acceptance): an all-reduce of random data on
// two trn2.48xlarge instances joined by EFA (32 devices) equals the CPU
// reference, hierarchical (intra-node reduce-scatter, inter-node
// all-reduce over the rails, intra-node all-gather) and as a flat ring over
// every device, with nothing dropped; Auto picks Hier there. All-gather and
// reduce-scatter across the nodes (hierarchical) check too.
func TestEFAAllReduce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 32-device system")
	}
	c, cfg := efaCluster(t, "trn2-48xl", 2, false, 1<<20)
	opt := cfg.CollectiveOptions(enc.Options{})
	require.Equal(t, 16, opt.GroupSize, "a node's ranks")
	for _, tc := range []struct {
		op   enc.Op
		algo enc.Algo
		want enc.Algo
	}{
		{enc.AllReduce, enc.Hier, enc.Hier},
		{enc.AllReduce, enc.Ring, enc.Ring},
		{enc.AllReduce, enc.Auto, enc.Hier},
		{enc.AllGather, enc.Auto, enc.Hier},
		{enc.ReduceScatter, enc.Auto, enc.Hier},
	} {
		t.Run(fmt.Sprintf("%s-%s", tc.op, tc.algo), func(t *testing.T) {
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
		res, err := cluster.RunSweeps(cluster.SweepSet{
			Config:  cluster.Config{Generation: spec.Generation, Nodes: nodes, Switch: switchOf(spec.Generation), Params: &p, TimingOnly: true},
			Systems: []cluster.SweepSystem{{Devices: 16 * nodes, Kind: spec.Kind, Sizes: sizes}},
			Sweep:   cluster.Sweep{Op: enc.AllReduce, Algo: algo, Dtype: enc.Float32},
		})
		require.NoError(t, err)
		return res.Reports[0]
	}
	rep := sweep(2, enc.Auto, 1<<20, enc.DefaultFlatRingMin)
	require.Len(t, rep.Rows, 2)
	assert.Equal(t, "hier", rep.Rows[0].Algorithm)
	assert.Equal(t, "ring", rep.Rows[1].Algorithm)
	assert.Equal(t, 2, rep.Extra["nodes"])
	assert.Equal(t, "rail", rep.Extra["efa_network"])
	// A ring across the nodes is one ring where the runtime runs a channel
	// per NIC: the report says what its time is worth; a report of no such
	// ring (hierarchical, or a ring inside one node) says nothing of it.
	assert.Equal(t, cluster.FlatRingNote, rep.Extra[cluster.FlatRingKey])
	assert.NotContains(t, sweep(2, enc.Auto, 1<<20).Extra, cluster.FlatRingKey)
	assert.NotContains(t, sweep(1, enc.Ring, 1<<20).Extra, cluster.FlatRingKey)
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
	tables, err := arch.For(g, arch.Options{Switch: switchOf(g)})
	require.NoError(t, err)
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
