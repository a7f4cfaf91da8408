package cluster_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// TestCheckBuffersNotWholeWords: a functional collective whose input or
// output is not a whole number of 32-bit words (three bf16 elements, a
// reduce-scatter's block of three) is written and read back through BAR4
// like any other, its last bytes by a read, change and write of the word
// that holds them, and checked against the CPU reference. Until
// 2026-12-07 the host's copy refused it mid-run ("BAR4 access … not word
// aligned") after the schedule had been accepted.
func TestCheckBuffersNotWholeWords(t *testing.T) {
	c, err := cluster.New(cluster.Config{Generation: hwarch.Cayman, Devices: 2, BufferBytes: 1 << 20})
	require.NoError(t, err)
	for _, tc := range []struct {
		op   enc.Op
		algo enc.Algo
		size int64
		d    enc.Dtype
	}{
		{enc.AllReduce, enc.Ring, 6, enc.BFloat16},
		{enc.AllReduce, enc.Mesh, 2, enc.BFloat16},
		{enc.ReduceScatter, enc.Ring, 12, enc.BFloat16},
		{enc.AllGather, enc.Ring, 4100, enc.Float16},
		{enc.Permute, enc.Ring, 6, enc.BFloat16},
	} {
		t.Run(fmt.Sprintf("%s/%s/%d", tc.op, tc.algo, tc.size), func(t *testing.T) {
			s, err := enc.Build(tc.op, tc.algo, c.Ranks(), tc.size, tc.d.Size(), enc.Options{})
			require.NoError(t, err)
			_, err = c.Check(s, tc.d, 9, enc.Options{})
			require.NoError(t, err)
		})
	}
}
