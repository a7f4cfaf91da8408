package vfiouser

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
	"golang.org/x/sys/unix"
)

// Options bound a server; a zero field takes the default named beside it.
type Options struct {
	MaxMsgFDs       int           // file descriptors accepted in one message (16)
	MaxDataXferSize uint64        // largest data count of one transfer (1 MiB)
	MaxDMAMaps      int           // DMA mappings at once (1024)
	MaxDMABytes     uint64        // total bytes of DMA mappings (1 TiB)
	MSIXVectors     int           // MSI-X vectors offered (32)
	ReplyTimeout    time.Duration // wait for the client's reply to DMA_READ/DMA_WRITE, and for it to take each message sent (10 s)
	// HandshakeTimeout bounds the time from a connection's start (its
	// accept, or the call of ServeConn) to the server's acceptance of its
	// VERSION; past it the connection is closed. 0: 10 s; negative is
	// refused (there is no "no limit"). After VERSION a session may stay
	// idle for ever (a guest that does nothing sends nothing).
	HandshakeTimeout time.Duration
	// StallBackoff is how long the server refuses new clients (their
	// first message answered EAGAIN, [ErrBackoff]) after a session ended
	// because its client let a message of the server's wait past
	// ReplyTimeout (a DMA_READ/DMA_WRITE request unanswered, or any
	// message unread) or past WaitBudget. The server waits for a DMA
	// reply with the device held, and with it every device of its system
	// (one lock), so such a client stalls the clients of the other
	// devices; the back-off keeps it from doing so again at once by
	// reconnecting. 0: 60 s; negative is refused.
	StallBackoff time.Duration
	// WaitBudget bounds the total time one session may keep the server
	// waiting on its client, where ReplyTimeout bounds each wait alone.
	// The server waits on the client while it waits for the reply to a
	// DMA_READ/DMA_WRITE request, or for the client to take a message
	// it writes (a request or a reply); waits that overlap count once.
	// A wait counts when it begins while a client of another device of
	// the system is connected (the system's Pacer counts them; a server
	// without a Pacer counts every wait): it holds the system's lock, and
	// stalls that client. A client alone on its system stalls no one but
	// itself, and its waits are bounded by ReplyTimeout, each alone — so
	// a guest streaming DMA through messages on its own is not ended.
	// The rule: over every stretch of the session's time ending now, of
	// length L, the server may have waited at most WaitBudget + L/10
	// ([WaitRefillDivisor]); the moment it has waited longer, the wait
	// under way is given up and the session ends as one that ran out
	// ReplyTimeout does (logged, and new clients refused for
	// StallBackoff). Put otherwise, a session starts with WaitBudget of
	// waiting to spend, spends it while the server waits, and earns it
	// back at one tenth of the time passing, never above WaitBudget. So
	// a client answering each request just inside ReplyTimeout, one
	// request after another, is ended after WaitBudget × 10/9 of waiting
	// (11.1 s at the defaults; later if the requests have gaps between
	// them), and in the long run no client holds the server more than a
	// tenth of the time; a client that keeps the server waiting a tenth
	// of every stretch or less — a guest's replies take microseconds to
	// milliseconds, and DMA through mappings with a file never waits —
	// is never ended by it. 0: [DefaultWaitBudget] (10 s); negative, or
	// more than [MaxWaitBudget], is refused ([ErrLimit]); there is no
	// "no limit".
	WaitBudget time.Duration
	// Class is the 24-bit PCI class code of the server's own config header
	// (used when the device has no config space of its own); 0: 0x088000,
	// "other system peripheral".
	Class uint32
	// Logf, if set, receives one line per error the server could not
	// report to the client (no-reply commands, broken connections).
	Logf func(format string, args ...any)
	// Pacer keeps the device clock up with wall time before each BAR
	// access ([Pacer]). nil: a Pacer of the device's own clock on the
	// process's monotonic clock — for a device alone; a device of a
	// system (one with a shared engine) needs its system's Pacer here,
	// and New refuses it without one.
	Pacer *Pacer
	// NoPacing turns pacing off: the clock moves only by MMIO latency,
	// sleeps and what the device's own user runs (tests that count MMIO
	// time). It cannot go with a Pacer.
	NoPacing bool
}

// Bounds of Options.
const (
	MaxOptionFDs  = 253 // SCM_MAX_FD of Linux
	MaxOptionXfer = 64 << 20
	MaxOptionMaps = 65535
	MaxOptionMSIX = 2048
)

// DefaultReplyTimeout is Options.ReplyTimeout when it is 0.
const DefaultReplyTimeout = 10 * time.Second

// DefaultHandshakeTimeout is Options.HandshakeTimeout when it is 0.
const DefaultHandshakeTimeout = 10 * time.Second

// DefaultStallBackoff is Options.StallBackoff when it is 0.
const DefaultStallBackoff = 60 * time.Second

// DefaultWaitBudget is Options.WaitBudget when it is 0.
const DefaultWaitBudget = 10 * time.Second

// MaxWaitBudget is the largest Options.WaitBudget.
const MaxWaitBudget = 24 * time.Hour

// WaitRefillDivisor: a session's wait budget is earned back at
// 1/WaitRefillDivisor of the time passing (Options.WaitBudget).
const WaitRefillDivisor = 10

func (o *Options) fill() error {
	def := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	def(&o.MaxMsgFDs, 16)
	def(&o.MaxDMAMaps, 1024)
	def(&o.MSIXVectors, 32)
	if o.MaxDataXferSize == 0 {
		o.MaxDataXferSize = 1 << 20
	}
	if o.MaxDMABytes == 0 {
		o.MaxDMABytes = 1 << 40
	}
	if o.ReplyTimeout == 0 {
		o.ReplyTimeout = DefaultReplyTimeout
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.Class == 0 {
		o.Class = 0x088000
	}
	if o.StallBackoff == 0 {
		o.StallBackoff = DefaultStallBackoff
	}
	if o.WaitBudget == 0 {
		o.WaitBudget = DefaultWaitBudget
	}
	switch {
	case o.MaxMsgFDs < 0 || o.MaxMsgFDs > MaxOptionFDs:
		return fmt.Errorf("vfio-user: MaxMsgFDs %d outside [1, %d]: %w", o.MaxMsgFDs, MaxOptionFDs, ErrLimit)
	case o.MaxDataXferSize < 8 || o.MaxDataXferSize > MaxOptionXfer:
		return fmt.Errorf("vfio-user: MaxDataXferSize %d outside [8, %d]: %w", o.MaxDataXferSize, MaxOptionXfer, ErrLimit)
	case o.MaxDMAMaps < 0 || o.MaxDMAMaps > MaxOptionMaps:
		return fmt.Errorf("vfio-user: MaxDMAMaps %d outside [1, %d]: %w", o.MaxDMAMaps, MaxOptionMaps, ErrLimit)
	case o.MSIXVectors < 0 || o.MSIXVectors > MaxOptionMSIX:
		return fmt.Errorf("vfio-user: MSIXVectors %d outside [1, %d]: %w", o.MSIXVectors, MaxOptionMSIX, ErrLimit)
	case o.ReplyTimeout < 0:
		return fmt.Errorf("vfio-user: negative ReplyTimeout %v: %w", o.ReplyTimeout, ErrLimit)
	case o.StallBackoff < 0:
		return fmt.Errorf("vfio-user: negative StallBackoff %v: %w", o.StallBackoff, ErrLimit)
	case o.WaitBudget < 0 || o.WaitBudget > MaxWaitBudget:
		return fmt.Errorf("vfio-user: WaitBudget %v outside (0, %v] (there is no unbounded wait): %w", o.WaitBudget, MaxWaitBudget, ErrLimit)
	case o.HandshakeTimeout < 0:
		return fmt.Errorf("vfio-user: negative HandshakeTimeout %v (there is no unbounded handshake): %w", o.HandshakeTimeout, ErrLimit)
	case o.Class > 0xffffff:
		return fmt.Errorf("vfio-user: class code %#x wider than 24 bits: %w", o.Class, ErrLimit)
	}
	return nil
}

// cmdQueue bounds the commands read ahead of the one being handled (each
// at most MaxDataXferSize+4 KiB).
const cmdQueue = 16

// pageSize is the only DMA page size the server supports.
const pageSize = 4096

// Server serves one sim.Device as a vfio-user PCI function, to one client
// at a time; others are refused (EBUSY), not kept waiting.
type Server struct {
	dev     *sim.Device
	cfg     ConfigSpace
	cfgSize uint64
	opt     Options
	own     Capabilities
	mem     *GuestMemory
	pacer   *Pacer        // nil: no pacing
	slot    chan struct{} // holds a value while a session is live
	irqN    [NumIRQIdx]uint32

	bmu          sync.Mutex
	backoffUntil time.Time // new clients are refused until then (Options.StallBackoff)
}

// backoffLeft is how long new clients are still refused after a session
// that stalled the system; 0: none are.
func (s *Server) backoffLeft() time.Duration {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	return max(time.Until(s.backoffUntil), 0)
}

// startBackoff refuses new clients for Options.StallBackoff from now.
func (s *Server) startBackoff() {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	s.backoffUntil = time.Now().Add(s.opt.StallBackoff)
}

// New builds a server for dev. dev's config space is its own when dev
// implements ConfigSpace; otherwise the server keeps a type-0 header built
// from dev's identity and BAR sizes ([NewConfigHeader]). When dev's host
// port is a GuestMemory ([NewGuestMemory] with the same opt), it is the
// server's memory, so the device's DMA reaches the client's mappings
// ([ErrWiring] if another server has it or its limits differ). Pacing
// follows opt.Pacer and opt.NoPacing ([ErrPacing]).
func New(dev *sim.Device, opt Options) (*Server, error) {
	if dev == nil {
		return nil, fmt.Errorf("vfio-user: no device: %w", ErrMessage)
	}
	if err := opt.fill(); err != nil {
		return nil, err
	}
	s := &Server{dev: dev, opt: opt, slot: make(chan struct{}, 1)}
	switch {
	case opt.NoPacing && opt.Pacer != nil:
		return nil, fmt.Errorf("vfio-user: device %s: both a Pacer and NoPacing: %w", dev.Config().Name, ErrPacing)
	case opt.Pacer != nil && !opt.Pacer.paces(dev):
		return nil, fmt.Errorf("vfio-user: device %s: the Pacer keeps another system's clock: %w", dev.Config().Name, ErrPacing)
	case opt.Pacer != nil:
		s.pacer = opt.Pacer
	case opt.NoPacing:
	case dev.InSystem():
		return nil, fmt.Errorf("vfio-user: device %s shares its system's clock: give the system's Pacer (Options.Pacer): %w", dev.Config().Name, ErrPacing)
	default:
		p, err := NewPacer(dev, PacerOptions{})
		if err != nil {
			return nil, err
		}
		s.pacer = p
	}
	if c, ok := any(dev).(ConfigSpace); ok {
		s.cfg = c
	} else {
		id := dev.Identity()
		hid := HeaderIdentity{Vendor: id.Vendor, Device: id.Device, Revision: id.Revision, Class: opt.Class}
		for b := range hid.BARs {
			hid.BARs[b] = dev.BARSize(b)
		}
		h, err := NewConfigHeader(hid)
		if err != nil {
			return nil, err
		}
		s.cfg = h
	}
	s.cfgSize = configSize(s.cfg)
	if s.cfgSize < 64 || s.cfgSize > PCIeConfigSize {
		return nil, fmt.Errorf("vfio-user: config space of %d bytes, want 64 to %d: %w", s.cfgSize, PCIeConfigSize, ErrLimit)
	}
	s.own = Capabilities{MaxMsgFDs: uint64(opt.MaxMsgFDs), MaxDataXferSize: opt.MaxDataXferSize, MaxDMAMaps: uint64(opt.MaxDMAMaps), PgSizes: pageSize, WriteMultiple: true}
	if err := s.takeMemory(); err != nil {
		return nil, err
	}
	s.irqN = [NumIRQIdx]uint32{IRQIntx: 1, IRQMSI: 1, IRQMSIX: uint32(opt.MSIXVectors), IRQErr: 1, IRQReq: 1}
	return s, nil
}

// takeMemory chooses the server's guest memory: the device's host port
// when it is a GuestMemory (NewGuestMemory), which must have the server's
// DMA limits and no other server; otherwise one of the server's own, which
// the device's DMA does not reach (it reaches its own host port).
func (s *Server) takeMemory() error {
	g, ok := s.dev.HostPort().(*GuestMemory)
	if !ok {
		s.mem = newGuestMemory(s.opt.MaxDMAMaps, s.opt.MaxDMABytes)
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.served:
		return fmt.Errorf("vfio-user: device %s: its guest memory is another server's: %w", s.dev.Config().Name, ErrWiring)
	case g.maxMaps != s.opt.MaxDMAMaps || g.maxBytes != s.opt.MaxDMABytes:
		return fmt.Errorf("vfio-user: device %s: its guest memory holds %d mappings of %#x bytes in all, the server's options %d of %#x (build both from the same Options): %w",
			s.dev.Config().Name, g.maxMaps, g.maxBytes, s.opt.MaxDMAMaps, s.opt.MaxDMABytes, ErrWiring)
	}
	g.served = true
	s.mem = g
	return nil
}

// Memory returns the client's memory by guest-physical address: the
// DMA_MAP regions of the current session (none between sessions). It is
// what the device's DMA reaches when the device was built with it as its
// host port (NewGuestMemory).
func (s *Server) Memory() *GuestMemory { return s.mem }

// Config returns the function's config space as the server serves it.
func (s *Server) Config() ConfigSpace { return s.cfg }

func (s *Server) logf(format string, args ...any) {
	if s.opt.Logf != nil {
		s.opt.Logf(format, args...)
	}
}

// serveSession serves the client on c as the live session, its VERSION
// due by deadline, until it goes away; then it releases the session's
// mappings and eventfds and closes c. The caller holds the session slot.
func (s *Server) serveSession(c *net.UnixConn, deadline time.Time) error {
	if s.pacer != nil {
		s.pacer.enter()
		defer s.pacer.leave()
	}
	ss := &session{
		s: s, c: c, cmds: make(chan *message, cmdQueue), done: make(chan struct{}),
		pending: map[uint16]chan *message{}, irqs: map[irqKey]int{}, free: make(chan []byte, cmdQueue+2),
		client: DefaultCapabilities(), wait: newWaitBudget(s.opt.WaitBudget, time.Now()),
	}
	s.mem.mu.Lock()
	s.mem.remote = ss.remoteDMA
	s.mem.mu.Unlock()
	// the handshake's bound: VERSION accepted by deadline, or c is closed
	hsTimer := time.AfterFunc(time.Until(deadline), ss.handshakeExpired)
	readErr := make(chan error, 1)
	go func() { readErr <- ss.readLoop() }()
	err := ss.handleLoop()
	hsTimer.Stop()
	expired := !ss.hs.CompareAndSwap(hsPending, hsEnded) && ss.hs.Load() == hsExpired
	_ = c.Close()
	close(ss.done)
	rerr := <-readErr
	for m := range ss.cmds {
		closeFDs(m.fds)
	}
	s.mem.mu.Lock()
	s.mem.remote = nil
	s.mem.mu.Unlock()
	s.mem.removeAll()
	for _, fd := range ss.irqs {
		_ = unix.Close(fd)
	}
	if err == nil && rerr != nil && !errors.Is(rerr, io.EOF) {
		err = rerr
	}
	if expired {
		err = s.handshakeError("no VERSION accepted")
	}
	if stall := ss.stall.Load(); stall != nil {
		// set before the session's slot is given up: no client slips in
		s.startBackoff()
		err = fmt.Errorf("vfio-user: %w; new clients are refused for %v (StallBackoff)", *stall, s.opt.StallBackoff)
	}
	return err
}

// message is one message read from the client.
type message struct {
	h       Header
	payload []byte
	fds     []int
	err     error // the message could not be taken whole (its reply is an error)
}

type irqKey struct {
	index, action, sub uint32
}

// States of a session's handshake (session.hs): the VERSION accepted in
// time, the handshake's time gone first, or the session ended first.
const (
	hsPending = iota
	hsDone
	hsExpired
	hsEnded
)

type session struct {
	s       *Server
	c       *net.UnixConn
	wmu     sync.Mutex // one writer at a time
	cmds    chan *message
	done    chan struct{}
	pmu     sync.Mutex
	pending map[uint16]chan *message
	nextID  atomic.Uint32

	free  chan []byte // small payload buffers for reuse
	rbuf  []byte      // reply scratch of the handler
	words []uint32    // BAR word scratch of the handler

	versioned bool
	hs        atomic.Int32 // the handshake: hsPending, then hsDone, hsExpired or hsEnded
	// stall is the first message of the server's that the client let
	// wait past ReplyTimeout (which ended the session), or nil
	stall atomic.Pointer[error]
	// wait is the account of Options.WaitBudget
	wait   *waitBudget
	client Capabilities
	irqs   map[irqKey]int
	wbuf   []byte
}

// maxPayload bounds the payload of any message the server takes.
func (ss *session) maxPayload() uint64 { return ss.s.opt.MaxDataXferSize + 4096 }

// xfer is the largest data count of one transfer in either direction.
func (ss *session) xfer() uint64 { return min(ss.s.opt.MaxDataXferSize, ss.client.MaxDataXferSize) }

// smallPayload is the capacity of the reused payload buffers.
const smallPayload = 4096

// growPayload is the first capacity of a payload buffer larger than
// smallPayload; it doubles as the bytes arrive (readPayload).
const growPayload = 64 << 10

// buffer returns a reused payload buffer of n ≤ smallPayload bytes.
func (ss *session) buffer(n uint64) []byte {
	select {
	case b := <-ss.free:
		return b[:n]
	default:
		return make([]byte, n, smallPayload)
	}
}

// readPayload reads a payload of n ≤ maxPayload bytes from sr. A small one
// goes into a reused buffer; a larger one into a buffer grown as its bytes
// arrive — growPayload first, then doubling, never past n — so a header
// declaring a large payload that never comes costs at most growPayload, or
// twice what was sent, not the size it declares.
func (ss *session) readPayload(sr *streamReader, n uint64) ([]byte, error) {
	if n <= smallPayload {
		b := ss.buffer(n)
		if err := sr.read(b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return readGrowing(n, sr.read)
}

// readGrowing reads n bytes with read, which fills the slice it is given
// or fails, into a buffer that starts at growPayload (or n, when smaller)
// and doubles as the bytes arrive, never past n.
func readGrowing(n uint64, read func([]byte) error) ([]byte, error) {
	b := make([]byte, 0, min(n, growPayload))
	for uint64(len(b)) < n {
		if len(b) == cap(b) {
			nb := make([]byte, len(b), min(n, 2*uint64(cap(b))))
			copy(nb, b)
			b = nb
		}
		if err := read(b[len(b):cap(b)]); err != nil {
			return nil, err
		}
		b = b[:cap(b)]
	}
	return b, nil
}

// release returns a payload buffer once nothing refers to it.
func (ss *session) release(b []byte) {
	if cap(b) != smallPayload {
		return
	}
	select {
	case ss.free <- b:
	default:
	}
}

// readLoop reads messages: replies go to the request waiting on them,
// commands to handleLoop. It returns when the connection fails or closes.
func (ss *session) readLoop() error {
	defer func() {
		close(ss.cmds)
		ss.pmu.Lock()
		for id, ch := range ss.pending {
			close(ch)
			delete(ss.pending, id)
		}
		ss.pmu.Unlock()
	}()
	sr := newStreamReader(ss.c, ss.s.opt.MaxMsgFDs)
	defer sr.close()
	var hb [HeaderSize]byte
	for {
		m := &message{}
		start := sr.offset()
		if err := sr.read(hb[:]); err != nil {
			fds, _ := sr.take(start, sr.offset())
			closeFDs(fds)
			return err
		}
		h, err := ParseHeader(hb[:])
		m.h = h
		if err != nil {
			// the stream cannot be re-synchronised without a size: answer and end
			m.fds, _ = sr.take(start, sr.offset())
			closeFDs(m.fds)
			m.fds = nil
			m.err = err
			ss.deliver(m)
			return err
		}
		n := uint64(h.Size) - HeaderSize
		if n > ss.maxPayload() {
			m.err = fmt.Errorf("%s message of %d bytes exceeds %d: %w", CommandName(h.Command), h.Size, ss.maxPayload()+HeaderSize, ErrLimit)
			// skip the payload to stay in step with the stream
			var chunk [4096]byte
			for n > 0 {
				k := min(n, uint64(len(chunk)))
				if err := sr.read(chunk[:k]); err != nil {
					fds, _ := sr.take(start, sr.offset())
					closeFDs(fds)
					return err
				}
				n -= k
			}
		} else {
			p, err := ss.readPayload(sr, n)
			if err != nil {
				fds, _ := sr.take(start, sr.offset())
				closeFDs(fds)
				return err
			}
			m.payload = p
		}
		fds, trunc := sr.take(start, sr.offset())
		m.fds = fds
		if (trunc || len(m.fds) > ss.s.opt.MaxMsgFDs) && m.err == nil {
			m.err = fmt.Errorf("%s message carries more than %d file descriptors: %w", CommandName(h.Command), ss.s.opt.MaxMsgFDs, ErrLimit)
		}
		if !ss.deliver(m) {
			return nil
		}
	}
}

// deliver hands m to its waiter (a reply) or to handleLoop (a command);
// false: the session is ending.
func (ss *session) deliver(m *message) bool {
	if m.h.Type() == FlagReply && m.err == nil {
		ss.pmu.Lock()
		ch, ok := ss.pending[m.h.ID]
		delete(ss.pending, m.h.ID)
		ss.pmu.Unlock()
		if ok {
			ch <- m // buffered: never blocks
		} else {
			closeFDs(m.fds)
			ss.s.logf("vfio-user: reply %d to no request of the server, dropped", m.h.ID)
		}
		return true
	}
	select {
	case ss.cmds <- m:
		return true
	case <-ss.done:
		closeFDs(m.fds)
		return false
	}
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// errno of a failed command.
type cmdError struct {
	errno syscall.Errno
	err   error
}

func (e *cmdError) Error() string { return e.err.Error() }
func (e *cmdError) Unwrap() error { return e.err }

// errnoOf chooses the errno an error is reported with.
func errnoOf(err error) syscall.Errno {
	var ce *cmdError
	switch {
	case errors.As(err, &ce):
		return ce.errno
	case errors.Is(err, ErrLimit):
		return syscall.E2BIG
	case errors.Is(err, hwarch.ErrDeviceClosed):
		return syscall.ENODEV
	case errors.Is(err, ErrMessage), errors.Is(err, hwarch.ErrBadBAR), errors.Is(err, hwarch.ErrBAROffset), errors.Is(err, hwarch.ErrAlignment):
		return syscall.EINVAL
	case errors.Is(err, ErrUnmapped), errors.Is(err, ErrProtection):
		return syscall.EFAULT
	}
	return syscall.EIO
}

// handleLoop runs commands in order until the client goes away or the
// session must end (a VERSION that cannot be accepted).
func (ss *session) handleLoop() error {
	for m := range ss.cmds {
		reply, fatal, err := ss.handle(m)
		closeFDs(m.fds) // descriptors a handler keeps are removed from m.fds
		if m.h.Type() != FlagCommand {
			ss.s.logf("vfio-user: message %d of type %d is not a command, dropped", m.h.ID, m.h.Type())
			continue
		}
		if m.h.Flags&FlagNoReply != 0 {
			if err != nil {
				ss.s.logf("vfio-user: %s (no reply wanted): %v", CommandName(m.h.Command), err)
			}
		} else if werr := ss.reply(m.h, reply, err); werr != nil {
			return fmt.Errorf("vfio-user: reply to %s: %w", CommandName(m.h.Command), werr)
		}
		ss.release(m.payload) // the reply, which may share it, is sent
		if fatal != nil {
			return fatal
		}
	}
	return nil
}

// reply sends the reply to the command with header h.
func (ss *session) reply(h Header, payload []byte, err error) error {
	rh := Header{ID: h.ID, Command: h.Command, Flags: FlagReply}
	if err != nil {
		rh.Flags |= FlagError
		rh.Error = uint32(errnoOf(err))
		payload = nil
	}
	return ss.send(rh, payload)
}

// send writes one message within the reply timeout. A client that does
// not read its socket for that long ends its session: without the bound a
// DMA_READ/DMA_WRITE request, sent with the device (and its system's
// other devices, which share its lock) held, waited for ever behind the
// unread bytes, and every other client of the system with it. A message
// cut short leaves the stream out of step, so the connection is closed.
func (ss *session) send(h Header, payload []byte) error {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	now := time.Now()
	timeout := now.Add(ss.s.opt.ReplyTimeout)
	spent, charged := ss.beginWait(now)
	defer ss.endWait(charged)
	if err := ss.c.SetWriteDeadline(earliest(timeout, spent)); err != nil {
		return err
	}
	_, err := ss.c.Write(Frame(&ss.wbuf, h, payload))
	if err != nil {
		_ = ss.c.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			what := fmt.Sprintf("%s %d not taken by the client", CommandName(h.Command), h.ID)
			if spent.Before(timeout) {
				err = ss.wait.exhausted(what, time.Now())
				ss.stalled(err)
				return err
			}
			err = fmt.Errorf("the client read nothing of it in %v (ReplyTimeout); session ended: %w", ss.s.opt.ReplyTimeout, err)
			ss.stalled(fmt.Errorf("%s: %w", what, err))
		}
	}
	return err
}

// beginWait starts a wait of the server's on the client at now and
// returns when the wait budget runs out if it goes on until then, and
// whether it is charged to the budget: when the server has no Pacer (it
// cannot tell whether other clients share its system's lock), or when
// another client of its system is connected then — the one whom a wait,
// made with the system's lock held, stalls. A client alone on its system
// stalls no one but itself, and is bounded by ReplyTimeout alone, each
// wait: so a guest that streams DMA through messages on a device of its
// own is not ended for it. Each beginWait is followed by one endWait.
func (ss *session) beginWait(now time.Time) (spent time.Time, charged bool) {
	if p := ss.s.pacer; p != nil && !p.shared() {
		return now.Add(ss.s.opt.ReplyTimeout), false
	}
	return ss.wait.begin(now), true
}

// endWait ends a wait beginWait began.
func (ss *session) endWait(charged bool) {
	if charged {
		ss.wait.end(time.Now())
	}
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// stalled records err, a message of the server's that the client let
// wait past ReplyTimeout, if it is the session's first.
func (ss *session) stalled(err error) {
	ss.stall.CompareAndSwap(nil, &err)
}

// handle runs one command: its reply payload, or its error; fatal ends
// the session after the reply.
func (ss *session) handle(m *message) (reply []byte, fatal, err error) {
	if m.err != nil {
		return nil, nil, m.err
	}
	if m.h.Type() != FlagCommand {
		return nil, nil, nil
	}
	if m.h.Command == CmdVersion {
		return ss.version(m)
	}
	if !ss.versioned {
		return nil, nil, fmt.Errorf("%s before VERSION: %w", CommandName(m.h.Command), ErrMessage)
	}
	if len(m.fds) > 0 && m.h.Command != CmdDMAMap && m.h.Command != CmdSetIRQs {
		return nil, nil, fmt.Errorf("%s carries %d file descriptors, it takes none: %w", CommandName(m.h.Command), len(m.fds), ErrMessage)
	}
	p := m.payload
	switch m.h.Command {
	case CmdDMAMap:
		return nil, nil, ss.dmaMap(m)
	case CmdDMAUnmap:
		reply, err = ss.dmaUnmap(p)
	case CmdDeviceGetInfo:
		reply, err = ss.deviceInfo(p)
	case CmdGetRegionInfo:
		reply, err = ss.regionInfo(p)
	case CmdGetIRQInfo:
		reply, err = ss.irqInfo(p)
	case CmdSetIRQs:
		err = ss.setIRQs(m)
	case CmdRegionRead:
		reply, err = ss.regionRead(p)
	case CmdRegionWrite:
		reply, err = ss.regionWrite(p)
	case CmdRegionWriteMulti:
		reply, err = ss.regionWriteMulti(p)
	case CmdDeviceReset:
		err = ss.deviceReset(p)
	default:
		err = &cmdError{syscall.ENOTSUP, fmt.Errorf("%s is not supported by this server: %w", CommandName(m.h.Command), ErrMessage)}
	}
	return reply, nil, err
}

func (ss *session) version(m *message) ([]byte, error, error) {
	p := m.payload
	if ss.versioned {
		return nil, nil, fmt.Errorf("second VERSION: %w", ErrMessage)
	}
	if len(p) < 4 {
		return nil, nil, fmt.Errorf("VERSION payload of %d bytes, want at least 4: %w", len(p), ErrMessage)
	}
	major, minor := binary.LittleEndian.Uint16(p), binary.LittleEndian.Uint16(p[2:])
	if major != VersionMajor {
		err := &cmdError{syscall.ENOTSUP, fmt.Errorf("client version %d.%d, server speaks %d.%d: %w", major, minor, VersionMajor, VersionMinor, ErrVersion)}
		return nil, err, err
	}
	caps, err := parseVersionData(p[4:])
	if err != nil {
		return nil, nil, err
	}
	if caps.PgSizes&pageSize == 0 {
		return nil, nil, &cmdError{syscall.ENOTSUP, fmt.Errorf("client page sizes %#x lack %d, the server's only one: %w", caps.PgSizes, pageSize, ErrVersion)}
	}
	if !ss.hs.CompareAndSwap(hsPending, hsDone) {
		// the handshake's time ran out first: the connection is closed
		err := ss.s.handshakeError("VERSION came too late")
		return nil, err, err
	}
	ss.client, ss.versioned = caps, true
	own := ss.s.own
	own.MaxDMAMaps = min(own.MaxDMAMaps, caps.MaxDMAMaps)
	ss.s.mem.mu.Lock()
	ss.s.mem.maxMaps = int(own.MaxDMAMaps)
	ss.s.mem.mu.Unlock()
	data := versionReply(own, caps.WriteMultiple)
	reply := make([]byte, 4+len(data))
	binary.LittleEndian.PutUint16(reply, VersionMajor)
	binary.LittleEndian.PutUint16(reply[2:], min(minor, VersionMinor))
	copy(reply[4:], data)
	return reply, nil, nil
}

func payloadSize(cmd uint16, p []byte, want int, exact bool) error {
	if len(p) < want || exact && len(p) != want {
		return fmt.Errorf("%s payload of %d bytes, want %d: %w", CommandName(cmd), len(p), want, ErrMessage)
	}
	return nil
}

func (ss *session) dmaMap(m *message) error {
	p := m.payload
	if err := payloadSize(CmdDMAMap, p, sizeDMAMap, true); err != nil {
		return err
	}
	le := binary.LittleEndian
	argsz, flags := le.Uint32(p), le.Uint32(p[4:])
	off, addr, size := le.Uint64(p[8:]), le.Uint64(p[16:]), le.Uint64(p[24:])
	switch {
	case argsz != sizeDMAMap:
		return fmt.Errorf("DMA_MAP argsz %d, want %d: %w", argsz, sizeDMAMap, ErrMessage)
	case flags&^(DMAFlagRead|DMAFlagWrite) != 0:
		return fmt.Errorf("DMA_MAP flags %#x: unknown bits: %w", flags, ErrMessage)
	case len(m.fds) > 1:
		return fmt.Errorf("DMA_MAP with %d file descriptors, want 0 or 1: %w", len(m.fds), ErrMessage)
	case size == 0 || addr+size < addr || addr+size == 0:
		return fmt.Errorf("DMA_MAP [%#x, +%#x): empty or wraps: %w", addr, size, ErrMessage)
	case addr%pageSize != 0 || size%pageSize != 0 || off%pageSize != 0:
		return fmt.Errorf("DMA_MAP [%#x, +%#x) offset %#x: not %d-aligned: %w", addr, size, off, pageSize, ErrMessage)
	case size > ss.s.opt.MaxDMABytes:
		return fmt.Errorf("DMA_MAP of %#x bytes exceeds %#x: %w", size, ss.s.opt.MaxDMABytes, ErrLimit)
	}
	mp := Mapping{Addr: addr, Size: size, Flags: flags}
	if len(m.fds) == 1 {
		prot := 0
		if flags&DMAFlagRead != 0 {
			prot |= unix.PROT_READ
		}
		if flags&DMAFlagWrite != 0 {
			prot |= unix.PROT_WRITE
		}
		if prot == 0 {
			prot = unix.PROT_NONE
		}
		if size > uint64(int(^uint(0)>>1)) || off > uint64(int64(^uint64(0)>>1)) {
			return fmt.Errorf("DMA_MAP of %#x bytes at file offset %#x: too large to map: %w", size, off, ErrLimit)
		}
		var st unix.Stat_t
		if err := unix.Fstat(m.fds[0], &st); err != nil {
			return &cmdError{errnoFrom(err), fmt.Errorf("DMA_MAP [%#x, +%#x): fstat of its file: %w", addr, size, err)}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFREG && (st.Size < 0 || off > uint64(st.Size) || size > uint64(st.Size)-off) {
			return fmt.Errorf("DMA_MAP [%#x, +%#x) at file offset %#x: the file holds %d bytes: %w", addr, size, off, st.Size, ErrMessage)
		}
		mem, err := unix.Mmap(m.fds[0], int64(off), int(size), prot, unix.MAP_SHARED)
		if err != nil {
			return &cmdError{errnoFrom(err), fmt.Errorf("DMA_MAP [%#x, +%#x): mmap of file offset %#x: %w", addr, size, off, err)}
		}
		mp.mem = mem
	}
	if err := ss.s.mem.add(mp); err != nil {
		if mp.mem != nil {
			_ = unix.Munmap(mp.mem)
		}
		return err
	}
	return nil
}

func errnoFrom(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

func (ss *session) dmaUnmap(p []byte) ([]byte, error) {
	if err := payloadSize(CmdDMAUnmap, p, sizeDMAUnmap, true); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	argsz, flags := le.Uint32(p), le.Uint32(p[4:])
	addr, size := le.Uint64(p[8:]), le.Uint64(p[16:])
	switch {
	case argsz < sizeDMAUnmap:
		return nil, fmt.Errorf("DMA_UNMAP argsz %d, want at least %d: %w", argsz, sizeDMAUnmap, ErrMessage)
	case flags&DMAUnmapGetDirty != 0:
		return nil, &cmdError{syscall.ENOTSUP, fmt.Errorf("DMA_UNMAP: dirty page logging is not supported: %w", ErrMessage)}
	case flags&^DMAUnmapAll != 0:
		return nil, fmt.Errorf("DMA_UNMAP flags %#x: unknown bits: %w", flags, ErrMessage)
	case flags&DMAUnmapAll != 0:
		if addr != 0 || size != 0 {
			return nil, fmt.Errorf("DMA_UNMAP all with address %#x size %#x, want 0 and 0: %w", addr, size, ErrMessage)
		}
		ss.s.mem.removeAll()
	default:
		if err := ss.s.mem.remove(addr, size); err != nil {
			return nil, err
		}
	}
	return p, nil // the reply is the request's entry
}

func (ss *session) deviceInfo(p []byte) ([]byte, error) {
	if err := payloadSize(CmdDeviceGetInfo, p, sizeDeviceInfo, true); err != nil {
		return nil, err
	}
	if a := binary.LittleEndian.Uint32(p); a < sizeDeviceInfo {
		return nil, fmt.Errorf("DEVICE_GET_INFO argsz %d, want at least %d: %w", a, sizeDeviceInfo, ErrMessage)
	}
	out := make([]byte, sizeDeviceInfo)
	le := binary.LittleEndian
	le.PutUint32(out, sizeDeviceInfo)
	le.PutUint32(out[4:], DeviceFlagReset|DeviceFlagPCI)
	le.PutUint32(out[8:], NumRegions)
	le.PutUint32(out[12:], NumIRQIdx)
	return out, nil
}

// regionSize is the size of region r, 0 for one the function lacks.
func (ss *session) regionSize(r uint32) uint64 {
	switch {
	case r <= RegionBAR5:
		return ss.s.dev.BARSize(int(r))
	case r == RegionConfig:
		return ss.s.cfgSize
	}
	return 0 // ROM, VGA
}

func (ss *session) regionInfo(p []byte) ([]byte, error) {
	if err := payloadSize(CmdGetRegionInfo, p, sizeRegionInfo, true); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	argsz, idx := le.Uint32(p), le.Uint32(p[8:])
	switch {
	case argsz < sizeRegionInfo:
		return nil, fmt.Errorf("DEVICE_GET_REGION_INFO argsz %d, want at least %d: %w", argsz, sizeRegionInfo, ErrMessage)
	case idx >= NumRegions:
		return nil, fmt.Errorf("DEVICE_GET_REGION_INFO of region %d, the function has %d: %w", idx, NumRegions, ErrMessage)
	}
	size := ss.regionSize(idx)
	var flags uint32
	if size > 0 {
		flags = RegionFlagRead | RegionFlagWrite
	}
	out := make([]byte, sizeRegionInfo)
	le.PutUint32(out, sizeRegionInfo)
	le.PutUint32(out[4:], flags)
	le.PutUint32(out[8:], idx)
	le.PutUint64(out[16:], size)
	return out, nil
}

func (ss *session) irqInfo(p []byte) ([]byte, error) {
	if err := payloadSize(CmdGetIRQInfo, p, sizeIRQInfo, true); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	argsz, idx := le.Uint32(p), le.Uint32(p[8:])
	switch {
	case argsz < sizeIRQInfo:
		return nil, fmt.Errorf("DEVICE_GET_IRQ_INFO argsz %d, want at least %d: %w", argsz, sizeIRQInfo, ErrMessage)
	case idx >= NumIRQIdx:
		return nil, fmt.Errorf("DEVICE_GET_IRQ_INFO of index %d, the function has %d: %w", idx, NumIRQIdx, ErrMessage)
	}
	flags := uint32(IRQInfoEventfd)
	switch idx {
	case IRQIntx:
		flags |= IRQInfoMaskable | IRQInfoAutomasked
	case IRQMSI, IRQMSIX:
		flags |= IRQInfoNoResize
	}
	out := make([]byte, sizeIRQInfo)
	le.PutUint32(out, sizeIRQInfo)
	le.PutUint32(out[4:], flags)
	le.PutUint32(out[8:], idx)
	le.PutUint32(out[12:], ss.s.irqN[idx])
	return out, nil
}

func (ss *session) setIRQs(m *message) error {
	p := m.payload
	if err := payloadSize(CmdSetIRQs, p, sizeSetIRQs, false); err != nil {
		return err
	}
	le := binary.LittleEndian
	argsz, flags, idx, start, count := le.Uint32(p), le.Uint32(p[4:]), le.Uint32(p[8:]), le.Uint32(p[12:]), le.Uint32(p[16:])
	data := flags & (IRQSetDataNone | IRQSetDataBool | IRQSetDataEventfd)
	action := flags & (IRQSetActionMask | IRQSetActionUnmask | IRQSetActionTrig)
	one := func(v uint32) bool { return v != 0 && v&(v-1) == 0 }
	switch {
	case int(argsz) != len(p):
		return fmt.Errorf("DEVICE_SET_IRQS argsz %d, payload %d bytes: %w", argsz, len(p), ErrMessage)
	case flags&^(data|action) != 0 || !one(data) || !one(action):
		return fmt.Errorf("DEVICE_SET_IRQS flags %#x: want one data and one action flag: %w", flags, ErrMessage)
	case idx >= NumIRQIdx:
		return fmt.Errorf("DEVICE_SET_IRQS of index %d, the function has %d: %w", idx, NumIRQIdx, ErrMessage)
	}
	extra := len(p) - sizeSetIRQs
	if data == IRQSetDataBool && extra != int(count) || data != IRQSetDataBool && extra != 0 {
		return fmt.Errorf("DEVICE_SET_IRQS with %d data bytes for %d vectors, flags %#x: %w", extra, count, flags, ErrMessage)
	}
	if count == 0 {
		if start != 0 || data != IRQSetDataNone || action != IRQSetActionTrig {
			return fmt.Errorf("DEVICE_SET_IRQS of no vectors is only 'disable all' (start 0, DATA_NONE|ACTION_TRIGGER): %w", ErrMessage)
		}
		for k, fd := range ss.irqs {
			if k.index == idx {
				_ = unix.Close(fd)
				delete(ss.irqs, k)
			}
		}
		return nil
	}
	if uint64(start)+uint64(count) > uint64(ss.s.irqN[idx]) {
		return fmt.Errorf("DEVICE_SET_IRQS vectors [%d, +%d) of index %d, which has %d: %w", start, count, idx, ss.s.irqN[idx], ErrMessage)
	}
	switch data {
	case IRQSetDataEventfd:
		if len(m.fds) != 0 && len(m.fds) != int(count) {
			return fmt.Errorf("DEVICE_SET_IRQS of %d vectors with %d eventfds: %w", count, len(m.fds), ErrMessage)
		}
		for i, fd := range m.fds {
			if err := keepableEventfd(fd); err != nil {
				return fmt.Errorf("DEVICE_SET_IRQS vector %d of index %d: %w", start+uint32(i), idx, err)
			}
		}
		for i := range count {
			k := irqKey{idx, action, start + i}
			if fd, ok := ss.irqs[k]; ok {
				_ = unix.Close(fd)
				delete(ss.irqs, k)
			}
			if len(m.fds) > 0 {
				ss.irqs[k] = m.fds[i]
			}
		}
		m.fds = nil // kept (or none)
	case IRQSetDataNone, IRQSetDataBool:
		if action != IRQSetActionTrig {
			return nil // mask state: this device raises no interrupts yet
		}
		for i := range count {
			if data == IRQSetDataBool && p[sizeSetIRQs+int(i)] == 0 {
				continue
			}
			if fd, ok := ss.irqs[irqKey{idx, IRQSetActionTrig, start + i}]; ok {
				var one [8]byte
				binary.LittleEndian.PutUint64(one[:], 1)
				_, _ = unix.Write(fd, one[:]) // non-blocking (keepableEventfd): at its maximum count the signal is dropped, as hardware would coalesce it
			}
		}
	}
	return nil
}

// keepableEventfd checks that fd, a descriptor a client gave as an
// interrupt trigger, is an eventfd, and makes it non-blocking: the server
// signals it from the session's handler, and a blocking eventfd at its
// maximum count (or any other kind of file: a full pipe, a socket, a file
// on a stalled file system) would block that write for ever, wedging the
// session so that it never ends and every later client is refused EBUSY.
// The kernel's vfio signals its eventfds without blocking
// (eventfd_signal), and QEMU makes its eventfds non-blocking already.
func keepableEventfd(fd int) error {
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return &cmdError{errnoFrom(err), fmt.Errorf("descriptor %d: %w", fd, err)}
	}
	if link != "anon_inode:[eventfd]" {
		return fmt.Errorf("descriptor %d is %q, not an eventfd: %w", fd, link, ErrMessage)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return &cmdError{errnoFrom(err), fmt.Errorf("eventfd %d: making it non-blocking: %w", fd, err)}
	}
	return nil
}

// checkRegion validates an access of n bytes at off of region r.
func (ss *session) checkRegion(cmd uint16, r uint32, off uint64, n uint64) error {
	if r >= NumRegions {
		return fmt.Errorf("%s of region %d, the function has %d: %w", CommandName(cmd), r, NumRegions, ErrMessage)
	}
	size := ss.regionSize(r)
	switch {
	case n == 0:
		return fmt.Errorf("%s of 0 bytes: %w", CommandName(cmd), ErrMessage)
	case n > ss.xfer():
		return fmt.Errorf("%s of %d bytes exceeds the transfer limit %d: %w", CommandName(cmd), n, ss.xfer(), ErrLimit)
	case n > size || off > size-n:
		return fmt.Errorf("%s of %d bytes at %#x of region %d (%#x bytes): %w", CommandName(cmd), n, off, r, size, ErrMessage)
	case r <= RegionBAR5 && (off%4 != 0 || n%4 != 0):
		return fmt.Errorf("%s of %d bytes at %#x of BAR%d: BARs take whole aligned 32-bit words: %w", CommandName(cmd), n, off, r, hwarch.ErrAlignment)
	}
	return nil
}

// access reads (write false) or writes region r at off.
func (ss *session) access(write bool, r uint32, off uint64, p []byte) error {
	if r == RegionConfig {
		if write {
			return ss.s.cfg.WriteConfig(off, p)
		}
		return ss.s.cfg.ReadConfig(off, p)
	}
	if ss.s.pacer != nil {
		if err := ss.s.pacer.Pace(); err != nil {
			return err
		}
	}
	if cap(ss.words) < len(p)/4 {
		ss.words = make([]uint32, len(p)/4)
	}
	words := ss.words[:len(p)/4]
	if write {
		for i := range words {
			words[i] = binary.LittleEndian.Uint32(p[4*i:])
		}
		err := ss.s.dev.WriteBAR(int(r), off, words)
		if ss.s.pacer != nil {
			ss.s.pacer.runAhead()
		}
		return err
	}
	if err := ss.s.dev.ReadBAR(int(r), off, words); err != nil {
		return err
	}
	for i, w := range words {
		binary.LittleEndian.PutUint32(p[4*i:], w)
	}
	return nil
}

func (ss *session) regionRead(p []byte) ([]byte, error) {
	if err := payloadSize(CmdRegionRead, p, sizeRegionRW, true); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	off, r, n := le.Uint64(p), le.Uint32(p[8:]), le.Uint32(p[12:])
	if err := ss.checkRegion(CmdRegionRead, r, off, uint64(n)); err != nil {
		return nil, err
	}
	if cap(ss.rbuf) < sizeRegionRW+int(n) {
		ss.rbuf = make([]byte, sizeRegionRW+int(n))
	}
	out := ss.rbuf[:sizeRegionRW+int(n)]
	copy(out, p)
	if err := ss.access(false, r, off, out[sizeRegionRW:]); err != nil {
		return nil, err
	}
	return out, nil
}

func (ss *session) regionWrite(p []byte) ([]byte, error) {
	if err := payloadSize(CmdRegionWrite, p, sizeRegionRW, false); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	off, r, n := le.Uint64(p), le.Uint32(p[8:]), le.Uint32(p[12:])
	if uint64(len(p)-sizeRegionRW) != uint64(n) {
		return nil, fmt.Errorf("REGION_WRITE count %d with %d data bytes: %w", n, len(p)-sizeRegionRW, ErrMessage)
	}
	if err := ss.checkRegion(CmdRegionWrite, r, off, uint64(n)); err != nil {
		return nil, err
	}
	if err := ss.access(true, r, off, p[sizeRegionRW:]); err != nil {
		return nil, err
	}
	return p[:sizeRegionRW], nil
}

func (ss *session) regionWriteMulti(p []byte) ([]byte, error) {
	if !ss.client.WriteMultiple {
		return nil, &cmdError{syscall.ENOTSUP, fmt.Errorf("REGION_WRITE_MULTI without the write_multiple capability: %w", ErrMessage)}
	}
	if err := payloadSize(CmdRegionWriteMulti, p, 8, false); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	cnt := le.Uint64(p)
	if cnt == 0 || cnt > uint64(len(p)-8)/sizeMultiEntry || uint64(len(p)-8) != cnt*sizeMultiEntry {
		return nil, fmt.Errorf("REGION_WRITE_MULTI of %d writes in %d bytes: %w", cnt, len(p), ErrMessage)
	}
	for i := range cnt {
		e := p[8+i*sizeMultiEntry:][:sizeMultiEntry]
		off, r, n := le.Uint64(e), le.Uint32(e[8:]), le.Uint32(e[12:])
		if n > maxMultiPayload {
			return nil, fmt.Errorf("REGION_WRITE_MULTI write %d of %d bytes, at most %d: %w", i, n, maxMultiPayload, ErrMessage)
		}
		if err := ss.checkRegion(CmdRegionWriteMulti, r, off, uint64(n)); err != nil {
			return nil, fmt.Errorf("write %d: %w", i, err)
		}
		if err := ss.access(true, r, off, e[16:16+n]); err != nil {
			return nil, fmt.Errorf("REGION_WRITE_MULTI write %d: %w", i, err)
		}
	}
	out := make([]byte, 8)
	le.PutUint64(out, cnt)
	return out, nil
}

func (ss *session) deviceReset(p []byte) error {
	if len(p) != 0 {
		return fmt.Errorf("DEVICE_RESET with a %d-byte payload, it takes none: %w", len(p), ErrMessage)
	}
	// The device's function-level reset returns its own config space to
	// power-on values; a header of the server's own is reset here.
	if ss.s.cfg != ConfigSpace(ss.s.dev) {
		if r, ok := ss.s.cfg.(ConfigResetter); ok {
			r.ResetConfig()
		}
	}
	return ss.s.dev.FunctionReset()
}

// remoteDMA moves p to or from the client's memory at addr by DMA_READ or
// DMA_WRITE requests, each at most the transfer limit, waiting for each
// reply.
func (ss *session) remoteDMA(write bool, addr uint64, p []byte) error {
	for len(p) > 0 {
		k := min(uint64(len(p)), ss.xfer())
		if err := ss.remoteOne(write, addr, p[:k]); err != nil {
			return err
		}
		addr += k
		p = p[k:]
	}
	return nil
}

func (ss *session) remoteOne(write bool, addr uint64, p []byte) error {
	cmd, name := uint16(CmdDMARead), "DMA_READ"
	if write {
		cmd, name = CmdDMAWrite, "DMA_WRITE"
	}
	id := uint16(ss.nextID.Add(1))
	ch := make(chan *message, 1)
	ss.pmu.Lock()
	select {
	case <-ss.done:
		ss.pmu.Unlock()
		return fmt.Errorf("%s at %#x: %w", name, addr, ErrDisconnected)
	default:
	}
	ss.pending[id] = ch
	ss.pmu.Unlock()
	req := make([]byte, sizeDMARW, sizeDMARW+len(p))
	binary.LittleEndian.PutUint64(req, addr)
	binary.LittleEndian.PutUint64(req[8:], uint64(len(p)))
	if write {
		req = append(req, p...)
	}
	if err := ss.send(Header{ID: id, Command: cmd, Flags: FlagCommand}, req); err != nil {
		ss.pmu.Lock()
		delete(ss.pending, id)
		ss.pmu.Unlock()
		return fmt.Errorf("%s at %#x: %w: %w", name, addr, ErrDisconnected, err)
	}
	now := time.Now()
	timeout := now.Add(ss.s.opt.ReplyTimeout)
	spent, charged := ss.beginWait(now)
	t := time.NewTimer(earliest(timeout, spent).Sub(now))
	defer t.Stop()
	var r *message
	select {
	case r = <-ch:
		ss.endWait(charged)
	case <-t.C:
		ss.endWait(charged)
		ss.pmu.Lock()
		delete(ss.pending, id)
		ss.pmu.Unlock()
		// The wait held the device, and every device of its system with
		// it; a client that lets it run out, or that keeps the server
		// waiting on it too long in all, request after request, is not
		// speaking the protocol as a driver does, and its session ends,
		// so that it cannot stall the system again without connecting
		// anew (and being refused for StallBackoff).
		_ = ss.c.Close()
		var err error
		if spent.Before(timeout) {
			err = ss.wait.exhausted(fmt.Sprintf("%s of %d bytes at %#x: no reply", name, len(p), addr), time.Now())
		} else {
			err = fmt.Errorf("%s of %d bytes at %#x: no reply in %v (ReplyTimeout); session ended: %w", name, len(p), addr, ss.s.opt.ReplyTimeout, ErrDisconnected)
		}
		ss.stalled(err)
		return err
	}
	if r == nil {
		return fmt.Errorf("%s at %#x: %w", name, addr, ErrDisconnected)
	}
	closeFDs(r.fds)
	if r.h.Command != cmd {
		return fmt.Errorf("%s at %#x: reply is for %s: %w", name, addr, CommandName(r.h.Command), ErrMessage)
	}
	if r.h.Flags&FlagError != 0 {
		return fmt.Errorf("%s of %d bytes at %#x: client error %v: %w", name, len(p), addr, syscall.Errno(r.h.Error), ErrUnmapped)
	}
	le := binary.LittleEndian
	rp, n := r.payload, uint64(len(p))
	ok := len(rp) >= 12 && le.Uint64(rp) == addr
	if write {
		// the specification's table gives the DMA_WRITE reply's count 4 bytes; accept both
		ok = ok && (len(rp) == sizeDMARW && le.Uint64(rp[8:]) == n || len(rp) == 12 && uint64(le.Uint32(rp[8:])) == n)
	} else {
		ok = ok && len(rp) == sizeDMARW+len(p) && le.Uint64(rp[8:]) == n
	}
	if !ok {
		return fmt.Errorf("%s of %d bytes at %#x: reply of %d bytes does not echo the request: %w", name, len(p), addr, len(rp), ErrMessage)
	}
	if !write {
		copy(p, r.payload[sizeDMARW:])
	}
	return nil
}
