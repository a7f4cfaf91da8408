package enc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snake16 is the boustrophedon cycle of a 4×4 torus of devices d = 4·row +
// column: along row 0, back along row 1, and so on, row 3 closing on 0.
var snake16 = []int{0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12}

// randomOrder is a permutation of 0..r−1 drawn from seed.
func randomOrder(r int, seed uint64) []int {
	return rand.New(rand.NewPCG(seed, uint64(r))).Perm(r)
}

// positions returns at[rank] = the rank's position in order.
func positions(order []int) []int {
	at := make([]int, len(order))
	for k, rank := range order {
		at[rank] = k
	}
	return at
}

// TestRingOrderCollectives: with a ring order other than rank order, every
// ring algorithm still computes its collective (checked by the reference
// executor, integers bit for bit), in the same steps and bytes as in rank
// order, and its rings run along the order: Ring sends only from a
// position to the next, KangaRing also to the one before; a channelled
// Ring and Hier send inside a group only between neighbours of the
// group's ranks as the order visits them, and between groups as they did
// in rank order (Hier's lanes: the same local rank; a channel: from its
// own pair of positions of the group's ring).
func TestRingOrderCollectives(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		algo                   Algo
		ranks, group, channels int
		order                  []int
	}{
		{"ring/snake", Ring, 16, 0, 0, snake16},
		{"ring/random", Ring, 7, 0, 0, randomOrder(7, 1)},
		{"ring/reversed", Ring, 5, 0, 0, []int{4, 3, 2, 1, 0}},
		{"kangaring/snake", KangaRing, 16, 0, 0, snake16},
		{"kangaring/random", KangaRing, 6, 0, 0, randomOrder(6, 2)},
		{"channels/snake", Ring, 32, 16, 4, append(slices.Clone(snake16), plus(snake16, 16)...)},
		{"channels/random", Ring, 12, 6, 3, randomOrder(12, 3)},
		{"hier/snake", Hier, 32, 16, 0, append(slices.Clone(snake16), plus(snake16, 16)...)},
		{"hier/groups of 4", Hier, 16, 4, 0, snake16},
		{"hier/groups of 2", Hier, 16, 2, 0, snake16},
		{"hier/random", Hier, 12, 4, 0, randomOrder(12, 4)},
		{"hier/one node", Hier, 8, 8, 0, randomOrder(8, 5)},
	} {
		for _, op := range []Op{AllReduce, AllGather, ReduceScatter} {
			for _, d := range []Dtype{Int32, Float32, BFloat16} {
				t.Run(fmt.Sprintf("%s/%v/%v", tc.name, op, d), func(t *testing.T) {
					opt := Options{GroupSize: tc.group, Channels: tc.channels, RingOrder: tc.order}
					size := testSize(op, tc.ranks, d.Size())
					s, err := Build(op, tc.algo, tc.ranks, size, d.Size(), opt)
					require.NoError(t, err)
					checkCollective(t, s, d, opt, uint64(tc.ranks))
					plain := opt
					plain.RingOrder = nil
					ranked, err := Build(op, tc.algo, tc.ranks, size, d.Size(), plain)
					require.NoError(t, err)
					assert.Equal(t, len(ranked.Steps), len(s.Steps), "the same steps as in rank order")
					assert.Equal(t, sentBytes(ranked), sentBytes(s), "the same bytes as in rank order")
					checkRingEdges(t, s, tc.algo, tc.group, tc.order)
				})
			}
		}
	}
}

// plus returns order with n added to every entry.
func plus(order []int, n int) []int {
	out := make([]int, len(order))
	for i, v := range order {
		out[i] = v + n
	}
	return out
}

// checkRingEdges checks that every transfer between ranks of s goes along
// the ring order as algo runs it (TestRingOrderCollectives).
func checkRingEdges(t *testing.T, s *Schedule, algo Algo, group int, order []int) {
	t.Helper()
	r := s.Ranks
	at := positions(order)
	// groupAt[rank]: its position among its group's ranks in the order.
	groupAt, seen := make([]int, r), map[int]int{}
	for _, rank := range order {
		if group > 0 {
			groupAt[rank] = seen[rank/group]
			seen[rank/group]++
		}
	}
	for si, st := range s.Steps {
		for _, x := range st.Xfers {
			if x.Src == x.Dst {
				continue
			}
			switch {
			case algo == Ring && group == 0, algo == KangaRing:
				up := at[x.Dst] == (at[x.Src]+1)%r
				down := algo == KangaRing && at[x.Src] == (at[x.Dst]+1)%r
				assert.True(t, up || down, "step %d: %v is not between neighbours of the ring order", si, x)
			case x.Src/group == x.Dst/group:
				assert.Equal(t, (groupAt[x.Src]+1)%group, groupAt[x.Dst], "step %d: %v is not between neighbours of its group's ring", si, x)
			case algo == Hier:
				assert.Equal(t, x.Src%group, x.Dst%group, "step %d: %v: a lane joins the same local rank of each group", si, x)
			default: // a channel leaves a group from the position before the one it enters the next at
				assert.Equal(t, (x.Src/group+1)%(r/group), x.Dst/group, "step %d: %v goes to the next group", si, x)
				assert.Equal(t, (groupAt[x.Src]+1)%group, groupAt[x.Dst], "step %d: %v crosses between its channel's pair of positions", si, x)
			}
		}
	}
}

// TestRingOrderPermute: Permute's default peers are the ring shift along
// the ring order, on Ring and Mesh; Peers given still win.
func TestRingOrderPermute(t *testing.T) {
	for _, a := range []Algo{Ring, Mesh, Auto} {
		opt := Options{RingOrder: snake16}
		s, err := Build(Permute, a, 16, 64, 4, opt)
		require.NoError(t, err)
		require.Len(t, s.Steps, 1)
		at := positions(snake16)
		for _, x := range s.Steps[0].Xfers {
			assert.Equal(t, snake16[(at[x.Src]+1)%16], x.Dst, "%v: %v", a, x)
		}
		checkCollective(t, s, Int32, opt, 1)
		checkCollective(t, s, Float32, opt, 2)
	}
	peers := []int{2, 0, 3, 1}
	opt := Options{RingOrder: []int{3, 2, 1, 0}, Peers: peers}
	s, err := Build(Permute, Ring, 4, 64, 4, opt)
	require.NoError(t, err)
	for _, x := range s.Steps[0].Xfers {
		assert.Equal(t, peers[x.Src], x.Dst)
	}
	checkCollective(t, s, Int32, opt, 3)
}

// TestRingOrderRankOrder: a RingOrder of 0, 1, …, r−1 builds the very
// schedule no RingOrder does, for every op and algorithm; and Mesh and RDH
// ignore the order (but for Permute's default peers, its ring shift).
func TestRingOrderRankOrder(t *testing.T) {
	for _, op := range allOps {
		for _, a := range allAlgos {
			for _, r := range []int{2, 4, 8, 16} {
				opt := Options{GroupSize: hierGroup(r)}
				if !supported(op, a, r, opt.GroupSize) {
					continue
				}
				size := testSize(op, r, 4)
				want, err := Build(op, a, r, size, 4, opt)
				require.NoError(t, err)
				opt.RingOrder = allRanks(r)
				got, err := Build(op, a, r, size, 4, opt)
				require.NoError(t, err)
				assert.Equal(t, want.Dump(), got.Dump(), "%v %v r=%d", a, op, r)
				if (a == Mesh || a == RDH || op == AllToAll) && op != Permute {
					opt.RingOrder = randomOrder(r, uint64(r))
					got, err = Build(op, a, r, size, 4, opt)
					require.NoError(t, err)
					assert.Equal(t, want.Dump(), got.Dump(), "%v %v r=%d ignores the ring order", a, op, r)
				}
			}
		}
	}
}

// TestRingOrderErrors: a RingOrder that is not a permutation of the ranks
// is refused, by Build and by Expected, saying why.
func TestRingOrderErrors(t *testing.T) {
	for _, tc := range []struct {
		order []int
		want  string
	}{
		{[]int{0, 1, 2}, "RingOrder has 3 entries for 4 ranks"},
		{[]int{0, 1, 2, 4}, "RingOrder[3] = 4 is not a rank (0..3)"},
		{[]int{0, -1, 2, 3}, "RingOrder[1] = -1 is not a rank"},
		{[]int{0, 1, 1, 3}, "not a permutation: rank 1 is at positions 1 and 2"},
	} {
		for _, op := range []Op{AllReduce, Permute} {
			opt := Options{RingOrder: tc.order}
			_, err := Build(op, Ring, 4, 64, 4, opt)
			require.ErrorIs(t, err, ErrBadCollective)
			assert.ErrorContains(t, err, tc.want)
		}
		_, err := Expected(Permute, Int32, [][]byte{make([]byte, 4), make([]byte, 4), make([]byte, 4), make([]byte, 4)}, Options{RingOrder: tc.order})
		require.ErrorIs(t, err, ErrBadCollective)
		assert.ErrorContains(t, err, tc.want)
	}
}
