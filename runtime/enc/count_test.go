package enc

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countedSteps runs Count and gathers what it visits into steps: by index
// in increasing order, each step's transfers sorted (sortedSteps).
func countedSteps(op Op, algo Algo, ranks int, size int64, elem int, opt Options) (*Schedule, int, error) {
	byStep := map[int][]Xfer{}
	head, n, err := Count(op, algo, ranks, size, elem, opt, func(st int, x Xfer) { byStep[st] = append(byStep[st], x) })
	if err != nil {
		return nil, n, err
	}
	if head.Steps != nil {
		return nil, n, fmt.Errorf("Count returned steps")
	}
	for _, st := range slices.Sorted(maps.Keys(byStep)) {
		head.Steps = append(head.Steps, Step{Xfers: byStep[st]})
	}
	head.Steps = sortedSteps(head.Steps)
	return head, n, nil
}

// sortedSteps returns the steps with each one's transfers in one order, so
// that two lists of the same transfers per step compare equal.
func sortedSteps(steps []Step) []Step {
	out := make([]Step, len(steps))
	for i, st := range steps {
		xs := slices.Clone(st.Xfers)
		slices.SortFunc(xs, func(a, b Xfer) int {
			return cmp.Or(cmp.Compare(a.Src, b.Src), cmp.Compare(a.Dst, b.Dst), cmp.Compare(a.SrcBuf, b.SrcBuf), cmp.Compare(a.DstBuf, b.DstBuf),
				cmp.Compare(a.SrcOff, b.SrcOff), cmp.Compare(a.DstOff, b.DstOff), cmp.Compare(a.Len, b.Len), cmp.Compare(fmt.Sprint(a.Reduce), fmt.Sprint(b.Reduce)))
		})
		out[i] = Step{Xfers: xs}
	}
	return out
}

// requireCountIsBuild checks that Count visits exactly the transfers of
// Build's schedule, step by step, and that the rest of the schedule it
// returns is Build's — or, for a request Build refuses, that Count refuses
// it with the same error.
func requireCountIsBuild(t *testing.T, op Op, algo Algo, ranks int, size int64, elem int, opt Options) {
	t.Helper()
	s, berr := Build(op, algo, ranks, size, elem, opt)
	counted, n, cerr := countedSteps(op, algo, ranks, size, elem, opt)
	if berr != nil {
		require.Error(t, cerr, "Build refuses it: %v", berr)
		require.Equal(t, berr.Error(), cerr.Error())
		return
	}
	require.NoError(t, cerr)
	want := *s
	want.Steps = sortedSteps(s.Steps)
	require.Equal(t, &want, counted, "the schedule but its steps' order")
	total := 0
	for _, st := range s.Steps {
		total += len(st.Xfers)
	}
	require.Equal(t, total, n)
}

// TestCountIsBuild: Count visits the transfers of the schedule Build
// returns, step for step, for every op and algorithm over the test matrix,
// with chunks and channels (TestBuildErrors: it refuses what Build refuses,
// with Build's error).
func TestCountIsBuild(t *testing.T) {
	for _, op := range allOps {
		for _, a := range allAlgos {
			for _, r := range rankSet {
				for _, opt := range []Options{{}, {Chunks: 3}, {GroupSize: hierGroup(r)}, {GroupSize: hierGroup(r), Channels: 2}} {
					t.Run(fmt.Sprintf("%v/%v/%d/%+v", op, a, r, opt), func(t *testing.T) {
						requireCountIsBuild(t, op, a, r, testSize(op, r, 4), 4, opt)
					})
				}
			}
		}
	}
	requireCountIsBuild(t, AllReduce, Ring, 32, 64<<20, 4, Options{GroupSize: 16, Channels: 8}) // a flat ring of 8 channels
	requireCountIsBuild(t, AllReduce, Ring, 8, 0, 4, Options{})                                 // size 0: no steps
}

// TestCountNilVisit: Count with no visit only counts.
func TestCountNilVisit(t *testing.T) {
	_, n, err := Count(AllReduce, Ring, 8, 8<<10, 4, Options{}, nil)
	require.NoError(t, err)
	assert.Equal(t, 3*7*8, n, "a ring all-reduce of r ranks holds 3(r−1)·r transfers (TestChannelledRingTransfers)")
}
