package isa

import "fmt"

// The engine control block: the registers of one engine's sequencer, at the
// TPB window + the engine's host-visible sequencer base
// (get_seq_params_<arch>). RUN_STALL and START_CTRL are seed 001's NX local
// registers (release_run_stall +0x0, START_CTRL +0x4); the rest are the
// model's (docs/isa.md §Engine control).
const (
	EngineRegRunStall    = 0x000 // 1 run, 0 stall
	EngineRegStartCtrl   = 0x004 // write StartRun to start at PC, StartHalt to halt
	EngineRegPCLo        = 0x008 // device address of the first record
	EngineRegPCHi        = 0x00C
	EngineRegStatus      = 0x010 // Status* bits
	EngineRegError       = 0x014 // Error* code
	EngineRegFaultOffset = 0x018 // byte offset of the failing record from the start PC
	EngineRegRetired     = 0x01C // records completed
	EngineRegBusyLo      = 0x020 // busy time, ns
	EngineRegBusyHi      = 0x024
	EngineRegBlockSize   = 0x1000 // the control block's span

	StartRun  = 1
	StartHalt = 2

	StatusRunning = 1 << 0
	StatusStalled = 1 << 1
	StatusWaiting = 1 << 2
	StatusDone    = 1 << 3
	StatusError   = 1 << 4

	ErrorNone        = 0
	ErrorFetch       = 1 // the record could not be fetched
	ErrorInvalid     = 2 // a malformed record reached the engine
	ErrorUnsupported = 3 // a validated-only opcode reached the engine
	ErrorOperand     = 4 // an operand out of range at execute
	ErrorDoorbell    = 5 // a DMA doorbell failed
	NumErrors        = 6 // the codes: 0..NumErrors-1
)

// errorTexts say what each ERROR code means, for reports.
var errorTexts = [NumErrors]string{
	ErrorNone:        "no error",
	ErrorFetch:       "the record could not be fetched",
	ErrorInvalid:     "a malformed record reached the engine",
	ErrorUnsupported: "an opcode the validators accept but the model does not execute",
	ErrorOperand:     "an operand out of range at execute",
	ErrorDoorbell:    "a DMA doorbell failed",
}

// ErrorText says what ERROR code c means ("code 9, unknown" past the
// codes).
func ErrorText(c uint32) string {
	if c < uint32(len(errorTexts)) {
		return errorTexts[c]
	}
	return fmt.Sprintf("code %d, unknown", c)
}

// engineCtrlOffsets are the engines' host-visible sequencer bases inside an
// NC's 64 MiB TPB window (get_seq_params_<arch> with host_visible: PE
// 0x2600000, ACT 0x2400000, POOL 0x3000000, DVE 0x2B00000, SP 0x2800000).
var engineCtrlOffsets = [TopSP]uint64{0x260_0000, 0x240_0000, 0x300_0000, 0x2B0_0000, 0x280_0000}

// EngineCtrlOffset returns where engine e's control block sits inside its
// NC's TPB window, and false for TOP_SP or an unknown engine.
func EngineCtrlOffset(e Engine) (uint64, bool) {
	if e >= TopSP {
		return 0, false
	}
	return engineCtrlOffsets[e], true
}
