package fabric

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// TestOneInvalidStateSentinel: every model's refused-state sentinel wraps
// the kernel's ErrInvalidState (issue 15 item 6: three ErrInvalidState and
// fabric.ErrSnapshot were unrelated errors), keeping the message its errors
// have always carried; sim's is the kernel's own.
func TestOneInvalidStateSentinel(t *testing.T) {
	tests := []struct {
		name string
		err  error
		msg  string
	}{
		{"sim", sim.ErrInvalidState, "invalid state"},
		{"tpb", tpb.ErrInvalidState, "tpb: invalid core state"},
		{"dma", dma.ErrInvalidState, "invalid DMA state"},
		{"fabric", ErrSnapshot, "invalid system snapshot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.True(t, errors.Is(tc.err, simkernel.ErrInvalidState))
			assert.Equal(t, tc.msg, tc.err.Error())
		})
	}
	assert.False(t, errors.Is(dma.ErrInvalidState, tpb.ErrInvalidState))
}
