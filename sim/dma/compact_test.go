package dma

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
)

// TestCompactState: CompactState keeps in full only the engines not as
// their last reset left them (made and changed; one made but back at its
// reset state is its epoch), Expand gives back what State gives, and a
// controller restored from it shows the same state; CompactStateBytes
// bounds the copy, which for an idle Trn3 device is under 1% of State's.
func TestCompactState(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(r *rig)
		full []int // engines kept in full
	}{
		{"new", func(r *rig) {}, nil},
		{"reset", func(r *rig) { r.c.Reset() }, nil},
		{"storage register", func(r *rig) { r.c.WriteReg(3, udma.M2S+0x254, 9) }, []int{3}},
		{"queue register", func(r *rig) { r.c.WriteReg(5, udma.M2S+udma.QueueBase+udma.QLength, 32) }, []int{5}},
		{"made, then reset", func(r *rig) {
			r.c.WriteReg(0, udma.M2S+0x254, 1)
			r.c.Reset()
		}, nil},
		{"a copy", func(r *rig) { r.copyOn(2) }, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOpts{gen: hwarch.Mariana})
			tc.do(r)
			cs := r.c.CompactState()
			var full []int
			for e, ce := range cs.Engines {
				if ce.State != nil {
					full = append(full, e)
					assert.Zero(t, ce.Epoch, "engine %d: a state in full has no epoch", e)
				}
			}
			assert.Equal(t, tc.full, full)
			s, err := cs.Expand(len(cs.Engines))
			require.NoError(t, err)
			r2 := newRig(t, rigOpts{gen: hwarch.Mariana})
			require.NoError(t, r2.c.Restore(s))
			assert.Equal(t, r.c.State(), r2.c.State(), "restored from the compact state, the controller shows the same")
			assert.Equal(t, cs, r2.c.CompactState())

			est := r.c.CompactStateBytes()
			perFull := uint64(unsafe.Sizeof(EngineState{}))
			assert.GreaterOrEqual(t, est, uint64(len(cs.Engines))*uint64(unsafe.Sizeof(CompactEngine{}))+uint64(len(full))*perFull)
			if len(full) == 0 {
				assert.Less(t, est*100, r.c.StateBytes(), "idle: under 1%% of the full state (%d of %d bytes)", est, r.c.StateBytes())
			}
		})
	}
}

// TestCompactStateRefusesEpochWithState: an engine given both by its
// epoch and in full is refused by Expand.
func TestCompactStateRefusesEpochWithState(t *testing.T) {
	es := powerOn(1)
	for _, tc := range []struct {
		name string
		ce   CompactEngine
		ok   bool
	}{
		{"epoch", CompactEngine{Epoch: 7}, true},
		{"state", CompactEngine{State: &es}, true},
		{"both", CompactEngine{Epoch: 7, State: &es}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompactState{Engines: []CompactEngine{tc.ce}}.Expand(1)
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrInvalidState)
			assert.Contains(t, err.Error(), "engine 0: Epoch 7 given with a whole state")
		})
	}
}

// TestCompactStateRefusesEngineCount: Expand refuses a count of engines
// other than the device's, before it makes any of them.
func TestCompactStateRefusesEngineCount(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		_, err := CompactState{Engines: make([]CompactEngine, n)}.Expand(2)
		assert.ErrorIs(t, err, ErrInvalidState)
		assert.ErrorContains(t, err, fmt.Sprintf("dma: restore: %d engines, the device has 2", n))
	}
	_, err := CompactState{Engines: make([]CompactEngine, 2)}.Expand(2)
	assert.NoError(t, err)
}
