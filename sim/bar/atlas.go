// Package bar decodes the BARs of a simulated Neuron device: the BAR0 CSR
// atlas of each generation (which block a register offset falls in), the
// BAR4 window onto HBM, the BAR sizes a device reports, and the modelled
// latency of an MMIO access. It is pure decode: the device model in package
// sim owns the state behind every window.
package bar

import (
	"fmt"
	"sort"
	"sync"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// Kind is what sits behind a window of the atlas.
type Kind uint8

// The window kinds.
const (
	Unmapped   Kind = iota // no block: reads return UnmappedRead, writes are dropped
	SBUF                   // an NC's SBUF window (32 MiB at its TPB base)
	PSUM                   // an NC's PSUM window (32 MiB at TPB + 0x200_0000: PSUM and TPB-local registers)
	NCSync                 // an NC's semaphores and events (0x2000 at TPB + 0x270_0000)
	TopSP                  // a TOP_SP's 4 MiB window
	TopSPSync              // a TOP_SP's semaphores and events (0x2000 at the start of its window)
	Misc                   // the MISC RAM firmware mailbox
	QEMUReset              // the register the QEMU reset path writes and polls
	APB                    // APB IO, APB SE and PREPROC register space
	DMAEngine              // one UDMA engine's registers (Index = engine id)
	EngineCtrl             // an NC engine's control block (Index = NC·isa.TopSP + engine)
)

var kindNames = [...]string{"unmapped", "sbuf", "psum", "nc-sync", "top-sp", "top-sp-sync", "misc-ram", "qemu-reset", "apb", "dma-engine", "engine-ctrl"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// UnmappedRead is what a read of an unmapped BAR offset returns: the all-ones
// word a PCIe root complex completes a failed non-posted read with (the APB
// fabric answers an undecoded address with a decode error, which the PCIe
// endpoint turns into an unsuccessful completion). Writes there are posted
// and dropped. Both are counted by the device.
const UnmappedRead uint32 = 0xFFFF_FFFF

// MiscRAMSize is the span of the MISC RAM mailbox the model decodes: every
// offset the driver uses (up to the FW status word at +0x808) fits.
const MiscRAMSize = 0x1000

// Big-chip (V3/V4) APB blocks that are not in hw/arch's BAR0Map: the APB IO
// dies, the APB SE blocks and the PREPROC blocks (seed 003 mariana atlas;
// driver-facts §2.3), and the V2 APB blocks (driver-facts §2.2).
const (
	bigAPBIOSize        = 0x2000_0000
	bigAPBIO1           = 0x4000_0000
	bigAPBSEBase        = 0x8000_0000
	bigAPBSEStride      = 0x1000_0000
	bigAPBSESize        = 0xC80_0000
	bigPreprocBase      = 0xC000_0000
	bigPreprocStep      = 0x400_0000
	bigPreprocSize      = 0x34C_0000
	v2APBSEBase         = 0x3000_0000
	v2APBSEStride       = 0x70_0000
	v2APBIOBase         = 0x30E0_0000
	v2APBIOSize         = 0x20_0000
	v2APBDevice         = 0xFFF_F000_0000 // device address of BAR0 0x3000_0000
	bigAPBIODevice      = 0x80_0000_0000
	bigPreprocHBMOffset = 0x12_0000_0000
	priorityPlain       = 0
	prioritySpecial     = 1
)

// bigAPBSEDevice are the apb_se_0..3 device bases (mariana_apb_se_bases).
var bigAPBSEDevice = [4]uint64{0x10_0000_0000, 0x50_0000_0000, 0x8010_0000_0000, 0x8050_0000_0000}

// Window is one block of the atlas: Size bytes at BAR offset Start. Index is
// the NC or TOP_SP number for the per-core kinds, the block number otherwise.
type Window struct {
	Name       string
	Kind       Kind
	Index      int
	Start      uint64
	Size       uint64
	DeviceAddr uint64 // where the window sits in the device's address space (what DMA reaches)
}

// End returns the first offset past the window.
func (w Window) End() uint64 { return w.Start + w.Size }

// segment is an elementary piece of the decode: [start, end) belongs to
// windows[w].
type segment struct {
	start, end uint64
	w          int
}

// Atlas is the BAR0 decode of one generation. Small blocks that sit inside
// bigger ones (a semaphore block in a PSUM window, the MISC RAM in an APB IO
// block) take precedence over the block around them. An Atlas is immutable
// and safe for concurrent use.
type Atlas struct {
	gen      hwarch.Generation
	windows  []Window
	priority []int
	segs     []segment // by BAR0 offset
	devSegs  []segment // by device address
}

// sharedAtlases holds the atlas of each generation's shared geometry (the
// one hwarch.GeometryOf returns), built the first time it is asked for.
var sharedAtlases [hwarch.NumGenerations]struct {
	once  sync.Once
	atlas *Atlas
	err   error
}

// NewAtlas returns the BAR0 atlas of a generation built from its geometry:
// per NC the SBUF and PSUM windows and the synchronisation block; every
// TOP_SP with its synchronisation block; the APB blocks; the MISC RAM and
// the QEMU reset register. The atlas depends on the geometry alone (not on
// the mode), and it is immutable: for a generation's shared geometry
// (hwarch.GeometryOf's, which must not be modified) it is built once and
// every call returns that one, so the devices of a system share it; any
// other geometry (a Clone, say) gets an atlas of its own.
func NewAtlas(geo *hwarch.Geometry) (*Atlas, error) {
	if geo == nil || !geo.Generation.Valid() {
		return nil, fmt.Errorf("bar atlas: %w", hwarch.ErrUnknownGeneration)
	}
	if shared, err := hwarch.GeometryOf(geo.Generation); err == nil && shared == geo {
		s := &sharedAtlases[geo.Generation]
		s.once.Do(func() { s.atlas, s.err = buildAtlas(geo) })
		return s.atlas, s.err
	}
	return buildAtlas(geo)
}

// buildAtlas builds the atlas of geo for NewAtlas.
func buildAtlas(geo *hwarch.Geometry) (*Atlas, error) {
	m := geo.BAR0
	a := &Atlas{gen: geo.Generation}
	for nc := 0; nc < geo.NeuronCores; nc++ {
		base, dev := m.TPBWindow(nc), geo.TPBDeviceBases[nc]
		psum := dev + geo.PSUMDeviceDelta
		a.add(Window{fmt.Sprintf("tpb%d", nc), SBUF, nc, base, geo.SBUFWindowSize, dev}, priorityPlain)
		a.add(Window{fmt.Sprintf("tpb%d_psum", nc), PSUM, nc, base + m.PSUMOffset, geo.SBUFWindowSize, psum}, priorityPlain)
		a.add(Window{fmt.Sprintf("tpb%d_sync", nc), NCSync, nc, base + m.EventsOffset, tpb.SyncSize, psum + m.EventsOffset - m.PSUMOffset}, prioritySpecial)
		for e := isa.Engine(0); e < isa.TopSP; e++ {
			off, _ := isa.EngineCtrlOffset(e)
			a.add(Window{fmt.Sprintf("tpb%d_%s_ctrl", nc, e), EngineCtrl, nc*int(isa.TopSP) + int(e), base + off, isa.EngineRegBlockSize,
				psum + off - m.PSUMOffset}, prioritySpecial)
		}
	}
	for t := 0; t < geo.TopSPs; t++ {
		base, dev := m.TopSPWindow(t), geo.TopSPDevice(t)
		a.add(Window{fmt.Sprintf("top_sp%d", t), TopSP, t, base, m.TopSPSize, dev}, priorityPlain)
		a.add(Window{fmt.Sprintf("top_sp%d_sync", t), TopSPSync, t, base, tpb.SyncSize, dev}, prioritySpecial)
	}
	// apbDevice is where an APB BAR0 offset sits in the device's address space.
	apbDevice := func(off uint64) uint64 { return off - v2APBSEBase + v2APBDevice }
	if geo.Generation == hwarch.Sunda {
		for s := 0; s < geo.SequencerEngines; s++ {
			off := v2APBSEBase + uint64(s)*v2APBSEStride
			a.add(Window{fmt.Sprintf("apb_se_%d", s), APB, s, off, v2APBSEStride, apbDevice(off)}, priorityPlain)
		}
		a.add(Window{"apb_io", APB, 0, v2APBIOBase, v2APBIOSize, apbDevice(v2APBIOBase)}, priorityPlain)
	} else {
		apbDevice = func(off uint64) uint64 {
			if off >= bigAPBIO1 {
				return off - bigAPBIO1 + bigAPBIODevice | geo.MeshBit
			}
			return off + bigAPBIODevice
		}
		a.add(Window{"apb_io_0", APB, 0, 0, bigAPBIOSize, bigAPBIODevice}, priorityPlain)
		a.add(Window{"apb_io_1", APB, 1, bigAPBIO1, bigAPBIOSize, bigAPBIODevice | geo.MeshBit}, priorityPlain)
		for s := 0; s < geo.SequencerEngines; s++ {
			a.add(Window{fmt.Sprintf("apb_se_%d", s), APB, s, bigAPBSEBase + uint64(s)*bigAPBSEStride, bigAPBSESize, bigAPBSEDevice[s]}, priorityPlain)
		}
		for ch := range geo.HBM {
			a.add(Window{fmt.Sprintf("preproc%d", ch), APB, ch, bigPreprocBase + uint64(ch)*bigPreprocStep, bigPreprocSize,
				geo.HBM[ch].Base + bigPreprocHBMOffset}, priorityPlain)
		}
	}
	for e := 0; e < geo.DMAEngines; e++ {
		off, err := udma.EngineBAR0(geo, e)
		if err != nil {
			return nil, fmt.Errorf("bar atlas %s: %w", geo.Generation, err)
		}
		a.add(Window{fmt.Sprintf("dma%d", e), DMAEngine, e, off, udma.EngineRegSize, apbDevice(off)}, prioritySpecial)
	}
	a.add(Window{"misc_ram", Misc, 0, m.MiscRAM, MiscRAMSize, apbDevice(m.MiscRAM)}, prioritySpecial)
	a.add(Window{"qemu_reset", QEMUReset, 0, m.QEMUResetReg, 4, apbDevice(m.QEMUResetReg)}, prioritySpecial)
	var err error
	if a.segs, err = a.build(func(w *Window) uint64 { return w.Start }); err != nil {
		return nil, fmt.Errorf("bar atlas %s: %w", geo.Generation, err)
	}
	if a.devSegs, err = a.build(func(w *Window) uint64 { return w.DeviceAddr }); err != nil {
		return nil, fmt.Errorf("bar atlas %s, device addresses: %w", geo.Generation, err)
	}
	return a, nil
}

func (a *Atlas) add(w Window, priority int) {
	a.windows = append(a.windows, w)
	a.priority = append(a.priority, priority)
}

// build cuts the windows, placed by start, into non-overlapping segments,
// giving each piece to the highest-priority window that covers it. Two
// windows of the same priority may not overlap.
func (a *Atlas) build(start func(*Window) uint64) ([]segment, error) {
	var segs []segment
	var cuts []uint64
	for i := range a.windows {
		cuts = append(cuts, start(&a.windows[i]), start(&a.windows[i])+a.windows[i].Size)
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		if lo == hi {
			continue
		}
		owner, prio := -1, -1
		for j := range a.windows {
			w := &a.windows[j]
			if start(w) <= lo && hi <= start(w)+w.Size {
				switch {
				case a.priority[j] > prio:
					owner, prio = j, a.priority[j]
				case a.priority[j] == prio:
					return nil, fmt.Errorf("windows %s and %s overlap", a.windows[owner].Name, w.Name)
				}
			}
		}
		if owner < 0 {
			continue
		}
		if n := len(segs); n > 0 && segs[n-1].w == owner && segs[n-1].end == lo {
			segs[n-1].end = hi
			continue
		}
		segs = append(segs, segment{lo, hi, owner})
	}
	return segs, nil
}

// Generation returns the generation the atlas decodes.
func (a *Atlas) Generation() hwarch.Generation { return a.gen }

// Lookup returns the window that decodes BAR offset off and the offset
// relative to the window's start. ok is false for an unmapped offset.
func (a *Atlas) Lookup(off uint64) (w *Window, rel uint64, ok bool) {
	i, ok := find(a.segs, off)
	if !ok {
		return nil, 0, false
	}
	w = &a.windows[i]
	return w, off - w.Start, true
}

// LookupDevice returns the window at device address addr (what a DMA engine
// reaches there) and the offset relative to the window's device address.
func (a *Atlas) LookupDevice(addr uint64) (w *Window, rel uint64, ok bool) {
	i, ok := find(a.devSegs, addr)
	if !ok {
		return nil, 0, false
	}
	w = &a.windows[i]
	return w, addr - w.DeviceAddr, true
}

// find returns the window index of the segment holding x.
func find(segs []segment, x uint64) (int, bool) {
	lo, hi := 0, len(segs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if segs[mid].end <= x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(segs) || x < segs[lo].start {
		return 0, false
	}
	return segs[lo].w, true
}

// Windows returns every window of the atlas, in the order they were built.
func (a *Atlas) Windows() []Window { return append([]Window(nil), a.windows...) }

// Window returns the first window of a kind and index.
func (a *Atlas) Window(k Kind, index int) (Window, bool) {
	for _, w := range a.windows {
		if w.Kind == k && w.Index == index {
			return w, true
		}
	}
	return Window{}, false
}

// End returns the first offset past every window: the smallest BAR that
// holds the atlas.
func (a *Atlas) End() uint64 {
	var end uint64
	for _, w := range a.windows {
		end = max(end, w.End())
	}
	return end
}
