package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
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
