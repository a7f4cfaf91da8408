package capture

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		h       Header
		payload []byte
	}{
		{"write with payload", Header{Op: OpWrite, Src: 3, Dst: 7, SrcPort: 1, DstPort: 2, Hops: 1, Seq: 42, Length: 8, Addr: 0x1000}, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{"truncated payload", Header{Op: OpReduceWrite, Src: 0x0102, Dst: 0x0304, SrcPort: 9, DstPort: 10, Flags: FlagTruncated, Length: 65536}, []byte{9, 9, 9}},
		{"timing only", Header{Op: OpWrite, Src: 1, Dst: 2, Flags: FlagTimingOnly | FlagFirst, Length: 65536}, nil},
		{"semaphore", Header{Op: OpSemaphore, Src: 65535, Dst: 0, SrcPort: 255, DstPort: 0, Length: 4, Addr: 0x40}, []byte{0, 0, 0, 1}},
		{"read request", Header{Op: OpReadReq, Src: 1, Dst: 2, Length: 65536, Addr: 0x40}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame, err := Frame(&tt.h, tt.payload)
			require.NoError(t, err)
			require.Len(t, frame, FrameOverhead+len(tt.payload))
			dst := []byte{0x02, 0x4e, 0x53, byte(tt.h.Dst >> 8), byte(tt.h.Dst), tt.h.DstPort}
			src := []byte{0x02, 0x4e, 0x53, byte(tt.h.Src >> 8), byte(tt.h.Src), tt.h.SrcPort}
			assert.Equal(t, dst, frame[0:6], "destination MAC")
			assert.Equal(t, src, frame[6:12], "source MAC")
			assert.Equal(t, EtherType, binary.BigEndian.Uint16(frame[12:14]))
			assert.Equal(t, uint16(0x88B5), EtherType)

			h, payload, err := ParseFrame(frame)
			require.NoError(t, err)
			assert.Equal(t, tt.h, h)
			assert.Equal(t, len(tt.payload), len(payload))
			assert.True(t, bytes.Equal(tt.payload, payload))
		})
	}
}

func TestFrameErrors(t *testing.T) {
	tests := []struct {
		name    string
		h       Header
		payload []byte
		wantErr error
		wantMsg string
	}{
		{"unknown op", Header{Op: 9, Length: 4}, nil, ErrBadHeader, "unknown op 9"},
		{"payload longer than chunk", Header{Op: OpWrite, Length: 2}, []byte{1, 2, 3}, ErrBadFrame, "exceed the chunk length 2"},
		{"timing-only with payload", Header{Op: OpWrite, Length: 8, Flags: FlagTimingOnly}, []byte{1}, ErrBadFrame, "timing-only"},
		{"read request with payload", Header{Op: OpReadReq, Length: 8}, []byte{1}, ErrBadFrame, "read request carries 1 payload bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Frame(&tt.h, tt.payload)
			require.ErrorIs(t, err, tt.wantErr)
			assert.ErrorContains(t, err, tt.wantMsg)
		})
	}
}

func TestParseFrameErrors(t *testing.T) {
	good, err := Frame(&Header{Op: OpWrite, Src: 1, Dst: 2, SrcPort: 3, DstPort: 4, Length: 4}, []byte{1, 2, 3, 4})
	require.NoError(t, err)
	with := func(i int, v byte) []byte {
		b := bytes.Clone(good)
		b[i] = v
		return b
	}
	tests := []struct {
		name    string
		frame   []byte
		wantErr error
		wantMsg string
	}{
		{"empty", nil, ErrBadFrame, "short"},
		{"no EtherType", good[:13], ErrBadFrame, "short"},
		{"wrong EtherType IPv4", append(append(bytes.Clone(good[:12]), 0x08, 0x00), good[14:]...), ErrBadFrame, "EtherType 0x0800"},
		{"wrong EtherType low byte", with(13, 0xB6), ErrBadFrame, "EtherType 0x88b6"},
		{"short header", good[:FrameOverhead-1], ErrBadHeader, "short: 39 bytes"},
		{"bad magic", with(14, 0), ErrBadHeader, "magic"},
		{"bad version", with(16, 7), ErrBadHeader, "version 7"},
		{"unknown op", with(17, 0), ErrBadHeader, "unknown op 0"},
		{"destination MAC device", with(4, 9), ErrBadFrame, "destination MAC"},
		{"destination MAC prefix", with(0, 0), ErrBadFrame, "destination MAC"},
		{"source MAC port", with(11, 9), ErrBadFrame, "source MAC"},
		{"payload longer than chunk", append(bytes.Clone(good), 5), ErrBadFrame, "5 payload bytes exceed the chunk length 4"},
		{"timing-only with payload", with(14+15, FlagTimingOnly), ErrBadFrame, "timing-only packet carries 4 payload bytes"},
		{"read request with payload", with(14+3, byte(OpReadReq)), ErrBadFrame, "read request carries 4 payload bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseFrame(tt.frame)
			require.ErrorIs(t, err, tt.wantErr)
			assert.ErrorContains(t, err, tt.wantMsg)
		})
	}
}
