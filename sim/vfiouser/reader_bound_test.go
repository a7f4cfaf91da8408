package vfiouser

import (
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unixPair returns the two ends of a connected stream socket pair.
func unixPair(t *testing.T) (a, b *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

// TestReaderBoundsBatchesPastTheDescriptorBound: reads whose descriptors
// are closed on arrival (past twice the per-message limit) join one range
// rather than a batch each — a message sent a byte a sendmsg, a descriptor
// each, held a batch for every byte — and every message that range reaches
// is refused as truncated; a message after it is not.
func TestReaderBoundsBatchesPastTheDescriptorBound(t *testing.T) {
	const maxFDs, bytes = 2, 2000
	srv, cli := unixPair(t)
	sr := newStreamReader(srv, maxFDs)
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer syscall.Close(fd)
	oob := syscall.UnixRights(fd)
	done := make(chan error, 1)
	go func() {
		for range bytes {
			if _, _, err := cli.WriteMsgUnix([]byte{1}, oob, nil); err != nil {
				done <- err
				return
			}
		}
		_, err := cli.Write([]byte("next"))
		done <- err
	}()
	got := make([]byte, 1)
	for i := range bytes {
		require.NoError(t, sr.read(got), "byte %d", i)
		require.LessOrEqual(t, len(sr.batches), 2*maxFDs, "batches held after byte %d", i)
	}
	require.NoError(t, <-done)
	fds, trunc := sr.take(0, bytes)
	closeFDs(fds)
	assert.Len(t, fds, 2*maxFDs, "the descriptors held within the bound are the message's")
	assert.True(t, trunc, "the message whose descriptors were closed is refused")
	next := make([]byte, 4)
	require.NoError(t, sr.read(next))
	fds, trunc = sr.take(bytes, bytes+4)
	assert.Empty(t, fds)
	assert.False(t, trunc, "a message past the range is not")
}
