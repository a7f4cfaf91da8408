package fabric

import (
	"bytes"
	"crypto/sha256"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// randomBytes is n bytes that do not compress.
func randomBytes(n int) []byte {
	data := make([]byte, n)
	rng := sha256.Sum256(nil)
	for i := 0; i < n; i += len(rng) {
		rng = sha256.Sum256(rng[:])
		copy(data[i:], rng[:])
	}
	return data
}

// allocated is what f allocates (runtime.MemStats.TotalAlloc).
func allocated(t *testing.T, f func()) uint64 {
	t.Helper()
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestSnapshotBytesBound: SnapshotBytes, counted from the live system
// before anything is copied, is at least what Snapshot allocates and at
// most 1.5 times it, on idle systems, one with host memory and pending
// events, and one with device memory written; SaveBytes and SaveFileBytes
// are at least what Save and SaveFile allocate.
func TestSnapshotBytesBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		host    int // bytes of random host memory
		events  int // events pending
		hbm     int // bytes of device memory written on each device
		capture bool
	}{
		{name: "trn2 ring of 2, idle", cfg: Config{Generation: hwarch.Cayman, Devices: 2, Kind: KindRing}},
		{name: "trn1 ring of 4, capturing", cfg: Config{Generation: hwarch.Sunda, Devices: 4, Kind: KindRing}, capture: true},
		{name: "trn3 gen1 of 64, timing-only", cfg: Config{Generation: hwarch.Mariana, Devices: 64, Kind: KindTrn3Gen1, TimingOnly: true}},
		{name: "trn3 switch of 32, host memory and events", cfg: Config{Generation: hwarch.Mariana, Devices: 32, Kind: KindSwitch, TimingOnly: true},
			host: 8 << 20, events: 1 << 16},
		{name: "trn2 ring of 4, device memory", cfg: Config{Generation: hwarch.Cayman, Devices: 4, Kind: KindRing, Ready: true}, hbm: 4 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.cfg)
			require.NoError(t, err)
			if tc.capture {
				s.SetCapture(discardPackets{}, 0)
			}
			if tc.host > 0 {
				base, err := s.Host().Alloc(uint64(tc.host), 4096)
				require.NoError(t, err)
				require.NoError(t, s.Host().Write(base, randomBytes(tc.host)))
			}
			if tc.events > 0 {
				h, err := s.engine.Register("test.idle", simkernel.HandlerFunc(func(*simkernel.Engine, uint64) {}))
				require.NoError(t, err)
				for i := range tc.events {
					require.NoError(t, s.engine.Schedule(sim.Time(sim.Second)+sim.Time(i), h, 0))
				}
			}
			if tc.hbm > 0 {
				data := randomBytes(tc.hbm)
				for i := range tc.cfg.Devices {
					require.NoError(t, s.Device(i).Land(1<<30, data, udma.Reduce{}))
				}
			}
			s.Advance(10 * sim.Microsecond)

			est := s.SnapshotBytes()
			var snap *Snapshot
			got := allocated(t, func() { snap = s.Snapshot() })
			require.Len(t, snap.Device, tc.cfg.Devices)
			t.Logf("SnapshotBytes %d, Snapshot allocated %d (%.2f×)", est, got, float64(est)/float64(got))
			assert.GreaterOrEqual(t, est, got, "SnapshotBytes is an upper bound")
			assert.LessOrEqual(t, float64(est), 1.5*float64(got), "SnapshotBytes within 1.5× of the copy")
			snap = nil

			var buf bytes.Buffer
			saveEst := s.SaveBytes()
			saved := allocated(t, func() { require.NoError(t, s.Save(&buf)) })
			t.Logf("SaveBytes %d, Save allocated %d; payload %d", saveEst, saved, buf.Len())
			if !raceEnabled { // the race detector's sync.Pool drops pooled buffers: the encoder allocates more
				assert.GreaterOrEqual(t, saveEst, saved, "SaveBytes is an upper bound")
			}
			fileEst := s.SaveFileBytes()
			assert.GreaterOrEqual(t, saveEst, fileEst)
			assert.Equal(t, est+SaveBuffers, fileEst)
		})
	}
}
