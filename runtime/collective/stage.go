package collective

import (
	"fmt"

	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// ringSize returns a ring length that holds n descriptors and one more (a
// ring whose tail meets its head is empty): a power of two, at least
// udma.MinRing. A ring holds every descriptor of its queue in a run, so a
// queue of more than udma.MaxRing's is refused.
func ringSize(n int) (uint32, error) {
	c := uint64(udma.MinRing)
	for c < uint64(n)+1 {
		c *= 2
	}
	if c > udma.MaxRing {
		return 0, fmt.Errorf("%d descriptor pairs on one queue: its ring would need %d descriptors, past the %d a ring holds: %w",
			n, c, udma.MaxRing, ErrRun)
	}
	return uint32(c), nil
}

// placeFunc makes the queue of key ready with v's descriptors — those of
// the control queue (ctl) or of a data engine's collectives queue — and
// returns how many it holds. A queue it opens is named name(): the name is
// made only then, not at every run.
type placeFunc func(key [2]int, name func() string, eng, q int, v *dma.Vring) (int, error)

// stage zeroes a rank's collective semaphores, has place make each of its
// queues that has descriptors ready, and writes its control word. It
// returns the descriptor pairs placed.
func (x *Executor) stage(r int, p rankPlan, place placeFunc) (int, error) {
	run := x.Ranks[r].Runner
	up, m := run.Dev, run.DMA
	b := up.Geometry.BAR0
	for _, sem := range rankSems(p.credits) {
		if err := up.CSR.Write(semVA(run, b.SemSetOffset, sem), 0); err != nil {
			return 0, fmt.Errorf("enc: rank %d semaphore %d: %w", r, sem, err)
		}
	}
	if x.queues == nil {
		x.queues = map[[2]int]*dma.Queue{}
	}
	engs := x.engines(r)
	total := 0
	put := func(eng, q int, v *dma.Vring) error {
		if v.Descriptors() == 0 {
			return nil
		}
		name := func() string { return fmt.Sprintf("cc.r%d.e%d.q%d", r, eng, q) }
		n, err := place([2]int{r, eng<<8 | q}, name, eng, q, v)
		total += n
		if err != nil {
			return fmt.Errorf("enc: rank %d: %w", r, err)
		}
		return nil
	}
	if err := put(x.controlEngine(r, engs), ControlQueue, p.ctl); err != nil {
		return 0, err
	}
	for j, v := range p.vr {
		if err := put(engs[j], CollectiveQueue, v); err != nil {
			return 0, err
		}
	}
	one := []byte{1, 0, 0, 0}
	if err := m.WriteDevice(LayoutOf(&enc.Schedule{}, x.Ranks[r].Base).Ones, one); err != nil {
		return 0, fmt.Errorf("enc: rank %d control word: %w", r, err)
	}
	return total, nil
}

// stageDumped stages rank r for a staged run: its descriptors dumped into
// its queues' rings.
func (x *Executor) stageDumped(r int, p rankPlan) (int, error) {
	m := x.Ranks[r].Runner.DMA
	return x.stage(r, p, func(key [2]int, name func() string, eng, q int, v *dma.Vring) (int, error) {
		qu, err := x.queueFor(key, v.Descriptors(), false, func(size uint32) (*dma.Queue, error) {
			return m.OpenQueue(name(), eng, q, size)
		})
		if err != nil {
			return 0, err
		}
		return qu.Dump(v)
	})
}

// stageFed stages rank r for a streamed run: p is its first pass's plan
// (counting vrings), fed the second pass's, whose vrings the fed queues
// take their descriptors from, more planning further. Each queue is fed
// as many pairs as the first pass counted.
func (x *Executor) stageFed(r int, p, fed rankPlan, more func() (bool, error)) (int, error) {
	m := x.Ranks[r].Runner.DMA
	// feedOf is the second pass's vring of the first pass's v: the control
	// queue's, or the same engine's.
	feedOf := func(v *dma.Vring) *dma.Vring {
		for j, c := range p.vr {
			if c == v {
				return fed.vr[j]
			}
		}
		return fed.ctl
	}
	return x.stage(r, p, func(key [2]int, name func() string, eng, q int, v *dma.Vring) (int, error) {
		n := v.Descriptors()
		qu, err := x.queueFor(key, n, true, func(size uint32) (*dma.Queue, error) {
			return m.OpenFedQueue(name(), eng, q, size)
		})
		if err != nil {
			return 0, err
		}
		fv := feedOf(v)
		fv.Grow(min(n, fedPresize))
		if err := qu.Feed(dma.Feed{Vring: fv, More: more}, n); err != nil {
			return 0, err
		}
		return n, nil
	})
}

// fedPresize is the most descriptor pairs a fed queue's vring is grown to
// before its run (the first pass's count, when smaller): what one holds
// in flight — at most 138 planned and not yet read on any queue of a 1 GiB
// ring all-reduce on 144 devices, and the last 64 read — fits without its
// array growing pair by pair, run after run (12 KiB a queue, within
// the 32 KiB internal/cluster's memory estimate counts for one).
const fedPresize = 512

// queueFor returns the queue of key for a run that puts n descriptor pairs
// on it: the one an earlier run left, when its ring holds them, it is
// neither halted nor busy and it is of the kind asked for (fed or
// written); else one opened afresh with a ring that holds them (open), the
// earlier one given back. Staged and streamed runs take the same decisions
// with the same register accesses, so that a run starts at the same device
// time either way.
func (x *Executor) queueFor(key [2]int, n int, fed bool, open func(size uint32) (*dma.Queue, error)) (*dma.Queue, error) {
	need, err := ringSize(n)
	if err != nil {
		return nil, err
	}
	qu := x.queues[key]
	if qu != nil {
		// A queue left halted (or holding descriptors) by a failed run,
		// too small, or of the other kind, is given back and opened afresh.
		st, err := qu.Status()
		if err != nil {
			return nil, err
		}
		if st&(udma.StatusHalted|udma.StatusBusy) != 0 || qu.Fed() != fed || qu.Count() < need {
			if err := qu.Close(); err != nil {
				return nil, err
			}
			delete(x.queues, key)
			qu = nil
		}
	}
	if qu == nil {
		if qu, err = open(need); err != nil {
			return nil, err
		}
		x.queues[key] = qu
	}
	return qu, nil
}

// unfeed lets go of every fed queue's feed once a streamed run has
// succeeded: the second pass's planner and what it holds go with it. The fed rings
// stay (lazy buffers hold no bytes) for the next streamed run to feed
// again, until Release.
func (x *Executor) unfeed() {
	for _, qu := range x.queues {
		qu.Unfeed()
	}
}
