package vfiouser

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// settledFDs waits until the process's open descriptor count stops
// changing (the server has read what was sent) and returns it.
func settledFDs(t *testing.T) int {
	t.Helper()
	n := openFDs(t)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		m := openFDs(t)
		if m == n {
			return n
		}
		n = m
	}
	return n
}

// TestDescriptorsOfOneMessageAreBounded: a client may send one message's
// payload a byte at a time, each byte with as many descriptors as a message
// may carry. The server used to hold every one of them until the message
// was complete — 16 per byte, tens of thousands for a 4 KiB payload, until
// the process ran out of descriptors (for the other devices' servers of
// the process too). It now holds at most those of one message and of one
// read beyond it, closes the others as they arrive, and refuses the
// message (E2BIG) for carrying too many; the session goes on.
func TestDescriptorsOfOneMessageAreBounded(t *testing.T) {
	_, path := startServer(t, newTestDevice(t), Options{NoPacing: true})
	c := dial(t, path)
	c.handshake()
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer syscall.Close(fd)
	fds := make([]int, 16) // the server's MaxMsgFDs
	for i := range fds {
		fds[i] = fd
	}
	oob := syscall.UnixRights(fds...)
	const payload = 4096
	before := settledFDs(t)
	frame := Frame(&c.buf, Header{ID: 77, Command: CmdDeviceGetInfo}, make([]byte, payload))
	_, err = c.c.Write(frame[:HeaderSize])
	require.NoError(t, err)
	for i := range payload - 1 { // all but the last byte: the message is not complete
		_, _, err := c.c.WriteMsgUnix(frame[HeaderSize+i:HeaderSize+i+1], oob, nil)
		require.NoError(t, err, "byte %d", i)
	}
	held := settledFDs(t) - before
	require.LessOrEqual(t, held, 2*16, "descriptors the server holds for an incomplete message sent with %d", 16*(payload-1))
	_, err = c.c.Write(frame[len(frame)-1:])
	require.NoError(t, err)
	h, _, err := c.recv()
	require.NoError(t, err)
	require.Equal(t, uint16(77), h.ID)
	require.NotZero(t, h.Flags&FlagError, "the message is refused")
	require.Equal(t, uint32(syscall.E2BIG), h.Error)
	require.LessOrEqual(t, settledFDs(t)-before, 0, "every descriptor closed once the message is refused")
	p, err := c.regionRead(RegionConfig, 0, 4)
	require.NoError(t, err, "the session goes on")
	require.Len(t, p, 4)
}
