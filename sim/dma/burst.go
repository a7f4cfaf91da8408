package dma

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// Burst is the descriptors one half of a queue fetched ahead and has not
// yet run (docs/dma-model.md §Execution and completion, step 1): ring
// slots [Start, Start+len(Desc)) of the ring at Base of Length
// descriptors, at phase Phase, fetched in the queue's epoch Epoch. A
// State keeps them so that a restored controller runs the descriptors the
// saved one would — also those software changed in memory after making
// them available, which the saved one runs as it fetched them.
type Burst struct {
	Engine, Queue int
	Half          int // 0 M2S, 1 S2M
	Base          uint64
	Length, Start uint32
	Phase         uint8
	Epoch         uint32
	Desc          []udma.Descriptor
}

// eachBurst calls fn with each burst of the made engines that can still
// be run: those not empty, fetched in their queue's present epoch, on an
// engine not as its last reset left it (whose rings are empty: none of
// its bursts can run), and the burst's descriptors not yet run. Others
// are left out, as readDescriptor would drop them.
func (c *Controller) eachBurst(fn func(e, q, h int, pf *prefetch, desc []udma.Descriptor)) {
	for e, le := range c.st.engines {
		if le == nil {
			continue
		}
		if _, reset := asReset(&le.EngineState); reset {
			continue
		}
		for q, f := range le.fetch {
			if f == nil {
				continue
			}
			for h := range f.half {
				pf := &f.half[h]
				if pf.n == 0 || pf.epoch != le.Queues[q].Epoch {
					continue
				}
				fn(e, q, h, pf, f.desc[h][pf.next:pf.next+pf.n])
			}
		}
	}
}

// bursts returns a copy of the bursts that can still be run (eachBurst).
func (c *Controller) bursts() []Burst {
	var out []Burst
	c.eachBurst(func(e, q, h int, pf *prefetch, desc []udma.Descriptor) {
		out = append(out, Burst{Engine: e, Queue: q, Half: h, Base: pf.base, Length: pf.length, Start: pf.start,
			Phase: pf.phase, Epoch: pf.epoch, Desc: slices.Clone(desc)})
	})
	return out
}

// burstBytes bounds the memory bursts takes for its copy: the bursts it
// copies, each counted at a whole burst's descriptors.
func (c *Controller) burstBytes() uint64 {
	n := 0
	c.eachBurst(func(int, int, int, *prefetch, []udma.Descriptor) { n++ })
	return simkernel.SliceBytes(n, unsafe.Sizeof(Burst{})) + uint64(n)*simkernel.SliceBytes(prefetchDescriptors, unsafe.Sizeof(udma.Descriptor{}))
}

// checkBursts checks a state's bursts: each on an engine of the state
// that is not as its reset left it, a queue and a half that exist, 1 to
// prefetchDescriptors descriptors, fetched in the queue's present epoch
// (State writes no other), and no queue half given twice.
func checkBursts(s *State) error {
	seen := map[[3]int]bool{}
	for i, b := range s.Bursts {
		switch {
		case b.Engine < 0 || b.Engine >= len(s.Engines):
			return fmt.Errorf("Bursts[%d]: engine %d of %d", i, b.Engine, len(s.Engines))
		case b.Queue < 0 || b.Queue >= udma.Queues:
			return fmt.Errorf("Bursts[%d]: queue %d of %d", i, b.Queue, udma.Queues)
		case b.Half != 0 && b.Half != 1:
			return fmt.Errorf("Bursts[%d]: half %d: not 0 (M2S) or 1 (S2M)", i, b.Half)
		case len(b.Desc) < 1 || len(b.Desc) > prefetchDescriptors:
			return fmt.Errorf("Bursts[%d]: %d descriptors: a burst holds 1..%d", i, len(b.Desc), prefetchDescriptors)
		case seen[[3]int{b.Engine, b.Queue, b.Half}]:
			return fmt.Errorf("Bursts[%d]: engine %d queue %d half %d given twice", i, b.Engine, b.Queue, b.Half)
		}
		seen[[3]int{b.Engine, b.Queue, b.Half}] = true
		es := &s.Engines[b.Engine]
		if _, reset := asReset(es); reset {
			return fmt.Errorf("Bursts[%d]: engine %d is as its reset left it: its rings are empty", i, b.Engine)
		}
		if ep := es.Queues[b.Queue].Epoch; b.Epoch != ep {
			return fmt.Errorf("Bursts[%d]: epoch %d: engine %d queue %d is in epoch %d", i, b.Epoch, b.Engine, b.Queue, ep)
		}
	}
	return nil
}

// restoreBursts installs checked bursts on the engines Restore made.
func (c *Controller) restoreBursts(bursts []Burst) {
	for _, b := range bursts {
		f := fetchOf(c.st.engines[b.Engine], b.Queue)
		f.half[b.Half] = prefetch{base: b.Base, length: b.Length, start: b.Start, n: uint32(len(b.Desc)), phase: b.Phase, epoch: b.Epoch}
		copy(f.desc[b.Half][:], b.Desc)
	}
}

// cloneBursts is a deep copy of bursts.
func cloneBursts(bursts []Burst) []Burst {
	out := slices.Clone(bursts)
	for i := range out {
		out[i].Desc = slices.Clone(out[i].Desc)
	}
	return out
}
