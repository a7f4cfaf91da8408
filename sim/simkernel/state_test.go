package simkernel

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestInvalidStateOf: a model's sentinel keeps its own message, matches
// itself and the kernel's ErrInvalidState through any wrapping, and is not
// matched by another model's sentinel or by the kernel's own errors.
func TestInvalidStateOf(t *testing.T) {
	core := InvalidStateOf("tpb: invalid core state")
	other := InvalidStateOf("invalid DMA state")
	assert.Equal(t, "tpb: invalid core state", core.Error())
	err := fmt.Errorf("NC 1: %w: engine 2: End too late", core)
	assert.Equal(t, "NC 1: tpb: invalid core state: engine 2: End too late", err.Error())
	assert.ErrorIs(t, err, core)
	assert.ErrorIs(t, err, ErrInvalidState)
	assert.False(t, errors.Is(err, other), "one model's refusal is not another's")
	assert.False(t, errors.Is(fmt.Errorf("engine: %w", ErrInvalidState), core), "the kernel's refusal is no model's")
}
