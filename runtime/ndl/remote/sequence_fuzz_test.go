package remote

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
)

// The request-sequence fuzzer serves a simulated device (a test may wire
// sim to the runtime, DESIGN.md) with every server limit set, and drives it
// with sequences of requests over several connections, with disconnects
// and malformed frames among them. It checks that one connection never
// reaches another's host buffers and that, after any sequence, a fresh
// client finds the device working: a host round trip, BAR reads, and a
// clock below its maximum.

// seqLimits are the server limits the sequence fuzzer serves under.
var seqLimits = ServerOptions{
	MaxClients:           3,
	HostBytesPerClient:   1 << 20,
	HostBuffersPerClient: 8,
	HostBytes:            2 << 20,
	HostGranule:          sim.HostGranule,
}

// seqPages is the page budget of the fuzzed device: 2048 pages, 8 MiB.
const seqPages = 2048

// seqConn is one fuzzed connection.
type seqConn struct {
	c    net.Conn
	done chan struct{} // closed when the server's goroutine ends
	tag  uint32
}

// seqRun is the state of one fuzzed sequence.
type seqRun struct {
	t      *testing.T
	limits ServerOptions // the server's
	pages  int64         // the device's page budget
	srv    *Server
	dev    *sim.Device
	budget *sim.PageBudget
	conns  [3]*seqConn
	owner  map[uint64]seqBuf // live host buffers by address, as the replies told
	all    []chan struct{}
	// others bounds the host memory connections other than the fuzzed
	// ones (an observer's) may hold charged; the server's count is then
	// checked to lie within it above the fuzzed connections' charges.
	others uint64
}

// seqBuf is a host buffer a fuzzed connection allocated.
type seqBuf struct {
	conn        int
	size, align uint64
}

// seqReader hands out the fuzz input as numbers; past its end, zeros.
type seqReader struct{ b []byte }

func (r *seqReader) u8() byte {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *seqReader) u64() uint64 {
	var v [8]byte
	n := copy(v[:], r.b)
	r.b = r.b[n:]
	return binary.LittleEndian.Uint64(v[:])
}

func newSeqRun(t *testing.T) *seqRun {
	return newSeqRunWith(t, seqLimits, seqPages)
}

// newSeqRunWith is newSeqRun serving under limits with a page budget of
// pages.
func newSeqRunWith(t *testing.T, limits ServerOptions, pages int64) *seqRun {
	dev, err := sim.NewDevice(sim.DeviceConfig{Name: "seq", Generation: hwarch.Cayman, Ready: true})
	require.NoError(t, err)
	budget, err := sim.NewPageBudget(pages)
	require.NoError(t, err)
	require.NoError(t, dev.SetPageBudget(budget))
	srv, err := NewServer([]Export{{Device: dev, Name: "seq"}}, limits)
	require.NoError(t, err)
	return &seqRun{t: t, limits: limits, pages: pages, srv: srv, dev: dev, budget: budget, owner: map[uint64]seqBuf{}}
}

// open connects connection i and does the handshake; false if the server
// refused it (MaxClients is never reached with 3 connections, so that is a
// failure).
func (r *seqRun) open(i int) {
	client, server := net.Pipe()
	sc := &seqConn{c: client, done: make(chan struct{})}
	require.Equal(r.t, admitted, r.srv.track(server))
	go func() { r.srv.serveConn(server); close(sc.done) }()
	r.all = append(r.all, sc.done)
	f := r.exchange(sc, helloFrame(Version))
	require.Equal(r.t, OpHelloReply, f.Op, "handshake")
	r.conns[i] = sc
}

// exchange sends a request and returns the reply; an ERROR that closes the
// connection, or the server closing it, marks it closed (Op 0).
func (r *seqRun) exchange(sc *seqConn, req []byte) Frame {
	_ = sc.c.SetDeadline(time.Now().Add(10 * time.Second))
	// A pipe's write returns when the server has read it all, which it
	// does not for a frame it refuses at the header: write beside the read.
	wrote := make(chan error, 1)
	go func() { _, err := sc.c.Write(req); wrote <- err }()
	f, err := ReadFrame(sc.c, nil)
	if werr := <-wrote; werr != nil {
		require.ErrorIs(r.t, werr, io.ErrClosedPipe, "write")
	}
	if err != nil {
		require.True(r.t, errors.Is(err, io.EOF) || errors.Is(err, ErrProtocol) || errors.Is(err, io.ErrClosedPipe), "read: %v", err)
		return Frame{}
	}
	return f
}

// closeConn closes connection i and waits for the server to be done with
// it (its buffers freed).
func (r *seqRun) closeConn(i int) {
	sc := r.conns[i]
	if sc == nil {
		return
	}
	_ = sc.c.Close()
	select {
	case <-sc.done:
	case <-time.After(10 * time.Second):
		r.t.Fatal("the server did not end a closed connection")
	}
	for pa, b := range r.owner {
		if b.conn == i {
			delete(r.owner, pa)
		}
	}
	r.conns[i] = nil
}

// errorCode returns an ERROR reply's code, 0 for another reply.
func errorCode(f Frame) errCode {
	if f.Op != OpError || len(f.Payload) < 2 {
		return 0
	}
	return errCode(binary.LittleEndian.Uint16(f.Payload))
}

// hostAddr picks a host address: one of connection i's buffers, another
// connection's, or any.
func (r *seqRun) hostAddr(in *seqReader, i int) (pa uint64, other bool) {
	pick := in.u8()
	var mine, theirs []uint64
	for a, b := range r.owner {
		if b.conn == i {
			mine = append(mine, a)
		} else {
			theirs = append(theirs, a)
		}
	}
	switch {
	case pick%3 == 0 && len(mine) > 0:
		return minOf(mine, int(pick/3)) + uint64(in.u8()), false
	case pick%3 == 1 && len(theirs) > 0:
		return minOf(theirs, int(pick/3)) + uint64(in.u8()), true
	}
	return in.u64(), false
}

// minOf returns the k-th smallest of xs modulo its length (map order is
// random; the fuzzer must replay).
func minOf(xs []uint64, k int) uint64 {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
	return xs[k%len(xs)]
}

// ownedBy reports which connection owns the byte at pa, or -1.
func (r *seqRun) ownedBy(pa uint64) int {
	for a, b := range r.owner {
		if pa >= a && pa-a < b.size {
			return b.conn
		}
	}
	return -1
}

// owns reports whether connection conn owns a buffer holding [pa, pa+n).
// An empty range at the end of one buffer is also at the start of the
// next, which may be another connection's: it is conn's if either is.
func (r *seqRun) owns(conn int, pa, n uint64) bool {
	for a, b := range r.owner {
		if b.conn == conn && pa >= a && pa-a <= b.size && n <= b.size-(pa-a) {
			return true
		}
	}
	return false
}

// checkCharges checks that every connection's buffers, each counted as its
// size rounded up to its alignment above the granule, stay within the connection's
// host memory limit, all of them within the server's, and that the server
// counts exactly that.
func (r *seqRun) checkCharges() {
	var per [3]uint64
	var total uint64
	for _, b := range r.owner {
		c := hostCharge(b.size, b.align, r.limits.HostGranule)
		per[b.conn] += c
		total += c
	}
	for i, n := range per {
		require.LessOrEqual(r.t, n, r.limits.HostBytesPerClient, "connection %d's host buffers in their aligned slots", i)
	}
	require.LessOrEqual(r.t, total, r.limits.HostBytes, "all connections' host buffers in their aligned slots")
	if r.others == 0 {
		require.Equal(r.t, total, r.srv.HostBytesInUse(), "the server's count")
		return
	}
	inUse := r.srv.HostBytesInUse()
	require.True(r.t, inUse >= total && inUse-total <= r.others, "the server counts %d bytes, the fuzzed connections hold %d and the others at most %d", inUse, total, r.others)
}

// step runs one request of the input on one connection.
func (r *seqRun) step(in *seqReader) {
	op := in.u8()
	i := int(op>>4) % len(r.conns)
	if r.conns[i] == nil {
		r.open(i)
	}
	sc := r.conns[i]
	sc.tag++
	bar4 := r.dev.BAR4().Windows()[0].BAR4Offset
	var req []byte
	var check func(Frame)
	switch op & 0xF {
	case 0, 1: // READ, WRITE of BAR0 or BAR4, near a window or anywhere
		bar := []uint8{0, 4, 2, 5}[in.u8()%4]
		off := in.u64()
		if in.u8()%2 == 0 {
			off = (bar4 + off%(64<<20)) &^ 3
		}
		count := uint32(in.u8()) % 65
		rw := rwRequest{bar: bar, count: count, offset: off}
		o := OpRead
		if op&0xF == 1 {
			o, rw.data = OpWrite, make([]byte, 4*count)
			for k := range rw.data {
				rw.data[k] = in.u8()
			}
		}
		req = appendRW(nil, o, sc.tag, rw)
	case 2: // SLEEP: small, large, at the limits, or anything
		var ns uint64
		switch in.u8() % 6 {
		case 0:
			ns = uint64(in.u8()) * 1000
		case 1:
			ns = DefaultClockLimitPS / 1000
		case 2:
			ns = 1<<62/1000 + 1
		case 3:
			ns = 18_000_000_000_000_000 // the issue's ~1.8e16 ns
		case 4:
			ns = 1<<63 - 1 // the largest the protocol allows
		default:
			ns = in.u64() & (1<<63 - 1)
		}
		req = appendSleep(nil, sc.tag, sleepRequest{ns: ns})
		before, err := r.dev.ClockPS()
		require.NoError(r.t, err)
		check = func(f Frame) {
			if f.Op != OpSleepReply {
				return
			}
			// Served in slices, it ends where one sleep would: requests
			// are sent one at a time here, so nothing came between them.
			now, err := r.dev.ClockPS()
			require.NoError(r.t, err)
			require.GreaterOrEqual(r.t, now-before, ns*1000, "SLEEP %d ns from %d ps", ns, before)
			require.LessOrEqual(r.t, now, uint64(DefaultClockLimitPS), "within the clock limit")
		}
	case 3: // HOST_ALLOC
		var size, align uint64
		switch in.u8() % 5 {
		case 0:
			size = 64
		case 1:
			size = 4096
		case 2:
			size = 1 << 20
		case 3:
			size = uint64(in.u8()) << 12
		default:
			size = in.u64()
		}
		switch k := in.u8(); k % 4 {
		case 0:
			align = 64
		case 1:
			align = 4096
		case 2:
			align = 1 << (k / 4 % 40)
		default:
			align = in.u64()
		}
		req = appendHostAlloc(nil, sc.tag, hostRequest{size: size, align: align})
		check = func(f Frame) {
			if f.Op == OpHostAllocReply {
				pa := binary.LittleEndian.Uint64(f.Payload)
				require.Equal(r.t, -1, r.ownedBy(pa), "HOST_ALLOC %#x handed out a live buffer", pa)
				r.owner[pa] = seqBuf{conn: i, size: size, align: align}
			}
			r.checkCharges()
		}
	case 4: // HOST_FREE
		pa, _ := r.hostAddr(in, i)
		owner, exact := r.owner[pa]
		req = appendHostFree(nil, sc.tag, hostRequest{addr: pa})
		check = func(f Frame) {
			if exact && owner.conn == i {
				require.Equal(r.t, OpHostFreeReply, f.Op, "freeing its own buffer")
				delete(r.owner, pa)
				return
			}
			require.Equal(r.t, codeNotOwned, errorCode(f), "HOST_FREE %#x of connection %d by %d", pa, owner.conn, i)
		}
	case 5, 6: // HOST_READ, HOST_WRITE
		pa, _ := r.hostAddr(in, i)
		count := uint32(in.u8()) * 16
		rw := rwRequest{count: count, offset: pa}
		o := OpHostRead
		if op&0xF == 6 {
			o, rw.data = OpHostWrite, bytes.Repeat([]byte{in.u8()}, int(count))
		}
		req = appendRW(nil, o, sc.tag, rw)
		owned, owner := r.owns(i, pa, uint64(count)), r.ownedBy(pa)
		check = func(f Frame) {
			if !owned {
				require.Equal(r.t, codeNotOwned, errorCode(f), "%s [%#x, +%d) (its first byte connection %d's) by %d", o, pa, count, owner, i)
			}
		}
	case 7: // CLOCK
		req = appendClock(nil, sc.tag, 0)
		check = func(f Frame) {
			if f.Op == OpClockReply {
				require.Less(r.t, binary.LittleEndian.Uint64(f.Payload), uint64(sim.MaxTime))
			}
		}
	case 8: // disconnect
		r.closeConn(i)
		return
	case 9: // a frame of any op and payload: malformed ones close the connection
		n := int(in.u8() % 32)
		p := make([]byte, n)
		for k := range p {
			p[k] = in.u8()
		}
		req = frame(uint32(n), in.u8(), sc.tag, p...)
	case 11: // a request cut short: part of a HOST_WRITE frame, and the client leaves
		pa, _ := r.hostAddr(in, i)
		req := appendRW(nil, OpHostWrite, sc.tag, rwRequest{count: 64, offset: pa, data: bytes.Repeat([]byte{in.u8()}, 64)})
		cut := int(in.u8()) % len(req)
		_ = sc.c.SetDeadline(time.Now().Add(10 * time.Second))
		wrote := make(chan error, 1)
		go func() { _, err := sc.c.Write(req[:cut]); wrote <- err }()
		r.closeConn(i) // the server, waiting for the rest, sees the end of the stream
		if err := <-wrote; err != nil {
			require.ErrorIs(r.t, err, io.ErrClosedPipe, "write")
		}
		return
	case 10: // a SLEEP with a CLOCK behind it in one write: both answered, in order, or the client leaves before the replies
		sleepTag := sc.tag
		sc.tag++
		req = appendClock(appendSleep(nil, sleepTag, sleepRequest{ns: uint64(in.u8()) * 1000}), sc.tag, 0)
		wrote := make(chan error, 1)
		_ = sc.c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() { _, err := sc.c.Write(req); wrote <- err }()
		if in.u8()%2 == 0 {
			r.closeConn(i) // the server stops the SLEEP if it still runs
			<-wrote
			return
		}
		for _, want := range []struct {
			op  Op
			tag uint32
		}{{OpSleepReply, sleepTag}, {OpClockReply, sc.tag}} {
			f, err := ReadFrame(sc.c, nil)
			require.NoError(r.t, err, "the reply to %s", want.op)
			require.Equal(r.t, want.tag, f.Tag, "reply tag")
			if f.Op != OpError || errorCode(f) != codeLimit { // the clock limit may be used up
				require.Equal(r.t, want.op, f.Op)
			}
		}
		require.NoError(r.t, <-wrote)
		return
	default: // a device index the server does not export
		req = appendClock(nil, sc.tag, 1+uint16(in.u8()))
		check = func(f Frame) { require.Equal(r.t, codeNoDevice, errorCode(f)) }
	}
	f := r.exchange(sc, req)
	if f.Op == 0 || errorCode(f) == codeProtocol || errorCode(f) == codeVersion {
		r.closeConn(i)
		return
	}
	require.Equal(r.t, sc.tag, f.Tag, "reply tag")
	if check != nil {
		check(f)
	}
}

// fresh closes every connection and checks that a new client finds the
// device working and nothing of the old ones left.
func (r *seqRun) fresh() {
	t := r.t
	for i := range r.conns {
		r.closeConn(i)
	}
	for _, d := range r.all {
		<-d
	}
	require.Zero(t, r.srv.HostBytesInUse(), "host memory still charged after every client left")
	require.Zero(t, r.dev.HostMemory().Live(), "host buffers left after every client left")
	require.Zero(t, r.srv.Clients())
	require.LessOrEqual(t, r.budget.Used(), r.pages)

	client, server := net.Pipe()
	require.Equal(t, admitted, r.srv.track(server))
	done := make(chan struct{})
	go func() { r.srv.serveConn(server); close(done) }()
	defer func() { <-done }()
	c, err := newClient(client, "pipe", 10*time.Second, Version)
	require.NoError(t, err, "a fresh client's handshake")
	defer c.Close()
	d, err := c.Device(0)
	require.NoError(t, err)
	pa, err := d.HostAlloc(4096, 64)
	require.NoError(t, err, "a fresh client's host alloc")
	want := []byte(fmt.Sprintf("fresh client %p", r))
	require.NoError(t, d.HostWrite(pa, want))
	got := make([]byte, len(want))
	require.NoError(t, d.HostRead(pa, got))
	require.Equal(t, want, got)
	require.NoError(t, d.HostFree(pa))
	_, err = d.Read32(hwarch.BAR0, 0)
	require.NoError(t, err, "a fresh client's BAR0 read")
	_, err = d.Read32(hwarch.BAR4, r.dev.BAR4().Windows()[0].BAR4Offset)
	require.NoError(t, err, "a fresh client's BAR4 read")
	ps, err := d.ClockPS()
	require.NoError(t, err)
	require.Less(t, ps, uint64(sim.MaxTime), "the clock is below its maximum")
	if err := d.Sleep(time.Microsecond); err != nil {
		require.ErrorIs(t, err, ErrLimit, "a fresh client's SLEEP works or is refused by the clock limit")
		require.Greater(t, ps+1_000_000, DefaultClockLimitPS)
	}
}

// FuzzRequestSequences drives a served simulated device with request
// sequences over three connections (see seqRun) and checks isolation after
// every reply and a working device after every sequence.
func FuzzRequestSequences(f *testing.F) {
	le := binary.LittleEndian.AppendUint64
	f.Add([]byte{})
	// The SLEEP overflow: the longest SLEEP the protocol allows.
	f.Add([]byte{0x02, 4, 0x02, 3})
	f.Add([]byte{0x02, 1, 0x02, 1, 0x02, 1, 0x02, 2})
	// B allocates and writes; C tries to free, read and write it; B leaves.
	f.Add([]byte{0x13, 2, 0x16, 0, 0, 7, 0x24, 1, 0x25, 1, 0, 4, 0x26, 1, 0, 4, 9, 0x18, 0x25, 1, 0, 1})
	// Exhaust the host budgets from two connections.
	f.Add(bytes.Repeat([]byte{0x03, 3, 0, 0x13, 3, 0}, 10))
	// 64-byte buffers at 256 KiB alignment: each counts 256 KiB, so the
	// fifth is refused (1 MiB a connection), from two connections.
	f.Add(bytes.Repeat([]byte{0x03, 0, 74, 0x13, 0, 74}, 6))
	// BAR4 writes to fresh pages until the page budget refuses.
	f.Add(bytes.Repeat(append(append([]byte{0x01, 1}, le(nil, 1<<21)...), 0, 64, 1, 2, 3, 4), 40))
	// SLEEPs, served in slices, between reads and a clock read of other
	// connections: each ends where one sleep would.
	f.Add([]byte{0x02, 0, 200, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 4, 0x22, 0, 7, 0x17, 0x02, 1, 0x02, 0, 1})
	// SLEEPs with a CLOCK pipelined behind them, answered or left.
	f.Add([]byte{0x0A, 200, 1, 0x1A, 3, 0, 0x0A, 1, 1, 0x07})
	// Malformed frames and disconnects mixed with reads.
	f.Add([]byte{0x09, 4, 0x7F, 0x19, 0, 0x01, 0x00, 0x28, 0x07, 0x0A, 5, 0x08})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			return // sequences of at most ~100 requests keep a run short
		}
		r := newSeqRun(t)
		defer r.srv.Close()
		in := &seqReader{b: data}
		for len(in.b) > 0 {
			r.step(in)
		}
		r.fresh()
	})
}
