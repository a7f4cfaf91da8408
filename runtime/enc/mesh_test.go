package enc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMeshOrderStaggers: in every mesh step that sends between ranks,
// rank i lists its transfers to ranks i, i+1, …, i+r−1 (mod r) in that
// order (meshOrder) — each rank's first transfer to another rank goes to
// a different rank — for every op and several rank counts.
func TestMeshOrderStaggers(t *testing.T) {
	for _, op := range []Op{AllReduce, AllGather, ReduceScatter, AllToAll} {
		for _, r := range []int{2, 3, 4, 7, 16} {
			s, err := Build(op, Mesh, r, int64(r*r*64), 4, Options{})
			require.NoError(t, err)
			for k, st := range s.Steps {
				lists := make([][]int, r) // per rank, its transfers' destinations to other ranks, as listed
				for _, x := range st.Xfers {
					if x.Src != x.Dst {
						lists[x.Src] = append(lists[x.Src], x.Dst)
					}
				}
				for i, l := range lists {
					if len(l) == 0 {
						continue
					}
					require.Len(t, l, r-1, "%s r=%d step %d rank %d", op, r, k, i)
					for d, j := range l {
						require.Equal(t, (i+1+d)%r, j, "%s r=%d step %d rank %d: transfer %d goes to rank %d", op, r, k, i, d, j)
					}
				}
			}
		}
	}
}
