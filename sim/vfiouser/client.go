package vfiouser

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"syscall"
)

// Client speaks the protocol to a server over a unix socket: a test and
// benchmark client (the real client is QEMU's vfio-user-pci). One
// goroutine at a time may use it. It answers the server's DMA_READ and
// DMA_WRITE requests from the memory given to ServeMemory.
type Client struct {
	c       *net.UnixConn
	rd      *bufio.Reader // replies and requests from the server (it sends no descriptors)
	id      uint16
	ram     []byte
	ramBase uint64
	buf     []byte
}

// Dial connects to the server listening at path.
func Dial(path string) (*Client, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("vfio-user client: %w", err)
	}
	return NewClient(c), nil
}

// NewClient speaks the protocol on c.
func NewClient(c *net.UnixConn) *Client { return &Client{c: c, rd: bufio.NewReaderSize(c, 64<<10)} }

// Close closes the connection.
func (tc *Client) Close() error { return tc.c.Close() }

// ServeMemory makes the client answer DMA_READ/DMA_WRITE requests for
// [base, base+len(ram)) from ram.
func (tc *Client) ServeMemory(base uint64, ram []byte) { tc.ramBase, tc.ram = base, ram }

// Version sends VERSION 0.1 with capabilities (a JSON object, or "" for
// none) and returns the server's reply payload.
func (tc *Client) Version(capabilities string) ([]byte, error) {
	p := binary.LittleEndian.AppendUint16(nil, VersionMajor)
	p = binary.LittleEndian.AppendUint16(p, VersionMinor)
	if capabilities != "" {
		p = append(append(p, capabilities...), 0)
	}
	_, r, err := tc.Call(CmdVersion, p)
	return r, err
}

// send writes one message.
func (tc *Client) send(h Header, payload []byte, fds ...int) error {
	b := Frame(&tc.buf, h, payload)
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	_, _, err := tc.c.WriteMsgUnix(b, oob, nil)
	return err
}

// recv reads one message.
func (tc *Client) recv() (Header, []byte, error) {
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(tc.rd, hb[:]); err != nil {
		return Header{}, nil, err
	}
	h, err := ParseHeader(hb[:])
	if err != nil {
		return h, nil, err
	}
	n := uint64(h.Size) - HeaderSize
	if n > maxClientPayload {
		return h, nil, fmt.Errorf("vfio-user client: %s message of %d bytes exceeds %d: %w", CommandName(h.Command), h.Size, maxClientPayload+HeaderSize, ErrLimit)
	}
	p, err := readGrowing(n, func(b []byte) error { _, err := io.ReadFull(tc.rd, b); return err })
	if err != nil {
		return h, nil, err
	}
	return h, p, nil
}

// maxClientPayload bounds the payload of a message the client reads: the
// largest a server's options let it send (a transfer of MaxOptionXfer
// bytes and its request's fields).
const maxClientPayload = MaxOptionXfer + 4096

// Call sends a command with fds and returns its reply, answering the
// server's DMA requests that come first. An error reply is returned as
// its syscall.Errno.
func (tc *Client) Call(cmd uint16, payload []byte, fds ...int) (Header, []byte, error) {
	tc.id++
	if err := tc.send(Header{ID: tc.id, Command: cmd}, payload, fds...); err != nil {
		return Header{}, nil, err
	}
	for {
		h, p, err := tc.recv()
		if err != nil {
			return h, p, err
		}
		if h.Type() == FlagCommand && (h.Command == CmdDMARead || h.Command == CmdDMAWrite) {
			tc.serveDMA(h, p)
			continue
		}
		if h.Type() != FlagReply || h.ID != tc.id || h.Command != cmd {
			return h, p, fmt.Errorf("reply %+v to command %d id %d", h, cmd, tc.id)
		}
		if h.Flags&FlagError != 0 {
			return h, p, syscall.Errno(h.Error)
		}
		return h, p, nil
	}
}

// serveDMA answers a DMA_READ or DMA_WRITE request: an address and a
// count, and for DMA_WRITE that many bytes. A request of another size is
// answered EINVAL, one outside the memory given to ServeMemory EFAULT.
func (tc *Client) serveDMA(h Header, p []byte) {
	rh := Header{ID: h.ID, Command: h.Command, Flags: FlagReply}
	fail := func(errno syscall.Errno) {
		rh.Flags |= FlagError
		rh.Error = uint32(errno)
		_ = tc.send(rh, nil)
	}
	if len(p) < sizeDMARW {
		fail(syscall.EINVAL)
		return
	}
	addr, n := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
	if h.Command == CmdDMAWrite && uint64(len(p)-sizeDMARW) != n || h.Command == CmdDMARead && len(p) != sizeDMARW {
		fail(syscall.EINVAL)
		return
	}
	if addr < tc.ramBase || addr-tc.ramBase > uint64(len(tc.ram)) || n > uint64(len(tc.ram))-(addr-tc.ramBase) {
		fail(syscall.EFAULT)
		return
	}
	at := tc.ram[addr-tc.ramBase:][:n]
	out := append([]byte(nil), p[:sizeDMARW]...)
	if h.Command == CmdDMARead {
		out = append(out, at...)
	} else {
		copy(at, p[sizeDMARW:])
	}
	_ = tc.send(rh, out)
}

// RegionRead reads n bytes at off of region.
func (tc *Client) RegionRead(region uint32, off uint64, n uint32) ([]byte, error) {
	_, p, err := tc.Call(CmdRegionRead, rwPayload(off, region, n, nil))
	if err != nil {
		return nil, err
	}
	if len(p) != 16+int(n) {
		return nil, fmt.Errorf("REGION_READ reply of %d bytes", len(p))
	}
	return p[16:], nil
}

// RegionWrite writes data at off of region.
func (tc *Client) RegionWrite(region uint32, off uint64, data []byte) error {
	_, _, err := tc.Call(CmdRegionWrite, rwPayload(off, region, uint32(len(data)), data))
	return err
}

func rwPayload(off uint64, region, count uint32, data []byte) []byte {
	p := binary.LittleEndian.AppendUint64(nil, off)
	p = binary.LittleEndian.AppendUint32(p, region)
	p = binary.LittleEndian.AppendUint32(p, count)
	return append(p, data...)
}
