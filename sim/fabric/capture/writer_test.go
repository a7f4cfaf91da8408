package capture

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pattern returns n bytes that differ from packet to packet.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func TestWriterReadAllRoundTrip(t *testing.T) {
	type in struct {
		atPS    uint64
		h       Header
		payload []byte
	}
	type want struct {
		atPS     uint64
		flags    uint8
		carried  int
		origLen  int
		truncate bool
	}
	tests := []struct {
		name string
		opt  Options
		in   in
		want want
	}{
		{"whole small payload", Options{},
			in{0, Header{Op: OpWrite, Src: 0, Dst: 1, Hops: 1, Flags: FlagFirst, Length: 64}, pattern(64, 1)},
			want{0, FlagFirst, 64, FrameOverhead + 64, false}},
		{"sub-ns picoseconds drop", Options{},
			in{1_234_567, Header{Op: OpSemaphore, Src: 1, Dst: 0, Length: 4}, pattern(4, 2)},
			want{1_234_000, 0, 4, FrameOverhead + 4, false}},
		{"default limit truncates", Options{},
			in{2_000_000, Header{Op: OpWrite, Src: 3, Dst: 7, Flags: FlagFirst | FlagLast, Length: 65536, Addr: 0x1000}, pattern(65536, 3)},
			want{2_000_000, FlagFirst | FlagLast | FlagTruncated, DefaultPayloadLimit, FrameOverhead + 65536, true}},
		{"explicit limit", Options{PayloadLimit: 16},
			in{5, Header{Op: OpReduceWrite, Length: 100}, pattern(100, 4)},
			want{0, FlagTruncated, 16, FrameOverhead + 100, true}},
		{"limit equals length is not truncation", Options{PayloadLimit: 16},
			in{5000, Header{Op: OpReduceWrite, Length: 16}, pattern(16, 5)},
			want{5000, 0, 16, FrameOverhead + 16, false}},
		{"all payload", Options{PayloadLimit: -1},
			in{7000, Header{Op: OpWrite, Length: 4096}, pattern(4096, 6)},
			want{7000, 0, 4096, FrameOverhead + 4096, false}},
		{"all payload capped by snap length", Options{PayloadLimit: -1, SnapLen: 1000},
			in{7000, Header{Op: OpWrite, Length: 4096}, pattern(4096, 7)},
			want{7000, FlagTruncated, 1000 - FrameOverhead, FrameOverhead + 4096, true}},
		{"caller's short payload is marked truncated", Options{PayloadLimit: -1},
			in{8000, Header{Op: OpWrite, Length: 4096}, pattern(10, 8)},
			want{8000, FlagTruncated, 10, FrameOverhead + 4096, true}},
		{"caller's stale truncated flag is cleared", Options{},
			in{8000, Header{Op: OpWrite, Length: 8, Flags: FlagTruncated}, pattern(8, 9)},
			want{8000, 0, 8, FrameOverhead + 8, false}},
		{"timing only", Options{},
			in{9_000_000, Header{Op: OpWrite, Src: 2, Dst: 5, Flags: FlagTimingOnly | FlagLast, Length: 65536}, nil},
			want{9_000_000, FlagTimingOnly | FlagLast, 0, FrameOverhead + 65536, false}},
		{"timing only with stale truncated flag", Options{},
			in{9_000_000, Header{Op: OpWrite, Flags: FlagTimingOnly | FlagTruncated, Length: 1}, nil},
			want{9_000_000, FlagTimingOnly, 0, FrameOverhead + 1, false}},
		{"read request carries no payload and is not truncated", Options{},
			in{10_000, Header{Op: OpReadReq, Src: 1, Dst: 4, Length: 65536, Addr: 0x2000}, nil},
			want{10_000, 0, 0, FrameOverhead, false}},
		{"read response truncated like a write", Options{},
			in{20_000, Header{Op: OpReadResp, Src: 4, Dst: 1, Length: 65536, Addr: 0x2000}, pattern(65536, 10)},
			want{20_000, FlagTruncated, DefaultPayloadLimit, FrameOverhead + 65536, true}},
		{"original length capped at 2^31-1", Options{},
			in{1, Header{Op: OpWrite, Flags: FlagTimingOnly, Length: math.MaxUint32}, nil},
			want{0, FlagTimingOnly, 0, math.MaxInt32, false}},
		{"late virtual time", Options{},
			in{math.MaxUint64, Header{Op: OpWrite, Length: 1}, []byte{1}},
			want{math.MaxUint64 / 1000 * 1000, 0, 1, FrameOverhead + 1, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, tt.opt)
			require.NoError(t, err)
			require.NoError(t, w.WritePacket(tt.in.atPS, tt.in.h, tt.in.payload))
			assert.Equal(t, uint64(1), w.Packets())
			require.NoError(t, w.Flush())

			pkts, err := ReadAll(&buf)
			require.NoError(t, err)
			require.Len(t, pkts, 1)
			p := pkts[0]
			assert.Equal(t, tt.want.atPS, p.AtPS, "timestamp at ns resolution")
			assert.Equal(t, tt.want.origLen, p.OrigLen)
			wantH := tt.in.h
			wantH.Flags = tt.want.flags
			assert.Equal(t, wantH, p.Header)
			assert.Equal(t, tt.want.truncate, p.Header.Flags&FlagTruncated != 0)
			require.Len(t, p.Payload, tt.want.carried)
			if tt.want.carried > 0 {
				assert.Equal(t, tt.in.payload[:tt.want.carried], p.Payload)
			}
		})
	}
}

func TestWriterStream(t *testing.T) {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	w, err := NewWriter(bw, Options{PayloadLimit: 8})
	require.NoError(t, err)
	type rec struct {
		at uint64
		h  Header
		p  []byte
	}
	recs := []rec{
		{1000, Header{Op: OpWrite, Src: 0, Dst: 2, SrcPort: 1, DstPort: 3, Hop: 0, Hops: 2, Seq: 0, Flags: FlagFirst, Length: 8, Addr: 0x100, Transfer: 77}, pattern(8, 1)},
		{1000, Header{Op: OpWrite, Src: 0, Dst: 2, SrcPort: 4, DstPort: 0, Hop: 1, Hops: 2, Seq: 0, Flags: FlagFirst, Length: 8, Addr: 0x100, Transfer: 77}, pattern(8, 1)},
		{2500, Header{Op: OpWrite, Src: 0, Dst: 2, SrcPort: 1, DstPort: 3, Hop: 0, Hops: 2, Seq: 1, Flags: FlagLast, Length: 8, Addr: 0x108, Transfer: 77}, pattern(8, 2)},
		{3999, Header{Op: OpSemaphore, Src: 0, Dst: 2, Seq: 2, Flags: FlagFirst | FlagLast, Length: 4, Addr: 0x40}, []byte{0, 0, 0, 1}},
	}
	for _, r := range recs {
		require.NoError(t, w.WritePacket(r.at, r.h, r.p))
	}
	assert.Equal(t, uint64(len(recs)), w.Packets())
	before := buf.Len()
	require.NoError(t, w.Flush())
	assert.Greater(t, buf.Len(), before, "Flush flushes the bufio.Writer")

	pkts, err := ReadAll(&buf)
	require.NoError(t, err)
	require.Len(t, pkts, len(recs))
	for i, r := range recs {
		assert.Equal(t, r.at/1000*1000, pkts[i].AtPS, "packet %d", i)
		assert.Equal(t, r.h, pkts[i].Header, "packet %d", i)
		assert.Equal(t, r.p, pkts[i].Payload, "packet %d", i)
	}
}

func TestWriterFileHeader(t *testing.T) {
	var buf bytes.Buffer
	_, err := NewWriter(&buf, Options{SnapLen: 2000})
	require.NoError(t, err)
	r, err := pcapgo.NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, layers.LinkTypeEthernet, r.LinkType())
	assert.Equal(t, uint32(2000), r.Snaplen())
	assert.Equal(t, []byte{0x4d, 0x3c, 0xb2, 0xa1}, buf.Bytes()[:4], "nanosecond pcap magic, little-endian")

	pkts, err := ReadAll(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Empty(t, pkts)
}

func TestWriterErrors(t *testing.T) {
	t.Run("time order", func(t *testing.T) {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, Options{})
		require.NoError(t, err)
		require.NoError(t, w.WritePacket(5000, Header{Op: OpWrite, Length: 1}, []byte{1}))
		require.NoError(t, w.WritePacket(5000, Header{Op: OpWrite, Length: 1}, []byte{2}), "equal time is fine")
		n := buf.Len()
		err = w.WritePacket(4999, Header{Op: OpWrite, Length: 1}, []byte{3})
		require.ErrorIs(t, err, ErrTimeOrder)
		assert.ErrorContains(t, err, "4999 ps after one at 5000 ps")
		assert.Equal(t, n, buf.Len(), "nothing written")
		assert.Equal(t, uint64(2), w.Packets())
		require.NoError(t, w.WritePacket(6000, Header{Op: OpWrite, Length: 1}, []byte{4}), "the writer goes on")
		pkts, err := ReadAll(&buf)
		require.NoError(t, err)
		assert.Len(t, pkts, 3)
	})

	bad := []struct {
		name    string
		h       Header
		payload []byte
		wantErr error
		wantMsg string
	}{
		{"unknown op", Header{Op: 0, Length: 1}, []byte{1}, ErrBadHeader, "unknown op 0"},
		{"payload longer than chunk", Header{Op: OpWrite, Length: 1}, []byte{1, 2}, ErrBadFrame, "exceed the chunk length"},
		{"timing-only with payload", Header{Op: OpWrite, Length: 1, Flags: FlagTimingOnly}, []byte{1}, ErrBadFrame, "timing-only"},
		{"read request with payload", Header{Op: OpReadReq, Length: 1}, []byte{1}, ErrBadFrame, "read request carries 1 payload bytes"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, Options{})
			require.NoError(t, err)
			n := buf.Len()
			err = w.WritePacket(0, tt.h, tt.payload)
			require.ErrorIs(t, err, tt.wantErr)
			assert.ErrorContains(t, err, tt.wantMsg)
			assert.Equal(t, n, buf.Len(), "nothing written")
			assert.Zero(t, w.Packets())
		})
	}

	opts := []struct {
		name    string
		opt     Options
		wantMsg string
	}{
		{"payload limit -2", Options{PayloadLimit: -2}, "payload limit -2"},
		{"snap length below the headers", Options{SnapLen: FrameOverhead - 1}, "snap length 53"},
		{"snap length above Wireshark's maximum", Options{SnapLen: MaxSnapLen + 1}, "snap length 262145"},
	}
	for _, tt := range opts {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewWriter(io.Discard, tt.opt)
			assert.ErrorContains(t, err, tt.wantMsg)
		})
	}
	t.Run("nil writer", func(t *testing.T) {
		_, err := NewWriter(nil, Options{})
		assert.ErrorContains(t, err, "nil io.Writer")
	})
}

// failWriter accepts ok writes, then fails.
type failWriter struct{ ok int }

var errDisk = errors.New("disk full")

func (f *failWriter) Write(b []byte) (int, error) {
	if f.ok == 0 {
		return 0, errDisk
	}
	f.ok--
	return len(b), nil
}

func TestWriterStickyError(t *testing.T) {
	_, err := NewWriter(&failWriter{}, Options{})
	require.ErrorIs(t, err, errDisk)
	assert.ErrorContains(t, err, "file header")

	w, err := NewWriter(&failWriter{ok: 1}, Options{})
	require.NoError(t, err)
	err = w.WritePacket(0, Header{Op: OpWrite, Length: 1}, []byte{1})
	require.ErrorIs(t, err, errDisk)
	assert.ErrorContains(t, err, "writing packet 0")
	err2 := w.WritePacket(1000, Header{Op: OpWrite, Length: 1}, []byte{1})
	assert.Equal(t, err, err2, "the stream stays broken")
	assert.Equal(t, err, w.Flush())
	assert.Zero(t, w.Packets())
}

func TestReadAllErrors(t *testing.T) {
	pcapWith := func(lt layers.LinkType, frames ...[]byte) []byte {
		var buf bytes.Buffer
		pw := pcapgo.NewWriterNanos(&buf)
		require.NoError(t, pw.WriteFileHeader(65535, lt))
		for _, f := range frames {
			require.NoError(t, pw.WritePacket(gopacket.CaptureInfo{Timestamp: unixNano(1), CaptureLength: len(f), Length: len(f)}, f))
		}
		return buf.Bytes()
	}
	good, err := Frame(&Header{Op: OpWrite, Length: 1}, []byte{1})
	require.NoError(t, err)
	notOurs := bytes.Clone(good)
	notOurs[12], notOurs[13] = 0x08, 0x00

	tests := []struct {
		name    string
		data    []byte
		wantN   int
		wantErr error
		wantMsg string
	}{
		{"empty input", nil, 0, io.EOF, "pcap file header"},
		{"not a pcap", []byte("this is not a pcap file at all"), 0, nil, "pcap file header"},
		{"raw IP link type", pcapWith(layers.LinkTypeRaw), 0, ErrBadFrame, "link type"},
		{"foreign frame after a good one", pcapWith(layers.LinkTypeEthernet, good, notOurs), 1, ErrBadFrame, "packet 1"},
		{"cut off mid-record", pcapWith(layers.LinkTypeEthernet, good)[:24+16+5], 0, io.ErrUnexpectedEOF, "packet 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkts, err := ReadAll(bytes.NewReader(tt.data))
			require.Error(t, err)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			}
			assert.ErrorContains(t, err, tt.wantMsg)
			assert.Len(t, pkts, tt.wantN)
		})
	}
}

func unixNano(ns int64) time.Time { return time.Unix(0, ns) }

// TestWriterSizeLimit: a capture stops whole at its size limit: the file
// never passes it, every packet after the first refused is refused too
// (wrapping ErrFull), and what was written reads back as a valid pcap.
func TestWriterSizeLimit(t *testing.T) {
	for _, max := range []uint64{24, 100, 1000, 4096} {
		var b bytes.Buffer
		w, err := NewWriter(&b, Options{MaxBytes: max})
		require.NoError(t, err)
		written := 0
		for i := range 200 {
			err := w.WritePacket(uint64(i)*1000, Header{Op: OpWrite, Src: 0, Dst: 1, Hops: 1, Length: 64}, pattern(64, byte(i)))
			if err != nil {
				require.ErrorIs(t, err, ErrFull)
				continue
			}
			require.False(t, w.Full(), "no packet is written after the first refused")
			written++
		}
		assert.LessOrEqual(t, uint64(b.Len()), max, "limit %d", max)
		assert.Equal(t, uint64(b.Len()), w.Bytes())
		assert.True(t, w.Full())
		assert.EqualValues(t, 200-written, w.Dropped())
		pk, err := ReadAll(bytes.NewReader(b.Bytes()))
		require.NoError(t, err, "limit %d: the file stays a valid pcap", max)
		assert.Len(t, pk, written)
	}
	_, err := NewWriter(io.Discard, Options{MaxBytes: 23})
	assert.ErrorContains(t, err, "below the 24-byte file header")
}
