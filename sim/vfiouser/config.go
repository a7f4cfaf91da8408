package vfiouser

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
)

// ConfigSpace is a PCI function's configuration space. The server uses the
// device's own when the device implements it; otherwise it keeps a
// type-0 header of its own (see [NewConfigHeader]). Its size is that of a
// [ConfigSizer]'s, and otherwise PCIeConfigSize (a PCI Express function's);
// DEVICE_RESET calls ResetConfig when it has one ([ConfigResetter]).
type ConfigSpace interface {
	// ReadConfig reads len(p) bytes at off (inside the space).
	ReadConfig(off uint64, p []byte) error
	// WriteConfig writes p at off (inside the space).
	WriteConfig(off uint64, p []byte) error
}

// ConfigSizer is a ConfigSpace that states its size in bytes.
type ConfigSizer interface {
	ConfigSize() uint64
}

// ConfigResetter is a ConfigSpace that returns to its power-on values.
type ConfigResetter interface {
	ResetConfig()
}

// PCIeConfigSize is the size of a PCI Express function's configuration
// space, the size of a ConfigSpace that does not state one.
const PCIeConfigSize = 4096

// configSize returns the size of c.
func configSize(c ConfigSpace) uint64 {
	if s, ok := c.(ConfigSizer); ok {
		return s.ConfigSize()
	}
	return PCIeConfigSize
}

// HeaderIdentity is what a type-0 header reports about its function.
type HeaderIdentity struct {
	Vendor, Device uint16
	Revision       uint8
	Class          uint32 // 24-bit class code: base, sub-class, programming interface
	BARs           [6]uint64
}

// ConfigHeader is a 256-byte PCI type-0 configuration header: read-only
// identity, a command register whose defined bits are writable, the
// interrupt line, and memory BARs that the guest sizes by writing all
// ones. A BAR whose next BAR has size 0 is 64-bit (the pair), others are
// 32-bit; every BAR is prefetchable memory. It has no capability list.
type ConfigHeader struct {
	mu   sync.Mutex
	id   HeaderIdentity
	sp   [256]byte
	bars [6]uint64 // assigned base of each BAR (64-bit ones in the low index)
	wide [6]bool   // BAR i is the low half of a 64-bit pair
}

const (
	cfgCommand    = 0x04
	cfgBAR0       = 0x10
	cfgIntLine    = 0x3c
	commandMask   = 0x0547 // IO, MEM, master, parity, SERR, INTx disable
	barMem64      = 0x4
	barPrefetch   = 0x8
	headerCfgSize = 256
)

// NewConfigHeader builds a header for id; every BAR size must be 0 or a power of
// two of at least 16 bytes, and a 32-bit BAR below 4 GiB.
func NewConfigHeader(id HeaderIdentity) (*ConfigHeader, error) {
	h := &ConfigHeader{id: id}
	for b := 0; b < 6; b++ {
		s := id.BARs[b]
		if s == 0 {
			continue
		}
		if bits.OnesCount64(s) != 1 || s < 16 {
			return nil, fmt.Errorf("vfio-user config: BAR%d size %#x is not a power of two of at least 16 bytes: %w", b, s, ErrMessage)
		}
		if b < 5 && id.BARs[b+1] == 0 {
			h.wide[b] = true
			b++
			continue
		}
		if s > 1<<31 {
			return nil, fmt.Errorf("vfio-user config: 32-bit BAR%d of %#x bytes (BAR%d is also present, so it cannot be 64-bit): %w", b, s, b+1, ErrLimit)
		}
	}
	le := binary.LittleEndian
	le.PutUint16(h.sp[0:], id.Vendor)
	le.PutUint16(h.sp[2:], id.Device)
	h.sp[8] = id.Revision
	h.sp[9], h.sp[10], h.sp[11] = byte(id.Class), byte(id.Class>>8), byte(id.Class>>16)
	h.sp[0x3d] = 1 // INTA
	h.reset()
	return h, nil
}

// ConfigSize returns 256.
func (h *ConfigHeader) ConfigSize() uint64 { return headerCfgSize }

// ResetConfig returns the writable registers to their power-on values.
func (h *ConfigHeader) ResetConfig() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reset()
}

func (h *ConfigHeader) reset() {
	binary.LittleEndian.PutUint16(h.sp[cfgCommand:], 0)
	h.sp[cfgIntLine] = 0
	h.bars = [6]uint64{}
}

// dword returns the current value of the dword at byte offset off (a
// multiple of 4).
func (h *ConfigHeader) dword(off uint64) uint32 {
	if off >= cfgBAR0 && off < cfgBAR0+24 {
		b := int(off-cfgBAR0) / 4
		if b > 0 && h.wide[b-1] {
			s := h.id.BARs[b-1]
			return uint32((h.bars[b-1] &^ (s - 1)) >> 32)
		}
		s := h.id.BARs[b]
		if s == 0 {
			return 0
		}
		v := uint32(h.bars[b]&^(s-1)) | barPrefetch
		if h.wide[b] {
			v |= barMem64
		}
		return v
	}
	return binary.LittleEndian.Uint32(h.sp[off:])
}

// setDword applies a write of v to the dword at off, whose bytes in mask
// (a byte-enable mask, bit i for byte i) were written.
func (h *ConfigHeader) setDword(off uint64, v uint32, mask uint32) {
	old := h.dword(off)
	v = old&^mask | v&mask
	switch {
	case off >= cfgBAR0 && off < cfgBAR0+24:
		b := int(off-cfgBAR0) / 4
		if b > 0 && h.wide[b-1] {
			h.bars[b-1] = h.bars[b-1]&0xffffffff | uint64(v)<<32
			return
		}
		if h.id.BARs[b] != 0 {
			h.bars[b] = h.bars[b]&^0xffffffff | uint64(v&^0xf)
		}
	case off == cfgCommand:
		cmd := uint32(binary.LittleEndian.Uint16(h.sp[off:]))
		cmd = cmd&^commandMask | v&commandMask
		binary.LittleEndian.PutUint16(h.sp[off:], uint16(cmd)) // status (the upper half) stays
	case off == cfgIntLine:
		h.sp[cfgIntLine] = byte(v)
	}
}

// ReadConfig reads len(p) bytes at off.
func (h *ConfigHeader) ReadConfig(off uint64, p []byte) error {
	if err := cfgRange(off, len(p), headerCfgSize); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range p {
		a := off + uint64(i)
		p[i] = byte(h.dword(a&^3) >> (8 * (a & 3)))
	}
	return nil
}

// WriteConfig writes p at off; read-only bytes keep their values.
func (h *ConfigHeader) WriteConfig(off uint64, p []byte) error {
	if err := cfgRange(off, len(p), headerCfgSize); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := 0; i < len(p); {
		a := off + uint64(i)
		base := a &^ 3
		var v, mask uint32
		for ; i < len(p) && (off+uint64(i))&^3 == base; i++ {
			sh := 8 * ((off + uint64(i)) & 3)
			v |= uint32(p[i]) << sh
			mask |= 0xff << sh
		}
		h.setDword(base, v, mask)
	}
	return nil
}

func cfgRange(off uint64, n int, size uint64) error {
	if uint64(n) > size || off > size-uint64(n) {
		return fmt.Errorf("config access of %d bytes at %#x past the %d-byte space: %w", n, off, size, ErrMessage)
	}
	return nil
}
