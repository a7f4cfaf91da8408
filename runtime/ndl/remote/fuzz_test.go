package remote

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// FuzzReadFrame: the decoder never panics, never returns a payload above
// MaxPayloadSize, and a frame it accepts re-encodes to the same bytes — at
// the frame level always, and at the message level when the op's decoder
// accepts the payload.
func FuzzReadFrame(f *testing.F) {
	for _, b := range sampleFrames() {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(frame(MaxPayloadSize+1, byte(OpWrite), 0))
	f.Add(frame(4, byte(OpRead), 0, 1, 2))
	f.Add(frame(0, 0x7F, 0))
	f.Add(appendRW(nil, OpWrite, 1, rwRequest{count: 3, data: make([]byte, 8)}))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := ReadFrame(bytes.NewReader(data), nil)
		if err != nil {
			return
		}
		n := HeaderSize + len(fr.Payload)
		if len(fr.Payload) > MaxPayloadSize || n > len(data) {
			t.Fatalf("payload of %d bytes from %d input bytes", len(fr.Payload), len(data))
		}
		again, err := AppendFrame(nil, fr.Op, fr.Tag, fr.Payload)
		require.NoError(t, err)
		require.Equal(t, data[:n], again, "frame re-encoding")

		small, err := ReadFrame(bytes.NewReader(data), make([]byte, 0, 13))
		require.NoError(t, err)
		require.Equal(t, fr, small, "decoding into a small buffer")

		if msg, err := reencode(fr); err == nil {
			require.Equal(t, data[:n], msg, "message re-encoding")
		}
	})
}

// FuzzServerConn: arbitrary bytes from a client through net.Pipe never make
// the server panic, and the devices see exactly the calls of the requests
// that decode validly (by an independent decoder written from the
// documented layout) after a valid HELLO, up to the first malformed frame.
func FuzzServerConn(f *testing.F) {
	h := helloFrame(Version)
	f.Add(cat(h, appendRW(nil, OpWrite, 1, rwRequest{count: 1, offset: 8, data: []byte{1, 2, 3, 4}}),
		appendRW(nil, OpRead, 2, rwRequest{count: 2, offset: 4}), appendSleep(nil, 3, sleepRequest{ns: 5})))
	f.Add(cat(h, appendRW(nil, OpRead, 1, rwRequest{device: 1, bar: 2, count: 1}), appendSleep(nil, 2, sleepRequest{device: 1, ns: 1})))
	f.Add(cat(h, appendRW(nil, OpRead, 1, rwRequest{device: 9, count: 1}), appendRW(nil, OpRead, 2, rwRequest{bar: 7, count: 1, offset: 3})))
	f.Add(cat(h, appendRW(nil, OpWrite, 1, rwRequest{count: 2, data: make([]byte, 4)}), appendSleep(nil, 2, sleepRequest{ns: 1})))
	f.Add(cat(h, frame(MaxPayloadSize+1, byte(OpWrite), 0)))
	f.Add(cat(h, appendSleep(nil, 1, sleepRequest{ns: math.MaxInt64}), h))
	f.Add(helloFrame(3))
	f.Add(h[:5])
	f.Add(cat(h, appendHostAlloc(nil, 1, hostRequest{size: 64, align: 16}), appendRW(nil, OpHostWrite, 2, rwRequest{count: 3, offset: 0x10004, data: []byte{1, 2, 3}}),
		appendRW(nil, OpHostRead, 3, rwRequest{count: 8, offset: 0x10000}), appendHostFree(nil, 4, hostRequest{addr: 0x10000}),
		appendHostAlloc(nil, 5, hostRequest{device: 1, size: 8, align: 8})))
	f.Add(cat(helloFrame(1), appendRW(nil, OpRead, 1, rwRequest{count: 1}), appendHostAlloc(nil, 2, hostRequest{size: 64, align: 16})))
	f.Add(cat(h, appendClock(nil, 1, 0), appendClock(nil, 2, 1), appendSleep(nil, 3, sleepRequest{ns: 7}), appendClock(nil, 4, 0)))
	f.Fuzz(func(t *testing.T, data []byte) {
		fakes := []*fakeDevice{newFake(0x100), newFake(0x100)}
		for _, d := range fakes {
			d.record = true
		}
		srv, err := NewServer([]Export{{Device: fakes[0]}, {Device: noSleep{fakes[1]}}}, ServerOptions{})
		require.NoError(t, err)
		client, server := net.Pipe()
		require.Equal(t, admitted, srv.track(server))
		done := make(chan struct{})
		go func() { srv.serveConn(server); close(done) }()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_, _ = client.Write(data) // returns once the server has read it all, or closed
		_ = client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the server connection did not end")
		}
		require.NoError(t, srv.Close())

		want := expectedCalls(data)
		for i, d := range fakes {
			assert.Equal(t, want[i], d.calls, "device %d", i)
		}
	})
}

// expectedCalls decodes a client byte stream by the documented layout and
// returns the device calls its valid requests make, per device (device 1
// has no clock and no host memory, so SLEEP, CLOCK and the host requests do
// not reach it; the host requests and CLOCK exist from version 2). A SLEEP
// within units.MaxTimePS reads the clock first and reaches the device when
// it stays within DefaultClockLimitPS; the host requests reach it only
// within the buffers the connection allocated (the fake's allocator is
// mirrored to know their addresses), and those left are freed, in address
// order, when the stream ends.
func expectedCalls(data []byte) (calls [2][]fakeCall) {
	var clockNS, bump uint64 // the fake's clock and allocator
	type buf struct{ pa, size uint64 }
	var owned []buf // in address order: the fake allocates upwards
	defer func() {
		for _, b := range owned {
			calls[0] = append(calls[0], fakeCall{op: "hfree", off: b.pa})
		}
	}()
	within := func(pa, n uint64) bool {
		for _, b := range owned {
			if pa >= b.pa && pa-b.pa <= b.size && n <= b.size-(pa-b.pa) {
				return true
			}
		}
		return false
	}
	le16, le32, le64 := binary.LittleEndian.Uint16, binary.LittleEndian.Uint32, binary.LittleEndian.Uint64
	next := func() (op byte, p []byte, ok bool) {
		if len(data) < 12 {
			return 0, nil, false
		}
		n := uint64(le32(data))
		if n > 16+4*(1<<18) || data[5]|data[6]|data[7] != 0 || uint64(len(data)-12) < n {
			return 0, nil, false
		}
		op, p, data = data[4], data[12:12+n], data[12+n:]
		return op, p, true
	}
	op, p, ok := next()
	if !ok || op != 0x01 || len(p) != 6 || string(p[:4]) != "NRDL" || le16(p[4:]) < 1 || le16(p[4:]) > 2 {
		return calls
	}
	version := le16(p[4:])
	for {
		op, p, ok := next()
		if !ok {
			return calls
		}
		switch op {
		case 0x02, 0x03: // READ, WRITE
			if len(p) < 16 || p[3] != 0 {
				return calls
			}
			dev, bar, count, off := le16(p), int(p[2]), uint64(le32(p[4:])), le64(p[8:])
			want := uint64(16)
			if op == 0x03 {
				want += 4 * count
			}
			if count > 1<<18 || uint64(len(p)) != want {
				return calls
			}
			if dev >= 2 {
				continue // ERROR: no device
			}
			c := fakeCall{op: "read", bar: bar, off: off, count: int(count)}
			if op == 0x03 {
				c.op = "write"
				for i := range count {
					c.data = append(c.data, le32(p[16+4*i:]))
				}
			}
			calls[dev] = append(calls[dev], c)
		case 0x04: // SLEEP
			if len(p) != 16 || le16(p[2:])|le16(p[4:])|le16(p[6:]) != 0 || le64(p[8:]) > math.MaxInt64 {
				return calls
			}
			if dev, ns := le16(p), le64(p[8:]); dev == 0 && ns <= units.MaxTimePS/1000 {
				calls[0] = append(calls[0], fakeCall{op: "clock"})
				if 1000*(clockNS+ns) <= DefaultClockLimitPS {
					calls[0] = append(calls[0], fakeCall{op: "sleep", dur: time.Duration(ns)})
					clockNS += ns
				}
			}
		case 0x05, 0x06: // HOST_ALLOC, HOST_FREE
			want := 24
			if op == 0x06 {
				want = 16
			}
			if version < 2 || len(p) != want || le16(p[2:])|le16(p[4:])|le16(p[6:]) != 0 {
				return calls
			}
			if dev := le16(p); dev == 0 && op == 0x05 {
				size, align := le64(p[8:]), le64(p[16:])
				if size == 0 || size > math.MaxInt64 || align == 0 || align > 1<<30 || align&(align-1) != 0 {
					continue // refused by the server
				}
				calls[0] = append(calls[0], fakeCall{op: "halloc", size: size, align: align})
				if size <= 1<<24 && align <= 1<<20 { // the fake's own limits
					pa := (max(bump, 0x10000) + align - 1) &^ (align - 1)
					owned = append(owned, buf{pa, size})
					bump = pa + size
				}
			} else if dev == 0 {
				pa := le64(p[8:])
				for i, b := range owned {
					if b.pa == pa {
						calls[0] = append(calls[0], fakeCall{op: "hfree", off: pa})
						owned = append(owned[:i], owned[i+1:]...)
						break
					}
				}
			}
		case 0x07, 0x08: // HOST_READ, HOST_WRITE
			if version < 2 || len(p) < 16 || p[2]|p[3] != 0 {
				return calls
			}
			dev, count, pa := le16(p), uint64(le32(p[4:])), le64(p[8:])
			want := uint64(16)
			if op == 0x08 {
				want += count
			}
			if count > 1<<20 || uint64(len(p)) != want {
				return calls
			}
			if dev == 0 && within(pa, count) {
				c := fakeCall{op: "hread", off: pa, count: int(count)}
				if op == 0x08 {
					c.op, c.bytes = "hwrite", append([]byte(nil), p[16:]...)
				}
				calls[0] = append(calls[0], c)
			}
		case 0x09: // CLOCK
			if version < 2 || len(p) != 8 || le16(p[2:])|le16(p[4:])|le16(p[6:]) != 0 {
				return calls
			}
			if le16(p) == 0 {
				calls[0] = append(calls[0], fakeCall{op: "clock"})
			}
		default: // anything else is fatal after the handshake
			return calls
		}
	}
}

// FuzzClient: whatever a server sends after a valid handshake, the client
// never panics or hangs; every call returns, and once the connection is
// given up for a malformed or unexpected frame, every later call fails with
// an error wrapping ndl.ErrClosed. The client's reply buffer never grows
// past its first 4 KiB: the calls' replies are small, and a header
// declaring more than the call's reply is refused before its payload. The input is the server's byte stream
// after its HELLO reply; the seeds are well-formed replies to the client's
// fixed call sequence (tags 1..), and ERROR replies.
func FuzzClient(f *testing.F) {
	le := binary.LittleEndian
	replies := cat(
		append(appendReadReplyHead(nil, OpReadReply, 1, 1), 1, 2, 3, 4), // Read32
		appendHeader(nil, OpWriteReply, 2, 0),                           // Write32
		appendHeader(nil, OpSleepReply, 3, 0),                           // Sleep
		le.AppendUint64(appendHeader(nil, OpHostAllocReply, 4, u64ReplySize), 0x10000),
		appendHeader(nil, OpHostWriteReply, 5, 0),
		append(appendReadReplyHead(nil, OpHostReadReply, 6, 4), 9, 8, 7, 6),
		appendHeader(nil, OpHostFreeReply, 7, 0),
		le.AppendUint64(appendHeader(nil, OpClockReply, 8, u64ReplySize), 12345),
		append(appendReadReplyHead(nil, OpReadReply, 9, 3), make([]byte, 12)...),
	)
	f.Add(replies)
	f.Add(replies[:40])
	f.Add(cat(appendError(nil, 1, errorMsg{code: codeBAROffset, text: "out of range"}), replies[16:]))
	f.Add(appendError(nil, 1, errorMsg{code: codeProtocol, text: "bye"}))
	f.Add(cat(appendHeader(nil, OpWriteReply, 1, 0), replies))
	f.Add(le.AppendUint64(appendHeader(nil, OpHostAllocReply, 1, u64ReplySize), 1))
	hello := appendHeader(nil, OpHelloReply, 0, len(appendHelloReplyPayload(nil, helloReply{version: Version, devices: sampleDevices})))
	hello = appendHelloReplyPayload(hello, helloReply{version: Version, devices: sampleDevices})
	f.Fuzz(func(t *testing.T, data []byte) {
		cli, srv := net.Pipe()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, _ = io.Copy(io.Discard, srv) }() // the requests
		go func() {                                                      // the replies
			defer wg.Done()
			_, _ = srv.Write(hello)
			_, _ = srv.Write(data)
			_ = srv.Close()
		}()
		c, err := newClient(cli, "pipe", 5*time.Second, Version)
		require.NoError(t, err)
		d, err := c.Device(0)
		require.NoError(t, err)
		calls := []func() error{
			func() error { _, err := d.Read32(0, 0x10); return err },
			func() error { return d.Write32(0, 0x10, 7) },
			func() error { return d.Sleep(time.Microsecond) },
			func() error { _, err := d.HostAlloc(4096, 64); return err },
			func() error { return d.HostWrite(0x10000, []byte{1, 2, 3, 4}) },
			func() error { return d.HostRead(0x10000, make([]byte, 4)) },
			func() error { return d.HostFree(0x10000) },
			func() error { _, err := d.ClockPS(); return err },
			func() error { return d.ReadBAR(0, 0, make([]uint32, 3)) },
		}
		broken := false
		for i, call := range calls {
			err := call()
			if bytes.Equal(data, replies) {
				require.NoError(t, err, "call %d with every reply well-formed", i)
			}
			if broken {
				require.ErrorIs(t, err, ndl.ErrClosed, "call %d after the connection was given up", i)
			}
			if err != nil && !errors.As(err, new(*serverError)) || errors.Is(err, ErrProtocol) || errors.Is(err, ErrVersion) {
				broken = true // anything but a device error from the server gives the connection up
			}
		}
		require.NoError(t, c.Close())
		wg.Wait()
		require.LessOrEqual(t, cap(c.rbuf), 4096, "the client's reply buffer")
	})
}
