package remote

import (
	"encoding/binary"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/sim"
)

// hostOf returns device 0 of c as host memory.
func hostOf(t *testing.T, c *Client) ndl.HostMemory {
	t.Helper()
	d, err := c.Device(0)
	require.NoError(t, err)
	return d
}

// TestHostBuffersBelongToTheirConnection: client C can neither read, write
// nor free client B's buffer, and B's buffers are freed when B disconnects
// (issue 13 item 8: C used to free B's buffer, allocate it again and read
// B's secret; a crashed client leaked its buffers).
func TestHostBuffersBelongToTheirConnection(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{})
	ts.fakes[0].record = true
	b, c := dialTest(t, ts), dialTest(t, ts)
	hb, hc := hostOf(t, b), hostOf(t, c)

	pa, err := hb.HostAlloc(64, 64)
	require.NoError(t, err)
	require.NoError(t, hb.HostWrite(pa, []byte("secret")))

	got := make([]byte, 6)
	require.ErrorIs(t, hc.HostRead(pa, got), ErrNotOwned, "C reads B's buffer")
	require.ErrorIs(t, hc.HostRead(pa+1, got[:1]), ErrNotOwned, "inside it")
	require.ErrorIs(t, hc.HostWrite(pa, []byte("evil")), ErrNotOwned)
	require.ErrorIs(t, hc.HostFree(pa), ErrNotOwned, "C frees B's buffer")
	require.NoError(t, hb.HostRead(pa, got))
	assert.Equal(t, "secret", string(got), "B's buffer is untouched")

	// C's own buffer works; B cannot reach it either.
	pc, err := hc.HostAlloc(64, 64)
	require.NoError(t, err)
	require.NoError(t, hc.HostWrite(pc, []byte("mine")))
	require.ErrorIs(t, hb.HostRead(pc, got[:4]), ErrNotOwned)
	require.ErrorIs(t, hc.HostRead(pc+60, got[:5]), ErrNotOwned, "past the end of C's own buffer")

	// B goes away without freeing: the server frees its buffer.
	require.Equal(t, uint64(128), ts.srv.HostBytesInUse())
	require.NoError(t, b.Close())
	require.Eventually(t, func() bool { return ts.srv.HostBytesInUse() == 64 }, 5*time.Second, 5*time.Millisecond)
	assert.Contains(t, ts.fakes[0].callsOf("hfree"), pa, "B's buffer freed at disconnect")
	require.ErrorIs(t, hc.HostRead(pa, got), ErrNotOwned, "still not C's")
}

// callsOf returns the addresses of the fake's calls of op.
func (d *fakeDevice) callsOf(op string) []uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []uint64
	for _, c := range d.calls {
		if c.op == op {
			out = append(out, c.off)
		}
	}
	return out
}

// TestHostBudgets: a connection's bytes and buffers, and all connections'
// bytes, are bounded; a refusal names the limit and wraps ErrLimit, and a
// disconnect returns what the connection held (issue 13 item 8: 8
// HOST_ALLOCs used to exhaust the 1 TiB window for everyone).
func TestHostBudgets(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{HostBytesPerClient: 1000, HostBuffersPerClient: 3, HostBytes: 1500})
	a, b := dialTest(t, ts), dialTest(t, ts)
	ha, hb := hostOf(t, a), hostOf(t, b)

	_, err := ha.HostAlloc(1001, 64)
	require.ErrorIs(t, err, ErrLimit)
	assert.Contains(t, err.Error(), "--host-memory-per-client")
	_, err = ha.HostAlloc(600, 64)
	require.NoError(t, err)
	_, err = ha.HostAlloc(401, 64)
	require.ErrorIs(t, err, ErrLimit, "600+401 passes the connection's 1000")
	for range 2 {
		_, err = ha.HostAlloc(1, 64)
		require.NoError(t, err)
	}
	_, err = ha.HostAlloc(1, 64)
	require.ErrorIs(t, err, ErrLimit, "a fourth buffer")
	assert.Contains(t, err.Error(), "--host-buffers-per-client")

	_, err = hb.HostAlloc(898, 64)
	require.NoError(t, err)
	_, err = hb.HostAlloc(2, 64)
	require.ErrorIs(t, err, ErrLimit, "602+898+2 passes the server's 1500")
	assert.Contains(t, err.Error(), "--host-memory")
	assert.Equal(t, uint64(1500), ts.srv.HostBytesInUse())

	require.NoError(t, a.Close())
	require.Eventually(t, func() bool { return ts.srv.HostBytesInUse() == 898 }, 5*time.Second, 5*time.Millisecond)
	_, err = hb.HostAlloc(101, 64)
	require.NoError(t, err, "a's share came back")

	_, err = hb.HostAlloc(0, 64)
	require.ErrorContains(t, err, "HOST_ALLOC.size 0")
	_, err = hb.HostAlloc(1, 1<<31)
	require.ErrorContains(t, err, "HOST_ALLOC.align")
}

// TestHostAlignmentCharged: a buffer at an alignment above the granule
// counts against the connection's and the server's host memory as its size
// rounded up to the alignment, so a client cannot take more of the window
// than its share by asking for small buffers at large alignments (it used
// to be charged the 64 bytes it asked for, however far apart its buffers
// lay), and freeing a buffer gives all of it back.
func TestHostAlignmentCharged(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{HostBytesPerClient: 1 << 20, HostBytes: 3 << 19, HostGranule: 64})
	a, b := dialTest(t, ts), dialTest(t, ts)
	ha, hb := hostOf(t, a), hostOf(t, b)

	var pas []uint64
	for range 4 { // 64 bytes in a 256 KiB slot each: the whole MiB
		pa, err := ha.HostAlloc(64, 256<<10)
		require.NoError(t, err)
		pas = append(pas, pa)
	}
	assert.Equal(t, uint64(1<<20), ts.srv.HostBytesInUse())
	_, err := ha.HostAlloc(64, 256<<10)
	require.ErrorIs(t, err, ErrLimit, "a fifth 256 KiB-aligned buffer passes the connection's MiB")
	assert.Contains(t, err.Error(), "rounded up to its alignment 262144")
	assert.Contains(t, err.Error(), "--host-memory-per-client")
	_, err = ha.HostAlloc(64, 64)
	require.ErrorIs(t, err, ErrLimit, "nor is a byte left for an unaligned one")

	// The server's limit counts the same: b has 512 KiB of it left.
	_, err = hb.HostAlloc(1, 1<<20)
	require.ErrorIs(t, err, ErrLimit, "1 byte at 1 MiB alignment counts 1 MiB")
	assert.Contains(t, err.Error(), "--host-memory")
	_, err = hb.HostAlloc(256<<10, 256<<10)
	require.NoError(t, err, "a buffer the size of its alignment counts its size")
	assert.Equal(t, uint64(1<<20+256<<10), ts.srv.HostBytesInUse())

	// Freeing gives the whole slot back.
	require.NoError(t, ha.HostFree(pas[0]))
	assert.Equal(t, uint64(1<<20), ts.srv.HostBytesInUse())
	_, err = ha.HostAlloc(64, 128<<10)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	require.Eventually(t, func() bool { return ts.srv.HostBytesInUse() == 256<<10 }, 5*time.Second, 5*time.Millisecond)
}

// TestHostGranuleChecked: a granule that is not a power of two, or above
// MaxHostAlign, is refused.
func TestHostGranuleChecked(t *testing.T) {
	for _, g := range []uint64{3, 96, 2 * MaxHostAlign} {
		_, err := NewServer([]Export{{Device: newFake(0x1000)}}, ServerOptions{HostGranule: g})
		require.ErrorContains(t, err, "HostGranule", "%d", g)
	}
	assert.Equal(t, uint64(64), hostCharge(64, 64, 64))
	assert.Equal(t, uint64(100), hostCharge(100, 64, 64))
	assert.Equal(t, uint64(4096), hostCharge(64, 4096, 64))
	assert.Equal(t, uint64(4096), hostCharge(4096, 4096, 64))
	assert.Equal(t, uint64(8192), hostCharge(4097, 4096, 1))
	assert.Equal(t, uint64(1<<63), hostCharge(1<<63-1, MaxHostAlign, 1), "no overflow")
}

// TestMaxClients: past MaxClients a client is refused with ErrLimit, the
// connections already open keep working, and a slot that frees is reused
// (issue 13 item 9: serve had no connection cap).
func TestMaxClients(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{MaxClients: 2})
	a, b := dialTest(t, ts), dialTest(t, ts)
	for range 5 {
		_, err := Dial(ts.addr, ClientOptions{Timeout: 5 * time.Second})
		require.ErrorIs(t, err, ErrLimit)
		assert.Contains(t, err.Error(), "the server has 2 clients, the most it allows")
	}
	for _, c := range []*Client{a, b} {
		d, err := c.Device(0)
		require.NoError(t, err)
		_, err = d.Read32(0, 0)
		require.NoError(t, err, "open connections keep working")
	}
	require.NoError(t, a.Close())
	require.Eventually(t, func() bool {
		c, err := Dial(ts.addr, ClientOptions{Timeout: 5 * time.Second})
		if err != nil {
			return false
		}
		return c.Close() == nil
	}, 5*time.Second, 10*time.Millisecond, "the freed slot is reused")
}

// TestHandshakeTimeout: a connection that never completes its HELLO is
// closed after HandshakeTimeout, one that handshakes gets IdleTimeout.
func TestHandshakeTimeout(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{HandshakeTimeout: 50 * time.Millisecond, IdleTimeout: time.Minute})
	c := rawDial(t, ts)
	_, err := c.Write(helloFrame(Version)[:7]) // half a HELLO
	require.NoError(t, err)
	start := time.Now()
	readUntilClosed(t, c)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Contains(t, <-ts.logs, "no complete HELLO within the handshake timeout 50ms")

	cl := dialTest(t, ts)
	time.Sleep(100 * time.Millisecond) // past the handshake timeout
	d, err := cl.Device(0)
	require.NoError(t, err)
	_, err = d.Read32(0, 0)
	require.NoError(t, err, "the handshake timeout ends with the handshake")
}

// TestBuffersShrinkAfterLargeFrames: after a 1 MiB WRITE and READ the
// connection drops its 1 MiB buffers (issue 13 item 9: each connection
// kept ~2.8 MiB of buffers while open).
func TestBuffersShrinkAfterLargeFrames(t *testing.T) {
	fake := newFake(8 << 20)
	srv, err := NewServer([]Export{{Device: fake}}, ServerOptions{})
	require.NoError(t, err)
	defer srv.Close()
	client, server := net.Pipe()
	sc := &serverConn{s: srv, c: server, rbuf: make([]byte, 0, 4096), wbuf: make([]byte, 0, 4096)}
	done := make(chan error, 1)
	go func() { done <- sc.run() }()
	cl, err := newClient(client, "pipe", 5*time.Second, Version)
	require.NoError(t, err)
	d, err := cl.Device(0)
	require.NoError(t, err)
	words := make([]uint32, MaxWords)
	require.NoError(t, d.WriteBAR(0, 0, words))
	require.NoError(t, d.ReadBAR(0, 0, words))
	require.NoError(t, cl.Close())
	<-done
	assert.LessOrEqual(t, cap(sc.rbuf), shrinkAbove)
	assert.LessOrEqual(t, cap(sc.wbuf), shrinkAbove)
	assert.LessOrEqual(t, 4*cap(sc.words), shrinkAbove)
}

// TestRequestFieldsChecked: SLEEP durations past units.MaxTimePS and SLEEPs
// past the clock limit are refused with the field named, the clock does
// not move, and the connection stays usable (issue 13 item 7).
func TestRequestFieldsChecked(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{ClockLimitPS: 10_000_000})
	c := dialTest(t, ts)
	d, err := c.Device(0)
	require.NoError(t, err)
	for _, ns := range []time.Duration{1<<63 - 1, 18_000_000_000_000_000, time.Duration(1<<62/1000 + 1)} {
		err := d.Sleep(ns)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "SLEEP.ns")
	}
	require.NoError(t, d.Sleep(9*time.Microsecond))
	err = d.Sleep(2 * time.Microsecond)
	require.ErrorIs(t, err, ErrLimit)
	assert.Contains(t, err.Error(), "clock limit 10000000 ps")
	assert.Equal(t, 9*time.Microsecond, ts.fakes[0].now())
	require.NoError(t, d.Sleep(time.Microsecond), "up to the limit")
	_, err = d.Read32(0, 0)
	require.NoError(t, err)

	// The raw frame: a 2^63-1 ns SLEEP is a well-formed request, refused.
	raw := rawDial(t, ts)
	_, err = raw.Write(cat(helloFrame(Version), appendSleep(nil, 1, sleepRequest{ns: 1<<63 - 1})))
	require.NoError(t, err)
	_, err = ReadFrame(raw, nil) // HELLO reply
	require.NoError(t, err)
	f, err := ReadFrame(raw, nil)
	require.NoError(t, err)
	require.Equal(t, OpError, f.Op)
	assert.Equal(t, uint16(codeGeneric), binary.LittleEndian.Uint16(f.Payload))
	assert.True(t, strings.Contains(string(f.Payload), "SLEEP.ns"))
}

// TestLargeTransfersReuseBuffers: 1 MiB requests of each kind to a served
// simulated device — the pieces `dma copy --remote` moves a buffer in —
// allocate almost nothing each once warm: the server serves them in
// buffers of its pool, not in new ones the collector frees later (before
// the pool, 1–6 MiB a request: the 1 MiB frames were dropped after every
// request and grown again, a READ reply by doubling, so a 1 GiB copy left
// gigabytes of garbage and the server's heap twice its live memory).
func TestLargeTransfersReuseBuffers(t *testing.T) {
	ops, dev := largeRequests(t)
	for _, tc := range ops {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.op(), "warm: pages touched, buffers grown")
			const n = 16
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range n {
				require.NoError(t, tc.op())
			}
			runtime.ReadMemStats(&after)
			per := (after.TotalAlloc - before.TotalAlloc) / n
			t.Logf("%s: %d bytes allocated a 1 MiB request (client and server)", tc.name, per)
			assert.Less(t, per, uint64(64<<10), "bytes allocated a 1 MiB request")
		})
	}
	runtime.KeepAlive(dev)
}

// largeRequest is one kind of request of the most bytes one request
// carries, 1 MiB, on a served device.
type largeRequest struct {
	name string
	op   func() error
}

// largeRequests serves a simulated device (simServed) and returns a 1 MiB
// request of each kind on it — HOST_WRITE and HOST_READ of a host buffer,
// WRITE and READ of device memory through BAR4 — and the device.
func largeRequests(tb testing.TB) ([]largeRequest, *sim.Device) {
	tb.Helper()
	d, bar4, dev := simServed(tb)
	pa, err := d.HostAlloc(1<<20, 4096)
	require.NoError(tb, err)
	data := make([]byte, 1<<20)
	words := make([]uint32, MaxWords)
	for i := range words {
		words[i] = uint32(i) | 1
		data[i%len(data)] = byte(i) | 1
	}
	return []largeRequest{
		{"HOST_WRITE", func() error { return d.HostWrite(pa, data) }},
		{"HOST_READ", func() error { return d.HostRead(pa, data) }},
		{"WRITE", func() error { return d.WriteBAR(hwarch.BAR4, bar4, words) }},
		{"READ", func() error { return d.ReadBAR(hwarch.BAR4, bar4, words) }},
	}, dev
}

// simServed serves a simulated Trn2 device on a unix socket and returns a
// remote handle on it, the BAR4 offset of its first HBM window and the
// device.
func simServed(tb testing.TB) (*Device, uint64, *sim.Device) {
	tb.Helper()
	dev, err := sim.NewDevice(sim.DeviceConfig{Name: "served", Generation: hwarch.Cayman, Ready: true})
	require.NoError(tb, err)
	srv, err := NewServer([]Export{{Device: dev, Name: "served"}}, ServerOptions{})
	require.NoError(tb, err)
	addr := "unix:" + filepath.Join(tb.TempDir(), "served.sock")
	l, err := Listen(addr, false)
	require.NoError(tb, err)
	go func() { _ = srv.Serve(l) }()
	tb.Cleanup(func() { _ = srv.Close() })
	c, err := Dial(addr, ClientOptions{})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = c.Close() })
	d, err := c.Device(0)
	require.NoError(tb, err)
	return d, dev.BAR4().Windows()[0].BAR4Offset, dev
}

// TestLargeFramesCutShort: a large request whose sender stops part way —
// before the pool's buffer is taken (under 64 KiB), or after — ends only
// its connection, and the next large requests on others are served in
// good buffers of the pool: the bytes they read back are theirs.
func TestLargeFramesCutShort(t *testing.T) {
	d, bar4, dev := simServed(t)
	addr := d.c.addr
	words := make([]uint32, MaxWords)
	for i := range words {
		words[i] = uint32(i)*2654435761 | 1
	}
	for _, sent := range []int{10, 60 << 10, 64 << 10, 700 << 10} {
		t.Run(fmt.Sprintf("%d bytes sent", sent), func(t *testing.T) {
			_, path, err := ParseAddress(addr)
			require.NoError(t, err)
			raw, err := net.Dial("unix", path)
			require.NoError(t, err)
			_, err = raw.Write(helloFrame(Version))
			require.NoError(t, err)
			_, err = ReadFrame(raw, nil)
			require.NoError(t, err)
			frame := appendRW(nil, OpWrite, 1, rwRequest{bar: 4, count: MaxWords, offset: bar4, data: make([]byte, 4*MaxWords)})
			_, err = raw.Write(frame[:sent])
			require.NoError(t, err)
			require.NoError(t, raw.Close())

			require.NoError(t, d.WriteBAR(hwarch.BAR4, bar4, words))
			got := make([]uint32, MaxWords)
			require.NoError(t, d.ReadBAR(hwarch.BAR4, bar4, got))
			require.Equal(t, words, got, "the served connection's own words")
			words[sent%MaxWords]++ // another pattern for the next round
		})
	}
	runtime.KeepAlive(dev)
}

// bufferLimited is a fake whose host-memory allocator holds n buffers.
type bufferLimited struct {
	*fakeDevice
	n int
}

// HostBufferLimit returns n.
func (d bufferLimited) HostBufferLimit() int { return d.n }

var _ ndl.HostBufferLimit = (*sim.Device)(nil)

// TestBufferQuotasFitTheAllocator: NewServer refuses host-buffer quotas
// that add up, over MaxClients connections, past the buffers an exported
// device's allocator holds (ndl.HostBufferLimit), naming the numbers, so a
// Go API user gets the check `neuronsim serve` makes; quotas within it, no
// quota, and devices that set no bound are accepted.
func TestBufferQuotasFitTheAllocator(t *testing.T) {
	limited := func(n int) Export { return Export{Device: bufferLimited{newFake(0x1000), n}} }
	plain := Export{Device: newFake(0x1000)}
	for _, tc := range []struct {
		name             string
		exports          []Export
		clients, buffers int
		refused          string // "": accepted
	}{
		{"fits", []Export{limited(10)}, 2, 5, ""},
		{"past it", []Export{limited(10)}, 4, 3, "HostBuffersPerClient 3 × MaxClients 4 = 12 host buffers, more than the 10 the host-memory allocator of device 0 holds"},
		{"past the smaller of two", []Export{limited(100), plain, limited(10)}, 4, 3, "more than the 10 the host-memory allocator of device 2 holds: a client could be promised buffers others already took (give at most 2 per client, or fewer clients)"},
		{"more clients than buffers", []Export{limited(10)}, 11, 1, "give at most 10 clients"},
		{"product past 2^64", []Export{limited(10)}, 1 << 40, 1 << 40, "= over 2^64 host buffers"},
		{"no buffer quota", []Export{limited(10)}, 64, 0, ""},
		{"no client limit", []Export{limited(10)}, 0, 64, ""},
		{"no bound reported", []Export{plain}, 64, 1 << 30, ""},
		{"a bound of 0: none", []Export{limited(0)}, 64, 1 << 30, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewServer(tc.exports, ServerOptions{MaxClients: tc.clients, HostBuffersPerClient: tc.buffers})
			if tc.refused == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrLimit)
			assert.Contains(t, err.Error(), tc.refused)
		})
	}

	// A simulated device reports its allocator's sim.MaxHostBuffers.
	dev, err := sim.NewDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Ready: true})
	require.NoError(t, err)
	_, err = NewServer([]Export{{Device: dev}}, ServerOptions{MaxClients: 64, HostBuffersPerClient: sim.MaxHostBuffers / 64})
	require.NoError(t, err)
	_, err = NewServer([]Export{{Device: dev}}, ServerOptions{MaxClients: 64, HostBuffersPerClient: sim.MaxHostBuffers/64 + 1})
	require.ErrorIs(t, err, ErrLimit)
	assert.Contains(t, err.Error(), fmt.Sprintf("= %d host buffers, more than the %d", 64*(sim.MaxHostBuffers/64+1), sim.MaxHostBuffers))
}
