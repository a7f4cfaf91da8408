package arch

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// APBWindow is one sequencer-engine APB block: a device-address window and the
// BAR0 offset it is mapped at.
type APBWindow struct {
	DeviceBase uint64 // device physical address of the window
	BAR0Offset uint64 // where the window starts in BAR0
	Size       uint64 // bytes
}

// Tdrv is the device-driver geometry of the runtime's tdrv_arch_ops vtable
// (488 bytes, installed by tdrv_arch_register_{sunda,cayman,mariana}).
type Tdrv struct {
	gen          hwarch.Generation
	numTPB       int
	numSENG      int
	tpbPerHBM    int
	tpbPerSENG   int
	tpbMemBase   uint64 // BAR0 offset of TPB 0's memory window
	tpbMemShift  uint   // per-TPB memory stride as a shift (26: 64 MiB)
	tpbAPBStride uint64 // per-TPB CSR APB stride from TPB 0's SENG block
	tpbAPBBySENG bool   // stride applies per SENG (V3/V4) rather than per TPB (V2)
	h2dEngines   [8]int // indexed by tpb / tpb-per-SENG
	h2dFirst     int    // first host DMA engine id
	h2dCount     int    // number of host DMA engines
	apb          []APBWindow
}

var tdrvTables = [hwarch.NumGenerations]*Tdrv{
	hwarch.Sunda: {
		gen: hwarch.Sunda, numTPB: 2, numSENG: 2, tpbPerHBM: 1, tpbPerSENG: 1,
		tpbMemBase: 0, tpbMemShift: 26, tpbAPBStride: 0x70_0000,
		h2dEngines: [8]int{32, 33}, h2dFirst: 32, h2dCount: 2,
		apb: []APBWindow{
			{DeviceBase: 0xFFF_F000_0000, BAR0Offset: 0x3000_0000, Size: 0x70_0000},
			{DeviceBase: 0xFFF_F070_0000, BAR0Offset: 0x3070_0000, Size: 0x70_0000},
		},
	},
	hwarch.Cayman: {
		gen: hwarch.Cayman, numTPB: 8, numSENG: 4, tpbPerHBM: 2, tpbPerSENG: 2,
		tpbMemBase: 0xD000_0000, tpbMemShift: 26, tpbAPBStride: 0x1000_0000, tpbAPBBySENG: true,
		h2dEngines: [8]int{128, 129, 130, 131, 0, 0, 0, 0}, h2dFirst: 128, h2dCount: 4,
		apb: bigChipAPB,
	},
	hwarch.Mariana: {
		gen: hwarch.Mariana, numTPB: 8, numSENG: 4, tpbPerHBM: 2, tpbPerSENG: 2,
		tpbMemBase: 0xD000_0000, tpbMemShift: 26, tpbAPBStride: 0x1000_0000, tpbAPBBySENG: true,
		h2dEngines: [8]int{128, 129, 130, 131, 0, 0, 0, 0}, h2dFirst: 128, h2dCount: 4,
		apb: bigChipAPB,
	},
}

// bigChipAPB is mariana_apb_se_bases / mariana_apb_bar_offsets (seed 003), the
// apb_se_0..3 windows of 0xC800000 bytes; V3 has the same map (driver-facts §2.3).
var bigChipAPB = []APBWindow{
	{DeviceBase: 0x10_0000_0000, BAR0Offset: 0x8000_0000, Size: 0xC80_0000},
	{DeviceBase: 0x50_0000_0000, BAR0Offset: 0x9000_0000, Size: 0xC80_0000},
	{DeviceBase: 0x8010_0000_0000, BAR0Offset: 0xA000_0000, Size: 0xC80_0000},
	{DeviceBase: 0x8050_0000_0000, BAR0Offset: 0xB000_0000, Size: 0xC80_0000},
}

// Generation returns the generation these tables describe.
func (t *Tdrv) Generation() hwarch.Generation { return t.gen }

// NumTPB returns the NeuronCores per device (tdrv_arch_get_num_tpb): 2 / 8 / 8.
func (t *Tdrv) NumTPB() int { return t.numTPB }

// NumSENG returns the sequencer engines per device (tdrv_arch_get_num_seng): 2 / 4 / 4.
func (t *Tdrv) NumSENG() int { return t.numSENG }

// NumTPBPerHBM returns the NeuronCores sharing one HBM channel
// (get_num_tpb_per_hbm_<arch>): 1 / 2 / 2.
func (t *Tdrv) NumTPBPerHBM() int { return t.tpbPerHBM }

// NumTPBPerSENG returns the NeuronCores per sequencer engine
// (tdrv_arch_get_num_tpb_per_seng): 1 / 2 / 2.
func (t *Tdrv) NumTPBPerSENG() int { return t.tpbPerSENG }

// checkTPB is the runtime's "pcore->device_tpb_idx < tdrv_arch_get_num_tpb()" assertion.
func (t *Tdrv) checkTPB(what string, idx int) error {
	if idx < 0 || idx >= t.numTPB {
		return fmt.Errorf("%s %s: device_tpb_idx %d: %w (num_tpb %d)", t.gen, what, idx, ErrTPBIndex, t.numTPB)
	}
	return nil
}

// TPBMemOffset returns the BAR0 offset of NeuronCore idx's memory window
// (get_tpb_mem_offset_sunda: idx<<26; on cayman/mariana the same 64 MiB stride
// from the TPB windows' base 0xD0000000, derived from driver-facts §2.3).
func (t *Tdrv) TPBMemOffset(idx int) (uint64, error) {
	if err := t.checkTPB("get_tpb_mem_offset", idx); err != nil {
		return 0, err
	}
	return t.tpbMemBase + uint64(idx)<<t.tpbMemShift, nil
}

// TPBCSRAPBOffset returns the offset of NeuronCore idx's CSR APB block from
// TPB 0's (get_tpb_csr_apb_offset_sunda: 0 for TPB 0, 0x700000 per TPB
// otherwise; on cayman/mariana the SENG's apb_se BAR0 offset minus apb_se_0's,
// derived).
func (t *Tdrv) TPBCSRAPBOffset(idx int) (uint64, error) {
	if err := t.checkTPB("get_tpb_csr_apb_offset", idx); err != nil {
		return 0, err
	}
	if idx == 0 {
		return 0, nil
	}
	if t.tpbAPBBySENG {
		return uint64(idx/t.tpbPerSENG) * t.tpbAPBStride, nil
	}
	return uint64(idx) * t.tpbAPBStride, nil
}

// H2DEngine returns the host-to-device DMA engine NeuronCore idx uses
// (mariana_h2d_dma_eng_id {128,129,130,131,0,0,0,0} indexed by
// idx / num_tpb_per_seng; cayman the same, sunda {32,33} per the driver).
func (t *Tdrv) H2DEngine(idx int) (int, error) {
	if err := t.checkTPB("h2d_dma_eng_id", idx); err != nil {
		return 0, err
	}
	return t.h2dEngines[idx/t.tpbPerSENG], nil
}

// H2DEngineTable returns the whole H2D engine table as the runtime stores it.
func (t *Tdrv) H2DEngineTable() [8]int { return t.h2dEngines }

// IsH2DEngine reports whether eng is a host DMA engine
// (tdrv_arch_is_h2d_engine_mariana: (eng-128) <= 3 as unsigned, so ids below
// 128 wrap to huge values and fail; sunda (eng-32) <= 1).
func (t *Tdrv) IsH2DEngine(eng uint32) bool {
	return eng-uint32(t.h2dFirst) <= uint32(t.h2dCount-1)
}

// APBSEWindows returns the sequencer-engine APB windows
// (mariana_apb_se_bases and mariana_apb_bar_offsets; cayman the same;
// sunda the SENG0/SENG1 blocks of driver-facts §2.2).
func (t *Tdrv) APBSEWindows() []APBWindow { return append([]APBWindow(nil), t.apb...) }

// APBSEBase returns the device address of SENG seng's APB block (mariana_apb_se_bases[seng]).
func (t *Tdrv) APBSEBase(seng int) (uint64, error) {
	if seng < 0 || seng >= len(t.apb) {
		return 0, fmt.Errorf("%s apb_se_bases[%d]: %w (num_seng %d)", t.gen, seng, ErrIndex, len(t.apb))
	}
	return t.apb[seng].DeviceBase, nil
}

// APBBAROffset returns the BAR0 offset of SENG seng's APB block (mariana_apb_bar_offsets[seng]).
func (t *Tdrv) APBBAROffset(seng int) (uint64, error) {
	if seng < 0 || seng >= len(t.apb) {
		return 0, fmt.Errorf("%s apb_bar_offsets[%d]: %w (num_seng %d)", t.gen, seng, ErrIndex, len(t.apb))
	}
	return t.apb[seng].BAR0Offset, nil
}

// DMAEngineBAR0Offset maps a device physical address inside an APB SE window
// to its BAR0 offset (tdrv_arch_get_dma_engine_bar_offset_adjustment_mariana:
// pa - apb_se_base + apb_bar_offset). An address outside every window is an
// error wrapping ErrNotMapped.
func (t *Tdrv) DMAEngineBAR0Offset(pa uint64) (uint64, error) {
	for _, w := range t.apb {
		if pa >= w.DeviceBase && pa-w.DeviceBase < w.Size {
			return pa - w.DeviceBase + w.BAR0Offset, nil
		}
	}
	return 0, fmt.Errorf("%s dma_engine_bar_offset_adjustment: device address %#x: %w", t.gen, pa, ErrNotMapped)
}

// NXCoreType bridges an engine index to its microcode core type
// (tdrv_arch_get_nx_core_type_<arch>, e.g. cayman CSWTCH_16_0 {10,7,9,8,11}).
// An engine past SP gives (CoreTypeNone, false), the runtime's -1.
func (t *Tdrv) NXCoreType(eng hwarch.Engine) (hwarch.CoreType, bool) {
	return hwarch.NXCoreType(t.gen, eng)
}
