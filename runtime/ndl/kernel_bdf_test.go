package ndl_test

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/ndl/kernelfake"
)

// TestKernelIdentityFromSysfs: the device id comes from the PCI function
// the driver names (DEVICE_BDF, then sysfs): an Inf2 is 0x7264, which no
// ioctl reports; without DEVICE_BDF or sysfs it is the arch's first id; a
// sysfs id of another generation, or a malformed one, is refused.
func TestKernelIdentityFromSysfs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     kernelfake.Options
		kopt    ndl.KernelOptions
		device  uint16
		bdf     string
		wantErr string
	}{
		{"inf2 from sysfs", kernelfake.Options{Arch: 2, DeviceID: hwarch.DeviceInf2, BDF: ndl.DeviceBDF{Bus: 0x10, Slot: 0x1c, Func: 1}}, ndl.KernelOptions{}, hwarch.DeviceInf2, "0000:10:1c.1", ""},
		{"trn2 from sysfs", kernelfake.Options{Arch: 3}, ndl.KernelOptions{}, hwarch.DeviceTrn2, "0000:00:03.0", ""},
		{"older driver: from the arch", kernelfake.Options{Arch: 2, DeviceID: hwarch.DeviceInf2, NoBDF: true}, ndl.KernelOptions{}, hwarch.DeviceTrn1, "", ""},
		{"no sysfs: from the arch", kernelfake.Options{Arch: 2, DeviceID: hwarch.DeviceInf2, NoSysfs: true}, ndl.KernelOptions{}, hwarch.DeviceTrn1, "0000:00:03.0", ""},
		{"the option wins", kernelfake.Options{Arch: 2}, ndl.KernelOptions{DeviceID: hwarch.DeviceInf2}, hwarch.DeviceInf2, "0000:00:03.0", ""},
		{"sysfs of another generation", kernelfake.Options{Arch: 2, DeviceID: hwarch.DeviceTrn2}, ndl.KernelOptions{}, 0, "", "is a Trn2 device (0x7364) but the driver reports arch"},
		{"not a PCI address", kernelfake.Options{Arch: 3, BDF: ndl.DeviceBDF{Bus: 0x100}}, ndl.KernelOptions{}, 0, "", "not a PCI address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drv, err := kernelfake.New(tc.opt)
			require.NoError(t, err)
			k, err := ndl.OpenKernelSys(drv, "/dev/neuron0", tc.kopt)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			defer k.Close()
			assert.Equal(t, tc.device, k.Identity().Device)
			assert.Equal(t, tc.bdf, k.BDF())
		})
	}
	// a DEVICE_BDF that fails otherwise than "unknown ioctl" is an error
	drv, err := kernelfake.New(kernelfake.Options{Arch: 3})
	require.NoError(t, err)
	drv.Errno[ndl.IoctlDeviceBDF] = syscall.EFAULT
	_, err = ndl.OpenKernelSys(drv, "/dev/neuron0", ndl.KernelOptions{})
	require.ErrorIs(t, err, syscall.EFAULT)
	assert.ErrorContains(t, err, "DEVICE_BDF")
}

// TestDeviceBDFLayout: the struct's size and fields as the driver writes
// them, and the ioctl number from the _IOC formula.
func TestDeviceBDFLayout(t *testing.T) {
	b := ndl.DeviceBDF{Bus: 0xab, Slot: 0x1f, Func: 7}
	enc := b.Encode()
	require.Len(t, enc, ndl.DeviceBDFSize)
	assert.Equal(t, []byte{0xab, 0, 0, 0, 0x1f, 7, 0, 0}, enc)
	got, err := ndl.DecodeDeviceBDF(enc)
	require.NoError(t, err)
	assert.Equal(t, b, got)
	assert.Equal(t, "0000:ab:1f.7", got.String())
	cmd, err := ndl.IoctlCommand(ndl.IocRead, 101, 8)
	require.NoError(t, err)
	assert.Equal(t, cmd, ndl.IoctlDeviceBDF)
	assert.Equal(t, uint32(0x80084e65), ndl.IoctlDeviceBDF)
}
