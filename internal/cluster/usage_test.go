package cluster_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// sweepUsage sweeps op with algo at sizes on c and returns the link use of
// every size.
func sweepUsage(t *testing.T, c *cluster.Cluster, op enc.Op, algo enc.Algo, sizes ...int64) cluster.LinkUsage {
	t.Helper()
	rep, err := c.Sweep(cluster.Sweep{Op: op, Algo: algo, Dtype: enc.Float32, Sizes: sizes})
	require.NoError(t, err)
	u, ok := cluster.LinkUsageOf(rep)
	require.True(t, ok, "the report holds its link use")
	require.Len(t, u, len(sizes))
	return u
}

// TestRingSaturatesTorus: a ring all-reduce on the 16-device torus, its
// links the slowest part of the system (25 GB/s, below what a rank's DMA
// engines feed them), keeps the "xy" links it uses busy nearly all the
// time at a large size in the aware model (each ring step sends a block
// over the links between neighbours, one step after another) — the
// bottleneck, above 85 % and at most 100 % — and far less at a small
// size, where the fixed costs dominate. The ring runs along the torus's
// links (docs/fabric.md §Ring order), one edge a link: 88.7 % at 64 MiB
// (91 % with the 7 engines a rank took until 2026-12-07; in rank order four
// links carried two edges and were 96 % busy at half the busbw). (At the generation's own 256 GB/s the DMA engines are the slower
// part, and the busiest xy link stays about 40 % busy: docs/fabric.md §Link
// utilisation.)
func TestRingSaturatesTorus(t *testing.T) {
	tables, err := rtarch.For(hwarch.Cayman, rtarch.Options{})
	require.NoError(t, err)
	p := cluster.DefaultParams(hwarch.Cayman, tables)
	p.XY.Bandwidth = 25e9
	c, err := cluster.New(cluster.Config{Generation: hwarch.Cayman, Devices: 16, Kind: fabric.KindTorus2D, Params: &p, TimingOnly: true, BufferBytes: 80 << 20})
	require.NoError(t, err)
	u := sweepUsage(t, c, enc.AllReduce, enc.Ring, 64<<10, 64<<20)
	small, large := u[0], u[1]
	for _, s := range u {
		assert.Equal(t, "xy", s.Bottleneck, "%d bytes", s.Size)
		require.Len(t, s.Classes, 1, "a torus has only xy links")
		assert.Equal(t, 64, s.Classes[0].Links)
	}
	xy := large.Classes[0]
	assert.Greater(t, xy.Utilisation, 0.85, "a large ring all-reduce saturates its links")
	assert.LessOrEqual(t, xy.Utilisation, 1.0, "the aware model never books a link past the time that passed")
	assert.Less(t, small.Classes[0].Utilisation, xy.Utilisation/2)
	assert.LessOrEqual(t, xy.Mean, xy.Utilisation)
}

// TestTrn3Gen1Bottleneck: an all-to-all on the Trn3 Gen1 UltraServer
// sends every device's block to every other device, each over its
// shortest path: its server's 15 over the in-server links, its inter-rack
// peer over the direct link, the other 47 through the inter-server switch.
// Each class's busiest link carries its blocks at its bandwidth, so the
// bottleneck is the class of the largest blocks/bandwidth — computed here
// from the system's shape and link parameters — and the next class the
// second.
func TestTrn3Gen1Bottleneck(t *testing.T) {
	spec, err := fabric.LookupSystem("trn3-gen1")
	require.NoError(t, err)
	c, err := cluster.New(cluster.Config{Generation: spec.Generation, Devices: spec.Devices, Switch: spec.Switch(), Kind: spec.Kind,
		TimingOnly: true, BufferBytes: 16 << 20})
	require.NoError(t, err)
	p := c.System.Params()
	n := spec.Devices
	blocks := map[string]int{ // blocks each device sends over its link of the class
		"in-server":    fabric.Gen1ServerSize - 1,
		"inter-rack":   1,
		"inter-server": n - fabric.Gen1ServerSize - 1,
	}
	bw := map[string]uint64{"in-server": p.InServer.Bandwidth, "inter-rack": p.InterRack.Bandwidth, "inter-server": p.InterServer.Bandwidth}
	load := func(class string) float64 { return float64(blocks[class]) / float64(bw[class]) }
	var want []string
	for class := range blocks {
		want = append(want, class)
	}
	// Order the classes by load, highest first.
	for i := range want {
		for j := i + 1; j < len(want); j++ {
			if load(want[j]) > load(want[i]) {
				want[i], want[j] = want[j], want[i]
			}
		}
	}
	u := sweepUsage(t, c, enc.AllToAll, enc.Auto, int64(n*n*1024))
	s := u[0]
	assert.Equal(t, want[0], s.Bottleneck)
	require.Len(t, s.Classes, 3)
	for i, class := range want {
		assert.Equal(t, class, s.Classes[i].Class, "class %d by utilisation", i)
	}
	assert.Len(t, c.System.Topology().Links, s.Classes[0].Links+s.Classes[1].Links+s.Classes[2].Links, "every directed link counted once")
}

// TestLinkBytesAreBytesTimesHops: on a star (every path between two
// devices 2 links) and a fully-connected system (1 link), the bytes all
// links carried during a ring all-reduce are the schedule's bytes between
// devices — its transfers, and the collective's 4-byte control writes (a
// go per rank but 0, a credit per writer of each step after the first, an
// arrival per transfer with one DMA engine per rank, a finish per rank
// but 0) — times the hops.
func TestLinkBytesAreBytesTimesHops(t *testing.T) {
	const size = 64 << 10
	for _, tc := range []struct {
		kind fabric.Kind
		hops uint64
	}{{fabric.KindStar, 2}, {fabric.KindFullyConnected, 1}} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			const n = 4
			c, err := cluster.New(cluster.Config{Generation: hwarch.Mariana, Devices: n, Switch: hwarch.SwitchV1, Kind: tc.kind, TimingOnly: true, BufferBytes: 1 << 20})
			require.NoError(t, err)
			c.Exec.Engines = 1
			sch, err := enc.Build(enc.AllReduce, enc.Ring, n, size, 4, enc.Options{})
			require.NoError(t, err)
			var data, controls uint64
			controls = 2 * (n - 1) // go and finish
			for k, st := range sch.Steps {
				writers := map[[2]int]bool{}
				for _, x := range st.Xfers {
					if x.Src != x.Dst {
						data += uint64(x.Len)
						controls++ // its arrival
						writers[[2]int{x.Src, x.Dst}] = true
					}
				}
				if k > 0 {
					controls += uint64(len(writers)) // a credit to each writer
				}
			}
			u := sweepUsage(t, c, enc.AllReduce, enc.Ring, size)
			var total uint64
			for _, cl := range u[0].Classes {
				total += cl.Bytes
			}
			assert.Equal(t, tc.hops*(data+4*controls), total)
		})
	}
}

// TestLinkTableAndJSON: the text output is nccom-test's table without the
// link use, then the link table; the JSON report holds the link use of
// every result under neuronsim_link_usage.
func TestLinkTableAndJSON(t *testing.T) {
	c, err := cluster.New(cluster.Config{Generation: hwarch.Cayman, Devices: 4, Kind: fabric.KindRing, TimingOnly: true, BufferBytes: 1 << 20})
	require.NoError(t, err)
	rep, err := c.Sweep(cluster.Sweep{Op: enc.AllReduce, Algo: enc.Ring, Dtype: enc.Float32, Sizes: []int64{4096, 65536}})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, cluster.WriteTables(&b, rep))
	out := b.String()
	assert.NotContains(t, out, "# link_usage", "the link use is not a comment line of nccom-test's table")
	_, table, ok := strings.Cut(out, "Avg bus bandwidth")
	require.True(t, ok)
	assert.Contains(t, table, "# link utilisation (aware model)")
	assert.Regexp(t, `\n\s+size\(B\)\s+bottleneck\s+util\(%\)\s+mean\(%\)\s+next\s+util\(%\)\n\s+4096\s+ring\s+\d+\.\d\s+\d+\.\d\s+-\s+-\n\s+65536\s+ring`, table)
	b.Reset()
	require.NoError(t, rep.WriteJSON(&b))
	var doc struct {
		Results []map[string]any    `json:"results"`
		Usage   []cluster.SizeLinks `json:"neuronsim_link_usage"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	require.Len(t, doc.Usage, 2)
	assert.Len(t, doc.Results[0], 7, "nccom-test's keys only in a result")
	assert.Equal(t, int64(65536), doc.Usage[1].Size)
	assert.Equal(t, "ring", doc.Usage[1].Bottleneck)
	assert.Positive(t, doc.Usage[1].Classes[0].Utilisation)
	assert.Contains(t, doc.Usage[1].Classes[0].BusiestLink, "→")
}
