package dma

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/bringup"
)

// testPairs adds n pairs to v, of lengths 4 to 240 and some reducing.
func testPairs(t *testing.T, v *Vring, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		r := udma.Reduce{}
		if i%3 == 0 {
			r = udma.Reduce{Op: udma.ReduceAdd, Dtype: 4} // any valid reduce word
		}
		require.NoError(t, v.AddReduce(uint64(0x1000+i*256), uint64(0x9000_0000+i*256), uint64(4+i%60*4), r))
	}
}

// stepFeed is a planner of steps of perStep pairs, steps of them in all.
type stepFeed struct {
	t              *testing.T
	v              *Vring
	perStep, steps int
	planned, calls int
	fail           error
}

func (s *stepFeed) more() (bool, error) {
	s.calls++
	if s.fail != nil {
		return false, s.fail
	}
	if s.planned == s.steps {
		return false, nil
	}
	testPairs(s.t, s.v, s.planned*s.perStep, s.perStep)
	s.planned++
	return s.planned < s.steps, nil
}

// bursts returns the byte ranges a reader of a ring of count descriptors
// reads from slot from on, once round, in reads of burst bytes that never
// cross the ring's end.
func bursts(count, from, burst int) [][2]int {
	var out [][2]int
	size := count * udma.DescriptorSize
	for _, seg := range [][2]int{{from * udma.DescriptorSize, size}, {0, from * udma.DescriptorSize}} {
		for at := seg[0]; at < seg[1]; at += burst {
			out = append(out, [2]int{at, min(at+burst, seg[1])})
		}
	}
	return out
}

// TestFedRingsMatchDump: a fed queue's rings read once round in bursts from
// the slot its feed starts at — the S2M half a burst behind the M2S half —
// hold exactly the bytes Dump writes for the same pairs from the same tail
// and phase (the phase turning where the ring wraps; slots outside the run
// read as zeros), while the planner is asked for steps only as the reads
// need them and the vring lets go of what was read, but for the last
// fedKeep pairs; reads of any alignment give the same bytes.
func TestFedRingsMatchDump(t *testing.T) {
	const perStep, steps, count = 37, 40, 2048
	total := perStep * steps
	for _, tc := range []struct {
		name  string
		burst int // bytes per read
		tail  int
		phase uint8
	}{
		{"bursts of 16 from 0", 16 * udma.DescriptorSize, 0, udma.FirstRingID},
		{"bursts of 16, wrapping", 16 * udma.DescriptorSize, count - 1000, 3},
		{"single descriptors", udma.DescriptorSize, 500, 0},
		{"unaligned, wrapping", 5*udma.DescriptorSize + 7, count - 333, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What Dump writes.
			want := [2][]byte{}
			for h := range want {
				host := &flatHost{mem: make([]byte, count*udma.DescriptorSize)}
				qu := &Queue{m: &DMA{host: host}, Name: "q"}
				v := NewVring("v")
				testPairs(t, v, 0, total)
				require.NoError(t, qu.fill(&ring{count: count, tail: uint32(tc.tail), phase: tc.phase}, v, h == 0))
				want[h] = host.mem
			}
			feed := &stepFeed{t: t, v: NewVring("fed"), perStep: perStep, steps: steps}
			f := &fedRings{feed: Feed{Vring: feed.v, More: feed.more}, count: count, start: uint32(tc.tail), phase: tc.phase, pairs: uint32(total)}
			fills := [2]func(uint64, []byte) error{f.fill("q", true), f.fill("q", false)}
			got := [2][]byte{make([]byte, count*udma.DescriptorSize), make([]byte, count*udma.DescriptorSize)}
			reads := bursts(count, tc.tail, tc.burst)
			maxHeld, readBytes := 0, 0
			for i := range len(reads) + 1 {
				for h, k := range []int{i, i - 1} { // the S2M half a burst behind
					if k < 0 || k >= len(reads) {
						continue
					}
					b := reads[k]
					require.NoError(t, fills[h](uint64(b[0]), got[h][b[0]:b[1]]), "half %d at %d", h, b[0])
				}
				maxHeld = max(maxHeld, len(feed.v.live()))
				if i < len(reads) {
					// Never planned more than a step past what was read.
					readBytes += reads[i][1] - reads[i][0]
					read := readBytes/udma.DescriptorSize + 1
					assert.LessOrEqual(t, feed.planned*perStep, max(min(read, total)+perStep, perStep), "read %d", i)
				}
			}
			assert.True(t, bytes.Equal(want[0], got[0]), "M2S ring")
			assert.True(t, bytes.Equal(want[1], got[1]), "S2M ring")
			assert.Equal(t, steps, feed.planned)
			assert.LessOrEqual(t, maxHeld, 2*(fedKeep+perStep+2*tc.burst/udma.DescriptorSize+2)+minCompact, "pairs held at most")
		})
	}
}

// TestFedRingsRefuse: a fed ring refuses a slot read after it was let go,
// naming the queue and the slot; a planner that fails or ends before the
// pairs declared fails the read, naming the queue — each ErrFed.
func TestFedRingsRefuse(t *testing.T) {
	plannerDown := errors.New("planner down")
	for _, tc := range []struct {
		name  string
		fed   uint32
		fail  error
		reads []uint64 // slots read in turn, each by both halves; the last one fails
		want  string
	}{
		{"let go", 2000, nil, []uint64{0, 500, 1000, 100}, `fed queue "q": pair 100 read after it was let go`},
		{"planner fails", 2000, plannerDown, []uint64{0}, `fed queue "q": planning pair 0: planner down`},
		{"planner ends short", 2000, nil, []uint64{1500}, `fed queue "q": the planner ended at 1480 pairs, 2000 fed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			feed := &stepFeed{t: t, v: NewVring("fed"), perStep: 37, steps: 40, fail: tc.fail}
			f := &fedRings{feed: Feed{Vring: feed.v, More: feed.more}, count: 4096, phase: udma.FirstRingID, pairs: tc.fed}
			var err error
			for i, slot := range tc.reads {
				buf := make([]byte, 16*udma.DescriptorSize)
				err = f.produce("q", 0, slot*udma.DescriptorSize, buf)
				if err == nil {
					err = f.produce("q", 1, slot*udma.DescriptorSize, buf)
				}
				if i < len(tc.reads)-1 {
					require.NoError(t, err, "read %d", i)
				}
			}
			require.ErrorIs(t, err, ErrFed)
			assert.ErrorContains(t, err, tc.want)
			if tc.fail != nil {
				assert.ErrorIs(t, err, tc.fail)
			}
		})
	}
}

// TestVringDropBefore: pairs let go leave the numbering and the pairs
// still held as they were, and the array is compacted once half of it is
// let go, so a vring fed and read forever holds about what is in flight.
func TestVringDropBefore(t *testing.T) {
	v := NewVring("v")
	ref := NewVring("ref")
	testPairs(t, ref, 0, 5000)
	maxLen := 0
	for step := 0; step < 50; step++ {
		testPairs(t, v, step*100, 100)
		v.DropBefore(step*100 - 150)
		v.DropBefore(v.Dropped() - 5) // behind what was let go: nothing
		maxLen = max(maxLen, len(v.pairs))
		held, ok := v.held(v.Dropped(), v.Descriptors())
		require.True(t, ok)
		want, _ := ref.held(v.Dropped(), v.Descriptors())
		require.Equal(t, want, held, "step %d", step)
		assert.Equal(t, (step+1)*100, v.Descriptors())
		assert.Equal(t, max(0, step*100-150), v.Dropped())
	}
	assert.LessOrEqual(t, maxLen, 2*(minCompact+250))
	v.DropBefore(1 << 30) // past every pair: all let go, none not added
	assert.Equal(t, 5000, v.Dropped())
	_, ok := v.held(4999, 5000)
	assert.False(t, ok)
}

// TestCountingVring: a counting vring counts the pairs and bytes a vring
// would hold, refuses what a vring refuses, stores nothing, and is no
// dump.
func TestCountingVring(t *testing.T) {
	v, c := NewVring("v"), NewCountingVring("c")
	for _, w := range []*Vring{v, c} {
		require.NoError(t, w.AddTransfer(0x1000, 0x2000, 3*udma.MaxTransfer+5))
		require.NoError(t, w.AddEventAccel(0x100, 0x200))
		require.NoError(t, w.AddReduce(0x1000, 0x2000, 64, udma.Reduce{Op: udma.ReduceAdd, Dtype: 4}))
		assert.Error(t, w.AddTransfer(1, 2, 0))
		assert.Error(t, w.AddEventAccel(2, 0x100))
		w.Grow(100)
	}
	assert.Equal(t, v.Descriptors(), c.Descriptors())
	assert.Equal(t, v.Bytes(), c.Bytes())
	assert.Empty(t, c.pairs)
	assert.Zero(t, cap(c.pairs))
	_, err := (&Queue{m: &DMA{host: &flatHost{}}, Name: "q"}).Dump(c)
	assert.ErrorContains(t, err, "only counts its pairs")
}

// TestOpenFedQueueNeedsLazyHostMemory: a backend without lazy host memory
// has no fed queue; a queue that is not fed takes no feed, a fed one no
// dump, and a fed ring with no feed refuses a read.
func TestOpenFedQueueNeedsLazyHostMemory(t *testing.T) {
	m := &DMA{dev: &bringup.Device{}, host: &flatHost{}}
	assert.False(t, m.Lazy())
	_, err := m.OpenFedQueue("q", 0, 0, 64)
	require.ErrorIs(t, err, ErrNoLazyHostMemory)
	plain := &Queue{m: m, Name: "plain"}
	assert.False(t, plain.Fed())
	require.ErrorIs(t, plain.Feed(Feed{Vring: NewVring("v"), More: func() (bool, error) { return false, nil }}, 1), ErrFed)
	fed := &Queue{m: m, Name: "fed", fed: &fedRings{count: 64}}
	assert.True(t, fed.Fed())
	_, err = fed.Dump(NewVring("v"))
	require.ErrorIs(t, err, ErrFed)
	require.ErrorIs(t, fed.Feed(Feed{}, 1), ErrFed)
	err = fed.fed.produce("fed", 0, 0, make([]byte, 16))
	require.ErrorIs(t, err, ErrFed)
	assert.ErrorContains(t, err, "no feed")
}
