package vfiouser

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// TestWaitBudgetAccount checks the account of Options.WaitBudget on a
// timeline of its own (milliseconds from the session's start): when a
// wait begun at a moment would run the budget out, given the waits
// before it. The rule: over every stretch ending now, of length L, the
// server may have waited at most the budget + L/10.
func TestWaitBudgetAccount(t *testing.T) {
	const budget = 1000 * time.Millisecond
	type wait struct{ from, to int } // ms
	for _, tc := range []struct {
		name  string
		waits []wait        // done, in order
		at    int           // a new wait begins then (ms)
		want  time.Duration // how long it may last
	}{
		{"fresh session", nil, 0, 1111111112 * time.Nanosecond}, // 1000 ms at 9/10: 1111.1 ms
		{"fresh, later", nil, 5000, 1111111112 * time.Nanosecond},
		{"after 900 ms of waiting", []wait{{0, 900}}, 900, 211111112 * time.Nanosecond},              // 1000 − 810 = 190 left
		{"earned back in part", []wait{{0, 900}}, 1900, 322222223 * time.Nanosecond},                 // 190 + 100 = 290 left
		{"earned back in full", []wait{{0, 900}}, 20000, 1111111112 * time.Nanosecond},               // never above the budget
		{"two just-in-time waits", []wait{{0, 900}, {900, 1000}}, 1000, 111111112 * time.Nanosecond}, // 190 − 90 = 100 left
		{"overlapping waits count once", []wait{{0, 900}, {100, 800}}, 900, 211111112 * time.Nanosecond},
		{"run out", []wait{{0, 1200}}, 1200, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
			b := newWaitBudget(budget, t0)
			// the waits as events in time order: begins before ends at one moment
			type ev struct {
				ms    int
				begin bool
			}
			var evs []ev
			for _, w := range tc.waits {
				evs = append(evs, ev{w.from, true}, ev{w.to, false})
			}
			for i := range evs { // insertion sort: few events
				for j := i; j > 0 && (evs[j].ms < evs[j-1].ms || evs[j].ms == evs[j-1].ms && evs[j].begin && !evs[j-1].begin); j-- {
					evs[j], evs[j-1] = evs[j-1], evs[j]
				}
			}
			for _, e := range evs {
				if e.begin {
					b.begin(at(e.ms))
				} else {
					b.end(at(e.ms))
				}
			}
			got := b.begin(at(tc.at)).Sub(at(tc.at))
			b.end(at(tc.at))
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestWaitBudgetIsTheRule checks the account against the rule itself on
// many waits: a wait of a client answering just in time, again and
// again, with short gaps, ends exactly when the waits of some stretch
// ending then pass the budget plus a tenth of the stretch.
func TestWaitBudgetIsTheRule(t *testing.T) {
	const budget = 10 * time.Second
	t0 := time.Unix(1000, 0)
	b := newWaitBudget(budget, t0)
	type span struct{ from, to time.Duration }
	var done []span
	now := time.Duration(0)
	for i := 0; ; i++ {
		now += time.Duration(i%3) * 700 * time.Millisecond // a gap of 0, 0.7 or 1.4 s
		limit := b.begin(t0.Add(now)).Sub(t0.Add(now))
		const each = 9900 * time.Millisecond // just inside a ReplyTimeout of 10 s
		if limit < each {
			// the rule: waiting until now+limit breaks it for some stretch; a
			// millisecond less does not
			breaks := func(end time.Duration) bool {
				all := append(done, span{now, end})
				for _, s := range all { // the worst stretch starts where a wait does
					var w time.Duration
					for _, u := range all {
						if u.to > s.from {
							w += u.to - max(u.from, s.from)
						}
					}
					if w > budget+(end-s.from)/WaitRefillDivisor {
						return true
					}
				}
				return false
			}
			assert.True(t, breaks(now+limit+time.Microsecond), "waiting past the account's limit keeps the rule")
			assert.False(t, breaks(now+limit-time.Millisecond), "the account ends a wait the rule allows")
			require.Less(t, i, 5, "a just-in-time client was let wait %d times", i)
			return
		}
		b.end(t0.Add(now + each))
		done = append(done, span{now, now + each})
		now += each
	}
}

// slowClient reads every message of c, answering each DMA request after
// delay, until reading fails; it sends how many DMA requests it received
// and the error that stopped it.
type slowResult struct {
	requests int
	err      error
}

func slowClient(c *testClient, delay time.Duration) <-chan slowResult {
	res := make(chan slowResult, 1)
	go func() { // no testing.T method here: it is not the test's goroutine
		var r slowResult
		defer func() { res <- r }()
		for {
			h, p, err := c.recv()
			if err != nil {
				r.err = err
				return
			}
			if h.Type() == FlagCommand && (h.Command == CmdDMARead || h.Command == CmdDMAWrite) {
				r.requests++
				time.Sleep(delay)
				c.serveDMA(h, p)
			}
		}
	}()
	return res
}

// runRemoteQueue starts r's queue of DMA_WRITEs to c's mapping without a
// file, its requests answered by slowClient after delay, and moves the
// clock by b's reads until the queue is done or halts. It returns the
// DMA requests c received, whether c's session is still live (then c is
// left for the test to use) and the queue's state.
func runRemoteQueue(t *testing.T, r *remoteRig, delay time.Duration) (requests int, live bool, qs dma.QueueState) {
	t.Helper()
	_, err := r.c.c.Write(msgBytes(Header{ID: 999, Command: CmdRegionWrite}, rwPayload(r.base+udma.QueueReg(udma.M2S, r.q, udma.QTailInc), r.reg, 4, le32(pairs))))
	require.NoError(t, err)
	res := slowClient(r.c, delay)
	end := time.Now().Add(20 * time.Second)
	for {
		_, err := r.b.regionRead(r.reg, 0, 4) // passes MMIO time: the transfers come due
		require.NoError(t, err)
		qs, err = r.dev.DMAQueue(r.eng, r.q)
		require.NoError(t, err)
		if qs.Done == pairs || qs.Status&udma.StatusHalted != 0 {
			break
		}
		require.True(t, time.Now().Before(end), "the queue neither finished nor halted in 20 s: %+v", qs)
	}
	if qs.Done == pairs {
		// nothing more comes: stop the reader where a message would start
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, r.c.c.SetReadDeadline(time.Now()))
	}
	var sr slowResult
	select {
	case sr = <-res:
	case <-time.After(10 * time.Second):
		t.Fatal("the client's reading did not end")
	}
	live = errors.Is(sr.err, os.ErrDeadlineExceeded)
	if live {
		require.NoError(t, r.c.c.SetReadDeadline(time.Time{}))
	}
	return sr.requests, live, qs
}

// TestWaitBudget: a client of one device of a system answers each of the
// server's DMA_WRITE requests (sent with the system's lock held) after a
// delay. One that answers each just inside ReplyTimeout used to hold the
// system request after request, for as long as its device's queue sent
// them; now its session ends once the waits pass WaitBudget (plus a
// tenth of the time), logged as a stall is, the queue halts, and its
// socket refuses new clients (EAGAIN) for StallBackoff. One that
// answers within the budget is served on.
func TestWaitBudget(t *testing.T) {
	const replyTimeout = 200 * time.Millisecond
	for _, tc := range []struct {
		name        string
		delay       time.Duration // before each answer
		budget      time.Duration
		ended       bool // by the budget
		maxRequests int  // DMA requests received, when ended
	}{
		// 250 ms: 160 left after the first, 70 after the second, ended in
		// the third; a loaded host only makes the waits longer
		{"half the reply timeout each", replyTimeout / 2, 250 * time.Millisecond, true, 3},
		// the budget runs out (at 55.6 ms) inside the first wait
		{"budget below one wait", replyTimeout / 2, 50 * time.Millisecond, true, 1},
		// 30 requests of about 5 ms spend 135 ms of 2 s; on a loaded host
		// each may take several times that and still stay within it
		{"slow within the budget", 5 * time.Millisecond, 2 * time.Second, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &logLines{}
			opt := Options{NoPacing: true, ReplyTimeout: replyTimeout, StallBackoff: time.Minute, WaitBudget: tc.budget, Logf: log.logf}
			r := newRemoteRig(t, opt)
			t0 := time.Now()
			requests, live, qs := runRemoteQueue(t, r, tc.delay)
			took := time.Since(t0)
			t.Logf("%d DMA requests, the queue done %d, status %#x, in %v", requests, qs.Done, qs.Status, took)
			if !tc.ended {
				assert.Equal(t, uint64(pairs), qs.Done, "the queue finished")
				assert.True(t, live, "the session is live")
				assert.Zero(t, log.count("session ended"), "no session ended:\n%s", log)
				// and the client is served on
				p, err := r.c.regionRead(RegionConfig, 0, 4)
				require.NoError(t, err)
				assert.Len(t, p, 4)
				assert.Zero(t, r.srv[0].backoffLeft(), "no back-off")
				return
			}
			assert.NotZero(t, qs.Status&udma.StatusHalted, "the queue halts: a DMA_WRITE failed")
			assert.False(t, live, "the session ended")
			assert.Positive(t, requests, "DMA requests sent")
			assert.LessOrEqual(t, requests, tc.maxRequests, "DMA requests sent before the session ended")
			waitUntil(t, 5*time.Second, func() bool { return log.count("session ended") > 0 }, "the end to be logged")
			require.Equal(t, 1, log.count("wait budget ran out"), "the end is the budget's:\n%s", log)
			require.Equal(t, 1, log.count("new clients are refused for 1m0s (StallBackoff)"), "logged as a stall is:\n%s", log)
			assert.Zero(t, log.count("no reply in"), "not the reply timeout's:\n%s", log)
			assert.Positive(t, r.srv[0].backoffLeft(), "the back-off")
			// a new client is refused for StallBackoff
			c, err := Dial(r.paths[0])
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Version(clientCaps)
			require.True(t, errors.Is(err, syscall.EAGAIN), "a new client's VERSION: %v, want EAGAIN", err)
			waitUntil(t, 5*time.Second, func() bool { return log.count("refused a client") > 0 }, "the refusal to be logged")
			// the other device's client is served on
			_, err = r.b.regionRead(r.reg, 0, 4)
			require.NoError(t, err)
		})
	}
}

// TestWaitBudgetFastClient: a client that answers DMA requests at once,
// as a guest's vfio-user client does, runs its queue of 30 DMA_WRITEs
// under a budget far smaller than the defaults and is never ended: its
// waits are microseconds each.
func TestWaitBudgetFastClient(t *testing.T) {
	log := &logLines{}
	opt := Options{NoPacing: true, ReplyTimeout: 200 * time.Millisecond, WaitBudget: time.Second, Logf: log.logf}
	r := newRemoteRig(t, opt)
	requests, live, qs := runRemoteQueue(t, r, 0)
	assert.Equal(t, uint64(pairs), qs.Done, "the queue finished")
	assert.Zero(t, qs.Status&udma.StatusHalted, "the queue did not halt")
	assert.Equal(t, pairs, requests, "DMA requests")
	assert.True(t, live, "the session is live")
	// and again, on the same session: the waits stay within the budget
	for i := range 3 {
		p, err := r.c.regionRead(RegionConfig, 0, 4)
		require.NoError(t, err, "round %d", i)
		assert.Len(t, p, 4)
	}
	assert.Zero(t, log.count("session ended"), "no session ended:\n%s", log)
	assert.Zero(t, r.srv[0].backoffLeft(), "no back-off")
}

// TestWaitBudgetOptions: WaitBudget 0 takes the default; negative, or
// past MaxWaitBudget, is refused with ErrLimit.
func TestWaitBudgetOptions(t *testing.T) {
	o := Options{}
	require.NoError(t, o.fill())
	assert.Equal(t, DefaultWaitBudget, o.WaitBudget)
	for _, w := range []time.Duration{-1, -time.Second, MaxWaitBudget + 1} {
		o := Options{WaitBudget: w}
		err := o.fill()
		assert.ErrorIs(t, err, ErrLimit, "WaitBudget %v", w)
	}
	o = Options{WaitBudget: MaxWaitBudget}
	require.NoError(t, o.fill())
	err := newWaitBudget(time.Second, time.Now()).exhausted("a wait", time.Now())
	assert.ErrorIs(t, err, ErrWaitBudget)
	assert.ErrorIs(t, err, ErrDisconnected)
	d := spendable(MaxWaitBudget) // no overflow at the largest budget
	assert.Greater(t, d, MaxWaitBudget)
	assert.GreaterOrEqual(t, d-d/WaitRefillDivisor, MaxWaitBudget)
}

// TestWaitBudgetUnreadSocket: the budget counts the server's waits to
// write, too. A client that stops reading its socket (replies to its
// reads fill it) is ended by a budget smaller than ReplyTimeout; the
// error ServeConn returns wraps ErrWaitBudget and ErrDisconnected, and the
// next client is refused ErrBackoff.
func TestWaitBudgetUnreadSocket(t *testing.T) {
	opt := Options{NoPacing: true, ReplyTimeout: time.Minute, WaitBudget: 100 * time.Millisecond, StallBackoff: time.Minute}
	dev, err := sim.NewDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Revision: hwarch.RevisionQEMU, Ready: true})
	require.NoError(t, err)
	s, err := New(dev, opt)
	require.NoError(t, err)
	srvEnd, cliEnd := socketPair(t)
	defer cliEnd.Close()
	done := make(chan error, 1)
	go func() { done <- s.ServeConn(srvEnd) }()
	c := &testClient{Client: NewClient(cliEnd), tb: t}
	c.handshake()
	var stream []byte
	for i := range 512 { // 2 MiB of replies: far past a unix socket's buffers
		stream = append(stream, msgBytes(Header{ID: uint16(100 + i), Command: CmdRegionRead}, rwPayload(0, RegionConfig, 4096, nil))...)
	}
	_, err = cliEnd.Write(stream)
	require.NoError(t, err)
	t0 := time.Now()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the session of a client that reads nothing did not end")
	}
	t.Logf("ended after %v: %v", time.Since(t0), err)
	assert.ErrorIs(t, err, ErrWaitBudget)
	assert.ErrorIs(t, err, ErrDisconnected)
	assert.ErrorContains(t, err, "not taken by the client when the session's wait budget ran out (WaitBudget 100ms")
	assert.Less(t, time.Since(t0), 10*time.Second, "ended by the budget, not by ReplyTimeout (1 min)")

	srvEnd, cliEnd = socketPair(t)
	defer cliEnd.Close()
	go func() { done <- s.ServeConn(srvEnd) }()
	_, err = NewClient(cliEnd).Version(clientCaps)
	assert.ErrorIs(t, err, syscall.EAGAIN)
	assert.ErrorIs(t, <-done, ErrBackoff)
}
