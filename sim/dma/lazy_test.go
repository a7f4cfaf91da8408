package dma

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
)

// made returns the engines whose state the controller has made.
func made(c *Controller) []int {
	var es []int
	for e, s := range c.st.engines {
		if s != nil {
			es = append(es, e)
		}
	}
	return es
}

// readAll reads every register of engine e's window.
func readAll(c *Controller, e int) []uint32 {
	words := make([]uint32, 0, udma.EngineRegSize/4)
	for off := uint64(0); off < udma.EngineRegSize; off += 4 {
		words = append(words, c.ReadReg(e, off))
	}
	return words
}

// TestEnginesMadeOnWrite: an engine's state is made the first time it is
// written, and until then reads, shows and saves as the state its last reset
// left (powerOn at its epoch) — exactly what an engine made at New showed.
func TestEnginesMadeOnWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(r *rig)
		made []int
	}{
		{"new", func(r *rig) {}, nil},
		{"every register read", func(r *rig) { readAll(r.c, 3) }, nil},
		{"queue shown", func(r *rig) { _, _ = r.c.Queue(3, 15) }, nil},
		{"stale completion", func(r *rig) { r.c.Fire(fireArg(3, 2, 1)) }, nil},
		{"reset", func(r *rig) { r.c.Reset() }, nil},
		{"storage register", func(r *rig) { r.c.WriteReg(3, udma.M2S+0x254, 9) }, []int{3}},
		{"queue register", func(r *rig) { r.c.WriteReg(5, udma.M2S+udma.QueueBase+udma.QLength, 32) }, []int{5}},
		{"doorbell of a disabled queue", func(r *rig) { require.NoError(t, r.c.Doorbell(7, 1, 1)) }, []int{7}},
		{"a copy", func(r *rig) { r.copyOn(2) }, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOpts{gen: hwarch.Mariana})
			blank := readAll(r.c, 3)
			tc.do(r)
			assert.Equal(t, tc.made, made(r.c))
			s := r.c.State()
			require.Len(t, s.Engines, r.geo.DMAEngines)
			for e := range s.Engines {
				if assert.NotNil(t, s.Engines[e].Regs, "engine %d: State's Regs is a map to write", e) && !contains(tc.made, e) {
					want := powerOn(r.c.st.fresh[e])
					want.Regs = map[uint64]uint32{}
					assert.Equal(t, want, s.Engines[e], "engine %d", e)
				}
			}
			if !contains(tc.made, 3) {
				assert.Equal(t, blank, readAll(r.c, 3), "an engine not made reads its reset values")
			}
			// Whatever was made, a restore of the state shows and makes the
			// same.
			r2 := newRig(t, rigOpts{gen: hwarch.Mariana})
			require.NoError(t, r2.c.Restore(s))
			assert.Equal(t, s, r2.c.State())
			assert.Subset(t, tc.made, made(r2.c), "an engine at its reset state is restored unmade")
		})
	}
}

// TestResetOfEngineNotMade: a reset bumps the epochs of an engine never
// made as it does a made one's (epochs only grow), and a restored engine at
// its reset state keeps its epoch.
func TestResetOfEngineNotMade(t *testing.T) {
	r := newRig(t, rigOpts{gen: hwarch.Mariana})
	r.c.WriteReg(0, udma.M2S+0x254, 1) // made, at epoch 1
	r.c.Reset()
	r.c.ResetEngines(func(e int) bool { return e <= 1 })
	for _, e := range []int{0, 1} {
		q, err := r.c.Queue(e, 9)
		require.NoError(t, err)
		assert.Equal(t, uint32(3), q.Epoch, "engine %d reset twice", e)
	}
	q, err := r.c.Queue(2, 9)
	require.NoError(t, err)
	assert.Equal(t, uint32(2), q.Epoch, "engine 2 reset once")
	assert.Equal(t, []int{0}, made(r.c))

	s := r.c.State()
	s.Engines[4] = powerOn(41)
	s.Engines[4].Regs = map[uint64]uint32{}
	s.Engines[5].Queues[3].Epoch = 8 // one queue apart: made
	require.NoError(t, r.c.Restore(s))
	assert.Equal(t, []int{5}, made(r.c), "engine 0 is at its reset state again: restored unmade")
	assert.Equal(t, uint32(3), r.c.st.fresh[0])
	assert.Equal(t, uint32(41), r.c.st.fresh[4])
	assert.Equal(t, s, r.c.State())
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
