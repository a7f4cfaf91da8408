package tpb

import (
	"testing"

	"github.com/stretchr/testify/assert"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// TestNewCoreKeepsErrorChain: a configuration refused for its generation
// wraps both ErrConfig and the geometry's own sentinel (the cause used to
// be formatted with %v, dropping hwarch.ErrUnknownGeneration from the
// chain), with the same message.
func TestNewCoreKeepsErrorChain(t *testing.T) {
	_, err := NewCore(Config{Generation: hwarch.Generation(9)})
	assert.ErrorIs(t, err, ErrConfig)
	assert.ErrorIs(t, err, hwarch.ErrUnknownGeneration)
	assert.Equal(t, "tpb: invalid core configuration: geometry: unknown generation 9 (want 2, 3 or 4)", err.Error())
}
