package remote

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// sampleDevices is a device table exercising every field.
var sampleDevices = []DeviceInfo{
	{Index: 0, Identity: hwarch.PCIIdentity{Vendor: 0x1D0F, Device: 0x7564, Revision: 0xF0}, BARSizes: [NumBARs]uint64{0: 1 << 40, 2: 0x1000, 4: 1 << 36}, Name: "trn3-0", Connected: []int{1, 2}},
	{Index: 1, Identity: hwarch.PCIIdentity{Vendor: 0x1D0F, Device: 0x7565}, Name: "", Connected: []int{}},
	{Index: 2, Identity: hwarch.PCIIdentity{Vendor: 0xFFFF, Device: 0xFFFF, Revision: 0xFF}, BARSizes: [NumBARs]uint64{5: ^uint64(0)}, Name: "ünïcode", Connected: []int{0, 0, 2}},
}

// sampleFrames holds one valid frame of each message.
func sampleFrames() map[string][]byte {
	return map[string][]byte{
		"HELLO":       appendHello(nil, 0, hello{magic: Magic, version: Version}),
		"HELLO reply": append(appendHeader(nil, OpHelloReply, 0, len(appendHelloReplyPayload(nil, helloReply{version: Version, devices: sampleDevices}))), appendHelloReplyPayload(nil, helloReply{version: Version, devices: sampleDevices})...),
		"READ":        appendRW(nil, OpRead, 7, rwRequest{device: 1, bar: 2, count: 3, offset: 0x1234}),
		"READ reply":  append(appendReadReplyHead(nil, OpReadReply, 7, 2), 1, 0, 0, 0, 2, 0, 0, 0),
		"WRITE":       appendRW(nil, OpWrite, 8, rwRequest{device: 0, bar: 0, count: 2, offset: 0x10, data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}),
		"WRITE reply": appendHeader(nil, OpWriteReply, 8, 0),
		"SLEEP":       appendSleep(nil, 9, sleepRequest{device: 0, ns: 1_000_000}),
		"SLEEP reply": appendHeader(nil, OpSleepReply, 9, 0),
		"ERROR":       appendError(nil, 9, errorMsg{code: codeBAROffset, text: "out of range"}),

		"HOST_ALLOC":       appendHostAlloc(nil, 10, hostRequest{device: 1, size: 4096, align: 64}),
		"HOST_ALLOC reply": binary.LittleEndian.AppendUint64(appendHeader(nil, OpHostAllocReply, 10, u64ReplySize), 0x1_0000),
		"HOST_FREE":        appendHostFree(nil, 11, hostRequest{device: 1, addr: 0x1_0000}),
		"HOST_FREE reply":  appendHeader(nil, OpHostFreeReply, 11, 0),
		"HOST_READ":        appendRW(nil, OpHostRead, 12, rwRequest{device: 2, count: 5, offset: 0x1_0003}),
		"HOST_READ reply":  append(appendReadReplyHead(nil, OpHostReadReply, 12, 5), 1, 2, 3, 4, 5),
		"HOST_WRITE":       appendRW(nil, OpHostWrite, 13, rwRequest{device: 2, count: 3, offset: 0x1_0001, data: []byte{9, 8, 7}}),
		"HOST_WRITE reply": appendHeader(nil, OpHostWriteReply, 13, 0),
		"CLOCK":            appendClock(nil, 14, 1),
		"CLOCK reply":      binary.LittleEndian.AppendUint64(appendHeader(nil, OpClockReply, 14, u64ReplySize), 123_456_789),
	}
}

func TestFrameLayout(t *testing.T) {
	// The documented bytes of a READ of 3 words at BAR2+0x1234 of device 1.
	want := []byte{
		16, 0, 0, 0, 0x02, 0, 0, 0, 7, 0, 0, 0, // header: length 16, op READ, tag 7
		1, 0, 2, 0, 3, 0, 0, 0, 0x34, 0x12, 0, 0, 0, 0, 0, 0, // device 1, bar 2, count 3, offset 0x1234
	}
	assert.Equal(t, want, sampleFrames()["READ"])
	assert.Equal(t, []byte{6, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'N', 'R', 'D', 'L', 2, 0}, sampleFrames()["HELLO"])
	// HOST_WRITE of 3 bytes at host address 0x10001 of device 2: the READ
	// layout with the bar byte reserved and a byte count.
	assert.Equal(t, []byte{
		19, 0, 0, 0, 0x08, 0, 0, 0, 13, 0, 0, 0,
		2, 0, 0, 0, 3, 0, 0, 0, 0x01, 0, 0x01, 0, 0, 0, 0, 0, 9, 8, 7,
	}, sampleFrames()["HOST_WRITE"])
	assert.Equal(t, []byte{
		24, 0, 0, 0, 0x05, 0, 0, 0, 10, 0, 0, 0,
		1, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0,
	}, sampleFrames()["HOST_ALLOC"])
	assert.Equal(t, 1048592, MaxPayloadSize)
	assert.Equal(t, 1048604, MaxFrameSize)
}

func TestMessageRoundTrip(t *testing.T) {
	for name, b := range sampleFrames() {
		t.Run(name, func(t *testing.T) {
			f, err := ReadFrame(bytes.NewReader(b), nil)
			require.NoError(t, err)
			again, err := reencode(f)
			require.NoError(t, err)
			assert.Equal(t, b, again)
		})
	}
	r, err := decodeHelloReply(sampleFrames()["HELLO reply"][HeaderSize:], Version)
	require.NoError(t, err)
	assert.Equal(t, sampleDevices, r.devices)
}

// reencode decodes f as its op's message and encodes it again.
func reencode(f Frame) ([]byte, error) {
	switch f.Op {
	case OpHello:
		h, err := decodeHello(f.Payload, MinVersion, Version)
		return appendHello(nil, f.Tag, h), err
	case OpHelloReply:
		r, err := decodeHelloReply(f.Payload, Version)
		p := appendHelloReplyPayload(nil, r)
		return append(appendHeader(nil, f.Op, f.Tag, len(p)), p...), err
	case OpRead, OpWrite, OpHostRead, OpHostWrite:
		r, err := decodeRW(f.Op, f.Payload)
		return appendRW(nil, f.Op, f.Tag, r), err
	case OpReadReply, OpHostReadReply:
		data, err := decodeReadReply(f.Op, f.Payload)
		unit, _, _ := rwUnit(f.Op)
		return append(appendReadReplyHead(nil, f.Op, f.Tag, uint32(len(data)/unit)), data...), err
	case OpHostAlloc:
		r, err := decodeHost(f.Op, f.Payload)
		return appendHostAlloc(nil, f.Tag, r), err
	case OpHostFree:
		r, err := decodeHost(f.Op, f.Payload)
		return appendHostFree(nil, f.Tag, r), err
	case OpHostAllocReply, OpClockReply:
		v, err := decodeU64Reply(f.Op, f.Payload)
		return binary.LittleEndian.AppendUint64(appendHeader(nil, f.Op, f.Tag, u64ReplySize), v), err
	case OpClock:
		dev, err := decodeClock(f.Payload)
		return appendClock(nil, f.Tag, dev), err
	case OpHostFreeReply, OpHostWriteReply:
		return appendHeader(nil, f.Op, f.Tag, 0), decodeEmpty(f.Op, f.Payload)
	case OpSleep:
		r, err := decodeSleep(f.Payload)
		return appendSleep(nil, f.Tag, r), err
	case OpWriteReply, OpSleepReply:
		return appendHeader(nil, f.Op, f.Tag, 0), decodeEmpty(f.Op, f.Payload)
	case OpError:
		e, err := decodeError(f.Payload)
		return appendError(nil, f.Tag, e), err
	}
	return nil, errors.New("unknown op")
}

func TestReadFrameErrors(t *testing.T) {
	tests := []struct {
		name  string
		in    []byte
		want  error
		text  string
		alloc int // the most ReadFrame may allocate (0: don't check)
	}{
		{"empty stream", nil, io.EOF, "read frame", 0},
		{"short header", []byte{1, 0, 0}, ErrProtocol, "truncated frame header (3 of 12 bytes)", 0},
		{"oversized", frame(MaxPayloadSize+1, byte(OpRead), 0), ErrProtocol, "1048593-byte payload", 0},
		{"unknown op", frame(0, 0x0A, 0), ErrProtocol, "unknown op 0x0a", 0},
		{"an HTTP server", []byte("HTTP/1.0 400 Bad Request\r\n"), ErrProtocol, `the peer answered "HTTP": not a neuronsim server`, 0}, // once "a 1347703880-byte payload"
		{"an SSH server", []byte("SSH-2.0-OpenSSH_9.2\r\n"), ErrProtocol, `the peer answered "SSH": not a neuronsim server`, 0},
		{"reserved", []byte{0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0}, ErrProtocol, "reserved header bytes", 0},
		{"truncated", frame(100, byte(OpWrite), 0, 1, 2, 3), ErrProtocol, "truncated WRITE frame (3 of 100 payload bytes)", 0},
		{"declares 1 MiB, sends 10 bytes", frame(MaxPayloadSize, byte(OpWrite), 0, make([]byte, 10)...), ErrProtocol, "truncated", 128 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadFrame(bytes.NewReader(tt.in), nil)
			require.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.text)
			if tt.alloc > 0 {
				var buf []byte
				_, _ = readFrame(bytes.NewReader(tt.in), &buf)
				assert.LessOrEqual(t, cap(buf), tt.alloc)
			}
		})
	}

	t.Run("reader error", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := ReadFrame(iotest.ErrReader(boom), nil)
		assert.ErrorIs(t, err, boom)
		assert.NotErrorIs(t, err, ErrProtocol)
	})
	t.Run("one byte at a time, into a small buffer", func(t *testing.T) {
		b := sampleFrames()["HELLO reply"]
		buf := make([]byte, 0, 16)
		f, err := ReadFrame(iotest.OneByteReader(bytes.NewReader(b)), buf)
		require.NoError(t, err)
		assert.Equal(t, b[HeaderSize:], f.Payload)
	})
	t.Run("reuses a large enough buffer", func(t *testing.T) {
		b := sampleFrames()["WRITE"]
		buf := make([]byte, 0, 64)
		f, err := ReadFrame(bytes.NewReader(b), buf)
		require.NoError(t, err)
		assert.Same(t, &buf[:cap(buf)][HeaderSize], &f.Payload[0], "the payload is not in buf")
	})
}

func TestAppendFrame(t *testing.T) {
	b, err := AppendFrame([]byte{0xAA}, OpSleepReply, 5, nil)
	require.NoError(t, err)
	assert.Equal(t, []byte{0xAA, 0, 0, 0, 0, 0x84, 0, 0, 0, 5, 0, 0, 0}, b)

	_, err = AppendFrame(nil, Op(0x10), 0, nil)
	assert.ErrorIs(t, err, ErrProtocol)
	_, err = AppendFrame(nil, OpWrite, 0, make([]byte, MaxPayloadSize+1))
	assert.ErrorIs(t, err, ErrProtocol)
	_, err = AppendFrame(nil, OpWrite, 0, make([]byte, MaxPayloadSize))
	assert.NoError(t, err)
}

func TestDecodeErrors(t *testing.T) {
	hr := sampleFrames()["HELLO reply"][HeaderSize:]
	withByte := func(b []byte, i int, v byte) []byte { c := bytes.Clone(b); c[i] = v; return c }
	tests := []struct {
		name   string
		decode func() error
		want   error
		text   string
	}{
		{"HELLO reply short", func() error { _, err := decodeHelloReply(hr[:5], Version); return err }, ErrProtocol, "at least"},
		{"HELLO reply magic", func() error { _, err := decodeHelloReply(withByte(hr, 0, 'X'), Version); return err }, ErrProtocol, "magic"},
		{"HELLO reply version", func() error { _, err := decodeHelloReply(withByte(hr, 4, 3), Version); return err }, ErrVersion, "client speaks protocol version 2, server replied with version 3"},
		{"HELLO reply no devices", func() error { _, err := decodeHelloReply(withByte(hr, 6, 0), Version); return err }, ErrProtocol, "lists 0 devices"},
		{"HELLO reply truncated", func() error { _, err := decodeHelloReply(hr[:len(hr)-1], Version); return err }, ErrProtocol, "truncated"},
		{"HELLO reply trailing", func() error { _, err := decodeHelloReply(append(bytes.Clone(hr), 0), Version); return err }, ErrProtocol, "after the device table"},
		{"HELLO reply long name", func() error { _, err := decodeHelloReply(withByte(hr, 8+5, MaxNameLen+1), Version); return err }, ErrProtocol, "name of 65 bytes"},
		{"HELLO reply connected range", func() error { _, err := decodeHelloReply(withByte(hr, 8+56+6, 3), Version); return err }, ErrProtocol, "connected device 3 out of range"},
		{"HELLO reply bad name", func() error { _, err := decodeHelloReply(withByte(hr, 8+56, 0xFF), Version); return err }, ErrProtocol, "not UTF-8"},
		{"READ reply count", func() error { _, err := decodeReadReply(OpReadReply, []byte{2, 0, 0, 0, 1, 2, 3, 4}); return err }, ErrProtocol, "want 12"},
		{"READ reply huge count", func() error { _, err := decodeReadReply(OpReadReply, []byte{0, 0, 0, 1}); return err }, ErrProtocol, "exceeds"},
		{"HOST_READ reply count", func() error { _, err := decodeReadReply(OpHostReadReply, []byte{2, 0, 0, 0, 1}); return err }, ErrProtocol, "want 6"},
		{"HOST_READ reply huge count", func() error { _, err := decodeReadReply(OpHostReadReply, []byte{1, 0, 0x10, 0}); return err }, ErrProtocol, "exceeds"},
		{"HOST_ALLOC short", func() error { _, err := decodeHost(OpHostAlloc, make([]byte, 16)); return err }, ErrProtocol, "want 24"},
		{"HOST_FREE reserved", func() error { _, err := decodeHost(OpHostFree, withByte(make([]byte, 16), 5, 1)); return err }, ErrProtocol, "reserved"},
		{"HOST_ALLOC reply short", func() error { _, err := decodeU64Reply(OpHostAllocReply, make([]byte, 4)); return err }, ErrProtocol, "want 8"},
		{"CLOCK long", func() error { _, err := decodeClock(make([]byte, 9)); return err }, ErrProtocol, "want 8"},
		{"CLOCK reserved", func() error { _, err := decodeClock(withByte(make([]byte, 8), 7, 1)); return err }, ErrProtocol, "reserved"},
		{"HOST_READ bar byte", func() error { _, err := decodeRW(OpHostRead, withByte(make([]byte, 16), 2, 1)); return err }, ErrProtocol, "reserved"},
		{"HOST_WRITE count", func() error { _, err := decodeRW(OpHostWrite, append(withByte(make([]byte, 16), 4, 2), 1)); return err }, ErrProtocol, "want 18"},
		{"HOST_WRITE huge count", func() error { _, err := decodeRW(OpHostWrite, withByte(make([]byte, 16), 6, 0x20)); return err }, ErrProtocol, "exceeds"},
		{"ERROR code 0", func() error { _, err := decodeError([]byte{0, 0, 0, 0}); return err }, ErrProtocol, "code 0"},
		{"ERROR long text", func() error { _, err := decodeError([]byte{1, 0, 0x01, 0x04}); return err }, ErrProtocol, "1025 bytes exceeds"},
		{"ERROR length mismatch", func() error { _, err := decodeError([]byte{1, 0, 2, 0, 'x'}); return err }, ErrProtocol, "want 6"},
		{"empty reply not empty", func() error { return decodeEmpty(OpWriteReply, []byte{0}) }, ErrProtocol, "want 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.decode()
			require.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.text)
		})
	}
}

func TestErrorText(t *testing.T) {
	long := strings.Repeat("é", MaxErrorText) // 2 bytes each
	b := appendError(nil, 1, errorMsg{code: codeGeneric, text: long})
	e, err := decodeError(b[HeaderSize:])
	require.NoError(t, err)
	assert.Equal(t, long[:MaxErrorText], e.text)
	assert.Equal(t, "ab", truncateText("abc", 2))
	assert.Equal(t, "a", truncateText("aé", 2), "cut at a rune boundary")
	assert.Equal(t, "\xff\xff", truncateText("\xff\xff\xff", 2), "non-UTF-8 text is cut at the byte limit")

	for _, s := range codeSentinels {
		assert.Equal(t, s.code, codeOf(s.err))
		assert.Same(t, s.err, sentinelOf(s.code))
	}
	assert.Equal(t, codeGeneric, codeOf(errors.New("other")))
	assert.Nil(t, sentinelOf(codeGeneric))
	assert.Nil(t, sentinelOf(100), "a later version's code reads as generic")
}

func TestOpString(t *testing.T) {
	assert.Equal(t, "READ reply", OpReadReply.String())
	assert.Equal(t, "op(0x42)", Op(0x42).String())
	n := 0
	for o := range 256 {
		if Op(o).known() {
			n++
			assert.NotContains(t, Op(o).String(), "op(")
		}
	}
	assert.Equal(t, 19, n)
	assert.Equal(t, "HOST_READ reply", OpHostReadReply.String())
	assert.Equal(t, uint32(0x4C44524E), binary.LittleEndian.Uint32([]byte("NRDL")))
}
