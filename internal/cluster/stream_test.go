package cluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// streamRun is one collective of a streamed-against-staged case.
type streamRun struct {
	op   enc.Op
	algo enc.Algo
	size int64
}

// observed is everything a run leaves that the streamed and the staged
// run must agree on: the result or the error, the outputs (functional),
// the system's clock, every device's DMA totals and counters (its register
// accesses among them) and the fabric's statistics and link counters.
type observed struct {
	Res      collective.Result
	Err      string
	Out      [][]byte
	Now      sim.Time
	DMA      [][2]uint64
	Devices  []sim.DeviceStats
	Stats    fabric.Stats
	Counters fabric.Counters
}

// observe runs s on c (functionally checked against the CPU reference
// unless the cluster is timing-only) and returns what it left.
func observe(t *testing.T, c *cluster.Cluster, s *enc.Schedule, opt enc.Options, functional bool) observed {
	t.Helper()
	var o observed
	var err error
	if functional {
		o.Res, err = c.Check(s, enc.Float32, 5, opt)
	} else {
		o.Res, err = c.Run(s, enc.Float32)
	}
	if err != nil {
		o.Err = err.Error()
	} else if functional {
		o.Out, err = c.ReadOutputs(s)
		require.NoError(t, err)
	}
	o.Now = c.System.Now()
	for _, d := range c.System.Devices() {
		pairs, bytes := d.DMATotals()
		o.DMA = append(o.DMA, [2]uint64{pairs, bytes})
		o.Devices = append(o.Devices, d.Stats())
	}
	o.Stats, o.Counters = c.System.Stats(), c.System.Counters()
	return o
}

// TestStreamedEqualsStaged: the same collectives run streamed (the rings
// lazy host buffers fed by the planner as the devices read them) and
// staged (every descriptor written before the devices start) on fresh
// clusters leave everything the same — result (time, descriptors, bytes),
// outputs, clock, every device's DMA totals and counters, the fabric's statistics and
// link counters — run after run on the same cluster: ring, RDH, mesh and
// hierarchical collectives, functional and timing-only, both fabric models,
// the Trn2 torus (neighbour windows), two EFA nodes, the parity mode, a
// queue long enough to let go of what it read, and a link taken down in
// the middle of a run (the same error).
func TestStreamedEqualsStaged(t *testing.T) {
	mariana := func(devices int, kind fabric.Kind, p *fabric.Params) cluster.Config {
		return cluster.Config{Generation: hwarch.Mariana, Devices: devices, Switch: hwarch.SwitchV1, Kind: kind, Params: p}
	}
	tables, err := arch.For(hwarch.Mariana, arch.Options{Switch: hwarch.SwitchV1})
	require.NoError(t, err)
	free := cluster.DefaultParams(hwarch.Mariana, tables)
	free.Model = fabric.Free
	ideal := func(m fabric.Model) *fabric.Params {
		p := cluster.IdealParams(hwarch.Mariana, tables, m, 50<<30, 500_000)
		return &p
	}
	trn2, err := fabric.LookupSystem("trn2-48xl")
	require.NoError(t, err)
	for _, tc := range []struct {
		name       string
		cfg        cluster.Config
		functional bool
		engines    int  // 0: the calibrated
		linkDown   bool // the last run has a link down in its middle
		long       bool // skipped in -short
		runs       []streamRun
	}{
		{name: "ring functional aware", cfg: mariana(8, fabric.KindAuto, nil), functional: true,
			runs: []streamRun{{enc.AllReduce, enc.Ring, 1 << 20}, {enc.AllGather, enc.Ring, 256 << 10}, {enc.ReduceScatter, enc.Ring, 64 << 10}}},
		{name: "rdh timing aware", cfg: mariana(16, fabric.KindAuto, nil),
			runs: []streamRun{{enc.AllReduce, enc.RDH, 4 << 20}, {enc.AllReduce, enc.RDH, 64 << 10}}},
		{name: "mesh and ring functional free", cfg: mariana(8, fabric.KindAuto, &free), functional: true,
			runs: []streamRun{{enc.AllReduce, enc.Mesh, 96 << 10}, {enc.AllReduce, enc.Ring, 1 << 20}}},
		{name: "ring timing free", cfg: mariana(8, fabric.KindAuto, &free),
			runs: []streamRun{{enc.AllReduce, enc.Ring, 16 << 20}}},
		{name: "parity aware", cfg: mariana(8, fabric.KindStar, ideal(fabric.Aware)),
			runs: []streamRun{{enc.AllReduce, enc.Ring, 1 << 20}, {enc.AllReduce, enc.Ring, 64 << 10}}},
		{name: "parity free", cfg: mariana(8, fabric.KindStar, ideal(fabric.Free)),
			runs: []streamRun{{enc.AllReduce, enc.Ring, 1 << 20}}},
		{name: "queues let go of what they read", cfg: mariana(8, fabric.KindAuto, nil), engines: 1,
			runs: []streamRun{{enc.AllReduce, enc.Ring, 64 << 20}, {enc.AllGather, enc.Ring, 8 << 20}}},
		{name: "link down", cfg: mariana(8, fabric.KindAuto, nil), linkDown: true,
			runs: []streamRun{{enc.AllReduce, enc.Ring, 1 << 20}, {enc.AllReduce, enc.Ring, 1 << 20}}},
		{name: "torus functional", cfg: cluster.Config{Generation: hwarch.Cayman, Devices: 16}, functional: true, long: true,
			runs: []streamRun{{enc.AllReduce, enc.Ring, 512 << 10}, {enc.AllReduce, enc.RDH, 512 << 10}}},
		{name: "hier over EFA", long: true, functional: true,
			cfg:  cluster.Config{Generation: trn2.Generation, Devices: 2 * trn2.Devices, Nodes: 2, Kind: trn2.Kind},
			runs: []streamRun{{enc.AllReduce, enc.Hier, 128 << 10}, {enc.AllGather, enc.Hier, 128 << 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.long && testing.Short() {
				t.Skip("a system of 16 or more devices, functional")
			}
			opt := tc.cfg.CollectiveOptions(enc.Options{})
			cfg := tc.cfg
			cfg.TimingOnly = !tc.functional
			for _, r := range tc.runs {
				need, err := cluster.BufferNeed(r.op, r.algo, cfg.Devices, enc.Float32, []int64{r.size}, opt)
				require.NoError(t, err)
				cfg.BufferBytes = max(cfg.BufferBytes, need)
			}
			var got [2][]observed
			for i, staged := range []bool{false, true} {
				c, err := cluster.New(cfg)
				require.NoError(t, err)
				c.Exec.Staged = staged
				if tc.engines > 0 {
					c.Exec.Engines = tc.engines
				}
				require.True(t, c.Devices[0].DMA.Lazy(), "the simulated devices have lazy host memory")
				var clean collective.Result
				var staging sim.Time
				for k, r := range tc.runs {
					s, err := enc.Build(r.op, r.algo, c.Ranks(), r.size, 4, opt)
					require.NoError(t, err)
					if tc.linkDown && k == len(tc.runs)-1 {
						// In the middle of the run, as the first one went.
						c.Exec.Timeout = 2 * time.Millisecond
						id, ok := c.System.LinkBetween(5, c.System.Topology().Devices)
						require.True(t, ok)
						at := c.System.Now() + staging/2 + sim.Time(clean.TimePS/2)
						require.NoError(t, c.System.ScheduleFault(fabric.Fault{At: at, Kind: fabric.LinkDown, Link: id}))
					}
					start := c.System.Now()
					o := observe(t, c, s, opt, tc.functional)
					if k < len(tc.runs)-1 || !tc.linkDown {
						require.Empty(t, o.Err, "run %d", k)
					}
					clean, staging = o.Res, o.Now-start-sim.Time(o.Res.TimePS)
					got[i] = append(got[i], o)
				}
			}
			for k := range tc.runs {
				stream, staged := got[0][k], got[1][k]
				assert.Equal(t, staged.Res, stream.Res, "run %d: result", k)
				assert.Equal(t, staged.Err, stream.Err, "run %d: error", k)
				assert.Equal(t, staged.Out, stream.Out, "run %d: outputs", k)
				assert.Equal(t, staged.Now, stream.Now, "run %d: clock", k)
				assert.Equal(t, staged.DMA, stream.DMA, "run %d: DMA totals", k)
				assert.Equal(t, staged.Devices, stream.Devices, "run %d: devices' counters", k)
				assert.Equal(t, staged.Stats, stream.Stats, "run %d: fabric statistics", k)
				assert.Equal(t, staged.Counters, stream.Counters, "run %d: link counters", k)
				assert.Positive(t, stream.Res.Descriptors, "run %d", k)
			}
			if tc.linkDown {
				last := got[0][len(tc.runs)-1]
				assert.Contains(t, last.Err, "halted")
				assert.Contains(t, last.Err, "links down")
			}
		})
	}
}

// TestSwitchingPaths: one cluster runs a collective streamed, staged and
// streamed again — each path giving back the other's queues — with the
// same result each time, and Release then frees every queue.
func TestSwitchingPaths(t *testing.T) {
	s, err := enc.Build(enc.AllReduce, enc.Ring, 8, 1<<20, 4, enc.Options{})
	require.NoError(t, err)
	c, err := cluster.New(cluster.Config{Generation: hwarch.Mariana, Devices: 8, Switch: hwarch.SwitchV1, TimingOnly: true,
		BufferBytes: collective.LayoutOf(s, 0).End})
	require.NoError(t, err)
	var first collective.Result
	for i, staged := range []bool{false, true, false, false} {
		c.Exec.Staged = staged
		res, err := c.Run(s, enc.Float32)
		require.NoError(t, err, "run %d", i)
		if i == 0 {
			first = res
		}
		assert.Equal(t, first, res, "run %d (staged %v)", i, staged)
	}
	c.Exec.Release()
	for i := range c.Devices {
		intact, err := c.Devices[i].DMA.QueuesIntact()
		require.NoError(t, err)
		assert.True(t, intact, "device %d", i)
	}
}

// TestRunsGiveBackProgramMemory: every run's SP programs hold device
// memory only while it runs, so that a sweep of many sizes on one system
// holds what its largest needs, not the sum of them all (each run's
// programs were left allocated: megabytes a rank a run at a thousand
// ranks, and resident pages of the host).
func TestRunsGiveBackProgramMemory(t *testing.T) {
	c := newTimingCluster(t, hwarch.Mariana, 4, fabric.KindSwitch, nil, 16<<20)
	used := func() []dmem.ChannelStats {
		var all []dmem.ChannelStats
		for i := range c.Devices {
			r, err := c.Runner(i, 0)
			require.NoError(t, err)
			all = append(all, r.Mem.Stats()...)
		}
		return all
	}
	before := used()
	for _, tc := range []struct {
		algo enc.Algo
		size int64
	}{{enc.Ring, 1 << 20}, {enc.RDH, 4 << 20}, {enc.Ring, 8 << 20}, {enc.Ring, 1 << 20}} {
		runTime(t, c, enc.AllReduce, tc.algo, tc.size)
		assert.Equal(t, before, used(), "device memory after a %s all-reduce of %d bytes", tc.algo, tc.size)
	}
}

// TestFailedRunGivesBackProgramMemoryOnRelease: a run that gives up while
// its collective is still running keeps the programs' device memory (the
// engines still fetch from it); Release gives it back once they have
// stopped, and a later run on the same engines once it has ended.
func TestFailedRunGivesBackProgramMemoryOnRelease(t *testing.T) {
	c := newTimingCluster(t, hwarch.Mariana, 4, fabric.KindSwitch, nil, 16<<20)
	used := func() (blocks int) {
		for i := range c.Devices {
			r, err := c.Runner(i, 0)
			require.NoError(t, err)
			for _, st := range r.Mem.Stats() {
				blocks += st.Blocks
			}
		}
		return blocks
	}
	before := used()
	s, err := enc.Build(enc.AllReduce, enc.Ring, 4, 8<<20, 4, enc.Options{})
	require.NoError(t, err)
	c.Exec.Timeout = 5 * time.Microsecond // give up with the collective running
	_, err = c.Run(s, enc.Float32)
	require.ErrorIs(t, err, collective.ErrRun)
	assert.Greater(t, used(), before, "the running programs keep their memory")

	c.System.Advance(10 * sim.Millisecond) // the collective runs to its end
	c.Exec.Release()
	assert.Equal(t, before, used(), "stopped: Release gives them back")

	// Given up again, and its queues given back while it runs (as Recover
	// does): the programs wait for ever and Release keeps them; the next
	// run, on the same engines, gives them back.
	_, err = c.Run(s, enc.Float32)
	require.ErrorIs(t, err, collective.ErrRun)
	c.Exec.Release()
	c.System.Advance(10 * sim.Millisecond)
	c.Exec.Release()
	assert.Greater(t, used(), before, "waiting for ever: kept")
	c.Exec.Timeout = 0
	runTime(t, c, enc.AllReduce, enc.Ring, 1<<20)
	assert.Equal(t, before, used(), "superseded by a run that ended: given back")
}
