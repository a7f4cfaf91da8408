package enc

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRingChannels: a Ring of several channels (Options.Channels) computes
// the collective for every op it applies to, rank and group shape and
// dtype — checked by the reference executor — in as many steps as one
// ring, moving the same bytes in all; and each channel crosses from group
// to group between its own pair of local ranks: channel c from local
// c·g/k − 1 into local c·g/k.
func TestRingChannels(t *testing.T) {
	for _, tc := range []struct{ ranks, group, channels int }{
		{8, 4, 1}, {8, 4, 2}, {8, 4, 4}, {12, 6, 3}, {6, 2, 2}, {8, 8, 4},
	} {
		for _, op := range []Op{AllReduce, AllGather, ReduceScatter} {
			for _, d := range []Dtype{Int32, Float32, BFloat16} {
				t.Run(fmt.Sprintf("r%d/g%d/c%d/%v/%v", tc.ranks, tc.group, tc.channels, op, d), func(t *testing.T) {
					opt := Options{GroupSize: tc.group, Channels: tc.channels}
					size := testSize(op, tc.ranks, d.Size())
					s, err := Build(op, Ring, tc.ranks, size, d.Size(), opt)
					require.NoError(t, err)
					checkCollective(t, s, d, opt, uint64(tc.channels))
					one, err := Build(op, Ring, tc.ranks, size, d.Size(), Options{GroupSize: tc.group})
					require.NoError(t, err)
					assert.Equal(t, len(one.Steps), len(s.Steps), "the channels run in the ring's steps")
					assert.Equal(t, sentBytes(one), sentBytes(s), "the channels share the ring's bytes")
					if tc.group == tc.ranks {
						return
					}
					// The transfers between groups: channel c's go from local
					// first(c)−1 to local first(c) of the next group.
					crossings := map[[2]int]bool{}
					for _, st := range s.Steps {
						for _, x := range st.Xfers {
							if x.Src/tc.group != x.Dst/tc.group {
								crossings[[2]int{x.Src % tc.group, x.Dst % tc.group}] = true
								assert.Equal(t, (x.Src/tc.group+1)%(tc.ranks/tc.group), x.Dst/tc.group, "%v goes to the next group", x)
							}
						}
					}
					want := map[[2]int]bool{}
					for c := range tc.channels {
						first := c * tc.group / tc.channels
						want[[2]int{(first + tc.group - 1) % tc.group, first}] = true
					}
					assert.Equal(t, want, crossings)
				})
			}
		}
	}
}

// sentBytes is the bytes a schedule moves between ranks.
func sentBytes(s *Schedule) int64 {
	var n int64
	for _, st := range s.Steps {
		for _, x := range st.Xfers {
			if x.Src != x.Dst {
				n += x.Len
			}
		}
	}
	return n
}

// TestRingChannelsRefused: channels that no node shape carries are
// refused, saying why; one channel, or an algorithm other than Ring, is
// as before.
func TestRingChannelsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
		want string
	}{
		{"no group", Options{Channels: 2}, "need Options.GroupSize"},
		{"group not dividing", Options{Channels: 2, GroupSize: 3}, "need Options.GroupSize"},
		{"channels not dividing the group", Options{Channels: 3, GroupSize: 4}, "do not divide a node's 4 ranks"},
		{"negative", Options{Channels: -1, GroupSize: 4}, "Channels -1 outside"},
		{"too many", Options{Channels: MaxChannels + 1, GroupSize: 4}, "outside 1..256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(AllReduce, Ring, 8, 8*64, 4, tc.opt)
			require.ErrorIs(t, err, ErrBadCollective)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	for _, a := range []Algo{Mesh, RDH, KangaRing, Hier} {
		plain, err := Build(AllReduce, a, 8, 8*64, 4, Options{GroupSize: 4})
		require.NoError(t, err)
		with, err := Build(AllReduce, a, 8, 8*64, 4, Options{GroupSize: 4, Channels: 4})
		require.NoError(t, err, "%v ignores Channels", a)
		assert.Equal(t, plain.Steps, with.Steps, "%v ignores Channels", a)
	}
	one, err := Build(AllReduce, Ring, 8, 8*64, 4, Options{})
	require.NoError(t, err)
	ch1, err := Build(AllReduce, Ring, 8, 8*64, 4, Options{Channels: 1})
	require.NoError(t, err)
	assert.Equal(t, one.Steps, ch1.Steps, "one channel is the ring")
}

// TestChannelledRingTransfers: a flat-ring all-reduce of r ranks in k
// channels holds 3(r − 1)·r·k transfers (docs/fabric.md §EFA), and one
// past MaxXfers is refused by the counting pass (Count's, which is Build's)
// before the transfers are allocated: what it allocates is a small part of
// what the schedule would hold.
func TestChannelledRingTransfers(t *testing.T) {
	for _, tc := range []struct{ ranks, group, channels int }{{16, 4, 1}, {16, 4, 4}, {32, 16, 8}, {48, 16, 16}} {
		s, err := Build(AllReduce, Ring, tc.ranks, 64<<20, 4, Options{GroupSize: tc.group, Channels: tc.channels})
		require.NoError(t, err)
		n := 0
		for _, st := range s.Steps {
			n += len(st.Xfers)
			assert.Equal(t, len(st.Xfers), cap(st.Xfers), "a step's transfers fill the room the counting pass gave them")
		}
		assert.Equal(t, 3*(tc.ranks-1)*tc.ranks*tc.channels, n, "%+v", tc)
	}
	if raceEnabled {
		t.Skip("race detector: counting 67 million transfers on one goroutine")
	}
	// 105 trn1.32xlarge nodes of 16 ranks in 8 channels: 3·1679·1680·8 =
	// 67,697,280 transfers, past MaxXfers; 104 nodes' 66,412,032 are not.
	require.Less(t, 3*1663*1664*8, MaxXfers)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Build(AllReduce, Ring, 105*16, 256<<20, 4, Options{GroupSize: 16, Channels: 8})
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrBadCollective)
	assert.Contains(t, err.Error(), fmt.Sprintf("ring all_reduce of 1680 ranks in 8 channels: the schedule would hold more than %d transfers", MaxXfers))
	held := uint64(MaxXfers) * uint64(unsafe.Sizeof(Xfer{}))
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, held/64, "refused before allocating the transfers")
}

// TestChannelsApply: channels are Ring's (and Auto's, which may choose
// it) for all_reduce, all_gather and reduce_scatter only: a permute's ring
// and an alltoall's mesh run none, nor do the other algorithms; a permute
// built with channels is the same schedule as one without.
func TestChannelsApply(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		algo Algo
		want bool
	}{
		{AllReduce, Ring, true}, {AllGather, Auto, true}, {ReduceScatter, Ring, true},
		{AllReduce, Hier, false}, {AllReduce, Mesh, false}, {AllGather, RDH, false}, {AllReduce, KangaRing, false},
		{Permute, Ring, false}, {Permute, Auto, false}, {Permute, Mesh, false},
		{AllToAll, Auto, false}, {AllToAll, Mesh, false}, {AllToAll, Ring, false},
	} {
		assert.Equal(t, tc.want, ChannelsApply(tc.op, tc.algo), "%v %v", tc.op, tc.algo)
	}
	one, err := Build(Permute, Ring, 8, 1<<16, 4, Options{GroupSize: 4})
	require.NoError(t, err)
	four, err := Build(Permute, Ring, 8, 1<<16, 4, Options{GroupSize: 4, Channels: 4})
	require.NoError(t, err)
	assert.Equal(t, one, four, "channels change no permute")
}
