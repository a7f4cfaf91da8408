package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// DefaultTimeout is the per-request timeout when ClientOptions.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// ClientOptions tunes Dial.
type ClientOptions struct {
	// Timeout bounds the dial with its handshake and then each request's
	// round trip. 0 means DefaultTimeout; a negative value means no limit.
	// A request that times out leaves the connection closed (a late reply
	// could not be told from the next one's).
	Timeout time.Duration
}

// Client is a connection to a server and the device table it announced.
// It is safe for concurrent use: requests from any number of goroutines
// are serialised, one in flight at a time. After a connection failure
// (I/O error, timeout, protocol violation) the connection is closed and
// every later call fails with an error wrapping the failure and
// ndl.ErrClosed.
type Client struct {
	addr    string
	conn    net.Conn
	timeout time.Duration // ≤ 0: none
	version uint16        // the connection's protocol version
	devices []DeviceInfo
	closed  atomic.Bool // Close was called

	mu     sync.Mutex // one request in flight; guards the fields below
	broken error      // why the connection was given up, or nil
	tag    uint32     // tag of the last request
	wbuf   []byte     // request frame
	rbuf   []byte     // reply frame
	clocks []uint64   // per device: the latest clock a CLOCK reply gave (0 before one)
}

// Dial connects to a server at addr (unix:PATH or tcp:HOST:PORT, see
// ParseAddress) and does the handshake: HELLO with Magic and Version, and
// the server's device table back. When the server refuses Version (a
// version 1 server), Dial connects again speaking MinVersion: BAR and SLEEP
// requests work as before, and the host-memory calls fail with an error
// wrapping ErrUnsupported. A server that refuses both fails Dial with an
// error wrapping ErrVersion that names the versions.
func Dial(addr string, opts ClientOptions) (*Client, error) {
	c, err := dial(addr, opts, Version)
	if !errors.Is(err, ErrVersion) || !refused(err) {
		return c, err
	}
	c, err1 := dial(addr, opts, MinVersion)
	if err1 != nil {
		return nil, fmt.Errorf("%w; and then: %w", err, err1)
	}
	return c, nil
}

// refused reports whether err is the server's ERROR refusing the HELLO's
// version (not a reply in a version the client does not speak).
func refused(err error) bool {
	var se *serverError
	return errors.As(err, &se) && se.code == codeVersion
}

// dial is Dial speaking protocol version version (tests pose as others).
func dial(addr string, opts ClientOptions, version uint16) (*Client, error) {
	network, address, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	var d net.Dialer
	if timeout > 0 {
		d.Timeout = timeout
	}
	conn, err := d.Dial(network, address)
	if err != nil {
		return nil, fmt.Errorf("remote: dial %s: %w", addr, err)
	}
	return newClient(conn, addr, timeout, version)
}

// newClient does the handshake on conn, speaking protocol version
// version, and returns the client, or closes conn and returns why not.
func newClient(conn net.Conn, addr string, timeout time.Duration, version uint16) (*Client, error) {
	c := &Client{addr: addr, conn: conn, timeout: timeout, wbuf: make([]byte, 0, 256), rbuf: make([]byte, 0, 4096)}
	if err := c.handshake(version); err != nil {
		if cerr := conn.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, fmt.Errorf("remote: close %s: %w", addr, cerr))
		}
		return nil, err
	}
	return c, nil
}

// replyShape is the reply a request may get besides an ERROR: its op and
// the bounds of its payload's length.
type replyShape struct {
	op       Op
	min, max int
}

// maxHelloReply bounds the payload of a HELLO reply: MaxDevices device
// records, each with the longest name and connected list.
const maxHelloReply = helloReplyHead + MaxDevices*(deviceHead+MaxNameLen+2*MaxConnected)

// maxErrorReply bounds the payload of an ERROR reply.
const maxErrorReply = errorHead + MaxErrorText

// handshake sends HELLO and decodes the reply into c.devices.
func (c *Client) handshake(version uint16) error {
	c.wbuf = appendHello(c.wbuf[:0], 0, hello{magic: Magic, version: version})
	f, err := c.exchange(replyShape{op: OpHelloReply, max: maxHelloReply})
	if err != nil {
		var se *serverError
		if errors.As(err, &se) && se.code == codeVersion {
			return fmt.Errorf("remote: dial %s: client speaks protocol version %d, server refused: %w", c.addr, version, err)
		}
		return fmt.Errorf("remote: dial %s: handshake: %w", c.addr, err)
	}
	r, err := decodeHelloReply(f.Payload, version)
	if err != nil {
		return fmt.Errorf("remote: dial %s: %w", c.addr, err)
	}
	c.devices, c.version = r.devices, version
	c.clocks = make([]uint64, len(r.devices))
	return nil
}

// Version returns the protocol version the connection speaks.
func (c *Client) Version() uint16 { return c.version }

// exchange sends the request in c.wbuf (its tag is c.tag) and reads the
// reply, within the timeout; c.mu is held. The reply must be want or an
// ERROR: a header that cannot be either (another op, another tag, a
// payload length outside want's bounds or past an ERROR's largest) is
// refused before its payload is read, so a wrong reply costs a header, not
// the megabyte it may declare. An ERROR reply is returned as a
// *serverError. Any failure but an ERROR reply to a well-formed request
// closes the connection and is remembered in c.broken.
func (c *Client) exchange(want replyShape) (Frame, error) {
	if c.timeout > 0 {
		if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
			return Frame{}, c.fail(fmt.Errorf("set deadline: %w", err))
		}
	}
	if _, err := c.conn.Write(c.wbuf); err != nil {
		return Frame{}, c.fail(err)
	}
	f, err := readFrameGrow(c.conn, &c.rbuf, growFrame, func(length int, op Op, tag uint32) error {
		return c.acceptReply(want, length, op, tag)
	})
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("the server closed the connection without replying: %w", err)
		}
		return Frame{}, c.fail(err)
	}
	if f.Op == OpError {
		e, err := decodeError(f.Payload)
		if err != nil {
			return Frame{}, c.fail(err)
		}
		se := &serverError{code: e.code, text: e.text}
		if e.code == codeProtocol || e.code == codeVersion {
			return Frame{}, c.fail(se) // the server closes the connection
		}
		if f.Tag != c.tag {
			return Frame{}, c.fail(fmt.Errorf("ERROR reply tag %d, want %d: %w", f.Tag, c.tag, ErrProtocol))
		}
		return Frame{}, se
	}
	return f, nil // acceptReply checked its op, tag and length
}

// acceptReply checks the header of the reply to the request in flight
// (tag c.tag), which must be want or an ERROR; c.mu is held. An ERROR's tag
// is checked once its code is known: the server closes the connection
// after a protocol or version ERROR, whatever request it was reading.
func (c *Client) acceptReply(want replyShape, length int, op Op, tag uint32) error {
	switch {
	case op == OpError:
		if length > maxErrorReply {
			return fmt.Errorf("ERROR reply declares a %d-byte payload, at most %d: %w", length, maxErrorReply, ErrProtocol)
		}
	case op != want.op:
		return fmt.Errorf("got %s, want %s: %w", op, want.op, ErrProtocol)
	case tag != c.tag:
		return fmt.Errorf("%s tag %d, want %d: %w", op, tag, c.tag, ErrProtocol)
	case length < want.min || length > want.max:
		if want.min == want.max {
			return fmt.Errorf("%s declares a %d-byte payload, want %d: %w", op, length, want.min, ErrProtocol)
		}
		return fmt.Errorf("%s declares a %d-byte payload, want %d to %d: %w", op, length, want.min, want.max, ErrProtocol)
	}
	return nil
}

// fail gives the connection up after err and returns the error to report:
// err, or, when Close caused it, an error wrapping ndl.ErrClosed.
func (c *Client) fail(err error) error {
	if c.closed.Load() {
		return fmt.Errorf("client closed: %w", ndl.ErrClosed)
	}
	if c.broken == nil {
		c.broken = err
		_ = c.conn.Close() // unusable now; later calls report c.broken
	}
	return err
}

// usable returns nil when a request may be sent; c.mu is held.
func (c *Client) usable() error {
	if c.closed.Load() {
		return fmt.Errorf("client closed: %w", ndl.ErrClosed)
	}
	if c.broken != nil {
		return fmt.Errorf("connection closed after an earlier failure (%w): %w", c.broken, ndl.ErrClosed)
	}
	return nil
}

// Devices returns the devices the server announced, in index order (a copy).
func (c *Client) Devices() []DeviceInfo {
	out := make([]DeviceInfo, len(c.devices))
	for i, d := range c.devices {
		out[i] = d
		out[i].Connected = append([]int(nil), d.Connected...)
	}
	return out
}

// Device returns a new handle on device i of the server. Handles are
// independent: closing one leaves the others and the connection open.
// After Close it fails with an error wrapping ndl.ErrClosed; an index out
// of range wraps ErrNoDevice.
func (c *Client) Device(i int) (*Device, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("remote: %s: device %d: client closed: %w", c.addr, i, ndl.ErrClosed)
	}
	if i < 0 || i >= len(c.devices) {
		return nil, fmt.Errorf("remote: %s: device %d: %w (the server exports %d)", c.addr, i, ErrNoDevice, len(c.devices))
	}
	return &Device{c: c, index: i, info: c.devices[i]}, nil
}

// Close closes the connection, interrupting a request in flight; every
// later call on the client or any of its devices fails with an error
// wrapping ndl.ErrClosed, as does a second Close.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return fmt.Errorf("remote: close %s: %w", c.addr, ndl.ErrClosed)
	}
	if err := c.conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("remote: close %s: %w", c.addr, err)
	}
	return nil
}

// request sends the frame build appends to c.wbuf (with the next tag) and
// returns the reply, which must be of want's op and payload length; c.mu
// is held throughout, so the reply's payload stays valid until the caller
// returns.
func (c *Client) request(want replyShape, build func(dst []byte, tag uint32) []byte) (Frame, error) {
	if err := c.usable(); err != nil {
		return Frame{}, err
	}
	if req := want.op &^ 0x80; req.since() > c.version {
		return Frame{}, fmt.Errorf("%s needs protocol version %d; the connection speaks version %d: %w", req, req.since(), c.version, ErrUnsupported)
	}
	c.tag++
	c.wbuf = build(c.wbuf[:0], c.tag)
	return c.exchange(want)
}

// requestEmpty is request for a reply with an empty payload.
func (c *Client) requestEmpty(want Op, build func(dst []byte, tag uint32) []byte) error {
	f, err := c.request(replyShape{op: want}, build)
	if err != nil {
		return err
	}
	if err := decodeEmpty(f.Op, f.Payload); err != nil {
		return c.fail(err)
	}
	return nil
}

// requestRead is request for a READ or HOST_READ reply (want) carrying n
// bytes of data, which it returns.
func (c *Client) requestRead(want Op, n int, build func(dst []byte, tag uint32) []byte) ([]byte, error) {
	size := readReplyHead + n // the count, then n bytes of data
	f, err := c.request(replyShape{op: want, min: size, max: size}, build)
	if err != nil {
		return nil, err
	}
	data, err := decodeReadReply(f.Op, f.Payload)
	if err != nil {
		return nil, c.fail(err)
	}
	if len(data) != n {
		return nil, c.fail(fmt.Errorf("%s carries %d bytes, want %d: %w", f.Op, len(data), n, ErrProtocol))
	}
	return data, nil
}

// read reads len(dst) ≤ MaxWords words with one READ.
func (c *Client) read(device int, bar uint8, off uint64, dst []uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, err := c.requestRead(OpReadReply, 4*len(dst), func(b []byte, tag uint32) []byte {
		return appendRWHead(b, OpRead, tag, uint16(device), bar, uint32(len(dst)), off, 0)
	})
	if err != nil {
		return err
	}
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint32(data[4*i:])
	}
	return nil
}

// write writes len(src) ≤ MaxWords words with one WRITE.
func (c *Client) write(device int, bar uint8, off uint64, src []uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requestEmpty(OpWriteReply, func(b []byte, tag uint32) []byte {
		b = appendRWHead(b, OpWrite, tag, uint16(device), bar, uint32(len(src)), off, 4*len(src))
		for _, w := range src {
			b = binary.LittleEndian.AppendUint32(b, w)
		}
		return b
	})
}

// sleep sends one SLEEP.
func (c *Client) sleep(device int, ns uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requestEmpty(OpSleepReply, func(b []byte, tag uint32) []byte {
		return appendSleep(b, tag, sleepRequest{device: uint16(device), ns: ns})
	})
}

// requestU64 is request for a reply whose payload is one u64 (want:
// HOST_ALLOC reply, CLOCK reply), which it returns.
func (c *Client) requestU64(want Op, build func(dst []byte, tag uint32) []byte) (uint64, error) {
	f, err := c.request(replyShape{op: want, min: u64ReplySize, max: u64ReplySize}, build)
	if err != nil {
		return 0, err
	}
	v, err := decodeU64Reply(f.Op, f.Payload)
	if err != nil {
		return 0, c.fail(err)
	}
	return v, nil
}

// hostAlloc sends one HOST_ALLOC and returns the address, which must name
// a buffer the served device can have allocated (checkHostAlloc).
func (c *Client) hostAlloc(device int, size, align uint64) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pa, err := c.requestU64(OpHostAllocReply, func(b []byte, tag uint32) []byte {
		return appendHostAlloc(b, tag, hostRequest{device: uint16(device), size: size, align: align})
	})
	if err != nil {
		return 0, err
	}
	if err := c.checkHostAlloc(device, pa, size, align); err != nil {
		// The buffer is the connection's: giving the connection up frees it.
		return 0, c.fail(err)
	}
	return pa, nil
}

// checkHostAlloc refuses a HOST_ALLOC reply pa for size bytes at align
// that no served device's allocator makes (ndl.HostMemory): an address not
// a multiple of align (a power of two), a buffer whose end passes 2^64,
// or, on a device of a known generation, one that reaches its host
// address bit, where the DMA address the runtime builds (pa | the bit)
// would no longer name it.
func (c *Client) checkHostAlloc(device int, pa, size, align uint64) error {
	switch {
	case align != 0 && align&(align-1) == 0 && pa&(align-1) != 0:
		return fmt.Errorf("HOST_ALLOC reply address %#x is not a multiple of the alignment %d asked for: %w", pa, align, ErrProtocol)
	case pa+size < pa:
		return fmt.Errorf("HOST_ALLOC reply address %#x: a buffer of %d bytes there passes 2^64: %w", pa, size, ErrProtocol)
	}
	g, err := c.devices[device].Identity.Generation()
	if err != nil {
		return nil // a device the runtime does not drive: no host window known
	}
	if bit := hwarch.MustGeometry(g).HostAddressBit; bit != 0 && pa+size > bit {
		return fmt.Errorf("HOST_ALLOC reply address %#x: a buffer of %d bytes there reaches the %s's host address bit %#x: %w", pa, size, g, bit, ErrProtocol)
	}
	return nil
}

// clock sends one CLOCK and returns the picoseconds. A device's clock
// never goes back and never passes units.MaxTimePS (ndl.Clock,
// ndl.Sleeper): a reply that does either is ErrProtocol and gives the
// connection up.
func (c *Client) clock(device int) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, err := c.requestU64(OpClockReply, func(b []byte, tag uint32) []byte { return appendClock(b, tag, uint16(device)) })
	if err != nil {
		return 0, err
	}
	switch {
	case ps > units.MaxTimePS:
		return 0, c.fail(fmt.Errorf("CLOCK reply %d ps passes the latest time a device's clock reaches, %d ps: %w", ps, units.MaxTimePS, ErrProtocol))
	case ps < c.clocks[device]:
		return 0, c.fail(fmt.Errorf("CLOCK reply %d ps: the device's clock went back from %d ps: %w", ps, c.clocks[device], ErrProtocol))
	}
	c.clocks[device] = ps
	return ps, nil
}

// hostFree sends one HOST_FREE.
func (c *Client) hostFree(device int, pa uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requestEmpty(OpHostFreeReply, func(b []byte, tag uint32) []byte {
		return appendHostFree(b, tag, hostRequest{device: uint16(device), addr: pa})
	})
}

// hostRead reads len(dst) ≤ MaxHostBytes bytes with one HOST_READ.
func (c *Client) hostRead(device int, pa uint64, dst []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, err := c.requestRead(OpHostReadReply, len(dst), func(b []byte, tag uint32) []byte {
		return appendRWHead(b, OpHostRead, tag, uint16(device), 0, uint32(len(dst)), pa, 0)
	})
	if err != nil {
		return err
	}
	copy(dst, data)
	return nil
}

// hostWrite writes len(src) ≤ MaxHostBytes bytes with one HOST_WRITE.
func (c *Client) hostWrite(device int, pa uint64, src []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requestEmpty(OpHostWriteReply, func(b []byte, tag uint32) []byte {
		return append(appendRWHead(b, OpHostWrite, tag, uint16(device), 0, uint32(len(src)), pa, len(src)), src...)
	})
}

// Device is a handle on one device of a server; it implements ndl.Device,
// ndl.Sleeper, and over protocol version 2 ndl.HostMemory (the served
// device's host memory) and ndl.Clock (its clock). Identity and BARSize answer from the handshake's device
// table (also after Close); the other calls are requests over the client's
// connection. It is safe for concurrent use.
type Device struct {
	c      *Client
	index  int
	info   DeviceInfo
	closed atomic.Bool
}

// Device implements ndl.Device, ndl.Sleeper, ndl.HostMemory and ndl.Clock.
var (
	_ ndl.Device     = (*Device)(nil)
	_ ndl.Sleeper    = (*Device)(nil)
	_ ndl.HostMemory = (*Device)(nil)
	_ ndl.Clock      = (*Device)(nil)
)

// Index returns the device's index on the server.
func (d *Device) Index() int { return d.index }

// Name returns the server's name for the device.
func (d *Device) Name() string { return d.info.Name }

// Identity returns the PCI identity the server announced.
func (d *Device) Identity() hwarch.PCIIdentity { return d.info.Identity }

// BARSize returns the size of BAR bar the server announced (0 when absent
// or bar is not 0..5).
func (d *Device) BARSize(bar int) uint64 {
	if bar < 0 || bar >= NumBARs {
		return 0
	}
	return d.info.BARSizes[bar]
}

// ReadBAR reads len(dst) words from byte offset off of BAR bar, in READ
// requests of at most MaxWords words (a zero-length read is still sent, so
// the device checks bar and off). Errors the device returned wrap the same
// ndl sentinels (ErrBadBAR, ErrBAROffset, ErrAlignment, ErrClosed) as on the
// server. A failure part way leaves the earlier chunks read.
func (d *Device) ReadBAR(bar int, off uint64, dst []uint32) error {
	if err := d.check("read", bar, off, len(dst)); err != nil {
		return err
	}
	for start := 0; ; start += MaxWords {
		chunk := dst[start:min(start+MaxWords, len(dst))]
		o := off + 4*uint64(start)
		if err := d.c.read(d.index, uint8(bar), o, chunk); err != nil {
			return fmt.Errorf("remote: device %d read bar %d offset %#x count %d: %w", d.index, bar, o, len(chunk), err)
		}
		if start+len(chunk) >= len(dst) {
			return nil
		}
	}
}

// WriteBAR writes src as words at byte offset off of BAR bar, in WRITE
// requests of at most MaxWords words (a zero-length write is still sent).
// Errors as in ReadBAR; a failure part way leaves the earlier chunks
// written.
func (d *Device) WriteBAR(bar int, off uint64, src []uint32) error {
	if err := d.check("write", bar, off, len(src)); err != nil {
		return err
	}
	for start := 0; ; start += MaxWords {
		chunk := src[start:min(start+MaxWords, len(src))]
		o := off + 4*uint64(start)
		if err := d.c.write(d.index, uint8(bar), o, chunk); err != nil {
			return fmt.Errorf("remote: device %d write bar %d offset %#x count %d: %w", d.index, bar, o, len(chunk), err)
		}
		if start+len(chunk) >= len(src) {
			return nil
		}
	}
}

// check refuses, without a request, an access on a closed handle
// (ndl.ErrClosed), a bar the wire cannot carry (ndl.ErrBadBAR) and a range
// past 2^64 (ndl.ErrBAROffset).
func (d *Device) check(op string, bar int, off uint64, n int) error {
	switch {
	case d.closed.Load():
		return fmt.Errorf("remote: device %d %s bar %d offset %#x count %d: handle closed: %w", d.index, op, bar, off, n, ndl.ErrClosed)
	case bar < 0 || bar > math.MaxUint8:
		return fmt.Errorf("remote: device %d %s bar %d offset %#x count %d: %w", d.index, op, bar, off, n, ndl.ErrBadBAR)
	case uint64(n) > (math.MaxUint64-off)/4:
		return fmt.Errorf("remote: device %d %s bar %d offset %#x count %d: range passes 2^64: %w", d.index, op, bar, off, n, ndl.ErrBAROffset)
	}
	return nil
}

// Read32 reads the word at byte offset off of BAR bar.
func (d *Device) Read32(bar int, off uint64) (uint32, error) {
	var w [1]uint32
	err := d.ReadBAR(bar, off, w[:])
	return w[0], err
}

// Write32 writes one word at byte offset off of BAR bar.
func (d *Device) Write32(bar int, off uint64, v uint32) error {
	w := [1]uint32{v}
	return d.WriteBAR(bar, off, w[:])
}

// Sleep lets d pass on the served device's clock (one SLEEP request). A
// negative d, or one longer than units.MaxTimePS, is refused without a
// request, as the simulated device refuses it. A device without its own
// clock answers with an error wrapping ErrUnsupported: the server never
// sleeps on the wall clock.
func (d *Device) Sleep(dur time.Duration) error {
	if d.closed.Load() {
		return fmt.Errorf("remote: device %d sleep %v: handle closed: %w", d.index, dur, ndl.ErrClosed)
	}
	if _, err := units.DurationToPS("SLEEP.ns", dur); err != nil {
		return fmt.Errorf("remote: device %d: %w", d.index, err)
	}
	if err := d.c.sleep(d.index, uint64(dur)); err != nil {
		return fmt.Errorf("remote: device %d sleep %v: %w", d.index, dur, err)
	}
	return nil
}

// ClockPS reads the served device's clock in picoseconds: one CLOCK
// request. Over a version 1 connection, or for a device without a clock of
// its own, the error wraps ErrUnsupported. A reply before the last one this
// client read of the device, or past units.MaxTimePS, is ErrProtocol and
// gives the connection up.
func (d *Device) ClockPS() (uint64, error) {
	if err := d.open("clock"); err != nil {
		return 0, err
	}
	ps, err := d.c.clock(d.index)
	if err != nil {
		return 0, fmt.Errorf("remote: device %d clock: %w", d.index, err)
	}
	return ps, nil
}

// HostAlloc allocates size bytes of the served device's host memory (the
// memory its DMA engines reach through the host window) aligned to align,
// and returns its host physical address: one HOST_ALLOC request. Over a
// version 1 connection, or for a device without host memory, the error
// wraps ErrUnsupported. An address no served device hands out (not aligned,
// passing 2^64, reaching the device's host address bit) is ErrProtocol and
// gives the connection up.
func (d *Device) HostAlloc(size, align uint64) (uint64, error) {
	if err := d.open("host alloc"); err != nil {
		return 0, err
	}
	pa, err := d.c.hostAlloc(d.index, size, align)
	if err != nil {
		return 0, fmt.Errorf("remote: device %d host alloc %d bytes align %d: %w", d.index, size, align, err)
	}
	return pa, nil
}

// HostFree frees host memory HostAlloc returned: one HOST_FREE request.
func (d *Device) HostFree(pa uint64) error {
	if err := d.open("host free"); err != nil {
		return err
	}
	if err := d.c.hostFree(d.index, pa); err != nil {
		return fmt.Errorf("remote: device %d host free %#x: %w", d.index, pa, err)
	}
	return nil
}

// HostRead reads len(p) bytes of host memory at pa, in HOST_READ requests
// of at most MaxHostBytes; a failure part way leaves the earlier chunks
// read.
func (d *Device) HostRead(pa uint64, p []byte) error {
	return d.hostChunks("host read", pa, p, d.c.hostRead)
}

// HostWrite writes p to host memory at pa, in HOST_WRITE requests of at
// most MaxHostBytes; a failure part way leaves the earlier chunks written.
func (d *Device) HostWrite(pa uint64, p []byte) error {
	return d.hostChunks("host write", pa, p, d.c.hostWrite)
}

// hostChunks runs one host request per MaxHostBytes of p (one for an empty
// p, so the server checks the address).
func (d *Device) hostChunks(op string, pa uint64, p []byte, do func(device int, pa uint64, b []byte) error) error {
	if err := d.open(op); err != nil {
		return err
	}
	for start := 0; ; start += MaxHostBytes {
		chunk := p[start:min(start+MaxHostBytes, len(p))]
		a := pa + uint64(start)
		if err := do(d.index, a, chunk); err != nil {
			return fmt.Errorf("remote: device %d %s %#x count %d: %w", d.index, op, a, len(chunk), err)
		}
		if start+len(chunk) >= len(p) {
			return nil
		}
	}
}

// open refuses a call on a closed handle.
func (d *Device) open(op string) error {
	if d.closed.Load() {
		return fmt.Errorf("remote: device %d %s: handle closed: %w", d.index, op, ndl.ErrClosed)
	}
	return nil
}

// Close closes this handle only: later calls on it fail with an error
// wrapping ndl.ErrClosed (a second Close too). The connection, other
// handles and the served device stay open.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return fmt.Errorf("remote: device %d close: %w", d.index, ndl.ErrClosed)
	}
	return nil
}
