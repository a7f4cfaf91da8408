//go:build !(linux && (amd64 || arm64))

package ndl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenKernelUnsupported(t *testing.T) {
	k, err := OpenKernel("/dev/neuron0")
	assert.Nil(t, k)
	require.ErrorIs(t, err, ErrKernelUnsupported)
}
