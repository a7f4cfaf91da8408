package capture

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// ErrTimeOrder is wrapped by the error of a packet written with an earlier
// timestamp than the packet before it.
var ErrTimeOrder = errors.New("capture: packet timestamp goes back in time")

// DefaultPayloadLimit is the payload bytes kept per packet when
// [Options].PayloadLimit is 0.
const DefaultPayloadLimit = 256

// DefaultSnapLen is the pcap snap length when [Options].SnapLen is 0.
const DefaultSnapLen = 65535

// DefaultMaxBytes is the size a pcap file stops growing at when
// [Options].MaxBytes is 0: 64 MiB.
const DefaultMaxBytes = 64 << 20

// ErrFull is wrapped by the error of a packet not written because the file
// has reached its size limit ([Options].MaxBytes). The file written so far
// stays a valid pcap: a packet is written whole or not at all, and once one
// is refused every later one is too.
var ErrFull = errors.New("capture: size limit reached")

// pcapRecordHeader is the bytes of a pcap record header.
const pcapRecordHeader = 16

// pcapFileHeader is the bytes of the pcap file header.
const pcapFileHeader = 24

// MaxSnapLen is the largest snap length [NewWriter] accepts: Wireshark
// refuses to read a packet larger than 262144 bytes.
const MaxSnapLen = 262144

// Options configures a [Writer].
type Options struct {
	// PayloadLimit is the bytes of payload kept per packet: 0 means
	// DefaultPayloadLimit, -1 all of it (up to what the snap length
	// allows). Other negative values are an error.
	PayloadLimit int
	// SnapLen is the pcap file's snap length, the largest frame written
	// (header included): 0 means DefaultSnapLen. It must be at least
	// FrameOverhead and at most MaxSnapLen.
	SnapLen uint32
	// MaxBytes bounds the file's size in bytes, file header included: a
	// packet that would take it past MaxBytes is not written, and the
	// capture stops there (see [ErrFull]). 0 means DefaultMaxBytes; it
	// must be at least the file header (24 bytes).
	MaxBytes uint64
}

// Writer writes packets to a pcap stream: link type Ethernet, nanosecond
// timestamps in virtual time (see the package doc). It is not safe for
// concurrent use: the fabric writes from one goroutine.
//
// After an error from the underlying writer, every later WritePacket returns
// that error: the stream is broken and nothing more is written to it.
type Writer struct {
	out     io.Writer
	tw      *trackWriter
	pw      *pcapgo.Writer
	limit   int // payload bytes kept per packet, already capped by the snap length
	buf     []byte
	lastPS  uint64
	packets uint64
	err     error
	bytes   uint64 // written, file header included
	max     uint64 // MaxBytes
	full    bool   // a packet was refused for MaxBytes
	dropped uint64 // packets refused for MaxBytes
}

// NewWriter checks opt, writes the pcap file header to w and returns a
// Writer ready for packets.
func NewWriter(w io.Writer, opt Options) (*Writer, error) {
	if w == nil {
		return nil, errors.New("capture: NewWriter: nil io.Writer")
	}
	snap := opt.SnapLen
	if snap == 0 {
		snap = DefaultSnapLen
	}
	if snap < FrameOverhead || snap > MaxSnapLen {
		return nil, fmt.Errorf("capture: NewWriter: snap length %d outside [%d, %d]", snap, FrameOverhead, MaxSnapLen)
	}
	maxPayload := int(snap) - FrameOverhead
	limit := opt.PayloadLimit
	switch {
	case limit == 0:
		limit = DefaultPayloadLimit
	case limit == -1:
		limit = maxPayload
	case limit < 0:
		return nil, fmt.Errorf("capture: NewWriter: payload limit %d: want -1 (all), 0 (default %d) or a byte count", limit, DefaultPayloadLimit)
	}
	limit = min(limit, maxPayload)
	maxBytes := opt.MaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxBytes < pcapFileHeader {
		return nil, fmt.Errorf("capture: NewWriter: size limit %d bytes: below the %d-byte file header", maxBytes, pcapFileHeader)
	}
	tw := &trackWriter{w: w}
	pw := pcapgo.NewWriterNanos(tw)
	if err := pw.WriteFileHeader(snap, layers.LinkTypeEthernet); err != nil {
		return nil, fmt.Errorf("capture: writing pcap file header: %w", tw.cause(err))
	}
	return &Writer{out: w, tw: tw, pw: pw, limit: limit, buf: make([]byte, 0, FrameOverhead+limit), bytes: pcapFileHeader, max: maxBytes}, nil
}

// trackWriter keeps the first error of the underlying writer, which pcapgo
// reports only as text, so that the Writer's errors wrap it.
type trackWriter struct {
	w   io.Writer
	err error
}

func (t *trackWriter) Write(b []byte) (int, error) {
	n, err := t.w.Write(b)
	if err != nil && t.err == nil {
		t.err = err
	}
	return n, err
}

// cause returns the underlying writer's error if there was one, else err.
func (t *trackWriter) cause(err error) error {
	if t.err != nil {
		return t.err
	}
	return err
}

// WritePacket writes one packet stamped atPS picoseconds of virtual time.
//
// It keeps at most the payload limit of payload and sets [FlagTruncated] in
// the written header exactly when it keeps fewer bytes than h.Length; it
// clears a FlagTruncated the caller set. A timing-only packet
// ([FlagTimingOnly]) and a read request ([OpReadReq], whose length is the
// bytes asked for) carry no payload and are never marked truncated.
//
// The pcap record's original length is the frame's as if the whole chunk
// were carried, FrameOverhead + h.Length (just FrameOverhead for a read
// request; capped at 2^31-1, the largest that Wireshark shows and an int
// holds everywhere), its captured length the bytes written.
//
// Packets must come in non-decreasing time: an earlier atPS than the last
// packet's is an error wrapping [ErrTimeOrder], and nothing is written. So is
// a header [Frame] refuses (an undefined op, more payload than h.Length,
// payload with a timing-only header or a read request).
//
// A packet that would take the file past the size limit is not written:
// the error wraps [ErrFull], and so does every later one's (the capture
// has stopped; [Writer.Dropped] counts them). The file stays valid.
func (w *Writer) WritePacket(atPS uint64, h Header, payload []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.full {
		w.dropped++
		return fmt.Errorf("capture: packet %d not written: %w (%d bytes)", w.packets+w.dropped-1, ErrFull, w.max)
	}
	if w.packets > 0 && atPS < w.lastPS {
		return fmt.Errorf("%w: packet %d at %d ps after one at %d ps", ErrTimeOrder, w.packets, atPS, w.lastPS)
	}
	if err := checkPayload(&h, len(payload)); err != nil {
		return fmt.Errorf("capture: packet %d: %w", w.packets, err)
	}
	if len(payload) > w.limit {
		payload = payload[:w.limit]
	}
	h.Flags &^= FlagTruncated
	if h.Flags&FlagTimingOnly == 0 && uint64(len(payload)) < wireLength(&h) {
		h.Flags |= FlagTruncated
	}
	frame, err := appendFrame(w.buf[:0], &h, payload)
	if err != nil {
		return fmt.Errorf("capture: packet %d: %w", w.packets, err)
	}
	w.buf = frame
	if w.bytes+pcapRecordHeader+uint64(len(frame)) > w.max {
		w.full = true
		w.dropped++
		return fmt.Errorf("capture: packet %d not written: %w (%d bytes)", w.packets, ErrFull, w.max)
	}
	ci := gopacket.CaptureInfo{
		Timestamp:     time.Unix(0, int64(atPS/1000)),
		CaptureLength: len(frame),
		Length:        int(min(FrameOverhead+wireLength(&h), math.MaxInt32)),
	}
	if err := w.pw.WritePacket(ci, frame); err != nil {
		w.err = fmt.Errorf("capture: writing packet %d: %w", w.packets, w.tw.cause(err))
		return w.err
	}
	w.lastPS = atPS
	w.packets++
	w.bytes += pcapRecordHeader + uint64(len(frame))
	return nil
}

// Bytes returns the bytes written to the file so far, header included.
func (w *Writer) Bytes() uint64 { return w.bytes }

// Full reports whether the size limit stopped the capture.
func (w *Writer) Full() bool { return w.full }

// Dropped returns the packets not written because of the size limit.
func (w *Writer) Dropped() uint64 { return w.dropped }

// MaxBytes returns the file's size limit.
func (w *Writer) MaxBytes() uint64 { return w.max }

// Packets returns the number of packets written.
func (w *Writer) Packets() uint64 { return w.packets }

// LastPS returns the timestamp of the last packet written; ok is false
// before the first. A later packet may not be earlier.
func (w *Writer) LastPS() (ps uint64, ok bool) { return w.lastPS, w.packets > 0 }

// Flush flushes the underlying writer if it buffers, that is if it has a
// Flush() error method as *bufio.Writer does; otherwise it does nothing.
// It does not close anything.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	f, ok := w.out.(interface{ Flush() error })
	if !ok {
		return nil
	}
	if err := f.Flush(); err != nil {
		w.err = fmt.Errorf("capture: flushing: %w", err)
		return w.err
	}
	return nil
}
