// Package udma holds the UDMA (rev 4) hardware definitions both the device
// model and the runtime use (driver-facts §4): the 16-byte descriptor, the
// ring rules, the register map of one engine, and where each engine sits in
// BAR0 and in the device's address space. It is pure data.
package udma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// DescriptorSize is the size of one descriptor in ring memory.
const DescriptorSize = 16

// Descriptor word 0 (len_ctrl) fields.
const (
	LenMask       uint32 = 0xFFFF  // [15:0] length; 0 means 64 KiB
	RingIDShift          = 24      // [25:24] ring id (phase)
	RingIDMask    uint32 = 3 << 24 //
	FlagFirst     uint32 = 1 << 26 // M2S: first descriptor of a packet
	FlagLast      uint32 = 1 << 27 // M2S: last descriptor of a packet
	FlagIntEn     uint32 = 1 << 28 // interrupt on completion
	FlagStrongOrd uint32 = 1 << 29 // S2M (V3+): strongly ordered write
	FlagDMB       uint32 = 1 << 30 // M2S: data memory barrier
)

// DefaultMetaCtrl is the meta_ctrl the driver puts in every M2S descriptor:
// last/first block, copy source data, ssmae_op 2. Bit 26 is the write barrier.
const (
	DefaultMetaCtrl   uint32 = 0x0108_0003
	MetaWriteBarrier  uint32 = 1 << 26
	MaxTransfer              = 64 * 1024 // bytes one descriptor moves at most
	MaxDescriptorsPkt        = 65        // descriptors per packet the driver configures
)

// Ring rules (driver-facts §4.3).
const (
	MinRing   = 32         // descriptors
	MaxRing   = 1<<24 - 16 // descriptors
	RingAlign = 256        // bytes: base and end of a ring
	// FirstRingID is the phase of a fresh ring; it advances mod 4 on each wrap.
	FirstRingID = 1
)

// Descriptor is one 16-byte UDMA descriptor. For M2S (TX) Addr is the source
// buf_ptr and Meta the meta_ctrl; for S2M (RX) Addr is the destination
// buf1_ptr and Meta is buf2_ptr_lo (unused, 0).
type Descriptor struct {
	LenCtrl uint32
	Meta    uint32
	Addr    uint64
}

// Len returns the bytes the descriptor moves: 1..65536.
func (d Descriptor) Len() int {
	if n := d.LenCtrl & LenMask; n != 0 {
		return int(n)
	}
	return MaxTransfer
}

// RingID returns the descriptor's ring-id phase (0..3).
func (d Descriptor) RingID() uint8 { return uint8(d.LenCtrl & RingIDMask >> RingIDShift) }

// Has reports whether every bit of flags is set in len_ctrl.
func (d Descriptor) Has(flags uint32) bool { return d.LenCtrl&flags == flags }

// ErrBadLength marks a length outside 1..64 KiB.
var ErrBadLength = errors.New("descriptor length outside 1..65536")

// LenCtrl builds word 0 from a length (1..65536; 65536 encodes as 0), a ring
// id and flags.
func LenCtrl(n int, ringID uint8, flags uint32) (uint32, error) {
	if n < 1 || n > MaxTransfer {
		return 0, fmt.Errorf("udma: %w: %d", ErrBadLength, n)
	}
	return uint32(n)&LenMask | uint32(ringID&3)<<RingIDShift | flags&^(LenMask|RingIDMask), nil
}

// Put writes the descriptor's 16 bytes (little-endian) to b[:16].
func (d Descriptor) Put(b []byte) {
	binary.LittleEndian.PutUint32(b[0:], d.LenCtrl)
	binary.LittleEndian.PutUint32(b[4:], d.Meta)
	binary.LittleEndian.PutUint64(b[8:], d.Addr)
}

// Decode reads a descriptor from b[:16].
func Decode(b []byte) (Descriptor, error) {
	if len(b) < DescriptorSize {
		return Descriptor{}, fmt.Errorf("udma: descriptor needs %d bytes, got %d", DescriptorSize, len(b))
	}
	return DecodeWhole((*[DescriptorSize]byte)(b)), nil
}

// DecodeWhole is Decode of bytes that are a whole descriptor, which cannot
// fail (a DMA engine decoding the descriptors of a burst it fetched).
func DecodeWhole(b *[DescriptorSize]byte) Descriptor {
	return Descriptor{
		LenCtrl: binary.LittleEndian.Uint32(b[0:]),
		Meta:    binary.LittleEndian.Uint32(b[4:]),
		Addr:    binary.LittleEndian.Uint64(b[8:]),
	}
}

// ErrRing marks a ring that breaks the ring rules.
var ErrRing = errors.New("ring breaks the ring rules")

// CheckRing checks a ring's base and size: MinRing ≤ count ≤ MaxRing, base
// and end 256-byte aligned (so count is a multiple of 16).
func CheckRing(base uint64, count uint32) error {
	switch {
	case count < MinRing || count > MaxRing:
		return fmt.Errorf("udma: %w: %d descriptors (want %d..%d)", ErrRing, count, MinRing, MaxRing)
	case base%RingAlign != 0:
		return fmt.Errorf("udma: %w: base %#x not %d-byte aligned", ErrRing, base, RingAlign)
	case (uint64(count)*DescriptorSize)%RingAlign != 0:
		return fmt.Errorf("udma: %w: %d descriptors end at a non-%d-byte boundary (want a multiple of 16)", ErrRing, count, RingAlign)
	}
	return nil
}

// Engine register map, offsets from the engine's UDMA base (driver-facts §4.4).
const (
	M2S = 0x00000 // M2S (TX) half
	S2M = 0x20000 // S2M (RX) half

	QueueBase   = 0x1000 // queue q of a half at half + QueueBase + q·QueueStride
	QueueStride = 0x1000
	Queues      = 16

	QCfg     = 0x20 // b16 EN_PREFETCH, b17 EN_SCHEDULING
	QStatus  = 0x24 // the model's status bits (Status*)
	QBaseLo  = 0x28 // ring base [31:6]; bits 5:0 read as 0
	QBaseHi  = 0x2C
	QLength  = 0x30 // descriptors
	QHead    = 0x34 // [23:0] index, [31:30] ring id
	QTailInc = 0x38 // doorbell: writing N makes N more descriptors available
	QTail    = 0x3C // [23:0] index, [31:30] ring id

	QSwCtrlM2S = 0xB0 // q_sw_ctrl of an M2S queue: b8 resets the queue
	QSwCtrlS2M = 0x64 // q_sw_ctrl of an S2M queue
	QSwReset   = 1 << 8

	EngineState   = 0x200 // [1:0] completion, [5:4] stream, [9:8] data, [13:12] prefetch: 0 idle, 1 normal, 2 abort
	ChangeState   = 0x204 // b0 NORMAL, b1 DISABLE, b2 ABORT
	ErrorQueues   = 0x210 // the model's: bit q set while queue q is halted on an error
	EngineRegSize = 0x40000

	QCfgEnable    uint32 = 1<<16 | 1<<17
	QCfgReset     uint32 = 0x0300_0000
	QCfgDriver    uint32 = 0x0303_0000
	ChangeNormal  uint32 = 1 << 0
	ChangeDisable uint32 = 1 << 1
	ChangeAbort   uint32 = 1 << 2
)

// Engine states as one field of EngineState shows them.
const (
	StateIdle   = 0
	StateNormal = 1
	StateAbort  = 2
)

// EngineStateWord returns the EngineState register for a state: every field
// shows it.
func EngineStateWord(st uint32) uint32 { return st | st<<4 | st<<8 | st<<12 }

// Queue status bits (the model's; docs/dma-model.md). Both halves of a queue
// pair show the same status.
const (
	StatusBusy          uint32 = 1 << 0  // descriptors are available and not yet done
	StatusHalted        uint32 = 1 << 1  // the queue stopped on an error; q_sw_ctrl reset clears it
	ErrDescAddr         uint32 = 1 << 8  // a buffer address lies in no memory the engine reaches
	ErrRingID           uint32 = 1 << 9  // a descriptor's ring id is not the ring's current phase
	ErrLength           uint32 = 1 << 10 // the S2M buffer is shorter than the M2S data
	ErrDoorbellDisabled uint32 = 1 << 11 // tail_inc on a queue or engine that is not enabled
	ErrRingConfig       uint32 = 1 << 12 // the ring's base or length breaks the ring rules
	ErrRingOverrun      uint32 = 1 << 13 // tail_inc made more descriptors available than the ring holds
	ErrNeighbour        uint32 = 1 << 14 // a neighbour-device window with no device behind it
	ErrRingAddr         uint32 = 1 << 15 // the ring memory itself is unreachable
	ErrReduce           uint32 = 1 << 16 // an S2M reduce code the engines do not know, or a length not whole elements
	// ErrMemoryFull is a simulator's bit, not hardware's: a write needed
	// memory past the simulated device's page budget (serve --max-memory).
	ErrMemoryFull uint32 = 1 << 17
	ErrorBits     uint32 = 0x3_FF00
)

// statusNames are the status bits' meanings, for StatusText.
var statusNames = []struct {
	bit  uint32
	what string
}{
	{StatusBusy, "busy"}, {StatusHalted, "halted"},
	{ErrDescAddr, "a buffer address lies in no memory the engine reaches"},
	{ErrRingID, "a descriptor's ring id is not the ring's phase"},
	{ErrLength, "the S2M buffer is shorter than the M2S data"},
	{ErrDoorbellDisabled, "a doorbell on a queue or engine not enabled"},
	{ErrRingConfig, "the ring's base or length breaks the ring rules"},
	{ErrRingOverrun, "more descriptors made available than the ring holds"},
	{ErrNeighbour, "a write to another device found no path (a link down, or no device behind the window)"},
	{ErrRingAddr, "the ring memory is unreachable"},
	{ErrReduce, "an unknown reduce code, or a length not whole elements"},
	{ErrMemoryFull, "the simulated device's memory budget is used up (serve --max-memory)"},
}

// StatusText is a queue status word in words: its error bits' meanings
// joined by "; " (only busy and halted when it has none; "" for 0),
// unknown bits as hex.
func StatusText(st uint32) string {
	var parts []string
	if st&ErrorBits != 0 {
		st &^= StatusBusy | StatusHalted // the error says why it halted
	}
	for _, n := range statusNames {
		if st&n.bit != 0 {
			parts = append(parts, n.what)
			st &^= n.bit
		}
	}
	if st != 0 {
		parts = append(parts, fmt.Sprintf("unknown bits %#x", st))
	}
	return strings.Join(parts, "; ")
}

// QueueReg returns the offset of a queue register: half (M2S or S2M), queue
// q, register reg.
func QueueReg(half uint64, q int, reg uint64) uint64 {
	return half + QueueBase + uint64(q)*QueueStride + reg
}

// Engine BAR0 bases (driver-facts §2.2, §2.3).
var (
	v2SENGUDMA  = [2]uint64{0x3000_0000, 0x3070_0000}
	v2HostUDMA  = [2]uint64{0x3060_0000, 0x30D0_0000} // engine 32 (D2H), 33 (H2D)
	v2EngStride = uint64(0x4_0000)
	bigSEUDMA   = [4]uint64{0x8200_0000, 0x9400_0000, 0xA200_0000, 0xB400_0000}
	bigHostUDMA = [4]uint64{0x680_0000, 0x690_0000, 0x4680_0000, 0x4690_0000} // engines 128..131
	bigStride   = uint64(0x10_0000)
)

// ErrEngine marks an engine id the generation does not have.
var ErrEngine = errors.New("no such DMA engine")

// EngineBAR0 returns the BAR0 offset of engine eng's UDMA registers.
func EngineBAR0(geo *hwarch.Geometry, eng int) (uint64, error) {
	if eng < 0 || eng >= geo.DMAEngines {
		return 0, fmt.Errorf("udma: %w: %s engine %d (0..%d)", ErrEngine, geo.Generation, eng, geo.DMAEngines-1)
	}
	if geo.Generation == hwarch.Sunda {
		switch {
		case eng < 32:
			return v2SENGUDMA[eng/16] + uint64(eng%16)*v2EngStride, nil
		default:
			return v2HostUDMA[eng-32], nil
		}
	}
	if eng < 128 {
		return bigSEUDMA[eng/32] + uint64(eng%32)*bigStride, nil
	}
	return bigHostUDMA[eng-128], nil
}

// H2TEngine returns the host-to-device engine and default queue NC nc uses
// for the driver's copies: V2 NC n → engine 32+n queue 0; V3/V4 NC n →
// engine 128 + n/2 queue n%2 (driver-facts §4.1).
func H2TEngine(geo *hwarch.Geometry, nc int) (eng, queue int, err error) {
	if nc < 0 || nc >= geo.NeuronCores {
		return 0, 0, fmt.Errorf("udma: NC %d: the %s has NCs 0..%d", nc, geo.Generation, geo.NeuronCores-1)
	}
	if geo.Generation == hwarch.Sunda {
		return 32 + nc, 0, nil
	}
	return 128 + nc/2, nc % 2, nil
}

// OwnerNC returns the NC an engine belongs to (engines 16n..16n+15 are NC n's),
// or -1 for a host engine.
func OwnerNC(geo *hwarch.Geometry, eng int) int {
	if eng < 0 || eng >= geo.NeuronCores*geo.DMAEnginesPerNC {
		return -1
	}
	return eng / geo.DMAEnginesPerNC
}

// Marker is the word the driver's completion method copies last: the runtime
// polls a host word until it holds it.
const Marker uint32 = 0xABCD_EF01
