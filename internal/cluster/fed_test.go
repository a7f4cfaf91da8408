package cluster_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/dma"
)

// TestFedQueueOnDevice: a fed queue on a simulated device, fed run after
// run from its tail — the second run wrapping the ring — moves what its
// planner plans step by step as the engine fetches it (Start and Wait as
// for any queue), and once its early pairs are let go a read of their
// ring slots fails, naming the queue and the pair.
func TestFedQueueOnDevice(t *testing.T) {
	const chunk, perStep, pairs = 4096, 25, 400
	c, err := cluster.New(cluster.Config{Generation: hwarch.Mariana, Devices: 1, Switch: hwarch.SwitchV1, BufferBytes: 2 * pairs * chunk})
	require.NoError(t, err)
	m, geo := c.Devices[0].DMA, c.Devices[0].Up.Geometry
	require.True(t, m.Lazy())
	src := c.Exec.Ranks[0].Base
	dst := src + pairs*chunk
	qu, err := m.OpenFedQueue("fed", 0, 3, 512)
	require.NoError(t, err)
	require.Equal(t, uint32(512), qu.Count(), "the rings' length")
	for run, seed := range []byte{1, 2} {
		data := bytes.Repeat([]byte{seed, 0x5a, seed ^ 0xff, 7}, pairs*chunk/4)
		require.NoError(t, m.WriteDevice(src, data))
		v := dma.NewVring("fed")
		steps := 0
		more := func() (bool, error) {
			for i := steps * perStep; i < (steps+1)*perStep; i++ {
				if err := v.AddTransfer(src+uint64(i)*chunk, dst+uint64(i)*chunk, chunk); err != nil {
					return false, err
				}
			}
			steps++
			return steps*perStep < pairs, nil
		}
		require.NoError(t, qu.Feed(dma.Feed{Vring: v, More: more}, pairs))
		require.NoError(t, qu.Start(pairs))
		require.NoError(t, qu.Wait(1_000_000), "run %d", run)
		got := make([]byte, len(data))
		require.NoError(t, m.ReadDevice(dst, got))
		assert.True(t, bytes.Equal(data, got), "run %d: the bytes moved", run)
		assert.Equal(t, pairs/perStep, steps, "run %d: planned step by step, each once", run)
		assert.Positive(t, v.Dropped(), "run %d: pairs read were let go", run)
	}
	// The ring's first slot holds the second run's pair 112 (512 − 400):
	// long let go.
	st, err := c.System.Device(0).DMAQueue(0, 3)
	require.NoError(t, err)
	pa, ok := geo.IsHostAddress(uint64(st.M2S.BaseHi)<<32 | uint64(st.M2S.BaseLo))
	require.True(t, ok)
	err = m.Host().HostRead(pa, make([]byte, udma.DescriptorSize))
	require.ErrorIs(t, err, dma.ErrFed)
	assert.ErrorContains(t, err, `fed queue "fed": pair 112 read after it was let go`)
	require.NoError(t, qu.Close())
	assert.Zero(t, qu.Count(), "a closed queue has no rings")
}
