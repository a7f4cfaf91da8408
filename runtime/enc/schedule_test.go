package enc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoRankGather is a valid 2-rank all-gather of 8 bytes (elem 4), by hand.
func twoRankGather() *Schedule {
	return &Schedule{
		Op: AllGather, Algo: Ring, Ranks: 2, Size: 8, Elem: 4, InputBytes: 4, OutputBytes: 8,
		Steps: []Step{{Xfers: []Xfer{
			{Src: 0, Dst: 0, SrcBuf: Input, DstBuf: Output, SrcOff: 0, DstOff: 0, Len: 4},
			{Src: 0, Dst: 1, SrcBuf: Input, DstBuf: Output, SrcOff: 0, DstOff: 0, Len: 4},
			{Src: 1, Dst: 1, SrcBuf: Input, DstBuf: Output, SrcOff: 0, DstOff: 4, Len: 4},
			{Src: 1, Dst: 0, SrcBuf: Input, DstBuf: Output, SrcOff: 0, DstOff: 4, Len: 4},
		}}},
	}
}

func TestValidateHandMade(t *testing.T) {
	s := twoRankGather()
	require.NoError(t, s.Validate())
	in := [][]byte{{1, 2, 3, 4}, {5, 6, 7, 8}}
	require.NoError(t, Verify(AllGather, Int32, in, execute(t, s, Int32, in), Options{}))
}

// TestValidateCatchesOverlap: rank 1's local copy lands on the bytes rank 0
// writes into it. Validate names the step and transfers, and Apply — which does
// not validate — produces a wrong all-gather.
func TestValidateCatchesOverlap(t *testing.T) {
	s := twoRankGather()
	s.Steps[0].Xfers[2].DstOff = 0
	err := s.Validate()
	require.ErrorIs(t, err, ErrInvalidSchedule)
	assert.ErrorContains(t, err, "step 0, xfer 2: rank 1 output [0,4) written by xfer 2 overlaps rank 1 output [0,4) written by xfer 1")

	in := [][]byte{{1, 2, 3, 4}, {5, 6, 7, 8}}
	assert.ErrorIs(t, Verify(AllGather, Int32, in, execute(t, s, Int32, in), Options{}), ErrMismatch)
}

func TestValidateReadWriteOverlap(t *testing.T) {
	// A 2-rank ring step where rank 1 forwards the block it is receiving.
	s := &Schedule{
		Op: AllReduce, Algo: Ring, Ranks: 2, Size: 16, Elem: 4, InputBytes: 16, OutputBytes: 16,
		Steps: []Step{
			{Xfers: []Xfer{{Src: 0, Dst: 0, DstBuf: Output, Len: 16}, {Src: 1, Dst: 1, DstBuf: Output, Len: 16}}},
			{Xfers: []Xfer{
				{Src: 0, Dst: 1, SrcBuf: Output, DstBuf: Output, SrcOff: 0, DstOff: 0, Len: 8, Reduce: true},
				{Src: 1, Dst: 0, SrcBuf: Output, DstBuf: Output, SrcOff: 4, DstOff: 8, Len: 8, Reduce: true},
			}},
		},
	}
	err := s.Validate()
	require.ErrorIs(t, err, ErrInvalidSchedule)
	assert.ErrorContains(t, err, "step 1, xfer 1: rank 1 output [4,12) read by xfer 1 overlaps rank 1 output [0,8) written by xfer 0")

	// Reads may overlap each other.
	s.Steps[1].Xfers[1].SrcOff, s.Steps[1].Xfers[1].DstOff = 8, 8
	s.Steps[1].Xfers = append(s.Steps[1].Xfers, Xfer{Src: 1, Dst: 0, SrcBuf: Output, DstBuf: Scratch, SrcOff: 8, DstOff: 0, Len: 8})
	s.ScratchBytes = 8
	require.NoError(t, s.Validate())
}

func TestValidateRanges(t *testing.T) {
	tests := []struct {
		name string
		edit func(s *Schedule)
		want string
	}{
		{"src rank", func(s *Schedule) { s.Steps[0].Xfers[1].Src = 2 }, "step 0, xfer 1 (1.out[0,4)=2.in[0,4)): source rank 2 out of 0..1"},
		{"dst rank", func(s *Schedule) { s.Steps[0].Xfers[1].Dst = -1 }, "destination rank -1"},
		{"buffer", func(s *Schedule) { s.Steps[0].Xfers[3].DstBuf = 7 }, "destination buffer Buffer(7)"},
		{"past end", func(s *Schedule) { s.Steps[0].Xfers[3].SrcOff = 4 }, "source range [4,8) passes the end of rank 1's input (4 B)"},
		{"scratch", func(s *Schedule) { s.Steps[0].Xfers[3].DstBuf = Scratch }, "passes the end of rank 0's scratch (0 B)"},
		{"zero length", func(s *Schedule) { s.Steps[0].Xfers[0].Len = 0 }, "length 0"},
		{"unaligned length", func(s *Schedule) { s.Steps[0].Xfers[0].Len = 2 }, "length 2"},
		{"unaligned offset", func(s *Schedule) { s.Steps[0].Xfers[2].DstOff = 2 }, "offset 2"},
		{"negative offset", func(s *Schedule) { s.Steps[0].Xfers[2].SrcOff = -4 }, "offset -4"},
		{"auto", func(s *Schedule) { s.Algo = Auto }, "algorithm auto"},
		{"op", func(s *Schedule) { s.Op = 0 }, "unknown collective op"},
		{"ranks", func(s *Schedule) { s.Ranks = 0 }, "0 ranks"},
		{"elem", func(s *Schedule) { s.Elem = 3 }, "element size 3"},
		{"input bytes", func(s *Schedule) { s.InputBytes = 8 }, "InputBytes 8, want 4"},
		{"output bytes", func(s *Schedule) { s.OutputBytes = 4 }, "OutputBytes 4, want 8"},
		{"size split", func(s *Schedule) { s.Size = 12 }, "not a multiple of elem×ranks"},
		{"scratch bytes", func(s *Schedule) { s.ScratchBytes = -4 }, "ScratchBytes -4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := twoRankGather()
			tt.edit(s)
			err := s.Validate()
			require.ErrorIs(t, err, ErrInvalidSchedule)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	var nilSched *Schedule
	assert.ErrorIs(t, nilSched.Validate(), ErrInvalidSchedule)
}

func TestTraffic(t *testing.T) {
	bytes, n := twoRankGather().Traffic()
	assert.Equal(t, int64(8), bytes)
	assert.Equal(t, 2, n)
	var nilSched *Schedule
	bytes, n = nilSched.Traffic()
	assert.Zero(t, bytes)
	assert.Zero(t, n)
}

func TestStrings(t *testing.T) {
	s := twoRankGather()
	assert.Equal(t, "ring all_gather: 2 ranks, 8 B, elem 4, 1 step, 4 xfers", s.String())
	assert.Equal(t, "step 0: 0.out[0,4)=0.in[0,4) 1.out[0,4)=0.in[0,4) 1.out[4,8)=1.in[0,4) 0.out[4,8)=1.in[0,4)\n", s.Dump())
	assert.Equal(t, "3.scr[8,16)+=2.out[0,8)", Xfer{Src: 2, Dst: 3, SrcBuf: Output, DstBuf: Scratch, DstOff: 8, Len: 8, Reduce: true}.String())
	assert.Equal(t, "scratch", Scratch.String())
	assert.Equal(t, "Buffer(3)", Buffer(3).String())
	var nilSched *Schedule
	assert.Equal(t, "<nil schedule>", nilSched.String())
}

// TestRingInitCopiesOverlap: a ring all-reduce copies into the output, in
// its first step, only the block each rank receives first; the block it
// receives in ring step t+1 is copied during ring step t, beside the ring's
// transfers.
func TestRingInitCopiesOverlap(t *testing.T) {
	s, err := Build(AllReduce, Ring, 4, 64, 4, Options{})
	require.NoError(t, err)
	// Rank k receives block k−2 first, then k−3, then k−4 = k.
	assert.ElementsMatch(t, []Xfer{
		{Src: 0, Dst: 0, SrcBuf: Input, DstBuf: Output, SrcOff: 32, DstOff: 32, Len: 16},
		{Src: 1, Dst: 1, SrcBuf: Input, DstBuf: Output, SrcOff: 48, DstOff: 48, Len: 16},
		{Src: 2, Dst: 2, SrcBuf: Input, DstBuf: Output, SrcOff: 0, DstOff: 0, Len: 16},
		{Src: 3, Dst: 3, SrcBuf: Input, DstBuf: Output, SrcOff: 16, DstOff: 16, Len: 16},
	}, s.Steps[0].Xfers)
	assert.Contains(t, s.Steps[1].Xfers, Xfer{Src: 0, Dst: 0, SrcBuf: Input, DstBuf: Output, SrcOff: 16, DstOff: 16, Len: 16},
		"rank 0's block 1, received in ring step 1, copied in ring step 0")
	assert.Contains(t, s.Steps[2].Xfers, Xfer{Src: 0, Dst: 0, SrcBuf: Input, DstBuf: Output, SrcOff: 0, DstOff: 0, Len: 16},
		"rank 0's own block, received last, copied in ring step 1")
}
