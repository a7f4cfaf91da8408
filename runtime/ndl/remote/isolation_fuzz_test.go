package remote

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/sim"
)

// The isolation fuzzer serves one simulated device to the three fuzzed
// connections of the request-sequence fuzzer (seqRun: any requests,
// malformed frames, requests cut short, disconnects) and to an observer: a
// Client running a fixed script of requests whose results depend on
// nothing but its own connection's state (its host buffers and their
// bytes, the server's refusals of its own bad requests, its per-connection
// budget). The observer's transcript must be the one it gets on a server
// it has to itself: whatever the other connections send, they never change
// what another client observes of its own state.
//
// The server's limits leave room for the observer: a server-wide host
// budget the fuzzed connections' per-connection budgets cannot use up, and
// a page budget their BAR4 and host writes cannot use up (the budgets are
// shared by design; what a connection is promised is its own budget).

// isoLimits are the server limits of the isolation fuzzer.
var isoLimits = ServerOptions{
	MaxClients:           4,
	HostBytesPerClient:   1 << 20,
	HostBuffersPerClient: 8,
	HostBytes:            4 << 20,
	HostGranule:          sim.HostGranule,
}

// isoPages is the isolation fuzzer's page budget: 16 MiB, above the 4 MiB
// of host memory the connections may hold and what an input of at most 512
// bytes can write to BAR4.
const isoPages = 4096

// observer is the client of the isolation fuzzer that runs isoScript.
type observer struct {
	c    *Client
	d    *Device
	done chan struct{} // closed when the server's goroutine ends
	pa   [2]uint64     // its host buffers
	log  []string      // the outcome of each step
	next int           // the next step of isoScript
}

// isoPattern is the bytes the observer writes to its buffer k.
func isoPattern(k, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(17*k + i + i>>8)
	}
	return b
}

// outcome describes a step's result by what it may depend on: its
// sentinel, never an address or a text that names one.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range []error{ErrNotOwned, ErrLimit, ErrNoDevice, ErrUnsupported, ErrProtocol, ErrVersion,
		ndl.ErrBadBAR, ndl.ErrBAROffset, ndl.ErrAlignment, ndl.ErrClosed} {
		if errors.Is(err, s) {
			return "error: " + s.Error()
		}
	}
	return "error: " + err.Error()
}

// isoScript is the observer's script: host buffers written and read back,
// refusals of its own bad requests, and its per-connection budget.
var isoScript = []func(o *observer) string{
	func(o *observer) string { return o.alloc(0, 4096, 64) },
	func(o *observer) string { return outcome(o.d.HostWrite(o.pa[0], isoPattern(0, 4096))) },
	func(o *observer) string { return o.alloc(1, 64<<10, 4096) },
	func(o *observer) string { return outcome(o.d.HostWrite(o.pa[1], isoPattern(1, 64<<10))) },
	func(o *observer) string { return o.readBack(0, 4096) },
	func(o *observer) string { _, err := o.d.Read32(hwarch.BAR0, 1<<40); return outcome(err) },
	func(o *observer) string { _, err := o.d.Read32(2, 0); return outcome(err) },
	func(o *observer) string { return outcome(o.d.HostRead(o.pa[0]+4094, make([]byte, 4))) }, // past its end
	func(o *observer) string { return outcome(o.d.HostFree(o.pa[0])) },
	func(o *observer) string { return outcome(o.d.HostFree(o.pa[0])) }, // freed already
	func(o *observer) string { return outcome(o.d.HostRead(o.pa[0], make([]byte, 16))) },
	func(o *observer) string { return o.readBack(1, 64<<10) },
	func(o *observer) string { _, err := o.d.HostAlloc(1<<20, 64); return outcome(err) }, // past its own budget
	func(o *observer) string { return o.alloc(0, 512<<10, 64) },                          // within it, whatever others hold
	func(o *observer) string { return outcome(o.d.HostWrite(o.pa[0]+100, isoPattern(2, 1000))) },
	func(o *observer) string { return o.readBack(1, 64<<10) },
	func(o *observer) string { _, err := o.d.ClockPS(); return outcome(err) },
	func(o *observer) string { return outcome(o.d.Write32(hwarch.BAR0, 1<<40, 1)) },
	func(o *observer) string { return outcome(o.d.HostFree(o.pa[1])) },
	func(o *observer) string { return outcome(o.d.HostFree(o.pa[0])) },
}

// isoObserverCharge bounds the host memory the observer holds charged.
const isoObserverCharge = 4096 + 64<<10 + 512<<10

// alloc allocates the observer's buffer k.
func (o *observer) alloc(k int, size, align uint64) string {
	pa, err := o.d.HostAlloc(size, align)
	if err != nil {
		return outcome(err)
	}
	o.pa[k] = pa
	return fmt.Sprintf("ok, aligned %t", pa%align == 0)
}

// readBack reads the observer's buffer k and compares it with what the
// script wrote there.
func (o *observer) readBack(k, n int) string {
	got := make([]byte, n)
	if err := o.d.HostRead(o.pa[k], got); err != nil {
		return outcome(err)
	}
	if !bytes.Equal(got, isoPattern(k, n)) {
		return fmt.Sprintf("buffer %d holds other bytes than were written", k)
	}
	return "ok, as written"
}

// step runs the observer's next step; false when the script is done.
func (o *observer) step() bool {
	if o.next == len(isoScript) {
		return false
	}
	o.log = append(o.log, fmt.Sprintf("step %d: %s", o.next, isoScript[o.next](o)))
	o.next++
	return true
}

// openObserver connects the observer.
func (r *seqRun) openObserver() *observer {
	client, server := net.Pipe()
	require.Equal(r.t, admitted, r.srv.track(server))
	o := &observer{done: make(chan struct{})}
	go func() { r.srv.serveConn(server); close(o.done) }()
	r.all = append(r.all, o.done)
	c, err := newClient(client, "pipe", 10*time.Second, Version)
	require.NoError(r.t, err, "the observer's handshake")
	d, err := c.Device(0)
	require.NoError(r.t, err)
	o.c, o.d = c, d
	r.others = isoObserverCharge
	return o
}

// closeObserver closes the observer's connection and waits for the server
// to be done with it.
func (r *seqRun) closeObserver(o *observer) {
	require.NoError(r.t, o.c.Close())
	select {
	case <-o.done:
	case <-time.After(10 * time.Second):
		r.t.Fatal("the server did not end the observer's connection")
	}
	r.others = 0
}

var (
	isoBaselineOnce sync.Once
	isoBaseline     []string
)

// isoAlone is the observer's transcript on a server it has to itself.
func isoAlone(t *testing.T) []string {
	isoBaselineOnce.Do(func() {
		r := newSeqRunWith(t, isoLimits, isoPages)
		defer r.srv.Close()
		o := r.openObserver()
		for o.step() {
		}
		r.closeObserver(o)
		isoBaseline = o.log
	})
	require.Len(t, isoBaseline, len(isoScript), "the observer's transcript alone")
	return isoBaseline
}

// FuzzClientIsolation drives three connections with request sequences (as
// FuzzRequestSequences) beside an observer running isoScript, and checks
// that the observer's transcript is the one it gets alone. The first input
// byte chooses how they meet: odd, the observer runs its whole script in
// its own goroutine while the sequence runs; even, it runs 0 to 2 steps
// between the sequence's requests, as the byte before each request says.
// After the sequence, the observer finishes and leaves, and a fresh client
// finds the device working (seqRun.fresh).
func FuzzClientIsolation(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1})
	// Between its steps: another connection allocates, writes and frees
	// host memory, reads and writes BAR4, sleeps, disconnects mid-frame.
	f.Add([]byte{0, 1, 0x03, 1, 2, 0x06, 0, 0, 7, 1, 0x05, 1, 0, 2, 1, 0x04, 1, 0, 1, 0x0B, 1, 3, 9, 2, 0x12, 0})
	// Other connections take their whole host budget and free it.
	f.Add(append([]byte{0}, bytes.Repeat([]byte{2, 0x03, 2, 0, 1, 0x13, 2, 0}, 6)...))
	// Malformed frames, requests cut short and disconnects, concurrently.
	f.Add([]byte{1, 0, 0x09, 4, 0x7F, 0, 0x1B, 2, 9, 5, 0, 0x28, 0, 0x0A, 5, 0, 0, 0x08})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			return // sequences of at most ~100 requests keep a run short
		}
		want := isoAlone(t)
		r := newSeqRunWith(t, isoLimits, isoPages)
		defer r.srv.Close()
		in := &seqReader{b: data}
		o := r.openObserver()
		if in.u8()%2 == 1 {
			done := make(chan struct{})
			go func() {
				defer close(done)
				for o.step() {
				}
			}()
			for len(in.b) > 0 {
				r.step(in)
			}
			<-done
		} else {
			for len(in.b) > 0 {
				for range in.u8() % 3 {
					o.step()
				}
				if len(in.b) > 0 {
					r.step(in)
				}
			}
		}
		for o.step() {
		}
		r.closeObserver(o)
		require.Equal(t, want, o.log, "the observer's transcript beside the fuzzed connections, against alone")
		r.fresh()
	})
}
