package enc

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOp(t *testing.T) {
	tests := []struct {
		in   string
		want Op
	}{
		{"all_reduce", AllReduce}, {"allr", AllReduce}, {" ALLR ", AllReduce},
		{"all_gather", AllGather}, {"allg", AllGather},
		{"reduce_scatter", ReduceScatter}, {"redsct", ReduceScatter},
		{"alltoall", AllToAll}, {"all_to_all", AllToAll},
		{"permute", Permute},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseOp(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	for _, bad := range []string{"", "allreduce", "sendrecv", "all_gatherv", "alltoallv"} {
		t.Run("bad/"+bad, func(t *testing.T) {
			_, err := ParseOp(bad)
			require.ErrorIs(t, err, ErrUnknownOp)
			assert.ErrorContains(t, err, "all_reduce|allr")
			assert.ErrorContains(t, err, fmt.Sprintf("%q", bad))
		})
	}
}

func TestOpStringRoundTrip(t *testing.T) {
	for _, op := range allOps {
		got, err := ParseOp(op.String())
		require.NoError(t, err)
		assert.Equal(t, op, got)
	}
	assert.Equal(t, []string{"all_reduce", "all_gather", "reduce_scatter", "alltoall", "permute"},
		[]string{AllReduce.String(), AllGather.String(), ReduceScatter.String(), AllToAll.String(), Permute.String()})
	assert.Equal(t, "Op(0)", Op(0).String())
	assert.Equal(t, "Op(6)", Op(6).String())
}

func TestBusFactor(t *testing.T) {
	tests := []struct {
		op    Op
		ranks int
		want  float64
	}{
		{AllReduce, 1, 0}, {AllReduce, 2, 1}, {AllReduce, 4, 1.5}, {AllReduce, 8, 1.75}, {AllReduce, 32, 62.0 / 32},
		{AllGather, 2, 0.5}, {AllGather, 8, 0.875},
		{ReduceScatter, 4, 0.75}, {ReduceScatter, 16, 15.0 / 16},
		{AllToAll, 8, 0.875},
		{Permute, 8, 1}, {Permute, 2, 1},
		{AllReduce, 0, 0}, {Op(0), 8, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%d", tt.op, tt.ranks), func(t *testing.T) {
			assert.InDelta(t, tt.want, tt.op.BusFactor(tt.ranks), 1e-12)
		})
	}
}

func TestInputOutputBytes(t *testing.T) {
	tests := []struct {
		op      Op
		size    int64
		ranks   int
		in, out int64
	}{
		{AllReduce, 1024, 8, 1024, 1024},
		{AllGather, 1024, 8, 128, 1024},
		{ReduceScatter, 1024, 8, 1024, 128},
		{AllToAll, 1024, 8, 1024, 1024},
		{Permute, 1024, 8, 1024, 1024},
		{AllGather, 1024, 1, 1024, 1024},
		{AllGather, 1024, 0, 0, 0},
		{AllReduce, -1, 4, 0, 0},
		{Op(0), 1024, 4, 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%d/%d", tt.op, tt.size, tt.ranks), func(t *testing.T) {
			assert.Equal(t, tt.in, tt.op.InputBytes(tt.size, tt.ranks))
			assert.Equal(t, tt.out, tt.op.OutputBytes(tt.size, tt.ranks))
		})
	}
}

// TestSizeAlign: the granularity of a message size is the element size,
// times the ranks for the ops that cut the message into one block per rank;
// Build accepts every multiple of it and refuses a size one element off.
func TestSizeAlign(t *testing.T) {
	tests := []struct {
		op          Op
		elem, ranks int
		want        int64
	}{
		{AllReduce, 4, 16, 4},
		{AllGather, 4, 16, 64},
		{ReduceScatter, 2, 8, 16},
		{AllToAll, 1, 32, 32},
		{Permute, 8, 4, 8},
		{AllGather, 2, 1, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%d/%d", tt.op, tt.elem, tt.ranks), func(t *testing.T) {
			got := tt.op.SizeAlign(tt.elem, tt.ranks)
			assert.Equal(t, tt.want, got)
			algo := Ring
			if tt.op == AllToAll {
				algo = Mesh
			}
			for _, k := range []int64{1, 3} {
				_, err := Build(tt.op, algo, tt.ranks, k*got, tt.elem, Options{})
				assert.NoError(t, err, "%d×%d B", k, got)
			}
			if got > int64(tt.elem) {
				_, err := Build(tt.op, algo, tt.ranks, got+int64(tt.elem), tt.elem, Options{})
				assert.ErrorIs(t, err, ErrBadCollective)
			}
		})
	}
}
