package systemtest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// newCluster builds a brought-up cluster with one rank per device.
func newCluster(t testing.TB, g hwarch.Generation, devices int, timingOnly bool, bufBytes uint64) *cluster.Cluster {
	t.Helper()
	c, err := cluster.New(cluster.Config{Generation: g, Devices: devices, Switch: switchOf(g), TimingOnly: timingOnly, BufferBytes: bufBytes})
	require.NoError(t, err)
	return c
}

// TestCollectivesOnDevices: AllReduce, AllGather and ReduceScatter with
// every algorithm (and AllToAll, Permute) on 32 mariana devices on the v1
// switch and on the 16-device Trn2 torus, with random data reduced by the
// DMA engines, equal the CPU reference: int32 exactly, fp32 and bf16 within
// the documented tolerance.
func TestCollectivesOnDevices(t *testing.T) {
	for _, sys := range []struct {
		gen     hwarch.Generation
		devices int
	}{{hwarch.Mariana, 32}, {hwarch.Cayman, 16}} {
		c := newCluster(t, sys.gen, sys.devices, false, 8<<20)
		for _, op := range []enc.Op{enc.AllReduce, enc.AllGather, enc.ReduceScatter, enc.AllToAll, enc.Permute} {
			for _, algo := range []enc.Algo{enc.Ring, enc.Mesh, enc.RDH, enc.KangaRing, enc.Hier} {
				for _, d := range []enc.Dtype{enc.Int32, enc.Float32, enc.BFloat16} {
					opt := enc.Options{GroupSize: 4}
					sched, err := enc.Build(op, algo, sys.devices, int64(sys.devices)*1024, d.Size(), opt)
					if err != nil {
						continue // the algorithm does not do this op
					}
					t.Run(fmt.Sprintf("%s/%d/%s/%s/%s", sys.gen, sys.devices, op, algo, d), func(t *testing.T) {
						res, err := c.Check(sched, d, uint64(op)<<8|uint64(algo), enc.Options{})
						require.NoError(t, err)
						assert.Positive(t, res.TimePS)
					})
				}
			}
		}
		st := c.System.Stats()
		assert.Zero(t, st.Dropped+st.LandErrors, st.LastError)
	}
}

// TestTorusNeighboursThroughB0: on the Trn2 torus the runtime reaches a
// neighbour through its B0 window of the driver's column: the collective
// is right with the driver's table, and wrong (or fails) when two of one
// device's columns are swapped — the writes then land on other devices.
func TestTorusNeighboursThroughB0(t *testing.T) {
	c := newCluster(t, hwarch.Cayman, 16, false, 1<<20)
	require.Len(t, c.Exec.Neighbours, 16)
	sched, err := enc.Build(enc.AllReduce, enc.Ring, 16, 16*1024, 4, enc.Options{})
	require.NoError(t, err)
	_, err = c.Check(sched, enc.Int32, 3, enc.Options{})
	require.NoError(t, err)

	row := c.Exec.Neighbours[0]
	row[0], row[1], row[2], row[3] = row[1], row[0], row[3], row[2]
	_, err = c.Check(sched, enc.Int32, 4, enc.Options{})
	require.Error(t, err, "a wrong neighbour table must misdirect the writes")
	t.Log(err)
}

// TestTwoRanksOnOneChip: the 2-rank all-reduce of the calibration table is
// the two NeuronCores of one Trn1 chip; nothing crosses the fabric.
func TestTwoRanksOnOneChip(t *testing.T) {
	c, err := cluster.New(cluster.Config{Generation: hwarch.Sunda, Devices: 1, RanksPerDevice: 2, BufferBytes: 1 << 20})
	require.NoError(t, err)
	sched, err := enc.Build(enc.AllReduce, enc.Ring, 2, 64<<10, 4, enc.Options{})
	require.NoError(t, err)
	_, err = c.Check(sched, enc.Float32, 5, enc.Options{})
	require.NoError(t, err)
	assert.Zero(t, c.System.Stats().Transfers, "one chip: no fabric traffic")
}

// TestRDHUsesInterRDHEngines: an RDH all-reduce carries the transfers
// between its two reduction half-domains on the runtime's inter-RDH DMA
// engines (get_inter_rdh_dma_id: 4 and 5 on mariana), queue 15, and the
// others on the rank's data engines.
func TestRDHUsesInterRDHEngines(t *testing.T) {
	c := newCluster(t, hwarch.Mariana, 8, false, 4<<20)
	assert.Equal(t, []int{4, 5}, c.Exec.InterRDH)
	assert.Equal(t, 2, c.Exec.InterRDHFolds)
	c.Exec.Engines = 2 // data on engines 0 and 1 only
	sched, err := enc.Build(enc.AllReduce, enc.RDH, 8, 1<<20, 4, enc.Options{})
	require.NoError(t, err)
	_, err = c.Check(sched, enc.Float32, 9, enc.Options{})
	require.NoError(t, err)
	for _, eng := range []int{0, 1, 4, 5} {
		qs, err := c.System.Device(0).DMAQueue(eng, collective.CollectiveQueue)
		require.NoError(t, err)
		assert.Positive(t, qs.Done, "engine %d carried transfers", eng)
	}
	for _, eng := range []int{2, 3, 6} {
		qs, err := c.System.Device(0).DMAQueue(eng, collective.CollectiveQueue)
		require.NoError(t, err)
		assert.Zero(t, qs.Done, "engine %d is not used", eng)
	}
}
