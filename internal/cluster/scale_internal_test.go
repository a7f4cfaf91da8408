package cluster

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// countCase is a collective and the data engines a rank spreads it over.
type countCase struct {
	op      enc.Op
	algo    enc.Algo
	ranks   int
	size    int64
	engines int
	opt     enc.Options
}

// TestRunCounts: the descriptor pairs TimingMemory counts for a run bound
// what the executor really planned (collective.Result.Descriptors) from
// above, within 1.5×, for every collective the sweeps run, small transfers
// (one slice per element) and transfers past 64 KiB per engine alike.
func TestRunCounts(t *testing.T) {
	for _, tc := range []countCase{
		{enc.AllReduce, enc.Ring, 8, 8 << 10, 7, enc.Options{}},
		{enc.AllReduce, enc.Ring, 8, 16 << 20, 7, enc.Options{}},
		{enc.AllReduce, enc.Ring, 16, 1 << 20, 1, enc.Options{}},
		{enc.AllGather, enc.Ring, 8, 4 << 20, 7, enc.Options{}},
		{enc.ReduceScatter, enc.Ring, 8, 4 << 20, 3, enc.Options{}},
		{enc.AllReduce, enc.RDH, 16, 1 << 20, 7, enc.Options{}},
		{enc.AllReduce, enc.Mesh, 8, 64 << 10, 7, enc.Options{}},
		{enc.AllReduce, enc.Ring, 8, 64, 7, enc.Options{}},
	} {
		t.Run(fmt.Sprintf("%s/%s/%d/%d/%d", tc.op, tc.algo, tc.ranks, tc.size, tc.engines), func(t *testing.T) {
			s, err := enc.Build(tc.op, tc.algo, tc.ranks, tc.size, 4, enc.Options{})
			require.NoError(t, err)
			need, err := BufferNeed(tc.op, tc.algo, tc.ranks, enc.Float32, []int64{tc.size}, enc.Options{})
			require.NoError(t, err)
			c, err := New(Config{Generation: hwarch.Mariana, Devices: tc.ranks, Switch: hwarch.SwitchV1, TimingOnly: true, BufferBytes: need})
			require.NoError(t, err)
			c.Exec.Engines = tc.engines
			res, err := c.Run(s, enc.Float32)
			require.NoError(t, err)
			cnt := runCounts(s, tc.engines)
			assert.GreaterOrEqual(t, cnt.pairs, uint64(res.Descriptors), "planned %d descriptor pairs", res.Descriptors)
			assert.LessOrEqual(t, float64(cnt.pairs), 1.5*float64(res.Descriptors), "planned %d descriptor pairs", res.Descriptors)
			assert.Positive(t, cnt.rankRecords)
			assert.GreaterOrEqual(t, cnt.records, uint64(tc.ranks)*cnt.rankRecords/2, "a rank's records are about a share of all")
			n := 0
			for _, st := range s.Steps {
				n += len(st.Xfers)
			}
			assert.Equal(t, uint64(n), cnt.xfers)
		})
	}
}

// TestTimingMemory: a streamed run's estimate of a 1 GiB ring all-reduce
// on 1,024 devices fits a 24 GiB host's default limit (3/4 of it), where
// the staged estimate (every descriptor planned and written up front) does
// not; and a streamed run never needs more than a staged one.
func TestTimingMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 1,024-rank schedules")
	}
	for _, tc := range []struct {
		devices              int
		size                 int64
		streamMax, stagedMin uint64
	}{
		{1024, 1 << 30, 8 << 30, 20 << 30},
		{144, 1 << 30, 1 << 30, 1 << 30},
	} {
		streamed, err := TimingMemory(enc.AllReduce, enc.Ring, tc.devices, tc.devices, 0, enc.Float32, []int64{tc.size}, enc.Options{})
		require.NoError(t, err)
		staged, err := StagedTimingMemory(enc.AllReduce, enc.Ring, tc.devices, tc.devices, 0, enc.Float32, []int64{tc.size}, enc.Options{})
		require.NoError(t, err)
		t.Logf("%d devices: streamed %d MiB, staged %d MiB", tc.devices, streamed>>20, staged>>20)
		assert.Less(t, streamed, tc.streamMax, "%d devices streamed", tc.devices)
		assert.Greater(t, staged, tc.stagedMin, "%d devices staged", tc.devices)
		assert.Less(t, streamed, staged, "%d devices", tc.devices)
	}
}

// TestCountedEstimateIsBuilt: TimingMemory, StagedTimingMemory and
// CountTimingMemory, which count each schedule with enc.Count and never
// build it, give what the built schedule gives (scheduleMemory), for ring, mesh, RDH, hierarchical
// and channelled flat-ring collectives of every op the sweeps run.
func TestCountedEstimateIsBuilt(t *testing.T) {
	for _, tc := range []countCase{
		{enc.AllReduce, enc.Ring, 8, 16 << 20, 7, enc.Options{}},
		{enc.AllReduce, enc.Ring, 32, 64 << 20, 7, enc.Options{GroupSize: 16, Channels: 8}},
		{enc.AllGather, enc.Ring, 8, 4 << 20, 3, enc.Options{Chunks: 3}},
		{enc.ReduceScatter, enc.Mesh, 8, 4 << 20, 7, enc.Options{}},
		{enc.AllReduce, enc.RDH, 16, 1 << 20, 7, enc.Options{}},
		{enc.AllReduce, enc.Hier, 32, 8 << 20, 7, enc.Options{GroupSize: 16}},
		{enc.AllToAll, enc.Mesh, 16, 16 << 10, 1, enc.Options{}},
		{enc.AllReduce, enc.Ring, 8, 64, 16, enc.Options{}},
	} {
		t.Run(fmt.Sprintf("%s/%s/%d/%d/%+v", tc.op, tc.algo, tc.ranks, tc.size, tc.opt), func(t *testing.T) {
			s, err := enc.Build(tc.op, tc.algo, tc.ranks, tc.size, 4, tc.opt)
			require.NoError(t, err)
			for _, staged := range []bool{false, true} {
				got, at, err := timingMemory(tc.op, tc.algo, tc.ranks, tc.ranks, tc.engines, enc.Float32, []int64{tc.size}, tc.opt, staged, ^uint64(0))
				require.NoError(t, err)
				assert.Equal(t, tc.size, at)
				assert.Equal(t, scheduleMemory(s, tc.engines, staged)+FixedTimingMemory(tc.ranks), got, "staged %v", staged)
			}
			var visited int
			head, part, err := CountTimingMemory(tc.op, tc.algo, tc.ranks, tc.size, 4, tc.opt, tc.engines, func(int, enc.Xfer) { visited++ })
			require.NoError(t, err)
			assert.Equal(t, scheduleMemory(s, tc.engines, false), part)
			assert.Equal(t, int(countSchedule(s, tc.engines).c.xfers), visited, "the visitor sees every transfer")
			want := *s
			want.Steps = nil
			assert.Equal(t, &want, head)
		})
	}
}

// scheduleMemory is what running s holds, streamed or staged, doubled for
// the collector.
func scheduleMemory(s *enc.Schedule, engines int, staged bool) uint64 {
	return countSchedule(s, engines).memory(staged)
}

// countSchedule is a counter of every transfer of the built schedule s.
func countSchedule(s *enc.Schedule, engines int) *counter {
	ct := newCounter(s.Ranks, s.Elem, engines)
	for i, st := range s.Steps {
		for _, xf := range st.Xfers {
			ct.add(i, xf)
		}
	}
	return ct
}

// runCounts counts what the executor plans for schedule s (counter).
func runCounts(s *enc.Schedule, engines int) counts { return countSchedule(s, engines).counts() }

// TestTimingMemoryOverStopsEarly: TimingMemoryOver counts the algorithms'
// largest sizes largest first and stops at the first over the limit — one
// schedule counted for a sweep of 1,024 sizes whose largest is too large,
// not one per size nor per algorithm — and within the limit counts them
// all and agrees with TimingMemory.
func TestTimingMemoryOverStopsEarly(t *testing.T) {
	const ranks = 64
	var sizes []int64
	for s := int64(64 << 10); s <= 64<<20; s += 64 << 10 {
		sizes = append(sizes, s)
	}
	require.Len(t, sizes, 1024)
	reps := Largest(enc.AllReduce, enc.Auto, ranks, sizes, enc.Options{})
	require.Greater(t, len(reps), 1, "auto runs several algorithms over the sweep: %v", reps)
	full, err := TimingMemory(enc.AllReduce, enc.Auto, ranks, ranks, 7, enc.Float32, sizes, enc.Options{})
	require.NoError(t, err)
	fixed := FixedTimingMemory(ranks)
	for _, tc := range []struct {
		name     string
		limit    uint64
		counted  int
		over     bool
		wantSize int64
	}{
		{"the largest over the limit", fixed + 1, 1, true, sizes[len(sizes)-1]},
		{"within the limit", full, len(reps), false, 0},
		{"no limit", ^uint64(0), len(reps), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counted := 0
			estimateCount = func(op enc.Op, algo enc.Algo, ranks int, size int64, elem int, opt enc.Options, engines int, visit func(int, enc.Xfer)) (*enc.Schedule, *counter, error) {
				counted++
				return countRun(op, algo, ranks, size, elem, opt, engines, visit)
			}
			t.Cleanup(func() { estimateCount = countRun })
			need, size, err := TimingMemoryOver(enc.AllReduce, enc.Auto, ranks, ranks, 7, enc.Float32, sizes, enc.Options{}, tc.limit)
			require.NoError(t, err)
			assert.Equal(t, tc.counted, counted, "schedules counted")
			assert.Equal(t, tc.over, need > tc.limit, "need %d, limit %d", need, tc.limit)
			if tc.over {
				assert.Equal(t, tc.wantSize, size)
				assert.LessOrEqual(t, need, full, "a lower bound on the peak")
				return
			}
			assert.Equal(t, full, need, "within the limit: TimingMemory")
			assert.Contains(t, sizes, size)
		})
	}
}
