package sweep

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc"
)

// TestGridAutoChannels: a point of algo auto takes the channels axis'
// values only at the sizes where auto, resolved per size with the
// point's options, runs the flat ring across the nodes (Trn1 from 64 MiB);
// at the others (hier) it is planned once, with no channels, in a group
// of its own before the channel counts' groups. A channels axis that then
// applies to no point is refused at its position. Each point reads
// nodes/algo/channels/size@group.
func TestGridAutoChannels(t *testing.T) {
	// The defect's grid: 2 nodes of 4 Trn2 devices, hier at every size.
	trn2 := func(algos, channels string) string {
		src := "arch: cayman\naxes:\n  devices: [4]\n  nodes: [2]\n  ops: [all_reduce]\n  algos: " + algos + "\n  channels: " + channels + "\n  sizes: {min: 64K, max: 1M, factor: 4}\n"
		if channels == "" {
			src = strings.Replace(src, "  channels: \n", "", 1)
		}
		return src
	}
	// 2 nodes of 4 Trn1 devices (2 EFA NICs each: nics is 2): hier below
	// 64 MiB, the flat ring from it.
	trn1 := func(algos, dtypes, sizes string) string {
		return "arch: sunda\naxes:\n  devices: [4]\n  nodes: [2]\n  ops: [all_reduce]\n  algos: " + algos + "\n  channels: [1, nics]\n  dtypes: " + dtypes + "\n  sizes: " + sizes + "\n"
	}
	for _, tc := range []struct {
		name, src string
		want      []string // the points; nil: refused
		errs      []string // the refusal's message holds each
	}{
		{"trn2 auto and ring: auto once per size", trn2("[auto, ring]", "[1, 2, 4]"), []string{
			"2/auto/0/65536@0", "2/auto/0/262144@0", "2/auto/0/1048576@0",
			"2/ring/1/65536@1", "2/ring/1/262144@1", "2/ring/1/1048576@1",
			"2/ring/2/65536@2", "2/ring/2/262144@2", "2/ring/2/1048576@2",
			"2/ring/4/65536@3", "2/ring/4/262144@3", "2/ring/4/1048576@3",
		}, nil},
		{"trn2 auto, default axis: no channels", trn2("[auto]", ""), []string{
			"2/auto/0/65536@0", "2/auto/0/262144@0", "2/auto/0/1048576@0",
		}, nil},
		{"trn2 auto only: refused", trn2("[auto]", "[1, 2, 4]"), nil,
			[]string{"grid.yaml:7:13", "axes.channels", "auto at a size where it takes the ring", "the channels apply to none"}},
		{"trn2 auto and hier: refused", trn2("[hier, auto]", "[nics]"), nil,
			[]string{"grid.yaml:7:13", "axes.channels", "the channels apply to none"}},
		{"trn1 auto: channels from 64 MiB", trn1("[auto]", "[fp32]", "[32M, 64M, 128M]"), []string{
			"2/auto/0/33554432@0",
			"2/auto/1/67108864@1", "2/auto/1/134217728@1",
			"2/auto/2/67108864@2", "2/auto/2/134217728@2",
		}, nil},
		{"trn1 auto, two dtypes: hier groups first", trn1("[auto]", "[fp32, bf16]", "[32M, 64M]"), []string{
			"2/auto/0/33554432@0", "2/auto/0/33554432@1",
			"2/auto/1/67108864@2", "2/auto/1/67108864@3",
			"2/auto/2/67108864@4", "2/auto/2/67108864@5",
		}, nil},
		{"trn1 auto at flat-ring sizes only: as before", trn1("[auto]", "[fp32]", "[64M, 128M]"), []string{
			"2/auto/1/67108864@0", "2/auto/1/134217728@0",
			"2/auto/2/67108864@1", "2/auto/2/134217728@1",
		}, nil},
		{"trn1 auto below 64 MiB: refused", trn1("[auto]", "[fp32]", "[1M, 32M]"), nil,
			[]string{"grid.yaml:7:13", "axes.channels", "on Trn1 below 64 MiB", "the channels apply to none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGrid("grid.yaml", []byte(tc.src))
			if tc.want == nil {
				require.Error(t, err, "%v", g)
				assert.ErrorIs(t, err, ErrGrid)
				for _, w := range tc.errs {
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			var got []string
			for i, p := range g.Points() {
				got = append(got, fmt.Sprintf("%d/%s/%d/%d@%d", p.Nodes, p.Algo, p.Channels, p.Size, g.groups[i]))
				// The point runs with its cluster's options; auto runs the
				// ring exactly where the point has channels, and those are
				// the channels it runs.
				o, _ := enc.ParseOp(p.Op)
				opts := g.specs[i].config(&g.points[i], 0).CollectiveOptions(enc.Options{Channels: p.Channels})
				assert.Equal(t, opts, g.specs[i].opts, "point %d", i)
				if p.Algo == "auto" {
					ring := opts.Policy.ChooseIn(o, p.Size, p.Ranks, opts.GroupSize) == enc.Ring
					assert.Equal(t, ring, p.Channels > 0, "point %d", i)
					if ring {
						assert.Equal(t, p.Channels, opts.Channels, "point %d", i)
					}
				}
			}
			assert.Equal(t, tc.want, got)
			seen := map[string]int{}
			for i, p := range g.Points() {
				_, dup := seen[p.Hash]
				assert.False(t, dup, "point %d: a hash twice", i)
				seen[p.Hash] = i
			}
		})
	}
}

// TestGridAutoChannelsHashes: resolving auto per size leaves the hashes of
// the points of algo ring and hier, and of auto's at the sizes where it
// runs the flat ring (each once per channel count, as before), as they
// were before it (the hashes below); only auto's points where it runs
// hier, now planned once with no channels (Channels 0), have new ones.
func TestGridAutoChannelsHashes(t *testing.T) {
	g := mustGrid(t, "arch: sunda\naxes:\n  devices: [4]\n  nodes: [2]\n  ops: [all_reduce]\n  algos: [ring, hier, auto]\n  channels: [1, nics]\n  sizes: [32M, 64M, 128M]\n")
	var got []string
	for _, p := range g.Points() {
		got = append(got, fmt.Sprintf("%s/%d/%d %s", p.Algo, p.Channels, p.Size>>20, p.Hash))
	}
	assert.Equal(t, []string{
		"ring/1/32 a17a9a22220b9234", "ring/1/64 8dbfe0761bc33a3e", "ring/1/128 9ea04c91ed3d8af3",
		"ring/2/32 52282c84f7966ff4", "ring/2/64 254ee174e3e69a3d", "ring/2/128 3480185ba5b273c4",
		"hier/0/32 767088d9c5df6cf9", "hier/0/64 6ed367eba67f95d1", "hier/0/128 f95313359d2ce99a",
		// Hier at 32 MiB: once, no channels, a new hash (it was
		// 0bca87571168e1be with 1 channel and 03af0a93ae75241e with 2).
		"auto/0/32 474b30123fad68f0",
		"auto/1/64 b3f7d33d626b0026", "auto/1/128 978a4c1113092297",
		"auto/2/64 6409b6d88af0fd0c", "auto/2/128 b25f3633c9da1dc3",
	}, got)
}

// TestGridAutoChannelsPlots: auto's points split by size make two groups
// where the product of the axes counts one, so the bound on plots is
// checked again on the groups planned: 513 link bandwidths of Trn1's auto
// at 32 MiB (hier) and 64 MiB (the flat ring) are 1026 groups.
func TestGridAutoChannelsPlots(t *testing.T) {
	var bws []string
	for i := 1; i <= 513; i++ {
		bws = append(bws, fmt.Sprintf("%dGB/s", i))
	}
	src := "arch: sunda\naxes:\n  devices: [4]\n  nodes: [2]\n  link_bw: [" + strings.Join(bws, ", ") + "]\n  ops: [all_reduce]\n  algos: [auto]\n  sizes: [32M, 64M]\n"
	g, err := ParseGrid("grid.yaml", []byte(src))
	require.Error(t, err, "%v", g)
	assert.ErrorIs(t, err, ErrGrid)
	assert.Contains(t, err.Error(), "outputs.plots")
	assert.Contains(t, err.Error(), "1026 groups")
	g = mustGrid(t, src+"outputs:\n  plots: false\n")
	assert.Equal(t, 1026, g.Len())
}
