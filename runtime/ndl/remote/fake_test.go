package remote

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// errFakeFault is the generic error the fake returns at a faulting offset.
var errFakeFault = errors.New("fake: injected fault")

// fakeCall is one device call as the fake saw it.
type fakeCall struct {
	op          string // "read", "write", "sleep", "clock", "halloc", "hfree", "hread", "hwrite"
	bar         int
	off         uint64        // BAR offset, or host address
	count       int           // words, or host bytes
	data        []uint32      // written words
	bytes       []byte        // written host bytes
	dur         time.Duration // sleep
	size, align uint64        // halloc
}

// fakeDevice is an in-memory ndl.Device and ndl.Sleeper: sparse words per
// BAR, a virtual clock Sleep advances, a call log, and an offset whose
// access fails with a generic error.
type fakeDevice struct {
	mu      sync.Mutex
	id      hwarch.PCIIdentity
	sizes   [NumBARs]uint64
	words   [NumBARs]map[uint64]uint32
	clock   time.Duration
	closed  bool
	faultAt uint64 // an offset whose access fails with errFakeFault (0: none)
	record  bool   // keep the call log
	calls   []fakeCall
	host    []fakeAlloc // host memory handed out, in address order
	next    uint64      // where the next host allocation may start
}

// fakeAlloc is one host allocation of the fake.
type fakeAlloc struct {
	pa uint64
	b  []byte
}

// newFake returns a fake Trn2 under QEMU with a BAR0 of bar0 bytes and a
// 4 KiB BAR2.
func newFake(bar0 uint64) *fakeDevice {
	d := &fakeDevice{
		id:    hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: hwarch.DeviceTrn2, Revision: hwarch.RevisionQEMU},
		sizes: [NumBARs]uint64{0: bar0, 2: 0x1000},
	}
	for b := range d.words {
		d.words[b] = map[uint64]uint32{}
	}
	return d
}

// Identity returns the fake's PCI identity.
func (d *fakeDevice) Identity() hwarch.PCIIdentity { return d.id }

// BARSize returns the size of BAR bar (0 when absent).
func (d *fakeDevice) BARSize(bar int) uint64 {
	if bar < 0 || bar >= NumBARs {
		return 0
	}
	return d.sizes[bar]
}

// check validates an access of n words; d.mu is held.
func (d *fakeDevice) check(op string, bar int, off uint64, n int) error {
	switch {
	case d.closed:
		return fmt.Errorf("fake: %s bar %d: %w", op, bar, ndl.ErrClosed)
	case bar < 0 || bar >= NumBARs || d.sizes[bar] == 0:
		return fmt.Errorf("fake: %s bar %d: %w", op, bar, ndl.ErrBadBAR)
	case off%4 != 0:
		return fmt.Errorf("fake: %s bar %d offset %#x: %w", op, bar, off, ndl.ErrAlignment)
	case uint64(n) > d.sizes[bar]/4 || off > d.sizes[bar]-4*uint64(n):
		return fmt.Errorf("fake: %s bar %d offset %#x count %d: %w (size %#x)", op, bar, off, n, ndl.ErrBAROffset, d.sizes[bar])
	case d.faultAt != 0 && d.faultAt >= off && d.faultAt < off+4*uint64(n):
		return fmt.Errorf("fake: %s bar %d offset %#x: %w", op, bar, d.faultAt, errFakeFault)
	}
	return nil
}

// log appends c to the call log when recording; d.mu is held.
func (d *fakeDevice) log(c fakeCall) {
	if d.record {
		d.calls = append(d.calls, c)
	}
}

// ReadBAR reads words of a BAR (absent words read 0).
func (d *fakeDevice) ReadBAR(bar int, off uint64, dst []uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log(fakeCall{op: "read", bar: bar, off: off, count: len(dst)})
	if err := d.check("read", bar, off, len(dst)); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = d.words[bar][off+4*uint64(i)]
	}
	return nil
}

// WriteBAR writes words of a BAR.
func (d *fakeDevice) WriteBAR(bar int, off uint64, src []uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.record {
		d.log(fakeCall{op: "write", bar: bar, off: off, count: len(src), data: append([]uint32(nil), src...)})
	}
	if err := d.check("write", bar, off, len(src)); err != nil {
		return err
	}
	for i, w := range src {
		d.words[bar][off+4*uint64(i)] = w
	}
	return nil
}

// Read32 reads one word.
func (d *fakeDevice) Read32(bar int, off uint64) (uint32, error) {
	var w [1]uint32
	err := d.ReadBAR(bar, off, w[:])
	return w[0], err
}

// Write32 writes one word.
func (d *fakeDevice) Write32(bar int, off uint64, v uint32) error {
	w := [1]uint32{v}
	return d.WriteBAR(bar, off, w[:])
}

// Sleep advances the virtual clock by dur; no wall-clock time passes.
func (d *fakeDevice) Sleep(dur time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log(fakeCall{op: "sleep", dur: dur})
	if d.closed {
		return fmt.Errorf("fake: sleep: %w", ndl.ErrClosed)
	}
	d.clock += dur
	return nil
}

// Close marks the fake closed: later accesses wrap ndl.ErrClosed.
func (d *fakeDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("fake: close: %w", ndl.ErrClosed)
	}
	d.closed = true
	return nil
}

// now returns the virtual clock.
func (d *fakeDevice) now() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.clock
}

// ClockPS reads the virtual clock in picoseconds.
func (d *fakeDevice) ClockPS() (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log(fakeCall{op: "clock"})
	if d.closed {
		return 0, fmt.Errorf("fake: clock: %w", ndl.ErrClosed)
	}
	return uint64(d.clock.Nanoseconds()) * 1000, nil
}

// HostAlloc hands out zeroed host memory from address 0x10000 up.
func (d *fakeDevice) HostAlloc(size, align uint64) (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log(fakeCall{op: "halloc", size: size, align: align})
	if size == 0 || size > 1<<24 || align == 0 || align&(align-1) != 0 || align > 1<<20 {
		return 0, fmt.Errorf("fake: host alloc %d bytes align %d: refused", size, align)
	}
	pa := (max(d.next, 0x10000) + align - 1) &^ (align - 1)
	d.host = append(d.host, fakeAlloc{pa: pa, b: make([]byte, size)})
	d.next = pa + size
	return pa, nil
}

// HostFree frees an allocation by its address.
func (d *fakeDevice) HostFree(pa uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log(fakeCall{op: "hfree", off: pa})
	for i, a := range d.host {
		if a.pa == pa {
			d.host = append(d.host[:i], d.host[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("fake: host free %#x: not allocated", pa)
}

// hostRange returns the bytes [pa, pa+n) of one allocation; d.mu is held.
func (d *fakeDevice) hostRange(op string, pa uint64, n int) ([]byte, error) {
	for _, a := range d.host {
		if pa >= a.pa && pa-a.pa <= uint64(len(a.b)) && uint64(n) <= uint64(len(a.b))-(pa-a.pa) {
			return a.b[pa-a.pa : pa-a.pa+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("fake: host %s %#x count %d: not allocated", op, pa, n)
}

// HostRead reads allocated host memory.
func (d *fakeDevice) HostRead(pa uint64, p []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log(fakeCall{op: "hread", off: pa, count: len(p)})
	b, err := d.hostRange("read", pa, len(p))
	copy(p, b)
	return err
}

// HostWrite writes allocated host memory.
func (d *fakeDevice) HostWrite(pa uint64, p []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.record {
		d.log(fakeCall{op: "hwrite", off: pa, count: len(p), bytes: append([]byte(nil), p...)})
	}
	b, err := d.hostRange("write", pa, len(p))
	copy(b, p)
	return err
}

// noSleep hides a device's Sleep: only the ndl.Device methods remain.
type noSleep struct{ ndl.Device }

// testServer is a server on a unix socket in a temporary directory.
type testServer struct {
	srv   *Server
	addr  string
	fakes []*fakeDevice
	done  chan error // Serve's result
	logs  chan string
}

// startServer serves two fakes — device 0 (with a clock, BAR0 of bar0
// bytes, named "nd0", connected to 1) and device 1 (without a clock, named
// "nd1", connected to 0) — on a unix socket, and closes it at cleanup.
func startServer(tb testing.TB, bar0 uint64, opts ServerOptions) *testServer {
	tb.Helper()
	ts := &testServer{fakes: []*fakeDevice{newFake(bar0), newFake(0x1000)}, done: make(chan error, 1), logs: make(chan string, 64)}
	ts.fakes[1].id = hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: hwarch.DeviceTrn3, Revision: 1}
	if opts.Logf == nil {
		opts.Logf = func(format string, args ...any) {
			select {
			case ts.logs <- fmt.Sprintf(format, args...):
			default:
			}
		}
	}
	srv, err := NewServer([]Export{
		{Device: ts.fakes[0], Name: "nd0", Connected: []int{1}},
		{Device: noSleep{ts.fakes[1]}, Name: "nd1", Connected: []int{0}},
	}, opts)
	require.NoError(tb, err)
	ts.srv = srv
	ts.addr = "unix:" + filepath.Join(shortTempDir(tb), "s")
	l, err := Listen(ts.addr, false)
	require.NoError(tb, err)
	go func() { ts.done <- srv.Serve(l) }()
	tb.Cleanup(func() {
		require.NoError(tb, srv.Close())
		select {
		case err := <-ts.done:
			require.NoError(tb, err)
		case <-time.After(5 * time.Second):
			tb.Error("Serve did not return after Close")
		}
	})
	return ts
}

// shortTempDir is a temporary directory short enough for a socket path
// (sun_path holds about 100 bytes; t.TempDir can be longer).
func shortTempDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if len(dir) < 90 {
		return dir
	}
	dir, err := os.MkdirTemp("", "nrdl")
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// dialTest dials ts and closes the client at cleanup.
func dialTest(tb testing.TB, ts *testServer) *Client {
	tb.Helper()
	c, err := Dial(ts.addr, ClientOptions{Timeout: 5 * time.Second})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
