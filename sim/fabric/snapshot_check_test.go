package fabric

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/internal/snapenc"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// baseSnapshot is the Snapshot value of a small system with a fault
// scheduled, ten microseconds in.
func baseSnapshot(t testing.TB) *Snapshot {
	t.Helper()
	return genSnapshot(t, hwarch.Cayman)
}

// genSnapshot is baseSnapshot for a generation.
func genSnapshot(t testing.TB, g hwarch.Generation) *Snapshot {
	t.Helper()
	s, err := New(Config{Generation: g, Devices: 2, Kind: KindRing})
	require.NoError(t, err)
	require.NoError(t, s.ScheduleFault(Fault{At: sim.Time(sim.Millisecond), Kind: LinkDown, Link: 0}))
	s.Advance(10 * sim.Microsecond)
	return s.Snapshot()
}

// sealEncoder compresses what seal seals (one encoder for every call:
// making one per call would dominate a fuzz run).
var sealEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(snapshotWindow))
})

// seal compresses an encoding and wraps it in a valid header declaring
// size decoded bytes.
func seal(t testing.TB, raw []byte, size uint64) []byte {
	t.Helper()
	zw, err := sealEncoder()
	require.NoError(t, err)
	return reseal(zw.EncodeAll(raw, nil), size)
}

func encodeSnapshot(t testing.TB, snap *Snapshot) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, snapenc.Encode(&b, snap))
	return b.Bytes()
}

// TestRestoreRefusesImpossibleState (issue 13, items 7 and 12): a state
// that cannot exist is refused, naming the field; nothing is built.
func TestRestoreRefusesImpossibleState(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Snapshot)
		want   string
		is     error
	}{
		{"fault kind 99 on link -1", func(s *Snapshot) { s.Faults = append(s.Faults, Fault{Kind: 99, Link: -1}) }, "Faults[1]: Kind 99", nil},
		{"fault on link -1", func(s *Snapshot) { s.Faults[0].Link = -1 }, "Faults[0]: link-down on link -1", nil},
		{"fault past the latest time", func(s *Snapshot) { s.Faults[0].At = math.MaxUint64 }, "Faults[0].At", units.ErrRange},
		{"DMA HostBandwidth 0", func(s *Snapshot) { s.DMA.HostBandwidth = 0 }, "DMA timing: HostBandwidth 0: must be positive", units.ErrRange},
		{"DMA FixedCost 2^48", func(s *Snapshot) { s.DMA.FixedCost = 1 << 48 }, "DMA timing: FixedCost 281474976710656ps: too long", units.ErrRange},
		{"engine now 2^64-1", func(s *Snapshot) { s.Engine.Now = math.MaxUint64 }, "engine: Now 18446744073709551615ps: too long", units.ErrRange},
		{"event past the latest time", func(s *Snapshot) { s.Engine.Queue[0].At = sim.Time(units.MaxTimePS + 1) }, "engine: event 0", units.ErrRange},
		{"link latency past the latest time", func(s *Snapshot) { s.Params.Ring.Latency = math.MaxUint64 }, "Params: Ring.Latency", units.ErrRange},
		{"network model 7", func(s *Snapshot) { s.Params.Model = 7 }, "Params: Model 7", nil},
		{"link busy past the latest time", func(s *Snapshot) { s.Links[1].Spans = []Span{{1, math.MaxUint64}} }, "Links[1].Spans[0].End", units.ErrRange},
		{"link spans overlapping", func(s *Snapshot) { s.Links[1].Spans = []Span{{1, 10}, {5, 20}} }, "Links[1].Spans: busy span 1", nil},
		{"arrival run of no chunk", func(s *Snapshot) { s.Links[1].Queue = []Arrivals{{At: 1, End: 2}} }, "Links[1].Queue: arrival run 0 has no chunk", nil},
		{"arrivals past the latest time", func(s *Snapshot) {
			s.Links[0].Queue = []Arrivals{{At: 1, End: 2, N: 1}, {At: units.MaxTimePS, Every: 1, End: 3, N: 2}}
		}, "Links[0].Queue[1]'s last chunk's arrival", units.ErrRange},
		{"crossing past the latest time", func(s *Snapshot) {
			s.Links[1].Queue = []Arrivals{{At: 1, End: units.MaxTimePS - 1, Step: 2, N: 2}}
		}, "Links[1].Queue[0]'s last chunk's crossing", units.ErrRange},
		{"too many arrival runs", func(s *Snapshot) {
			s.Links[1].Queue = slices.Repeat([]Arrivals{{At: 1, End: 2, N: 1}}, MaxArrivals+1)
		}, "Links[1].Queue: 65537 arrival runs", nil},
		{"no devices", func(s *Snapshot) { s.Devices, s.Device = 0, nil }, "Devices 0", nil},
		{"path order time", func(s *Snapshot) { s.Last[3] = units.MaxTimePS + 1 }, "Last[3]", units.ErrRange},
		{"source turns in the aware model", func(s *Snapshot) { s.SourceBusy = map[uint64]uint64{1: 5} }, "SourceBusy: 1 devices' turns on links outside the contention-free model", nil},
		{"source turns of no device", func(s *Snapshot) {
			s.Params.Model, s.SourceBusy = Free, map[uint64]uint64{uint64(s.Devices)<<32 | 1: 5}
		}, "SourceBusy: key", nil},
		{"source turns on no link", func(s *Snapshot) {
			s.Params.Model, s.SourceBusy = Free, map[uint64]uint64{uint64(len(s.Links)): 5}
		}, "SourceBusy: key", nil},
		{"source turn past the latest time", func(s *Snapshot) {
			s.Params.Model, s.SourceBusy = Free, map[uint64]uint64{1: units.MaxTimePS + 1}
		}, "SourceBusy[0x1]", units.ErrRange},
		{"a free slot listed twice", func(s *Snapshot) {
			s.InFlight = []Delivery{{}, {}}
			s.Free = []int{0, 0}
		}, "Free[1]: slot 0", nil},
		{"a free slot not listed", func(s *Snapshot) { s.InFlight, s.Free = []Delivery{{}}, nil }, "Free: 0 free slots listed, 1 slots are free", nil},
		{"a write in flight off the address space", func(s *Snapshot) {
			s.InFlight = []Delivery{{Used: true, Src: 0, Dst: 1, Addr: sim.AddressLimit - 2, Len: 4}}
		}, "InFlight[0]: 4 bytes at", nil},
		{"a write in flight with a reduce 9", func(s *Snapshot) {
			s.InFlight = []Delivery{{Used: true, Src: 0, Dst: 1, Len: 4, Reduce: udma.Reduce{Op: 9}}}
		}, "InFlight[0]: Reduce", nil},
		{"a reservation held twice", func(s *Snapshot) {
			r := PortReservation{Device: 1, Index: 3, Reservation: Reservation{Valid: true, Dst: 0}}
			s.Reservations = []PortReservation{r, r}
		}, "Reservations[1]: device 1 slot 3 is reserved twice", nil},
		{"DMA engine state 7", func(s *Snapshot) { dmaEngine(s, 1, 2).State = 7 }, "device 1: sim device", nil},
		{"DMA engine busy past the latest time", func(s *Snapshot) { dmaEngine(s, 1, 2).BusyUntil = math.MaxUint64 }, "engine 2: BusyUntil", units.ErrRange},
		{"DMA queue status bits", func(s *Snapshot) { dmaEngine(s, 0, 0).Queues[5].Status = 1 << 30 }, "engine 0: queue 5: Status", nil},
		{"DMA engine with an epoch and a state", func(s *Snapshot) { dmaEngine(s, 0, 3); s.Device[0].DMA.Engines[3].Epoch = 1 },
			"device 0: dma: restore: engine 3: Epoch 1 given with a whole state", dma.ErrInvalidState},
		{"DMA shared host link", func(s *Snapshot) { s.Device[0].DMA.HostFree = units.MaxTimePS + 1 }, "HostFree", units.ErrRange},
		{"TPB engine end", func(s *Snapshot) { s.Device[0].Cores[1].Engines[2].End = math.MaxUint64 }, "NC 1: tpb: invalid core state: engine 2: End", units.ErrRange},
		{"reset until", func(s *Snapshot) {
			s.Device[0].State.Reset = sim.ResetState{Active: true, Until: math.MaxUint64}
		}, "Reset.Until", units.ErrRange},
		{"details of no reset", func(s *Snapshot) { s.Device[0].State.Reset.Acked = true }, "Reset: ", nil},
		{"sync event 2", func(s *Snapshot) { s.Device[1].State.NCSync[0].Events[7] = 2 }, "NCSync 0: event 7 is 2", nil},
		{"phase 9", func(s *Snapshot) { s.Device[1].State.Phase = 9 }, "Phase 9", nil},
		{"a message outside the parity mode", func(s *Snapshot) { s.Messages = map[uint64]Message{1: {Dst: 1}} }, "Messages: 1 messages in progress outside the parity mode", nil},
		{"a message to device 9", func(s *Snapshot) {
			s.Params, s.DMA = s.Params.WithIdealEndpoints(), dma.Timing{Ideal: true}
			s.Messages = map[uint64]Message{1<<32 | 3: {Dst: 9}}
		}, "Messages[0x100000003]: destination device 9", nil},
		{"a message of queue slot 2^20", func(s *Snapshot) {
			s.Params, s.DMA = s.Params.WithIdealEndpoints(), dma.Timing{Ideal: true}
			s.Messages = map[uint64]Message{1 << 20: {Dst: 1}}
		}, "queue slot 1048576: out of range", nil},
		{"a message injected past the latest time", func(s *Snapshot) {
			s.Params, s.DMA = s.Params.WithIdealEndpoints(), dma.Timing{Ideal: true}
			s.Messages = map[uint64]Message{3: {Dst: 1, Injected: math.MaxUint64}}
		}, "Messages[0x3].Injected", units.ErrRange},
		{"capture time", func(s *Snapshot) { s.Capture = &CaptureState{From: math.MaxUint64} }, "Capture.From", units.ErrRange},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap := baseSnapshot(t)
			c.mutate(snap)
			s, err := Restore(snap)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, ErrSnapshot)
			assert.Contains(t, err.Error(), c.want)
			if c.is != nil {
				assert.ErrorIs(t, err, c.is)
			}
		})
	}
	// The unchanged snapshot restores.
	_, err := Restore(baseSnapshot(t))
	require.NoError(t, err)
	_ = tpb.NumEngines
}

// mutateEncoding finds the only occurrence of old in raw and replaces it.
func mutateEncoding(t testing.TB, raw, old, new []byte) []byte {
	t.Helper()
	require.Equal(t, 1, bytes.Count(raw, old), "marker %x", old)
	return bytes.Replace(raw, old, new, 1)
}

// TestLoadRefusesHugeCounts (issue 13, item 11): a crafted file with a
// valid checksum whose map claims 2^27 entries — what made gob allocate
// 4.85 GB for the map[uint64]uint64 of Host.Blocks — is refused before
// anything of that size is allocated, naming the field. (The map here is
// the fabric's LastMap, of the same type: the host allocator's state is
// another engineer's and changes shape.)
func TestLoadRefusesHugeCounts(t *testing.T) {
	snap := baseSnapshot(t)
	const marker = 0x0123_4567_89AB_CDEF
	snap.LastMap = map[uint64]uint64{marker: marker}
	raw := encodeSnapshot(t, snap)
	key := binary.AppendUvarint(nil, marker)
	// The map's count (1 entry, encoded 2) precedes its first key.
	huge := mutateEncoding(t, raw, append([]byte{2}, key...), append(binary.AppendUvarint(nil, 1<<27+1), key...))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := Load(bytes.NewReader(seal(t, huge, uint64(len(huge)))))
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	assert.Nil(t, s)
	assert.ErrorIs(t, err, ErrSnapshot)
	assert.Contains(t, err.Error(), "LastMap: 134217728 entries, but only")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "bytes allocated to refuse the file")
}

// TestLoadRefusesEngineCountBeforeExpanding: a device's DMA engines kept
// by their epoch take a few bytes each in the file and a whole engine's
// state once expanded, so a count other than the device's is refused
// before the expansion: 200,000 engines (434 KB of file) took 466 MB to
// refuse.
func TestLoadRefusesEngineCountBeforeExpanding(t *testing.T) {
	snap := baseSnapshot(t)
	engines := make([]dma.CompactEngine, 200_000)
	for i := range engines {
		engines[i].Epoch = 1
	}
	snap.Device[0].DMA.Engines = engines
	raw := encodeSnapshot(t, snap)
	s, used, err := loadMeasured(t, seal(t, raw, uint64(len(raw))), 0)
	require.Error(t, err)
	assert.Nil(t, s)
	assert.ErrorIs(t, err, ErrSnapshot)
	assert.ErrorIs(t, err, dma.ErrInvalidState)
	assert.Contains(t, err.Error(), "device 0: dma: restore: 200000 engines, the device has 132")
	assert.Less(t, used, uint64(64<<20), "bytes allocated to refuse the file")
}

// TestLoadRefusesBombs (issue 13, item 11): a small payload that
// decompresses to far more is refused by the length its header declares,
// before it is decompressed, or — when the header lies — where the declared
// length ends: by the decoder, which reads no further, or after the value
// if the stream goes on; the memory Load takes stays within its limit.
func TestLoadRefusesBombs(t *testing.T) {
	snap := baseSnapshot(t)
	small := encodeSnapshot(t, snap)
	snap.InFlight = []Delivery{{Used: true, Src: 0, Dst: 1, Len: 64 << 20, Data: make([]byte, 64<<20)}}
	snap.Free = nil
	raw := encodeSnapshot(t, snap)
	snap = nil
	const limit = 16 << 20
	for _, c := range []struct {
		name     string
		raw      []byte
		declared uint64
		want     string
		is       error
	}{
		{"declared", raw, uint64(len(raw)), fmt.Sprintf("the header declares %d bytes decoded, over the limit of 16777216", len(raw)), ErrSnapshotLimit},
		{"understated", raw, 1 << 20, "InFlight[0].Data: 67108864 elements, but only", nil},
		{"going on past the value", append(small, make([]byte, 64<<20)...), uint64(len(small)), fmt.Sprintf("the payload decompresses to more than the %d bytes its header declares", len(small)), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := seal(t, c.raw, c.declared)
			require.Less(t, len(file), 256<<10, "a bomb: a small file")
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			s, err := LoadWith(bytes.NewReader(file), LoadOptions{MaxBytes: limit})
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, ErrSnapshot)
			assert.Contains(t, err.Error(), c.want)
			if c.is != nil {
				assert.ErrorIs(t, err, c.is)
			}
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(LoadBuffers+limit/4), "bytes allocated to refuse the file")
		})
	}
	// Under a limit that holds it, the same file loads.
	s, err := LoadWith(bytes.NewReader(seal(t, raw, uint64(len(raw)))), LoadOptions{MaxBytes: 256 << 20})
	require.NoError(t, err)
	assert.NotNil(t, s)
}

// TestLoadTakesAtMostItsLimit: loading holds no whole copy of the file —
// not the compressed payload, nor the decompressed encoding, nor the
// decoded pages a second time in the restored system — so what Load
// allocates, to refuse a file or to restore one, stays within its limit
// and LoadBuffers. The files are hostile ones at a 16 MiB scale: a few KiB
// of zstd (of the whole 8 MiB window) that decompress to the whole
// declared length of zeros, a header declaring a payload of zeros (a
// sparse file), and the same truncated, extended and corrupted; then a
// system whose memory pages take most of the limit restores exactly, and
// under a limit short of what it takes is refused.
func TestLoadTakesAtMostItsLimit(t *testing.T) {
	const limit = 16 << 20
	zeros := make([]byte, limit)
	bomb := seal(t, zeros, limit)
	require.Less(t, len(bomb), 8<<10, "a few KiB of file")
	sparse := reseal(zeros, limit)
	binary.LittleEndian.PutUint64(sparse[24:], limit)
	sparse[sumOffset] ^= 1 // the checksum of another file
	corrupted := append([]byte(nil), bomb...)
	corrupted[len(corrupted)-8] ^= 0x40
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"zeros to the declared length", bomb, "bytes left over after the value"},
		{"a sparse payload", sparse, "checksum mismatch"},
		{"a sparse payload sealed", reseal(zeros, limit), "decompressing: "},
		{"truncated", bomb[:len(bomb)-100], fmt.Sprintf("payload of %d bytes, the header says %d (truncated or trailing data)", len(bomb)-100-snapshotHeader, len(bomb)-snapshotHeader)},
		{"a byte of trailing data", append(append([]byte(nil), bomb...), 0), fmt.Sprintf("payload of %d bytes, the header says %d (truncated", len(bomb)+1-snapshotHeader, len(bomb)-snapshotHeader)},
		{"a corrupted byte", corrupted, "checksum mismatch (the file is corrupted)"},
		{"a sparse payload truncated", sparse[:limit/2], fmt.Sprintf("payload of %d bytes, the header says %d", limit/2-snapshotHeader, limit)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, used, err := loadMeasured(t, c.file, limit)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, ErrSnapshot)
			assert.Contains(t, err.Error(), c.want)
			assert.Less(t, used, uint64(LoadBuffers), "bytes allocated to refuse the file")
		})
	}

	// A system whose pages take 24 MiB of a 32 MiB limit: the payload, the
	// decompressed encoding and the restored pages would each take as much
	// again.
	const pagesLimit = 32 << 20
	sys, err := New(Config{Generation: hwarch.Cayman, Devices: 1, Ready: true})
	require.NoError(t, err)
	data := make([]byte, 24<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	require.NoError(t, sys.Device(0).Land(0x1000_0000, data, udma.Reduce{}))
	var file bytes.Buffer
	require.NoError(t, sys.Save(&file))
	s, used, err := loadMeasured(t, file.Bytes(), pagesLimit)
	require.NoError(t, err)
	assert.LessOrEqual(t, used, uint64(pagesLimit+LoadBuffers), "bytes allocated to restore the system")
	assert.Equal(t, sys.Snapshot().Device[0].HBM, s.Snapshot().Device[0].HBM, "the restored pages")
	assert.Equal(t, sys.Now(), s.Now())
	var again bytes.Buffer
	require.NoError(t, s.Save(&again))
	assert.Equal(t, file.Bytes(), again.Bytes(), "the restored system saves the same file")

	// A limit of the decoded length: the decoded state and the system
	// built from it take more.
	decoded := int64(binary.LittleEndian.Uint64(file.Bytes()[24:]))
	_, used, err = loadMeasured(t, file.Bytes(), decoded)
	assert.ErrorIs(t, err, ErrSnapshotLimit)
	assert.Less(t, used, uint64(decoded+LoadBuffers), "bytes allocated to refuse the file")
}

// loadMeasured loads a file within limit and returns what Load allocated.
func loadMeasured(t *testing.T, file []byte, limit int64) (*System, uint64, error) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := LoadWith(bytes.NewReader(file), LoadOptions{MaxBytes: limit})
	runtime.ReadMemStats(&after)
	return s, after.TotalAlloc - before.TotalAlloc, err
}

// TestLoadRefusesByName: a version 1 (gob) file, a file of another layout,
// a system too big for the limit, and a payload with trailing decoded bytes
// are each refused, saying so.
func TestLoadRefusesByName(t *testing.T) {
	good := smallSnapshot(t, false)
	v1 := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(v1[8:], 1)
	otherLayout := append([]byte(nil), good...)
	otherLayout[32] ^= 1
	raw := encodeSnapshot(t, baseSnapshot(t))
	trailing := seal(t, append(append([]byte(nil), raw...), 0), uint64(len(raw)))
	short := seal(t, raw, uint64(len(raw))+1)
	for _, c := range []struct {
		name string
		file []byte
		o    LoadOptions
		want string
		is   error
	}{
		{"version 1", v1, LoadOptions{}, "version 1 (gob-encoded", nil},
		{"version 2", func() []byte { b := append([]byte(nil), good...); b[8] = 2; return b }(), LoadOptions{}, "version 2 (whose host memory state kept its buffers in a map) is no longer read", nil},
		{"version 3", func() []byte { b := append([]byte(nil), good...); b[8] = 3; return b }(), LoadOptions{}, "version 3 (links with one free time", nil},
		{"version 4", func() []byte { b := append([]byte(nil), good...); b[8] = 4; return b }(), LoadOptions{}, "version 4 (before the device id", nil},
		{"version 5", func() []byte { b := append([]byte(nil), good...); b[8] = 5; return b }(), LoadOptions{}, "version 5 (before the endpoint mode", nil},
		{"version 6", func() []byte { b := append([]byte(nil), good...); b[8] = 6; return b }(), LoadOptions{}, "version 6 (before the fabric parameters kept the Trn3 Gen1 inter-rack links", nil},
		{"version 7", func() []byte { b := append([]byte(nil), good...); b[8] = 7; return b }(), LoadOptions{}, "version 7 (before the nodes of a system and their EFA scale-out network", nil},
		{"version 8", func() []byte { b := append([]byte(nil), good...); b[8] = 8; return b }(), LoadOptions{}, "version 8 (before the fabric parameters kept the Trn3 Gen2 second-level links", nil},
		{"version 9", func() []byte { b := append([]byte(nil), good...); b[8] = 9; return b }(), LoadOptions{}, "version 9 (before the DMA engines as their last reset left them were kept by their epoch alone", nil},
		{"version 10", func() []byte { b := append([]byte(nil), good...); b[8] = 10; return b }(), LoadOptions{}, "version 10 (before the links kept when their chunks arrived", nil},
		{"version 11", func() []byte { b := append([]byte(nil), good...); b[8] = 11; return b }(), LoadOptions{}, "version 11 (before the links counted the folds", nil},
		{"version 12", func() []byte { b := append([]byte(nil), good...); b[8] = 12; return b }(), LoadOptions{}, "version 12 (before the contention-free model kept each device's turns", nil},
		{"version 13", func() []byte { b := append([]byte(nil), good...); b[8] = 13; return b }(), LoadOptions{}, "version 13 (before the EFA parameters kept how a leaf chooses a write's spine", nil},
		{"version 14", func() []byte { b := append([]byte(nil), good...); b[8] = 14; return b }(), LoadOptions{}, "version 14 (before the DMA engines kept the descriptors their queues had fetched ahead", nil},
		{"version 16", func() []byte { b := append([]byte(nil), good...); b[8] = 16; return b }(), LoadOptions{}, "version 16; this build reads version 15", nil},
		{"other layout", otherLayout, LoadOptions{}, "layout fingerprint", nil},
		{"too many devices for the limit", good, LoadOptions{MaxBytes: 1 << 20}, "a system of 2 devices takes about 2 MiB", ErrSnapshotLimit},
		{"trailing decoded bytes", trailing, LoadOptions{}, fmt.Sprintf("decompresses to more than the %d bytes its header declares", len(raw)), nil},
		{"declared longer than it is", short, LoadOptions{}, fmt.Sprintf("decompresses to %d bytes, its header declares %d", len(raw), len(raw)+1), nil},
		{"negative limit", good, LoadOptions{MaxBytes: -1}, "a limit of -1 bytes", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := LoadWith(bytes.NewReader(c.file), c.o)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, ErrSnapshot)
			assert.Contains(t, err.Error(), c.want)
			if c.is != nil {
				assert.ErrorIs(t, err, c.is)
			}
		})
	}
}

// TestSnapshotLayoutPinned: the layout of format version 15 (version 2 had
// the host memory's buffers in a map and its free list as pairs; version 3
// has both as slices of sim.HostExtent; version 4 has LinkState.Spans for
// LinkState.Free; version 5 has Snapshot.DeviceID, sim.DeviceState.Boot
// and DeviceStats.FunctionResets; version 6 has Params.Endpoints,
// Snapshot.Messages and
// dma.Timing.Ideal; version 7 has Params.InterRack; version 8 has
// Snapshot.Nodes and Params.EFA; version 9 has Params.SecondLevel;
// version 10 has DeviceImage.DMA a dma.CompactState; version 11 has
// LinkState.Queue; version 12 has LinkState.Folds; version 13 has
// Snapshot.SourceBusy; version 14 has EFAParams.Routing; version 15 has
// dma.CompactState.Bursts). A
// change to a state type changes the fingerprint and fails here: bump
// SnapshotVersion (old files are then refused by name) and record the new
// fingerprint.
func TestSnapshotLayoutPinned(t *testing.T) {
	got, err := snapshotLayout()
	require.NoError(t, err)
	const version15 = 0x34aada4b2b785f2a
	require.Equal(t, 15, SnapshotVersion, "a new version pins its fingerprint here")
	assert.Equalf(t, uint64(version15), got, "the Snapshot's encoded layout changed (fingerprint %#016x): bump SnapshotVersion and pin the new fingerprint", got)
}

// FuzzRestoreEncoding feeds mutated snapshot encodings, compressed and
// sealed with a valid checksum, to Load: the mutations reach the decoder
// and every model's validation. Load must never panic nor allocate past its
// limit (fuzzLimit, and the test checks what it allocated); it either
// restores a system that runs, saves and loads again, or refuses the file
// with an error wrapping ErrSnapshot and builds nothing.
//
// The fuzzer's input is a list of edits to the encoding of a small system
// (fuzzBase), not the encoding itself: a 2-device encoding is 200 KB, and
// the fuzzer would spend its time minimising inputs that large. Each edit
// is an op byte, a 3-byte offset (modulo the encoding's length) and, for
// op%4 == 0 (overwrite) and 1 (insert), a length byte and that many bytes;
// op%4 == 2 deletes length-byte bytes; op%4 == 3 writes a varint of the
// next 8 bytes (a count or a time out of range).
func FuzzRestoreEncoding(f *testing.F) { fuzzRestore(f, fuzzBase(f)) }

// FuzzRestoreEFAEncoding is FuzzRestoreEncoding on the encoding of a
// system of two nodes whose writes are sprayed over two spines
// (fuzzEFABase): its EFA parameters and its NICs' turns (SprayNext) are
// among what the edits reach.
func FuzzRestoreEFAEncoding(f *testing.F) { fuzzRestore(f, fuzzEFABase(f)) }

// fuzzRestore is the body of the snapshot fuzz targets: the edits (see
// FuzzRestoreEncoding) applied to base, loaded under fuzzLimit.
func fuzzRestore(f *testing.F, base []byte) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 1, 9})                            // Version
	f.Add([]byte{3, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 8})       // a count of 2^59
	f.Add([]byte{2, 0, 0x20, 0, 16})                           // a shift
	f.Add([]byte{1, 0, 0x30, 0, 2, 0xff, 0x7f})                // an insert
	f.Add([]byte{3, 0x02, 0x00, 0x00, 1, 0, 0, 0, 0, 0, 0, 1}) // deep in a device
	f.Fuzz(func(t *testing.T, edits []byte) {
		raw := applyEdits(base, edits)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, err := LoadWith(bytes.NewReader(seal(t, raw, uint64(len(raw)))), LoadOptions{MaxBytes: fuzzLimit})
		runtime.ReadMemStats(&after)
		if used := after.TotalAlloc - before.TotalAlloc; used > 4*fuzzLimit {
			t.Fatalf("Load allocated %d bytes under a limit of %d", used, fuzzLimit)
		}
		if err != nil {
			if s != nil || !errors.Is(err, ErrSnapshot) {
				t.Fatalf("refused with a system built (%v) or an error not wrapping ErrSnapshot: %v", s != nil, err)
			}
			return
		}
		s.Advance(sim.Microsecond)
		var b bytes.Buffer
		require.NoError(t, s.Save(&b))
		_, err = Load(io.Reader(&b))
		require.NoError(t, err, "a restored system saves a file that loads")
	})
}

// fuzzBase is the encoding FuzzRestoreEncoding edits: two devices, a
// fault scheduled, a write in flight, a reservation and a link's runs of
// chunk arrivals.
func fuzzBase(t testing.TB) []byte {
	snap := genSnapshot(t, hwarch.Sunda) // the smallest devices: the fastest runs
	snap.InFlight = []Delivery{{Used: true, Src: 0, Dst: 1, Addr: 0x1000, Len: 4, Data: []byte{1, 2, 3, 4}, Path: []int{0}, Lands: 20_000_000}, {}}
	snap.Free = []int{1}
	snap.Reservations = []PortReservation{{Device: 1, Index: 3, Reservation: Reservation{Valid: true, Start: 10_000_000, Dst: 0, Addr: 0x2000, Path: []int{1}, Lands: 30_000_000}}}
	snap.Links[0].Queue = []Arrivals{{At: 10_000_000, Every: 160_000, End: 10_300_000, Step: 164_000, N: 15}, {At: 12_400_000, End: 12_900_000, N: 1}}
	_, err := Restore(snap)
	require.NoError(t, err, "the fuzz base restores")
	return encodeSnapshot(t, snap)
}

// fuzzEFABase is the encoding FuzzRestoreEFAEncoding edits: two nodes of
// two Trn1 devices (one NIC a node) on leaves of one port each, joined by
// two spines over which writes are sprayed, after one write across them
// (so that the NICs' turns are kept).
func fuzzEFABase(t testing.TB) []byte {
	p := efaParams(hwarch.Sunda, func(e *EFAParams) { e.Network, e.LeafPorts, e.Spines, e.Routing = FatTree, 1, 2, RouteSpray })
	s, err := New(Config{Generation: hwarch.Sunda, Devices: 4, Nodes: 2, Kind: KindRing, Params: &p, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	a, err := hwarch.FabricAddress(2, 0x100000)
	require.NoError(t, err)
	_, lands, err := s.ports[0].Reserve(0, 0, a, 4096, s.Now(), s.Now())
	require.NoError(t, err)
	require.NoError(t, s.ports[0].Post(0, 0, a, 4096, nil, udma.Reduce{}, lands))
	snap := s.Snapshot()
	require.NotEmpty(t, snap.SprayNext, "the base keeps the NICs' turns")
	_, err = Restore(snap)
	require.NoError(t, err, "the fuzz base restores")
	return encodeSnapshot(t, snap)
}

// applyEdits applies FuzzRestoreEncoding's edits to a copy of base.
func applyEdits(base, edits []byte) []byte {
	out := append([]byte(nil), base...)
	for len(edits) >= 4 && len(out) > 0 {
		op, at := edits[0]%4, (int(edits[1])<<16|int(edits[2])<<8|int(edits[3]))%len(out)
		edits = edits[4:]
		switch op {
		case 0, 1:
			if len(edits) < 1 {
				return out
			}
			n := min(int(edits[0]), len(edits)-1)
			data := edits[1 : 1+n]
			edits = edits[1+n:]
			if op == 0 {
				copy(out[at:], data)
			} else {
				out = append(out[:at], append(append([]byte(nil), data...), out[at:]...)...)
			}
		case 2:
			if len(edits) < 1 {
				return out
			}
			n := min(int(edits[0]), len(out)-at)
			edits = edits[1:]
			out = append(out[:at], out[at+n:]...)
		case 3:
			if len(edits) < 8 {
				return out
			}
			v := binary.LittleEndian.Uint64(edits)
			edits = edits[8:]
			out = append(out[:at], append(binary.AppendUvarint(nil, v), out[at+1:]...)...)
		}
	}
	return out
}

// BenchmarkSnapshotSaveLoad saves and loads a 16-device Trn2 system with
// 64 MiB of device memory written (4 MiB a device). Load's bytes/s are of
// the file.
func BenchmarkSnapshotSaveLoad(b *testing.B) {
	s, err := New(Config{Generation: hwarch.Cayman, Devices: 16, Ready: true})
	require.NoError(b, err)
	page := make([]byte, 4<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range page {
		page[i] = byte(rng.Uint32() & 0x0F) // half the entropy of random bytes: zstd halves it
	}
	for _, d := range s.Devices() {
		require.NoError(b, d.Land(0x1000_0000, page, udma.Reduce{})) // no event runs: the lock is not needed
	}
	var file bytes.Buffer
	require.NoError(b, s.Save(&file))
	b.Run("save", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out bytes.Buffer
			require.NoError(b, s.Save(&out))
		}
	})
	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(file.Len()))
		for b.Loop() {
			_, err := Load(bytes.NewReader(file.Bytes()))
			require.NoError(b, err)
		}
	})
}

// dmaEngine is engine e of device dev's DMA state in the snapshot, written
// in full (an engine kept by its epoch is expanded) for a test to change.
func dmaEngine(s *Snapshot, dev, e int) *dma.EngineState {
	ce := &s.Device[dev].DMA.Engines[e]
	if ce.State == nil {
		full, err := (dma.CompactState{Engines: []dma.CompactEngine{*ce}}).Expand(1)
		if err != nil {
			panic(err)
		}
		ce.State, ce.Epoch = &full.Engines[0], 0
	}
	return ce.State
}
