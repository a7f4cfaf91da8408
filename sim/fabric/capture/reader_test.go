package capture

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// onePacketFile is a pcap file a Writer wrote with one packet at atPS.
func onePacketFile(t testing.TB, atPS uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Options{})
	require.NoError(t, err)
	require.NoError(t, w.WritePacket(atPS, Header{Op: OpWrite, Src: 0, Dst: 1, Hops: 1, Length: 8}, pattern(8, 1)))
	return buf.Bytes()
}

// The fields of the first pcap record header of a file.
const (
	recSeconds = pcapFileHeader
	recCapLen  = pcapFileHeader + 8
	recOrigLen = pcapFileHeader + 12
)

// TestReadAllRefusesHugeSnapLength: a file whose header declares a snap
// length of 4 GiB and whose first record declares a 4 GiB packet is
// refused at the file header, wrapping ErrBadFrame: the packet's buffer,
// which the pcap reader allocates from the record's declared length
// before reading it, is never allocated.
func TestReadAllRefusesHugeSnapLength(t *testing.T) {
	file := onePacketFile(t, 0)
	binary.LittleEndian.PutUint32(file[16:], math.MaxUint32) // snap length
	binary.LittleEndian.PutUint32(file[recCapLen:], math.MaxUint32-16)
	binary.LittleEndian.PutUint32(file[recOrigLen:], math.MaxUint32-16)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	pkts, err := ReadAll(bytes.NewReader(file))
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrBadFrame)
	require.ErrorContains(t, err, "snap length 4294967295 exceeds 262144")
	require.Empty(t, pkts)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated reading a 4 GiB record header")
}

// TestReadAllRefusesTimestampsPastPicoseconds: a record's timestamp is
// read in nanoseconds and returned in picoseconds; one past 2^64 ps (the
// pcap format holds seconds up to 2^32-1, 4.3e18 ns) used to wrap round
// silently to an early time. It is refused, naming the packet; the latest
// time a Writer stamps still reads back.
func TestReadAllRefusesTimestampsPastPicoseconds(t *testing.T) {
	file := onePacketFile(t, 0)
	binary.LittleEndian.PutUint32(file[recSeconds:], math.MaxUint32)
	_, err := ReadAll(bytes.NewReader(file))
	require.ErrorIs(t, err, ErrBadFrame)
	require.ErrorContains(t, err, "packet 0: timestamp 4294967295000000000 ns is past the latest time in picoseconds a uint64 holds")

	latest := uint64(math.MaxUint64) / 1000 * 1000
	pkts, err := ReadAll(bytes.NewReader(onePacketFile(t, latest)))
	require.NoError(t, err)
	require.Len(t, pkts, 1)
	require.Equal(t, latest, pkts[0].AtPS)
}

// TestReadAllRefusesOriginalLengthOfAnotherFrame: a record's original
// length is the frame's whole length (FrameOverhead + Header.Length); one
// that says otherwise — beyond 2^31-1 among them — is refused instead of
// being returned as Packet.OrigLen.
func TestReadAllRefusesOriginalLengthOfAnotherFrame(t *testing.T) {
	for _, orig := range []uint32{FrameOverhead + 9, math.MaxUint32} {
		file := onePacketFile(t, 0)
		binary.LittleEndian.PutUint32(file[recOrigLen:], orig)
		_, err := ReadAll(bytes.NewReader(file))
		require.ErrorIs(t, err, ErrBadFrame, "original length %d", orig)
		require.ErrorContains(t, err, "original length")
	}
}

// FuzzReadAll: no bytes make ReadAll panic or allocate for a packet past
// the snap length bound, and every packet it returns holds a time, frame
// and original length a Writer can have written.
func FuzzReadAll(f *testing.F) {
	f.Add(onePacketFile(f, 0))
	f.Add(onePacketFile(f, 123_456_789_000))
	f.Add(onePacketFile(f, 0)[:pcapFileHeader])
	f.Add([]byte{})
	huge := onePacketFile(f, 0) // a 4 GiB snap length and packet
	binary.LittleEndian.PutUint32(huge[16:], math.MaxUint32)
	binary.LittleEndian.PutUint32(huge[recCapLen:], math.MaxUint32-16)
	binary.LittleEndian.PutUint32(huge[recOrigLen:], math.MaxUint32-16)
	f.Add(huge)
	late := onePacketFile(f, 0) // a timestamp past 2^64 ps
	binary.LittleEndian.PutUint32(late[recSeconds:], math.MaxUint32)
	f.Add(late)
	f.Fuzz(func(t *testing.T, data []byte) {
		pkts, _ := ReadAll(bytes.NewReader(data))
		for i, p := range pkts {
			require.Zero(t, p.AtPS%1000, "packet %d time", i)
			require.LessOrEqual(t, FrameOverhead+len(p.Payload), MaxSnapLen, "packet %d", i)
			require.Equal(t, int(min(FrameOverhead+wireLength(&p.Header), math.MaxInt32)), p.OrigLen, "packet %d original length", i)
		}
	})
}
