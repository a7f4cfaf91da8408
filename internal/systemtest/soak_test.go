package systemtest

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// soakWarm is the collective after which TestSoak reads the warm heap: past
// the first snapshot restore (at 99) and the first faults (49, 99 is a
// restore), so that every kind of step has run once.
const soakWarm = 120

// TestSoak runs many collectives — every algorithm in turn, with a link
// fault and a recovery every 50 and a snapshot saved and restored every 100
// — on one system and checks that the heap stays flat once warm: the heap
// in use at the end, with the system still alive, is compared with the heap
// after collective soakWarm. It takes minutes, so it is excluded from the
// default run: NEURONSIM_SOAK=1 go test -run TestSoak ./internal/systemtest/
// (NEURONSIM_SOAK=N runs N collectives, at least 2·soakWarm so that the
// comparison covers as many collectives as the warm-up; 1 means 1000).
func TestSoak(t *testing.T) {
	env := os.Getenv("NEURONSIM_SOAK")
	if env == "" {
		t.Skip("the soak test runs only with NEURONSIM_SOAK set (see its doc comment)")
	}
	n, err := strconv.Atoi(env)
	if err != nil || n < 1 {
		t.Fatalf("NEURONSIM_SOAK=%q: want a number of collectives (1 means 1000)", env)
	}
	if n == 1 {
		n = 1000
	}
	if n < 2*soakWarm {
		t.Fatalf("NEURONSIM_SOAK=%d: at least %d collectives are needed to compare the heap after %d with the heap at the end", n, 2*soakWarm, soakWarm)
	}
	c := newCluster(t, hwarch.Mariana, 8, false, 8<<20)
	algos := []enc.Algo{enc.Ring, enc.Mesh, enc.RDH, enc.KangaRing}
	var warm uint64
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	for i := range n {
		sched, err := enc.Build(enc.AllReduce, algos[i%len(algos)], 8, 1<<20, 4, enc.Options{})
		require.NoError(t, err)
		if i%100 == 99 {
			// Save the system, restore it, and go on with the restored one.
			c.Exec.Release()
			var b bytes.Buffer
			require.NoError(t, c.System.Save(&b))
			restored, err := fabric.Load(&b)
			require.NoError(t, err)
			require.NoError(t, c.Reattach(restored))
			continue
		}
		if i%50 == 49 {
			id, ok := c.System.LinkBetween(2, c.System.Topology().Devices)
			require.True(t, ok)
			require.NoError(t, c.System.ScheduleFault(fabric.Fault{At: c.System.Now() + sim.Time(20*sim.Microsecond), Kind: fabric.LinkDown, Link: id}))
			_, err := c.Run(sched, enc.Float32)
			require.ErrorIs(t, err, collective.ErrRun)
			require.NoError(t, c.System.SetLinkDown(id, false))
			require.NoError(t, c.Recover())
			continue
		}
		_, err = c.Check(sched, enc.Float32, uint64(i), enc.Options{})
		require.NoError(t, err, "collective %d", i)
		if i == soakWarm {
			warm = heap()
		}
	}
	require.NotZero(t, warm, "the warm heap was read at collective %d", soakWarm)
	end := heap()
	// The system must still be reachable while the end is measured: without
	// this, the collector may free the whole cluster before heap() runs (c
	// is not used afterwards), and the reading would miss whatever it leaked.
	runtime.KeepAlive(c)
	t.Logf("heap in use: %d bytes warm (after %d collectives), %d after %d", warm, soakWarm, end, n)
	assert.Less(t, float64(end), 1.2*float64(warm), "memory stays flat")
}
