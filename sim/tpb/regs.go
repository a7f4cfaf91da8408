package tpb

import "github.com/neuronsim/neuronsim/hw/isa"

// The engine control block: a 0x1000-byte register window per engine, which
// the device maps at the TPB window + the engine's host-visible sequencer
// base. RUN_STALL (+0x0) and START_CTRL (+0x4) are the NX local registers
// release_run_stall and START_CTRL of seed 001; the rest are the model's.
// The layout, values and codes are the ABI's (hw/isa, which the runtime
// reads too); the names here are the device's.
const (
	RegRunStall    = isa.EngineRegRunStall    // 1 run, 0 stall (bit 0); power-on 1; reads back
	RegStartCtrl   = isa.EngineRegStartCtrl   // write StartRun or StartHalt; reads back the last write
	RegPCLo        = isa.EngineRegPCLo        // device address of the first record, low word
	RegPCHi        = isa.EngineRegPCHi        // … high word
	RegStatus      = isa.EngineRegStatus      // Status* bits (read-only)
	RegError       = isa.EngineRegError       // Err* code (read-only)
	RegFaultOffset = isa.EngineRegFaultOffset // byte offset from the start PC of the failed record (read-only)
	RegRetired     = isa.EngineRegRetired     // records completed (read-only, low 32 bits)
	RegBusyLo      = isa.EngineRegBusyLo      // busy time in ns, low word (read-only)
	RegBusyHi      = isa.EngineRegBusyHi      // … high word
	RegWindowSize  = isa.EngineRegBlockSize
)

// START_CTRL values.
const (
	StartRun  = isa.StartRun  // clear status, error and counters, start fetching at PC
	StartHalt = isa.StartHalt // stop once the record in flight (if any) completes
)

// STATUS bits.
const (
	StatusRunning = isa.StatusRunning // started and not stopped
	StatusStalled = isa.StatusStalled // running with RUN_STALL 0: no new record starts
	StatusWaiting = isa.StatusWaiting // blocked on its record's wait
	StatusDone    = isa.StatusDone    // a LAST record completed
	StatusError   = isa.StatusError   // stopped on an error (ERROR says which)

	statusStored = StatusRunning | StatusWaiting | StatusDone | StatusError
)

// ERROR codes (isa.ErrorText says each in words).
const (
	ErrNone        = isa.ErrorNone        // no error
	ErrFetch       = isa.ErrorFetch       // the instruction fetch failed (or PC misaligned)
	ErrInvalid     = isa.ErrorInvalid     // a malformed record
	ErrUnsupported = isa.ErrorUnsupported // a validated-only opcode (isa.OpInfo.Executed false)
	ErrRange       = isa.ErrorOperand     // an operand out of range at execute
	ErrDoorbell    = isa.ErrorDoorbell    // the DMA doorbell failed
	numErrCodes    = isa.NumErrors
)

// status returns engine e's STATUS register.
func (c *Core) status(e int) uint32 {
	es := &c.st.Engines[e]
	s := es.Status
	if s&StatusRunning != 0 && es.RunStall&1 == 0 {
		s |= StatusStalled
	}
	return s
}

// ReadReg reads a 32-bit register of engine eng's control block. Offsets
// outside the window, misaligned ones and bad engines read 0; an offset the
// block does not define reads back what was last written there.
func (c *Core) ReadReg(eng int, off uint64) uint32 {
	if eng < 0 || eng >= NumEngines || off >= RegWindowSize || off%4 != 0 {
		return 0
	}
	es := &c.st.Engines[eng]
	switch off {
	case RegRunStall:
		return es.RunStall
	case RegStartCtrl:
		return es.StartCtrl
	case RegPCLo:
		return es.PCLo
	case RegPCHi:
		return es.PCHi
	case RegStatus:
		return c.status(eng)
	case RegError:
		return es.Error
	case RegFaultOffset:
		return es.FaultOffset
	case RegRetired:
		return uint32(es.Retired)
	case RegBusyLo:
		return uint32(es.BusyPS / 1000)
	case RegBusyHi:
		return uint32(es.BusyPS / 1000 >> 32)
	}
	return es.Regs[off]
}

// WriteReg writes a 32-bit register of engine eng's control block. Writes
// to the read-only registers, outside the window, misaligned or to a bad
// engine are ignored.
func (c *Core) WriteReg(eng int, off uint64, v uint32) {
	if eng < 0 || eng >= NumEngines || off >= RegWindowSize || off%4 != 0 {
		return
	}
	es := &c.st.Engines[eng]
	switch off {
	case RegRunStall:
		es.RunStall = v
	case RegStartCtrl:
		es.StartCtrl = v
		switch v {
		case StartRun:
			c.start(eng)
		case StartHalt:
			c.halt(eng)
		}
	case RegPCLo:
		es.PCLo = v
	case RegPCHi:
		es.PCHi = v
	case RegStatus, RegError, RegFaultOffset, RegRetired, RegBusyLo, RegBusyHi:
		return
	default:
		if es.Regs == nil {
			es.Regs = map[uint64]uint32{}
		}
		es.Regs[off] = v
		return
	}
	c.poke()
}

// start handles START_CTRL = StartRun.
func (c *Core) start(e int) {
	es := &c.st.Engines[e]
	c.stopWaiting(e)
	es.StartPC = uint64(es.PCHi)<<32 | uint64(es.PCLo)
	es.PC = es.StartPC
	es.Retired, es.BusyPS, es.WaitPS, es.Error, es.FaultOffset = 0, 0, 0, ErrNone, 0
	es.Halting = false
	if es.InFlight {
		es.Orphan = true // the record in flight completes, outside the new run
	} else {
		es.Fetched = false
	}
	if es.StartPC%64 != 0 {
		es.Status = StatusError
		es.Error = ErrFetch
		return
	}
	es.Status = StatusRunning
}

// halt handles START_CTRL = StartHalt.
func (c *Core) halt(e int) {
	es := &c.st.Engines[e]
	if es.Status&StatusRunning == 0 {
		return
	}
	if es.InFlight && !es.Orphan {
		es.Halting = true
		return
	}
	c.stopWaiting(e)
	es.Status &^= StatusRunning
	if !es.InFlight {
		es.Fetched = false
	}
}
