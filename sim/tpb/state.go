package tpb

import (
	"errors"
	"fmt"

	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// EngineState is the whole mutable state of one engine.
type EngineState struct {
	// Registers.
	RunStall    uint32 // RUN_STALL as written (bit 0: run)
	StartCtrl   uint32 // START_CTRL as last written
	PCLo, PCHi  uint32 // PC registers
	Status      uint32 // StatusRunning, StatusWaiting, StatusDone, StatusError (STALLED is derived)
	Error       uint32 // Err* code
	FaultOffset uint32
	Regs        map[uint64]uint32 // the other offsets, plain storage

	// Sequencer.
	StartPC   uint64               // the PC of the current run's first record
	PC        uint64               // the record being fetched, waited on or executed
	Raw       [isa.RecordSize]byte // the fetched record (valid when Fetched)
	Fetched   bool                 // Raw holds the record at PC (or the orphan in flight), checked
	InFlight  bool                 // the record has started; its completion is scheduled at End
	Orphan    bool                 // the record in flight belongs to a run a new start replaced
	Halting   bool                 // stop when the record in flight completes
	Start     uint64               // start of the record in flight (ps)
	End       uint64               // its completion (ps)
	BusyUntil uint64               // when the engine is next free (ps)
	WaitSince uint64               // when the current wait began (ps)
	Epoch     uint64               // completions of other epochs are stale (bumped on reset)

	// Counters.
	Retired uint64
	BusyPS  uint64
	WaitPS  uint64
}

// PEState is the PE array: the stationary tile.
type PEState struct {
	Loaded     bool
	K, M       int       // partitions × elements of the stationary tile
	Stationary []float32 // K×M fp32, row k at k·M
	Fresh      bool      // no multiply_moving since the last load_stationary (MM_INIT is due)
}

// CoreState is the whole mutable state of a Core. The semaphores and events
// are the device's (Config.Sync) and not part of it.
type CoreState struct {
	Engines [NumEngines]EngineState
	PE      PEState
}

// powerOnEngine returns an engine's power-on state.
func powerOnEngine(epoch uint64) EngineState {
	return EngineState{RunStall: 1, Epoch: epoch}
}

// clone returns a deep copy.
func (s *CoreState) clone() CoreState {
	out := *s
	for e := range out.Engines {
		regs := make(map[uint64]uint32, len(s.Engines[e].Regs))
		for k, v := range s.Engines[e].Regs {
			regs[k] = v
		}
		out.Engines[e].Regs = regs
	}
	if s.PE.Stationary != nil {
		out.PE.Stationary = append([]float32(nil), s.PE.Stationary...)
	}
	return out
}

// State returns a deep copy of the core's state.
func (c *Core) State() CoreState { return c.st.clone() }

// A Core follows the kernel's snapshot convention.
var _ simkernel.Stateful[CoreState] = (*Core)(nil)

// ErrInvalidState marks a CoreState that cannot be the state of this core.
// It wraps [simkernel.ErrInvalidState], the sentinel of every model's
// refused state.
var ErrInvalidState = simkernel.InvalidStateOf("tpb: invalid core state")

// Restore replaces the core's state with a deep copy of s after checking
// it: statuses, error codes and the sequencer's flags consistent, every
// time and counter of time at most units.MaxTimePS, storage registers in
// the window, a fetched record that runs here, a PE tile of its size. Completions the device has scheduled keep their meaning, so the
// device restores its event queue from the same snapshot.
func (c *Core) Restore(s CoreState) error {
	if err := c.validState(&s); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidState, err)
	}
	c.st = s.clone()
	c.scratch = scratch{}
	c.decoded = [NumEngines]decodedRecord{}
	return nil
}

// Validate checks s as Restore does, without restoring it.
func (c *Core) Validate(s CoreState) error {
	if err := c.validState(&s); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidState, err)
	}
	return nil
}

func (c *Core) validState(s *CoreState) error {
	for e := range s.Engines {
		es := &s.Engines[e]
		switch {
		case es.Status&^statusStored != 0:
			return fmt.Errorf("engine %d: status %#x", e, es.Status)
		case es.Error >= numErrCodes:
			return fmt.Errorf("engine %d: error code %d", e, es.Error)
		case es.InFlight && !es.Fetched:
			return fmt.Errorf("engine %d: a record in flight that was not fetched", e)
		case (es.Orphan || es.Halting) && !es.InFlight:
			return fmt.Errorf("engine %d: orphan or halting with nothing in flight", e)
		case es.InFlight && es.End < es.Start:
			return fmt.Errorf("engine %d: record ends before it starts", e)
		case es.Status&StatusWaiting != 0 && (es.Status&StatusRunning == 0 || !es.Fetched || es.InFlight):
			return fmt.Errorf("engine %d: waiting but not blocked on a fetched record", e)
		case es.Status&StatusRunning != 0 && es.PC%64 != 0:
			return fmt.Errorf("engine %d: PC %#x not 64-byte aligned", e, es.PC)
		case es.Fetched && !es.InFlight && es.Status&StatusRunning == 0:
			return fmt.Errorf("engine %d: a fetched record on a stopped engine", e)
		}
		for _, t := range []struct {
			name string
			ps   uint64
		}{{"Start", es.Start}, {"End", es.End}, {"BusyUntil", es.BusyUntil}, {"WaitSince", es.WaitSince}, {"BusyPS", es.BusyPS}, {"WaitPS", es.WaitPS}} {
			if _, err := units.PS(fmt.Sprintf("engine %d: %s", e, t.name), t.ps); err != nil {
				return err
			}
		}
		for off := range es.Regs {
			if off >= RegWindowSize || off%4 != 0 || off <= RegBusyHi {
				return fmt.Errorf("engine %d: storage register %#x", e, off)
			}
		}
		if es.Fetched {
			r, _ := isa.Decode(es.Raw[:])
			if code := c.check(e, es.Raw[:], &r); code != ErrNone {
				return fmt.Errorf("engine %d: the fetched record does not run here (error %d)", e, code)
			}
		}
	}
	pe := &s.PE
	if pe.Loaded {
		if pe.K < 1 || pe.K > 128 || pe.M < 1 || pe.M > 128 || len(pe.Stationary) != pe.K*pe.M {
			return fmt.Errorf("PE: stationary tile %d×%d with %d values", pe.K, pe.M, len(pe.Stationary))
		}
	} else if pe.K != 0 || pe.M != 0 || len(pe.Stationary) != 0 || pe.Fresh {
		return errors.New("PE: a stationary tile that is not loaded")
	}
	return nil
}

// StateBytes bounds the memory State takes for its copy beyond the
// CoreState value itself: every engine's storage registers and the
// stationary tile.
func (c *Core) StateBytes() uint64 {
	var n uint64
	for e := range c.st.Engines {
		n += simkernel.MapBytes(len(c.st.Engines[e].Regs), 16)
	}
	if c.st.PE.Stationary != nil {
		n += simkernel.SliceBytes(len(c.st.PE.Stationary), 4)
	}
	return n
}
