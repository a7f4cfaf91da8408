package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

// TestFabricSweep: the table's busbw is the factor × algbw on every row,
// times grow with size, large sizes approach the link limit, and the JSON
// report reads back; on 32 mariana devices (v1 switch) and the Trn2 torus.
func TestFabricSweep(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		ops   string
		limit float64 // GB/s: the slower of a device's link and its rank's DMA engines
	}{
		// mariana: 128 GB/s in-server links; 5 engines × 33 GB/s = 165.
		{"mariana-32", []string{"--arch", "mariana", "--devices", "32"}, "all_reduce", 128},
		// cayman: 256 GB/s torus links; 5 engines × 23 GB/s = 115.
		{"cayman-16", []string{"--arch", "cayman", "--devices", "16"}, "all_gather", 115},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "report.json")
			args := append([]string{"fabric", "sweep", "--op", tc.ops, "-b", "64K", "-e", "256M", "-f", "16", "--json", js}, tc.args...)
			out, err := runCLI(t, args...)
			require.NoError(t, err, out)
			assert.Contains(t, out, "size(B)    count(elems)    type    time:avg(us)    algbw(GB/s)    busbw(GB/s)    algorithm")
			assert.Contains(t, out, "Avg bus bandwidth:")
			f, err := os.Open(js)
			require.NoError(t, err)
			defer f.Close()
			rep, err := nccom.ReadJSON(f)
			require.NoError(t, err)
			require.Len(t, rep.Rows, 4)
			factor, err := nccom.BusFactor(tc.ops, rep.Ranks)
			require.NoError(t, err)
			for i, r := range rep.Rows {
				assert.InDelta(t, factor*r.AlgBW, r.BusBW, 1e-9*r.BusBW, "row %d: busbw = factor × algbw", i)
				if i > 0 {
					assert.Greater(t, r.TimeUS, rep.Rows[i-1].TimeUS, "time grows with size")
				}
			}
			last := rep.Rows[len(rep.Rows)-1]
			assert.Greater(t, last.BusBW, 0.6*tc.limit, "large sizes approach the modelled limit")
			assert.LessOrEqual(t, last.BusBW, tc.limit, "and do not pass it")
			for i := 1; i < len(rep.Rows); i++ {
				assert.Greater(t, rep.Rows[i].BusBW, rep.Rows[i-1].BusBW, "busbw grows with size")
			}
		})
	}
}

// TestFabricSweepFunctionalAndPlot: a functional sweep checks every size's
// data against the CPU reference; --devices with a list and --plot draw
// one line per count.
func TestFabricSweepFunctionalAndPlot(t *testing.T) {
	png := filepath.Join(t.TempDir(), "busbw.png")
	out, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "2,4", "--topology", "ring", "--op", "reduce_scatter",
		"-b", "4K", "-e", "64K", "-f", "4", "--mode", "functional", "--datatype", "bf16", "--plot", png)
	require.NoError(t, err, out)
	assert.Equal(t, 2, strings.Count(out, "Avg bus bandwidth"), "a table per device count")
	b, err := os.ReadFile(png)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(b[:4]))
}

func TestFabricSweepErrors(t *testing.T) {
	for name, tt := range map[string]struct {
		args []string
		want string // the error names what is wrong
	}{
		"too many devices":    {[]string{"--arch", "mariana", "--devices", "33"}, "--devices 33"},
		"bad op":              {[]string{"--op", "broadcast"}, `--op: enc: unknown collective op "broadcast"`},
		"bad algo":            {[]string{"--algo", "tree"}, `--algo: enc: unknown collective algorithm "tree"`},
		"bad mode":            {[]string{"--mode", "fast"}, `--mode "fast"`},
		"bad size":            {[]string{"-b", "1X"}, `-b/--minbytes "1X": unknown unit "X"`},
		"bad max size":        {[]string{"-e", "1.5G"}, `-e/--maxbytes "1.5G": sizes are integers only`},
		"bad step":            {[]string{"-i", "-1"}, `-i/--stepbytes "-1": sizes are unsigned integers`},
		"every byte to 2^63":  {[]string{"-b", "0", "-e", "9223372036854775807", "-i", "1"}, "-e/--maxbytes 9223372036854775807B: above the largest collective, 1048576TiB"},
		"every byte to 1 EiB": {[]string{"-b", "0", "-e", "1048576T", "-i", "1"}, "0B to 1048576TiB by 1 bytes is 1152921504606846977 points (at most 10000)"},
		"functional too big":  {[]string{"--arch", "mariana", "--devices", "32", "--mode", "functional", "-b", "1G", "-e", "1G"}, "all_reduce of 1 GiB on 32 ranks needs about 386 GiB of memory, more than the limit of"},
		"rdh on 12":           {[]string{"--arch", "sunda", "--devices", "12", "--algo", "rdh", "-b", "1M", "-e", "1M"}, "rdh needs a power-of-two rank count, not 12"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := runCLI(t, append([]string{"fabric", "sweep"}, tt.args...)...)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestFabricTopo(t *testing.T) {
	out, err := runCLI(t, "fabric", "topo", "--arch", "cayman", "--devices", "16")
	require.NoError(t, err)
	assert.Contains(t, out, "topology: torus2d, 16 devices")
	assert.Contains(t, out, "*––►  0 ◄––►  1 ◄––►  2 ◄––►  3 ◄––*")
	out, err = runCLI(t, "fabric", "topo", "--arch", "mariana", "--devices", "32")
	require.NoError(t, err)
	assert.Contains(t, out, "in-server switch l1-sw1")
}

// TestFabricSweepPcap: --pcap writes the sweep's fabric packets, readable
// back, between the devices of the system.
func TestFabricSweepPcap(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sweep.pcap")
	out, err := runCLI(t, "fabric", "sweep", "--arch", "mariana", "--devices", "4", "--op", "all_gather", "-b", "16K", "-e", "16K",
		"--mode", "functional", "--pcap", file)
	require.NoError(t, err, out)
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	pkts, err := capture.ReadAll(f)
	require.NoError(t, err)
	require.NotEmpty(t, pkts)
	assert.Contains(t, out, "# pcap_packets: ")
	for _, p := range pkts {
		assert.Less(t, int(p.Header.Src), 4)
		assert.Less(t, int(p.Header.Dst), 4)
	}
}

// TestLinkBandwidthUnits: --link-bw takes a bandwidth with its unit —
// 50GiB/s is 50·2^30 B/s, 400Gbps is 50·10^9 B/s — and refuses a bare
// number, which was read as GB/s of 10^9: whether 50 meant GB/s, GiB/s or
// Gbps is what the unit must say.
func TestLinkBandwidthUnits(t *testing.T) {
	for _, tc := range []struct{ bw, want string }{
		{"50GiB/s", "53.6870912 GB/s (50 GiB/s)"},
		{"0.015GB/s", "in-server links: 0.015 GB/s,"},
		{"400Gbps", "in-server links: 50 GB/s,"},
		{"53.7GB/s", "in-server links: 53.7 GB/s,"},
		{"50GB/s", "in-server links: 50 GB/s,"},
	} {
		out, err := runCLI(t, "fabric", "topo", "--arch", "mariana", "--devices", "4", "--topology", "switch", "--server-size", "4", "--link-bw", tc.bw)
		require.NoError(t, err, tc.bw)
		assert.Contains(t, out, tc.want, tc.bw)
	}
	for _, bw := range []string{"50", "0.015", "53.7"} {
		_, err := runCLI(t, "fabric", "topo", "--arch", "mariana", "--devices", "4", "--link-bw", bw)
		require.Error(t, err, bw)
		assert.Contains(t, err.Error(), "--link-bw \""+bw+"\": no unit: a bare number is not read; say which, as "+bw+"GB/s (10^9 B/s), "+bw+"GiB/s (2^30 B/s) or "+bw+"Gbps (bits)")
	}
}

// TestEndpointsIdealSweep: with --endpoints ideal a ring all-reduce of
// 16 MiB on 4 devices behind one switch takes the α-β time
// 2(n−1)(2α + S/(nB)) plus the small per-step and per-collective costs the
// mode leaves (docs/fabric.md §Parity mode): within 5 % of the bare
// formula, and well under the same sweep with real endpoints.
func TestEndpointsIdealSweep(t *testing.T) {
	sweep := func(extra ...string) float64 {
		t.Helper()
		args := append([]string{"fabric", "sweep", "--arch", "mariana", "--devices", "4", "--topology", "switch", "--server-size", "4",
			"--model", "free", "--link-bw", "50GiB/s", "--link-latency", "500", "--algo", "ring", "-b", "16M", "-e", "16M"}, extra...)
		out, err := runCLI(t, args...)
		require.NoError(t, err)
		return sweepTimesUS(t, out)[16<<20]
	}
	ideal, real := sweep("--endpoints", "ideal"), sweep()
	const n, alpha, S, B = 4.0, 0.5, 16 << 20, 50 << 30 // µs, bytes, bytes/s
	bare := 2 * (n - 1) * (2*alpha + S/(n*B)*1e6)
	assert.GreaterOrEqual(t, ideal, bare)
	assert.Less(t, ideal, bare*1.05, "ideal %.2f µs, α-β %.2f µs", ideal, bare)
	assert.Less(t, ideal, real*0.95, "real endpoints %.2f µs", real)
}

// sweepTimesUS reads a fabric sweep's table: each row's time in µs by its
// size in bytes.
func sweepTimesUS(t *testing.T, out string) map[int64]float64 {
	t.Helper()
	times := map[int64]float64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 7 || f[2] == "type" {
			continue
		}
		size, err := strconv.ParseInt(f[0], 10, 64)
		require.NoError(t, err, line)
		us, err := strconv.ParseFloat(f[3], 64)
		require.NoError(t, err, line)
		times[size] = us
	}
	require.NotEmpty(t, times, "no rows in:\n%s", out)
	return times
}

// TestLinkBWEveryGen2Link: --link-bw B gives every link of the Trn3 Gen2
// UltraServer exactly B, its two second-level links per device too (they
// once got B/2 each: the builder split the inter-server bundle over them),
// as the flag's help and docs/fabric.md say; unset, they keep half the
// inter-server bundle each. In the parity mode a ring all-reduce of S
// bytes over the 144 devices — every ring step 2 links, inside a server or
// through a second-level switch — then takes docs/fabric.md's
// 2(n−1)·(2α + k·S/(nB) + δ) + γ with every link at B (δ = 2α + 109 ns,
// γ = 4α + 170 ns; k = 1 free, 2 aware), within 0.5 %: at B/2 on the
// second-level links it took up to 67 % longer (aware, 16 MiB).
func TestLinkBWEveryGen2Link(t *testing.T) {
	out, err := runCLI(t, "fabric", "topo", "--system", "trn3-gen2", "--link-bw", "10GB/s")
	require.NoError(t, err)
	assert.Contains(t, out, "every device also links to l2-sw1 (inter-server links: 10 GB/s, 500 ns)")
	assert.Equal(t, 36, strings.Count(out, "(in-server links: 10 GB/s, 500 ns)"))
	assert.Equal(t, 72, strings.Count(out, "(inter-server links: 10 GB/s, 500 ns)"))
	assert.Equal(t, 36+72, strings.Count(out, " GB/s, "), "no link of another bandwidth")
	out, err = runCLI(t, "fabric", "topo", "--system", "trn3-gen2")
	require.NoError(t, err)
	assert.Equal(t, 72, strings.Count(out, "(inter-server links: 80 GB/s, 500 ns)"), "unset: half the 160 GB/s bundle to each")

	if testing.Short() || raceEnabled {
		t.Skip("brings up a 144-device system: skipped under -short and the race detector")
	}
	const n, alpha, B = 144.0, 500.0, 50 << 30 // devices, ns, bytes/s
	const delta, gamma = 2*alpha + 109, 4*alpha + 170
	for _, tc := range []struct {
		model string
		k     float64
	}{{"free", 1}, {"aware", 2}} {
		out, err := runCLI(t, "fabric", "sweep", "--system", "trn3-gen2", "--endpoints", "ideal", "--link-bw", "50GiB/s",
			"--link-latency", "500", "--model", tc.model, "--algo", "ring", "--op", "all_reduce", "-b", "64K", "-e", "16M", "-f", "16")
		require.NoError(t, err)
		times := sweepTimesUS(t, out)
		require.Len(t, times, 3, out)
		for size, got := range times {
			want := (2*(n-1)*(2*alpha+tc.k*float64(size)/(n*B)*1e9+delta) + gamma) / 1000
			assert.InEpsilon(t, want, got, 0.005, "%s, %d bytes: %.2f µs, the formula %.2f µs", tc.model, size, got, want)
		}
	}
}

// TestFabricSweepMinZero: -b 0 keeps the rule a scenario's min: 0 keeps
// (nccom.CheckRange): with a step its first size is one granule; with -f
// it is refused naming -b/--minbytes; -e below -b names -e/--maxbytes
// (until 2026-12-07 these said "nccom: bad sweep: …" naming no flag, and a
// scenario refused min: 0 outright).
func TestFabricSweepMinZero(t *testing.T) {
	out, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "2", "-b", "0", "-e", "4K", "-i", "1K")
	require.NoError(t, err, out)
	assert.Regexp(t, `\n +4 +1 +fp32 `, out, "0 runs one granule")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-b", "0", "-e", "4K", "-f", "2"}, "-b/--minbytes 0: -f/--stepfactor 2 would never grow it: give at least 1 byte, or -i/--stepbytes instead"},
		{[]string{"-b", "8K", "-e", "4K"}, "-e/--maxbytes 4KiB: below -b/--minbytes (8KiB)"},
		// The bounds only the sizes themselves refuse name their flag too
		// (once "nccom: bad sweep: maximum size 0B is below the alignment
		// 4B …", "… both a step factor (2) and a step (1024) given; use
		// one", "… 1B to 1MiB by 1 bytes is 1048576 points …").
		{[]string{"-b", "0", "-e", "0"}, "-e/--maxbytes 0B: below the alignment 4B (the element size, times the ranks for an op that splits its buffer): no size in the sweep is a multiple of it"},
		{[]string{"-b", "1K", "-e", "4K", "-f", "2", "-i", "1K"}, "-i/--stepbytes 1KiB: and -f/--stepfactor 2 both given; use one"},
		{[]string{"-b", "1", "-e", "1M", "-i", "1"}, "-i/--stepbytes 1B: 1B to 1MiB by 1 bytes is 1048576 points (at most 10000)"},
	} {
		_, err := runCLI(t, append([]string{"fabric", "sweep", "--arch", "cayman", "--devices", "2"}, tc.args...)...)
		assert.EqualError(t, err, tc.want, tc.args)
	}
}

// TestFabricSweepBuffersBeyondHBM: a sweep whose largest size needs more
// buffers a rank than a device holds for each of its ranks
// (cluster.BufferCapacity) is refused before any device is brought up,
// naming -e/--maxbytes and the bound; it was refused by the device-memory
// allocator after bring-up ("cluster: device 0 NC 0 buffers of … bytes:
// dmem: alloc … out of device memory"), naming no flag. A size within the
// bound still runs.
func TestFabricSweepBuffersBeyondHBM(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--arch", "trn3", "--devices", "2", "-b", "18G", "-e", "18G"},
			[]string{"-e/--maxbytes 18G: all_reduce of 19327352832 bytes on 2 ranks needs 38654709760 bytes", "a mariana device of 1 rank holds at most 37564186624 (35824MiB) for each"}},
		{[]string{"--arch", "trn3", "--devices", "2", "--ranks-per-device", "8", "-b", "10G", "-e", "10G"},
			[]string{"-e/--maxbytes 10G:", "a mariana device of 8 ranks holds at most 18782093312 (17912MiB)"}},
		{[]string{"--arch", "cayman", "--devices", "2", "-b", "1K", "-e", "1T", "-f", "1024"},
			[]string{"-e/--maxbytes 1T:", "(23536MiB)"}},
		{[]string{"--arch", "trn3", "--devices", "2", "--op", "all_gather", "-b", "24G", "-e", "24G"},
			[]string{"-e/--maxbytes 24G: all_gather", "(35824MiB)"}},
	} {
		_, err := runCLI(t, append([]string{"fabric", "sweep"}, tc.args...)...)
		require.Error(t, err, tc.args)
		for _, w := range tc.want {
			assert.Contains(t, err.Error(), w, tc.args)
		}
		assert.NotContains(t, err.Error(), "dmem", tc.args)
	}
	out, err := runCLI(t, "fabric", "sweep", "--arch", "trn3", "--devices", "2", "--op", "permute", "-b", "17G", "-e", "17G")
	require.NoError(t, err)
	assert.Contains(t, out, "18253611008")
}
