package remote

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Protocol constants (see the package documentation and
// docs/remote-protocol.md for the layout they bound).
const (
	// Magic is the first field of HELLO and of the HELLO reply: the ASCII
	// bytes "NRDL" read as a little-endian uint32.
	Magic uint32 = 0x4C44524E
	// Version is the newest protocol version this package speaks: version 2
	// adds the host-memory requests (HOST_ALLOC, HOST_FREE, HOST_READ,
	// HOST_WRITE) and CLOCK to version 1's BAR and SLEEP requests.
	Version uint16 = 2
	// MinVersion is the oldest protocol version this package speaks: a
	// server answers a version 1 client in version 1, and Dial falls back
	// to it when a version 1 server refuses version 2.
	MinVersion uint16 = 1
	// HeaderSize is the size in bytes of every frame's header.
	HeaderSize = 12
	// MaxWords bounds the word count of one READ or WRITE (1 MiB of data);
	// the client splits longer accesses.
	MaxWords = 1 << 18
	// MaxHostBytes bounds the byte count of one HOST_READ or HOST_WRITE
	// (the same 1 MiB); the client splits longer accesses.
	MaxHostBytes = 4 * MaxWords
	// MaxPayloadSize is the largest payload a frame may declare: a WRITE of
	// MaxWords words (a HOST_WRITE of MaxHostBytes is the same size).
	MaxPayloadSize = rwSize + 4*MaxWords
	// MaxFrameSize is the largest frame on the wire, header included.
	MaxFrameSize = HeaderSize + MaxPayloadSize
	// MaxDevices bounds the device count of a HELLO reply.
	MaxDevices = 256
	// MaxNameLen bounds the byte length of a device name.
	MaxNameLen = 64
	// MaxConnected bounds a device's connected-devices list
	// (MAX_NEURON_DEVICE_COUNT).
	MaxConnected = hwarch.MaxNeuronDevices
	// MaxErrorText bounds the byte length of an ERROR reply's message.
	MaxErrorText = 1024
	// NumBARs is the number of PCI BARs whose sizes a HELLO reply carries
	// (BAR0..BAR5).
	NumBARs = 6
)

// Fixed payload sizes of the messages.
const (
	helloSize      = 6  // magic u32, version u16
	helloReplyHead = 8  // magic u32, version u16, device count u16
	deviceHead     = 56 // vendor, device, revision, name length, 6 BAR sizes, connected count
	rwSize         = 16 // device u16, bar u8, reserved u8, count u32, offset u64
	sleepSize      = 16 // device u16, reserved 6 bytes, duration u64
	readReplyHead  = 4  // count u32
	hostAllocSize  = 24 // device u16, reserved 6 bytes, size u64, align u64
	hostFreeSize   = 16 // device u16, reserved 6 bytes, address u64
	u64ReplySize   = 8  // HOST_ALLOC reply (address), CLOCK reply (picoseconds)
	clockSize      = 8  // device u16, reserved 6 bytes
	errorHead      = 4  // code u16, text length u16
)

// Op is a frame's operation code. A reply's op is its request's op with bit
// 7 set; OpError answers any request.
type Op uint8

// The operations.
const (
	OpHello          Op = 0x01 // client → server: magic, version
	OpRead           Op = 0x02 // client → server: read words of a BAR
	OpWrite          Op = 0x03 // client → server: write words of a BAR
	OpSleep          Op = 0x04 // client → server: pass time on the device's clock
	OpHostAlloc      Op = 0x05 // client → server (v2): allocate host memory the device's DMA reaches
	OpHostFree       Op = 0x06 // client → server (v2): free it
	OpHostRead       Op = 0x07 // client → server (v2): read bytes of host memory
	OpHostWrite      Op = 0x08 // client → server (v2): write bytes of host memory
	OpClock          Op = 0x09 // client → server (v2): read the device's clock
	OpHelloReply     Op = 0x81 // server → client: version and device table
	OpReadReply      Op = 0x82 // server → client: the words read
	OpWriteReply     Op = 0x83 // server → client: write done (empty)
	OpSleepReply     Op = 0x84 // server → client: sleep done (empty)
	OpHostAllocReply Op = 0x85 // server → client (v2): the host address
	OpHostFreeReply  Op = 0x86 // server → client (v2): freed (empty)
	OpHostReadReply  Op = 0x87 // server → client (v2): the bytes read
	OpHostWriteReply Op = 0x88 // server → client (v2): written (empty)
	OpClockReply     Op = 0x89 // server → client (v2): the clock in picoseconds
	OpError          Op = 0xFF // server → client: error code and message
)

// opNames names the ops; an op without a name is not one of the protocol's.
var opNames = [256]string{
	OpHello: "HELLO", OpRead: "READ", OpWrite: "WRITE", OpSleep: "SLEEP",
	OpHostAlloc: "HOST_ALLOC", OpHostFree: "HOST_FREE", OpHostRead: "HOST_READ", OpHostWrite: "HOST_WRITE", OpClock: "CLOCK",
	OpHelloReply: "HELLO reply", OpReadReply: "READ reply", OpWriteReply: "WRITE reply", OpSleepReply: "SLEEP reply",
	OpHostAllocReply: "HOST_ALLOC reply", OpHostFreeReply: "HOST_FREE reply", OpHostReadReply: "HOST_READ reply",
	OpHostWriteReply: "HOST_WRITE reply", OpClockReply: "CLOCK reply", OpError: "ERROR",
}

// since returns the protocol version that introduced a request op.
func (o Op) since() uint16 {
	if o >= OpHostAlloc && o <= OpClock {
		return 2
	}
	return 1
}

// String names the op ("HELLO", "READ reply", …) or formats an unknown one.
func (o Op) String() string {
	if n := opNames[o]; n != "" {
		return n
	}
	return fmt.Sprintf("op(%#02x)", uint8(o))
}

// known reports whether o is one of the protocol's ops.
func (o Op) known() bool {
	return opNames[o] != ""
}

// Frame is one decoded frame: the header's op and tag and the payload.
type Frame struct {
	Op Op
	// Tag is chosen by the client per request and echoed by the reply.
	Tag uint32
	// Payload is the body after the header; ReadFrame returns it aliasing
	// its buffer.
	Payload []byte
}

// ReadFrame reads one frame from r. The header is checked (declared payload
// length at most MaxPayloadSize, known op, reserved bytes zero) before any
// of the payload is read. The frame is read into buf when it fits in
// cap(buf); otherwise a buffer is grown as the payload arrives, never past
// the declared length. A clean end of stream before the first header byte
// is an error wrapping io.EOF; a stream ending inside a frame, or a header
// that breaks the rules, is an error wrapping ErrProtocol; a failure of r
// is returned wrapped.
func ReadFrame(r io.Reader, buf []byte) (Frame, error) {
	return readFrame(r, &buf)
}

// readFrame is ReadFrame leaving the (possibly grown) buffer in *buf for the
// caller to reuse.
func readFrame(r io.Reader, buf *[]byte) (Frame, error) {
	return readFrameGrow(r, buf, growFrame, nil)
}

// growFrame returns a larger buffer holding b (full) for a frame of need
// bytes: double b's capacity, at least 64 KiB, at most need, so that a peer
// declaring a large frame and sending nothing costs at most a doubling of
// what it sent.
func growFrame(b []byte, need int) []byte {
	nb := make([]byte, len(b), min(need, max(2*cap(b), 64<<10)))
	copy(nb, b)
	return nb
}

// readFrameGrow is readFrame growing the buffer with grow, called when the
// buffer is full and the frame (of need bytes) is not: it returns a buffer
// holding b's bytes, with more room, at most need in all. When accept is
// not nil it is given the fields of a header that passed parseHeader, and
// an error from it refuses the frame before any of its payload is read.
func readFrameGrow(r io.Reader, buf *[]byte, grow func(b []byte, need int) []byte, accept func(length int, op Op, tag uint32) error) (Frame, error) {
	b := *buf
	if cap(b) < HeaderSize {
		b = make([]byte, HeaderSize, 256)
		*buf = b
	}
	b = b[:HeaderSize]
	if n, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Frame{}, fmt.Errorf("remote: truncated frame header (%d of %d bytes): %w", n, HeaderSize, ErrProtocol)
		}
		if errors.Is(err, io.EOF) {
			return Frame{}, fmt.Errorf("remote: read frame: %w", io.EOF)
		}
		return Frame{}, fmt.Errorf("remote: read frame header: %w", err)
	}
	length, op, tag, err := parseHeader(b)
	if err != nil {
		return Frame{}, err
	}
	if accept != nil {
		if err := accept(length, op, tag); err != nil {
			return Frame{}, err
		}
	}
	need := HeaderSize + length
	if cap(b) >= need {
		b = b[:need]
		if n, err := io.ReadFull(r, b[HeaderSize:]); err != nil {
			return Frame{}, bodyError(op, n, length, err)
		}
	} else {
		// Grow as the bytes arrive: a peer declaring a large frame and
		// sending nothing costs little (growFrame, serverConn.growRequest).
		for len(b) < need {
			if len(b) == cap(b) {
				b = grow(b, need)
			}
			end := min(cap(b), need)
			if n, err := io.ReadFull(r, b[len(b):end]); err != nil {
				return Frame{}, bodyError(op, len(b)-HeaderSize+n, length, err)
			}
			b = b[:end]
		}
		*buf = b
	}
	return Frame{Op: op, Tag: tag, Payload: b[HeaderSize:need]}, nil
}

// parseHeader checks a frame header and returns its fields.
func parseHeader(h []byte) (length int, op Op, tag uint32, err error) {
	n := binary.LittleEndian.Uint32(h[0:4])
	op = Op(h[4])
	tag = binary.LittleEndian.Uint32(h[8:12])
	if n > MaxPayloadSize {
		if bytes.HasPrefix(h, []byte("HTTP")) || bytes.HasPrefix(h, []byte("SSH-")) {
			// A frame's length is little-endian: text gives a huge one.
			return 0, op, tag, fmt.Errorf("remote: the peer answered %q: not a neuronsim server: %w", strings.TrimRight(string(h[:4]), "-"), ErrProtocol)
		}
		return 0, op, tag, fmt.Errorf("remote: frame declares a %d-byte payload, more than the maximum %d: %w", n, MaxPayloadSize, ErrProtocol)
	}
	if !op.known() {
		return 0, op, tag, fmt.Errorf("remote: unknown op %#02x: %w", uint8(op), ErrProtocol)
	}
	if h[5] != 0 || h[6] != 0 || h[7] != 0 {
		return 0, op, tag, fmt.Errorf("remote: %s frame: reserved header bytes %#02x %#02x %#02x not zero: %w", op, h[5], h[6], h[7], ErrProtocol)
	}
	return int(n), op, tag, nil
}

// bodyError describes a failure reading a payload of length bytes after got.
func bodyError(op Op, got, length int, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("remote: truncated %s frame (%d of %d payload bytes): %w", op, got, length, ErrProtocol)
	}
	return fmt.Errorf("remote: read %s frame payload: %w", op, err)
}

// AppendFrame appends a frame of op, tag and payload to dst. It refuses an
// unknown op and a payload longer than MaxPayloadSize (ErrProtocol); the
// payload itself is not checked against op's layout.
func AppendFrame(dst []byte, op Op, tag uint32, payload []byte) ([]byte, error) {
	if !op.known() {
		return dst, fmt.Errorf("remote: encode frame: unknown op %#02x: %w", uint8(op), ErrProtocol)
	}
	if len(payload) > MaxPayloadSize {
		return dst, fmt.Errorf("remote: encode %s frame: %d-byte payload exceeds the maximum %d: %w", op, len(payload), MaxPayloadSize, ErrProtocol)
	}
	dst = appendHeader(dst, op, tag, len(payload))
	return append(dst, payload...), nil
}

// appendHeader appends a frame header declaring an n-byte payload.
func appendHeader(dst []byte, op Op, tag uint32, n int) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst = append(dst, byte(op), 0, 0, 0)
	return binary.LittleEndian.AppendUint32(dst, tag)
}

// DeviceInfo describes one device a server exports, as the HELLO reply
// carries it.
type DeviceInfo struct {
	// Index is the device's position in the server's export list.
	Index int
	// Identity is the PCI vendor, device id and revision.
	Identity hwarch.PCIIdentity
	// BARSizes holds the sizes in bytes of BAR0..BAR5 (0 when absent).
	BARSizes [NumBARs]uint64
	// Name is the server's short name for the device (may be empty).
	Name string
	// Connected lists the indices of the devices this one is connected to.
	Connected []int
}

// hello is the HELLO payload.
type hello struct {
	magic   uint32
	version uint16
}

// appendHello appends a HELLO frame.
func appendHello(dst []byte, tag uint32, h hello) []byte {
	dst = appendHeader(dst, OpHello, tag, helloSize)
	dst = binary.LittleEndian.AppendUint32(dst, h.magic)
	return binary.LittleEndian.AppendUint16(dst, h.version)
}

// decodeHello decodes a HELLO payload. The magic and the version are checked
// before the length, so a later version may append fields: a wrong magic is
// ErrProtocol, a version outside lo..hi is ErrVersion (naming both sides),
// and then a payload other than 6 bytes is ErrProtocol.
func decodeHello(p []byte, lo, hi uint16) (hello, error) {
	if len(p) < helloSize {
		return hello{}, fmt.Errorf("remote: HELLO payload is %d bytes, want %d: %w", len(p), helloSize, ErrProtocol)
	}
	h := hello{magic: binary.LittleEndian.Uint32(p[0:4]), version: binary.LittleEndian.Uint16(p[4:6])}
	if h.magic != Magic {
		return h, fmt.Errorf("remote: HELLO magic %#08x, want %#08x (\"NRDL\"): %w", h.magic, Magic, ErrProtocol)
	}
	if h.version < lo || h.version > hi {
		speaks := fmt.Sprintf("version %d", lo)
		if lo != hi {
			speaks = fmt.Sprintf("versions %d to %d", lo, hi)
		}
		return h, fmt.Errorf("remote: server speaks protocol %s, client sent version %d: %w", speaks, h.version, ErrVersion)
	}
	if len(p) != helloSize {
		return h, fmt.Errorf("remote: version %d HELLO payload is %d bytes, want %d: %w", h.version, len(p), helloSize, ErrProtocol)
	}
	return h, nil
}

// helloReply is the HELLO reply payload.
type helloReply struct {
	version uint16
	devices []DeviceInfo
}

// appendHelloReplyPayload appends a HELLO reply payload. The devices must
// satisfy the limits decodeHelloReply checks (NewServer validates them).
func appendHelloReplyPayload(dst []byte, r helloReply) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, Magic)
	dst = binary.LittleEndian.AppendUint16(dst, r.version)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(r.devices)))
	for _, d := range r.devices {
		dst = binary.LittleEndian.AppendUint16(dst, d.Identity.Vendor)
		dst = binary.LittleEndian.AppendUint16(dst, d.Identity.Device)
		dst = append(dst, d.Identity.Revision, byte(len(d.Name)))
		for _, s := range d.BARSizes {
			dst = binary.LittleEndian.AppendUint64(dst, s)
		}
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(d.Connected)))
		dst = append(dst, d.Name...)
		for _, c := range d.Connected {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(c))
		}
	}
	return dst
}

// decodeHelloReply decodes a HELLO reply payload. The magic and version are
// checked first (ErrProtocol, ErrVersion naming both versions), then the
// device table: 1..MaxDevices devices, names of at most MaxNameLen bytes of
// UTF-8, at most MaxConnected connected indices each below the device
// count, and no byte left over.
func decodeHelloReply(p []byte, want uint16) (helloReply, error) {
	if len(p) < 6 {
		return helloReply{}, fmt.Errorf("remote: HELLO reply payload is %d bytes, want at least %d: %w", len(p), helloReplyHead, ErrProtocol)
	}
	if m := binary.LittleEndian.Uint32(p[0:4]); m != Magic {
		return helloReply{}, fmt.Errorf("remote: HELLO reply magic %#08x, want %#08x (\"NRDL\"): %w", m, Magic, ErrProtocol)
	}
	r := helloReply{version: binary.LittleEndian.Uint16(p[4:6])}
	if r.version != want {
		return r, fmt.Errorf("remote: client speaks protocol version %d, server replied with version %d: %w", want, r.version, ErrVersion)
	}
	if len(p) < helloReplyHead {
		return r, fmt.Errorf("remote: HELLO reply payload is %d bytes, want at least %d: %w", len(p), helloReplyHead, ErrProtocol)
	}
	n := int(binary.LittleEndian.Uint16(p[6:8]))
	if n == 0 || n > MaxDevices {
		return r, fmt.Errorf("remote: HELLO reply lists %d devices, want 1..%d: %w", n, MaxDevices, ErrProtocol)
	}
	p = p[helloReplyHead:]
	r.devices = make([]DeviceInfo, n)
	for i := range r.devices {
		if len(p) < deviceHead {
			return r, fmt.Errorf("remote: HELLO reply device %d: record truncated (%d bytes left, want at least %d): %w", i, len(p), deviceHead, ErrProtocol)
		}
		d := &r.devices[i]
		d.Index = i
		d.Identity = hwarch.PCIIdentity{
			Vendor:   binary.LittleEndian.Uint16(p[0:2]),
			Device:   binary.LittleEndian.Uint16(p[2:4]),
			Revision: p[4],
		}
		nameLen := int(p[5])
		for b := range d.BARSizes {
			d.BARSizes[b] = binary.LittleEndian.Uint64(p[6+8*b:])
		}
		nConn := int(binary.LittleEndian.Uint16(p[54:56]))
		if nameLen > MaxNameLen {
			return r, fmt.Errorf("remote: HELLO reply device %d: name of %d bytes exceeds %d: %w", i, nameLen, MaxNameLen, ErrProtocol)
		}
		if nConn > MaxConnected {
			return r, fmt.Errorf("remote: HELLO reply device %d: %d connected devices exceed %d: %w", i, nConn, MaxConnected, ErrProtocol)
		}
		p = p[deviceHead:]
		if len(p) < nameLen+2*nConn {
			return r, fmt.Errorf("remote: HELLO reply device %d: record truncated (%d bytes left, want %d): %w", i, len(p), nameLen+2*nConn, ErrProtocol)
		}
		name := p[:nameLen]
		if !utf8.Valid(name) {
			return r, fmt.Errorf("remote: HELLO reply device %d: name %q is not UTF-8: %w", i, name, ErrProtocol)
		}
		d.Name = string(name)
		p = p[nameLen:]
		d.Connected = make([]int, nConn)
		for j := range d.Connected {
			c := int(binary.LittleEndian.Uint16(p[2*j:]))
			if c >= n {
				return r, fmt.Errorf("remote: HELLO reply device %d: connected device %d out of range (%d devices): %w", i, c, n, ErrProtocol)
			}
			d.Connected[j] = c
		}
		p = p[2*nConn:]
	}
	if len(p) != 0 {
		return r, fmt.Errorf("remote: HELLO reply: %d bytes after the device table: %w", len(p), ErrProtocol)
	}
	return r, nil
}

// rwRequest is a READ, WRITE, HOST_READ or HOST_WRITE payload. data is
// what a write carries as raw bytes (WRITE: 4*count bytes of little-endian
// words; HOST_WRITE: count bytes); nil for the reads. The host requests
// have no bar (that byte is reserved) and count bytes rather than words.
type rwRequest struct {
	device uint16
	bar    uint8
	count  uint32
	offset uint64
	data   []byte
}

// appendRWHead appends the header and fixed part of a READ (dataLen 0) or
// WRITE frame; a WRITE's dataLen bytes of words follow.
func appendRWHead(dst []byte, op Op, tag uint32, device uint16, bar uint8, count uint32, offset uint64, dataLen int) []byte {
	dst = appendHeader(dst, op, tag, rwSize+dataLen)
	dst = binary.LittleEndian.AppendUint16(dst, device)
	dst = append(dst, bar, 0)
	dst = binary.LittleEndian.AppendUint32(dst, count)
	return binary.LittleEndian.AppendUint64(dst, offset)
}

// appendRW appends a READ or WRITE frame of r.
func appendRW(dst []byte, op Op, tag uint32, r rwRequest) []byte {
	dst = appendRWHead(dst, op, tag, r.device, r.bar, r.count, r.offset, len(r.data))
	return append(dst, r.data...)
}

// rwUnit returns the bytes one count of op's request or reply stands for,
// the largest count and the name of the unit: BAR accesses count words,
// host accesses bytes.
func rwUnit(op Op) (unit int, most uint32, name string) {
	switch op {
	case OpHostRead, OpHostWrite, OpHostReadReply:
		return 1, MaxHostBytes, "bytes"
	}
	return 4, MaxWords, "words"
}

// decodeRW decodes a READ, WRITE, HOST_READ or HOST_WRITE payload: count at
// most MaxWords words (MaxHostBytes bytes), the reserved bytes zero (a host
// request's bar byte included), and the payload exactly 16 bytes (the
// reads) or 16 plus the data the count says (the writes).
func decodeRW(op Op, p []byte) (rwRequest, error) {
	if len(p) < rwSize {
		return rwRequest{}, fmt.Errorf("remote: %s payload is %d bytes, want at least %d: %w", op, len(p), rwSize, ErrProtocol)
	}
	r := rwRequest{
		device: binary.LittleEndian.Uint16(p[0:2]),
		bar:    p[2],
		count:  binary.LittleEndian.Uint32(p[4:8]),
		offset: binary.LittleEndian.Uint64(p[8:16]),
	}
	unit, most, name := rwUnit(op)
	if p[3] != 0 || unit == 1 && p[2] != 0 {
		return r, fmt.Errorf("remote: %s reserved byte %#02x not zero: %w", op, p[2+unit/4:4], ErrProtocol)
	}
	if r.count > most {
		return r, fmt.Errorf("remote: %s count %d exceeds %d %s: %w", op, r.count, most, name, ErrProtocol)
	}
	want := rwSize
	if op == OpWrite || op == OpHostWrite {
		want += unit * int(r.count)
	}
	if len(p) != want {
		return r, fmt.Errorf("remote: %s of %d %s: payload is %d bytes, want %d: %w", op, r.count, name, len(p), want, ErrProtocol)
	}
	if want > rwSize {
		r.data = p[rwSize:]
	}
	return r, nil
}

// appendReadReplyHead appends the header and count of a READ reply of count
// words or a HOST_READ reply of count bytes (op); the data bytes follow.
func appendReadReplyHead(dst []byte, op Op, tag uint32, count uint32) []byte {
	unit, _, _ := rwUnit(op)
	dst = appendHeader(dst, op, tag, readReplyHead+unit*int(count))
	return binary.LittleEndian.AppendUint32(dst, count)
}

// decodeReadReply decodes a READ or HOST_READ reply payload (op) and
// returns its raw data bytes: count at most MaxWords words (MaxHostBytes
// bytes) and the payload exactly 4 bytes plus the data the count says.
func decodeReadReply(op Op, p []byte) ([]byte, error) {
	if len(p) < readReplyHead {
		return nil, fmt.Errorf("remote: %s payload is %d bytes, want at least %d: %w", op, len(p), readReplyHead, ErrProtocol)
	}
	unit, most, name := rwUnit(op)
	n := binary.LittleEndian.Uint32(p[0:4])
	if n > most {
		return nil, fmt.Errorf("remote: %s count %d exceeds %d %s: %w", op, n, most, name, ErrProtocol)
	}
	if want := readReplyHead + unit*int(n); len(p) != want {
		return nil, fmt.Errorf("remote: %s of %d %s: payload is %d bytes, want %d: %w", op, n, name, len(p), want, ErrProtocol)
	}
	return p[readReplyHead:], nil
}

// sleepRequest is a SLEEP payload.
type sleepRequest struct {
	device uint16
	ns     uint64
}

// appendSleep appends a SLEEP frame.
func appendSleep(dst []byte, tag uint32, r sleepRequest) []byte {
	dst = appendHeader(dst, OpSleep, tag, sleepSize)
	dst = binary.LittleEndian.AppendUint16(dst, r.device)
	dst = append(dst, 0, 0, 0, 0, 0, 0)
	return binary.LittleEndian.AppendUint64(dst, r.ns)
}

// decodeSleep decodes a SLEEP payload: exactly 16 bytes, reserved bytes
// zero, duration at most math.MaxInt64 ns.
func decodeSleep(p []byte) (sleepRequest, error) {
	if len(p) != sleepSize {
		return sleepRequest{}, fmt.Errorf("remote: SLEEP payload is %d bytes, want %d: %w", len(p), sleepSize, ErrProtocol)
	}
	r := sleepRequest{device: binary.LittleEndian.Uint16(p[0:2]), ns: binary.LittleEndian.Uint64(p[8:16])}
	for _, b := range p[2:8] {
		if b != 0 {
			return r, fmt.Errorf("remote: SLEEP reserved bytes % x not zero: %w", p[2:8], ErrProtocol)
		}
	}
	if r.ns > math.MaxInt64 {
		return r, fmt.Errorf("remote: SLEEP duration %d ns exceeds %d: %w", r.ns, int64(math.MaxInt64), ErrProtocol)
	}
	return r, nil
}

// decodeEmpty checks the payload of an empty reply (WRITE, SLEEP,
// HOST_FREE, HOST_WRITE) is empty.
func decodeEmpty(op Op, p []byte) error {
	if len(p) != 0 {
		return fmt.Errorf("remote: %s payload is %d bytes, want 0: %w", op, len(p), ErrProtocol)
	}
	return nil
}

// hostRequest is a HOST_ALLOC (size, align) or HOST_FREE (addr) payload.
type hostRequest struct {
	device      uint16
	size, align uint64 // HOST_ALLOC
	addr        uint64 // HOST_FREE
}

// appendHostAlloc appends a HOST_ALLOC frame.
func appendHostAlloc(dst []byte, tag uint32, r hostRequest) []byte {
	dst = appendHeader(dst, OpHostAlloc, tag, hostAllocSize)
	dst = binary.LittleEndian.AppendUint16(dst, r.device)
	dst = append(dst, 0, 0, 0, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint64(dst, r.size)
	return binary.LittleEndian.AppendUint64(dst, r.align)
}

// appendHostFree appends a HOST_FREE frame.
func appendHostFree(dst []byte, tag uint32, r hostRequest) []byte {
	dst = appendHeader(dst, OpHostFree, tag, hostFreeSize)
	dst = binary.LittleEndian.AppendUint16(dst, r.device)
	dst = append(dst, 0, 0, 0, 0, 0, 0)
	return binary.LittleEndian.AppendUint64(dst, r.addr)
}

// decodeHost decodes a HOST_ALLOC (24 bytes) or HOST_FREE (16 bytes)
// payload: exactly that size, reserved bytes zero.
func decodeHost(op Op, p []byte) (hostRequest, error) {
	want := hostFreeSize
	if op == OpHostAlloc {
		want = hostAllocSize
	}
	if len(p) != want {
		return hostRequest{}, fmt.Errorf("remote: %s payload is %d bytes, want %d: %w", op, len(p), want, ErrProtocol)
	}
	r := hostRequest{device: binary.LittleEndian.Uint16(p[0:2])}
	for _, b := range p[2:8] {
		if b != 0 {
			return r, fmt.Errorf("remote: %s reserved bytes % x not zero: %w", op, p[2:8], ErrProtocol)
		}
	}
	if op == OpHostAlloc {
		r.size, r.align = binary.LittleEndian.Uint64(p[8:16]), binary.LittleEndian.Uint64(p[16:24])
	} else {
		r.addr = binary.LittleEndian.Uint64(p[8:16])
	}
	return r, nil
}

// decodeU64Reply decodes a reply whose payload is one u64 (HOST_ALLOC: the
// address; CLOCK: picoseconds): exactly 8 bytes.
func decodeU64Reply(op Op, p []byte) (uint64, error) {
	if len(p) != u64ReplySize {
		return 0, fmt.Errorf("remote: %s payload is %d bytes, want %d: %w", op, len(p), u64ReplySize, ErrProtocol)
	}
	return binary.LittleEndian.Uint64(p), nil
}

// appendClock appends a CLOCK frame.
func appendClock(dst []byte, tag uint32, device uint16) []byte {
	dst = appendHeader(dst, OpClock, tag, clockSize)
	dst = binary.LittleEndian.AppendUint16(dst, device)
	return append(dst, 0, 0, 0, 0, 0, 0)
}

// decodeClock decodes a CLOCK payload: exactly 8 bytes, reserved bytes
// zero. It returns the device index.
func decodeClock(p []byte) (uint16, error) {
	if len(p) != clockSize {
		return 0, fmt.Errorf("remote: CLOCK payload is %d bytes, want %d: %w", len(p), clockSize, ErrProtocol)
	}
	for _, b := range p[2:8] {
		if b != 0 {
			return 0, fmt.Errorf("remote: CLOCK reserved bytes % x not zero: %w", p[2:8], ErrProtocol)
		}
	}
	return binary.LittleEndian.Uint16(p), nil
}
