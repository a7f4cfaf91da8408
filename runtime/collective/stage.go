package collective

import (
	"fmt"

	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// ringSize returns a ring length that holds n descriptors: a multiple of
// 16, at least udma.MinRing.
func ringSize(n int) uint32 {
	c := uint32(udma.MinRing)
	for int(c) < n+1 {
		c *= 2
	}
	return c
}

// stage zeroes a rank's collective semaphores, writes its control word and
// dumps its descriptors into its queues (reopening a queue whose ring is too
// small). It returns the descriptor pairs dumped.
func (x *Executor) stage(r int, p rankPlan) (int, error) {
	run := x.Ranks[r].Runner
	up, m := run.Dev, run.DMA
	b := up.Geometry.BAR0
	for _, sem := range []int{SemGo, SemArrivals, SemDone, SemCredits, SemFinished} {
		if err := up.CSR.Write(up.VA(b.TPBWindow(run.NC)+b.SemSetOffset+4*uint64(sem)), 0); err != nil {
			return 0, fmt.Errorf("enc: rank %d semaphore %d: %w", r, sem, err)
		}
	}
	if x.queues == nil {
		x.queues, x.capacity = map[[2]int]*dma.Queue{}, map[[2]int]int{}
	}
	engs := x.engines(r)
	total := 0
	dump := func(eng, q int, v *dma.Vring) error {
		key := [2]int{r, eng<<8 | q}
		need := ringSize(v.Descriptors())
		qu := x.queues[key]
		if qu != nil {
			// A queue left halted (or holding descriptors) by a failed run,
			// or too small, is given back and opened afresh.
			st, err := qu.Status()
			if err != nil {
				return err
			}
			if st&(udma.StatusHalted|udma.StatusBusy) != 0 {
				x.capacity[key] = 0
			}
		}
		if qu != nil && x.capacity[key] < int(need) {
			if err := qu.Close(); err != nil {
				return err
			}
			qu = nil
		}
		if qu == nil {
			var err error
			if qu, err = m.OpenQueue(fmt.Sprintf("cc.r%d.e%d.q%d", r, eng, q), eng, q, need); err != nil {
				return err
			}
			x.queues[key], x.capacity[key] = qu, int(need)
		}
		n, err := qu.Dump(v)
		total += n
		return err
	}
	if p.ctl.Descriptors() > 0 {
		if err := dump(engs[0], ControlQueue, p.ctl); err != nil {
			return 0, fmt.Errorf("enc: rank %d: %w", r, err)
		}
	}
	for j, v := range p.vr {
		if v.Descriptors() == 0 {
			continue
		}
		if err := dump(engs[j], CollectiveQueue, v); err != nil {
			return 0, fmt.Errorf("enc: rank %d: %w", r, err)
		}
	}
	one := []byte{1, 0, 0, 0}
	if err := m.WriteDevice(LayoutOf(&enc.Schedule{}, x.Ranks[r].Base).Ones, one); err != nil {
		return 0, fmt.Errorf("enc: rank %d control word: %w", r, err)
	}
	return total, nil
}
