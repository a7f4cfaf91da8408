package remote

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// hostileServer does the handshake for devices on one end of a pipe, then
// answers every request with what reply returns for it (nothing when it
// returns nil), and returns a client of the other end.
func hostileServer(t *testing.T, devices []DeviceInfo, reply func(f Frame) []byte) *Client {
	t.Helper()
	cli, srv := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer srv.Close()
		f, err := ReadFrame(srv, nil)
		if err != nil {
			return
		}
		p := appendHelloReplyPayload(nil, helloReply{version: Version, devices: devices})
		if _, err := srv.Write(append(appendHeader(nil, OpHelloReply, f.Tag, len(p)), p...)); err != nil {
			return
		}
		for {
			f, err := ReadFrame(srv, nil)
			if err != nil {
				return
			}
			if out := reply(f); out != nil {
				if _, err := srv.Write(out); err != nil {
					return
				}
			}
		}
	}()
	c, err := newClient(cli, "pipe", 5*time.Second, Version)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(); <-done })
	return c
}

// u64Frame is a reply of op whose payload is v.
func u64Frame(op Op, tag uint32, v uint64) []byte {
	return binary.LittleEndian.AppendUint64(appendHeader(nil, op, tag, u64ReplySize), v)
}

// trn2 is one Trn2 device, whose host address bit is bit 46.
var trn2 = []DeviceInfo{{Identity: hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: hwarch.DeviceTrn2}, Connected: []int{}}}

// unknown is one device of no generation the runtime knows.
var unknown = []DeviceInfo{{Identity: hwarch.PCIIdentity{Vendor: 0xFFFF, Device: 0xFFFF}, Connected: []int{}}}

// TestHostAllocReplyChecked: a HOST_ALLOC reply naming a buffer the served
// device cannot have allocated — not at a multiple of the alignment asked,
// ending past 2^64, or reaching the device's host address bit (where the
// DMA address pa | bit no longer names it) — is a protocol violation: the
// call fails and the connection is given up (which frees the buffer on the
// server), instead of handing the runtime an address its DMA would
// misplace.
func TestHostAllocReplyChecked(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pa          uint64
		size, align uint64
		devices     []DeviceInfo
		want        string
	}{
		{"unaligned", 0x1_0000_0040, 4096, 4096, trn2, "not a multiple of the alignment 4096"},
		{"wraps", ^uint64(0) &^ 0xFFF, 8192, 4096, trn2, "passes 2^64"},
		{"past the host bit", 1<<46 - 4096, 8192, 4096, trn2, "host address bit"},
		{"at the host bit", 1 << 46, 64, 64, trn2, "host address bit"},
		{"wraps, unknown device", ^uint64(0) - 63, 128, 64, unknown, "passes 2^64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hostileServer(t, tc.devices, func(f Frame) []byte { return u64Frame(OpHostAllocReply, f.Tag, tc.pa) })
			d, err := c.Device(0)
			require.NoError(t, err)
			pa, err := d.HostAlloc(tc.size, tc.align)
			require.ErrorIs(t, err, ErrProtocol, "HostAlloc = %#x", pa)
			require.ErrorContains(t, err, tc.want)
			_, err = d.HostAlloc(tc.size, tc.align)
			require.ErrorIs(t, err, ndl.ErrClosed, "the connection is given up")
		})
	}
	// what a served device may hand out still passes: the last aligned
	// buffer below the host bit, and any address of a device of unknown
	// generation that does not wrap
	for _, tc := range []struct {
		pa, size, align uint64
		devices         []DeviceInfo
	}{
		{1<<46 - 4096, 4096, 4096, trn2},
		{0x1_0000_0000, 1, 1, trn2},
		{1 << 60, 64, 64, unknown},
	} {
		c := hostileServer(t, tc.devices, func(f Frame) []byte { return u64Frame(OpHostAllocReply, f.Tag, tc.pa) })
		d, err := c.Device(0)
		require.NoError(t, err)
		pa, err := d.HostAlloc(tc.size, tc.align)
		require.NoError(t, err)
		require.Equal(t, tc.pa, pa)
	}
}

// TestClockReplyChecked: the served device's clock never goes back and
// never passes units.MaxTimePS (ndl.Clock, ndl.Sleeper); a CLOCK reply
// that does either is a protocol violation and gives the connection up,
// instead of handing ndl.ElapsedPS a start after its end (which it would
// report as a duration near 2^64 ps) or a time no simulated clock reaches.
func TestClockReplyChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clock []uint64
		want  string
	}{
		{"backwards", []uint64{5000, 4999}, "went back"},
		{"past 2^62", []uint64{1<<62 + 1}, "passes"},
		{"to 2^64-1", []uint64{1000, ^uint64(0)}, "passes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			c := hostileServer(t, trn2, func(f Frame) []byte {
				v := tc.clock[min(i, len(tc.clock)-1)]
				i++
				return u64Frame(OpClockReply, f.Tag, v)
			})
			d, err := c.Device(0)
			require.NoError(t, err)
			for _, want := range tc.clock[:len(tc.clock)-1] {
				ps, err := d.ClockPS()
				require.NoError(t, err)
				require.Equal(t, want, ps)
			}
			ps, err := d.ClockPS()
			require.ErrorIs(t, err, ErrProtocol, "ClockPS = %d", ps)
			require.ErrorContains(t, err, tc.want)
			_, err = d.ClockPS()
			require.ErrorIs(t, err, ndl.ErrClosed, "the connection is given up")
		})
	}
	// a clock that stands still, or reaches 2^62 exactly, is a clock; so is
	// each device's own (one device's time says nothing of another's)
	two := []DeviceInfo{trn2[0], trn2[0]}
	clocks := []uint64{7, 7, 1 << 62, 3}
	i := 0
	c := hostileServer(t, two, func(f Frame) []byte {
		v := clocks[i]
		i++
		return u64Frame(OpClockReply, f.Tag, v)
	})
	for k, dev := range []int{0, 0, 0, 1} {
		d, err := c.Device(dev)
		require.NoError(t, err)
		ps, err := d.ClockPS()
		require.NoError(t, err)
		require.Equal(t, clocks[k], ps)
	}
}

// TestServerErrorTextEscaped: an ERROR's text is the server's, any bytes;
// the client's error carries it verbatim when it is printable UTF-8 (lines
// and tabs included), and otherwise with the control characters — a
// terminal escape sequence that would retitle or clear the terminal the
// error is printed on — and invalid bytes escaped, as Go quotes them.
func TestServerErrorTextEscaped(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"out of range: 0xff8 ≥ 1 GiB\n\tsecond line", "server: out of range: 0xff8 ≥ 1 GiB\n\tsecond line"},
		{"\x1b]0;owned\a\x1b[2J\rdone \xff\u202e!", `server: \x1b]0;owned\a\x1b[2J\rdone \xff\u202e!`},
	} {
		c := hostileServer(t, trn2, func(f Frame) []byte {
			return appendError(nil, f.Tag, errorMsg{code: codeBAROffset, text: tc.text})
		})
		d, err := c.Device(0)
		require.NoError(t, err)
		_, err = d.Read32(0, 0)
		require.ErrorIs(t, err, ndl.ErrBAROffset)
		require.Contains(t, err.Error(), tc.want)
		require.NotContains(t, err.Error(), "\x1b")
	}
}

// TestWrongReplyRefusedAtItsHeader: a reply that cannot answer the request
// in flight — another op, another tag, or a payload length other than the
// one the request asks for — is refused at its 12-byte header. The client
// used to read the payload the header declared (up to 1 MiB) first, and
// to wait for it until the timeout when the server never sent it; now the
// call fails at once with ErrProtocol naming the header's fault, the reply
// buffer does not grow, and the connection is given up.
func TestWrongReplyRefusedAtItsHeader(t *testing.T) {
	big := 4 * MaxWords // a READ reply's largest data
	for _, tc := range []struct {
		name  string
		call  func(d *Device) error
		reply func(tag uint32) []byte // a header whose payload never comes
		want  string
	}{
		{"READ reply longer than the read", func(d *Device) error { _, err := d.Read32(0, 0); return err },
			func(tag uint32) []byte { return appendReadReplyHead(nil, OpReadReply, tag, MaxWords) },
			"READ reply declares a 1048580-byte payload, want 8"},
		{"READ reply to a WRITE", func(d *Device) error { return d.Write32(0, 0, 1) },
			func(tag uint32) []byte { return appendReadReplyHead(nil, OpReadReply, tag, MaxWords) },
			"got READ reply, want WRITE reply"},
		{"HOST_READ reply of another tag", func(d *Device) error { return d.HostRead(0x10000, make([]byte, 4)) },
			func(tag uint32) []byte { return appendHeader(nil, OpHostReadReply, tag+1, readReplyHead+big) },
			"HOST_READ reply tag"},
		{"CLOCK reply of a megabyte", func(d *Device) error { _, err := d.ClockPS(); return err },
			func(tag uint32) []byte { return appendHeader(nil, OpClockReply, tag, MaxPayloadSize) },
			"want 8"},
		{"ERROR longer than any", func(d *Device) error { return d.Sleep(time.Microsecond) },
			func(tag uint32) []byte { return appendHeader(nil, OpError, tag, MaxPayloadSize) },
			"ERROR reply declares"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hostileServer(t, trn2, func(f Frame) []byte { return tc.reply(f.Tag) })
			d, err := c.Device(0)
			require.NoError(t, err)
			start := time.Now()
			err = tc.call(d)
			require.ErrorIs(t, err, ErrProtocol)
			require.ErrorContains(t, err, tc.want)
			require.Less(t, time.Since(start), time.Second, "refused at the header, not after waiting for the payload")
			require.LessOrEqual(t, cap(c.rbuf), 4096, "the reply buffer did not grow for the declared payload")
			_, err = d.Read32(0, 0)
			require.ErrorIs(t, err, ndl.ErrClosed, "the connection is given up")
		})
	}
}
