package vfiouser

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// readAhead is the size of a session's read-ahead buffer: a small message
// (header and payload) arrives in one recvmsg instead of one for each.
const readAhead = 64 << 10

// streamReader reads a session's byte stream through a read-ahead buffer
// and gives each message the file descriptors that came with it.
//
// Descriptors are attached to the first bytes of the sendmsg that sent
// them, and a Linux stream read that takes such bytes stops at the end of
// what that sendmsg queued with them (it may have taken earlier messages'
// bytes before them, never later ones). A sender sends descriptors with
// the message they accompany. So the descriptors of one read belong to the
// message that holds the last byte of that read. Finishing a message (take)
// applies that rule to the reads not yet given out.
type streamReader struct {
	c       *net.UnixConn
	maxFDs  int // descriptors one message may carry
	oob     []byte
	buf     []byte
	r, w    int    // unread bytes: buf[r:w]
	pos     uint64 // stream offset of buf[r]
	batches []fdBatch
	// over is the stream range [start, end) of the reads whose descriptors
	// were closed on arrival, past the bound on those held (recv), when
	// over.trunc: every message it reaches is refused, so that reads past
	// the bound cost no batch each.
	over fdBatch
}

// fdBatch is the descriptors (and truncation) one read brought, with the
// stream offsets of the bytes that read brought: [start, end).
type fdBatch struct {
	start, end uint64
	fds        []int
	trunc      bool
}

func newStreamReader(c *net.UnixConn, maxFDs int) *streamReader {
	return &streamReader{c: c, maxFDs: maxFDs, oob: make([]byte, syscall.CmsgSpace(4*maxFDs)), buf: make([]byte, readAhead)}
}

// heldFDs counts the descriptors of reads not yet given out.
func (sr *streamReader) heldFDs() int {
	n := 0
	for _, b := range sr.batches {
		n += len(b.fds)
	}
	return n
}

// offset is the stream offset of the next byte read returns.
func (sr *streamReader) offset() uint64 { return sr.pos }

// recv does one recvmsg into p, recording the descriptors it brought.
func (sr *streamReader) recv(p []byte, at uint64) (int, error) {
	n, oobn, flags, _, err := sr.c.ReadMsgUnix(p, sr.oob)
	var b fdBatch
	if oobn > 0 {
		if cms, perr := syscall.ParseSocketControlMessage(sr.oob[:oobn]); perr == nil {
			for _, cm := range cms {
				if f, ferr := syscall.ParseUnixRights(&cm); ferr == nil {
					b.fds = append(b.fds, f...)
				}
			}
		}
	}
	b.trunc = flags&syscall.MSG_CTRUNC != 0
	// A read brings the descriptors of at most one sendmsg (maxFDs at most:
	// the oob buffer holds no more), and the reads not yet given out are
	// those of the message being read and of one read past its end: at most
	// 2*maxFDs descriptors for a client that keeps to the limit. A client
	// sending a message in many sendmsgs, each with descriptors, would make
	// the server hold them all until the message ends — enough to use up
	// the process's descriptors. Past the bound they are closed at once and
	// the read is marked truncated, so that its message is refused for
	// carrying too many.
	// The reads past it join one range (over) rather than a batch each: a
	// message sent a byte a sendmsg, each with a descriptor, would
	// otherwise hold a batch for every byte.
	if len(b.fds) > 0 && sr.heldFDs()+len(b.fds) > 2*sr.maxFDs || b.trunc && len(sr.batches) >= 2*sr.maxFDs {
		closeFDs(b.fds)
		if !sr.over.trunc {
			sr.over = fdBatch{start: at, trunc: true}
		}
		sr.over.end = at + uint64(max(n, 1))
		b = fdBatch{}
	}
	if len(b.fds) > 0 || b.trunc {
		b.start, b.end = at, at+uint64(max(n, 1))
		sr.batches = append(sr.batches, b)
	}
	if err == nil && n == 0 {
		err = io.EOF
	}
	return n, err
}

// read fills p from the stream. A p at least as large as the buffer is
// read into directly once the buffered bytes are used.
func (sr *streamReader) read(p []byte) error {
	got := 0
	for got < len(p) {
		if sr.r < sr.w {
			k := copy(p[got:], sr.buf[sr.r:sr.w])
			sr.r += k
			sr.pos += uint64(k)
			got += k
			continue
		}
		sr.r, sr.w = 0, 0
		if len(p)-got >= len(sr.buf) {
			n, err := sr.recv(p[got:], sr.pos)
			got += n
			sr.pos += uint64(n)
			if err != nil {
				return readErr(err, got)
			}
			continue
		}
		n, err := sr.recv(sr.buf, sr.pos)
		sr.w = n
		if err != nil && n == 0 {
			return readErr(err, got)
		}
	}
	return nil
}

// readErr is the error of a read that stopped after got bytes: an EOF
// part way is unexpected.
func readErr(err error, got int) error {
	if got > 0 && errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// take returns the descriptors of the message that occupied stream offsets
// [start, end), and whether a control message was truncated in its reads;
// descriptors of reads that fall before it and belong to no message are
// closed.
func (sr *streamReader) take(start, end uint64) (fds []int, trunc bool) {
	keep := sr.batches[:0]
	for _, b := range sr.batches {
		switch last := b.end - 1; {
		case last < start: // an earlier message's, left over (cannot happen: closed)
			closeFDs(b.fds)
		case last >= end: // a later message's
			keep = append(keep, b)
		default:
			fds = append(fds, b.fds...)
			trunc = trunc || b.trunc
		}
	}
	sr.batches = keep
	if o := &sr.over; o.trunc && o.start < end && o.end > start {
		// Reads whose descriptors were closed on arrival reach the
		// message: it is refused, as for a truncated control message.
		trunc = true
		if o.end <= end {
			*o = fdBatch{} // every message it reaches is given out
		}
	}
	return fds, trunc
}

// close closes every descriptor not given out.
func (sr *streamReader) close() {
	for _, b := range sr.batches {
		closeFDs(b.fds)
	}
	sr.batches = nil
}
