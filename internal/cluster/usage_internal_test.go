package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestLinkUseFolds: a size's link use counts the links whose arrival
// queue was folded over it, and FoldsNote names the sizes so counted —
// and says nothing when none was.
func TestLinkUseFolds(t *testing.T) {
	topo, err := fabric.Build(fabric.KindChain, hwarch.Sunda, 4, fabric.DefaultParams(hwarch.Sunda))
	require.NoError(t, err)
	for _, c := range []struct {
		name   string
		folds  map[int]uint64 // link id → folds over the size
		folded int
	}{
		{"none", nil, 0},
		{"one link folded twice", map[int]uint64{1: 2}, 1},
		{"two links", map[int]uint64{0: 1, 2: 5}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			counters := make(fabric.Counters, len(topo.Links))
			for id := range counters {
				counters[id] = fabric.LinkCounter{Bytes: 4096, Busy: 1000, Folds: c.folds[id]}
			}
			use, err := linkUse(topo, counters, 1<<30, 1_000_000)
			require.NoError(t, err)
			assert.Equal(t, c.folded, use.FoldedLinks)
			quiet := SizeLinks{Size: 1 << 20}
			note := FoldsNote(LinkUsage{quiet, use})
			if c.folded == 0 {
				assert.Empty(t, note, "no fold, no note")
				return
			}
			assert.Contains(t, note, "the times of size(s) 1073741824 are approximate")
			assert.NotContains(t, note, "1048576", "a size with no fold is not named")
			assert.Contains(t, note, "more than 65536 runs")
		})
	}
}
