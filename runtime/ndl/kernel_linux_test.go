//go:build linux && (amd64 || arm64)

package ndl

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real syscall path, against nodes that exist on every Linux host.

func TestLinuxOpenKernelMissingNode(t *testing.T) {
	k, err := OpenKernel("/nonexistent/neuron0")
	assert.Nil(t, k)
	require.ErrorIs(t, err, syscall.ENOENT)
	assert.ErrorContains(t, err, "ndl kernel: open /nonexistent/neuron0")
}

// /dev/null answers every ioctl with ENOTTY: DEVICE_INFO's errno comes back
// wrapped and the descriptor is closed again.
func TestLinuxOpenKernelNotANeuronDevice(t *testing.T) {
	k, err := OpenKernel("/dev/null")
	assert.Nil(t, k)
	require.ErrorIs(t, err, syscall.ENOTTY)
	assert.ErrorContains(t, err, "ndl kernel: /dev/null: DEVICE_INFO")
}

func TestLinuxKernelSysIoctl(t *testing.T) {
	var sys linuxKernelSys
	fd, err := sys.Open("/dev/null")
	require.NoError(t, err)
	buf := make([]byte, DeviceInfoSize)
	assert.ErrorIs(t, sys.Ioctl(fd, IoctlDeviceInfo, buf), syscall.ENOTTY)
	assert.ErrorIs(t, sys.Ioctl(fd, IoctlDeviceInfo, nil), syscall.EINVAL)
	require.NoError(t, sys.Close(fd))
	assert.ErrorIs(t, sys.Ioctl(fd, IoctlDeviceInfo, buf), syscall.EBADF)
	assert.ErrorIs(t, sys.Close(fd), syscall.EBADF)
}
