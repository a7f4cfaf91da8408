package remote

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

func TestDeviceTable(t *testing.T) {
	ts := startServer(t, 0x10000, ServerOptions{})
	c := dialTest(t, ts)

	devs := c.Devices()
	require.Len(t, devs, 2)
	tests := []struct {
		name      string
		i         int
		id        hwarch.PCIIdentity
		sizes     [NumBARs]uint64
		connected []int
	}{
		{"nd0", 0, hwarch.PCIIdentity{Vendor: 0x1D0F, Device: 0x7364, Revision: 0xFF}, [NumBARs]uint64{0: 0x10000, 2: 0x1000}, []int{1}},
		{"nd1", 1, hwarch.PCIIdentity{Vendor: 0x1D0F, Device: 0x7564, Revision: 1}, [NumBARs]uint64{0: 0x1000, 2: 0x1000}, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := devs[tt.i]
			assert.Equal(t, DeviceInfo{Index: tt.i, Identity: tt.id, BARSizes: tt.sizes, Name: tt.name, Connected: tt.connected}, info)
			d, err := c.Device(tt.i)
			require.NoError(t, err)
			assert.Equal(t, tt.id, d.Identity())
			assert.Equal(t, tt.name, d.Name())
			assert.Equal(t, tt.i, d.Index())
			for b := range NumBARs {
				assert.Equal(t, tt.sizes[b], d.BARSize(b), "BAR%d", b)
			}
			assert.Zero(t, d.BARSize(-1))
			assert.Zero(t, d.BARSize(6))
		})
	}

	devs[0].Connected[0] = 99 // Devices returns a copy
	assert.Equal(t, []int{1}, c.Devices()[0].Connected)

	for _, i := range []int{-1, 2, 1000} {
		_, err := c.Device(i)
		assert.ErrorIs(t, err, ErrNoDevice, "device %d", i)
	}
}

func TestReadWrite(t *testing.T) {
	ts := startServer(t, 2<<20, ServerOptions{})
	c := dialTest(t, ts)
	d, err := c.Device(0)
	require.NoError(t, err)

	t.Run("Write32/Read32", func(t *testing.T) {
		for _, bar := range []int{0, 2} {
			for _, off := range []uint64{0, 4, 0xFFC} {
				v := uint32(0xA5000000) | uint32(bar)<<16 | uint32(off)
				require.NoError(t, d.Write32(bar, off, v))
				got, err := d.Read32(bar, off)
				require.NoError(t, err)
				assert.Equal(t, v, got, "bar %d offset %#x", bar, off)
			}
		}
	})
	tests := []struct {
		name   string
		off    uint64
		n      int
		chunks int // READ requests the fake sees
	}{
		{"empty", 0x100, 0, 1},
		{"one", 0x100, 1, 1},
		{"short", 0x200, 37, 1},
		{"MaxWords", 0, MaxWords, 1},
		{"MaxWords+3", 0x40, MaxWords + 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := make([]uint32, tt.n)
			for i := range src {
				src[i] = uint32(i)*2654435761 + 1
			}
			require.NoError(t, d.WriteBAR(0, tt.off, src))
			ts.fakes[0].mu.Lock()
			ts.fakes[0].record, ts.fakes[0].calls = true, nil
			ts.fakes[0].mu.Unlock()
			dst := make([]uint32, tt.n)
			require.NoError(t, d.ReadBAR(0, tt.off, dst))
			assert.Equal(t, src, dst)
			ts.fakes[0].mu.Lock()
			calls := ts.fakes[0].calls
			ts.fakes[0].record, ts.fakes[0].calls = false, nil
			ts.fakes[0].mu.Unlock()
			require.Len(t, calls, tt.chunks)
			if tt.chunks == 2 {
				assert.Equal(t, fakeCall{op: "read", off: tt.off, count: MaxWords}, calls[0])
				assert.Equal(t, fakeCall{op: "read", off: tt.off + 4*MaxWords, count: tt.n - MaxWords}, calls[1])
			}
		})
	}
}

func TestErrorMapping(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{})
	c := dialTest(t, ts)
	d, err := c.Device(0)
	require.NoError(t, err)
	ts.fakes[0].mu.Lock()
	ts.fakes[0].faultAt = 0x80
	ts.fakes[0].mu.Unlock()

	sentinels := []error{ndl.ErrBadBAR, ndl.ErrBAROffset, ndl.ErrAlignment, ndl.ErrClosed, ErrNoDevice, ErrUnsupported, ErrProtocol, ErrVersion}
	tests := []struct {
		name    string
		call    func() error
		want    error  // nil: generic
		context string // the error text starts with it
		text    string // the server's text it keeps
	}{
		{"absent BAR", func() error { _, err := d.Read32(3, 0); return err }, ndl.ErrBadBAR, "remote: device 0 read bar 3 offset 0x0 count 1: server: ", "fake: read bar 3"},
		{"BAR past u8", func() error { return d.Write32(256, 0, 1) }, ndl.ErrBadBAR, "remote: device 0 write bar 256 offset 0x0 count 1", ""},
		{"unaligned", func() error { return d.Write32(0, 2, 1) }, ndl.ErrAlignment, "remote: device 0 write bar 0 offset 0x2 count 1: server: ", "fake: write bar 0 offset 0x2"},
		{"out of range", func() error { return d.ReadBAR(0, 0xFF8, make([]uint32, 3)) }, ndl.ErrBAROffset, "remote: device 0 read bar 0 offset 0xff8 count 3: server: ", "size 0x1000"},
		{"past 2^64", func() error { return d.ReadBAR(0, math.MaxUint64-3, make([]uint32, 2)) }, ndl.ErrBAROffset, "remote: device 0 read bar 0 offset 0xfffffffffffffffc count 2", "2^64"},
		{"generic", func() error { return d.WriteBAR(0, 0x7C, []uint32{1, 2}) }, nil, "remote: device 0 write bar 0 offset 0x7c count 2: server: ", "fake: write bar 0 offset 0x80: fake: injected fault"},
		{"no device", func() error { _, err := (&Device{c: c, index: 7}).Read32(0, 0); return err }, ErrNoDevice, "remote: device 7 read bar 0 offset 0x0 count 1: server: ", "device 7"},
		{"unsupported", func() error {
			d1, err := c.Device(1)
			require.NoError(t, err)
			return d1.Sleep(time.Millisecond)
		}, ErrUnsupported, "remote: device 1 sleep 1ms: server: ", "has no clock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.context)
			assert.Contains(t, err.Error(), tt.text)
			for _, s := range sentinels {
				assert.Equal(t, s == tt.want, errors.Is(err, s), "errors.Is(%v, %v)", err, s)
			}
			// A device error leaves the connection usable.
			require.NoError(t, d.Write32(0, 0, 7))
		})
	}

	t.Run("device closed on the server", func(t *testing.T) {
		require.NoError(t, ts.fakes[0].Close())
		_, err := d.Read32(0, 0)
		assert.ErrorIs(t, err, ndl.ErrClosed)
		assert.Contains(t, err.Error(), "fake: read bar 0: device closed")
		err = d.Sleep(time.Second)
		assert.ErrorIs(t, err, ndl.ErrClosed)
	})
}

func TestSleep(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{})
	c := dialTest(t, ts)
	d, err := c.Device(0)
	require.NoError(t, err)

	tests := []struct {
		name string
		d    time.Duration
		want time.Duration // clock after
	}{
		{"one hour of device time", time.Hour, time.Hour},
		{"zero", 0, time.Hour},
		{"1ns", 1, time.Hour + 1},
	}
	require.ErrorIs(t, d.Sleep(-time.Second), units.ErrRange, "a negative sleep is refused, as a local device refuses it")
	start := time.Now()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, ndl.Sleep(d, tt.d))
			assert.Equal(t, tt.want, ts.fakes[0].now())
		})
	}
	assert.Less(t, time.Since(start), time.Minute, "the server slept on the wall clock")

	t.Run("clock", func(t *testing.T) {
		var clk ndl.Clock = d
		ps, err := clk.ClockPS()
		require.NoError(t, err)
		assert.Equal(t, uint64((time.Hour+1).Nanoseconds())*1000, ps)
		since, err := ndl.ElapsedPS(d)
		require.NoError(t, err)
		require.NoError(t, d.Sleep(3*time.Microsecond))
		ps, err = since()
		require.NoError(t, err)
		assert.Equal(t, uint64(3_000_000), ps, "elapsed on the device's clock")

		d1, err := c.Device(1)
		require.NoError(t, err)
		_, err = d1.ClockPS()
		assert.ErrorIs(t, err, ErrUnsupported, "a device without a clock")
	})
}

func TestClientClose(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{})
	c, err := Dial(ts.addr, ClientOptions{})
	require.NoError(t, err)
	d0, err := c.Device(0)
	require.NoError(t, err)
	d0b, err := c.Device(0)
	require.NoError(t, err)

	// Closing a handle closes only the handle.
	require.NoError(t, d0b.Close())
	assert.ErrorIs(t, d0b.Close(), ndl.ErrClosed)
	_, err = d0b.Read32(0, 0)
	assert.ErrorIs(t, err, ndl.ErrClosed)
	require.NoError(t, d0.Write32(0, 0, 5))

	require.NoError(t, c.Close())
	calls := []struct {
		name string
		call func() error
	}{
		{"Read32", func() error { _, err := d0.Read32(0, 0); return err }},
		{"Write32", func() error { return d0.Write32(0, 0, 1) }},
		{"ReadBAR", func() error { return d0.ReadBAR(0, 0, make([]uint32, 4)) }},
		{"WriteBAR", func() error { return d0.WriteBAR(0, 0, make([]uint32, 4)) }},
		{"Sleep", func() error { return d0.Sleep(time.Millisecond) }},
		{"Device", func() error { _, err := c.Device(1); return err }},
		{"Close again", c.Close},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.call(), ndl.ErrClosed)
		})
	}
	// What the handshake announced stays readable.
	assert.Equal(t, ts.fakes[0].id, d0.Identity())
	assert.Equal(t, uint64(0x1000), d0.BARSize(0))
	assert.Len(t, c.Devices(), 2)
}

func TestServerClose(t *testing.T) {
	baseline := runtime.NumGoroutine()
	ts := startServer(t, 0x1000, ServerOptions{})
	var devs []*Device
	for range 3 {
		c := dialTest(t, ts)
		d, err := c.Device(0)
		require.NoError(t, err)
		require.NoError(t, d.Write32(0, 0, 1))
		devs = append(devs, d)
	}

	require.NoError(t, ts.srv.Close())
	select {
	case err := <-ts.done:
		require.NoError(t, err)
		ts.done <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	for i, d := range devs {
		start := time.Now()
		_, err := d.Read32(0, 0)
		assert.Error(t, err, "client %d", i)
		assert.Less(t, time.Since(start), 2*time.Second)
		_, err = d.Read32(0, 0)
		assert.ErrorIs(t, err, ndl.ErrClosed, "client %d, second call", i)
	}
	_, err := Dial(ts.addr, ClientOptions{Timeout: time.Second})
	assert.Error(t, err)
	require.NoError(t, ts.srv.Close(), "second Close")
	require.NoError(t, ts.srv.Serve(newClosedListener()), "Serve after Close")

	// No goroutine of the server outlives Close (allowing for stragglers of
	// earlier tests to finish).
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), baseline, "goroutines leaked")
}

func TestConcurrency(t *testing.T) {
	ts := startServer(t, 0x100000, ServerOptions{})
	const goroutines, iterations = 16, 200
	clients := []*Client{dialTest(t, ts), dialTest(t, ts), dialTest(t, ts)}

	tests := []struct {
		name   string
		client func(g int) *Client
	}{
		{"one client", func(int) *Client { return clients[0] }},
		{"three clients", func(g int) *Client { return clients[g%len(clients)] }},
	}
	for ti, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := range goroutines {
				wg.Go(func() {
					d, err := tt.client(g).Device(0)
					if err != nil {
						errs <- err
						return
					}
					base := uint64(ti*goroutines+g) * 0x1000
					for i := range iterations {
						off := base + 4*uint64(i%64)
						v := uint32(g<<24 | i)
						if err := d.Write32(0, off, v); err != nil {
							errs <- err
							return
						}
						got, err := d.Read32(0, off)
						if err != nil {
							errs <- err
							return
						}
						if got != v {
							errs <- fmt.Errorf("goroutine %d: read %#x at %#x, wrote %#x", g, got, off, v)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestHostMemory: the served device's host memory through a remote handle —
// allocation, accesses split at MaxHostBytes, errors that keep the
// connection usable, and a device without host memory.
func TestHostMemory(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{})
	ts.fakes[0].record = true
	c := dialTest(t, ts)
	require.Equal(t, Version, c.Version())
	d, err := c.Device(0)
	require.NoError(t, err)
	var hm ndl.HostMemory = d

	const size = 2*MaxHostBytes + 12345
	pa, err := hm.HostAlloc(size, 4096)
	require.NoError(t, err)
	assert.Zero(t, pa%4096)
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	require.NoError(t, hm.HostWrite(pa, data))
	got := make([]byte, size)
	require.NoError(t, hm.HostRead(pa, got))
	assert.Equal(t, data, got)

	var chunks []int
	for _, call := range ts.fakes[0].calls {
		if call.op == "hwrite" {
			chunks = append(chunks, call.count)
		}
	}
	assert.Equal(t, []int{MaxHostBytes, MaxHostBytes, 12345}, chunks, "writes split at MaxHostBytes")

	part := make([]byte, 5)
	require.NoError(t, hm.HostRead(pa+MaxHostBytes-2, part), "a read across a chunk boundary of the write")
	assert.Equal(t, data[MaxHostBytes-2:MaxHostBytes+3], part)

	t.Run("errors", func(t *testing.T) {
		// The server refuses what lies outside the connection's own
		// buffers before the device sees it.
		err := hm.HostRead(pa+size-2, make([]byte, 4))
		require.ErrorIs(t, err, ErrNotOwned)
		assert.Contains(t, err.Error(), "is not in a host buffer this connection allocated")
		_, err = hm.HostAlloc(64, 3)
		assert.ErrorContains(t, err, "not a power of two")
		_, err = hm.HostAlloc(1<<24+1, 64)
		assert.ErrorContains(t, err, "fake: host alloc", "the device's own refusal comes through")
		require.NoError(t, hm.HostFree(pa))
		assert.ErrorIs(t, hm.HostFree(pa), ErrNotOwned)
		assert.ErrorIs(t, hm.HostWrite(pa, []byte{1}), ErrNotOwned, "freed memory")
		v, err := d.Read32(0, 0)
		require.NoError(t, err, "the connection stays usable")
		assert.Zero(t, v)
	})
	t.Run("no host memory", func(t *testing.T) {
		d1, err := c.Device(1)
		require.NoError(t, err)
		_, err = d1.HostAlloc(64, 64)
		require.ErrorIs(t, err, ErrUnsupported)
		assert.Contains(t, err.Error(), "has no host memory")
	})
	t.Run("closed handle", func(t *testing.T) {
		d2, err := c.Device(0)
		require.NoError(t, err)
		require.NoError(t, d2.Close())
		_, err = d2.HostAlloc(64, 64)
		assert.ErrorIs(t, err, ndl.ErrClosed)
		assert.ErrorIs(t, d2.HostRead(0x10000, make([]byte, 1)), ndl.ErrClosed)
	})
}
