package enc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzBuild: Build never panics; what it builds validates, and small
// schedules run bit-exact (integer data of the element size) against
// Expected — with Peers, channels and a ring order of their own too.
func FuzzBuild(f *testing.F) {
	type seed struct {
		op, algo, ranks uint8
		size            int64
		elem, chunks    uint8
		group, shift    uint8
		order           uint64
	}
	for _, s := range []seed{
		{1, 1, 4, 64, 4, 2, 0, 0, 0},
		{1, 2, 5, 23 * 4, 4, 1, 0, 0, 0},
		{1, 3, 8, 1 << 30, 4, 1, 0, 0, 0},
		{2, 4, 6, 6 * 10, 2, 3, 0, 0, 0},
		{3, 5, 12, 12 * 8, 1, 4, 3, 0, 0},
		{4, 2, 7, 7 * 7 * 4, 4, 1, 0, 0, 0},
		{5, 1, 6, 48, 8, 2, 0, 5, 0},
		{5, 0, 6, 48, 4, 1, 0, 2, 0},
		{1, 5, 8, 0, 4, 1, 2, 0, 0},
		{0, 6, 0, -1, 3, 0, 0, 0, 0},
		{1, 1, 8, 8 * 16, 4, 2*9 + 1, 4, 0, 0}, // a ring of 2 channels over 2 groups of 4
		{3, 1, 12, 12 * 24, 4, 3*9 + 1, 6, 0, 0},
		{1, 4, 16, 16 * 20, 4, 1, 0, 0, 7},        // KangaRing in a ring order of its own
		{2, 5, 12, 12 * 8, 4, 1, 4, 0, 9},         // Hier's group rings in it
		{3, 1, 12, 12 * 24, 4, 2*9 + 1, 6, 0, 11}, // channels through it
		{5, 2, 9, 36, 4, 1, 0, 0, 3},              // Permute's ring shift along it
	} {
		f.Add(s.op, s.algo, s.ranks, s.size, s.elem, s.chunks, s.group, s.shift, s.order)
	}
	f.Fuzz(func(t *testing.T, op, algo, ranks uint8, size int64, elem, chunks, group, shift uint8, order uint64) {
		// chunks' low part is Chunks (−1..7), its high part Channels (0..4).
		opt := Options{Chunks: int(chunks%9) - 1, GroupSize: int(group % 17), Channels: int(chunks / 9 % 5)}
		r := int(ranks)
		if shift > 0 && r > 0 {
			opt.Peers = make([]int, r)
			for i := range opt.Peers {
				opt.Peers[i] = (i + int(shift)) % r
			}
		}
		if order > 0 && r > 0 { // a RingOrder drawn from order; one in 16 is not a permutation
			opt.RingOrder = randomOrder(r, order)
			if order%16 == 15 {
				opt.RingOrder[0] = opt.RingOrder[r-1]
			}
		}
		s, err := Build(Op(op%7), Algo(algo%7), r, size, int(elem%10), opt)
		if s == nil || len(s.Steps) < 4096 { // Count's transfers are Build's (a schedule of a size to compare)
			requireCountIsBuild(t, Op(op%7), Algo(algo%7), r, size, int(elem%10), opt)
		}
		if err != nil {
			require.ErrorIs(t, err, ErrBadCollective)
			require.Nil(t, s)
			return
		}
		require.NoError(t, s.Validate())
		d := map[int]Dtype{1: Uint8, 2: Int16, 4: Int32}[s.Elem]
		if d == 0 || s.InputBytes > 1<<12 || s.OutputBytes > 1<<12 || s.Ranks > 64 {
			return
		}
		inputs := randomInputs(d, s.Ranks, s.InputBytes, uint64(size))
		want, err := Expected(s.Op, d, inputs, opt)
		require.NoError(t, err)
		require.Equal(t, want, execute(t, s, d, inputs))
	})
}
