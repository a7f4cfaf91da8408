package remote

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// MaxHostAlign bounds a HOST_ALLOC's alignment: 1 GiB, far above any
// buffer the runtime asks for (its rings want 4 KiB).
const MaxHostAlign = 1 << 30

// hostBuf is a host buffer a connection allocated: its address, the size
// it asked for, and what it counts against the host limits (hostCharge).
type hostBuf struct {
	device             uint16
	base, size, charge uint64
}

// hostCharge returns what a buffer of size bytes at alignment align counts
// against the host memory limits. At an alignment up to the allocator's
// granule, its size. Above it, its size rounded up to the alignment: the
// whole align-sized slots of the window the buffer takes, where no other
// buffer of that alignment can go, so that a client asking for small
// buffers at large alignments pays for the window it takes from everyone
// (a 64-byte buffer at 1 GiB alignment counts 1 GiB, a 4 KiB one at 4 KiB
// alignment 4 KiB). The padding an allocator may skip before an aligned
// buffer is not charged: it holds no aligned slot and stays free for
// buffers of smaller alignments; charging it as the allocator happened to
// skip it would also make one connection's charge depend on what the
// others allocated. size ≤ 2^63−1 and align ≤ MaxHostAlign: no overflow.
func hostCharge(size, align, granule uint64) uint64 {
	if align > granule {
		return (size + align - 1) &^ (align - 1)
	}
	return size
}

// connHost is the host buffers one connection owns, by device and address.
// Only the connection that allocated a buffer may read, write or free it;
// it is freed when the connection ends.
type connHost struct {
	bufs  []hostBuf // sorted by device, then base
	bytes uint64    // the sum of their charges
}

// find returns the index of the buffer of device holding [pa, pa+n), or -1.
func (h *connHost) find(device uint16, pa, n uint64) int {
	i := sort.Search(len(h.bufs), func(i int) bool {
		b := h.bufs[i]
		return b.device > device || b.device == device && b.base > pa
	}) - 1
	if i < 0 {
		return -1
	}
	b := h.bufs[i]
	if b.device != device || pa-b.base > b.size || n > b.size-(pa-b.base) {
		return -1
	}
	return i
}

// insert records a new buffer.
func (h *connHost) insert(b hostBuf) {
	i := sort.Search(len(h.bufs), func(i int) bool {
		c := h.bufs[i]
		return c.device > b.device || c.device == b.device && c.base > b.base
	})
	h.bufs = slices.Insert(h.bufs, i, b)
	h.bytes += b.charge
}

// remove forgets buffer i.
func (h *connHost) remove(i int) {
	h.bytes -= h.bufs[i].charge
	h.bufs = slices.Delete(h.bufs, i, i+1)
}

// notOwned describes an access to host memory outside the connection's
// buffers.
func notOwned(op Op, device uint16, pa, n uint64) error {
	return fmt.Errorf("remote: %s: device %d: [%#x, +%d) is not in a host buffer this connection allocated: %w", op, device, pa, n, ErrNotOwned)
}

// host serves a HOST_ALLOC, HOST_FREE, HOST_READ or HOST_WRITE frame,
// leaving the reply in sc.wbuf. Only a malformed frame is returned as an
// error; refusals and the device's errors become ERROR replies.
func (sc *serverConn) host(f Frame) error {
	var (
		hr     hostRequest // HOST_ALLOC, HOST_FREE
		rw     rwRequest   // HOST_READ, HOST_WRITE
		device uint16
		err    error
	)
	if f.Op == OpHostAlloc || f.Op == OpHostFree {
		hr, err = decodeHost(f.Op, f.Payload)
		device = hr.device
	} else {
		rw, err = decodeRW(f.Op, f.Payload)
		device = rw.device
	}
	if err != nil {
		return err
	}
	e, hm := sc.hostMemory(f.Op, device)
	if e == nil {
		return nil
	}
	switch f.Op {
	case OpHostAlloc:
		err = sc.hostAlloc(f.Tag, e, hm, device, hr.size, hr.align)
	case OpHostFree:
		i := sc.owned.find(device, hr.addr, 0)
		if i < 0 || sc.owned.bufs[i].base != hr.addr {
			err = fmt.Errorf("remote: HOST_FREE: device %d: %#x is not a host buffer this connection allocated: %w", device, hr.addr, ErrNotOwned)
			break
		}
		e.mu.Lock()
		err = hm.HostFree(hr.addr)
		e.mu.Unlock()
		if err == nil {
			sc.s.releaseHost(sc.owned.bufs[i].charge)
			sc.owned.remove(i)
			sc.wbuf = appendHeader(sc.wbuf[:0], OpHostFreeReply, f.Tag, 0)
		}
	case OpHostWrite:
		if sc.owned.find(device, rw.offset, uint64(rw.count)) < 0 {
			err = notOwned(f.Op, device, rw.offset, uint64(rw.count))
			break
		}
		e.mu.Lock()
		err = hm.HostWrite(rw.offset, rw.data)
		e.mu.Unlock()
		if err == nil {
			sc.wbuf = appendHeader(sc.wbuf[:0], OpHostWriteReply, f.Tag, 0)
		}
	case OpHostRead: // straight into the reply frame
		if sc.owned.find(device, rw.offset, uint64(rw.count)) < 0 {
			err = notOwned(f.Op, device, rw.offset, uint64(rw.count))
			break
		}
		sc.wbuf = appendReadReplyHead(sc.reply(HeaderSize+readReplyHead+int(rw.count)), OpHostReadReply, f.Tag, rw.count)
		head := len(sc.wbuf)
		sc.wbuf = sc.wbuf[:head+int(rw.count)]
		clear(sc.wbuf[head:]) // a frame of the pool may hold another connection's bytes: none may leak
		e.mu.Lock()
		err = hm.HostRead(rw.offset, sc.wbuf[head:])
		e.mu.Unlock()
	}
	if err != nil {
		sc.replyError(err)
	}
	return nil
}

// hostAlloc checks a HOST_ALLOC against the limits, allocates and records
// the buffer as this connection's, and puts the reply in sc.wbuf.
func (sc *serverConn) hostAlloc(tag uint32, e *export, hm ndl.HostMemory, device uint16, size, align uint64) error {
	o := &sc.s.opts
	most := uint64(1<<63 - 1)
	if o.HostBytesPerClient > 0 {
		most = o.HostBytesPerClient
	}
	if _, err := units.Uint("HOST_ALLOC.size", size, 1, most); err != nil {
		if size > most {
			err = fmt.Errorf("%w (a client's host memory, --host-memory-per-client): %w", err, ErrLimit)
		}
		return fmt.Errorf("remote: HOST_ALLOC: device %d: %w", device, err)
	}
	if _, err := units.Uint("HOST_ALLOC.align", align, 1, MaxHostAlign); err != nil || align&(align-1) != 0 {
		if err == nil {
			err = fmt.Errorf("HOST_ALLOC.align %d: not a power of two", align)
		}
		return fmt.Errorf("remote: HOST_ALLOC: device %d: %w", device, err)
	}
	if o.HostBuffersPerClient > 0 && len(sc.owned.bufs) >= o.HostBuffersPerClient {
		return fmt.Errorf("remote: HOST_ALLOC: device %d: this connection holds %d host buffers, the most allowed (--host-buffers-per-client): %w",
			device, len(sc.owned.bufs), ErrLimit)
	}
	charge := hostCharge(size, align, o.HostGranule)
	if o.HostBytesPerClient > 0 && charge > o.HostBytesPerClient-sc.owned.bytes {
		return fmt.Errorf("remote: HOST_ALLOC: device %d: %d bytes more (%s) would pass this connection's host memory limit (%d of %d bytes in use, --host-memory-per-client): %w",
			device, charge, chargeParts(size, align, charge), sc.owned.bytes, o.HostBytesPerClient, ErrLimit)
	}
	if err := sc.s.reserveHost(charge); err != nil {
		return fmt.Errorf("remote: HOST_ALLOC: device %d: %s: %w", device, chargeParts(size, align, charge), err)
	}
	e.mu.Lock()
	pa, err := hm.HostAlloc(size, align)
	e.mu.Unlock()
	if err != nil {
		sc.s.releaseHost(charge)
		return err
	}
	sc.owned.insert(hostBuf{device: device, base: pa, size: size, charge: charge})
	sc.wbuf = appendHeader(sc.wbuf[:0], OpHostAllocReply, tag, u64ReplySize)
	sc.wbuf = binary.LittleEndian.AppendUint64(sc.wbuf, pa)
	return nil
}

// chargeParts says what a HOST_ALLOC's charge is made of, for a refusal.
func chargeParts(size, align, charge uint64) string {
	if charge == size {
		return fmt.Sprintf("a buffer of %d bytes", size)
	}
	return fmt.Sprintf("a buffer of %d bytes, rounded up to its alignment %d: the aligned space it takes", size, align)
}

// freeHost frees every host buffer the connection still owns (it is
// ending); a failure is logged, the budget released either way.
func (sc *serverConn) freeHost() {
	for _, b := range sc.owned.bufs {
		e := &sc.s.exports[b.device]
		hm := e.Device.(ndl.HostMemory) // it allocated the buffer
		e.mu.Lock()
		err := hm.HostFree(b.base)
		e.mu.Unlock()
		if err != nil {
			sc.s.logf("remote: freeing host buffer %#x of device %d after %s disconnected: %v", b.base, b.device, remoteName(sc.c), err)
		}
		sc.s.releaseHost(b.charge)
	}
	sc.owned = connHost{}
}

// reserveHost charges n bytes to the server's host memory limit.
func (s *Server) reserveHost(n uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lim := s.opts.HostBytes; lim > 0 && n > lim-s.hostBytes {
		return fmt.Errorf("%d bytes more would pass the server's host memory limit (%d of %d bytes in use by all clients, --host-memory): %w",
			n, s.hostBytes, lim, ErrLimit)
	}
	s.hostBytes += n
	return nil
}

// releaseHost returns n bytes to the server's host memory limit.
func (s *Server) releaseHost(n uint64) {
	s.mu.Lock()
	s.hostBytes -= n
	s.mu.Unlock()
}

// HostBytesInUse returns the bytes of host memory the server's clients hold
// allocated.
func (s *Server) HostBytesInUse() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hostBytes
}

// Clients returns the number of connections open.
func (s *Server) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// check refuses options no server can use: negative counts or timeouts,
// a host granule that is not a power of two up to MaxHostAlign, a clock
// limit past units.MaxTimePS.
func (o *ServerOptions) check() error {
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"IdleTimeout", o.IdleTimeout}, {"HandshakeTimeout", o.HandshakeTimeout}, {"WriteTimeout", o.WriteTimeout}} {
		if t.d < 0 {
			return fmt.Errorf("remote: new server: %s %v is negative", t.name, t.d)
		}
	}
	if o.MaxClients < 0 || o.HostBuffersPerClient < 0 {
		return fmt.Errorf("remote: new server: MaxClients %d, HostBuffersPerClient %d: want 0 (no limit) or more", o.MaxClients, o.HostBuffersPerClient)
	}
	if g := o.HostGranule; g&(g-1) != 0 || g > MaxHostAlign {
		return fmt.Errorf("remote: new server: HostGranule %d: want 0 (the default) or a power of two up to %d", g, MaxHostAlign)
	}
	if _, err := units.PS("ClockLimitPS", o.ClockLimitPS); err != nil {
		return fmt.Errorf("remote: new server: %w", err)
	}
	return nil
}
