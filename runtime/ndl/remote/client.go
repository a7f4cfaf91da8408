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
	devices []DeviceInfo
	closed  atomic.Bool // Close was called

	mu     sync.Mutex // one request in flight; guards the fields below
	broken error      // why the connection was given up, or nil
	tag    uint32     // tag of the last request
	wbuf   []byte     // request frame
	rbuf   []byte     // reply frame
}

// Dial connects to a server at addr (unix:PATH or tcp:HOST:PORT, see
// ParseAddress) and does the handshake: HELLO with Magic and Version, and
// the server's device table back. A server speaking another version refuses
// with an error wrapping ErrVersion that names both versions.
func Dial(addr string, opts ClientOptions) (*Client, error) {
	return dial(addr, opts, Version)
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
	c := &Client{addr: addr, conn: conn, timeout: timeout, wbuf: make([]byte, 0, 256), rbuf: make([]byte, 0, 4096)}
	if err := c.handshake(version); err != nil {
		if cerr := conn.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, fmt.Errorf("remote: close %s: %w", addr, cerr))
		}
		return nil, err
	}
	return c, nil
}

// handshake sends HELLO and decodes the reply into c.devices.
func (c *Client) handshake(version uint16) error {
	c.wbuf = appendHello(c.wbuf[:0], 0, hello{magic: Magic, version: version})
	f, err := c.exchange()
	if err != nil {
		var se *serverError
		if errors.As(err, &se) && se.code == codeVersion {
			return fmt.Errorf("remote: dial %s: client speaks protocol version %d, server refused: %w", c.addr, version, err)
		}
		return fmt.Errorf("remote: dial %s: handshake: %w", c.addr, err)
	}
	if f.Op != OpHelloReply {
		return fmt.Errorf("remote: dial %s: handshake: got %s, want HELLO reply: %w", c.addr, f.Op, ErrProtocol)
	}
	r, err := decodeHelloReply(f.Payload, version)
	if err != nil {
		return fmt.Errorf("remote: dial %s: %w", c.addr, err)
	}
	c.devices = r.devices
	return nil
}

// exchange sends the request in c.wbuf (its tag is c.tag) and reads the
// reply, within the timeout; c.mu is held. An ERROR reply is returned as a
// *serverError. Any failure but an ERROR reply to a well-formed request
// closes the connection and is remembered in c.broken.
func (c *Client) exchange() (Frame, error) {
	if c.timeout > 0 {
		if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
			return Frame{}, c.fail(fmt.Errorf("set deadline: %w", err))
		}
	}
	if _, err := c.conn.Write(c.wbuf); err != nil {
		return Frame{}, c.fail(err)
	}
	f, err := readFrame(c.conn, &c.rbuf)
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
	if f.Tag != c.tag {
		return Frame{}, c.fail(fmt.Errorf("%s tag %d, want %d: %w", f.Op, f.Tag, c.tag, ErrProtocol))
	}
	return f, nil
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

// read reads len(dst) ≤ MaxWords words with one READ.
func (c *Client) read(device int, bar uint8, off uint64, dst []uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	c.tag++
	c.wbuf = appendRWHead(c.wbuf[:0], OpRead, c.tag, uint16(device), bar, uint32(len(dst)), off, 0)
	f, err := c.exchange()
	if err != nil {
		return err
	}
	if f.Op != OpReadReply {
		return c.fail(fmt.Errorf("got %s, want READ reply: %w", f.Op, ErrProtocol))
	}
	data, err := decodeReadReply(f.Payload)
	if err != nil {
		return c.fail(err)
	}
	if len(data) != 4*len(dst) {
		return c.fail(fmt.Errorf("READ reply carries %d words, want %d: %w", len(data)/4, len(dst), ErrProtocol))
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
	if err := c.usable(); err != nil {
		return err
	}
	c.tag++
	c.wbuf = appendRWHead(c.wbuf[:0], OpWrite, c.tag, uint16(device), bar, uint32(len(src)), off, 4*len(src))
	for _, w := range src {
		c.wbuf = binary.LittleEndian.AppendUint32(c.wbuf, w)
	}
	f, err := c.exchange()
	if err != nil {
		return err
	}
	if f.Op != OpWriteReply {
		return c.fail(fmt.Errorf("got %s, want WRITE reply: %w", f.Op, ErrProtocol))
	}
	if err := decodeEmpty(f.Op, f.Payload); err != nil {
		return c.fail(err)
	}
	return nil
}

// sleep sends one SLEEP.
func (c *Client) sleep(device int, ns uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	c.tag++
	c.wbuf = appendSleep(c.wbuf[:0], c.tag, sleepRequest{device: uint16(device), ns: ns})
	f, err := c.exchange()
	if err != nil {
		return err
	}
	if f.Op != OpSleepReply {
		return c.fail(fmt.Errorf("got %s, want SLEEP reply: %w", f.Op, ErrProtocol))
	}
	if err := decodeEmpty(f.Op, f.Payload); err != nil {
		return c.fail(err)
	}
	return nil
}

// Device is a handle on one device of a server; it implements ndl.Device
// and ndl.Sleeper. Identity and BARSize answer from the handshake's device
// table (also after Close); the other calls are requests over the client's
// connection. It is safe for concurrent use.
type Device struct {
	c      *Client
	index  int
	info   DeviceInfo
	closed atomic.Bool
}

// Device implements ndl.Device and ndl.Sleeper.
var (
	_ ndl.Device  = (*Device)(nil)
	_ ndl.Sleeper = (*Device)(nil)
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

// Sleep lets d pass on the served device's clock (one SLEEP request; a
// negative d sleeps 0). A device without its own clock answers with an
// error wrapping ErrUnsupported: the server never sleeps on the wall clock.
func (d *Device) Sleep(dur time.Duration) error {
	if d.closed.Load() {
		return fmt.Errorf("remote: device %d sleep %v: handle closed: %w", d.index, dur, ndl.ErrClosed)
	}
	if err := d.c.sleep(d.index, uint64(max(dur, 0))); err != nil {
		return fmt.Errorf("remote: device %d sleep %v: %w", d.index, dur, err)
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
