package dma

import (
	"fmt"
	"unsafe"

	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// CompactState is [State] with every engine as its last reset left it
// (every queue empty at phase 1 with one epoch, the engine normal, not busy,
// no storage register: most of a device's engines, which a collective
// leaves alone) written as its epoch alone. A Trn3 device's 132 engines
// take 300 KiB as State and about 2 KiB as CompactState when idle; a
// system snapshot (sim/fabric) keeps its devices' DMA state in this form.
// Expand gives the State it stands for.
type CompactState struct {
	Engines  []CompactEngine
	HBMFree  uint64  // State.HBMFree
	HostFree uint64  // State.HostFree
	Bursts   []Burst // State.Bursts
}

// CompactEngine is one engine of a CompactState: its whole state, or nil
// for an engine as its last reset left it with every queue at Epoch (0
// when State is given).
type CompactEngine struct {
	Epoch uint32
	State *EngineState
}

// CompactState returns a deep copy of the state, every engine as its reset
// left it written as its epoch alone.
func (c *Controller) CompactState() CompactState {
	s := CompactState{Engines: make([]CompactEngine, len(c.st.engines)), HBMFree: c.st.hbmFree, HostFree: c.st.hostFree, Bursts: c.bursts()}
	for i, le := range c.st.engines {
		if le == nil {
			s.Engines[i].Epoch = c.st.fresh[i]
			continue
		}
		live := &le.EngineState
		if epoch, ok := asReset(live); ok {
			s.Engines[i].Epoch = epoch
			continue
		}
		es := *live
		es.Regs = make(map[uint64]uint32, len(live.Regs))
		for k, v := range live.Regs {
			es.Regs[k] = v
		}
		s.Engines[i].State = &es
	}
	return s
}

// CompactStateBytes bounds the memory CompactState takes for its copy,
// without making it: an entry an engine, the state and storage registers
// of every engine not as its reset left it (each made engine is compared
// with its reset state, 2.3 KiB), and the bursts.
func (c *Controller) CompactStateBytes() uint64 {
	n := simkernel.SliceBytes(len(c.st.engines), unsafe.Sizeof(CompactEngine{})) + c.burstBytes()
	for _, es := range c.st.engines {
		if es == nil {
			continue
		}
		if _, ok := asReset(&es.EngineState); !ok {
			n += simkernel.AllocBytes(uint64(unsafe.Sizeof(EngineState{}))) + simkernel.MapBytes(len(es.Regs), 16)
		}
	}
	return n
}

// Expand returns the State s stands for, for a device of engines DMA
// engines: each engine given by its epoch alone as a reset leaves it. A
// count of engines other than the device's is refused before anything is
// made (a few bytes of a file per engine would otherwise take a whole
// engine's state each: 200,000 of them, 434 KB of snapshot, took 466 MB
// to refuse), as is an engine that gives both a state and an epoch (a
// state is written one way only), each with an error wrapping
// ErrInvalidState; Restore checks the rest.
func (s CompactState) Expand(engines int) (State, error) {
	if len(s.Engines) != engines {
		return State{}, fmt.Errorf("dma: restore: %d engines, the device has %d: %w", len(s.Engines), engines, ErrInvalidState)
	}
	out := State{Engines: make([]EngineState, len(s.Engines)), HBMFree: s.HBMFree, HostFree: s.HostFree, Bursts: cloneBursts(s.Bursts)}
	for i, ce := range s.Engines {
		switch {
		case ce.State == nil:
			out.Engines[i] = powerOn(ce.Epoch)
		case ce.Epoch != 0:
			return State{}, fmt.Errorf("dma: restore: engine %d: Epoch %d given with a whole state: %w", i, ce.Epoch, ErrInvalidState)
		default:
			out.Engines[i] = *ce.State
		}
	}
	return out, nil
}
