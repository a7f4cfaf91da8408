package csr

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// Window is one BAR0 window of a device's CSR atlas as the runtime registers it.
type Window struct {
	Name       string
	BAR0Offset uint64
	Size       uint64
	DeviceAddr uint64
}

// Big-chip (V3/V4) windows that the arch tables do not carry: the APB IO dies
// and the PREPROC blocks (seed 003 atlas; driver-facts §2.3).
const (
	apbIOSize        = 0x2000_0000
	preprocBAR0Base  = 0xC000_0000
	preprocBAR0Step  = 0x400_0000
	preprocHBMOffset = 0x12_0000_0000
	v2APBIOBAR0      = 0x30E0_0000 // IOFAB TOP_SP notific and MISC RAM
	v2APBIOSize      = 0x20_0000
	v2APBDeviceBase  = 0xFFF_F000_0000
	v2APBBAR0        = 0x3000_0000
	v2TopSPDevice    = 0xFFF_D000_0000
	v3TopSPDevice    = 0x82_8000_0000
	v3TopSPDevStride = 0x4000_0000
)

// Atlas returns the CSR windows of a device of the tables' generation, the
// way tdrv_arch_csr_register_device_<arch> builds them: per NeuronCore a TPB
// (SBUF) and a PSUM window of 32 MiB, every TOP_SP, the APB SE blocks and the
// APB IO blocks, and on V3/V4 the four PREPROC blocks.
func Atlas(t *arch.Tables) ([]Window, error) {
	geo := t.Geometry
	var w []Window
	for nc := 0; nc < geo.NeuronCores; nc++ {
		tpb, err := t.Khal.TPBBase(nc)
		if err != nil {
			return nil, err
		}
		psum, err := t.Khal.PSUMBase(nc)
		if err != nil {
			return nil, err
		}
		base := geo.BAR0.TPBWindow(nc)
		w = append(w,
			Window{fmt.Sprintf("tpb%d", nc), base, geo.SBUFWindowSize, tpb},
			Window{fmt.Sprintf("tpb%d_psum", nc), base + geo.BAR0.PSUMOffset, geo.SBUFWindowSize, psum})
	}
	for ts := 0; ts < geo.TopSPs; ts++ {
		dev := uint64(v2TopSPDevice) + uint64(ts)*geo.BAR0.TopSPStride
		if geo.Generation != hwarch.Sunda {
			half := uint64(0)
			if ts >= geo.BAR0.TopSPHalf {
				half = geo.MeshBit
			}
			dev = v3TopSPDevice + uint64(ts%geo.BAR0.TopSPHalf)*v3TopSPDevStride | half
		}
		w = append(w, Window{fmt.Sprintf("top_sp%d", ts), geo.BAR0.TopSPWindow(ts), geo.BAR0.TopSPSize, dev})
	}
	for i, se := range t.Tdrv.APBSEWindows() {
		w = append(w, Window{fmt.Sprintf("apb_se_%d", i), se.BAR0Offset, se.Size, se.DeviceBase})
	}
	if geo.Generation == hwarch.Sunda {
		w = append(w, Window{"apb_io", v2APBIOBAR0, v2APBIOSize, v2APBDeviceBase + v2APBIOBAR0 - v2APBBAR0})
		return w, nil
	}
	w = append(w,
		Window{"apb_io_0", 0, apbIOSize, 0x80_0000_0000},
		Window{"apb_io_1", 0x4000_0000, apbIOSize, 0x80_0000_0000 | geo.MeshBit})
	for ch := range geo.HBM {
		w = append(w, Window{fmt.Sprintf("preproc%d", ch), preprocBAR0Base + uint64(ch)*preprocBAR0Step,
			t.Khal.PREPROCSize(), geo.HBM[ch].Base + preprocHBMOffset})
	}
	return w, nil
}

// RegisterDevice registers every window of a device's atlas in the table
// (the runtime's csr register-device step). vaBase is where the runtime sees
// the start of the device's APB BAR (ndl_device_t csr_base[0]); each window's
// virtual address is vaBase + its BAR0 offset. apbBAR is the PCI BAR that
// carries the registers (2 for V2 under QEMU, else 0). On error nothing of
// this device stays registered.
func RegisterDevice(tab *Table, t *arch.Tables, dev ndl.Device, deviceID uint32, vaBase uint64, apbBAR int) error {
	windows, err := Atlas(t)
	if err != nil {
		return err
	}
	for _, w := range windows {
		if vaBase+w.BAR0Offset < vaBase {
			tab.Deregister(deviceID)
			return fmt.Errorf("csr register device %d: window %s: %w (virtual base %#x overflows)", deviceID, w.Name, ErrBadRegion, vaBase)
		}
		err := tab.Register(Region{
			Name: w.Name, Start: vaBase + w.BAR0Offset, End: vaBase + w.BAR0Offset + w.Size,
			DeviceAddr: w.DeviceAddr, DeviceID: deviceID, Device: dev, BAR: apbBAR, BAR0Offset: w.BAR0Offset,
		})
		if err != nil {
			tab.Deregister(deviceID)
			return fmt.Errorf("csr register device %d: %w", deviceID, err)
		}
	}
	return nil
}
