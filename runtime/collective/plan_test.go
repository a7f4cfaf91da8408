package collective

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/program"
)

// TestPlanModesAgree: the one planner in its three modes plans the same
// run — the staged run's descriptors and programs (planAll), the streamed
// run's first pass (planPrograms: the same programs, byte for byte, and
// every queue's count and bytes in counting vrings) and its second
// (planDescriptors, stage by stage: the same descriptors per queue and no
// program) — over the algorithms and the inter-RDH engines.
func TestPlanModesAgree(t *testing.T) {
	geo := hwarch.MustGeometry(hwarch.Mariana)
	for _, tc := range []struct {
		op    enc.Op
		algo  enc.Algo
		ranks int
		size  int64
	}{
		{enc.AllReduce, enc.Ring, 4, 1 << 20},
		{enc.AllReduce, enc.RDH, 8, 1 << 20},
		{enc.AllGather, enc.Mesh, 4, 96 << 10},
		{enc.ReduceScatter, enc.Ring, 3, 60},
	} {
		t.Run(fmt.Sprintf("%s/%s/%d/%d", tc.op, tc.algo, tc.ranks, tc.size), func(t *testing.T) {
			ranks := make([]Rank, tc.ranks)
			for d := range ranks {
				ranks[d] = Rank{Device: d, Base: 1 << 20, Runner: &program.Runner{Dev: &bringup.Device{Geometry: geo}}}
			}
			x := &Executor{Ranks: ranks, Engines: 7, InterRDH: []int{4, 5}, InterRDHFolds: 2}
			s, err := enc.Build(tc.op, tc.algo, tc.ranks, tc.size, 4, enc.Options{})
			require.NoError(t, err)
			all, err := x.plan(s, enc.Float32, planAll)
			require.NoError(t, err)
			counted, err := x.plan(s, enc.Float32, planPrograms)
			require.NoError(t, err)
			fed := x.newPlanner(s, enc.Float32, planDescriptors)
			stages := 0
			for more := true; more; stages++ {
				more, err = fed.next()
				require.NoError(t, err)
			}
			assert.Equal(t, len(s.Steps)+2, stages, "release, the steps, the finish")
			more, err := fed.next()
			require.NoError(t, err)
			assert.False(t, more, "nothing after the finish")
			for r := range all {
				require.NotEmpty(t, all[r].prog)
				assert.Equal(t, all[r].prog, counted[r].prog, "rank %d program", r)
				assert.Empty(t, fed.plans[r].prog, "rank %d", r)
				vrings := func(p rankPlan) [][2]uint64 {
					var out [][2]uint64
					for _, v := range append(p.vr, p.ctl) {
						out = append(out, [2]uint64{uint64(v.Descriptors()), v.Bytes()})
					}
					return out
				}
				assert.Equal(t, vrings(all[r]), vrings(counted[r]), "rank %d counts", r)
				assert.Equal(t, vrings(all[r]), vrings(fed.plans[r]), "rank %d descriptors", r)
			}
		})
	}
}

// TestRingSize: a ring holds its queue's descriptors and one more, a power
// of two from udma.MinRing; a queue a ring cannot hold is refused.
func TestRingSize(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want uint32
		ok   bool
	}{{0, 32, true}, {31, 32, true}, {32, 64, true}, {1<<23 - 1, 1 << 23, true}, {1 << 23, 0, false}, {1 << 40, 0, false}} {
		got, err := ringSize(tc.n)
		if !tc.ok {
			assert.ErrorIs(t, err, ErrRun, "%d", tc.n)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%d", tc.n)
	}
}

// TestTakeRange: a wait takes what it waited for (its signal slot
// decrements the semaphore by the wait's value), up to what a record's
// wait value holds; a wait for more is ErrSemaphoreRange naming the rank,
// the count and the semaphore, and adds no record.
func TestTakeRange(t *testing.T) {
	geo := hwarch.MustGeometry(hwarch.Mariana)
	ranks := []Rank{{Device: 0, Runner: &program.Runner{Dev: &bringup.Device{Geometry: geo}}}, {Device: 1, Runner: &program.Runner{Dev: &bringup.Device{Geometry: geo}}}}
	x := &Executor{Ranks: ranks}
	s, err := enc.Build(enc.AllReduce, enc.Ring, 2, 1<<10, 4, enc.Options{})
	require.NoError(t, err)
	p := x.newPlanner(s, enc.Float32, planPrograms)
	p.take(1, SemArrivals, maxSemValue)
	require.NoError(t, p.err)
	require.Len(t, p.plans[1].prog, isa.RecordSize)
	rec, err := isa.Decode(p.plans[1].prog)
	require.NoError(t, err)
	assert.Equal(t, isa.Sync{Mode: isa.WaitSemGE, Index: SemArrivals, Value: maxSemValue}, rec.Wait)
	assert.Equal(t, isa.Sync{Mode: isa.SignalSemDecr, Index: SemArrivals, Value: maxSemValue}, rec.Signal)

	p.take(1, SemCredits, maxSemValue+1)
	require.ErrorIs(t, p.err, ErrSemaphoreRange)
	assert.EqualError(t, p.err, "rank 1 would wait for 65536 counts of semaphore 251 at once (at most 65535): "+ErrSemaphoreRange.Error())
	assert.Len(t, p.plans[1].prog, isa.RecordSize, "no record for the refused wait")
}

// TestCreditSemaphores: a rank counts the credits of the steps that write
// to one set of ranks in one semaphore (CreditSem by the order the sets
// first occur, whatever the order of the set's transfers), and those of
// another set in another: a ring's every step in SemCredits, a 16-rank
// recursive-halving reduce-scatter's four partners in four. The
// semaphores are distinct and none is another collective semaphore; a
// rank whose steps write to more sets than there are semaphores is
// ErrSemaphoreRange, naming the rank and the count.
func TestCreditSemaphores(t *testing.T) {
	seen := map[int]bool{}
	for i := range MaxCreditSets {
		sem := CreditSem(i)
		require.True(t, sem >= 0 && sem < 256, "set %d: semaphore %d", i, sem)
		require.False(t, seen[sem], "set %d: semaphore %d twice", i, sem)
		seen[sem] = true
		if i > 0 {
			assert.NotContains(t, collectiveSems, sem, "set %d", i)
		}
	}
	assert.Equal(t, SemCredits, CreditSem(0))
	assert.Equal(t, -1, CreditSem(MaxCreditSets))

	geo := hwarch.MustGeometry(hwarch.Mariana)
	newExecutor := func(n int) *Executor {
		ranks := make([]Rank, n)
		for d := range ranks {
			ranks[d] = Rank{Device: d, Base: 1 << 20, Runner: &program.Runner{Dev: &bringup.Device{Geometry: geo}}}
		}
		return &Executor{Ranks: ranks, Engines: 7, InterRDH: []int{4, 5}, InterRDHFolds: 2}
	}
	for _, tc := range []struct {
		op      enc.Op
		algo    enc.Algo
		ranks   int
		credits int // every rank's
	}{
		{enc.AllReduce, enc.Ring, 8, 1},
		{enc.ReduceScatter, enc.RDH, 16, 4},
		{enc.AllReduce, enc.RDH, 8, 3}, // the all-gather's partners are the reduce-scatter's
	} {
		x := newExecutor(tc.ranks)
		s, err := enc.Build(tc.op, tc.algo, tc.ranks, 1<<20, 4, enc.Options{})
		require.NoError(t, err)
		plans, err := x.plan(s, enc.Float32, planPrograms)
		require.NoError(t, err)
		for r, pl := range plans {
			assert.Equal(t, tc.credits, pl.credits, "%s %s: rank %d", tc.op, tc.algo, r)
		}
	}

	x := newExecutor(2)
	s, err := enc.Build(enc.AllReduce, enc.Ring, 2, 1<<10, 4, enc.Options{})
	require.NoError(t, err)
	p := x.newPlanner(s, enc.Float32, planPrograms)
	assert.Equal(t, SemCredits, p.creditSem(0, []int{5, 3}))
	assert.Equal(t, CreditSem(1), p.creditSem(0, []int{7}))
	assert.Equal(t, SemCredits, p.creditSem(0, []int{3, 5}), "the same set, in another order")
	assert.Equal(t, CreditSem(1), p.creditSem(0, []int{7}))
	assert.Equal(t, SemCredits, p.creditSem(0, nil), "a rank that writes to none waits for no credit")
	for k := 2; k < MaxCreditSets; k++ {
		p.creditSem(0, []int{1000 + k})
	}
	require.NoError(t, p.err)
	assert.Equal(t, MaxCreditSets, p.plans[0].credits)
	p.creditSem(0, []int{99999})
	require.ErrorIs(t, p.err, ErrSemaphoreRange)
	assert.EqualError(t, p.err, fmt.Sprintf("rank 0 writes to %d different sets of ranks over the schedule's steps, each counting its credits in a semaphore of its own (at most %d): %s",
		MaxCreditSets+1, MaxCreditSets, ErrSemaphoreRange))
}

// TestControlQueueOwnEngine: a rank's control queue (go, credit and finish
// writes) is on the last engine of its NeuronCore while its transfers
// leave that one free — the calibrated engines, with the inter-RDH ones
// beyond them — so that rank 0's releases wait behind none of its data;
// with every engine of the NeuronCore taking data it is on the first.
// (The time this saves is internal/cluster's TestControlQueueOwnEngine.)
func TestControlQueueOwnEngine(t *testing.T) {
	geo := hwarch.MustGeometry(hwarch.Mariana)
	for _, tc := range []struct {
		engines, nc, want int
	}{
		{5, 0, 15}, {5, 1, 31}, {1, 0, 15}, {15, 0, 15}, {15, 1, 31},
		{16, 0, 0}, {16, 1, 16}, {0, 1, 16}, // 0: every engine
	} {
		ranks := []Rank{{Device: 0, Base: 1 << 20, Runner: &program.Runner{NC: tc.nc, Dev: &bringup.Device{Geometry: geo}}}}
		x := &Executor{Ranks: ranks, Engines: tc.engines, InterRDH: []int{4, 5}, InterRDHFolds: 2}
		assert.Equal(t, tc.want, x.controlEngine(0, x.engines(0)), "engines %d, NC %d", tc.engines, tc.nc)
		if tc.want%geo.DMAEnginesPerNC == geo.DMAEnginesPerNC-1 {
			assert.NotContains(t, x.engines(0), x.controlEngine(0, x.engines(0)), "engines %d: no data engine", tc.engines)
		}
	}
}
