package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// Export is one device a Server serves. The server never closes it: the
// caller owns it and closes it after Server.Close.
type Export struct {
	// Device answers the requests; if it implements ndl.Sleeper, SLEEP
	// requests reach it, if it implements ndl.HostMemory, the host requests
	// (HOST_ALLOC, HOST_FREE, HOST_READ, HOST_WRITE) do, and if it
	// implements ndl.Clock, CLOCK does.
	Device ndl.Device
	// Name is a short name clients see (at most MaxNameLen bytes of UTF-8).
	Name string
	// Connected lists the export indices of the devices this one is
	// connected to (at most MaxConnected, each in range).
	Connected []int
	// Lock, when set, is the lock the server serialises this device's
	// calls with, shared with every other export given the same Lock: the
	// exports of one simulated system (one engine, one clock, the fabric
	// between the devices) give the same one, so that a request to one of
	// its devices never runs between the steps of another's (a SLEEP's
	// clock reading, limit check and first slice; a HOST_ALLOC's calls).
	// nil: a lock of the export's own. It is the export lock of the
	// package doc's "Locks": taken before the devices' own locks, never
	// with the server's lock held, and never by anything but the server
	// while the server runs.
	Lock *sync.Mutex
}

// ServerOptions tunes a Server. The zero value sets no limit but the clock
// limit (DefaultClockLimitPS); `neuronsim serve` sets every one (see
// docs/remote-protocol.md, "Server limits").
type ServerOptions struct {
	// IdleTimeout bounds the wait for each request frame after the
	// handshake, from the end of the previous reply to the frame's last
	// byte; a connection that exceeds it is closed. 0: no limit.
	IdleTimeout time.Duration
	// HandshakeTimeout bounds the wait for the HELLO frame, from the
	// connection's accept to its last byte; a connection that exceeds it
	// is closed. 0: IdleTimeout applies to the HELLO too.
	HandshakeTimeout time.Duration
	// WriteTimeout bounds the write of each reply. 0: no limit.
	WriteTimeout time.Duration
	// MaxClients bounds the connections open at once, handshaking or not.
	// A connection past it is answered, best effort, with an ERROR (code
	// 11, ErrLimit) naming the limit and closed. 0: no limit.
	MaxClients int
	// HostBytesPerClient bounds the bytes of host memory one connection
	// holds allocated (the sum of its HOST_ALLOC sizes not yet freed).
	// 0: no limit.
	HostBytesPerClient uint64
	// HostBuffersPerClient bounds the host buffers one connection holds
	// allocated. 0: no limit. When both it and MaxClients are set,
	// NewServer refuses them if MaxClients × HostBuffersPerClient passes
	// the buffers the host-memory allocator of an exported device holds
	// (ndl.HostBufferLimit, which a simulated device implements): all the
	// connections may put their buffers on one device, and a connection
	// within its quota must never be refused by the allocator for buffers
	// others took. With either 0 the allocator's own refusal is the bound.
	HostBuffersPerClient int
	// HostBytes bounds the bytes of host memory all connections together
	// hold allocated. 0: no limit.
	HostBytes uint64
	// HostGranule is the granule of the devices' host-memory allocator, a
	// power of two up to MaxHostAlign: every buffer it hands out starts at
	// a multiple of it, so an alignment up to it costs nothing. A
	// HOST_ALLOC at a larger alignment counts against HostBytesPerClient
	// and HostBytes as its size rounded up to the alignment (hostCharge),
	// so that large alignments do not take a connection past its share of
	// the window. 0: DefaultHostGranule; `neuronsim serve` gives the
	// simulator's.
	HostGranule uint64
	// ClockLimitPS is the latest time, in picoseconds, that a SLEEP may take
	// a device's clock to (a SLEEP past it is refused with ErrLimit); the
	// time left above it is kept for the accesses and transfers that pass
	// time themselves, so that no client can leave a device whose clock
	// cannot move. 0: DefaultClockLimitPS; at most units.MaxTimePS.
	ClockLimitPS uint64
	// Logf, when set, reports connections the server closed for a
	// malformed frame, a refused handshake, a timeout or an I/O error, with
	// the reason. Clean disconnects and Close are not reported.
	Logf func(format string, args ...any)
}

// errorReplyTimeout bounds the best-effort ERROR reply sent before closing
// a connection for a protocol violation or past MaxClients.
const errorReplyTimeout = time.Second

// DefaultHostGranule is ServerOptions.HostGranule when it is 0: 64 bytes,
// the simulator's host granule (a cache line).
const DefaultHostGranule = 64

// DefaultClockLimitPS is ServerOptions.ClockLimitPS when it is 0: half of
// units.MaxTimePS (2^61 ps, about 26.7 days of virtual time), leaving the
// other half for MMIO accesses and DMA transfers, which at a microsecond
// each would need 2^61/10^6 ≈ 2.3·10^12 of them to use it up.
const DefaultClockLimitPS = units.MaxTimePS / 2

// maxRefusing bounds the refused connections being drained at once; beyond
// it they are closed right after their answer.
const maxRefusing = 64

// refusalWriteTimeout bounds the write of the answer to a refused
// connection, which the accept loop does itself.
const refusalWriteTimeout = 100 * time.Millisecond

// shrinkAbove is the most a connection's own buffers (request frame, reply
// frame, words) grow to. A larger frame, reply or word array is served in a
// buffer of the largest size from the server's pool (bigBuffers), taken for
// the request and given back after its reply, so an idle connection holds
// at most 64 KiB of each, not the 1 MiB frames it once carried, and moving
// a large transfer 1 MiB at a time allocates nothing per request.
const shrinkAbove = 64 << 10

// bigBuffers is a server's pool of the buffers its connections serve large
// requests in: frames of MaxFrameSize bytes (a request frame that outgrew
// shrinkAbove as it arrived, or a reply longer than that) and word arrays
// of MaxWords (a READ or WRITE of more than shrinkAbove bytes). A
// connection holds at most one frame and one word array of the pool at a
// time, for one request: at most 2 MiB and a few bytes per connection, for
// --max-clients connections at worst. Buffers given back are kept, up to
// bigKept of each kind, for the next large request of any connection;
// those past it are left to the collector.
type bigBuffers struct {
	frames keptBuffers[[]byte]   // capacity MaxFrameSize each
	words  keptBuffers[[]uint32] // length MaxWords each
}

// bigKept is how many buffers of each kind the pool keeps when they are
// given back: 4 MiB of frames and 4 MiB of word arrays at most, so a server
// with a few clients moving large buffers at once allocates nothing per
// request, and an idle one holds no more.
const bigKept = 4

// keptBuffers is one kind of the pool's buffers: those given back, at most
// bigKept.
type keptBuffers[B any] struct {
	mu   sync.Mutex
	kept []*B
}

// take returns a kept buffer, or a new one from alloc when none is kept.
func (k *keptBuffers[B]) take(alloc func() B) *B {
	k.mu.Lock()
	if n := len(k.kept); n > 0 {
		b := k.kept[n-1]
		k.kept = k.kept[:n-1]
		k.mu.Unlock()
		return b
	}
	k.mu.Unlock()
	b := alloc()
	return &b
}

// give keeps b (nil: nothing) if fewer than bigKept are kept.
func (k *keptBuffers[B]) give(b *B) {
	if b == nil {
		return
	}
	k.mu.Lock()
	if len(k.kept) < bigKept {
		k.kept = append(k.kept, b)
	}
	k.mu.Unlock()
}

// frame returns a frame buffer of capacity MaxFrameSize, empty.
func (p *bigBuffers) frame() *[]byte {
	b := p.frames.take(func() []byte { return make([]byte, 0, MaxFrameSize) })
	*b = (*b)[:0]
	return b
}

// wordArray returns a word array of length MaxWords.
func (p *bigBuffers) wordArray() *[]uint32 {
	return p.words.take(func() []uint32 { return make([]uint32, MaxWords) })
}

// put gives back a frame and a word array (either may be nil).
func (p *bigBuffers) put(frame *[]byte, words *[]uint32) {
	p.frames.give(frame)
	p.words.give(words)
}

// Server serves exported devices to remote clients over the wire protocol:
// one goroutine per connection, handling that connection's requests in
// order. Calls on each exported device are serialised by the server (and
// the calls on all the exports that share an Export.Lock, the devices of
// one system, together), so a device need not be safe for concurrent use; a long SLEEP on a device that
// implements ndl.SliceSleeper lets other requests to it in between its
// slices (see the package doc, "Locks"). A Server never panics on
// client bytes: a malformed frame closes only its connection.
type Server struct {
	exports []export
	hello   []byte // the HELLO reply payload
	opts    ServerOptions
	// The protocol versions the server accepts: MinVersion..Version; tests
	// change them to pose as other servers.
	minVersion, version uint16

	bufs bigBuffers // the buffers of large requests, shared by the connections

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	refusing  int            // connections past MaxClients being answered
	hostBytes uint64         // host memory all connections hold allocated
	wg        sync.WaitGroup // Serve calls and connection goroutines
}

// export is an Export with the lock serialising its device (Export.Lock,
// or its own): taken before the device's own lock, never with Server.mu
// held.
type export struct {
	Export
	mu *sync.Mutex
}

// NewServer checks the exports and returns a server for them: at least one
// and at most MaxDevices devices, none nil, names of at most MaxNameLen
// bytes of UTF-8, Connected lists of at most MaxConnected indices in range.
// The identities and BAR sizes are read once, here.
func NewServer(exports []Export, opts ServerOptions) (*Server, error) {
	if len(exports) == 0 || len(exports) > MaxDevices {
		return nil, fmt.Errorf("remote: new server: %d devices, want 1..%d", len(exports), MaxDevices)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.ClockLimitPS == 0 {
		opts.ClockLimitPS = DefaultClockLimitPS
	}
	if opts.HostGranule == 0 {
		opts.HostGranule = DefaultHostGranule
	}
	s := &Server{
		exports:    make([]export, len(exports)),
		opts:       opts,
		minVersion: MinVersion,
		version:    Version,
		listeners:  map[net.Listener]struct{}{},
		conns:      map[net.Conn]struct{}{},
	}
	infos := make([]DeviceInfo, len(exports))
	for i, e := range exports {
		if e.Device == nil {
			return nil, fmt.Errorf("remote: new server: device %d is nil", i)
		}
		if len(e.Name) > MaxNameLen || !utf8.ValidString(e.Name) {
			return nil, fmt.Errorf("remote: new server: device %d name %q: want at most %d bytes of UTF-8", i, e.Name, MaxNameLen)
		}
		if len(e.Connected) > MaxConnected {
			return nil, fmt.Errorf("remote: new server: device %d: %d connected devices, at most %d", i, len(e.Connected), MaxConnected)
		}
		for _, c := range e.Connected {
			if c < 0 || c >= len(exports) {
				return nil, fmt.Errorf("remote: new server: device %d: connected device %d out of range 0..%d", i, c, len(exports)-1)
			}
		}
		s.exports[i].Export = Export{Device: e.Device, Name: e.Name, Connected: append([]int(nil), e.Connected...), Lock: e.Lock}
		if s.exports[i].mu = e.Lock; e.Lock == nil {
			s.exports[i].mu = new(sync.Mutex)
		}
		infos[i] = DeviceInfo{Index: i, Identity: e.Device.Identity(), Name: e.Name, Connected: e.Connected}
		for b := range infos[i].BARSizes {
			infos[i].BARSizes[b] = e.Device.BARSize(b)
		}
	}
	if err := opts.checkBufferQuotas(exports); err != nil {
		return nil, err
	}
	s.hello = appendHelloReplyPayload(nil, helloReply{version: Version, devices: infos})
	return s, nil
}

// checkBufferQuotas refuses host-buffer quotas that add up, over
// MaxClients connections, past the buffers the host-memory allocator of an
// exported device holds (ndl.HostBufferLimit), naming the numbers; with
// MaxClients or HostBuffersPerClient 0 (no limit) there is nothing to add up.
func (o *ServerOptions) checkBufferQuotas(exports []Export) error {
	if o.MaxClients == 0 || o.HostBuffersPerClient == 0 {
		return nil
	}
	hi, total := bits.Mul64(uint64(o.MaxClients), uint64(o.HostBuffersPerClient))
	for i, e := range exports {
		if _, ok := e.Device.(ndl.HostMemory); !ok {
			continue
		}
		l, ok := e.Device.(ndl.HostBufferLimit)
		if !ok {
			continue
		}
		lim := l.HostBufferLimit()
		if lim <= 0 || hi == 0 && total <= uint64(lim) {
			continue
		}
		sum, fix := fmt.Sprint(total), fmt.Sprintf("give at most %d per client, or fewer clients", lim/o.MaxClients)
		if hi != 0 {
			sum = "over 2^64"
		}
		if o.MaxClients > lim {
			fix = fmt.Sprintf("give at most %d clients", lim)
		}
		return fmt.Errorf("remote: new server: HostBuffersPerClient %d × MaxClients %d = %s host buffers, more than the %d the host-memory allocator of device %d holds: a client could be promised buffers others already took (%s): %w",
			o.HostBuffersPerClient, o.MaxClients, sum, lim, i, fix, ErrLimit)
	}
	return nil
}

// Serve accepts connections on l and serves each in its own goroutine until
// Close, then returns nil (a Serve called after Close closes l and returns
// nil at once). Any other accept failure — including l being closed by
// someone else — is returned; temporary ones are retried after a pause.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("remote: serve %s: close listener: %w", l.Addr(), err)
		}
		return nil
	}
	s.listeners[l] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()

	var pause time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if t, ok := err.(interface{ Temporary() bool }); ok && t.Temporary() {
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				s.logf("remote: serve %s: accept: %v; retrying in %v", l.Addr(), err, pause)
				time.Sleep(pause)
				continue
			}
			return fmt.Errorf("remote: serve %s: accept: %w", l.Addr(), err)
		}
		pause = 0
		switch a := s.track(c); a {
		case admitClosed:
			_ = c.Close() // Close raced the accept
		case admitFull, admitFullBusy:
			s.logf("remote: refusing a connection from %s: %d clients connected, the most allowed (--max-clients)", remoteName(c), s.opts.MaxClients)
			s.sendRefusal(c)
			if a == admitFull {
				go s.drainRefused(c)
			} else {
				_ = c.Close() // as many refusals are being drained already
			}
		default:
			go s.serveConn(c)
		}
	}
}

// Close stops the server: it closes every listener Serve is accepting on
// (those Serve calls return nil) and every live connection, and waits for
// all their goroutines. It does not close the exported devices. A second
// Close waits likewise and returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	var errs []error
	for l := range s.listeners {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("remote: close listener %s: %w", l.Addr(), err))
		}
	}
	for c := range s.conns {
		_ = c.Close() // its goroutine reports nothing once closed is set
	}
	s.mu.Unlock()
	s.wg.Wait()
	return errors.Join(errs...)
}

// isClosed reports whether Close has been called.
func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// admission is what track decided for a new connection.
type admission int

const (
	admitted      admission = iota
	admitClosed             // the server is closed
	admitFull               // past MaxClients: answer with ErrLimit
	admitFullBusy           // past MaxClients with maxRefusing refusals being drained
)

// track registers a live connection and counts its goroutine, unless the
// server is closed or has MaxClients connections already (then a refusal's
// goroutine is counted instead, up to maxRefusing of them).
func (s *Server) track(c net.Conn) admission {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return admitClosed
	case s.opts.MaxClients > 0 && len(s.conns) >= s.opts.MaxClients:
		if s.refusing >= maxRefusing {
			return admitFullBusy
		}
		s.refusing++
		s.wg.Add(1)
		return admitFull
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return admitted
}

// sendRefusal answers a connection past MaxClients with an ERROR (ErrLimit,
// tag 0: the HELLO's) and ends its sending side. The answer is a hundred
// bytes into a new connection's empty send buffer, so the accept loop does
// it itself: every refused client gets it, however many arrive at once.
func (s *Server) sendRefusal(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(refusalWriteTimeout))
	err := fmt.Errorf("remote: the server has %d clients, the most it allows: %w; try again later", s.opts.MaxClients, ErrLimit)
	_, _ = c.Write(appendError(nil, 0, errorMsg{code: codeOf(err), text: err.Error()}))
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite() // the answer is all: the client sees it, then EOF
	}
}

// drainRefused reads what a refused client sent, within errorReplyTimeout,
// before closing, so that closing does not reset the connection under the
// answer.
func (s *Server) drainRefused(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		s.refusing--
		s.mu.Unlock()
	}()
	_ = c.SetDeadline(time.Now().Add(errorReplyTimeout))
	var buf [64]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			break // the client closed, or the deadline passed
		}
	}
	_ = c.Close()
}

// logf reports through ServerOptions.Logf when set.
func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// serveConn serves one tracked connection until it ends, then closes and
// untracks it.
func (s *Server) serveConn(c net.Conn) {
	defer s.wg.Done()
	sc := &serverConn{s: s, c: c, rbuf: make([]byte, 0, 4096), wbuf: make([]byte, 0, 4096)}
	err := sc.run()
	sc.freeHost() // the connection's host buffers die with it
	if err != nil && !s.isClosed() && !errors.Is(err, errCleanClose) {
		if errors.Is(err, ErrProtocol) || errors.Is(err, ErrVersion) {
			sc.sendFatal(err)
		}
		s.logf("remote: closing connection from %s: %v", remoteName(c), err)
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	_ = c.Close() // the connection is over either way
}

// remoteName names a connection's peer for the log (a unix socket's peer
// is usually unnamed: then the socket it connected to).
func remoteName(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil && a.String() != "" && a.String() != "@" {
		return a.String()
	}
	if a := c.LocalAddr(); a != nil && a.String() != "" {
		return "a client of " + a.String()
	}
	return "an unnamed peer"
}

// errCleanClose ends a connection whose peer closed it between frames.
var errCleanClose = errors.New("peer closed the connection")

// serverConn is the state of one connection: its reusable buffers and the
// host buffers it owns.
type serverConn struct {
	s       *Server
	c       net.Conn
	rbuf    []byte   // request frames: the connection's own, or the pool's frame while a large request is served
	wbuf    []byte   // reply frames: likewise
	words   []uint32 // READ and WRITE words: the connection's own, at most shrinkAbove/4
	tag     uint32   // tag of the request being served
	version uint16   // the connection's protocol version, the client's
	owned   connHost // the host buffers this connection allocated

	// The pool's buffers taken for the request being served (nil: none),
	// and the connection's own buffers they stand in for.
	bigIn, bigOut *[]byte
	bigWords      *[]uint32
	ownIn, ownOut []byte

	// ahead[aheadOff:] is what the client sent while a SLEEP ran, read by
	// the SLEEP's watcher (watchSleep) and not yet taken by a request:
	// at most aheadMax bytes. Only the connection's goroutine touches it,
	// except while a watcher runs, which alone does until it ends.
	ahead    []byte
	aheadOff int
}

// aheadReader reads a connection's requests: first the bytes a SLEEP's
// watcher read ahead, then the connection's.
type aheadReader struct{ sc *serverConn }

// Read reads what was read ahead, or else from the connection.
func (r aheadReader) Read(p []byte) (int, error) {
	sc := r.sc
	if sc.aheadOff < len(sc.ahead) {
		n := copy(p, sc.ahead[sc.aheadOff:])
		sc.aheadOff += n
		if sc.aheadOff == len(sc.ahead) {
			sc.ahead, sc.aheadOff = sc.ahead[:0], 0
		}
		return n, nil
	}
	return sc.c.Read(p)
}

// run does the handshake and serves requests until the connection ends; it
// returns why.
func (sc *serverConn) run() error {
	var f Frame
	var err error
	if t := sc.s.opts.HandshakeTimeout; t > 0 {
		f, err = sc.readWithin(t, "HELLO", "handshake timeout")
	} else {
		f, err = sc.read()
	}
	if err != nil {
		return err
	}
	sc.tag = f.Tag
	if f.Op != OpHello {
		return fmt.Errorf("remote: %s before HELLO: %w", f.Op, ErrProtocol)
	}
	h, err := decodeHello(f.Payload, sc.s.minVersion, sc.s.version)
	if err != nil {
		return err
	}
	sc.version = h.version
	sc.wbuf = appendHeader(sc.wbuf[:0], OpHelloReply, f.Tag, len(sc.s.hello))
	sc.wbuf = append(sc.wbuf, sc.s.hello...)
	binary.LittleEndian.PutUint16(sc.wbuf[HeaderSize+4:], sc.version) // answered in the client's version
	if err := sc.write(); err != nil {
		return err
	}
	sc.shrink() // a long HELLO (a later version's) may have taken a frame of the pool
	for {
		f, err := sc.read()
		if err != nil {
			return err
		}
		sc.tag = f.Tag
		if f.Op.since() > sc.version {
			return fmt.Errorf("remote: %s is a version %d request; this connection speaks version %d: %w", f.Op, f.Op.since(), sc.version, ErrProtocol)
		}
		switch f.Op {
		case OpRead, OpWrite:
			err = sc.readWrite(f)
		case OpSleep:
			err = sc.sleep(f)
		case OpHostAlloc, OpHostFree, OpHostRead, OpHostWrite:
			err = sc.host(f)
		case OpClock:
			err = sc.clock(f)
		default:
			return fmt.Errorf("remote: %s is not a request after the handshake: %w", f.Op, ErrProtocol)
		}
		if err != nil {
			return err
		}
		if err := sc.write(); err != nil {
			return err
		}
		sc.shrink()
	}
}

// shrink gives the pool's buffers taken for the request back, returning
// to the connection's own.
func (sc *serverConn) shrink() {
	if sc.bigIn != nil {
		sc.s.bufs.put(sc.bigIn, nil)
		sc.bigIn, sc.rbuf, sc.ownIn = nil, sc.ownIn, nil
	}
	if sc.bigOut != nil {
		sc.s.bufs.put(sc.bigOut, nil)
		sc.bigOut, sc.wbuf, sc.ownOut = nil, sc.ownOut, nil
	}
	if sc.bigWords != nil {
		sc.s.bufs.put(nil, sc.bigWords)
		sc.bigWords = nil
	}
}

// growRequest grows the buffer of a request frame arriving (b, full, of
// a frame of need bytes): the connection's own up to shrinkAbove, then a
// frame of the pool, which shrink gives back after the reply.
func (sc *serverConn) growRequest(b []byte, need int) []byte {
	switch {
	case cap(b) < shrinkAbove:
		nb := make([]byte, len(b), min(need, max(2*cap(b), 4096), shrinkAbove))
		copy(nb, b)
		return nb
	case sc.bigIn == nil:
		sc.bigIn = sc.s.bufs.frame()
		sc.ownIn = b[:0]
		nb := (*sc.bigIn)[:len(b)]
		copy(nb, b)
		return nb
	}
	return growFrame(b, need) // not reached: a frame of the pool holds any frame
}

// reply returns sc.wbuf emptied, with room for a reply frame of n bytes:
// the connection's own buffer, grown up to shrinkAbove, or a frame of the
// pool for a longer one.
func (sc *serverConn) reply(n int) []byte {
	switch {
	case n <= cap(sc.wbuf):
	case n > shrinkAbove && sc.bigOut == nil:
		sc.bigOut = sc.s.bufs.frame()
		sc.ownOut, sc.wbuf = sc.wbuf, *sc.bigOut
	default:
		sc.wbuf = make([]byte, 0, n)
	}
	return sc.wbuf[:0]
}

// read reads the next request frame within the idle timeout. A peer closing
// between frames is errCleanClose.
func (sc *serverConn) read() (Frame, error) {
	return sc.readWithin(0, "request", "idle timeout")
}

// readWithin reads a frame within t, or the idle timeout when t is 0.
func (sc *serverConn) readWithin(t time.Duration, what, name string) (Frame, error) {
	if t == 0 {
		t = sc.s.opts.IdleTimeout
	}
	if t > 0 {
		if err := sc.c.SetReadDeadline(time.Now().Add(t)); err != nil {
			return Frame{}, fmt.Errorf("remote: set read deadline: %w", err)
		}
	}
	f, err := readFrameGrow(aheadReader{sc}, &sc.rbuf, sc.growRequest, nil)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, io.EOF):
		return f, errCleanClose
	case errors.Is(err, os.ErrDeadlineExceeded):
		return f, fmt.Errorf("remote: no complete %s within the %s %v: %w", what, name, t, err)
	}
	return f, err
}

// write writes sc.wbuf within the write timeout.
func (sc *serverConn) write() error {
	if t := sc.s.opts.WriteTimeout; t > 0 {
		if err := sc.c.SetWriteDeadline(time.Now().Add(t)); err != nil {
			return fmt.Errorf("remote: set write deadline: %w", err)
		}
	}
	if _, err := sc.c.Write(sc.wbuf); err != nil {
		return fmt.Errorf("remote: write reply: %w", err)
	}
	return nil
}

// sendFatal sends, best effort, the ERROR reply naming why the connection
// is being closed.
func (sc *serverConn) sendFatal(err error) {
	_ = sc.c.SetWriteDeadline(time.Now().Add(errorReplyTimeout))
	sc.wbuf = appendError(sc.wbuf[:0], sc.tag, errorMsg{code: codeOf(err), text: err.Error()})
	_, _ = sc.c.Write(sc.wbuf) // the peer may be gone already
}

// device returns the export of a request's device index, or nil after
// putting an ERROR reply (ErrNoDevice) in sc.wbuf.
func (sc *serverConn) device(op Op, i uint16) *export {
	if int(i) < len(sc.s.exports) {
		return &sc.s.exports[i]
	}
	sc.replyError(fmt.Errorf("remote: %s: device %d: %w (the server exports %d)", op, i, ErrNoDevice, len(sc.s.exports)))
	return nil
}

// replyError puts an ERROR reply carrying err in sc.wbuf.
func (sc *serverConn) replyError(err error) {
	sc.wbuf = appendError(sc.wbuf[:0], sc.tag, errorMsg{code: codeOf(err), text: err.Error()})
}

// wordBuf returns a reusable buffer of n words: the connection's own up
// to shrinkAbove bytes, a word array of the pool for more.
func (sc *serverConn) wordBuf(n int) []uint32 {
	if 4*n > shrinkAbove {
		if sc.bigWords == nil {
			sc.bigWords = sc.s.bufs.wordArray()
		}
		return (*sc.bigWords)[:n]
	}
	if cap(sc.words) < n {
		sc.words = make([]uint32, n)
	}
	return sc.words[:n]
}

// readWrite serves a READ or WRITE frame, leaving the reply in sc.wbuf. Only
// a malformed frame is returned as an error.
func (sc *serverConn) readWrite(f Frame) error {
	r, err := decodeRW(f.Op, f.Payload)
	if err != nil {
		return err
	}
	e := sc.device(f.Op, r.device)
	if e == nil {
		return nil
	}
	words := sc.wordBuf(int(r.count))
	if f.Op == OpWrite {
		for i := range words {
			words[i] = binary.LittleEndian.Uint32(r.data[4*i:])
		}
		e.mu.Lock()
		err = e.Device.WriteBAR(int(r.bar), r.offset, words)
		e.mu.Unlock()
		if err != nil {
			sc.replyError(err)
		} else {
			sc.wbuf = appendHeader(sc.wbuf[:0], OpWriteReply, f.Tag, 0)
		}
		return nil
	}
	clear(words) // the pool's words may hold another connection's: none of them may leak into this reply
	e.mu.Lock()
	err = e.Device.ReadBAR(int(r.bar), r.offset, words)
	e.mu.Unlock()
	if err != nil {
		sc.replyError(err)
		return nil
	}
	sc.wbuf = appendReadReplyHead(sc.reply(HeaderSize+readReplyHead+4*len(words)), OpReadReply, f.Tag, r.count)
	for _, w := range words { // within the room reply made: no allocation
		sc.wbuf = binary.LittleEndian.AppendUint32(sc.wbuf, w)
	}
	return nil
}

// sleep serves a SLEEP frame, leaving the reply in sc.wbuf: the device's
// Sleep when it implements ndl.Sleeper, else an ERROR (ErrUnsupported) —
// the server never sleeps on the wall clock for a client. A device that
// implements ndl.SliceSleeper sleeps in slices of at most SleepSliceEvents
// events, the export's lock released between them (sleepSliced).
func (sc *serverConn) sleep(f Frame) error {
	r, err := decodeSleep(f.Payload)
	if err != nil {
		return err
	}
	e := sc.device(f.Op, r.device)
	if e == nil {
		return nil
	}
	sl, ok := e.Device.(ndl.Sleeper)
	if !ok {
		sc.replyError(fmt.Errorf("remote: SLEEP: device %d (%T) has no clock of its own: %w", r.device, e.Device, ErrUnsupported))
		return nil
	}
	ns, err := units.Uint("SLEEP.ns", r.ns, 0, units.MaxTimePS/1000)
	if err != nil {
		sc.replyError(fmt.Errorf("remote: SLEEP: device %d: %w", r.device, err))
		return nil
	}
	if ss, ok := e.Device.(ndl.SliceSleeper); ok {
		err = sc.sleepSliced(e, ss, r.device, ns)
	} else {
		e.mu.Lock()
		_, err = sc.sleepWithin(e, r.device, ns)
		if err == nil {
			err = sl.Sleep(time.Duration(ns))
		}
		e.mu.Unlock()
	}
	if errors.Is(err, errConnEnding) {
		return err
	}
	if err != nil {
		sc.replyError(err)
		return nil
	}
	sc.wbuf = appendHeader(sc.wbuf[:0], OpSleepReply, f.Tag, 0)
	return nil
}

// SleepSliceEvents is the most events a SLEEP runs with the export's lock
// held, on a device that implements ndl.SliceSleeper: a long SLEEP of a
// busy device runs in slices of this many events, and the other clients'
// requests to the device (and, for the devices of one system, which share
// a clock and a lock, to the others) are served between them.
const SleepSliceEvents = 1024

// errConnEnding marks the errors of a SLEEP that end its connection
// instead of an ERROR reply: the sleep was stopped between slices because
// nobody is left to answer, or the connection cannot be read on.
var errConnEnding = errors.New("the connection is ending")

// errServerClosing ends a connection whose SLEEP the server's Close cut
// short between slices; it is not logged.
var errServerClosing = fmt.Errorf("remote: SLEEP: the server is closing: %w: %w", errConnEnding, errCleanClose)

// sleepSliced serves a SLEEP of ns on a device that sleeps in slices: it
// reads the clock and checks the clock limit, then runs the clock to the
// time it read plus ns a slice of SleepSliceEvents events at a time, with
// e.mu held for each slice and released between them, yielding the
// processor so that requests waiting for the lock get it. The result is
// that of one Sleep of ns when no other request reaches the device between
// the slices; when one does, the time it takes counts as passing during the
// sleep (the deadline is fixed at the start), so concurrent SLEEPs never
// take the clock past the latest deadline checked against the limit.
//
// Between slices it stops when nobody is left to answer: a Close of the
// server (errServerClosing), or the client closing or losing the
// connection, which a watcher reading the connection meanwhile notices
// (watchSleep; errClientGone for an end of stream). Stopping leaves the
// device where the last slice left it: every event run whole, the clock at
// the last one, the rest of the sleep not run.
func (sc *serverConn) sleepSliced(e *export, ss ndl.SliceSleeper, device uint16, ns uint64) error {
	e.mu.Lock()
	now, err := sc.sleepWithin(e, device, ns)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	// One reading of the clock, the one the limit was checked against:
	// with a clock shared by several exports a second reading could be
	// later (had another export's request run between them, which
	// Export.Lock prevents) and the deadline past the limit.
	deadline := now + ns*1000 // ≤ ClockLimitPS ≤ MaxTimePS: sleepWithin checked it
	var w sleepWatch
	for {
		done, err := ss.SleepUntil(deadline, SleepSliceEvents)
		e.mu.Unlock()
		if err != nil || done {
			if werr := sc.stopWatch(&w); err == nil && werr != nil && !errors.Is(werr, errClientGone) {
				err = werr // the connection cannot be read on: end it
			}
			return err // a client gone as the sleep ended: the reply, or the next read, finds it
		}
		if sc.s.isClosed() {
			_ = sc.stopWatch(&w)
			return errServerClosing
		}
		if err := sc.watchSleep(&w); err != nil {
			_ = sc.stopWatch(&w)
			if sc.s.isClosed() {
				return errServerClosing
			}
			return err
		}
		runtime.Gosched()
		e.mu.Lock()
	}
}

// aheadMax bounds the bytes a SLEEP's watcher reads ahead of the
// connection's next request: a client keeps one request in flight, or a
// few pipelined; one that sends more while its SLEEP runs is no longer
// watched (a disconnect is then noticed when the sleep ends).
const aheadMax = 4096

// errClientGone ends a connection whose client closed it while a SLEEP ran
// (an end of stream read between slices): a clean disconnect, not logged.
var errClientGone = fmt.Errorf("remote: SLEEP: the client closed the connection; the sleep was stopped (%w): %w", errConnEnding, errCleanClose)

// sleepWatch is the watcher of one sliced SLEEP's connection.
type sleepWatch struct {
	started bool       // watchSleep started it (or found it could not)
	ended   chan error // the watcher's result; nil: none running
}

// watchSleep checks, between two slices of a SLEEP, whether the client is
// still there, and returns why not. The first call starts a watcher: a
// goroutine that reads what the client sends meanwhile into sc.ahead (at
// most aheadMax bytes; aheadReader gives them to the requests that follow)
// until stopWatch stops it with a read deadline in the past. An end of
// stream (errClientGone) or a read error ends the sleep at the next check,
// as does a connection whose read deadline cannot be set (closed or
// broken); a full sc.ahead is left unwatched. A SLEEP that ends in its
// first slice starts no watcher.
func (sc *serverConn) watchSleep(w *sleepWatch) error {
	if !w.started {
		w.started = true
		if sc.aheadOff > 0 { // what is left of an earlier read ahead, to the front
			n := copy(sc.ahead, sc.ahead[sc.aheadOff:])
			sc.ahead, sc.aheadOff = sc.ahead[:n], 0
		}
		if len(sc.ahead) >= aheadMax {
			return nil
		}
		if err := sc.c.SetReadDeadline(time.Time{}); err != nil {
			// A connection whose deadline cannot be set is closed or broken
			// (net.Pipe refuses it once the client's end is closed): nobody
			// is left to answer.
			return fmt.Errorf("remote: SLEEP: watching the connection (%w): set read deadline: %w", errConnEnding, err)
		}
		if cap(sc.ahead) < aheadMax {
			sc.ahead = append(make([]byte, 0, aheadMax), sc.ahead...)
		}
		w.ended = make(chan error, 1)
		go sc.readAhead(w.ended)
		return nil
	}
	if w.ended == nil {
		return nil
	}
	select {
	case err := <-w.ended:
		w.ended = nil
		if err != nil {
			return err
		}
	default:
	}
	return nil
}

// readAhead is a SLEEP's watcher: it reads the connection into sc.ahead
// until it is full, the read deadline passes (stopWatch), or the read
// fails, and sends what ended it: nil for the first two,
// errClientGone for an end of stream, else the read's error.
func (sc *serverConn) readAhead(ended chan<- error) {
	for len(sc.ahead) < aheadMax {
		n, err := sc.c.Read(sc.ahead[len(sc.ahead):aheadMax])
		sc.ahead = sc.ahead[:len(sc.ahead)+n]
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			ended <- nil
			return
		case errors.Is(err, io.EOF):
			ended <- errClientGone
			return
		default:
			ended <- fmt.Errorf("remote: SLEEP: reading the connection while sleeping (%w): %w", errConnEnding, err)
			return
		}
	}
	ended <- nil
}

// stopWatch stops a SLEEP's watcher, if one runs, and waits for it; it
// returns what ended it (nil when it was stopped or had stopped itself).
// The read deadline is left unset: the next read sets its own.
func (sc *serverConn) stopWatch(w *sleepWatch) error {
	if w.ended == nil {
		return nil
	}
	ended := w.ended
	w.ended = nil
	if err := sc.c.SetReadDeadline(time.Unix(1, 0)); err != nil {
		_ = sc.c.Close() // the only other way to end the watcher's read; the connection is over
		<-ended
		return fmt.Errorf("remote: SLEEP: stopping the watcher (%w): set read deadline: %w", errConnEnding, err)
	}
	err := <-ended
	if derr := sc.c.SetReadDeadline(time.Time{}); derr != nil && err == nil {
		err = fmt.Errorf("remote: SLEEP (%w): set read deadline: %w", errConnEnding, derr)
	}
	return err
}

// sleepWithin checks that sleeping ns from the device's clock stays within
// the clock limit (a device without a clock is left to refuse itself) and
// returns the clock it read (0 without one); e.mu is held.
func (sc *serverConn) sleepWithin(e *export, device uint16, ns uint64) (uint64, error) {
	c, ok := e.Device.(ndl.Clock)
	if !ok {
		return 0, nil
	}
	now, err := c.ClockPS()
	if err != nil {
		return 0, err
	}
	limit := sc.s.opts.ClockLimitPS
	if ps := ns * 1000; now > limit || ps > limit-now { // ns ≤ MaxTimePS/1000: no overflow
		return 0, fmt.Errorf("remote: SLEEP: device %d: sleeping %d ns from %d ps would pass the server's clock limit %d ps (%v of virtual time): %w",
			device, ns, now, limit, time.Duration(limit/1000), ErrLimit)
	}
	return now, nil
}

// hostMemory returns the export of a host request's device and its host
// memory, or nils after putting an ERROR reply in sc.wbuf: ErrNoDevice, or
// ErrUnsupported for a device without host memory.
func (sc *serverConn) hostMemory(op Op, i uint16) (*export, ndl.HostMemory) {
	e := sc.device(op, i)
	if e == nil {
		return nil, nil
	}
	hm, ok := e.Device.(ndl.HostMemory)
	if !ok {
		sc.replyError(fmt.Errorf("remote: %s: device %d (%T) has no host memory: %w", op, i, e.Device, ErrUnsupported))
		return nil, nil
	}
	return e, hm
}

// clock serves a CLOCK frame, leaving the reply in sc.wbuf: the device's
// ndl.Clock reading, or an ERROR (ErrUnsupported for a device without a
// clock of its own). Only a malformed frame is returned as an error.
func (sc *serverConn) clock(f Frame) error {
	i, err := decodeClock(f.Payload)
	if err != nil {
		return err
	}
	e := sc.device(f.Op, i)
	if e == nil {
		return nil
	}
	c, ok := e.Device.(ndl.Clock)
	if !ok {
		sc.replyError(fmt.Errorf("remote: CLOCK: device %d (%T) has no clock of its own: %w", i, e.Device, ErrUnsupported))
		return nil
	}
	e.mu.Lock()
	ps, err := c.ClockPS()
	e.mu.Unlock()
	if err != nil {
		sc.replyError(err)
		return nil
	}
	sc.wbuf = appendHeader(sc.wbuf[:0], OpClockReply, f.Tag, u64ReplySize)
	sc.wbuf = binary.LittleEndian.AppendUint64(sc.wbuf, ps)
	return nil
}
