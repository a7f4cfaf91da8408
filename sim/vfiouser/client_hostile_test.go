package vfiouser

import (
	"errors"
	"io"
	"math"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// readMsg reads one message from the far end of a socket pair.
func readMsg(r io.Reader) (Header, error) {
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return Header{}, err
	}
	h, err := ParseHeader(hb[:])
	if err != nil {
		return h, err
	}
	_, err = io.CopyN(io.Discard, r, int64(h.Size-HeaderSize))
	return h, err
}

// TestClientAnswersMalformedDMARequests: the client read a DMA request's
// address and count without checking the payload held them, so a server's
// DMA_READ of 4 bytes panicked it, and a DMA_WRITE whose data disagreed
// with its count was copied short. Both are now answered EINVAL, and the
// call goes on to its reply.
func TestClientAnswersMalformedDMARequests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cmd     uint16
		payload []byte
	}{
		{"DMA_READ of 4 bytes", CmdDMARead, le32(1)},
		{"DMA_READ with data", CmdDMARead, append(le64(nil, 0x1000, 4), 1, 2, 3, 4)},
		{"DMA_WRITE shorter than its count", CmdDMAWrite, append(le64(nil, 0x1000, 8), 1, 2, 3, 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srvEnd, cliEnd := socketPair(t)
			defer srvEnd.Close()
			c := NewClient(cliEnd)
			defer c.Close()
			c.ServeMemory(0x1000, make([]byte, 4096))
			served := make(chan error, 1)
			go func() {
				h, err := readMsg(srvEnd)
				if err != nil {
					served <- err
					return
				}
				var buf []byte
				if _, err := srvEnd.Write(Frame(&buf, Header{ID: 9, Command: tc.cmd, Flags: FlagCommand}, tc.payload)); err != nil {
					served <- err
					return
				}
				dh, err := readMsg(srvEnd)
				if err != nil {
					served <- err
					return
				}
				if dh.ID != 9 || dh.Flags&FlagError == 0 || dh.Error != uint32(syscall.EINVAL) {
					served <- errors.New("the DMA request was not answered EINVAL")
					return
				}
				_, err = srvEnd.Write(Frame(&buf, Header{ID: h.ID, Command: h.Command, Flags: FlagReply}, nil))
				served <- err
			}()
			_, _, err := c.Call(CmdDeviceReset, nil)
			require.NoError(t, err)
			require.NoError(t, <-served)
		})
	}
}

// TestClientRefusesHugeMessage: a message header declaring a payload
// larger than any server sends is refused with ErrLimit before any of it
// is allocated or read (the client used to allocate the declared size,
// up to 4 GiB, first).
func TestClientRefusesHugeMessage(t *testing.T) {
	srvEnd, cliEnd := socketPair(t)
	defer srvEnd.Close()
	c := NewClient(cliEnd)
	defer c.Close()
	go func() {
		h, err := readMsg(srvEnd)
		if err != nil {
			return // the call fails on its own
		}
		var b [HeaderSize]byte
		Header{ID: h.ID, Command: h.Command, Flags: FlagReply, Size: math.MaxUint32}.Marshal(b[:])
		_, _ = srvEnd.Write(b[:])
	}()
	_, _, err := c.Call(CmdDeviceReset, nil)
	require.ErrorIs(t, err, ErrLimit)
	require.ErrorContains(t, err, "message of 4294967295 bytes exceeds")
}
