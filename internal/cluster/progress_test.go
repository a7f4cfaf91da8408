package cluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestStreamedRunProgress: a streamed run reports the descriptor pairs its
// engines have fetched — never more than its total, never going back,
// within the 64 pairs a queue keeps of the total at the end — and
// reporting changes nothing the run leaves (a run without it on a fresh
// cluster leaves the same result, clock, counters). A staged run does not
// report.
func TestStreamedRunProgress(t *testing.T) {
	const size = 16 << 20
	cfg := cluster.Config{Generation: hwarch.Mariana, Devices: 8, Switch: hwarch.SwitchV1, Kind: fabric.KindAuto, TimingOnly: true}
	need, err := cluster.BufferNeed(enc.AllReduce, enc.Ring, cfg.Devices, enc.Float32, []int64{size}, enc.Options{})
	require.NoError(t, err)
	cfg.BufferBytes = need
	s, err := enc.Build(enc.AllReduce, enc.Ring, cfg.Devices, size, 4, enc.Options{})
	require.NoError(t, err)

	var got [2]observed
	var calls []int
	total := 0
	for i, report := range []bool{true, false} {
		c, err := cluster.New(cfg)
		require.NoError(t, err)
		if report {
			c.Exec.ProgressEvery = time.Nanosecond // every poll
			c.Exec.Progress = func(fetched, n int) {
				calls = append(calls, fetched)
				total = n
			}
		}
		got[i] = observe(t, c, s, enc.Options{}, false)
		require.Empty(t, got[i].Err)
	}
	assert.Equal(t, got[1], got[0], "reporting progress changes nothing")
	require.NotEmpty(t, calls)
	assert.Equal(t, got[0].Res.Descriptors, total)
	for i, f := range calls {
		assert.LessOrEqual(t, f, total, "call %d", i)
		if i > 0 {
			assert.GreaterOrEqual(t, f, calls[i-1], "call %d goes back", i)
		}
	}
	assert.Greater(t, calls[len(calls)-1], total/2, "the last report is of a run nearly done")
	assert.Less(t, calls[0], total/2, "the first report is of a run starting")

	c, err := cluster.New(cfg)
	require.NoError(t, err)
	c.Exec.Staged = true
	c.Exec.ProgressEvery = time.Nanosecond
	c.Exec.Progress = func(int, int) { t.Error("a staged run reported progress") }
	_, err = c.Run(s, enc.Float32)
	require.NoError(t, err)
}
