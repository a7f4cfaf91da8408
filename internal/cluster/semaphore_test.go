package cluster_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestSemaphoresSettle: every wait of a collective's SP programs takes
// what it waited for, so a run that succeeded leaves every rank's
// collective semaphores at zero — Run checks it (Executor.Settled), over
// ring, RDH, mesh and hierarchical collectives, functional, on the Trn2
// torus and two EFA nodes — and a count left over (a write no wait took)
// is ErrRun naming the rank and the semaphore.
func TestSemaphoresSettle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 16- and 32-device systems")
	}
	const size = 256 << 10
	torus := func(t *testing.T) (*cluster.Cluster, enc.Options) {
		c, err := cluster.New(cluster.Config{Generation: hwarch.Cayman, Devices: 16, BufferBytes: 4 * size})
		require.NoError(t, err)
		return c, enc.Options{}
	}
	efa := func(t *testing.T) (*cluster.Cluster, enc.Options) {
		c, cfg := efaCluster(t, "trn2-48xl", 2, false, 4*size)
		return c, cfg.CollectiveOptions(enc.Options{})
	}
	for _, tc := range []struct {
		name     string
		build    func(t *testing.T) (*cluster.Cluster, enc.Options)
		op       enc.Op
		algo     enc.Algo
		channels int
	}{
		{"torus/ring", torus, enc.AllReduce, enc.Ring, 0},
		{"torus/rdh", torus, enc.AllReduce, enc.RDH, 0},
		{"torus/mesh", torus, enc.AllGather, enc.Mesh, 0},
		{"efa/hier", efa, enc.AllReduce, enc.Hier, 0},
		{"efa/ring-channels", efa, enc.ReduceScatter, enc.Ring, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, opt := tc.build(t)
			opt.Channels = tc.channels
			s, err := enc.Build(tc.op, tc.algo, c.Ranks(), size, 4, opt)
			require.NoError(t, err)
			_, err = c.Check(s, enc.Float32, 3, opt)
			require.NoError(t, err, "a run that succeeded has settled")
			require.NoError(t, c.Exec.Settled(s))

			// One count more on the last rank's arrivals: a write no wait took.
			last := c.Ranks() - 1
			run := c.Exec.Ranks[last].Runner
			b := run.Dev.Geometry.BAR0
			require.NoError(t, run.Dev.CSR.Write(run.Dev.VA(b.TPBWindow(run.NC)+b.SemIncrOffset+4*collective.SemArrivals), 1))
			err = c.Exec.Settled(s)
			require.ErrorIs(t, err, collective.ErrRun)
			assert.ErrorContains(t, err, "semaphore 249 is 1 after the run")
			assert.ErrorContains(t, err, fmt.Sprintf("rank %d (device %d)", last, c.Exec.Ranks[last].Device))

			// The next run starts from zeroed semaphores and settles again.
			_, err = c.Run(s, enc.Float32)
			require.NoError(t, err)
		})
	}
}

// TestLongScheduleRuns: a schedule whose waits add up to more counts of
// one semaphore than a record's wait value holds (65,535) runs, each wait
// taking only what one step counted: a 2-rank ring all-reduce in 32,768
// chunks, of which 65,536 steps bring each rank at least one slice — a
// cumulative count, as the programs waited for before, would not fit.
func TestLongScheduleRuns(t *testing.T) {
	skipLarge(t, "32,768 ring steps")
	const chunks, size = 1 << 15, 16 << 20
	opt := enc.Options{Chunks: chunks}
	need, err := cluster.BufferNeed(enc.AllReduce, enc.Ring, 2, enc.Float32, []int64{size}, opt)
	require.NoError(t, err)
	c, err := cluster.New(cluster.Config{Generation: hwarch.Mariana, Devices: 2, Switch: hwarch.SwitchV1, Kind: fabric.KindSwitch,
		TimingOnly: true, BufferBytes: need, WhatIf: true})
	require.NoError(t, err)
	s, err := enc.Build(enc.AllReduce, enc.Ring, 2, size, 4, opt)
	require.NoError(t, err)
	into := 0 // the transfers rank 0 receives from rank 1
	for _, st := range s.Steps {
		for _, xf := range st.Xfers {
			if xf.Src == 1 && xf.Dst == 0 {
				into++
			}
		}
	}
	require.Greater(t, into, 65535, "rank 0's arrivals over the run pass one wait's width")
	_, err = c.Run(s, enc.Float32)
	require.NoError(t, err)
}

// TestCreditsCountedBySet: a rank counts the credits of the steps that
// write to one set of ranks in a semaphore of their own
// (collective.CreditSem), so that a credit sent early by a rank it writes
// to only in a later step is not taken for the credit of the step it is
// in. With one credit semaphore, a recursive-halving reduce-scatter of
// 1 MiB on 8 Trn1 devices of 2 ranks each lost rank 0's share of rank
// 12's block: rank 14, rank 12's partner only in step 3, raced ahead and
// its credit for that step landed in rank 12 before rank 8's for step 2;
// rank 12 took it, wrote into rank 8 while rank 8 was still in step 1,
// those arrivals counted toward rank 8's step-1 wait, and rank 8 read
// block 12 for rank 12 before rank 0's reduction into it had landed (got
// −39.94, want −32.34 at element 0). Every credit semaphore a plan counts in is zeroed before
// the run and checked after it (Executor.Settled).
func TestCreditsCountedBySet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a functional collective on 8 devices")
	}
	const size = 1 << 20
	c, err := cluster.New(cluster.Config{Generation: hwarch.Sunda, Devices: 8, RanksPerDevice: 2, BufferBytes: 4 * size})
	require.NoError(t, err)
	s, err := enc.Build(enc.ReduceScatter, enc.RDH, c.Ranks(), size, 4, enc.Options{})
	require.NoError(t, err)
	for _, seed := range []uint64{1, 2} {
		_, err = c.Check(s, enc.Float32, seed, enc.Options{})
		require.NoError(t, err, "seed %d", seed)
	}
	// Rank 12's steps write to four sets of ranks (one partner each):
	// its fourth set's credits count in semaphore CreditSem(3).
	const rank = 12
	sem := collective.CreditSem(3)
	require.Equal(t, collective.SemGo-3, sem)
	run := c.Exec.Ranks[rank].Runner
	b := run.Dev.Geometry.BAR0
	require.NoError(t, run.Dev.CSR.Write(run.Dev.VA(b.TPBWindow(run.NC)+b.SemIncrOffset+4*uint64(sem)), 1))
	err = c.Exec.Settled(s)
	require.ErrorIs(t, err, collective.ErrRun)
	assert.ErrorContains(t, err, fmt.Sprintf("semaphore %d is 1 after the run", sem))
	_, err = c.Run(s, enc.Float32)
	require.NoError(t, err, "the next run zeroes it")
}
