package vfiouser

import (
	"bytes"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeclaredPayloadIsNotAllocatedBeforeItArrives: a message header may
// declare a payload of up to MaxDataXferSize+4 KiB (64 MiB at most) and
// then send nothing. The payload buffer used to be allocated whole from
// the declared size; now it grows as the bytes arrive, so a client that
// declares 64 MiB and sends 100 bytes costs the server well under 1 MiB.
func TestDeclaredPayloadIsNotAllocatedBeforeItArrives(t *testing.T) {
	srvEnd, cliEnd := socketPair(t)
	defer srvEnd.Close()
	_, err := cliEnd.Write(bytes.Repeat([]byte{7}, 100))
	require.NoError(t, err)
	require.NoError(t, cliEnd.Close())
	ss := &session{free: make(chan []byte, 1)}
	sr := newStreamReader(srvEnd, 1)
	const declared = MaxOptionXfer + 4096
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p, err := ss.readPayload(sr, declared)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the stream ends inside the payload")
	require.Nil(t, p)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated for a %d-byte payload of which 100 bytes came", declared)
}

// TestGrownPayloadHoldsEveryByte: a payload larger than the first
// buffer, read as it arrives in buffers that double, comes out whole and
// in order, at exactly its declared length.
func TestGrownPayloadHoldsEveryByte(t *testing.T) {
	for _, n := range []int{smallPayload, smallPayload + 1, growPayload, growPayload + 1, 3*growPayload + 17, 1<<20 + 4096} {
		srvEnd, cliEnd := socketPair(t)
		want := make([]byte, n+5) // and the next message's first bytes
		for i := range want {
			want[i] = byte(i*7 + i>>8)
		}
		go func() { _, _ = cliEnd.Write(want); _ = cliEnd.Close() }()
		ss := &session{free: make(chan []byte, 1)}
		sr := newStreamReader(srvEnd, 1)
		p, err := ss.readPayload(sr, uint64(n))
		require.NoError(t, err, "payload of %d bytes", n)
		require.Equal(t, want[:n], p, "payload of %d bytes", n)
		rest := make([]byte, 5)
		require.NoError(t, sr.read(rest), "the bytes after a %d-byte payload", n)
		require.Equal(t, want[n:], rest)
		require.NoError(t, srvEnd.Close())
	}
}
