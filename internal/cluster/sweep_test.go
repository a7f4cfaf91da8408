package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestLargestBoundsTheSweep: the buffers of each algorithm's largest size
// are what the whole sweep needs, for every op, on rank counts that make
// Auto change algorithm along the sweep.
func TestLargestBoundsTheSweep(t *testing.T) {
	for _, op := range []enc.Op{enc.AllReduce, enc.AllGather, enc.ReduceScatter, enc.AllToAll, enc.Permute} {
		for _, ranks := range []int{2, 8, 16} {
			align := int64(4)
			if op == enc.AllGather || op == enc.ReduceScatter || op == enc.AllToAll {
				align *= int64(ranks)
			}
			sizes, err := nccom.Sizes(4096, 64<<20, 2, 0, align)
			require.NoError(t, err)
			full, err := BufferNeed(op, enc.Auto, ranks, enc.Float32, sizes, enc.Options{})
			require.NoError(t, err)
			var grouped uint64
			reps := Largest(op, enc.Auto, ranks, sizes, enc.Options{})
			for _, r := range reps {
				n, err := BufferNeed(op, r.Algo, ranks, enc.Float32, []int64{r.Size}, enc.Options{})
				require.NoError(t, err)
				grouped = max(grouped, n)
			}
			assert.Equal(t, full, grouped, "%v on %d ranks (%v)", op, ranks, reps)
			mem, err := FunctionalMemory(op, enc.Auto, ranks, enc.Float32, sizes, enc.Options{})
			require.NoError(t, err)
			assert.GreaterOrEqual(t, mem, 2*uint64(ranks)*full, "the estimate covers every rank's device buffers, doubled")
		}
	}
	reps := Largest(enc.AllReduce, enc.Ring, 4, []int64{64, 4096, 1024}, enc.Options{})
	assert.Equal(t, []AlgoSize{{enc.Ring, 4096}}, reps)
}

// TestTimeResolution: a collective's time is when the host saw rank 0
// done, and Result.ResolutionPS bounds how much earlier rank 0 finished,
// so rank 0 finished in [TimePS − ResolutionPS, TimePS]: the same
// collective polled every 100 ns and every 1 ns (each poll is a status
// read of about 1 µs over PCIe, so the two see it done at different
// times) gives two such intervals, which must hold one finish between
// them; a sweep's report says the largest of its rows'.
func TestTimeResolution(t *testing.T) {
	run := func(poll time.Duration) collective.Result {
		c, err := New(Config{Generation: hwarch.Cayman, Devices: 2, Kind: fabric.KindRing, TimingOnly: true, BufferBytes: 1 << 20})
		require.NoError(t, err)
		c.Exec.PollResolution = poll
		_, res, err := c.Collective(enc.AllReduce, enc.Ring, enc.Float32, 64<<10, 0, enc.Options{})
		require.NoError(t, err)
		return res
	}
	usual, fine := run(0), run(time.Nanosecond)
	for _, r := range []collective.Result{usual, fine} {
		assert.Less(t, r.ResolutionPS, r.TimePS)
		assert.GreaterOrEqual(t, r.ResolutionPS, uint64(500_000), "a poll's status read crosses PCIe")
	}
	assert.NotEqual(t, usual.TimePS, fine.TimePS, "the two see rank 0 done at different times")
	assert.LessOrEqual(t, max(usual.TimePS-usual.ResolutionPS, fine.TimePS-fine.ResolutionPS), min(usual.TimePS, fine.TimePS),
		"one finish in both intervals: %+v, %+v", usual, fine)

	res, err := RunSweeps(sweepSet(2))
	require.NoError(t, err)
	note, ok := res.Reports[0].Extra[TimeResolutionKey].(string)
	require.True(t, ok, "the report says its time resolution")
	assert.Contains(t, note, "µs: each time is when the host saw rank 0 done")
}

// TestAutoNotes: the notes a sweep whose algorithm auto chose adds about
// its 1 MiB row. On a rank count that is not a power of two auto goes from
// mesh straight to ring at MeshMax (RDH needs a power of two), and the
// report says so (AutoRingKey); on two ranks it takes rdh there, whose rows
// are doubtful (AutoRDHKey); on four ranks it takes rdh and says nothing;
// an algorithm asked for is not noted.
func TestAutoNotes(t *testing.T) {
	for _, tc := range []struct {
		key     string
		devices int
		algo    enc.Algo
		row     string // the 1 MiB row's algorithm, when noted
		says    string // part of the note, when noted
		op      enc.Op // the sweep's (all_reduce when left out)
	}{
		{AutoRingKey, 3, enc.Auto, "ring", "3 ranks are not one, so auto goes from mesh (below 1MiB) straight to ring", 0},
		{AutoRingKey, 4, enc.Auto, "", "", 0},
		{AutoRingKey, 3, enc.Ring, "", "", 0},
		{AutoRDHKey, 2, enc.Auto, "rdh", "the published 2-rank Trn1 all-reduce (trainium-facts §5.3 (a)) is up to twice as fast", 0},
		{AutoRDHKey, 4, enc.Auto, "", "", 0},
		{AutoRDHKey, 2, enc.RDH, "", "", 0},
		// On another op the note does not hold it to the all-reduce's table.
		{AutoRDHKey, 2, enc.Auto, "rdh", "are of the all-reduce only (trainium-facts §5.3 (a)), which they show up to twice as fast as rdh runs it at these sizes (docs/timing-model.md §Calibration); this all_gather runs rdh the same way", enc.AllGather},
	} {
		set := sweepSet(tc.devices)
		set.Sweep.Algo = tc.algo
		if tc.op != 0 {
			set.Sweep.Op = tc.op
		}
		set.Systems[0].Sizes = []int64{256 << 10, 1 << 20}
		res, err := RunSweeps(set)
		require.NoError(t, err)
		rep := res.Reports[0]
		note, ok := rep.Extra[tc.key].(string)
		assert.Equal(t, tc.says != "", ok, "%s: %d devices, %v: rows %+v", tc.key, tc.devices, tc.algo, rep.Rows)
		if tc.says != "" {
			assert.Equal(t, tc.row, rep.Rows[1].Algorithm)
			assert.Contains(t, note, tc.says)
		}
	}
}

// TestPermuteHBMBound: a 256 MiB permute between the NeuronCores of one
// device, 16 engines per rank, is a copy from HBM to HBM on every rank —
// n bytes read and n written — and the engines could go faster than the
// HBM: the HBM traffic, ranks × busbw × 2, stays at or under the HBM's
// bandwidth (its figure counts reads and writes together), and within a
// tenth of it (the launch cost and the ring's ends take the rest).
func TestPermuteHBMBound(t *testing.T) {
	const size = 256 << 20
	for _, gen := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman, hwarch.Mariana} {
		t.Run(gen.String(), func(t *testing.T) {
			ranks := hwarch.MustGeometry(gen).NeuronCores
			need, err := BufferNeed(enc.Permute, enc.Auto, ranks, enc.Float32, []int64{size}, enc.Options{})
			require.NoError(t, err)
			c, err := New(Config{Generation: gen, Devices: 1, Kind: fabric.KindRing, TimingOnly: true, RanksPerDevice: ranks, BufferBytes: need})
			require.NoError(t, err)
			c.Exec.Engines = 16
			row, _, err := c.Collective(enc.Permute, enc.Auto, enc.Float32, size, 0, enc.Options{})
			require.NoError(t, err)
			hbm := float64(dma.DefaultTiming(gen).HBMBandwidth) / 1e9 // GB/s
			traffic := float64(ranks) * row.BusBW * 2
			assert.LessOrEqual(t, traffic, hbm, "%d ranks × %.2f GB/s × 2 against the HBM's %.1f GB/s", ranks, row.BusBW, hbm)
			assert.Greater(t, traffic, 0.9*hbm, "HBM-bound: %d ranks × %.2f GB/s × 2 against %.1f GB/s", ranks, row.BusBW, hbm)
		})
	}
}

// TestSweepStoppedBySize: a size that does not finish in the device time a
// collective may take stops the sweep with an error naming it, and the
// report of the sizes before it comes with the error, its notes made of
// them and IncompleteKey saying where and why it stopped and how many
// sizes were not run; a sweep whose sizes all finish has no such key.
func TestSweepStoppedBySize(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int64
		rows  int
		note  string // "": complete
	}{
		{"the last size", []int64{4 << 10, 8 << 10, 64 << 20}, 2, "the sweep stopped at 67108864 bytes, which failed: 2 devices, 2 ranks, 67108864 bytes: "},
		{"sizes after it", []int64{4 << 10, 64 << 20, 128 << 20, 4 << 10}, 1, "the sweep stopped at 67108864 bytes (2 sizes after it not run), which failed: "},
		{"the first size", []int64{64 << 20}, 0, "the sweep stopped at 67108864 bytes, which failed: "},
		{"complete", []int64{4 << 10, 8 << 10}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			need, err := BufferNeed(enc.AllReduce, enc.Ring, 2, enc.Float32, tc.sizes, enc.Options{})
			require.NoError(t, err)
			c, err := New(Config{Generation: hwarch.Cayman, Devices: 2, Kind: fabric.KindRing, TimingOnly: true, BufferBytes: need})
			require.NoError(t, err)
			c.Exec.Timeout = 200 * time.Microsecond // 4 KiB takes about 18 µs, 64 MiB far more
			rep, err := c.Sweep(Sweep{Op: enc.AllReduce, Algo: enc.Ring, Dtype: enc.Float32, Sizes: tc.sizes})
			require.NotNil(t, rep)
			assert.Len(t, rep.Rows, tc.rows)
			usage, ok := LinkUsageOf(rep)
			require.True(t, ok, "the notes are made of the rows done")
			assert.Len(t, usage, tc.rows)
			if tc.note == "" {
				require.NoError(t, err)
				assert.NotContains(t, rep.Extra, IncompleteKey)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "67108864 bytes")
			assert.Contains(t, err.Error(), "not done after 200µs of device time")
			assert.Contains(t, rep.Extra[IncompleteKey], tc.note)
			assert.Contains(t, rep.Extra[IncompleteKey], err.Error())
			require.NoError(t, rep.Validate())
		})
	}
}
