package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFabricSweepRingOrder: the permute of the review's repro (64 MiB on
// trn2-48xl with 25 GB/s links) runs its ring shift along the torus's links
// and says so (# ring_order, JSON neuronsim_ring_order): the xy links carry
// 16·S, one S over each link used, at near the link's 25 GB/s (above 90 %
// with the real endpoints: TestPermuteAlongTorusLinks says what the rest
// is); --ring-order ranks runs it in rank order as before, 20·S with two
// edges on the busiest links, at most half the link; --ring-order with the
// ranks listed runs them in that order, and a list that is not a
// permutation of the ranks is refused naming the flag, as is the flag
// with a collective that runs no ring.
func TestFabricSweepRingOrder(t *testing.T) {
	const size = 64 << 20
	for _, tc := range []struct {
		name, order string
		note        string
		bytes       float64 // the xy links', in S
		lo, hi      float64 // busbw, GB/s
	}{
		{"links", "links", "0-3 7-4 8-11 15-12: a cycle through the 16 devices along the torus2d's links", 16, 22.5, 25},
		{"ranks", "ranks", "rank order, as asked; along the links it would be 0-3 7-4 8-11 15-12", 20, 12, 12.5},
		{"given", "0,1,2,3,7,6,5,4,8,9,10,11,15,14,13,12", "0-3 7-4 8-11 15-12: a cycle through the 16 devices along the torus2d's links", 16, 22.5, 25},
		{"given rank order", "0-15", "0-15: as given", 20, 12, 12.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "pp.json")
			out, err := runCLI(t, "fabric", "sweep", "--system", "trn2-48xl", "--op", "permute", "-b", "64M", "-e", "64M", "--link-bw", "25GB/s",
				"--ring-order", tc.order, "--json", js)
			require.NoError(t, err, out)
			assert.Contains(t, out, "# ring_order: "+tc.note+"\n")
			b, err := os.ReadFile(js)
			require.NoError(t, err)
			var rep struct {
				Results []struct {
					BusBW float64 `json:"busbw(GB/s)"`
				} `json:"results"`
				RingOrder string `json:"neuronsim_ring_order"`
				Usage     []struct {
					Classes []struct {
						Class string  `json:"class"`
						Bytes float64 `json:"bytes"`
					} `json:"classes"`
				} `json:"neuronsim_link_usage"`
			}
			require.NoError(t, json.Unmarshal(b, &rep))
			assert.Equal(t, tc.note, rep.RingOrder)
			require.Len(t, rep.Results, 1)
			assert.GreaterOrEqual(t, rep.Results[0].BusBW, tc.lo)
			assert.LessOrEqual(t, rep.Results[0].BusBW, tc.hi)
			xy := rep.Usage[0].Classes[0]
			require.Equal(t, "xy", xy.Class)
			assert.InDelta(t, tc.bytes, xy.Bytes/size, 1e-3, "the xy links carry %g·S (and a few semaphore writes)", tc.bytes)
		})
	}
	for _, tc := range []struct{ order, op, algo, err string }{
		{"0-14", "permute", "auto", `--ring-order "0-14" on 16 ranks: enc: RingOrder has 15 entries for 16 ranks`},
		{"0-14,14", "permute", "auto", "RingOrder is not a permutation: rank 14 is at positions 14 and 15"},
		{"0-15,x", "permute", "auto", `--ring-order "0-15,x": links, ranks or the ranks in order: "x" is not a rank`},
		{"", "permute", "auto", `--ring-order "": links, ranks or the ranks in order: an empty ring order`},
		{"0,,1-15", "permute", "auto", `--ring-order "0,,1-15": links, ranks or the ranks in order: element 2 of 3 (between commas) is empty`},
		{"ranks", "all_reduce", "rdh", "--ring-order: rdh all_reduce runs no ring"},
		{"links", "alltoall", "auto", "--ring-order: auto alltoall runs no ring"},
	} {
		_, err := runCLI(t, "fabric", "sweep", "--system", "trn2-48xl", "--op", tc.op, "--algo", tc.algo, "-b", "1M", "-e", "1M", "--ring-order", tc.order)
		require.Error(t, err, tc.order)
		assert.Contains(t, err.Error(), tc.err)
	}
}

// TestFabricSweepRingOrderAuto: --ring-order with --algo auto (the
// default) is refused when auto runs no ring at any size of the sweep on
// any device count — mesh and RDH below 56 MiB on 16 devices — where it
// was taken and never used, with no word in the report; a sweep where auto
// runs a ring at one size (64 MiB), or on one of its device counts (the 12
// devices of 8,12 from 1 MiB), takes it.
func TestFabricSweepRingOrderAuto(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		err  string // "": taken
	}{
		{"mesh and rdh", []string{"--system", "trn2-48xl", "-b", "1K", "-e", "32M", "-f", "32", "--ring-order", "ranks"},
			"--ring-order: algo auto runs no ring at any size here (all_reduce on 16 ranks: auto runs mesh up to 32768 bytes, rdh up to 33554432 bytes), so the ring order would change nothing"},
		{"an order listed", []string{"--arch", "cayman", "--devices", "4", "--topology", "ring", "-b", "1K", "-e", "1K", "--ring-order", "0,2,1,3"},
			"--ring-order: algo auto runs no ring at any size here (all_reduce on 4 ranks: auto runs mesh up to 1024 bytes)"},
		{"every count", []string{"--arch", "cayman", "--devices", "4,8", "--topology", "ring", "-b", "1K", "-e", "1K", "--ring-order", "ranks"},
			"--ring-order: algo auto runs no ring at any size here (all_reduce on 4 ranks: auto runs mesh up to 1024 bytes)"},
		{"ring at 64 MiB", []string{"--system", "trn2-48xl", "-b", "32M", "-e", "64M", "-f", "2", "--ring-order", "ranks"}, ""},
		{"ring on one count", []string{"--arch", "cayman", "--devices", "8,12", "--topology", "ring", "-b", "3M", "-e", "3M", "--ring-order", "ranks"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, append([]string{"fabric", "sweep"}, tc.args...)...)
			if tc.err == "" {
				require.NoError(t, err, out)
				assert.Contains(t, out, "# ring_order: rank order, as asked")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}
