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
			pairs, records, xfers := runCounts(s, tc.engines)
			assert.GreaterOrEqual(t, pairs, uint64(res.Descriptors), "planned %d descriptor pairs", res.Descriptors)
			assert.LessOrEqual(t, float64(pairs), 1.5*float64(res.Descriptors), "planned %d descriptor pairs", res.Descriptors)
			assert.Positive(t, records)
			n := 0
			for _, st := range s.Steps {
				n += len(st.Xfers)
			}
			assert.Equal(t, uint64(n), xfers)
		})
	}
}
