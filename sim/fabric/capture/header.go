package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// HeaderSize is the size in bytes of the neuronsim header.
const HeaderSize = 40

// Magic is the first two bytes of every neuronsim header: "NS".
const Magic uint16 = 0x4E53

// Version is the header version this package writes and accepts.
const Version uint8 = 1

// Flag bits of [Header].Flags.
const (
	// FlagFirst marks the first chunk of a transfer.
	FlagFirst uint8 = 1 << 0
	// FlagLast marks the last chunk of a transfer.
	FlagLast uint8 = 1 << 1
	// FlagTruncated says the capture carries fewer payload bytes than the
	// chunk's length. The [Writer] sets or clears it itself.
	FlagTruncated uint8 = 1 << 2
	// FlagTimingOnly says the packet carries no payload at all: the
	// simulation ran without data, only timing.
	FlagTimingOnly uint8 = 1 << 3
)

// ErrBadHeader is wrapped by every error about a malformed neuronsim header.
var ErrBadHeader = errors.New("capture: bad neuronsim header")

// Op is the operation a packet carries.
type Op uint8

// The operations. The fabric emits OpWrite, OpReduceWrite and OpSemaphore;
// the read operations are reserved for remote reads.
const (
	// OpWrite writes the payload to the destination address.
	OpWrite Op = 1
	// OpReduceWrite combines the payload into the destination.
	OpReduceWrite Op = 2
	// OpSemaphore is a 4-byte write into a semaphore/event register.
	OpSemaphore Op = 3
	// OpReadReq requests a read of length bytes at the address.
	OpReadReq Op = 4
	// OpReadResp carries the data of a read.
	OpReadResp Op = 5
)

// Valid reports whether o is one of the defined operations.
func (o Op) Valid() bool { return o >= OpWrite && o <= OpReadResp }

// String returns the operation's name as the dissector shows it
// ("write", "reduce-write", "semaphore", "read-req", "read-resp"), or
// "op(N)" for an undefined value.
func (o Op) String() string {
	switch o {
	case OpWrite:
		return "write"
	case OpReduceWrite:
		return "reduce-write"
	case OpSemaphore:
		return "semaphore"
	case OpReadReq:
		return "read-req"
	case OpReadResp:
		return "read-resp"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Header is the neuronsim header of one packet. The package doc gives the
// meaning and wire layout of each field; magic and version are implied.
type Header struct {
	Op               Op
	Src, Dst         uint16 // device indices
	SrcPort, DstPort uint8  // output port on the hop's sender, input port on its receiver
	Hop, Hops        uint8  // this link's index on the path (from 0), links on the path
	Engine           uint16 // DMA engine of the source device
	Queue            uint8
	Flags            uint8  // Flag* bits
	Seq              uint32 // per (src, dst) path, counting chunks
	Length           uint32 // bytes of the chunk the packet stands for
	Addr             uint64 // destination device address of the chunk's first byte
	Transfer         uint64 // DMA transfer id
}

// MarshalTo writes the header's HeaderSize bytes to the start of b. It fails
// (with [ErrBadHeader]) if b is shorter than HeaderSize or the op is not a
// defined one, so that every header it writes parses back.
func (h *Header) MarshalTo(b []byte) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("%w: marshal: buffer of %d bytes is short, need %d", ErrBadHeader, len(b), HeaderSize)
	}
	if !h.Op.Valid() {
		return fmt.Errorf("%w: marshal: unknown op %d", ErrBadHeader, uint8(h.Op))
	}
	be := binary.BigEndian
	be.PutUint16(b[0:], Magic)
	b[2] = Version
	b[3] = uint8(h.Op)
	be.PutUint16(b[4:], h.Src)
	be.PutUint16(b[6:], h.Dst)
	b[8] = h.SrcPort
	b[9] = h.DstPort
	b[10] = h.Hop
	b[11] = h.Hops
	be.PutUint16(b[12:], h.Engine)
	b[14] = h.Queue
	b[15] = h.Flags
	be.PutUint32(b[16:], h.Seq)
	be.PutUint32(b[20:], h.Length)
	be.PutUint64(b[24:], h.Addr)
	be.PutUint64(b[32:], h.Transfer)
	return nil
}

// ParseHeader decodes the header at the start of b (bytes after HeaderSize
// are ignored). Its errors wrap [ErrBadHeader] and say what is wrong: short,
// magic, version or op.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: short: %d bytes, need %d", ErrBadHeader, len(b), HeaderSize)
	}
	be := binary.BigEndian
	if m := be.Uint16(b[0:]); m != Magic {
		return Header{}, fmt.Errorf("%w: magic %#04x, want %#04x", ErrBadHeader, m, Magic)
	}
	if v := b[2]; v != Version {
		return Header{}, fmt.Errorf("%w: version %d, want %d", ErrBadHeader, v, Version)
	}
	op := Op(b[3])
	if !op.Valid() {
		return Header{}, fmt.Errorf("%w: unknown op %d", ErrBadHeader, b[3])
	}
	return Header{
		Op:       op,
		Src:      be.Uint16(b[4:]),
		Dst:      be.Uint16(b[6:]),
		SrcPort:  b[8],
		DstPort:  b[9],
		Hop:      b[10],
		Hops:     b[11],
		Engine:   be.Uint16(b[12:]),
		Queue:    b[14],
		Flags:    b[15],
		Seq:      be.Uint32(b[16:]),
		Length:   be.Uint32(b[20:]),
		Addr:     be.Uint64(b[24:]),
		Transfer: be.Uint64(b[32:]),
	}, nil
}
