package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// bar4Script runs one random script of BAR4 accesses on a fresh device
// while events fire in between that read and write the HBM behind BAR4,
// and returns everything observable: what the BAR reads and the events
// saw, the clock and the counters, and the HBM over the touched span.
func bar4Script(t *testing.T, g hwarch.Generation, seed uint64) (seen []uint32, now Time, st DeviceStats, mem []byte) {
	t.Helper()
	d, err := NewDevice(DeviceConfig{Generation: g, Ready: true})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 11))
	ws := d.BAR4().Windows()
	require.NotEmpty(t, ws)
	w := ws[len(ws)-1] // the last window: its end is the BAR's
	const span = 64 << 10
	base := w.BAR4Offset + w.Size - span // up to the window's end: runs get cut there
	// A probe reads and rewrites the word at BAR4 offset arg.
	probe, err := d.engine.Register("bar4-probe", HandlerFunc(func(e *Engine, arg uint64) {
		addr := w.DeviceAddr + (arg - w.BAR4Offset)
		v, _ := d.hbm.ReadU32(addr)
		seen = append(seen, v, uint32(e.Now()))
		_ = d.hbm.WriteU32(addr, v*2654435761+uint32(arg))
	}))
	require.NoError(t, err)
	for range 300 {
		n := 1 + rng.IntN(600)
		off := base + uint64(rng.IntN(span/4-1))*4
		n = min(n, int((base+span-off)/4)) // stay inside the BAR
		// Events on the words about to be accessed, at word boundaries of
		// the access (either latency), some at once.
		now := d.engine.Now()
		for range rng.IntN(4) {
			j := uint64(rng.IntN(n + 1))
			per := d.write
			if rng.IntN(2) == 0 {
				per = d.read
			}
			at := now + Time(j)*per + Time(rng.IntN(3)) - 1
			if at < now {
				at = now
			}
			word := off + 4*uint64(rng.IntN(n))
			require.NoError(t, d.engine.Schedule(at, probe, word))
		}
		if rng.IntN(2) == 0 {
			src := make([]uint32, n)
			for i := range src {
				src[i] = rng.Uint32()
			}
			require.NoError(t, d.WriteBAR(hwarch.BAR4, off, src))
		} else {
			dst := make([]uint32, n)
			require.NoError(t, d.ReadBAR(hwarch.BAR4, off, dst))
			seen = append(seen, dst...)
		}
	}
	d.engine.RunUntil(d.engine.Now() + Millisecond)
	mem = make([]byte, span)
	require.NoError(t, d.hbm.Read(w.DeviceAddr+w.Size-span, mem))
	return seen, d.Now(), d.Snapshot().State.Stats, mem
}

// TestBAR4BulkChangesNothing: the BAR4 bulk path (whole runs of words when
// no event can fall between them) gives what word-by-word accesses give:
// the same values read, by the BARs and by events firing in between, the
// same clock, counters and memory.
func TestBAR4BulkChangesNothing(t *testing.T) {
	for _, g := range hwarch.Generations() {
		for seed := range uint64(5) {
			bulk := bar4Bulk
			bar4Bulk = false
			seenA, nowA, stA, memA := bar4Script(t, g, seed)
			bar4Bulk = bulk
			seenB, nowB, stB, memB := bar4Script(t, g, seed)
			require.Equal(t, len(seenA), len(seenB), "%s seed %d", g, seed)
			assert.Equal(t, seenA, seenB, "%s seed %d: values seen", g, seed)
			assert.Equal(t, nowA, nowB, "%s seed %d: clock", g, seed)
			assert.Equal(t, stA, stB, "%s seed %d: counters", g, seed)
			assert.Equal(t, memA, memB, "%s seed %d: memory", g, seed)
		}
	}
}
