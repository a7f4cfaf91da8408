package bar

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Sizes are the PCI BAR sizes a device reports in its configuration space.
// A BAR of size 0 is absent.
type Sizes [6]uint64

// DefaultQEMUBAR4 is the BAR4 a QEMU-revision V3/V4 device reports unless the
// caller chooses another: 16 GiB, so each HBM channel is 4 GiB. Driver
// 2.24.7.0 sizes every channel BAR4 size / 4 under QEMU
// (v3/neuron_dhal_v3.c 638–656). The value is the model's choice within what
// that driver needs: a channel must hold the 16 MiB firmware carve-out
// (v3 690–720) and the 1 GiB small pool (neuron_mempool.c 64) with room to
// spare, and must not pass the 24 GiB the driver's mmap path maps
// (mmap_get_bar4_offset_v3, v3 1020–1036), so BAR4 lies in (4 GiB, 96 GiB];
// 16 GiB also keeps two devices' BARs small in a guest's 64-bit MMIO window.
const DefaultQEMUBAR4 = 16 * hwarch.GiB

// DefaultSizes returns the BAR sizes of a device of geometry geo in a mode:
// the registers on BAR0 (BAR2 under QEMU for V2 and V3, as driver 2.24.7.0
// has it; see hwarch.BAR0Map.APBBARUnderQEMU) sized to the smallest BAR
// that holds the driver's offsets (1 GiB V2, 4 GiB V3/V4), and BAR4 the
// window onto HBM (32 GiB V2, 256 GiB V3/V4; DefaultQEMUBAR4 for V3/V4 under
// QEMU). Sizes are inferred (driver-facts §2.1; docs/device-model.md §BARs).
func DefaultSizes(geo *hwarch.Geometry, mode hwarch.Mode) Sizes {
	var s Sizes
	s[geo.BAR0.RegisterBAR(mode)] = geo.BAR0.MinimumBAR0
	s[hwarch.BAR4] = geo.BAR0.MinimumBAR4
	if mode == hwarch.ModeQEMU && geo.Generation != hwarch.Sunda {
		s[hwarch.BAR4] = DefaultQEMUBAR4
	}
	return s
}

// HBMWindow is one HBM channel as BAR4 exposes it: Size bytes at BAR4Offset
// that reach device addresses DeviceAddr onward.
type HBMWindow struct {
	Channel    int
	BAR4Offset uint64
	Size       uint64
	DeviceAddr uint64
}

// BAR4 is the decode of BAR4 onto HBM. An offset in no channel's window (the
// gap between a V3/V4 channel's active size and the next 64 GiB stride) is
// unmapped.
type BAR4 struct {
	windows []HBMWindow
}

// NewBAR4 returns the BAR4 decode of a device of geometry geo in a mode with
// a BAR4 of bar4Size bytes:
//   - V2: channel n at n·16 GiB (the channels' 64 GiB device-address gap is
//     squashed);
//   - V3/V4: channel n at n·64 GiB, its active size mapped;
//   - V3/V4 under QEMU: every channel BAR4 size / 4 long at n·(BAR4 size / 4).
//
// A window that does not fit in bar4Size is cut at its end; a BAR4 of size 0
// (tolerated by the driver on V3/V4) has no windows.
func NewBAR4(geo *hwarch.Geometry, mode hwarch.Mode, bar4Size uint64) (*BAR4, error) {
	b := &BAR4{}
	qemu := mode == hwarch.ModeQEMU && geo.Generation != hwarch.Sunda
	if qemu && bar4Size%(4*hwarch.MiB) != 0 {
		return nil, fmt.Errorf("bar4: QEMU BAR4 size %#x must be a multiple of 4 MiB (4 channels of whole MiB)", bar4Size)
	}
	if qemu && len(geo.HBM) > 0 && bar4Size/4 > geo.HBM[0].WindowSize {
		return nil, fmt.Errorf("bar4: QEMU BAR4 size %#x gives channels of %#x, larger than a channel's %#x device-address window",
			bar4Size, bar4Size/4, geo.HBM[0].WindowSize)
	}
	for ch, c := range geo.HBM {
		w := HBMWindow{Channel: ch, BAR4Offset: c.BAR4Offset, Size: c.ActiveSize, DeviceAddr: c.Base}
		if qemu {
			w.Size = bar4Size / 4
			w.BAR4Offset = uint64(ch) * w.Size
		}
		if w.BAR4Offset >= bar4Size {
			continue
		}
		w.Size = min(w.Size, bar4Size-w.BAR4Offset)
		b.windows = append(b.windows, w)
	}
	return b, nil
}

// Translate returns the device address behind BAR4 offset off.
func (b *BAR4) Translate(off uint64) (devAddr uint64, ok bool) {
	for _, w := range b.windows {
		if off >= w.BAR4Offset && off-w.BAR4Offset < w.Size {
			return w.DeviceAddr + off - w.BAR4Offset, true
		}
	}
	return 0, false
}

// Span returns the device address behind BAR4 offset off and how many
// bytes from there on lie in the same window.
func (b *BAR4) Span(off uint64) (devAddr, bytes uint64, ok bool) {
	for _, w := range b.windows {
		if off >= w.BAR4Offset && off-w.BAR4Offset < w.Size {
			return w.DeviceAddr + off - w.BAR4Offset, w.Size - (off - w.BAR4Offset), true
		}
	}
	return 0, 0, false
}

// Windows returns the channel windows.
func (b *BAR4) Windows() []HBMWindow { return append([]HBMWindow(nil), b.windows...) }

// ChannelSize returns the bytes of HBM channel ch reachable through BAR4,
// which under QEMU is how the driver sizes the channel.
func (b *BAR4) ChannelSize(ch int) uint64 {
	for _, w := range b.windows {
		if w.Channel == ch {
			return w.Size
		}
	}
	return 0
}
