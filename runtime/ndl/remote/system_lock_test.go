package remote

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSystem is the shared state of the devices of one fake system: one
// clock, and a detector of calls on two of its devices at once (which a
// simulated system's shared engine must never see from the server).
type fakeSystem struct {
	mu       sync.Mutex // the devices' own shared lock, as a simulated system's
	ps       uint64     // the one clock
	inside   atomic.Int32
	overlaps atomic.Int64
	// linger, when set, holds a call until another call runs beside it
	// (or linger has passed), until one overlap has been seen: the control
	// without a shared lock sees one however the goroutines are scheduled
	// (yielding alone did not, under -race on a loaded machine).
	linger time.Duration
}

// systemDevice is one device of a fakeSystem: a fake for its BARs, the
// system's clock for its time.
type systemDevice struct {
	*fakeDevice
	sys *fakeSystem
}

// enter marks a call on the system as running, counts it as an overlap if
// another already runs, and yields a few times so that an overlap the
// server allows has the chance to happen; the function it returns ends
// the call.
func (d systemDevice) enter() func() {
	if d.sys.inside.Add(1) > 1 {
		d.sys.overlaps.Add(1)
	}
	for range 4 {
		runtime.Gosched()
	}
	if d.sys.linger > 0 {
		for deadline := time.Now().Add(d.sys.linger); d.sys.overlaps.Load() == 0 && d.sys.inside.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
	}
	return func() { d.sys.inside.Add(-1) }
}

func (d systemDevice) ReadBAR(bar int, off uint64, dst []uint32) error {
	defer d.enter()()
	return d.fakeDevice.ReadBAR(bar, off, dst)
}

func (d systemDevice) WriteBAR(bar int, off uint64, src []uint32) error {
	defer d.enter()()
	return d.fakeDevice.WriteBAR(bar, off, src)
}

func (d systemDevice) Read32(bar int, off uint64) (uint32, error) {
	var w [1]uint32
	err := d.ReadBAR(bar, off, w[:])
	return w[0], err
}

func (d systemDevice) Write32(bar int, off uint64, v uint32) error {
	return d.WriteBAR(bar, off, []uint32{v})
}

// ClockPS reads the system's clock.
func (d systemDevice) ClockPS() (uint64, error) {
	defer d.enter()()
	d.sys.mu.Lock()
	defer d.sys.mu.Unlock()
	return d.sys.ps, nil
}

// Sleep moves the system's clock by dur.
func (d systemDevice) Sleep(dur time.Duration) error {
	defer d.enter()()
	d.sys.mu.Lock()
	defer d.sys.mu.Unlock()
	d.sys.ps += uint64(dur.Nanoseconds()) * 1000
	return nil
}

// SleepUntil moves the system's clock towards ps by at most 1 µs a slice,
// never back.
func (d systemDevice) SleepUntil(ps uint64, _ int) (bool, error) {
	defer d.enter()()
	d.sys.mu.Lock()
	defer d.sys.mu.Unlock()
	if d.sys.ps < ps {
		d.sys.ps = min(ps, d.sys.ps+1_000_000)
	}
	return d.sys.ps >= ps, nil
}

// startSystemServer serves the two devices of a fake system, the exports
// given lock (nil: each its own), with the clock limit limitPS.
func startSystemServer(t *testing.T, lock *sync.Mutex, limitPS uint64) (*fakeSystem, string) {
	t.Helper()
	sys := &fakeSystem{}
	if lock == nil {
		sys.linger = 2 * time.Second // the control: hold a call until the other client's comes
	}
	devs := []systemDevice{{newFake(0x10000), sys}, {newFake(0x10000), sys}}
	srv, err := NewServer([]Export{
		{Device: devs[0], Name: "neuron0", Connected: []int{1}, Lock: lock},
		{Device: devs[1], Name: "neuron1", Connected: []int{0}, Lock: lock},
	}, ServerOptions{ClockLimitPS: limitPS})
	require.NoError(t, err)
	addr := "unix:" + shortTempDir(t) + "/s"
	l, err := Listen(addr, false)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.NoError(t, <-done)
	})
	return sys, addr
}

// driveSystem has one client per device of the served fake system write,
// read back, sleep and read the clock, iterations times each, and returns
// their errors; every CLOCK a client reads, of either device, is at least
// the last it read of either.
func driveSystem(t *testing.T, addr string, iterations int) []error {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for dev := range 2 {
		c, err := Dial(addr, ClientOptions{Timeout: 10 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		wg.Go(func() {
			mine, err := c.Device(dev)
			if err != nil {
				errs <- err
				return
			}
			other, err := c.Device(1 - dev)
			if err != nil {
				errs <- err
				return
			}
			var last uint64
			for i := range iterations {
				off := 4 * uint64(i%64)
				if err := mine.Write32(0, off, uint32(dev<<16|i)); err != nil {
					errs <- err
					return
				}
				if v, err := mine.Read32(0, off); err != nil || v != uint32(dev<<16|i) {
					errs <- fmt.Errorf("device %d: read %#x at %#x (%v), wrote %#x", dev, v, off, err, dev<<16|i)
					return
				}
				if err := mine.Sleep(time.Duration(1+i%3) * time.Microsecond); err != nil && !errors.Is(err, ErrLimit) {
					errs <- err
					return
				}
				for _, d := range []*Device{mine, other} {
					ps, err := d.ClockPS()
					if err != nil {
						errs <- err
						return
					}
					if ps < last {
						errs <- fmt.Errorf("device %d: CLOCK %d ps after %d ps: the system's clock went back", dev, ps, last)
						return
					}
					last = ps
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// TestSystemExportsShareOneLock: the exports of one system given one
// Export.Lock are served one call at a time, across devices and
// connections — two clients, each on its own device of the system, never
// have the server call the system twice at once — while each sees the
// system's one clock never go back, and concurrent SLEEPs on the two
// devices never take it past the clock limit. Without the shared lock
// (each export its own, the control) the same clients do overlap, so the
// detector works.
func TestSystemExportsShareOneLock(t *testing.T) {
	const limit = 300 * 1_000_000 // 300 µs: the SLEEPs reach it
	var lock sync.Mutex
	sys, addr := startSystemServer(t, &lock, limit)
	for _, err := range driveSystem(t, addr, 300) {
		t.Error(err)
	}
	assert.Zero(t, sys.overlaps.Load(), "calls on two devices of one system ran at once")
	sys.mu.Lock()
	ps := sys.ps
	sys.mu.Unlock()
	assert.LessOrEqual(t, ps, uint64(limit), "the SLEEPs of two devices took the shared clock past the limit")
	assert.Greater(t, ps, uint64(limit/2), "the SLEEPs ran")

	t.Run("control: own locks overlap", func(t *testing.T) {
		sys, addr := startSystemServer(t, nil, 0)
		for _, err := range driveSystem(t, addr, 300) {
			t.Error(err)
		}
		assert.Positive(t, sys.overlaps.Load(), "without a shared lock the two clients' calls overlap; the detector saw none")
	})
}
