package collective

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/program"
)

// TestSplitEven: a transfer is cut into min(ways, elements) slices of whole
// elements that differ by at most one element and add up to it.
func TestSplitEven(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		elem int
		ways int
		want []int64
	}{
		{108, 4, 7, []int64{16, 16, 16, 16, 16, 16, 12}},
		{120, 4, 7, []int64{20, 20, 16, 16, 16, 16, 16}},
		{8, 4, 7, []int64{4, 4}},
		{7, 1, 7, []int64{1, 1, 1, 1, 1, 1, 1}},
		{64 << 10, 2, 1, []int64{64 << 10}},
	} {
		t.Run(fmt.Sprintf("%d/%d/%d", tc.n, tc.elem, tc.ways), func(t *testing.T) {
			assert.Equal(t, tc.want, splitEven(tc.n, tc.elem, tc.ways))
		})
	}
}

// TestSlicesGrowWithSize: over a rank's DMA engines, a larger transfer
// never has fewer descriptors, nor any engine fewer bytes (issue 13,
// item 5: 27 elements over 7 engines went in 7 slices, 29 in 6, so a larger
// message could take less time).
func TestSlicesGrowWithSize(t *testing.T) {
	geo := hwarch.MustGeometry(hwarch.Cayman)
	ranks := make([]Rank, 2)
	for d := range ranks {
		ranks[d] = Rank{Device: d, Base: 1 << 20, Runner: &program.Runner{Dev: &bringup.Device{Geometry: geo}}}
	}
	for _, engines := range []int{1, 3, 7, 16} {
		x := &Executor{Ranks: ranks, Engines: engines}
		var lastDesc int
		var lastBytes []uint64
		for elems := int64(1); elems <= 200; elems++ {
			s, err := enc.Build(enc.Permute, enc.Ring, 2, elems*4, 4, enc.Options{})
			require.NoError(t, err)
			plans, err := x.plan(s, enc.Float32, planAll)
			require.NoError(t, err)
			desc := 0
			var bytes []uint64
			for _, v := range plans[0].vr {
				desc += v.Descriptors()
				bytes = append(bytes, v.Bytes())
			}
			require.GreaterOrEqual(t, desc, lastDesc, "%d engines: %d elements have fewer descriptors than %d", engines, elems, elems-1)
			for j := range lastBytes {
				require.GreaterOrEqual(t, bytes[j], lastBytes[j], "%d engines: engine %d carries less of %d elements than of %d", engines, j, elems, elems-1)
			}
			lastDesc, lastBytes = desc, bytes
		}
	}
}
