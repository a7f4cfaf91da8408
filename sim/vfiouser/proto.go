package vfiouser

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Protocol version this server speaks (the specification's "Version 0.1").
const (
	VersionMajor = 0
	VersionMinor = 1
)

// Commands of the protocol (the specification's command table).
const (
	CmdVersion          = 1
	CmdDMAMap           = 2
	CmdDMAUnmap         = 3
	CmdDeviceGetInfo    = 4
	CmdGetRegionInfo    = 5
	CmdGetRegionIOFDs   = 6
	CmdGetIRQInfo       = 7
	CmdSetIRQs          = 8
	CmdRegionRead       = 9
	CmdRegionWrite      = 10
	CmdDMARead          = 11
	CmdDMAWrite         = 12
	CmdDeviceReset      = 13
	CmdRegionWriteMulti = 15
	CmdDeviceFeature    = 16
	CmdMigDataRead      = 17
	CmdMigDataWrite     = 18
)

// Header flags.
const (
	FlagTypeMask = 0xf  // bits 0-3: the message type
	FlagCommand  = 0x0  // type: a command
	FlagReply    = 0x1  // type: a reply
	FlagNoReply  = 0x10 // a command that wants no reply
	FlagError    = 0x20 // a reply that carries an error number
)

// HeaderSize is the size of the header that starts every message.
const HeaderSize = 16

// Region indices of a PCI function (VFIO_PCI_*_REGION_INDEX).
const (
	RegionBAR0   = 0
	RegionBAR5   = 5
	RegionROM    = 6
	RegionConfig = 7
	RegionVGA    = 8
	NumRegions   = 9
)

// IRQ indices of a PCI function (VFIO_PCI_*_IRQ_INDEX).
const (
	IRQIntx   = 0
	IRQMSI    = 1
	IRQMSIX   = 2
	IRQErr    = 3
	IRQReq    = 4
	NumIRQIdx = 5
)

// Device, region and IRQ flags (as in <linux/vfio.h>).
const (
	DeviceFlagReset = 1 << 0
	DeviceFlagPCI   = 1 << 1

	RegionFlagRead  = 1 << 0
	RegionFlagWrite = 1 << 1

	IRQInfoEventfd    = 1 << 0
	IRQInfoMaskable   = 1 << 1
	IRQInfoAutomasked = 1 << 2
	IRQInfoNoResize   = 1 << 3

	IRQSetDataNone     = 1 << 0
	IRQSetDataBool     = 1 << 1
	IRQSetDataEventfd  = 1 << 2
	IRQSetActionMask   = 1 << 3
	IRQSetActionUnmask = 1 << 4
	IRQSetActionTrig   = 1 << 5

	DMAFlagRead  = 1 << 0
	DMAFlagWrite = 1 << 1

	DMAUnmapGetDirty = 1 << 0
	DMAUnmapAll      = 1 << 1
)

// Fixed payload sizes of the messages.
const (
	sizeDMAMap      = 32
	sizeDMAUnmap    = 24
	sizeDeviceInfo  = 16
	sizeRegionInfo  = 32
	sizeIRQInfo     = 16
	sizeSetIRQs     = 20
	sizeRegionRW    = 16
	sizeDMARW       = 16
	sizeMultiEntry  = 24
	maxMultiPayload = 8 // a REGION_WRITE_MULTI entry carries at most 8 bytes
)

// Errors of the server; each is returned wrapped with context.
var (
	// ErrMessage: a message that breaks the protocol (bad size, bad field).
	ErrMessage = errors.New("vfio-user: malformed message")
	// ErrLimit: a message or request past a negotiated or configured limit.
	ErrLimit = errors.New("vfio-user: limit exceeded")
	// ErrUnmapped: a DMA access outside every mapped region.
	ErrUnmapped = errors.New("vfio-user: DMA address not mapped")
	// ErrProtection: a DMA write to a read-only mapping (or read of a write-only one).
	ErrProtection = errors.New("vfio-user: DMA access not permitted by the mapping")
	// ErrDisconnected: the client went away while the server waited on it.
	ErrDisconnected = errors.New("vfio-user: client disconnected")
	// ErrVersion: the client's VERSION cannot be accepted, or did not come
	// in time (Options.HandshakeTimeout).
	ErrVersion = errors.New("vfio-user: version negotiation failed")
	// ErrBusy: a client refused because another client's session is live
	// (its VERSION answered with EBUSY).
	ErrBusy = errors.New("vfio-user: the device is busy with another client")
	// ErrBackoff: a client refused because the last session ended with
	// its client letting a message of the server's wait past
	// Options.ReplyTimeout, or keeping the server waiting past
	// Options.WaitBudget ([ErrWaitBudget]), less than
	// Options.StallBackoff ago (its VERSION answered with EAGAIN).
	ErrBackoff = errors.New("vfio-user: the device refuses clients for a while after a client stalled it")
)

// Header is the 16-byte header of every message.
type Header struct {
	ID      uint16
	Command uint16
	Size    uint32 // of the whole message, header included
	Flags   uint32
	Error   uint32 // errno of an error reply
}

// Type returns the message type bits (FlagCommand or FlagReply).
func (h Header) Type() uint32 { return h.Flags & FlagTypeMask }

// Marshal writes h into b[:HeaderSize].
func (h Header) Marshal(b []byte) {
	le := binary.LittleEndian
	le.PutUint16(b[0:], h.ID)
	le.PutUint16(b[2:], h.Command)
	le.PutUint32(b[4:], h.Size)
	le.PutUint32(b[8:], h.Flags)
	le.PutUint32(b[12:], h.Error)
}

// Frame encodes one message, h with its Size set from payload followed by
// the payload, into *buf (grown when too small, so that its storage is
// reused from message to message) and returns it.
func Frame(buf *[]byte, h Header, payload []byte) []byte {
	h.Size = uint32(HeaderSize + len(payload))
	if cap(*buf) < int(h.Size) {
		*buf = make([]byte, h.Size)
	}
	b := (*buf)[:h.Size]
	h.Marshal(b)
	copy(b[HeaderSize:], payload)
	return b
}

// ParseHeader decodes the header at the start of b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("header of %d bytes, want %d: %w", len(b), HeaderSize, ErrMessage)
	}
	le := binary.LittleEndian
	h := Header{ID: le.Uint16(b[0:]), Command: le.Uint16(b[2:]), Size: le.Uint32(b[4:]), Flags: le.Uint32(b[8:]), Error: le.Uint32(b[12:])}
	if h.Size < HeaderSize {
		return h, fmt.Errorf("message size %d is less than the header's %d: %w", h.Size, HeaderSize, ErrMessage)
	}
	return h, nil
}

// CommandName names a command for messages and errors.
func CommandName(c uint16) string {
	names := map[uint16]string{
		CmdVersion: "VERSION", CmdDMAMap: "DMA_MAP", CmdDMAUnmap: "DMA_UNMAP",
		CmdDeviceGetInfo: "DEVICE_GET_INFO", CmdGetRegionInfo: "DEVICE_GET_REGION_INFO",
		CmdGetRegionIOFDs: "DEVICE_GET_REGION_IO_FDS", CmdGetIRQInfo: "DEVICE_GET_IRQ_INFO",
		CmdSetIRQs: "DEVICE_SET_IRQS", CmdRegionRead: "REGION_READ", CmdRegionWrite: "REGION_WRITE",
		CmdDMARead: "DMA_READ", CmdDMAWrite: "DMA_WRITE", CmdDeviceReset: "DEVICE_RESET",
		CmdRegionWriteMulti: "REGION_WRITE_MULTI", CmdDeviceFeature: "DEVICE_FEATURE",
		CmdMigDataRead: "MIG_DATA_READ", CmdMigDataWrite: "MIG_DATA_WRITE",
	}
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("command %d", c)
}
