package fabric

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// smallSnapshot is a saved two-device system with a fault scheduled (and a
// capture on, when capturing).
func smallSnapshot(t testing.TB, capturing bool) []byte {
	t.Helper()
	s, err := New(Config{Generation: hwarch.Cayman, Devices: 2, Kind: KindRing})
	require.NoError(t, err)
	if capturing {
		s.SetCapture(discardPackets{}, 0)
	}
	require.NoError(t, s.ScheduleFault(Fault{At: sim.Time(sim.Millisecond), Kind: LinkDown, Link: 0}))
	s.Advance(10 * sim.Microsecond)
	var b bytes.Buffer
	require.NoError(t, s.Save(&b))
	return b.Bytes()
}

// saveAndLoad saves s and loads what it wrote: the loaded system, and s's
// Snapshot taken after the save.
func saveAndLoad(t *testing.T, s *System) (*System, *Snapshot) {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, s.Save(&b))
	snap := s.Snapshot()
	restored, err := Load(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	return restored, snap
}

// TestSnapshotRoundTrip: a restored system has the saved clock and faults,
// and continues as the original (the fault fires in both; the devices
// finish booting in both).
func TestSnapshotRoundTrip(t *testing.T) {
	file := smallSnapshot(t, false)
	a, err := Load(bytes.NewReader(file))
	require.NoError(t, err)
	b, err := Load(bytes.NewReader(file))
	require.NoError(t, err)
	assert.Equal(t, sim.Time(10*sim.Microsecond), a.Now())
	a.Advance(2 * sim.Second)
	b.Advance(2 * sim.Second)
	assert.Equal(t, a.Stats(), b.Stats())
	assert.Equal(t, uint64(1), a.Stats().Faults)
	la, _ := a.Link(0)
	assert.True(t, la.Down)
	assert.Equal(t, a.Device(1).Phase(), sim.PhaseReady, "booted after the restore")
}

// decodedLength is the length a payload decompresses to (within
// fuzzLimit), or four times its length when it does not decompress.
func decodedLength(payload []byte) uint64 {
	zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(fuzzLimit))
	if err != nil {
		panic(err)
	}
	defer zr.Close()
	raw, err := zr.DecodeAll(payload, nil)
	if err != nil {
		return uint64(len(payload)) * 4
	}
	return uint64(len(raw))
}

// reseal wraps a payload in a valid header declaring size decoded bytes,
// so the fuzzer reaches the decompressor and the decoder behind the
// checksum.
func reseal(payload []byte, size uint64) []byte {
	layout, err := snapshotLayout()
	if err != nil {
		panic(err)
	}
	var hdr [snapshotHeader]byte
	copy(hdr[:8], snapshotMagic[:])
	binary.LittleEndian.PutUint32(hdr[8:], SnapshotVersion)
	binary.LittleEndian.PutUint64(hdr[16:], uint64(len(payload)))
	binary.LittleEndian.PutUint64(hdr[24:], size)
	binary.LittleEndian.PutUint64(hdr[32:], layout)
	sum := snapshotSum(hdr[:], payload)
	copy(hdr[sumOffset:], sum[:])
	return append(hdr[:], payload...)
}

// FuzzLoad: no bytes, sealed with a valid checksum or not, make Load
// panic; a refused file builds nothing.
func FuzzLoad(f *testing.F) {
	good := smallSnapshot(f, false)
	f.Add(good)
	f.Add(smallSnapshot(f, true))
	f.Add(good[snapshotHeader:])
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add(spanSnapshot(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, b := range [][]byte{data, reseal(data, decodedLength(data))} {
			s, err := LoadWith(bytes.NewReader(b), LoadOptions{MaxBytes: fuzzLimit})
			if err != nil && s != nil {
				t.Fatal("a refused snapshot built a system")
			}
		}
	})
}

// discardPackets is a PacketWriter that keeps nothing.
type discardPackets struct{}

func (discardPackets) WritePacket(uint64, capture.Header, []byte) error { return nil }

// fuzzLimit is the loader's limit in the fuzz targets: what a mutated file
// may make Load allocate for its decoded state.
const fuzzLimit = 64 << 20

// spanSnapshot is a saved two-device system whose links are booked ahead.
func spanSnapshot(t testing.TB) []byte {
	t.Helper()
	s, err := New(Config{Generation: hwarch.Cayman, Devices: 2, Kind: KindRing, Ready: true})
	require.NoError(t, err)
	s.Advance(10 * sim.Microsecond)
	now := uint64(s.Now())
	s.st.Links[0].book(now, now+1000, 500)
	s.st.Links[0].book(now, now+5000, 500)
	s.st.Links[1].book(now, now, 40)
	var b bytes.Buffer
	require.NoError(t, s.Save(&b))
	return b.Bytes()
}

// TestSnapshotKeepsSpans: a link's booked spans survive a save and a load
// (the restored system books around them as the original does), a
// snapshot does not share them with the live system, and a snapshot whose
// spans are out of order or overlap is refused.
func TestSnapshotKeepsSpans(t *testing.T) {
	file := spanSnapshot(t)
	a, err := Load(bytes.NewReader(file))
	require.NoError(t, err)
	la, err := a.Link(0)
	require.NoError(t, err)
	now := uint64(10 * sim.Microsecond)
	assert.Equal(t, []Span{{now + 1000, now + 1500}, {now + 5000, now + 5500}}, la.Spans)
	snap := a.Snapshot()
	a.st.Links[0].book(now, now+1500, 3500) // fills the gap in a, not in snap
	assert.Len(t, snap.Links[0].Spans, 2, "a snapshot's spans are its own")
	for _, bad := range [][]Span{
		{{now + 5000, now + 5500}, {now + 1000, now + 1500}},
		{{now + 1000, now + 1500}, {now + 1400, now + 2000}},
		{{now + 1000, now + 1000}},
	} {
		snap.Links[0].Spans = bad
		_, err := Restore(snap)
		assert.ErrorIs(t, err, ErrSnapshot, "%v", bad)
	}
}

// TestSnapshotCopiesSharedStateOnce: a system's snapshot copies its host
// memory and its pending events once, not once per device (each device's
// own part leaves them out: sim.Device.SnapshotInSystem). With 8 MiB in the
// host memory, a snapshot of 32 devices took 33 copies of it.
func TestSnapshotCopiesSharedStateOnce(t *testing.T) {
	s, err := New(Config{Generation: hwarch.Mariana, Devices: 32, Kind: KindSwitch, TimingOnly: true})
	require.NoError(t, err)
	const hostBytes = 8 << 20
	base, err := s.Host().Alloc(hostBytes, 4096)
	require.NoError(t, err)
	require.NoError(t, s.Host().Write(base, bytes.Repeat([]byte{0x5a}, hostBytes)))
	h, err := s.engine.Register("test.idle", simkernel.HandlerFunc(func(*simkernel.Engine, uint64) {}))
	require.NoError(t, err)
	for i := range 1 << 16 { // 2 MiB of pending events
		require.NoError(t, s.engine.Schedule(sim.Time(sim.Second)+sim.Time(i), h, 0))
	}
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	snap := s.Snapshot()
	runtime.ReadMemStats(&b)
	require.GreaterOrEqual(t, len(snap.Engine.Queue), 1<<16)
	got := b.TotalAlloc - a.TotalAlloc
	// The host pages and the events once (10 MiB), and each device's own
	// part (under 1 MiB on mariana); a second copy of the host memory passes
	// the bound.
	assert.Less(t, got, uint64(hostBytes+(2<<20)+32<<20), "a snapshot of 32 devices allocated %d bytes", got)
	assert.Greater(t, got, uint64(hostBytes), "the host memory is copied once")
}

// snapshotSum is the checksum of a header's fields and a payload.
func snapshotSum(hdr, payload []byte) [sha256.Size]byte {
	h := snapshotHash(hdr)
	h.Write(payload)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// TestSaveFileStreams: SaveFile writes the bytes Save writes, without
// holding the compressed payload: with 32 MiB of random host memory (a
// payload that does not compress), Save allocates the payload's buffer on
// top of the state's copy and SaveFile does not.
func TestSaveFileStreams(t *testing.T) {
	s, err := New(Config{Generation: hwarch.Cayman, Devices: 2, Kind: KindRing})
	require.NoError(t, err)
	const hostBytes = 32 << 20
	base, err := s.Host().Alloc(hostBytes, 4096)
	require.NoError(t, err)
	data := make([]byte, hostBytes)
	rng := sha256.Sum256(nil)
	for i := 0; i < len(data); i += len(rng) {
		rng = sha256.Sum256(rng[:])
		copy(data[i:], rng[:])
	}
	require.NoError(t, s.Host().Write(base, data))
	data = nil
	allocated := func(save func() error) uint64 {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		require.NoError(t, save())
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	var buf bytes.Buffer
	inMemory := allocated(func() error { return s.Save(&buf) })
	f, err := os.Create(filepath.Join(t.TempDir(), "s.snap"))
	require.NoError(t, err)
	defer f.Close()
	streamed := allocated(func() error { return s.SaveFile(f) })
	file, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	assert.True(t, bytes.Equal(buf.Bytes(), file), "SaveFile writes what Save writes")
	assert.Greater(t, buf.Len(), hostBytes, "the payload does not compress")
	assert.Less(t, streamed+hostBytes, inMemory, "Save %d bytes allocated, SaveFile %d", inMemory, streamed)
	_, err = Load(bytes.NewReader(file))
	require.NoError(t, err)
}

// TestSnapshotKeepsSourceTurns: in the contention-free model the turns a
// device's writes have booked on the links past its own
// (state.SourceBusy) survive a save and a load: the restored system
// times the next write over them as the original does, and the snapshot
// does not share the map with the live system.
func TestSnapshotKeepsSourceTurns(t *testing.T) {
	const size = 64 << 10
	orig := freeRailSystem(t)
	a, err := hwarch.FabricAddress(2, 0x100000)
	require.NoError(t, err)
	write := func(s *System, e int) (sim.Time, sim.Time) {
		in, lands, err := s.ports[1].Reserve(e, 0, a, size, s.Now(), s.Now())
		require.NoError(t, err)
		require.NoError(t, s.ports[1].Post(e, 0, a, size, nil, udma.Reduce{}, lands))
		return in, lands
	}
	write(orig, 0) // books device 1's turns on the links past its own towards device 2
	require.NotEmpty(t, orig.st.SourceBusy)
	restored, snap := saveAndLoad(t, orig)
	assert.Equal(t, orig.st.SourceBusy, restored.st.SourceBusy)
	in0, lands0 := write(orig, 1)
	in1, lands1 := write(restored, 1)
	assert.Equal(t, in0, in1, "the restored system's next write leaves when the original's does")
	assert.Equal(t, lands0, lands1)
	assert.NotEqual(t, snap.SourceBusy, orig.st.SourceBusy, "the snapshot's turns are its own")
}
