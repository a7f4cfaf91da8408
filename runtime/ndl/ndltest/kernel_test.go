package ndltest_test

import (
	"errors"
	"fmt"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/ndl/kernelfake"
	"github.com/neuronsim/neuronsim/runtime/ndl/ndltest"
)

// The kernel backend keeps the contract against the driver's fake, on every
// PCI device id and mode (the id read from the fake's sysfs). It implements
// none of the optional interfaces: the driver has no clock of the device's,
// and its host memory is MEM_ALLOC's handles, not ndl.HostMemory.
func TestKernelBackendContract(t *testing.T) {
	for _, device := range []uint16{hwarch.DeviceTrn1, hwarch.DeviceInf2, hwarch.DeviceTrn2, hwarch.DeviceTrn3, hwarch.DeviceTrn3B} {
		g, err := hwarch.GenerationOfDevice(hwarch.VendorAmazon, device)
		if err != nil {
			t.Fatal(err)
		}
		for _, rev := range []uint8{0x01, hwarch.RevisionEMU, hwarch.RevisionQEMU} {
			t.Run(fmt.Sprintf("%#04x/%s", device, hwarch.ModeOf(rev)), func(t *testing.T) {
				geo := hwarch.MustGeometry(g)
				want := ndltest.Capabilities{Identity: hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: device, Revision: rev}}
				// DEVICE_INFO reports the register BAR only (bar_size[0]);
				// BAR4 is not reachable through the BAR ioctls.
				want.BARs[geo.BAR0.RegisterBAR(hwarch.ModeOf(rev))] = geo.BAR0.MinimumBAR0
				ndltest.RunContract(t, func(t *testing.T) ndl.Device {
					drv, err := kernelfake.New(kernelfake.Options{Arch: uint32(g), Revision: uint32(rev), DeviceID: device})
					if err != nil {
						t.Fatal(err)
					}
					dev, err := ndl.OpenKernelSys(drv, "/dev/neuron0", ndl.KernelOptions{})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() {
						if err := dev.Close(); err != nil && !errors.Is(err, ndl.ErrClosed) {
							t.Errorf("close: %v", err)
						}
						if f := drv.Faults(); len(f) != 0 {
							t.Errorf("the kernel backend made the driver mishandle an ioctl: %v", f)
						}
						if n := drv.OpenFDs(); n != 0 {
							t.Errorf("%d descriptors open after Close", n)
						}
					})
					return dev
				}, want)
			})
		}
	}
}
