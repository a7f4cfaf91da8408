package tpb

import (
	"strconv"

	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// An engine's life: START_CTRL = 1 makes it RUNNING at the start PC. A
// running, unstalled engine with nothing in flight fetches the record at PC,
// checks it, and, once the record's wait holds, starts it at max(now, engine
// free) for its cost (cost.go). At the completion time the record's effect
// happens (exec.go), then its signal, RETIRED++, and the engine either stops
// (LAST: DONE; a halt request) or fetches the next record at once.

// advance moves engine e forward as far as it can at the current time.
func (c *Core) advance(e int) {
	es := &c.st.Engines[e]
	if es.InFlight || es.Status&StatusRunning == 0 || es.RunStall&1 == 0 {
		return
	}
	if !es.Fetched {
		if err := c.env.Fetch(es.PC, c.recordBuf[:]); err != nil {
			c.fail(e, ErrFetch)
			return
		}
		es.Raw = c.recordBuf
		es.Fetched = true
		c.decoded[e].valid = false
	}
	r, code := c.record(e)
	if code != ErrNone {
		c.fail(e, code)
		return
	}
	if !c.waitHolds(r.Wait) {
		if es.Status&StatusWaiting == 0 {
			es.Status |= StatusWaiting
			es.WaitSince = uint64(c.env.Now())
		}
		return
	}
	c.stopWaiting(e)
	start := max(uint64(c.env.Now()), es.BusyUntil)
	end := start + c.duration(e, r)
	if end < start { // an absurdly slow clock: saturate rather than wrap
		end = ^uint64(0)
	}
	es.Start, es.End, es.BusyUntil, es.InFlight = start, end, end, true
	c.env.Schedule(simkernel.Time(end), fireArg(e, es.Epoch))
}

// decodedRecord is engine e's fetched record decoded and checked, kept from
// its fetch until the next so that a record is decoded and checked once
// however often its wait is re-examined. It is derived from
// EngineState.Raw (the check depends only on the record and the core's
// configuration), so it is not part of the state: Restore drops it.
type decodedRecord struct {
	rec   isa.Record
	code  uint32 // check's verdict
	valid bool   // rec and code are those of the engine's Raw
}

// record returns engine e's fetched record decoded and check's verdict on
// it, decoding and checking Raw only the first time after a fetch or a
// restore.
func (c *Core) record(e int) (*isa.Record, uint32) {
	d := &c.decoded[e]
	if !d.valid {
		raw := c.st.Engines[e].Raw[:]
		d.rec, _ = isa.Decode(raw)
		d.code, d.valid = c.check(e, raw, &d.rec), true
	}
	return &d.rec, d.code
}

// stopWaiting ends a wait in progress, counting its time.
func (c *Core) stopWaiting(e int) {
	es := &c.st.Engines[e]
	if es.Status&StatusWaiting == 0 {
		return
	}
	es.Status &^= StatusWaiting
	now := uint64(c.env.Now())
	if now > es.WaitSince {
		es.WaitPS += now - es.WaitSince
		if c.tr != nil {
			r, _ := c.record(e)
			c.tr.Slice(c.tracks[e], "wait", es.WaitSince, now, map[string]string{
				"mode": r.Wait.Mode.String(), "index": strconv.Itoa(int(r.Wait.Index)), "value": strconv.Itoa(int(r.Wait.Value)),
			})
		}
	}
}

// complete finishes engine e's record in flight (its completion time is now).
func (c *Core) complete(e int) {
	es := &c.st.Engines[e]
	rp, _ := c.record(e)
	r := *rp // a copy: the record's effect may call back into the device
	// The record stays in flight while it executes: a doorbell may call back
	// into the device, and a start or halt written meanwhile then treats it
	// as the record in flight it is; a reset drops it.
	epoch := es.Epoch
	code := c.execute(&r)
	if es.Epoch != epoch {
		return
	}
	es.InFlight, es.Fetched = false, false
	c.trace(e, &r, code)
	if es.Orphan { // its run was replaced by a new start: effects only
		es.Orphan = false
		if code == ErrNone {
			c.signal(r.Signal)
		}
		c.again = true
		return
	}
	es.BusyPS += es.End - es.Start
	if code != ErrNone {
		c.fail(e, code)
		return
	}
	c.signal(r.Signal)
	es.Retired++
	if r.Flags&isa.FlagLast != 0 {
		es.Status, es.Halting = StatusDone, false
		return
	}
	es.PC += isa.RecordSize
	if es.Halting {
		es.Status &^= StatusRunning
		es.Halting = false
		return
	}
	c.advance(e)
}

// fail stops engine e with an error code, the fault offset its PC.
func (c *Core) fail(e int, code uint32) {
	es := &c.st.Engines[e]
	es.Status, es.Error, es.FaultOffset = StatusError, code, uint32(es.PC-es.StartPC)
	es.Fetched, es.Halting = false, false
}

// waitHolds evaluates a wait slot.
func (c *Core) waitHolds(w isa.Sync) bool {
	sem := c.sync.Semaphores[w.Index]
	switch w.Mode {
	case isa.WaitSemGE:
		return sem >= int32(w.Value)
	case isa.WaitSemEQ:
		return sem == int32(w.Value)
	case isa.WaitSemGT:
		return sem > int32(w.Value)
	case isa.WaitEvent:
		return c.sync.Events[w.Index] != 0
	}
	return true
}

// signal applies a signal slot; a change wakes waiters here and tells the
// device.
func (c *Core) signal(s isa.Sync) {
	sem, ev := &c.sync.Semaphores[s.Index], &c.sync.Events[s.Index]
	old, oldEv := *sem, *ev
	switch s.Mode {
	case isa.SignalSemSet:
		*sem = int32(s.Value)
	case isa.SignalSemIncr:
		*sem = int32(uint32(*sem) + uint32(s.Value))
	case isa.SignalSemDecr:
		*sem = int32(uint32(*sem) - uint32(s.Value))
	case isa.SignalEventSet:
		*ev = 1
	case isa.SignalEventClr:
		*ev = 0
	default:
		return
	}
	if *sem != old || *ev != oldEv {
		c.again = true
		c.env.SyncChanged()
	}
}

// trace reports a completed record to the tracer.
func (c *Core) trace(e int, r *isa.Record, code uint32) {
	if c.tr == nil {
		return
	}
	es := &c.st.Engines[e]
	args := map[string]string{"offset": "0x" + strconv.FormatUint(es.PC-es.StartPC, 16)}
	if code != ErrNone {
		args["error"] = strconv.Itoa(int(code))
	}
	if es.Orphan { // its PC belonged to the replaced run
		args = map[string]string{"orphan": "true"}
	}
	c.tr.Slice(c.tracks[e], r.Opcode.String(), es.Start, es.End, args)
}
