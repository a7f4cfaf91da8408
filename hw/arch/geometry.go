package arch

import "fmt"

// Byte-size units.
const (
	KiB uint64 = 1 << 10
	MiB uint64 = 1 << 20
	GiB uint64 = 1 << 30
)

// HBMChannel is one HBM channel as the device addresses it.
type HBMChannel struct {
	Base       uint64 // device address of the channel (V3/V4 channels 2..3 carry the bit-47 mesh half)
	WindowSize uint64 // address window reserved for the channel (V2: 64 GiB gap to ch1; V3/V4: V3_HBM_SIZE 64 GiB)
	ActiveSize uint64 // bytes actually present: 16 GiB (V2), 24 GiB (V3), 36 GiB (V4)
	BAR4Offset uint64 // where the channel starts inside BAR4 (V2 squashed: n·16 GiB; V3/V4: n·64 GiB)
}

// End returns the first device address past the active part of the channel.
func (c HBMChannel) End() uint64 { return c.Base + c.ActiveSize }

// Contains reports whether a device address lies in the active part of the channel.
func (c HBMChannel) Contains(addr uint64) bool { return addr >= c.Base && addr < c.End() }

// BAR0Map holds the BAR0 offsets of the blocks every generation has
// (driver-facts §2, §5, §9.1). Offsets are relative to the APB BAR, which is
// PCI BAR0 except under QEMU on V2 and V3, where it is BAR2 (APBBARUnderQEMU).
type BAR0Map struct {
	TPBBase       uint64 // NC 0's TPB window (SBUF at +0)
	TPBStride     uint64 // distance between NC windows
	PSUMOffset    uint64 // PSUM window inside an NC's TPB stride
	EventsOffset  uint64 // NC events, 256 × 4 B
	SemReadOffset uint64 // semaphore READ bank
	SemSetOffset  uint64 // semaphore SET bank
	SemIncrOffset uint64 // semaphore INCR bank
	SemDecrOffset uint64 // semaphore DECR bank
	SemRegionSize uint64 // whole semaphore region (mmap size)
	TopSPBase     uint64 // TOP_SP 0 window
	TopSPStride   uint64 // distance between TOP_SP windows within one half
	TopSPHalf     int    // TOP_SPs per half (V3/V4: 8; V2: all 6 in one half)
	TopSPHalfBase uint64 // second half's first window (V3/V4 0xF280_0000; unused on V2)
	TopSPSize     uint64 // 4 MiB
	MiscRAM       uint64 // FW-IO mailbox
	QEMUResetReg  uint64 // the register the driver's QEMU reset path writes and polls
	MinimumBAR0   uint64 // smallest BAR0 that holds every offset above (inferred, driver-facts §2.1)
	MinimumBAR4   uint64 // smallest BAR4 that holds every HBM channel (inferred)
	APBBAR        int    // PCI BAR that carries the registers
	// APBBARUnderQEMU is the PCI BAR that carries the registers under the
	// QEMU revision. Each value follows a named driver version: sunda and
	// cayman BAR2, as driver 2.24.7.0 sets it (v2/neuron_dhal_v2.c 1792,
	// v3/neuron_dhal_v3.c 2188), the driver issue 14 runs in its guest;
	// mariana BAR0, from notes on driver 2.25.4.0 (driver-facts §1), since
	// 2.24.7.0 has no V4. Notes on 2.25.4.0 also give BAR0 for cayman; the
	// model follows the driver it is run against.
	APBBARUnderQEMU int
}

// TPBWindow returns the BAR0 offset of NeuronCore nc's TPB window.
func (m BAR0Map) TPBWindow(nc int) uint64 { return m.TPBBase + uint64(nc)*m.TPBStride }

// TopSPWindow returns the BAR0 offset of TOP_SP t's 4 MiB window.
func (m BAR0Map) TopSPWindow(t int) uint64 {
	if m.TopSPHalf > 0 && t >= m.TopSPHalf {
		return m.TopSPHalfBase + uint64(t-m.TopSPHalf)*m.TopSPStride
	}
	return m.TopSPBase + uint64(t)*m.TopSPStride
}

// Geometry is the fixed shape of one generation's device.
type Geometry struct {
	Generation Generation

	NeuronCores      int // physical NeuronCores (TPBs): 2 / 8 / 8
	SequencerEngines int // SENGs: 2 / 4 / 4
	TPBPerSENG       int // 1 / 2 / 2
	TPBPerHBM        int // 1 / 2 / 2
	Dies             int // 1 / 2 / 2 (EMU and QEMU report 1 die)

	HBM []HBMChannel

	SBUFWindowSize    uint64 // 32 MiB per NC (V2_SBUF_SIZE; the 8-window SBUF stride)
	SBUFPartitions    int    // 128
	SBUFPartitionSize uint64 // 0x30000 / 0x38000 / 0x40000 (get_valid_sbuf_partition_size)
	PSUMSize          uint64 // 2 MiB per NC
	PSUMBanks         int    // 8 banks of 2 KiB per partition

	DMAEnginesPerNC    int   // 16
	DMAEngines         int   // engine-id array size: 34 (V2) / 132 (V3/V4)
	HostDMAEngines     []int // V2: 32 (D2H), 33 (H2D); V3/V4: 128..131
	DMAQueuesPerEngine int   // 16

	SemaphoresPerNC int // 256
	EventsPerNC     int // 256
	TopSPs          int // 6 (V2) / 16 (V3/V4)

	// Device addresses of the NC windows (driver-facts §2.2, §2.3; seed 000
	// sbuf_base_addresses): NC n's TPB window starts at TPBDeviceBases[n]
	// (its SBUF at +0); its PSUM window at that plus PSUMDeviceDelta.
	TPBDeviceBases  []uint64
	PSUMDeviceDelta uint64
	// TOP_SP t's 4 MiB window starts at TopSPDeviceBase + (t mod TopSPHalf)
	// × TopSPDeviceStride, plus MeshBit for the second half (V3/V4).
	TopSPDeviceBase   uint64
	TopSPDeviceStride uint64

	HostAddressBit   uint64   // OR-ed into host physical addresses: bit 44 (V2) / bit 46 (V3/V4)
	MeshBit          uint64   // bit 47 on V3/V4 (second die / mesh half); 0 on V2
	NeighbourWindows []uint64 // V3/V4 B0_0..3 device windows onto link neighbours; none on V2

	BAR0 BAR0Map
}

// SBUFSize returns the usable SBUF bytes per NeuronCore: partitions × partition size.
func (g *Geometry) SBUFSize() uint64 { return uint64(g.SBUFPartitions) * g.SBUFPartitionSize }

// PSUMPartitionSize returns the PSUM bytes per partition (16 KiB).
func (g *Geometry) PSUMPartitionSize() uint64 { return g.PSUMSize / uint64(g.SBUFPartitions) }

// HBMBytes returns the active HBM of the whole device.
func (g *Geometry) HBMBytes() uint64 {
	var n uint64
	for _, c := range g.HBM {
		n += c.ActiveSize
	}
	return n
}

// HBMChannelOf returns the channel whose active range holds addr.
func (g *Geometry) HBMChannelOf(addr uint64) (int, bool) {
	for i, c := range g.HBM {
		if c.Contains(addr) {
			return i, true
		}
	}
	return -1, false
}

// TopSPDevice returns the device address of TOP_SP t's window.
func (g *Geometry) TopSPDevice(t int) uint64 {
	if half := g.BAR0.TopSPHalf; half > 0 && t >= half {
		return g.TopSPDeviceBase + uint64(t-half)*g.TopSPDeviceStride | g.MeshBit
	}
	return g.TopSPDeviceBase + uint64(t)*g.TopSPDeviceStride
}

// HostAddress returns the device address of host physical address pa (the
// host bit OR-ed in), and IsHostAddress tells one apart.
func (g *Geometry) HostAddress(pa uint64) uint64 { return pa | g.HostAddressBit }

// IsHostAddress reports whether a device address is in the host window, and
// returns the host physical address behind it.
func (g *Geometry) IsHostAddress(addr uint64) (pa uint64, ok bool) {
	if g.HostAddressBit == 0 || addr&g.HostAddressBit == 0 || addr >= g.HostAddressBit<<1 {
		return 0, false
	}
	return addr &^ g.HostAddressBit, true
}

// TopSPsPerNC returns the TOP_SPs that belong to each NeuronCore (3 on V2, 2 on V3/V4).
func (g *Geometry) TopSPsPerNC() int { return g.TopSPs / g.NeuronCores }

// IsHostDMAEngine reports whether a DMA engine id is one of the host engines.
func (g *Geometry) IsHostDMAEngine(eng int) bool {
	for _, e := range g.HostDMAEngines {
		if e == eng {
			return true
		}
	}
	return false
}

func channels(bases []uint64, window, active, bar4Stride uint64) []HBMChannel {
	out := make([]HBMChannel, len(bases))
	for i, b := range bases {
		out[i] = HBMChannel{Base: b, WindowSize: window, ActiveSize: active, BAR4Offset: uint64(i) * bar4Stride}
	}
	return out
}

// v3BAR0 is the V3 BAR0 map; V4's address_map.h is a copy of it.
var v3BAR0 = BAR0Map{
	TPBBase: 0xD000_0000, TPBStride: 0x400_0000, PSUMOffset: 0x200_0000,
	EventsOffset: 0x270_0000, SemReadOffset: 0x270_1000, SemSetOffset: 0x270_1400,
	SemIncrOffset: 0x270_1800, SemDecrOffset: 0x270_1C00, SemRegionSize: 0x2000,
	TopSPBase: 0xF000_0000, TopSPStride: 0x40_0000, TopSPHalf: 8, TopSPHalfBase: 0xF280_0000,
	TopSPSize: 0x40_0000, MiscRAM: 0x6C8_4000, QEMUResetReg: 0x630_0010,
	MinimumBAR0: 4 * GiB, MinimumBAR4: 256 * GiB, APBBAR: 0, APBBARUnderQEMU: 2, // driver 2.24.7.0, v3/neuron_dhal_v3.c 2188
}

func bigChipGeometry(g Generation, activeHBM uint64) *Geometry {
	return &Geometry{
		Generation: g, NeuronCores: 8, SequencerEngines: 4, TPBPerSENG: 2, TPBPerHBM: 2, Dies: 2,
		HBM: channels([]uint64{0, 0x40_0000_0000, 0x8000_0000_0000, 0x8040_0000_0000},
			64*GiB, activeHBM, 64*GiB),
		SBUFWindowSize: 32 * MiB, SBUFPartitions: 128, PSUMSize: 2 * MiB, PSUMBanks: 8,
		DMAEnginesPerNC: 16, DMAEngines: 132, HostDMAEngines: []int{128, 129, 130, 131}, DMAQueuesPerEngine: 16,
		SemaphoresPerNC: 256, EventsPerNC: 256, TopSPs: 16,
		HostAddressBit: 1 << 46, MeshBit: 1 << 47,
		NeighbourWindows: []uint64{0x10_0000_0000_0000, 0x14_0000_0000_0000, 0x18_0000_0000_0000, 0x1C_0000_0000_0000},
		TPBDeviceBases: []uint64{0x20_0000_0000, 0x30_0000_0000, 0x60_0000_0000, 0x70_0000_0000,
			0x8020_0000_0000, 0x8030_0000_0000, 0x8060_0000_0000, 0x8070_0000_0000},
		PSUMDeviceDelta: 0x8_0200_0000, TopSPDeviceBase: 0x82_8000_0000, TopSPDeviceStride: 0x4000_0000,
		BAR0: v3BAR0,
	}
}

var geometries = func() [NumGenerations]*Geometry {
	var t [NumGenerations]*Geometry
	t[Sunda] = &Geometry{
		Generation: Sunda, NeuronCores: 2, SequencerEngines: 2, TPBPerSENG: 1, TPBPerHBM: 1, Dies: 1,
		HBM:            channels([]uint64{0, 0x10_0000_0000}, 64*GiB, 16*GiB, 16*GiB),
		SBUFWindowSize: 32 * MiB, SBUFPartitions: 128, SBUFPartitionSize: 0x30000, PSUMSize: 2 * MiB, PSUMBanks: 8,
		DMAEnginesPerNC: 16, DMAEngines: 34, HostDMAEngines: []int{32, 33}, DMAQueuesPerEngine: 16,
		SemaphoresPerNC: 256, EventsPerNC: 256, TopSPs: 6,
		HostAddressBit: 1 << 44,
		TPBDeviceBases: []uint64{0xFFF_C000_0000, 0xFFF_C400_0000}, PSUMDeviceDelta: 0x200_0000,
		TopSPDeviceBase: 0xFFF_D000_0000, TopSPDeviceStride: 0x40_0000,
		BAR0: BAR0Map{
			TPBBase: 0, TPBStride: 0x400_0000, PSUMOffset: 0x200_0000,
			EventsOffset: 0x270_0000, SemReadOffset: 0x270_1000, SemSetOffset: 0x270_1400,
			SemIncrOffset: 0x270_1800, SemDecrOffset: 0x270_1C00, SemRegionSize: 0x2000,
			TopSPBase: 0x1000_0000, TopSPStride: 0x40_0000, TopSPSize: 0x40_0000,
			MiscRAM: 0x30FA_0000, QEMUResetReg: 0x3064_7010,
			MinimumBAR0: 1 * GiB, MinimumBAR4: 32 * GiB, APBBAR: 0, APBBARUnderQEMU: 2,
		},
	}
	t[Cayman] = bigChipGeometry(Cayman, 24*GiB)
	t[Cayman].SBUFPartitionSize = 0x38000
	t[Mariana] = bigChipGeometry(Mariana, 36*GiB)
	t[Mariana].SBUFPartitionSize = 0x40000
	// Not in driver 2.24.7.0: BAR0 under QEMU as driver-facts §1 gives it
	// for V3/V4 (notes on 2.25.4.0).
	t[Mariana].BAR0.APBBARUnderQEMU = 0
	return t
}()

// GeometryOf returns the geometry of generation g. The returned value is
// shared and must not be modified; Clone it to experiment.
func GeometryOf(g Generation) (*Geometry, error) {
	if !g.Valid() {
		return nil, fmt.Errorf("geometry: %w %d (want 2, 3 or 4)", ErrUnknownGeneration, uint8(g))
	}
	return geometries[g], nil
}

// MustGeometry is GeometryOf for a generation the caller knows is valid, such
// as one of Generations(). It panics on an invalid generation: never pass it
// user input.
func MustGeometry(g Generation) *Geometry {
	geo, err := GeometryOf(g)
	if err != nil {
		panic(err)
	}
	return geo
}

// Clone returns a deep copy that may be modified.
func (g *Geometry) Clone() *Geometry {
	c := *g
	c.HBM = append([]HBMChannel(nil), g.HBM...)
	c.HostDMAEngines = append([]int(nil), g.HostDMAEngines...)
	c.NeighbourWindows = append([]uint64(nil), g.NeighbourWindows...)
	c.TPBDeviceBases = append([]uint64(nil), g.TPBDeviceBases...)
	return &c
}

// Host-wide limits of the kernel driver (neuron_device.h; seed 003 hierarchy).
const (
	MaxNeuronDevices = 64 // MAX_NEURON_DEVICE_COUNT: /dev/neuron0..63
	MaxNCPerDevice   = 8  // MAX_NC_PER_DEVICE: the V3/V4 worst case; V2 uses 2
	MaxTSPerDevice   = 16 // MAX_TS_PER_DEVICE: TOP_SPs
)
