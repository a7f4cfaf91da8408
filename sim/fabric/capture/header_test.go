package capture

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeaderRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		h    Header
	}{
		{"write first chunk", Header{Op: OpWrite, Src: 3, Dst: 7, SrcPort: 1, DstPort: 2, Hop: 0, Hops: 2, Engine: 5, Queue: 1, Flags: FlagFirst, Seq: 42, Length: 65536, Addr: 0x1000, Transfer: 9}},
		{"reduce-write last chunk", Header{Op: OpReduceWrite, Src: 1, Dst: 0, Hop: 1, Hops: 2, Flags: FlagLast, Seq: 1, Length: 4096, Addr: 0x8000_0000_0000, Transfer: 1 << 40}},
		{"semaphore", Header{Op: OpSemaphore, Src: 0, Dst: 1, Flags: FlagFirst | FlagLast, Length: 4, Addr: 0x2000_0040}},
		{"read request", Header{Op: OpReadReq, Src: 2, Dst: 3, Length: 128}},
		{"read response", Header{Op: OpReadResp, Src: 3, Dst: 2, Length: 128}},
		{"zero fields", Header{Op: OpWrite}},
		{"max values", Header{
			Op: OpReadResp, Src: math.MaxUint16, Dst: math.MaxUint16, SrcPort: math.MaxUint8, DstPort: math.MaxUint8,
			Hop: math.MaxUint8, Hops: math.MaxUint8, Engine: math.MaxUint16, Queue: math.MaxUint8, Flags: math.MaxUint8,
			Seq: math.MaxUint32, Length: math.MaxUint32, Addr: math.MaxUint64, Transfer: math.MaxUint64,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, HeaderSize+3) // longer buffers are fine; the tail is not touched
			b[HeaderSize] = 0xAA
			require.NoError(t, tt.h.MarshalTo(b))
			assert.Equal(t, []byte{0x4E, 0x53, 1, byte(tt.h.Op)}, b[:4], "magic, version, op")
			assert.Equal(t, byte(0xAA), b[HeaderSize])
			got, err := ParseHeader(b)
			require.NoError(t, err)
			assert.Equal(t, tt.h, got)
		})
	}
}

// TestHeaderLayout pins every field's offset and byte order.
func TestHeaderLayout(t *testing.T) {
	h := Header{Op: OpReduceWrite, Src: 0x0102, Dst: 0x0304, SrcPort: 5, DstPort: 6, Hop: 7, Hops: 8, Engine: 0x090A,
		Queue: 0x0B, Flags: 0x0C, Seq: 0x0D0E0F10, Length: 0x11121314, Addr: 0x15161718191A1B1C, Transfer: 0x1D1E1F2021222324}
	b := make([]byte, HeaderSize)
	require.NoError(t, h.MarshalTo(b))
	want := []byte{
		0x4E, 0x53, 0x01, 0x02, // magic, version, op
		0x01, 0x02, 0x03, 0x04, // src, dst
		5, 6, 7, 8, // src port, dst port, hop, hops
		0x09, 0x0A, 0x0B, 0x0C, // engine, queue, flags
		0x0D, 0x0E, 0x0F, 0x10, // seq
		0x11, 0x12, 0x13, 0x14, // length
		0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, // addr
		0x1D, 0x1E, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x24, // transfer
	}
	assert.Equal(t, want, b)
}

func TestMarshalToErrors(t *testing.T) {
	tests := []struct {
		name    string
		h       Header
		buf     int
		wantMsg string
	}{
		{"short buffer", Header{Op: OpWrite}, HeaderSize - 1, "short"},
		{"nil buffer", Header{Op: OpWrite}, 0, "short"},
		{"op zero", Header{}, HeaderSize, "unknown op 0"},
		{"op six", Header{Op: 6}, HeaderSize, "unknown op 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.h.MarshalTo(make([]byte, tt.buf))
			require.ErrorIs(t, err, ErrBadHeader)
			assert.ErrorContains(t, err, tt.wantMsg)
		})
	}
}

func TestParseHeaderErrors(t *testing.T) {
	good := make([]byte, HeaderSize)
	require.NoError(t, (&Header{Op: OpWrite, Length: 8}).MarshalTo(good))
	with := func(i int, v byte) []byte {
		b := bytes.Clone(good)
		b[i] = v
		return b
	}
	tests := []struct {
		name    string
		b       []byte
		wantMsg string
	}{
		{"nil", nil, "short: 0 bytes, need 40"},
		{"short", good[:HeaderSize-1], "short: 39 bytes, need 40"},
		{"bad magic", with(0, 'X'), "magic 0x5853"},
		{"bad magic second byte", with(1, 0), "magic 0x4e00"},
		{"bad version 0", with(2, 0), "version 0"},
		{"bad version 2", with(2, 2), "version 2"},
		{"unknown op 0", with(3, 0), "unknown op 0"},
		{"unknown op 6", with(3, 6), "unknown op 6"},
		{"unknown op 255", with(3, 255), "unknown op 255"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHeader(tt.b)
			require.ErrorIs(t, err, ErrBadHeader)
			assert.ErrorContains(t, err, tt.wantMsg)
		})
	}
}

func TestOpString(t *testing.T) {
	tests := []struct {
		op   Op
		want string
	}{
		{OpWrite, "write"}, {OpReduceWrite, "reduce-write"}, {OpSemaphore, "semaphore"},
		{OpReadReq, "read-req"}, {OpReadResp, "read-resp"}, {0, "op(0)"}, {200, "op(200)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.op.String())
			assert.Equal(t, tt.op >= 1 && tt.op <= 5, tt.op.Valid())
		})
	}
}
