package fabric

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// heapGrowth returns the live heap f leaves behind, in bytes.
func heapGrowth(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.GC()
	runtime.ReadMemStats(&b)
	if b.HeapAlloc < a.HeapAlloc {
		return 0
	}
	return b.HeapAlloc - a.HeapAlloc
}

// TestPathCacheBounded: on 4,096 devices, a ring step (every device writes
// to its neighbour) leaves a path cache that grows with the pairs used —
// well under 16 MiB — where the dense rows the cache kept for every size
// before took 96 KiB per writing device (384 MiB). Both layouts return the
// topology's paths.
func TestPathCacheBounded(t *testing.T) {
	const n = 4096
	topo, err := Build(KindStar, hwarch.Mariana, n, DefaultParams(hwarch.Mariana))
	require.NoError(t, err)
	ring := func(c *pathCache) {
		for d := range n {
			p, err := c.get(topo, d, (d+1)%n)
			require.NoError(t, err)
			require.Len(t, p, 2)
		}
	}
	var c pathCache
	grew := heapGrowth(func() { c = newPathCache(n); ring(&c) })
	assert.Less(t, grew, uint64(16<<20), "path cache of a 4,096-device ring step: %d bytes", grew)
	dense := pathCache{rows: make([][][]int, n)}
	grewDense := heapGrowth(func() { ring(&dense) })
	assert.Greater(t, grewDense, uint64(16<<20), "the dense layout this bound refuses")
	runtime.KeepAlive(&c)
	runtime.KeepAlive(&dense)
	p, err := c.get(topo, 5, 5)
	assert.NoError(t, err)
	assert.Nil(t, p)
	_, err = c.get(topo, 5, n)
	assert.ErrorIs(t, err, ErrNoPath)
	small := newPathCache(16)
	_, err = small.get(topo, -1, 3)
	assert.ErrorIs(t, err, ErrNoPath)
}

// TestReservationSlotsOnDemand: a device keeps reservation slots up to the
// highest queue that has reserved, not one for each of its 2,048 queues
// (128 engines × 16 on Trn3) from the start; every queue can still
// reserve and post, and one past the last is refused.
func TestReservationSlotsOnDemand(t *testing.T) {
	s, err := New(Config{Generation: hwarch.Mariana, Devices: 4, Kind: KindStar, Ready: true, TimingOnly: true})
	require.NoError(t, err)
	held := func() (n int) {
		for _, r := range s.st.Reservations {
			n += len(r)
		}
		return n
	}
	assert.Zero(t, held(), "no slot before any queue reserves")
	dst, err := hwarch.FabricAddress(1, 0)
	require.NoError(t, err)
	engines := s.geo.DMAEngines
	for _, eq := range [][2]int{{0, 0}, {0, 3}, {engines - 1, udma.Queues - 1}} {
		_, lands, err := s.ports[0].Reserve(eq[0], eq[1], dst, 4096, 0, 0)
		require.NoError(t, err, "engine %d queue %d", eq[0], eq[1])
		require.NoError(t, s.ports[0].Post(eq[0], eq[1], dst, 4096, nil, udma.Reduce{}, lands))
		if eq == [2]int{0, 3} {
			assert.Equal(t, 4, held(), "slots up to queue 3 of engine 0")
		}
	}
	_, _, err = s.ports[0].Reserve(engines, 0, dst, 4096, 0, 0)
	assert.ErrorIs(t, err, udma.ErrEngine)
	assert.ErrorIs(t, s.ports[1].Post(0, 0, dst, 4096, nil, udma.Reduce{}, 0), dma.ErrNeighbour, "a queue that never reserved cannot post")
}

// TestBookReusesSpans: a link whose booked spans are all over books the
// next from the start of the same array — a ring step's links, emptied at
// every step, allocated a new one-span array for each booking before.
func TestBookReusesSpans(t *testing.T) {
	var ls LinkState
	now := uint64(0)
	ls.book(now, now, 100)
	allocs := testing.AllocsPerRun(100, func() {
		now += 1000 // the present is past every span
		if got := ls.book(now, now, 100); got != now {
			t.Fatalf("booked at %d, want %d", got, now)
		}
	})
	assert.Zero(t, allocs)
	assert.Equal(t, []Span{{now, now + 100}}, ls.Spans)
}
