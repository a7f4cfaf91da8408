package enc

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func int32s(v ...int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func TestExpected(t *testing.T) {
	in := [][]byte{int32s(1, 2, 3, 4), int32s(10, 20, 30, 40)}
	tests := []struct {
		op   Op
		opt  Options
		want [][]byte
	}{
		{AllReduce, Options{}, [][]byte{int32s(11, 22, 33, 44), int32s(11, 22, 33, 44)}},
		{AllGather, Options{}, [][]byte{int32s(1, 2, 3, 4, 10, 20, 30, 40), int32s(1, 2, 3, 4, 10, 20, 30, 40)}},
		{ReduceScatter, Options{}, [][]byte{int32s(11, 22), int32s(33, 44)}},
		{AllToAll, Options{}, [][]byte{int32s(1, 2, 10, 20), int32s(3, 4, 30, 40)}},
		{Permute, Options{}, [][]byte{int32s(10, 20, 30, 40), int32s(1, 2, 3, 4)}},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			got, err := Expected(tt.op, Int32, in, tt.opt)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestExpectedRankOrder(t *testing.T) {
	// 1 + 2^-24 + 2^-24 in rank order rounds each time back to 1 in float32;
	// the other order would give 1 + 2^-23.
	in := make([][]byte, 3)
	for i, v := range []float32{1, 0x1p-24, 0x1p-24} {
		in[i] = make([]byte, 4)
		putF32(in[i], 0, v)
	}
	got, err := Expected(AllReduce, Float32, in, Options{})
	require.NoError(t, err)
	assert.Equal(t, float32(1), f32bits(got[0], 0))
}

func TestExpectedErrors(t *testing.T) {
	_, err := Expected(AllReduce, Int32, nil, Options{})
	assert.ErrorIs(t, err, ErrBadCollective)
	_, err = Expected(AllReduce, Int32, [][]byte{make([]byte, 4), make([]byte, 8)}, Options{})
	assert.ErrorIs(t, err, ErrBadCollective)
	_, err = Expected(ReduceScatter, Int32, [][]byte{make([]byte, 4), make([]byte, 4)}, Options{})
	assert.ErrorContains(t, err, "not a multiple of 8 B")
	_, err = Expected(Permute, Int32, [][]byte{make([]byte, 4), make([]byte, 4)}, Options{Peers: []int{0, 1}})
	assert.ErrorContains(t, err, "not one cycle")
	_, err = Expected(Op(0), Int32, [][]byte{nil}, Options{})
	assert.ErrorIs(t, err, ErrUnknownOp)
	_, err = Expected(AllReduce, Dtype(0), [][]byte{nil}, Options{})
	assert.ErrorIs(t, err, ErrUnknownDtype)
}

func TestVerifyTolerance(t *testing.T) {
	const r = 4
	in := make([][]byte, r)
	for i := range in {
		in[i] = make([]byte, 8)
		putF32(in[i], 0, 1)
		putF32(in[i], 1, float32(i)-1.5) // -1.5 -0.5 0.5 1.5: sums to 0, magnitudes to 4
	}
	out := func(a, b float32) [][]byte {
		o := make([][]byte, r)
		for i := range o {
			o[i] = make([]byte, 8)
			putF32(o[i], 0, a)
			putF32(o[i], 1, b)
		}
		return o
	}
	tol := float32(Float32.Tolerance(r)) // 4e-5, relative to the sum of magnitudes (4)
	assert.InDelta(t, 4e-5, tol, 1e-9)
	assert.NoError(t, Verify(AllReduce, Float32, in, out(4, 0), Options{}))
	assert.NoError(t, Verify(AllReduce, Float32, in, out(4*(1+tol*0.9), 4*tol*0.9), Options{}),
		"a cancelled sum is judged against the magnitudes")
	err := Verify(AllReduce, Float32, in, out(4*(1+tol*1.5), 0), Options{})
	require.ErrorIs(t, err, ErrMismatch)
	assert.ErrorContains(t, err, "rank 0, element 0")
	assert.ErrorIs(t, Verify(AllReduce, Float32, in, out(float32(math.NaN()), 0), Options{}), ErrMismatch)

	// Copies are exact whatever the type.
	g := [][]byte{in[0], in[1], in[2], in[3]}
	gathered, err := Expected(AllGather, Float32, g, Options{})
	require.NoError(t, err)
	putF32(gathered[2], 0, 1+tol/100)
	assert.ErrorIs(t, Verify(AllGather, Float32, g, gathered, Options{}), ErrMismatch)

	// Integers are exact.
	ints := [][]byte{int32s(1), int32s(2)}
	assert.NoError(t, Verify(AllReduce, Int32, ints, [][]byte{int32s(3), int32s(3)}, Options{}))
	err = Verify(AllReduce, Int32, ints, [][]byte{int32s(3), int32s(4)}, Options{})
	require.ErrorIs(t, err, ErrMismatch)
	assert.ErrorContains(t, err, "rank 1, element 0: got 0x00000004, want 0x00000003")
	assert.ErrorIs(t, Verify(AllReduce, Int32, ints, [][]byte{int32s(3)}, Options{}), ErrBadCollective)
	assert.ErrorIs(t, Verify(AllReduce, Int32, ints, [][]byte{int32s(3), nil}, Options{}), ErrMismatch)
}

func TestTolerance(t *testing.T) {
	assert.InDelta(t, 8e-5, Float32.Tolerance(8), 1e-15)
	assert.Equal(t, 8.0/128, BFloat16.Tolerance(8))
	assert.Equal(t, 8.0/1024, Float16.Tolerance(8))
	assert.Zero(t, Int32.Tolerance(8))
}

func TestNaNPropagates(t *testing.T) {
	s, err := Build(AllReduce, Ring, 4, 4*16, 2, Options{})
	require.NoError(t, err)
	in := randomInputs(BFloat16, 4, s.InputBytes, 9)
	binary.LittleEndian.PutUint16(in[2][6:], 0x7fc0) // element 3 of rank 2 is NaN
	out := execute(t, s, BFloat16, in)
	require.NoError(t, Verify(AllReduce, BFloat16, in, out, Options{}))
	for _, o := range out {
		assert.True(t, math.IsNaN(toFloat64(BFloat16, o, 3)))
	}
}

func TestRunErrors(t *testing.T) {
	s := twoRankGather()
	b := NewBuffers(s)
	assert.ErrorIs(t, Apply(nil, Int32, b), ErrBadBuffers)
	assert.ErrorIs(t, Apply(s, Int32, nil), ErrBadBuffers)
	assert.ErrorIs(t, Apply(s, Dtype(0), b), ErrUnknownDtype)
	assert.ErrorIs(t, Apply(s, BFloat16, b), ErrBadBuffers)
	assert.ErrorIs(t, Apply(s, Int32, &Buffers{}), ErrBadBuffers)

	short := NewBuffers(s)
	short.Output[1] = short.Output[1][:4]
	assert.ErrorContains(t, Apply(s, Int32, short), "rank 1's output buffer is 4 B, the schedule's is 8 B")

	bad := twoRankGather()
	bad.Steps[0].Xfers[3].SrcOff = 8
	b.Output[0][0] = 42
	assert.ErrorIs(t, Apply(bad, Int32, b), ErrInvalidSchedule)
	assert.Equal(t, byte(42), b.Output[0][0], "nothing written")

	hdr := twoRankGather()
	hdr.Ranks = 0
	assert.ErrorIs(t, Apply(hdr, Int32, b), ErrInvalidSchedule)
	assert.Equal(t, &Buffers{}, NewBuffers(hdr))
	assert.Equal(t, &Buffers{}, NewBuffers(nil))
}
