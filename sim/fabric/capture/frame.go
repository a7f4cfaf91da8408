package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// EtherType is the Ethernet type of neuronsim frames: 0x88B5, IEEE 802
// "local experimental EtherType 1".
const EtherType uint16 = 0x88B5

// ethHeaderSize is the Ethernet II header: two MACs and the EtherType.
const ethHeaderSize = 14

// FrameOverhead is the bytes of a frame before the payload: the Ethernet II
// header (14) and the neuronsim header (40).
const FrameOverhead = ethHeaderSize + HeaderSize

// ErrBadFrame is wrapped by every error about a malformed Ethernet frame or
// a payload that does not agree with its header.
var ErrBadFrame = errors.New("capture: bad neuronsim frame")

// macPrefix is the first three bytes of every neuronsim MAC: 0x02 (locally
// administered, unicast) then "NS".
var macPrefix = [3]byte{0x02, 0x4e, 0x53}

// putMAC writes the MAC 02:4e:53:DD:DD:PP of device dev, port port.
func putMAC(b []byte, dev uint16, port uint8) {
	copy(b, macPrefix[:])
	binary.BigEndian.PutUint16(b[3:], dev)
	b[5] = port
}

// checkPayload says whether n payload bytes may go with h: never more than
// the chunk's length, none at all in a timing-only packet or a read request.
func checkPayload(h *Header, n int) error {
	if uint64(n) > uint64(h.Length) {
		return fmt.Errorf("%w: %d payload bytes exceed the chunk length %d", ErrBadFrame, n, h.Length)
	}
	if n != 0 && h.Flags&FlagTimingOnly != 0 {
		return fmt.Errorf("%w: timing-only packet carries %d payload bytes", ErrBadFrame, n)
	}
	if n != 0 && h.Op == OpReadReq {
		return fmt.Errorf("%w: read request carries %d payload bytes", ErrBadFrame, n)
	}
	return nil
}

// wireLength is the bytes of h's whole chunk on the wire: the length
// payload bytes, except that a read request carries none (its length is
// the bytes asked for, which come back in the responses).
func wireLength(h *Header) uint64 {
	if h.Op == OpReadReq {
		return 0
	}
	return uint64(h.Length)
}

// appendFrame appends the frame of h and payload to dst.
func appendFrame(dst []byte, h *Header, payload []byte) ([]byte, error) {
	if err := checkPayload(h, len(payload)); err != nil {
		return dst, err
	}
	start := len(dst)
	n := FrameOverhead + len(payload)
	if cap(dst)-start < n {
		grown := make([]byte, start, start+n)
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:start+n]
	b := dst[start:]
	if err := h.MarshalTo(b[ethHeaderSize:]); err != nil {
		return dst[:start], err
	}
	putMAC(b[0:], h.Dst, h.DstPort)
	putMAC(b[6:], h.Src, h.SrcPort)
	binary.BigEndian.PutUint16(b[12:], EtherType)
	copy(b[FrameOverhead:], payload)
	return dst, nil
}

// Frame builds the full Ethernet frame of a packet: the MACs from the
// header's devices and ports, [EtherType], the header and the payload. It
// fails if the op is undefined, the payload is longer than h.Length, or a
// timing-only header or a read request comes with payload. It does not touch h.Flags: the
// [Writer] is what sets [FlagTruncated].
func Frame(h *Header, payload []byte) ([]byte, error) {
	return appendFrame(nil, h, payload)
}

// ParseFrame reverses [Frame]: it checks the EtherType, the header and that
// the MACs and payload agree with it, and returns the header and the payload
// (a sub-slice of frame, not a copy). Its errors wrap [ErrBadFrame] or
// [ErrBadHeader].
func ParseFrame(frame []byte) (Header, []byte, error) {
	if len(frame) < ethHeaderSize {
		return Header{}, nil, fmt.Errorf("%w: short: %d bytes, need at least %d", ErrBadFrame, len(frame), FrameOverhead)
	}
	if et := binary.BigEndian.Uint16(frame[12:]); et != EtherType {
		return Header{}, nil, fmt.Errorf("%w: EtherType %#04x, want %#04x", ErrBadFrame, et, EtherType)
	}
	h, err := ParseHeader(frame[ethHeaderSize:])
	if err != nil {
		return Header{}, nil, err
	}
	var want [6]byte
	putMAC(want[:], h.Dst, h.DstPort)
	if [6]byte(frame[0:6]) != want {
		return Header{}, nil, fmt.Errorf("%w: destination MAC % x does not match dst device %d port %d", ErrBadFrame, frame[0:6], h.Dst, h.DstPort)
	}
	putMAC(want[:], h.Src, h.SrcPort)
	if [6]byte(frame[6:12]) != want {
		return Header{}, nil, fmt.Errorf("%w: source MAC % x does not match src device %d port %d", ErrBadFrame, frame[6:12], h.Src, h.SrcPort)
	}
	payload := frame[FrameOverhead:]
	if err := checkPayload(&h, len(payload)); err != nil {
		return Header{}, nil, err
	}
	return h, payload, nil
}
