package systemtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/sim"
)

func dmaDevice(t testing.TB, g hwarch.Generation, rev uint8) (*sim.Device, *bringup.Device, *dma.DMA) {
	t.Helper()
	simDev, err := sim.NewDevice(sim.DeviceConfig{Generation: g, Revision: rev, Ready: true})
	require.NoError(t, err)
	up, err := bringup.BringUp(simDev, bringup.Options{NoReset: true})
	require.NoError(t, err)
	m, err := dma.New(up)
	require.NoError(t, err)
	return simDev, up, m
}

func pattern(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestHostDeviceCopies copies host → device → host through each NC's H2T
// queue with the driver's marker completion, on every generation and
// revision.
func TestHostDeviceCopies(t *testing.T) {
	for _, g := range hwarch.Generations() {
		for _, r := range revisions {
			t.Run(fmt.Sprintf("%s/%s", g, r.name), func(t *testing.T) {
				simDev, up, m := dmaDevice(t, g, r.rev)
				geo := up.Geometry
				host := m.Host()
				const n = 200*1024 + 12 // 4 descriptor pairs
				src := pattern(n, uint64(g))
				hbuf, err := host.HostAlloc(n, 4096)
				require.NoError(t, err)
				require.NoError(t, host.HostWrite(hbuf, src))
				for nc := 0; nc < geo.NeuronCores; nc++ {
					ch := nc / geo.TPBPerHBM
					dev := geo.HBM[ch].Base + 64*hwarch.MiB + uint64(nc)*hwarch.MiB
					before := simDev.Now()
					pairs, err := m.Copy(nc, dev, geo.HostAddress(hbuf), n)
					require.NoError(t, err, "NC %d to device", nc)
					assert.Equal(t, 5, pairs, "4 data pairs and the marker")
					assert.Greater(t, simDev.Now(), before, "the copy took device time")
					got := make([]byte, n&^3)
					require.NoError(t, m.ReadDevice(dev, got))
					require.True(t, bytes.Equal(src[:len(got)], got), "NC %d: device holds the bytes", nc)

					back, err := host.HostAlloc(n, 64)
					require.NoError(t, err)
					_, err = m.Copy(nc, geo.HostAddress(back), dev, n)
					require.NoError(t, err, "NC %d to host", nc)
					out := make([]byte, n)
					require.NoError(t, host.HostRead(back, out))
					require.True(t, bytes.Equal(src, out), "NC %d: round trip", nc)
					require.NoError(t, host.HostFree(back))
				}
				eng, q, err := udma.H2TEngine(geo, 0)
				require.NoError(t, err)
				qs, err := simDev.DMAQueue(eng, q)
				require.NoError(t, err)
				assert.Zero(t, qs.Status, "no error on the H2T queue")
			})
		}
	}
}

// A malformed descriptor halts its own queue with the error in its status;
// a neighbour queue's transfer completes correctly, and memory the bad
// descriptor named stays untouched.
func TestMalformedDescriptorHaltsOnlyItsQueue(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			simDev, up, m := dmaDevice(t, g, 0)
			geo := up.Geometry
			bad, err := m.OpenQueue("bad", 0, 0, 64)
			require.NoError(t, err)
			good, err := m.OpenQueue("good", 0, 1, 64)
			require.NoError(t, err)

			hostSrc, err := m.Host().HostAlloc(4096, 64)
			require.NoError(t, err)
			data := pattern(4096, 3)
			require.NoError(t, m.Host().HostWrite(hostSrc, data))
			dst := geo.HBM[0].Base + 32*hwarch.MiB

			v := dma.NewVring("bad")
			require.NoError(t, v.AddTransfer(geo.HostAddress(hostSrc), 0x7FF0_0000_0000, 4096)) // nowhere
			require.NoError(t, bad.Run(v))
			w := dma.NewVring("good")
			require.NoError(t, w.AddTransfer(geo.HostAddress(hostSrc), dst, 4096))
			require.NoError(t, good.Run(w))
			require.NoError(t, good.Wait(100000))

			got := make([]byte, 4096)
			require.NoError(t, m.ReadDevice(dst, got))
			assert.Equal(t, data, got, "the neighbour queue's transfer completed")
			st, err := bad.Status()
			require.NoError(t, err)
			assert.Equal(t, udma.StatusHalted|udma.ErrDescAddr, st&^udma.StatusBusy)
			assert.ErrorIs(t, bad.Sync(), dma.ErrQueueError)
			qs, err := simDev.DMAQueue(0, 0)
			require.NoError(t, err)
			assert.Zero(t, qs.Done)
		})
	}
}

// A backend without host memory (here a device that offers only the
// ndl.Device calls) is refused by the DMA layer with a clear error.
func TestDMANeedsHostMemory(t *testing.T) {
	simDev, err := sim.NewDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Ready: true})
	require.NoError(t, err)
	up, err := bringup.BringUp(barOnly{simDev}, bringup.Options{NoReset: true})
	require.NoError(t, err)
	_, err = dma.New(up)
	require.ErrorIs(t, err, dma.ErrNoHostMemory)
}

// barOnly hides every method of a device but ndl.Device's.
type barOnly struct{ ndl.Device }

// An event-accel descriptor aimed at an event address sets that event of
// the NC; one aimed at a semaphore's INCR register adds the source word.
func TestEventAccelFromDMA(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			_, up, m := dmaDevice(t, g, 0)
			geo, b := up.Geometry, up.Geometry.BAR0
			nc := geo.NeuronCores - 1
			src, err := m.Host().HostAlloc(64, 64)
			require.NoError(t, err)
			require.NoError(t, m.Host().HostWrite(src, []byte{3, 0, 0, 0}))
			sync := geo.TPBDeviceBases[nc] + geo.PSUMDeviceDelta + b.EventsOffset - b.PSUMOffset
			q, err := m.AllocQueue("events", nc, 64)
			require.NoError(t, err)
			v := dma.NewVring("events")
			require.NoError(t, v.AddEventAccel(geo.HostAddress(src), sync+4*7))                                // event 7
			require.NoError(t, v.AddEventAccel(geo.HostAddress(src), sync+b.SemIncrOffset-b.EventsOffset+4*9)) // semaphore 9 += 3
			require.NoError(t, v.AddEventAccel(geo.HostAddress(src), sync+b.SemIncrOffset-b.EventsOffset+4*9)) // semaphore 9 += 3
			require.NoError(t, q.Run(v))
			require.NoError(t, q.Wait(100000))
			tpb := up.VA(b.TPBWindow(nc))
			ev, err := up.CSR.Read(tpb + b.EventsOffset + 4*7)
			require.NoError(t, err)
			assert.Equal(t, uint32(1), ev, "event 7 set (bit 0 of 3)")
			sem, err := up.CSR.Read(tpb + b.SemReadOffset + 4*9)
			require.NoError(t, err)
			assert.Equal(t, uint32(6), sem)
		})
	}
}

// TestQueuesIntact: the runtime learns through BAR reads alone that a
// device reset took its queues — the ring base registers read back as
// programmed until the reset, not after (nor while the device resets) — and
// with no queue open there is nothing to compare.
func TestQueuesIntact(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			simDev, _, m := dmaDevice(t, g, 0)
			ok, err := m.QueuesIntact()
			require.NoError(t, err)
			assert.True(t, ok, "no queue open")
			_, err = m.AllocQueue("probe", 0, udma.MinRing)
			require.NoError(t, err)
			ok, err = m.QueuesIntact()
			require.NoError(t, err)
			assert.True(t, ok, "the queue as programmed")
			simDev.FaultReset()
			ok, err = m.QueuesIntact()
			require.NoError(t, err)
			assert.False(t, ok, "during the reset")
			require.NoError(t, simDev.Sleep(2*time.Second))
			ok, err = m.QueuesIntact()
			require.NoError(t, err)
			assert.False(t, ok, "after the reset")
		})
	}
}

// TestDMAPastPageBudgetSaysSo: a DMA write that needs device memory past
// the simulated device's page budget (serve --max-memory) halts its queue
// with the simulator's ErrMemoryFull bit, and the runtime's error says the
// budget is used up — once only "status 0x102", read as a bad address.
func TestDMAPastPageBudgetSaysSo(t *testing.T) {
	simDev, up, m := dmaDevice(t, hwarch.Cayman, 0)
	geo := up.Geometry
	q, err := m.OpenQueue("big", 0, 0, 64)
	require.NoError(t, err)
	hostSrc, err := m.Host().HostAlloc(64<<10, 64)
	require.NoError(t, err)
	require.NoError(t, m.Host().HostWrite(hostSrc, pattern(64<<10, 5)))
	all, err := sim.NewPageBudget(1 << 30)
	require.NoError(t, err)
	require.NoError(t, simDev.SetPageBudget(all)) // to count what is resident
	// Room for two more pages and the page-table nodes of each (a leaf, a
	// level-2 and a level-1 node, and a root: 4), as the budget counts
	// them: the 64 KiB write needs 16 pages and their leaf.
	b, err := sim.NewPageBudget(all.Used() + 2 + 2*4)
	require.NoError(t, err)
	require.NoError(t, simDev.SetPageBudget(b))
	v := dma.NewVring("big")
	require.NoError(t, v.AddTransfer(geo.HostAddress(hostSrc), geo.HBM[0].Base+64*hwarch.MiB, 64<<10))
	require.NoError(t, q.Run(v))
	err = q.Wait(100000)
	require.ErrorIs(t, err, dma.ErrQueueError)
	assert.Contains(t, err.Error(), "the simulated device's memory budget is used up")
	st, err := q.Status()
	require.NoError(t, err)
	assert.Equal(t, udma.StatusHalted|udma.ErrMemoryFull, st&^udma.StatusBusy)
}

// TestSyncNotReadyIsNotAQueueError: a queue synced while its device is in a
// reset, or is not yet ready after one, reads 0xDEADBEEF for its status: the
// runtime says the device is not ready (bringup.ErrNotReady) and does not
// decode that word as DMA error bits (it once said "halted" with a list of
// errors 0xDEADBEEF's bits stand for). Once the reset is over the queue
// reads its power-on registers again.
func TestSyncNotReadyIsNotAQueueError(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			simDev, _, m := dmaDevice(t, g, 0)
			q, err := m.AllocQueue("probe", 0, udma.MinRing)
			require.NoError(t, err)
			require.NoError(t, q.Sync())
			simDev.FaultReset()
			err = q.Sync()
			require.ErrorIs(t, err, bringup.ErrNotReady)
			assert.NotErrorIs(t, err, dma.ErrQueueError)
			assert.Contains(t, err.Error(), "the status register reads 0xdeadbeef: the device is in a reset or not yet ready after one")
			assert.NotContains(t, err.Error(), "halted")
			err = q.Wait(10)
			require.ErrorIs(t, err, bringup.ErrNotReady, "Wait syncs too")
			require.NoError(t, simDev.Sleep(2*time.Second))
			require.NoError(t, q.Sync(), "ready again: the queue's registers read their power-on values")
		})
	}
}
