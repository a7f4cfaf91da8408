package cluster_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// snake is the boustrophedon cycle of the 4×4 torus (device 4·row +
// column): row 0 left to right, row 1 right to left, …, 12 → 0 the column
// wrap-around.
var snake = []int{0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12}

// snakeBack is the boustrophedon the other way round from device 0, the
// order of Trn1 nodes joined over EFA: its flat ring's crossings, between
// positions 2c − 1 and 2c of a node, join the two devices of one NIC.
var snakeBack = []int{0, 12, 13, 14, 15, 11, 10, 9, 8, 4, 5, 6, 7, 3, 2, 1}

// linked reports whether topology t has a direct link from device a to
// device b.
func linked(t *fabric.Topology, a, b int) bool {
	return slices.ContainsFunc(t.Nodes[a].Ports, func(id int) bool { return t.Links[id].To == b })
}

// TestRingOrderSystems: the order each system's rings take (Config.
// RingOrder) is a permutation of the ranks in which every consecutive
// pair, and the last and the first, sit on one device or on two devices
// with a direct link in the system's topology — but for the crossings from
// one node to the next over EFA, one a node, at its end — with each
// device's ranks together; the 4×4 torus takes the boustrophedon (over
// Trn1 nodes the other way round, so that the flat ring's channels cross
// between the two devices of one NIC), the UltraServer's Z ring joins its
// four tori; rank order stays where it is a
// cycle along the links (Inf2's ring, every pair linked) or every pair is
// one switch path apart (Trn3, a star), and where the links hold no cycle
// (Inf2's chain) the note says why.
func TestRingOrderSystems(t *testing.T) {
	custom := func(g hwarch.Generation, k fabric.Kind, n int) cluster.Config {
		return cluster.Config{Generation: g, Devices: n, Kind: k}
	}
	for _, tc := range []struct {
		name    string
		cfg     cluster.Config
		devices []int  // a node's devices in the ring's order; nil: rank order
		note    string // in the note of rank order ("": none)
	}{
		{"trn1-32xl", systemConfig(t, "trn1-32xl", 1, 1), snake, ""},
		{"trn2-48xl", systemConfig(t, "trn2-48xl", 1, 1), snake, ""},
		{"trn2-48xl, 2 ranks a device", systemConfig(t, "trn2-48xl", 1, 2), snake, ""},
		{"trn2-48xl, 8 ranks a device", systemConfig(t, "trn2-48xl", 1, 8), snake, ""},
		{"2 × trn2-48xl", systemConfig(t, "trn2-48xl", 2, 1), snake, ""},
		{"4 × trn1-32xl, 2 ranks a device", systemConfig(t, "trn1-32xl", 4, 2), snakeBack, ""},
		{"2 × trn1-32xl", systemConfig(t, "trn1-32xl", 2, 1), snakeBack, ""},
		{"trn2-ultraserver", systemConfig(t, "trn2-ultraserver", 1, 1), []int{
			0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12,
			28, 29, 30, 31, 27, 26, 25, 24, 20, 21, 22, 23, 19, 18, 17, 16,
			32, 33, 34, 35, 39, 38, 37, 36, 40, 41, 42, 43, 47, 46, 45, 44,
			60, 61, 62, 63, 59, 58, 57, 56, 52, 53, 54, 55, 51, 50, 49, 48}, ""},
		{"trn3-gen1", systemConfig(t, "trn3-gen1", 1, 1), nil, ""},
		{"trn3-gen2", systemConfig(t, "trn3-gen2", 1, 1), nil, ""},
		{"2 × trn3-gen1", systemConfig(t, "trn3-gen1", 2, 1), nil, ""},
		{"mariana switch of 32", cluster.Config{Generation: hwarch.Mariana, Devices: 32, Switch: hwarch.SwitchV1}, nil, ""},
		{"inf2 ring of 12", custom(hwarch.Sunda, fabric.KindAuto, 12), nil, ""},
		{"inf2 chain of 6", custom(hwarch.Sunda, fabric.KindAuto, 6), nil, "rank order: no cycle through the 6 devices of the chain along their links (device 0 has 1 link)"},
		{"fully-connected 8", custom(hwarch.Cayman, fabric.KindFullyConnected, 8), nil, ""},
		{"star 8", custom(hwarch.Cayman, fabric.KindStar, 8), nil, ""},
		{"torus of 2 groups", custom(hwarch.Cayman, fabric.KindTorus2D, 32), nil, "device 0 reaches 16 of the 32 devices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.cfg.RingOrder()
			assert.Equal(t, tc.devices, o.Devices)
			if tc.devices == nil {
				assert.Nil(t, o.Ranks, "rank order")
				if tc.note == "" {
					assert.Empty(t, o.Note)
				} else {
					assert.Contains(t, o.Note, tc.note)
				}
				return
			}
			rpd, nodes := max(tc.cfg.RanksPerDevice, 1), max(tc.cfg.Nodes, 1)
			r := tc.cfg.Devices * rpd
			require.NoError(t, enc.CheckRingOrder(o.Ranks, r), "a permutation of the %d ranks", r)
			assert.Equal(t, cluster.FormatOrder(o.Ranks)+": ", o.Note[:len(cluster.FormatOrder(o.Ranks))+2], "the note gives the order")
			p := fabric.DefaultParams(tc.cfg.Generation)
			topo, err := fabric.BuildNodes(tc.cfg.Kind, tc.cfg.Generation, tc.cfg.Devices, nodes, p)
			require.NoError(t, err)
			crossings := 0
			for k, rank := range o.Ranks {
				next := o.Ranks[(k+1)%r]
				a, b := rank/rpd, next/rpd
				switch nd := tc.cfg.Devices / nodes; {
				case a == b:
					assert.Equal(t, rank+1, next, "a device's ranks one after another")
				case a/nd != b/nd:
					crossings++
					assert.Equal(t, (a/nd+1)%nodes, b/nd, "%d → %d: to the next node", rank, next)
					assert.Equal(t, 0, (k+1)%(nd*rpd), "%d → %d: leaves a node after all its ranks", rank, next)
				default:
					assert.True(t, linked(topo, a, b), "rank %d (device %d) → rank %d (device %d) is no direct link", rank, a, next, b)
				}
			}
			if nodes > 1 {
				assert.Equal(t, nodes, crossings)
			}
			// The flat ring's channels, one per NIC, cross from a node's
			// position c·G/K − 1 to c·G/K: on Trn1, between the two
			// devices of one NIC.
			if k := tc.cfg.NodeNICs(); k > 0 && tc.cfg.Devices/nodes/k > 1 {
				g, perNIC := tc.cfg.Devices/nodes*rpd, tc.cfg.Devices/nodes/k
				for c := range k {
					first := c * g / k
					a, b := o.Ranks[(first+g-1)%g]/rpd, o.Ranks[first]/rpd
					assert.Equal(t, a/perNIC, b/perNIC, "channel %d crosses from device %d to %d, on one NIC", c, a, b)
				}
			}
		})
	}
}

// TestCollectiveOptionsRingOrder: CollectiveOptions gives a collective the
// cluster's ring order unless the options hold one or the configuration
// asks for rank order (RankOrderRings).
func TestCollectiveOptionsRingOrder(t *testing.T) {
	cfg := systemConfig(t, "trn2-48xl", 1, 1)
	assert.Equal(t, snake, cfg.CollectiveOptions(enc.Options{}).RingOrder)
	given := []int{15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}
	assert.Equal(t, given, cfg.CollectiveOptions(enc.Options{RingOrder: given}).RingOrder)
	cfg.RankOrderRings = true
	assert.Nil(t, cfg.CollectiveOptions(enc.Options{}).RingOrder)
	assert.Nil(t, systemConfig(t, "trn3-gen1", 1, 1).CollectiveOptions(enc.Options{}).RingOrder)
}

// TestRingOrderFunctional: with data, the ring collectives in the torus's
// ring order — Ring, KangaRing, Permute, on one rank and on two a device,
// Hier and the flat ring of one channel per NIC over two nodes — give every
// rank what the CPU reference does (Cluster.Sweep checks each), and the
// report says the order.
func TestRingOrderFunctional(t *testing.T) {
	for _, tc := range []struct {
		nodes, rpd int
		op         enc.Op
		algo       enc.Algo
		d          enc.Dtype
	}{
		{1, 1, enc.AllReduce, enc.Ring, enc.Float32},
		{1, 1, enc.AllGather, enc.Ring, enc.Int32},
		{1, 1, enc.ReduceScatter, enc.Ring, enc.BFloat16},
		{1, 1, enc.AllReduce, enc.KangaRing, enc.Int32},
		{1, 1, enc.ReduceScatter, enc.KangaRing, enc.Float32},
		{1, 1, enc.Permute, enc.Auto, enc.Float32},
		{1, 2, enc.AllReduce, enc.Ring, enc.Int32},
		{1, 2, enc.AllGather, enc.KangaRing, enc.Float32},
		{1, 2, enc.Permute, enc.Auto, enc.Int32},
		{2, 1, enc.AllReduce, enc.Hier, enc.Float32},
		{2, 1, enc.AllGather, enc.Hier, enc.Int32},
		{2, 1, enc.ReduceScatter, enc.Ring, enc.Int32}, // 16 channels, one per NIC
		{2, 1, enc.Permute, enc.Auto, enc.Int32},
	} {
		t.Run(fmt.Sprintf("%d nodes/%d ranks a device/%v/%v/%v", tc.nodes, tc.rpd, tc.op, tc.algo, tc.d), func(t *testing.T) {
			cfg := systemConfig(t, "trn2-48xl", tc.nodes, tc.rpd)
			cfg.BufferBytes = 1 << 20
			c, err := cluster.New(cfg)
			require.NoError(t, err)
			size := int64(c.Ranks()) * 1024
			rep, err := c.Sweep(cluster.Sweep{Op: tc.op, Algo: tc.algo, Dtype: tc.d, Sizes: []int64{size}, Seed: 7})
			require.NoError(t, err, "the outputs are the CPU reference's")
			o := cfg.RingOrder()
			assert.Equal(t, snake, o.Devices)
			assert.Equal(t, o.Note, rep.Extra[cluster.RingOrderKey])
		})
	}
}

// TestPermuteAlongTorusLinks: a 64 MiB permute on the trn2.48xlarge torus
// with 25 GB/s links. In rank order the ring shift's 3→4, 7→8, 11→12 and
// 15→0 are two hops each, sharing a link with another edge, so the xy links
// carry 12·S + 4·2·S = 20·S and the busiest carries 2·S: busbw at most
// 25/2 GB/s. Along the links (the boustrophedon) every edge is one hop:
// 16·S in all, S on each link used, busbw near 25 GB/s — in the α-β parity
// mode (ideal endpoints) S/25 GB/s plus the latency, above 99 % of the link;
// with the real endpoints above 90 %, the rest being rank 0's release of
// the other 15 ranks, whose signals share its first DMA engine with its
// own 64 KiB data descriptors, so the last ranks start late (the time
// grows with the ranks: 2,697 µs on 2 ranks, 2,923 µs on 16).
func TestPermuteAlongTorusLinks(t *testing.T) {
	const size, bw = 64 << 20, 25e9
	tables, err := rtarch.For(hwarch.Cayman, rtarch.Options{})
	require.NoError(t, err)
	real := cluster.DefaultParams(hwarch.Cayman, tables)
	real.XY.Bandwidth = bw
	ideal := cluster.IdealParams(hwarch.Cayman, tables, fabric.Aware, bw, 500_000)
	for _, tc := range []struct {
		name      string
		p         fabric.Params
		rankOrder bool
		bytes     int64   // the xy links', in S
		busbw     float64 // at least, GB/s
		most      float64 // at most, GB/s
	}{
		{"along the links", real, false, 16, 0.90 * bw / 1e9, bw / 1e9},
		{"along the links, parity mode", ideal, false, 16, 0.99 * bw / 1e9, bw / 1e9},
		{"rank order", real, true, 20, 0, bw / 2 / 1e9},
		{"rank order, parity mode", ideal, true, 20, 0, bw / 2 / 1e9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			c, err := cluster.New(cluster.Config{Generation: hwarch.Cayman, Devices: 16, Kind: fabric.KindTorus2D, Params: &p, TimingOnly: true,
				BufferBytes: 2 * size, RankOrderRings: tc.rankOrder})
			require.NoError(t, err)
			rep, err := c.Sweep(cluster.Sweep{Op: enc.Permute, Dtype: enc.Float32, Sizes: []int64{size}})
			require.NoError(t, err)
			u, ok := cluster.LinkUsageOf(rep)
			require.True(t, ok)
			xy := u[0].Classes[0]
			require.Equal(t, "xy", xy.Class)
			// The data, and the release's and completion's few 4-byte
			// semaphore writes.
			assert.GreaterOrEqual(t, xy.Bytes, uint64(tc.bytes*size))
			assert.Less(t, xy.Bytes, uint64(tc.bytes*size+4096))
			busbw := rep.Rows[0].BusBW
			assert.GreaterOrEqual(t, busbw, tc.busbw)
			assert.LessOrEqual(t, busbw, tc.most)
		})
	}
}

// TestCheckAutoRingOrder: a ring order given to a collective whose
// algorithm is auto is refused where the policy runs no algorithm that
// visits the ranks in it (ring, kangaring, hier; any permute) at any of
// the sizes — mesh below 1 MiB and RDH up to 56 MiB on a power-of-two rank
// count — naming what auto runs instead; it is taken where auto runs a
// ring at one size at least (past 56 MiB, or from 1 MiB on a rank count
// that is not a power of two), and for a permute, whose peers are the
// ring shift at every size.
func TestCheckAutoRingOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		devices int
		op      enc.Op
		sizes   []int64
		err     string // "": taken
	}{
		{"mesh and rdh on 16 ranks", 16, enc.AllReduce, []int64{1 << 10, 1 << 20, 32 << 20},
			"algo auto runs no ring at any size here (all_reduce on 16 ranks: auto runs mesh up to 1024 bytes, rdh up to 33554432 bytes)"},
		{"mesh alone", 16, enc.AllGather, []int64{4 << 10}, "auto runs mesh up to 4096 bytes"},
		{"ring past 56 MiB", 16, enc.AllReduce, []int64{1 << 10, 64 << 20}, ""},
		{"ring from 1 MiB on 12 ranks", 12, enc.ReduceScatter, []int64{3 << 10, 3 << 20}, ""},
		{"permute", 16, enc.Permute, []int64{1 << 10}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cluster.Config{Generation: hwarch.Cayman, Devices: tc.devices, Kind: fabric.KindRing}
			err := cfg.CheckAutoRingOrder(tc.op, tc.sizes, cfg.CollectiveOptions(enc.Options{}))
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}
