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

// TestOvercommitNote: in the free model, a size whose busiest link was
// offered more than its bandwidth is named with the most offered link and
// its load; a size within every link's bandwidth is not, the aware model
// has no note, and a sweep within its links has none either.
func TestOvercommitNote(t *testing.T) {
	size := func(n int64, util ...float64) SizeLinks {
		s := SizeLinks{Size: n}
		for i, u := range util {
			s.Classes = append(s.Classes, LinkClass{Class: []string{"dev-nic", "nic-leaf"}[i], BusiestLink: []string{"a→b (dev-nic)", "c→d (nic-leaf)"}[i], Utilisation: u})
		}
		return s
	}
	over := LinkUsage{size(1<<20, 0.9, 0.5), size(16<<20, 1.048, 2.097), size(64<<20, 1.2, 0.9)}
	note := OvercommitNote(fabric.Free, over)
	assert.Contains(t, note, "the times of size(s) 16777216, 67108864 are below what the links can carry")
	assert.Contains(t, note, "up to 209.7 % of a link's bandwidth was offered (c→d (nic-leaf), size 16777216)")
	assert.NotContains(t, note, "1048576")
	assert.Empty(t, OvercommitNote(fabric.Aware, over), "the aware model's links carry at most their bandwidth")
	assert.Empty(t, OvercommitNote(fabric.Free, LinkUsage{size(1<<20, 1.0, 0.5)}), "at its bandwidth, not past it")
}
