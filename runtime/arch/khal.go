package arch

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Khal is the KaenaHal per-arch offset band (kaena_khal.khal_arch, installed
// by kaena_khal_register_funcs_v{2,3,4}; seed 001 §2–§3): the base addresses
// and register offsets the runtime computes CSR and DMA addresses from.
type Khal struct {
	gen           hwarch.Generation
	tpbBases      []uint64
	psumDelta     uint64
	preprocBases  []uint64
	preprocSize   uint64
	hbmBases      []uint64
	hbmSize       uint64
	iramSizes     [hwarch.NumEngines]uint64
	seqBases      [4]uint64 // PE, ACT, POOL, DVE
	seqSPHostVis  uint64    // added to engine 4's triple when host-visible
	seqSize1      uint64
	seqSize2      uint64
	rebase        uint64 // subtracted for host-visible addresses; 0 on sunda
	q7Count       int
	dveOffsets    [4]uint64 // opcode, control-fast, control-slow, datapath
	dveHasOffsets bool
	dveSizes      [4]uint64
	dveParamRAM   uint64
	fp8Cfg        [4]uint64 // eng_fp8_cfg per engine 0..3
	cfgPresent    bool      // the five SDMA/FP8/EMAX config getters return real offsets
	hwDecodeBases [4]uint64
	hasHWDecode   bool
	topSP         TopSPLocalRegs
}

// TopSPLocalRegs are the TopSP NX-local register offsets; a zero field means
// the generation has no such getter.
type TopSPLocalRegs struct {
	Window           uint64 // block origin (sunda 0x60000)
	StopSignal       uint64
	BasicBlockSwitch uint64
	HostTrigger      uint64
}

// Fixed sizes and offsets shared by every generation.
const (
	Q7Base               uint64 = 0x340_0000 // chosen: Q7 instance 0 aperture
	Q7Stride             uint64 = 0x10_0000  // chosen
	Q7Size               uint64 = 0x10_0000  // chosen
	DVEParamRAMSize      uint64 = 0x400      // 256 × fp32 reciprocal table
	HWDecodeHeaderSize   uint64 = 4096
	HWDecodeBlockSize    uint64 = 0x2000
	HostVisibleRebase    uint64 = 0x8_0000_0000    // bit 35, subtracted for host-visible addresses
	MeshHighBit          uint64 = 0x8000_0000_0000 // bit 47, the second mesh half
	PSUMApertureDelta    uint64 = 0x8_0200_0000    // PSUM base = TPB base + this (cayman/mariana)
	NXStartCtrlOffset    uint64 = 0x4              // NX START_CTRL
	NXRunStallOffset     uint64 = 0x0              // NX release_run_stall
	NotificSWQueueNum2   uint64 = 0xa08            // NOTIFIC_SW_QUEUE_NUM2
	NotificEvtSemMask    uint32 = 0xf0000          // EVENTS_SEMAPHORES_NT field mask
	NotificEvtSemShift   uint32 = 16               // EVENTS_SEMAPHORES_NT field shift
	XTMemcopyDMAsOffset  uint64 = 0x13a0           // XT local reg memcopy_dmas
	preprocBlockBigChip  uint64 = 0x12_0000_0000   // PREPROC at HBM base + this (driver-facts §2.3)
	preprocBlockSize     uint64 = 0x34C_0000
	sundaPreprocOffset   uint64 = 0x8_0000_0000 // chosen
	sundaPSUMDelta       uint64 = 0x200_0000    // chosen from the BAR0 TPB/PSUM layout
	sundaTPBDeviceBase   uint64 = 0xFFF_C000_0000
	sundaTPBDeviceStride uint64 = 0x400_0000
)

var khalTables = func() [hwarch.NumGenerations]*Khal {
	var t [hwarch.NumGenerations]*Khal
	t[hwarch.Sunda] = &Khal{
		gen:          hwarch.Sunda,
		tpbBases:     []uint64{sundaTPBDeviceBase, sundaTPBDeviceBase + sundaTPBDeviceStride},
		psumDelta:    sundaPSUMDelta,
		preprocBases: []uint64{sundaPreprocOffset, 0x10_0000_0000 + sundaPreprocOffset},
		preprocSize:  preprocBlockSize,
		hbmBases:     []uint64{0, 0x10_0000_0000},
		hbmSize:      0x4_0000_0000,
		iramSizes:    [hwarch.NumEngines]uint64{32 * hwarch.KiB, 8 * hwarch.MiB, 8 * hwarch.MiB, 8 * hwarch.MiB, 8 * hwarch.MiB},
		seqBases:     [4]uint64{0x260_0000, 0x240_0000, 0x300_0000, 0x2B0_0000},
		seqSPHostVis: 0x280_0000,
		seqSize1:     0x10000, seqSize2: 0x4000,
		q7Count:     1,
		dveSizes:    [4]uint64{0x2000, 0x1000, 0, 0x1000},
		dveParamRAM: 0x2B8_4000,
		topSP:       TopSPLocalRegs{Window: 0x60000, StopSignal: 0x6084c, BasicBlockSwitch: 0x6083c},
	}
	big := func(g hwarch.Generation, hbmSize uint64) *Khal {
		k := &Khal{
			gen:          g,
			tpbBases:     bigChipSBUFBases,
			psumDelta:    PSUMApertureDelta,
			preprocSize:  preprocBlockSize,
			hbmBases:     []uint64{0, 0x40_0000_0000, 0x8000_0000_0000, 0x8040_0000_0000},
			hbmSize:      hbmSize,
			iramSizes:    [hwarch.NumEngines]uint64{32 * hwarch.KiB, 32 * hwarch.KiB, 32 * hwarch.KiB, 32 * hwarch.KiB, 32 * hwarch.KiB},
			seqBases:     [4]uint64{0x8_0260_0000, 0x8_0240_0000, 0x8_0300_0000, 0x8_02B0_0000},
			seqSPHostVis: 0x8_0280_0000,
			seqSize1:     0x20000, seqSize2: 0x10000,
			rebase:        HostVisibleRebase,
			q7Count:       2,
			dveOffsets:    [4]uint64{0x2B8_2000, 0x2B8_0000, 0x2B8_1000, 0x2B8_6000},
			dveHasOffsets: true,
			dveSizes:      [4]uint64{0x4000, 0x1000, 0x1000, 0x1000},
			dveParamRAM:   0x2B8_7000,
			hwDecodeBases: [4]uint64{0x8_0267_0000, 0x8_0247_0000, 0x8_0307_0000, 0x8_02B8_8000},
			hasHWDecode:   true,
			topSP:         TopSPLocalRegs{StopSignal: 0x615c0, BasicBlockSwitch: 0x615e0, HostTrigger: 0x615A0},
		}
		// PREPROC: two halves of the PREPROC block of the tile's HBM channel.
		for i := 0; i < 8; i++ {
			k.preprocBases = append(k.preprocBases, k.hbmBases[i/2]+preprocBlockBigChip+uint64(i%2)*(preprocBlockSize/2))
		}
		return k
	}
	t[hwarch.Cayman] = big(hwarch.Cayman, 0x6_0000_0000)
	t[hwarch.Mariana] = big(hwarch.Mariana, 0x9_0000_0000)
	t[hwarch.Mariana].fp8Cfg = [4]uint64{0xF00, 0xF08, 0xF0C, 0xF04}
	t[hwarch.Mariana].cfgPresent = true
	return t
}()

// Generation returns the generation these tables describe.
func (k *Khal) Generation() hwarch.Generation { return k.gen }

func (k *Khal) index(what string, idx, n int) error {
	if idx < 0 || idx >= n {
		return fmt.Errorf("%s %s[%d]: %w (valid 0..%d)", k.gen, what, idx, ErrIndex, n-1)
	}
	return nil
}

// TPBBase returns NeuronCore idx's TPB base device address
// (aws_hal_get_tpb_base_<arch>: cayman/mariana .rodata {0x2000000000,
// 0x3000000000, 0x6000000000, 0x7000000000, then the same with bit 47}; sunda
// derived from the V2 map). An index past the table is ErrIndex (the leaf aborts).
func (k *Khal) TPBBase(idx int) (uint64, error) {
	if err := k.index("get_tpb_base", idx, len(k.tpbBases)); err != nil {
		return 0, err
	}
	return k.tpbBases[idx], nil
}

// TPBBases returns the whole TPB base table.
func (k *Khal) TPBBases() []uint64 { return append([]uint64(nil), k.tpbBases...) }

// PSUMBase returns NeuronCore idx's PSUM base (aws_hal_get_psum_base_<arch>):
// TPB base + 0x802000000 on cayman/mariana.
func (k *Khal) PSUMBase(idx int) (uint64, error) {
	b, err := k.TPBBase(idx)
	if err != nil {
		return 0, fmt.Errorf("get_psum_base: %w", err)
	}
	return b + k.psumDelta, nil
}

// PREPROCBase returns NeuronCore idx's PREPROC base (aws_hal_get_preproc_base_<arch>).
func (k *Khal) PREPROCBase(idx int) (uint64, error) {
	if err := k.index("get_preproc_base", idx, len(k.preprocBases)); err != nil {
		return 0, err
	}
	return k.preprocBases[idx], nil
}

// PREPROCSize returns the size of a PREPROC block (0x34C0000).
func (k *Khal) PREPROCSize() uint64 { return k.preprocSize }

// NumHBM returns the HBM channels (2 / 4 / 4).
func (k *Khal) NumHBM() int { return len(k.hbmBases) }

// HBMBase returns HBM channel ch's device address (aws_hal_get_hbm_base_<arch>):
// sunda {0, 0x1000000000}; cayman/mariana {0, 0x4000000000, 0x800000000000,
// 0x804000000000}.
func (k *Khal) HBMBase(ch int) (uint64, error) {
	if err := k.index("get_hbm_base", ch, len(k.hbmBases)); err != nil {
		return 0, err
	}
	return k.hbmBases[ch], nil
}

// HBMSize returns the usable bytes per channel (aws_hal_get_hbm_size_<arch>):
// 0x400000000 / 0x600000000 / 0x900000000. This is not the BAR4 window size.
func (k *Khal) HBMSize() uint64 { return k.hbmSize }

// TPBEngIRAMSize returns an engine's instruction RAM size
// (aws_hal_get_tpb_eng_iram_size_<arch>): sunda non-PE engines 8 MiB,
// cayman/mariana 32 KiB; the PE value is chosen (32 KiB).
func (k *Khal) TPBEngIRAMSize(eng hwarch.Engine) (uint64, error) {
	if err := k.index("get_tpb_eng_iram_size", int(eng), hwarch.NumEngines); err != nil {
		return 0, err
	}
	return k.iramSizes[eng], nil
}

// SeqParams is the sequencer aperture triple and its two sizes.
type SeqParams struct {
	Seq, SeqTop, HostVis uint64
	Size1, Size2         uint64
}

// SeqParams returns an engine's sequencer apertures (aws_hal_get_seq_params_<arch>):
// seq = base, seqtop = base+0x20000, hostvis = base+0x40000, with bases PE
// 0x802600000, ACT 0x802400000, POOL 0x803000000, DVE 0x802B00000 on
// cayman/mariana (sizes 0x20000/0x10000) and the same without the 0x8_0000_0000
// prefix on sunda (sizes 0x10000/0x4000). Engine 4 (SP) has the triple
// {0, 0x20000, 0x40000}, moved by 0x802800000 when host-visible. When
// hostVisible is set, 0x800000000 is subtracted (not on sunda, which has no
// prefix). Engines past SP are ErrIndex (the leaf asserts).
func (k *Khal) SeqParams(eng hwarch.Engine, hostVisible bool) (SeqParams, error) {
	if err := k.index("get_seq_params", int(eng), hwarch.NumEngines); err != nil {
		return SeqParams{}, err
	}
	var base uint64
	if eng == hwarch.EngineSP {
		if hostVisible {
			base = k.seqSPHostVis
		}
	} else {
		base = k.seqBases[eng]
	}
	p := SeqParams{Seq: base, SeqTop: base + 0x20000, HostVis: base + 0x40000, Size1: k.seqSize1, Size2: k.seqSize2}
	if hostVisible {
		p.Seq -= k.rebase
		p.SeqTop -= k.rebase
		p.HostVis -= k.rebase
	}
	return p, nil
}

// Q7Params is one Q7 (GpSimd vision core) instance's aperture.
type Q7Params struct{ Base, Size uint64 }

// NumQ7 returns the Q7 instances (1 on sunda: POOL; 2 on cayman/mariana: POOL and CCE).
func (k *Khal) NumQ7() int { return k.q7Count }

// Q7Params returns Q7 instance i's aperture (aws_hal_get_q7_params_<arch>).
// The seed says the addresses are shared across generations and only the
// count differs; the addresses themselves are chosen.
func (k *Khal) Q7Params(i int) (Q7Params, error) {
	if err := k.index("get_q7_params", i, k.q7Count); err != nil {
		return Q7Params{}, err
	}
	return Q7Params{Base: Q7Base + uint64(i)*Q7Stride, Size: Q7Size}, nil
}

// DVETables names the four DVE micro-tables in dve_config_dma_state_t order.
type DVETables struct {
	Opcode, ControlFast, ControlSlow, Datapath uint64
}

// DVETableOffsets returns the DVE table offsets inside the DVE tile window
// (aws_hal_get_dve_table_offsets_<arch>): cayman = mariana = {opcode 0x2B82000,
// control-fast 0x2B80000, control-slow 0x2B81000, datapath 0x2B86000}. Sunda
// has no such getter (its offsets are implicit): ok is false.
func (k *Khal) DVETableOffsets() (DVETables, bool) {
	if !k.dveHasOffsets {
		return DVETables{}, false
	}
	o := k.dveOffsets
	return DVETables{Opcode: o[0], ControlFast: o[1], ControlSlow: o[2], Datapath: o[3]}, true
}

// DVETableSizes returns the DVE table sizes (aws_hal_get_dve_table_sizes_<arch>).
// Sunda has no control-slow table (size 0). The sizes are derived from the
// gaps between the cayman/mariana offsets and chosen for sunda.
func (k *Khal) DVETableSizes() DVETables {
	s := k.dveSizes
	return DVETables{Opcode: s[0], ControlFast: s[1], ControlSlow: s[2], Datapath: s[3]}
}

// DVETableCount returns the buffers dve_dynamic_config_init stages: 4 on
// sunda (opcode, control-fast, datapath, parameter RAM; control-slow does not
// exist there) and 5 on cayman/mariana.
func (k *Khal) DVETableCount() int {
	if k.dveSizes[2] == 0 {
		return 4
	}
	return 5
}

// DVEParameterRAM returns the DVE parameter RAM offset and size
// (aws_hal_get_dve_parameter_ram_params_<arch>): sunda 0x2B84000, cayman and
// mariana 0x2B87000; 0x400 bytes (256 fp32).
func (k *Khal) DVEParameterRAM() (offset, size uint64) { return k.dveParamRAM, DVEParamRAMSize }

// ConfigOffset names the five feature-gated config getters.
type ConfigOffset int

// The five SDMA / FP8 / EMAX config getters. Only EngFP8Cfg's mariana values
// come from the seed; the other names and their mariana offsets are chosen.
const (
	SDMAFP8Cfg  ConfigOffset = iota // get_sdma_fp8_cfg_offset (chosen name; mariana 0x810)
	SDMAEMAXCfg                     // get_sdma_emax_cfg_offset (chosen name; mariana 0x814)
	EngFP8Cfg                       // get_eng_fp8_cfg_offset: mariana CSWTCH.14 {0xF00,0xF08,0xF0C,0xF04}
	DVEEMAXCfg                      // get_dve_emax_cfg_offset (chosen name; mariana 0xF10)
	ACTEMAXCfg                      // get_act_emax_cfg_offset (chosen name; mariana 0xF14)
	numConfigOffsets
)

var configNames = [numConfigOffsets]string{
	"get_sdma_fp8_cfg_offset", "get_sdma_emax_cfg_offset", "get_eng_fp8_cfg_offset",
	"get_dve_emax_cfg_offset", "get_act_emax_cfg_offset",
}

var marianaConfig = [numConfigOffsets]uint64{SDMAFP8Cfg: 0x810, SDMAEMAXCfg: 0x814, DVEEMAXCfg: 0xF10, ACTEMAXCfg: 0xF14}

// String returns the getter's name.
func (c ConfigOffset) String() string {
	if c >= 0 && c < numConfigOffsets {
		return configNames[c]
	}
	return fmt.Sprintf("config(%d)", int(c))
}

// ConfigOffsets lists the five config getters.
func ConfigOffsets() []ConfigOffset {
	return []ConfigOffset{SDMAFP8Cfg, SDMAEMAXCfg, EngFP8Cfg, DVEEMAXCfg, ACTEMAXCfg}
}

// ConfigOffset returns a feature-gated config offset. On sunda and cayman the
// real getters return a literal 0 meaning "feature absent"; here that is
// ok=false, never a usable offset. eng selects the engine for EngFP8Cfg
// (engines 0..3; others give ok=false) and is ignored otherwise.
func (k *Khal) ConfigOffset(c ConfigOffset, eng hwarch.Engine) (uint64, bool) {
	if !k.cfgPresent || c < 0 || c >= numConfigOffsets {
		return 0, false
	}
	if c == EngFP8Cfg {
		if eng > hwarch.EngineDVE {
			return 0, false
		}
		return k.fp8Cfg[eng], true
	}
	return marianaConfig[c], true
}

// HWDecodeParams is the HW-decode table placement of one engine.
type HWDecodeParams struct {
	Base       uint64
	HeaderSize uint64
	BlockSize  uint64
}

// HWDecodeTableParams returns an engine's HW-decode table parameters
// (aws_hal_get_eng_hw_decode_table_params_<arch>): cayman/mariana bases eng0
// 0x802670000, eng1 0x802470000, eng2 0x803070000, eng3 0x802B88000, less
// 0x800000000 when host-visible; header 4096, block 0x2000. Sunda has no
// HW-decode silicon and its leaf aborts: ErrLeafAborts. Engines past 3 are ErrIndex.
func (k *Khal) HWDecodeTableParams(eng hwarch.Engine, hostVisible bool) (HWDecodeParams, error) {
	if !k.hasHWDecode {
		return HWDecodeParams{}, fmt.Errorf("%s get_eng_hw_decode_table_params: %w", k.gen, ErrLeafAborts)
	}
	if err := k.index("get_eng_hw_decode_table_params", int(eng), len(k.hwDecodeBases)); err != nil {
		return HWDecodeParams{}, err
	}
	b := k.hwDecodeBases[eng]
	if hostVisible {
		b -= k.rebase
	}
	return HWDecodeParams{Base: b, HeaderSize: HWDecodeHeaderSize, BlockSize: HWDecodeBlockSize}, nil
}

// TopSPLocalRegs returns the TopSP NX-local register offsets
// (aws_hal_arch_<arch>_get_offset_topsp_*): sunda window 0x60000, stop_signal
// 0x6084c, basic_block_switch 0x6083c; cayman stop_signal 0x615c0,
// basic_block_switch 0x615e0, host_trigger 0x615A0; mariana derived = cayman.
// A zero field is a getter the generation lacks.
func (k *Khal) TopSPLocalRegs() TopSPLocalRegs { return k.topSP }

// UpdateNotificEventsSemaphores computes the read-modify-write of
// aws_hal_arch_<arch>_update_tpb_notific_sw_queue_num2_events_semaphores_nt:
// (reg & 0xfff0ffff) | ((v << 16) & 0xf0000).
func UpdateNotificEventsSemaphores(reg, v uint32) uint32 {
	return reg&^NotificEvtSemMask | (v<<NotificEvtSemShift)&NotificEvtSemMask
}
