package vfiouser

import (
	"encoding/binary"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// stallRun is what stallTogether measured.
type stallRun struct {
	reads    int           // device 0's BAR reads
	max      time.Duration // the longest of them
	stalled  time.Duration // the time spent in reads longer than stallRead
	sessions int           // device 1's sessions whose VERSION was accepted
	refused  int           // device 1's connections refused (EAGAIN)
}

// stallRead: a BAR read that takes longer than this waited on the system.
const stallRead = 50 * time.Millisecond

// stallTogether runs, for window, a client of device 1 of r that does
// not answer DMA requests, reconnecting as soon as its session ends —
// VERSION, a DMA whose ring is in a mapping without a file (the server
// sends DMA_READ and waits, the system held), then it reads everything
// and answers nothing — beside a client of device 0 reading a BAR
// register as fast as it can.
func stallTogether(t *testing.T, r *systemRig, window time.Duration) stallRun {
	t.Helper()
	stream := guestDMAStream(t, true)
	end := time.Now().Add(window)
	hostile := make(chan stallRun, 1)
	go func() { // no testing.T method here: it is not the test's goroutine
		var run stallRun
		defer func() { hostile <- run }()
		for time.Now().Before(end) {
			c, err := Dial(r.path[1])
			if err != nil {
				return
			}
			_, err = c.Version(clientCaps)
			switch {
			case errors.Is(err, syscall.EAGAIN):
				run.refused++
				c.Close()
				time.Sleep(5 * time.Millisecond)
				continue
			case err != nil:
				c.Close()
				return
			}
			run.sessions++
			if _, err := c.c.Write(stream); err == nil {
				for { // reads everything, answers nothing, until the server closes
					if _, _, err := c.recv(); err != nil {
						break
					}
				}
			}
			c.Close()
		}
	}()
	dev := r.sys.Device(0)
	c := dial(t, r.path[0])
	c.handshake()
	reg := uint32(dev.RegisterBAR())
	id := dev.Geometry().BAR0.MiscRAM + hwarch.MiscRoutingID
	var run stallRun
	for time.Now().Before(end) {
		t0 := time.Now()
		p, err := c.regionRead(reg, id, 4)
		d := time.Since(t0)
		require.NoError(t, err)
		require.Equal(t, dev.Config().RoutingID, binary.LittleEndian.Uint32(p))
		run.reads++
		run.max = max(run.max, d)
		if d > stallRead {
			run.stalled += d
		}
	}
	c.Close()
	h := <-hostile
	run.sessions, run.refused = h.sessions, h.refused
	return run
}

// TestDMAStallBackoff: a client of device 1 that lets the server's DMA
// requests go unanswered, reconnecting each time its session ends, used
// to hold the system — and device 0's client with it — ReplyTimeout at a
// time, again and again: device 0's reads were stalled nearly all the
// time. Now its socket refuses new clients (EAGAIN) for StallBackoff after
// such a session, so device 0's client waits at most one ReplyTimeout in
// the window (shorter than the back-off), and device 1 serves again once
// the back-off has passed.
func TestDMAStallBackoff(t *testing.T) {
	const replyTimeout, window = 200 * time.Millisecond, 2 * time.Second
	r := newSystemRig(t, Options{ReplyTimeout: replyTimeout, StallBackoff: 3 * time.Second})
	run := stallTogether(t, r, window)
	t.Logf("device 0: %d reads, the longest %v, %v stalled in %v; device 1: %d sessions, %d refused", run.reads, run.max, run.stalled, window, run.sessions, run.refused)
	assert.Equal(t, 1, run.sessions, "device 1's sessions in the window")
	assert.Positive(t, run.refused, "device 1's reconnections refused")
	// One read waits out the reply timeout; others may be slow on a loaded
	// host (a 2-core machine running other tests: reads of 50 ms and more
	// add up), but without the back-off the reads were stalled the whole
	// window (2.01 s of 2 s, measured with a back-off of 1 ns), so half of
	// it still tells the two apart.
	assert.Less(t, run.max, replyTimeout+2*stallRead, "device 0's longest read")
	assert.Less(t, run.stalled, window/2, "device 0's reads stalled in all")
	require.NotZero(t, r.log.count("refused a client"), "the refusals are logged:\n%s", r.log)
	waitUntil(t, 5*time.Second, func() bool { return r.srv[1].backoffLeft() == 0 }, "the back-off to pass")
	served(t, r.srv[1], dial(t, r.path[1]))
}
