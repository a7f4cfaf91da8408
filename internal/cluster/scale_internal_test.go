package cluster

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// TestRunCounts: the descriptor pairs TimingMemory counts for a run bound
// what the executor really planned (collective.Result.Descriptors) from
// above, within 1.5×, for every collective the sweeps run, small transfers
// (one slice per element) and transfers past 64 KiB per engine alike.
func TestRunCounts(t *testing.T) {
	for _, tc := range []struct {
		op      enc.Op
		algo    enc.Algo
		ranks   int
		size    int64
		engines int
	}{
		{enc.AllReduce, enc.Ring, 8, 8 << 10, 7},
		{enc.AllReduce, enc.Ring, 8, 16 << 20, 7},
		{enc.AllReduce, enc.Ring, 16, 1 << 20, 1},
		{enc.AllGather, enc.Ring, 8, 4 << 20, 7},
		{enc.ReduceScatter, enc.Ring, 8, 4 << 20, 3},
		{enc.AllReduce, enc.RDH, 16, 1 << 20, 7},
		{enc.AllReduce, enc.Mesh, 8, 64 << 10, 7},
		{enc.AllReduce, enc.Ring, 8, 64, 7},
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
