package tpb

import (
	"errors"
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// The NeuronCore model: five engines (PE, ACT, POOL, DVE, SP), each a
// sequencer that fetches 64-byte instruction records (docs/isa.md) from
// device memory and runs them in order, functionally and in virtual time.
// Engines synchronise only through the NC's semaphores and events. The core
// knows nothing of the device around it: time, instruction fetch and DMA
// doorbells go through an Env, the on-chip memories through Mem.

// Env is the device around a NeuronCore.
type Env interface {
	Now() simkernel.Time                        // the device clock
	Schedule(at simkernel.Time, arg uint64)     // make the device call Core.Fire(arg) at time at
	Fetch(addr uint64, p []byte) error          // read device memory at a device address (instruction fetch)
	Doorbell(engine, queue int, n uint32) error // ring DMA queue `queue` of DMA engine `engine`: S2M then M2S tail_inc of n
	SyncChanged()                               // the core changed a semaphore or event (so the device can wake other waiters; may be a no-op)
}

// Mem is one of the NC's on-chip memories, addressed by byte offset inside
// its window.
type Mem interface {
	Read(off uint64, p []byte) error
	Write(off uint64, p []byte) error
}

// Tracer receives one slice per completed record (and per wait) for a
// timeline view: the kernel's [simkernel.Tracer].
type Tracer = simkernel.Tracer

// NumEngines is the number of engines of a NeuronCore, indexed PE 0, ACT 1,
// POOL 2, DVE 3, SP 4 (hwarch.Engine and isa.Engine order).
const NumEngines = 5

// PSUMPartitionBytes is the PSUM bytes of one partition (16 KiB).
const PSUMPartitionBytes = 16 << 10

// Config configures a Core.
type Config struct {
	Generation hwarch.Generation
	NC         int
	SBUF, PSUM Mem                // SBUF window (partition p at p·PartitionBytes), PSUM window (partition p at p·16 KiB)
	Sync       *SyncState         // the NC's semaphores and events, shared with MMIO and DMA
	Env        Env                // the device
	Clocks     [NumEngines]uint64 // Hz per engine (PE, ACT, POOL, DVE, SP); zero → DefaultClocks(gen)
}

// DefaultClocks returns the engine clocks of a generation in Hz, in engine
// order PE, ACT, POOL, DVE, SP (trainium-facts §2: Tensor, Scalar, GpSimd,
// Vector; SP runs at the Scalar clock).
func DefaultClocks(g hwarch.Generation) [NumEngines]uint64 {
	switch g {
	case hwarch.Sunda:
		return [NumEngines]uint64{2_800e6, 1_400e6, 1_400e6, 1_120e6, 1_400e6}
	case hwarch.Cayman:
		return [NumEngines]uint64{2_400e6, 1_200e6, 1_200e6, 960e6, 1_200e6}
	default:
		return [NumEngines]uint64{2_400e6, 1_200e6, 1_200e6, 1_200e6, 1_200e6}
	}
}

// EngineStats are the counters of one engine.
type EngineStats struct {
	Retired uint64 // records completed
	Busy    uint64 // ps spent executing records
	Waiting uint64 // ps spent blocked on a wait (including a wait in progress)
	Status  uint32 // the STATUS register
	Error   uint32 // the ERROR register
}

// Core is one NeuronCore's engines.
type Core struct {
	gen       hwarch.Generation
	geo       *hwarch.Geometry
	nc        int
	sbuf      Mem
	psum      Mem
	sync      *SyncState
	env       Env
	clocks    [NumEngines]uint64
	sbufPart  int64 // SBUF bytes per partition
	st        CoreState
	tr        Tracer
	tracks    [NumEngines]string
	active    bool     // inside a call that runs engines (guards re-entry)
	again     bool     // something changed: re-examine every engine
	fires     []uint64 // Fire calls that arrived re-entrantly
	scratch   scratch
	recordBuf [isa.RecordSize]byte
	decoded   [NumEngines]decodedRecord // each engine's Raw decoded and checked
}

// ErrConfig marks an invalid Config.
var ErrConfig = errors.New("tpb: invalid core configuration")

// NewCore returns the engines of one NeuronCore, idle, with RUN_STALL 1.
func NewCore(cfg Config) (*Core, error) {
	geo, err := hwarch.GeometryOf(cfg.Generation)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.NC < 0 || cfg.NC >= geo.NeuronCores {
		return nil, fmt.Errorf("%w: NC %d: the %s has NCs 0..%d", ErrConfig, cfg.NC, cfg.Generation, geo.NeuronCores-1)
	}
	if cfg.SBUF == nil || cfg.PSUM == nil || cfg.Sync == nil || cfg.Env == nil {
		return nil, fmt.Errorf("%w: SBUF, PSUM, Sync and Env are required", ErrConfig)
	}
	c := &Core{gen: cfg.Generation, geo: geo, nc: cfg.NC, sbuf: cfg.SBUF, psum: cfg.PSUM, sync: cfg.Sync,
		env: cfg.Env, clocks: cfg.Clocks, sbufPart: int64(geo.SBUFPartitionSize)}
	def := DefaultClocks(cfg.Generation)
	for e := range c.clocks {
		if c.clocks[e] == 0 {
			c.clocks[e] = def[e]
		}
		c.tracks[e] = fmt.Sprintf("nc%d/%s", cfg.NC, hwarch.Engine(e))
	}
	for e := range c.st.Engines {
		c.st.Engines[e] = powerOnEngine(0)
	}
	return c, nil
}

// Clocks returns the engine clocks in use (Hz).
func (c *Core) Clocks() [NumEngines]uint64 { return c.clocks }

// SetTrace installs a tracer (nil removes it).
func (c *Core) SetTrace(t Tracer) { c.tr = t }

// Fire handles a scheduled event: the completion of an engine's record. An
// event from before a Reset (a stale epoch) is ignored.
func (c *Core) Fire(arg uint64) {
	if c.active {
		c.fires = append(c.fires, arg)
		c.again = true
		return
	}
	c.active = true
	c.fire(arg)
	c.settle()
}

// HandleEvent is Fire as an event handler of the kernel's engine, so that a
// device registers the core itself for its completion events.
func (c *Core) HandleEvent(_ *simkernel.Engine, arg uint64) { c.Fire(arg) }

// fire completes the record an event names, if the event is current.
func (c *Core) fire(arg uint64) {
	e, epoch := int(arg&0xFF), arg>>8
	if e >= NumEngines {
		return
	}
	if es := &c.st.Engines[e]; es.Epoch == epoch && es.InFlight {
		c.complete(e)
	}
}

// fireArg is the Schedule argument of engine e's completion.
func fireArg(e int, epoch uint64) uint64 { return epoch<<8 | uint64(e) }

// SyncChanged tells the core that a semaphore or event changed from outside
// (MMIO, DMA, another core engine): engines blocked on a wait re-check it.
func (c *Core) SyncChanged() { c.poke() }

// poke re-examines every engine (or asks the running loop to).
func (c *Core) poke() {
	c.again = true
	if c.active {
		return
	}
	c.active = true
	c.settle()
}

// settle runs until no engine can make progress at the current time: queued
// completions first, then every engine in index order, as long as something
// changed. It ends the guarded section.
func (c *Core) settle() {
	for {
		if len(c.fires) > 0 {
			arg := c.fires[0]
			c.fires = c.fires[1:]
			c.fire(arg)
			continue
		}
		if !c.again {
			break
		}
		c.again = false
		for e := range c.st.Engines {
			c.advance(e)
		}
	}
	c.fires = c.fires[:0]
	c.active = false
}

// Reset is a TPB reset: every engine idle with its registers at their
// power-on values, records in flight dropped, the PE array cleared. The
// semaphores and events belong to the device, which resets them itself.
func (c *Core) Reset() {
	for e := range c.st.Engines {
		c.st.Engines[e] = powerOnEngine(c.st.Engines[e].Epoch + 1)
	}
	c.st.PE = PEState{}
	c.scratch = scratch{}
	c.decoded = [NumEngines]decodedRecord{}
}

// Stats returns the counters of every engine.
func (c *Core) Stats() [NumEngines]EngineStats {
	var out [NumEngines]EngineStats
	now := uint64(c.env.Now())
	for e := range c.st.Engines {
		es := &c.st.Engines[e]
		out[e] = EngineStats{Retired: es.Retired, Busy: es.BusyPS, Waiting: es.WaitPS, Status: c.status(e), Error: es.Error}
		if es.Status&StatusWaiting != 0 && now > es.WaitSince {
			out[e].Waiting += now - es.WaitSince
		}
	}
	return out
}
