package sweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// devicesGrid is a grid of arch with 2 and 16 devices (a ring and a 2D
// torus), one all_reduce of 64 KiB each.
func devicesGrid(arch string) string {
	return "arch: " + arch + "\naxes:\n  devices: [2, 16]\n  ops: [all_reduce]\n  sizes: [64K]\n"
}

// TestGridProductHashes: the product line is added to the encoding of an
// Inf2 point only, so every other point keeps the hash it had before the
// grid's arch inf2 ran Inf2 devices (the hashes below are those of the
// neuronsim before it, HashFormat 1): a grid of any generation or product
// word but inf2, of named systems, of several nodes. Arch inf2's points,
// which ran as the Trn1 ones of the same hash, now have hashes of their
// own, so a results folder of such Trn1 numbers is refused as another
// grid's rather than resumed.
func TestGridProductHashes(t *testing.T) {
	sunda := []string{"8a1d12b2e2b4a32b", "c3fca4ca632bdbae"}
	for _, tc := range []struct {
		name, src, grid string
		points          []string
	}{
		{"sunda", devicesGrid("sunda"), "ddd08dacc1a568b9", sunda},
		{"trn1", devicesGrid("trn1"), "ddd08dacc1a568b9", sunda},
		{"v2", devicesGrid("v2"), "ddd08dacc1a568b9", sunda},
		{"cayman", devicesGrid("cayman"), "01a5f335fff14371", []string{"53e6599001303e63", "841bdc3a95c84ac7"}},
		{"trn2", devicesGrid("trn2"), "01a5f335fff14371", []string{"53e6599001303e63", "841bdc3a95c84ac7"}},
		{"mariana", devicesGrid("mariana"), "f61c693fb5ac644c", []string{"11c20f3fab921c48", "c84fb4b33e016ae9"}},
		{"trn3", devicesGrid("trn3"), "f61c693fb5ac644c", []string{"11c20f3fab921c48", "c84fb4b33e016ae9"}},
		// The points of 2 nodes are auto's at 64 KiB, where auto runs hier
		// across the nodes: they take no channels (Channels 0) since the
		// grid resolves auto per size (TestGridAutoChannels), and so have
		// other hashes than they had ("1d2427dc6524ee8e",
		// "22166e9012065e41", grid "2d7744f56944ed00", when they claimed
		// a node's 8 and 16 EFA NICs as channels).
		{"systems and nodes", "axes:\n  systems: [trn1-32xl, trn2-48xl]\n  nodes: [1, 2]\n  ops: [all_reduce]\n  sizes: [64K]\n",
			"d9d1e0c557fd0d94", []string{"8d6b4e2f371ac1bb", "5a75aeac641ae010", "b49f0f470318a61f", "3cf6834f6c621663"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustGrid(t, tc.src)
			var got []string
			for _, p := range g.Points() {
				got = append(got, p.Hash)
				assert.Empty(t, p.Product, "a point of the generation's default devices names no product")
				assert.NotContains(t, p.canonical(), "product")
			}
			assert.Equal(t, tc.points, got)
			assert.Equal(t, tc.grid, g.Hash())
		})
	}
	inf2 := mustGrid(t, devicesGrid("inf2"))
	trn1 := mustGrid(t, devicesGrid("trn1"))
	assert.NotEqual(t, trn1.Hash(), inf2.Hash())
	for i, p := range inf2.Points() {
		q := trn1.Points()[i]
		assert.Equal(t, "Inf2", p.Product)
		assert.Equal(t, "sunda", p.Arch, "arch stays the generation")
		assert.NotEqual(t, q.Hash, p.Hash)
		assert.Equal(t, q.canonical()+"product=\"Inf2\"\n", p.canonical(), "the product line comes last, after the lines of the Trn1 point")
	}
	// Case and spaces do not matter, as on the command line.
	assert.Equal(t, inf2.Hash(), mustGrid(t, devicesGrid("\" INF2 \"")).Hash())
}

// TestGridInf2Devices: the grid's arch inf2 runs Inf2 devices (PCI device
// id 0x7264) with Inf2's direct links (96 GiB/s), as fabric sweep --arch
// inf2 and a scenario's arch inf2 do; sunda and trn1 run Trn1's (96 GB/s).
// Once arch inf2 ran Trn1 devices with Trn1's links.
func TestGridInf2Devices(t *testing.T) {
	for _, tc := range []struct {
		arch    string
		id      uint16 // cluster.Config.DeviceID: 0 is the generation's default
		device  uint16 // what the built devices report
		product string // Point.Product
		bw      uint64
	}{
		{"sunda", 0, hwarch.DeviceTrn1, "", 96e9},
		{"trn1", 0, hwarch.DeviceTrn1, "", 96e9},
		{"inf2", hwarch.DeviceInf2, hwarch.DeviceInf2, "Inf2", 96 << 30},
		{"Inf2", hwarch.DeviceInf2, hwarch.DeviceInf2, "Inf2", 96 << 30},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			g := mustGrid(t, "arch: "+tc.arch+"\naxes:\n  devices: [2]\n  topologies: [ring, chain]\n  ops: [all_reduce]\n  sizes: [64K]\n")
			require.Equal(t, 2, g.Len())
			for i, p := range g.Points() {
				s := &g.specs[i]
				assert.Equal(t, tc.product, p.Product)
				assert.Equal(t, tc.id, p.deviceID())
				assert.Equal(t, tc.bw, fabric.DirectLink(hwarch.Sunda, tc.device).Bandwidth)
				assert.Equal(t, tc.bw, s.params.Ring.Bandwidth, "the point's ring links")
				assert.Equal(t, tc.bw, s.params.XY.Bandwidth, "the point's XY links")
				cfg := s.config(&p, 0)
				assert.Equal(t, tc.id, cfg.DeviceID)
				c, err := cluster.New(cfg)
				require.NoError(t, err)
				assert.Equal(t, tc.device, c.System.Device(0).Config().DeviceID, "the devices the point runs")
				for _, l := range c.System.Topology().Links {
					assert.Equal(t, tc.bw, l.Params.Bandwidth, "%s link %d→%d", p.Topology, l.From, l.To)
				}
			}
		})
	}
}

// TestGridInf2Runs: a point of arch inf2 runs on Inf2's faster direct
// links (96 GiB/s against Trn1's 96 GB/s), so an alltoall that loads its
// links (4 devices, 2 ranks each) takes less time than the Trn1 point (a
// ring all_reduce of 2 or 16 devices takes the same: its DMA engines, not
// its links, bound it); its result file, the merged report, points.csv
// and the plot's title name Inf2, and the Trn1 point's no product.
func TestGridInf2Runs(t *testing.T) {
	src := "\naxes:\n  devices: [4]\n  ranks_per_device: [2]\n  ops: [alltoall]\n  sizes: [16M]\noutputs:\n  plots: false\n"
	times := map[string]uint64{}
	for _, arch := range []string{"trn1", "inf2"} {
		g := mustGrid(t, "arch: "+arch+src)
		dir := t.TempDir()
		run(t, g, dir, All, 1)
		merge(t, dir)
		f, err := ReadFolder(dir)
		require.NoError(t, err)
		require.Len(t, f.Results, 1)
		r := f.Results[0]
		require.Equal(t, StatusOK, r.Status, r.Error)
		times[arch] = r.Row.TimePS

		want := map[string]string{"trn1": "Trn1", "inf2": "Inf2"}[arch]
		data, err := os.ReadFile(resultPath(dir, &r.Point))
		require.NoError(t, err)
		var raw struct {
			Point map[string]any `json:"point"`
		}
		require.NoError(t, json.Unmarshal(data, &raw))
		if arch == "inf2" {
			assert.Equal(t, "Inf2", raw.Point["product"])
		} else {
			assert.NotContains(t, raw.Point, "product", "the result file of a Trn1 point is as it was")
		}
		reps := f.Reports()
		require.Len(t, reps, 1)
		assert.Equal(t, want, reps[0].Extra["product"])
		assert.Equal(t, "sunda", reps[0].Extra["arch"])
		rec := f.Records()[0]
		assert.Equal(t, want, rec[slices.Index(Columns, "product")])
		assert.Equal(t, "sunda", rec[slices.Index(Columns, "arch")])
		csv, err := os.ReadFile(filepath.Join(dir, MergedDir, "points.csv"))
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(csv), "index,hash,system,arch,product,switch,"), string(csv))
		gr := f.groups()[0]
		if arch == "inf2" {
			assert.Contains(t, gr.title(), "ring × 4 Inf2")
		} else {
			assert.Contains(t, gr.title(), "ring × 4 sunda")
		}
	}
	assert.Less(t, times["inf2"], times["trn1"], "Inf2's 96 GiB/s links against Trn1's 96 GB/s")
}

// TestGridInf2NamedSystem: a named system is of its generation's default
// devices, so the grid's arch inf2 contradicts trn1-32xl (Trn1 devices),
// as --arch inf2 --system trn1-32xl does on the command line: refused,
// naming the system's path and both products. arch trn1 and sunda agree.
func TestGridInf2NamedSystem(t *testing.T) {
	for _, tc := range []struct {
		arch string
		want []string // nil: accepted
	}{
		{"inf2", []string{"grid.yaml:3:13: axes.systems[0]: trn1-32xl is a system of Trn1 devices; the grid's arch inf2 names Inf2 devices (PCI device id 0x7264)", "leave arch out"}},
		{"INF2", []string{"axes.systems[0]", "the grid's arch INF2 names Inf2 devices"}},
		{"trn1", nil},
		{"sunda", nil},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			_, err := ParseGrid("grid.yaml", []byte("arch: "+tc.arch+"\naxes:\n  systems: [trn1-32xl]\n  ops: [all_reduce]\n  sizes: [4K]\n"))
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.ErrorIs(t, err, ErrGrid)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	// With the devices axis too, the system is refused before the counts.
	_, err := ParseGrid("grid.yaml", []byte("arch: inf2\naxes:\n  systems: [trn1-32xl]\n  devices: [2]\n  ops: [all_reduce]\n  sizes: [4K]\n"))
	require.ErrorIs(t, err, ErrGrid)
	assert.Contains(t, err.Error(), "axes.systems[0]: trn1-32xl is a system of Trn1 devices")
}

// TestGridInf2Messages: an impossible Inf2 system is named as Inf2
// devices, not sunda ones.
func TestGridInf2Messages(t *testing.T) {
	_, err := ParseGrid("grid.yaml", []byte("arch: inf2\naxes:\n  devices: [6]\n  topologies: [torus2d]\n  ops: [all_reduce]\n  sizes: [1K]\n"))
	require.ErrorIs(t, err, ErrGrid)
	assert.Contains(t, err.Error(), "impossible system: torus2d of 6 Inf2 devices")
}

// TestFormatOneNoProduct: a file of format 1, written before the product
// field, with one is refused rather than read.
func TestFormatOneNoProduct(t *testing.T) {
	p := Point{Arch: "sunda", Product: "Inf2"}
	err := upgradePoint(formatOneNode, &p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "format 1 has no product field")
	p = Point{Arch: "sunda", Product: "Inf2", Nodes: 1}
	assert.NoError(t, upgradePoint(Format, &p), "format 2 has it")
}
