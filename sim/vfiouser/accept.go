package vfiouser

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How Serve admits connections. One session is live at a time; the other
// connections it holds — waiting for their first message, for a session
// that is ending, or being refused — are at most maxLobby, each for at most
// the handshake timeout, so a flood of connections holds a bounded number
// of goroutines and descriptors.
const (
	// maxLobby bounds the connections Serve holds besides the live
	// session; one past it is closed at once.
	maxLobby = 8
	// busyGrace is how long (at most half the handshake timeout) a client
	// whose first message finds a live session waits for that session to
	// end before it is refused: a client that reconnects as soon as its
	// last connection is closed (the old session still being released) is
	// served, not refused.
	busyGrace = time.Second
	// refuseDrain bounds the payload a refused client's first message
	// may have for the server to read it before replying (a VERSION's is
	// at most 4 + MaxVersionJSON bytes); a larger one is left unread.
	refuseDrain = 64 << 10
)

// Serve accepts connections on ln and serves one client at a time without
// ever blocking on one: a connection must have its VERSION accepted within
// Options.HandshakeTimeout of its accept or is closed; a client whose first
// message arrives while another client's session is live (and does not end
// within a second, or half the handshake timeout if that is less) has that
// message answered with an EBUSY error reply and is closed, the live
// session untouched (a refused client has the handshake timeout again to
// send its whole first message); and at most 8 connections are held
// besides the live session (silent, or being refused), one more being
// closed at once. Each refusal and timeout is logged in one line through
// Options.Logf. Serve returns when ln is closed (nil) or Accept fails
// otherwise, after closing the connections not being served and waiting
// for the live session to end.
func (s *Server) Serve(ln *net.UnixListener) error {
	lb := &lobby{conns: map[*net.UnixConn]struct{}{}, stop: make(chan struct{})}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer lb.close()
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("vfio-user: accept: %w", err)
		}
		if !lb.enter(c) {
			_ = c.Close()
			s.logf("vfio-user: connection closed at once: %d others already wait to be served or refused: %v", maxLobby, ErrLimit)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			served, err := s.serveConn(c, lb)
			lb.leave(c)
			switch {
			case err == nil || lb.stopped():
			case served:
				s.logf("vfio-user: session ended: %v", err)
			default:
				s.logf("%v", err) // it says what happened to the connection
			}
		}()
	}
}

// ServeConn serves one client on c as Serve does a connection it accepted:
// c must have its VERSION accepted within Options.HandshakeTimeout; while
// another client's session is live (and does not end within Serve's grace)
// c's first message is answered EBUSY ([ErrBusy]); otherwise the client is
// served until it goes away, and then the session's mappings and eventfds
// are released. c is closed in every case; the device's state is kept. It
// returns nil when the client closed the connection between messages, and
// an error saying why otherwise.
func (s *Server) ServeConn(c *net.UnixConn) error {
	_, err := s.serveConn(c, nil)
	return err
}

// serveConn admits c (of lb, when Serve accepted it): it waits for c's
// first message, then makes c the live session or refuses it. served:
// c was the live session.
func (s *Server) serveConn(c *net.UnixConn, lb *lobby) (served bool, err error) {
	deadline := time.Now().Add(s.opt.HandshakeTimeout)
	defer c.Close()
	if err := c.SetReadDeadline(deadline); err != nil {
		return false, fmt.Errorf("vfio-user: %w", err)
	}
	spoke, err := awaitMessage(c)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false, s.handshakeError("no message")
	case err != nil:
		return false, fmt.Errorf("vfio-user: waiting for the client's first message: %w", err)
	case !spoke:
		return false, nil // closed without a word (a probe of the socket)
	}
	if !s.takeSlot(lb) {
		if lb.stopped() {
			return false, nil
		}
		return false, s.refuse(c, time.Now().Add(s.opt.HandshakeTimeout), busyRefusal)
	}
	if left := s.backoffLeft(); left > 0 {
		<-s.slot
		why := fmt.Sprintf("the last client kept the server waiting past the reply timeout or its wait budget; refusing clients for %v more (StallBackoff %v)", left.Round(time.Millisecond), s.opt.StallBackoff)
		return false, s.refuse(c, time.Now().Add(s.opt.HandshakeTimeout), refusal{why, "EAGAIN", syscall.EAGAIN, ErrBackoff})
	}
	defer func() { <-s.slot }()
	if lb != nil && !lb.leave(c) {
		return false, nil // Serve is stopping
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return false, fmt.Errorf("vfio-user: %w", err)
	}
	return true, s.serveSession(c, deadline)
}

// takeSlot makes the caller the live session, waiting up to busyGrace (at
// most half the handshake timeout) for a live one to end; false: it did
// not end in time, or Serve stopped.
func (s *Server) takeSlot(lb *lobby) bool {
	select {
	case s.slot <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(min(busyGrace, s.opt.HandshakeTimeout/2))
	defer t.Stop()
	select {
	case s.slot <- struct{}{}:
		return true
	case <-t.C:
	case <-lb.stopping():
	}
	return false
}

// handshakeError is the error of a connection whose VERSION was not
// accepted within the handshake timeout; what says what happened instead.
func (s *Server) handshakeError(what string) error {
	return fmt.Errorf("vfio-user: %s within the handshake timeout (%v) of connecting; connection closed: %w", what, s.opt.HandshakeTimeout, ErrVersion)
}

// handshakeExpired ends a session whose VERSION was not accepted in time,
// unless it was.
func (ss *session) handshakeExpired() {
	if ss.hs.CompareAndSwap(hsPending, hsExpired) {
		_ = ss.c.Close()
	}
}

// awaitMessage waits, until c's read deadline, for c to have bytes to
// read, leaving them (and any descriptors with them) unread. false with
// no error: the client closed its end without sending any.
func awaitMessage(c *net.UnixConn) (bool, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return false, err
	}
	var n uintptr
	var errno syscall.Errno
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		for {
			// recv(2) with MSG_PEEK, no address (a stream's sender has none to give)
			n, _, errno = unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
			if errno != unix.EINTR {
				return errno != unix.EAGAIN
			}
		}
	})
	if err != nil {
		return false, err
	}
	if errno != 0 {
		return false, errno
	}
	return n > 0, nil
}

// refusal is why a client is refused: the reason logged, and the errno
// (its name and value) its first message is answered with; err is the
// error the refusal wraps.
type refusal struct {
	why   string
	name  string
	errno syscall.Errno
	err   error
}

// busyRefusal refuses a client while another client's session is live.
var busyRefusal = refusal{"another client's session is live", "EBUSY", syscall.EBUSY, ErrBusy}

// refuse answers the first message of c, a client that is not served
// (why: rf), with rf's error reply (if it is a command that wants one,
// and it arrives by deadline) and leaves c to be closed. Nothing of a
// live session is touched. The returned error says what happened.
func (s *Server) refuse(c *net.UnixConn, deadline time.Time, rf refusal) error {
	why := rf.why
	if err := c.SetDeadline(deadline); err != nil {
		return fmt.Errorf("vfio-user: refused a client (%s): %w: %w", why, err, rf.err)
	}
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(c, hb[:]); err != nil {
		return fmt.Errorf("vfio-user: refused a client (%s) without a reply: its first message broke off (%v): %w", why, err, rf.err)
	}
	h, err := ParseHeader(hb[:])
	if err != nil || h.Type() != FlagCommand || h.Flags&FlagNoReply != 0 {
		return fmt.Errorf("vfio-user: refused a client (%s) without a reply: its first message is not a command that wants one: %w", why, rf.err)
	}
	// Read the rest of a small message, so that the client reads the reply
	// before it learns of the close (a socket closed with unread bytes
	// resets the connection).
	if n := int64(h.Size) - HeaderSize; n <= refuseDrain {
		_, _ = io.CopyN(io.Discard, c, n)
	}
	var buf []byte
	reply := Frame(&buf, Header{ID: h.ID, Command: h.Command, Flags: FlagReply | FlagError, Error: uint32(rf.errno)}, nil)
	if _, err := c.Write(reply); err != nil {
		return fmt.Errorf("vfio-user: refused a client (%s): its %s's %s reply could not be sent (%v): %w", why, CommandName(h.Command), rf.name, err, rf.err)
	}
	return fmt.Errorf("vfio-user: refused a client (%s): answered its %s with %s: %w", why, CommandName(h.Command), rf.name, rf.err)
}

// lobby holds the connections Serve has accepted that are not the live
// session, at most maxLobby. A nil *lobby (ServeConn's) holds none and
// never stops.
type lobby struct {
	mu    sync.Mutex
	conns map[*net.UnixConn]struct{}
	stop  chan struct{} // closed when Serve stops
	done  bool
}

// enter admits c; false: the lobby is full or closed.
func (lb *lobby) enter(c *net.UnixConn) bool {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.done || len(lb.conns) >= maxLobby {
		return false
	}
	lb.conns[c] = struct{}{}
	return true
}

// leave lets c go (it becomes the session, or is done with); false: c was
// no longer held, Serve having stopped and closed it.
func (lb *lobby) leave(c *net.UnixConn) bool {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	_, ok := lb.conns[c]
	delete(lb.conns, c)
	return ok
}

// close stops the lobby: it closes the connections it holds and admits no
// more.
func (lb *lobby) close() {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.done {
		return
	}
	lb.done = true
	close(lb.stop)
	for c := range lb.conns {
		_ = c.Close()
	}
	clear(lb.conns)
}

// stopping is closed when Serve stops (never for a nil lobby).
func (lb *lobby) stopping() <-chan struct{} {
	if lb == nil {
		return nil
	}
	return lb.stop
}

// stopped reports whether Serve has stopped.
func (lb *lobby) stopped() bool {
	select {
	case <-lb.stopping():
		return true
	default:
		return false
	}
}
