package remote

import (
	"encoding/binary"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/sim"
)

// sleepWait bounds how long slicedFake's unsliced Sleep waits for another
// client's request: a safety net that turns a server holding the device for
// the whole sleep into a failure rather than a hang, not a timing
// assertion.
const sleepWait = 10 * time.Second

// slicedFake is a fake whose sleep cannot end before another client's READ
// of it has been served: the sleep of a busy device, whose events take more
// host time than a slice, with a client waiting for it meanwhile.
type slicedFake struct {
	*fakeDevice
	sleeping, read      chan struct{} // closed when a sleep starts; by the first READ after that
	startOnce, readOnce sync.Once
	slices              atomic.Int64
	// gate, when set, holds the first slice until it is closed: a test
	// closes its client's end meanwhile, before any watcher can start.
	gate chan struct{}
}

var _ ndl.SliceSleeper = (*slicedFake)(nil)

func newSlicedFake() *slicedFake {
	return &slicedFake{fakeDevice: newFake(0x1000), sleeping: make(chan struct{}), read: make(chan struct{})}
}

// ReadBAR reads as the fake does, noting a read during a sleep.
func (d *slicedFake) ReadBAR(bar int, off uint64, dst []uint32) error {
	select {
	case <-d.sleeping:
		d.readOnce.Do(func() { close(d.read) })
	default:
	}
	return d.fakeDevice.ReadBAR(bar, off, dst)
}

// Sleep is the sleep of a server that does not slice, which holds the
// device for all of it: it waits for the other client's READ, which such a
// server cannot serve meanwhile, and gives up after sleepWait.
func (d *slicedFake) Sleep(dur time.Duration) error {
	d.startOnce.Do(func() { close(d.sleeping) })
	select {
	case <-d.read:
	case <-time.After(sleepWait):
		return errors.New("slicedFake: no other client's request was served during the sleep")
	}
	return d.fakeDevice.Sleep(dur)
}

// SleepUntil is a slice: it ends the sleep only once the other client's
// READ has been served (until then the device has events to run).
func (d *slicedFake) SleepUntil(ps uint64, _ int) (bool, error) {
	if d.slices.Add(1) == 1 && d.gate != nil {
		d.startOnce.Do(func() { close(d.sleeping) })
		<-d.gate
	}
	d.startOnce.Do(func() { close(d.sleeping) })
	select {
	case <-d.read:
	default:
		return false, nil
	}
	now, err := d.ClockPS()
	if err != nil {
		return false, err
	}
	if ps > now {
		return true, d.fakeDevice.Sleep(time.Duration((ps - now) / 1000))
	}
	return true, nil
}

// serveOne serves devices on a unix socket until the test ends.
func serveOne(t *testing.T, opts ServerOptions, devs ...ndl.Device) (*Server, string) {
	t.Helper()
	var exports []Export
	for _, d := range devs {
		exports = append(exports, Export{Device: d})
	}
	srv, err := NewServer(exports, opts)
	require.NoError(t, err)
	addr := "unix:" + filepath.Join(shortTempDir(t), "s")
	l, err := Listen(addr, false)
	require.NoError(t, err)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, addr
}

// TestLongSleepLetsOthersIn: while one client's SLEEP runs on a busy
// device, another client's READ of the device is served: the server runs
// the sleep in slices and releases the device between them (it used to
// hold the device's lock for the whole sleep, so the READ waited for it,
// and here the sleep for the READ). The sleep still ends where one sleep
// would.
func TestLongSleepLetsOthersIn(t *testing.T) {
	dev := newSlicedFake()
	_, addr := serveOne(t, ServerOptions{}, dev)
	dial := func() *Device {
		c, err := Dial(addr, ClientOptions{Timeout: 2 * sleepWait})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		d, err := c.Device(0)
		require.NoError(t, err)
		return d
	}
	a, b := dial(), dial()
	before := dev.now()

	slept := make(chan error, 1)
	go func() { slept <- a.Sleep(time.Hour) }()
	<-dev.sleeping
	_, err := b.Read32(hwarch.BAR0, 0)
	require.NoError(t, err, "the other client's READ during the SLEEP")
	require.NoError(t, <-slept, "the SLEEP ends once the READ was served")
	assert.Greater(t, dev.slices.Load(), int64(1), "the sleep ran in slices")
	assert.Equal(t, before+time.Hour, dev.now(), "the clock where one sleep of an hour leaves it")
}

// TestSleepSlicedStopsAtClose: Close ends a SLEEP between its slices
// rather than waiting for a sleep that may take long in host time.
func TestSleepSlicedStopsAtClose(t *testing.T) {
	dev := newSlicedFake() // its slices never end: no READ comes
	srv, addr := serveOne(t, ServerOptions{}, dev)
	c, err := Dial(addr, ClientOptions{Timeout: 2 * sleepWait})
	require.NoError(t, err)
	defer c.Close()
	d, err := c.Device(0)
	require.NoError(t, err)
	slept := make(chan error, 1)
	go func() { slept <- d.Sleep(time.Hour) }()
	<-dev.sleeping
	require.NoError(t, srv.Close(), "Close returns with the SLEEP running")
	require.Error(t, <-slept, "the connection closed under the SLEEP")
}

// readNoted is a served device that notes each READ of it done.
type readNoted struct {
	*sim.Device
	read atomic.Bool
}

// ReadBAR reads the device (which takes the system's lock), then notes
// the read done.
func (d *readNoted) ReadBAR(bar int, off uint64, dst []uint32) error {
	err := d.Device.ReadBAR(bar, off, dst)
	d.read.Store(true)
	return err
}

// TestLongSleepLetsOtherDevicesIn: the two devices of a simulated system
// share one clock and one lock; while a client's SLEEP runs a long chain of
// events on device 0, another client's READ of device 1 is served between
// its slices. The chain goes on, an event a nanosecond, until the READ has
// been served or sleepChainMax events have run: a server that held the
// system for the whole SLEEP (as it used to) runs the chain to its end
// before the READ.
func TestLongSleepLetsOtherDevicesIn(t *testing.T) {
	const sleepChainMax = 20_000_000
	e, mu := sim.NewEngine(), new(sync.Mutex)
	var devs [2]*sim.Device
	for i := range devs {
		d, err := sim.NewWiredDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Name: []string{"a", "b"}[i], RoutingID: uint32(i), Ready: true},
			sim.Wiring{Engine: e, Lock: mu})
		require.NoError(t, err)
		devs[i] = d
	}
	b := &readNoted{Device: devs[1]}
	started := make(chan struct{})
	var ran int
	var seenAt sim.Time // when an event first saw the READ done
	start := startChain(t, e, mu, func(e *sim.Engine, n uint64) (sim.Time, bool) {
		if n == 0 {
			close(started)
		}
		ran++
		if b.read.Load() {
			seenAt = e.Now()
			return 0, false
		}
		return sim.Nanosecond, n < sleepChainMax
	})

	_, addr := serveOne(t, ServerOptions{}, devs[0], b)
	c, err := Dial(addr, ClientOptions{Timeout: time.Minute})
	require.NoError(t, err)
	defer c.Close()
	da, err := c.Device(0)
	require.NoError(t, err)
	c2, err := Dial(addr, ClientOptions{Timeout: time.Minute})
	require.NoError(t, err)
	defer c2.Close()
	db, err := c2.Device(1)
	require.NoError(t, err)

	slept := make(chan error, 1)
	go func() { slept <- da.Sleep(time.Second) }()
	<-started
	_, err = db.Read32(hwarch.BAR0, 0)
	require.NoError(t, err)
	require.NoError(t, <-slept)
	mu.Lock()
	defer mu.Unlock()
	assert.Less(t, ran, sleepChainMax, "the READ was served while the chain ran, not after it")
	assert.NotZero(t, seenAt, "an event of the sleep saw the READ done")
	assert.Equal(t, start+sim.FromDuration(time.Second), e.Now(), "the sleep still ends at its deadline")
}

// pipeConn serves one connection of srv over a pipe and does its
// handshake: it returns the client's end, and a channel closed when the
// server's goroutine for the connection has ended.
func pipeConn(t *testing.T, srv *Server) (net.Conn, <-chan struct{}) {
	t.Helper()
	client, server := net.Pipe()
	require.Equal(t, admitted, srv.track(server))
	done := make(chan struct{})
	go func() { srv.serveConn(server); close(done) }()
	t.Cleanup(func() { _ = client.Close() })
	_, err := client.Write(helloFrame(Version))
	require.NoError(t, err)
	f, err := ReadFrame(client, nil)
	require.NoError(t, err)
	require.Equal(t, OpHelloReply, f.Op)
	return client, done
}

// readWord serves a READ of one word of BAR0 on c and checks the reply.
func readWord(t *testing.T, c net.Conn, tag uint32) {
	t.Helper()
	_, err := c.Write(appendRW(nil, OpRead, tag, rwRequest{bar: hwarch.BAR0, count: 1}))
	require.NoError(t, err)
	f, err := ReadFrame(c, nil)
	require.NoError(t, err)
	require.Equal(t, OpReadReply, f.Op)
	require.Equal(t, tag, f.Tag)
}

// TestSleepStopsWhenClientGoes: a client that closes its connection while
// its SLEEP runs in slices is noticed between slices, and the sleep stops
// there, the device as the last slice left it (the fake's slices run
// nothing until the sleep is done: its clock has not moved) and free for
// others. The server used to run the sleep to its end for nobody — here,
// never, as the fake's sleep ends only after another client's READ.
func TestSleepStopsWhenClientGoes(t *testing.T) {
	dev := newSlicedFake()
	srv, err := NewServer([]Export{{Device: dev}}, ServerOptions{IdleTimeout: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, done := pipeConn(t, srv)
	before := dev.now()
	_, err = c.Write(appendSleep(nil, 1, sleepRequest{ns: uint64(time.Hour)}))
	require.NoError(t, err)
	<-dev.sleeping
	require.NoError(t, c.Close())
	select {
	case <-done:
	case <-time.After(sleepWait): // a safety net, not a timing assertion
		t.Fatal("the server went on sleeping for a client that had closed its connection")
	}
	assert.Equal(t, before, dev.now(), "the clock where the last slice left it")
	assert.Equal(t, 0, srv.Clients(), "the connection is untracked")

	c2, _ := pipeConn(t, srv)
	readWord(t, c2, 7) // the device is not held
}

// TestSleepStopsWhenClientWentInTheFirstSlice: a client gone before the
// watcher starts (during the first slice) stops the sleep too. On a pipe
// the watcher cannot then even set its read deadline; that was once taken
// as "leave it unwatched", and the sleep ran on for nobody (a CI flake).
func TestSleepStopsWhenClientWentInTheFirstSlice(t *testing.T) {
	dev := newSlicedFake()
	dev.gate = make(chan struct{})
	srv, err := NewServer([]Export{{Device: dev}}, ServerOptions{IdleTimeout: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, done := pipeConn(t, srv)
	_, err = c.Write(appendSleep(nil, 1, sleepRequest{ns: uint64(time.Hour)}))
	require.NoError(t, err)
	<-dev.sleeping
	require.NoError(t, c.Close())
	close(dev.gate)
	select {
	case <-done:
	case <-time.After(sleepWait): // a safety net, not a timing assertion
		t.Fatal("the server went on sleeping for a client that had closed its connection in the first slice")
	}
	assert.Equal(t, 0, srv.Clients(), "the connection is untracked")
}

// TestSleepKeepsRequestsSentDuringIt: what a client sends while its SLEEP
// runs — the server's watcher reads it, to notice a disconnect — is served
// after the SLEEP, in order.
func TestSleepKeepsRequestsSentDuringIt(t *testing.T) {
	dev := newSlicedFake()
	srv, err := NewServer([]Export{{Device: dev}}, ServerOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	a, _ := pipeConn(t, srv)
	b, _ := pipeConn(t, srv)
	reqs := appendSleep(nil, 1, sleepRequest{ns: uint64(time.Hour)})
	reqs = appendRW(reqs, OpRead, 2, rwRequest{bar: hwarch.BAR0, count: 1})
	reqs = appendClock(reqs, 3, 0)
	wrote := make(chan error, 1)
	go func() { _, err := a.Write(reqs); wrote <- err }() // a pipe's write waits for the reads
	<-dev.sleeping
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case <-time.After(sleepWait): // a safety net, not a timing assertion
		t.Fatal("the requests after the SLEEP were not read while it ran")
	}
	readWord(t, b, 9) // ends the fake's sleep
	for _, want := range []struct {
		op  Op
		tag uint32
	}{{OpSleepReply, 1}, {OpReadReply, 2}, {OpClockReply, 3}} {
		f, err := ReadFrame(a, nil)
		require.NoError(t, err)
		assert.Equal(t, want.op, f.Op)
		assert.Equal(t, want.tag, f.Tag)
	}
	readWord(t, a, 4) // and the connection goes on
}

// closeNoted is a listener whose connections note their Close.
type closeNoted struct {
	net.Listener
	closed chan struct{} // closed by the first Close of an accepted connection
	once   *sync.Once
}

// Accept accepts a connection whose Close is noted.
func (l closeNoted) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &closeNotedConn{Conn: c, l: l}, nil
}

// closeNotedConn is a connection closeNoted accepted.
type closeNotedConn struct {
	net.Conn
	l closeNoted
}

// Close closes the connection and notes it.
func (c *closeNotedConn) Close() error {
	err := c.Conn.Close()
	c.l.once.Do(func() { close(c.l.closed) })
	return err
}

// TestSleepStoppedForAGoneClientLeavesTheDeviceWhole: a simulated device
// runs a chain of events, one a nanosecond, during a one-second SLEEP
// whose client disconnects (over a unix socket) after the first. The
// server stops the sleep between slices: the clock is at the last event
// run (no event half done, none skipped), short of the deadline, and a
// later SLEEP goes on with the chain from there. Before, the server ran
// the billion events of the second for nobody.
func TestSleepStoppedForAGoneClientLeavesTheDeviceWhole(t *testing.T) {
	e, mu := sim.NewEngine(), new(sync.Mutex)
	dev, err := sim.NewWiredDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Name: "a", Ready: true}, sim.Wiring{Engine: e, Lock: mu})
	require.NoError(t, err)
	started := make(chan struct{})
	var last uint64 // the chain's last event run, under mu
	var lastAt sim.Time
	start := startChain(t, e, mu, func(e *sim.Engine, n uint64) (sim.Time, bool) {
		if n == 0 {
			close(started)
		}
		last, lastAt = n, e.Now()
		return sim.Nanosecond, true
	})

	srv, err := NewServer([]Export{{Device: dev}}, ServerOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ul, err := Listen("unix:"+filepath.Join(shortTempDir(t), "s"), false)
	require.NoError(t, err)
	l := closeNoted{Listener: ul, closed: make(chan struct{}), once: new(sync.Once)}
	go func() { _ = srv.Serve(l) }()
	addr := "unix:" + ul.Addr().String()
	c, err := Dial(addr, ClientOptions{Timeout: time.Minute})
	require.NoError(t, err)
	d, err := c.Device(0)
	require.NoError(t, err)
	slept := make(chan error, 1)
	go func() { slept <- d.Sleep(time.Second) }()
	<-started
	require.NoError(t, c.Close())
	require.Error(t, <-slept)
	select {
	case <-l.closed:
	case <-time.After(sleepWait): // a safety net, not a timing assertion
		t.Fatal("the server went on sleeping for a client that had closed its connection")
	}
	mu.Lock()
	stoppedAt, stoppedLast := e.Now(), last
	assert.Equal(t, lastAt, stoppedAt, "the clock is at the last event run")
	assert.Equal(t, start+sim.Time(stoppedLast)*sim.Nanosecond, stoppedAt, "every event up to it ran, in order")
	assert.Less(t, stoppedAt, start+sim.FromDuration(time.Second), "the sleep stopped short of its deadline")
	mu.Unlock()

	c2, err := Dial(addr, ClientOptions{Timeout: time.Minute})
	require.NoError(t, err)
	defer c2.Close()
	d2, err := c2.Device(0)
	require.NoError(t, err)
	require.NoError(t, d2.Sleep(10*time.Nanosecond))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, stoppedAt+10*sim.Nanosecond, e.Now(), "a later SLEEP goes on from there")
	assert.Equal(t, stoppedLast+10, last, "and the chain with it")
}

// unsliced serves a device as one that cannot sleep in slices (it hides
// ndl.SliceSleeper): the server holds it for each whole SLEEP.
type unsliced struct {
	ndl.Device
	ndl.Sleeper
	ndl.Clock
}

// chainedDevice returns a simulated device, alone in its system, with a
// chain of n events at uneven intervals of a few nanoseconds each, and the
// record of the times its events ran (read with the system's lock, mu).
func chainedDevice(t *testing.T, n uint64) (dev *sim.Device, mu *sync.Mutex, record *[]sim.Time) {
	e := sim.NewEngine()
	mu = new(sync.Mutex)
	dev, err := sim.NewWiredDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Name: "c", Ready: true}, sim.Wiring{Engine: e, Lock: mu})
	require.NoError(t, err)
	record = new([]sim.Time)
	startChain(t, e, mu, func(e *sim.Engine, k uint64) (sim.Time, bool) {
		*record = append(*record, e.Now())
		return sim.Time(1+k*7919%13) * sim.Nanosecond, k+1 < n
	})
	return dev, mu, record
}

// startChain registers a chain of events on e, each running step(e, n)
// and, where step says to go on, scheduling event n+1 the delay it
// returns later, and schedules event 0 now, under mu; it returns that
// time.
func startChain(t *testing.T, e *sim.Engine, mu *sync.Mutex, step func(e *sim.Engine, n uint64) (delay sim.Time, more bool)) sim.Time {
	t.Helper()
	var chain sim.HandlerID
	chain, err := e.Register("test.chain", sim.HandlerFunc(func(e *sim.Engine, n uint64) {
		if delay, more := step(e, n); more {
			if err := e.After(delay, chain, n+1); err != nil {
				t.Error(err) // on the server's goroutine: no FailNow
			}
		}
	}))
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	start := e.Now()
	require.NoError(t, e.After(0, chain, 0))
	return start
}

// TestSleepOfOneClientIsDeterministic: with one client, a SLEEP served in
// slices is one unsliced sleep — the same events at the same times, the
// same clock after each request — however the slices fall, since nothing
// of that client runs between them: a request it pipelines behind its
// SLEEP is served after the SLEEP, at its deadline, not at a time inside
// it (as another client's request between the slices is). The chain of
// 20,000 events takes a sleep of a millisecond through some twenty slices.
func TestSleepOfOneClientIsDeterministic(t *testing.T) {
	const events = 20_000
	run := func(dev ndl.Device) []uint64 {
		_, addr := serveOne(t, ServerOptions{}, dev)
		c, err := Dial(addr, ClientOptions{Timeout: time.Minute})
		require.NoError(t, err)
		defer c.Close()
		d, err := c.Device(0)
		require.NoError(t, err)
		var clocks []uint64
		clock := func() {
			ps, err := d.ClockPS()
			require.NoError(t, err)
			clocks = append(clocks, ps)
		}
		for _, dur := range []time.Duration{50 * time.Microsecond, time.Millisecond, 3 * time.Nanosecond, time.Millisecond} {
			require.NoError(t, d.Sleep(dur))
			clock()
			_, err := d.Read32(hwarch.BAR0, 0)
			require.NoError(t, err)
			clock()
		}
		return clocks
	}
	sliced, smu, srec := chainedDevice(t, events)
	whole, wmu, wrec := chainedDevice(t, events)
	counted := &countedSlices{Device: sliced}
	slicedClocks := run(counted)
	wholeClocks := run(unsliced{whole, whole, whole})
	smu.Lock()
	defer smu.Unlock()
	wmu.Lock()
	defer wmu.Unlock()
	assert.Equal(t, wholeClocks, slicedClocks, "the clock after each request")
	require.Len(t, *srec, events, "every event of the chain ran")
	assert.Equal(t, *wrec, *srec, "the same events at the same times")
	assert.Greater(t, counted.slices.Load(), int64(8), "the sleeps ran in slices")
}

// countedSlices is a simulated device that counts its slices of sleep.
type countedSlices struct {
	*sim.Device
	slices atomic.Int64
}

// SleepUntil runs a slice and counts it.
func (d *countedSlices) SleepUntil(ps uint64, maxEvents int) (bool, error) {
	d.slices.Add(1)
	return d.Device.SleepUntil(ps, maxEvents)
}

// TestPipelinedRequestRunsAfterTheSleep: a CLOCK a client sends behind its
// own SLEEP, in one write, reads the SLEEP's deadline: it is not served
// between the slices, though the server reads it meanwhile.
func TestPipelinedRequestRunsAfterTheSleep(t *testing.T) {
	dev, _, _ := chainedDevice(t, 20_000)
	srv, err := NewServer([]Export{{Device: dev}}, ServerOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, _ := pipeConn(t, srv)
	start, err := dev.ClockPS()
	require.NoError(t, err)
	reqs := appendClock(appendSleep(nil, 1, sleepRequest{ns: uint64(time.Millisecond)}), 2, 0)
	wrote := make(chan error, 1)
	go func() { _, err := c.Write(reqs); wrote <- err }()
	f, err := ReadFrame(c, nil)
	require.NoError(t, err)
	require.Equal(t, OpSleepReply, f.Op)
	f, err = ReadFrame(c, nil)
	require.NoError(t, err)
	require.Equal(t, OpClockReply, f.Op)
	require.NoError(t, <-wrote)
	assert.Equal(t, start+uint64(time.Millisecond)*1000, binary.LittleEndian.Uint64(f.Payload), "the CLOCK reads the SLEEP's deadline")
}
