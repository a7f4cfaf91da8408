package isa

import (
	"errors"
	"fmt"
	"strings"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
)

// Reason is the answer of a debug twin: the NEURON_ISA_TPB_DEBUG_BOOL the
// dbg_is_valid_* validators return — a verdict plus, when false, the check
// that failed, the record field it judged and a message. A Reason of a valid
// record is {OK: true} and nothing else.
type Reason struct {
	OK    bool
	Check string // the failing predicate: one of the Check* constants or "is_valid_<mnemonic>"
	Field string // the record field, e.g. "dst.dims[1].size", "wait.mode", "aux"
	Msg   string // what was wrong, with the values involved
}

// The predicates a Reason names (Reason.Check). Per-opcode predicates are
// "is_valid_" + the mnemonic (CheckOpcodeRule).
const (
	// CheckRecordSize: the record is not TPB_INST_NBYTES (64) bytes.
	CheckRecordSize = "tpb_inst_nbytes"
	// CheckOpcode (is_valid_opcode): byte 0 is not an opcode of the ISA, or
	// not one of this generation's — the dispatcher's opcode→struct switch.
	CheckOpcode = "is_valid_opcode"
	// CheckHeader (has_valid_neuron_header): engine, flags, or an op byte
	// the opcode does not use.
	CheckHeader = "has_valid_neuron_header"
	// CheckEvents (has_valid_neuron_events): the wait/signal preamble.
	CheckEvents = "has_valid_neuron_events"
	// CheckEnum (is_valid_enum): an enumerated byte out of its range (sync
	// mode, ALU op, activation function, reduce op).
	CheckEnum = "is_valid_enum"
	// CheckTensor1D … CheckTensor4D (tensor1d_valid … tensor4d_valid): the
	// descriptor ladder — partitions and the free-dimension list — at the
	// tensor's rank.
	CheckTensor1D = "tensor1d_valid"
	CheckTensor2D = "tensor2d_valid" // tensor2d_valid
	CheckTensor3D = "tensor3d_valid" // tensor3d_valid
	CheckTensor4D = "tensor4d_valid" // tensor4d_valid
	// CheckDtype (is_valid_dtype): unknown dtype, or not on this generation.
	CheckDtype = "is_valid_dtype"
	// CheckAligned (addr_aligned_dtype): the byte offset is not a multiple
	// of the dtype size.
	CheckAligned = "addr_aligned_dtype"
	// CheckStartAddr (tensor_start_addr_valid): some addressed byte lies
	// outside the partition (or, in PSUM, outside one bank).
	CheckStartAddr = "tensor_start_addr_valid"
	// CheckEngine: the per-engine legality of ib_is_valid_engine_instruction.
	CheckEngine = "ib_is_valid_engine_instruction"
)

// CheckOpcodeRule returns the name of an opcode's own predicate,
// is_valid_<mnemonic> (e.g. "is_valid_transpose").
func CheckOpcodeRule(mnemonic string) string { return "is_valid_" + mnemonic }

var ladder = [5]string{"", CheckTensor1D, CheckTensor2D, CheckTensor3D, CheckTensor4D}

// checkNumbers numbers the shared predicates for the "Error message
// number" of the diagnostic log line; per-opcode predicates are 0x100+opcode.
var checkNumbers = map[string]uint32{
	CheckRecordSize: 1, CheckOpcode: 2, CheckHeader: 3, CheckEvents: 4, CheckEnum: 5,
	CheckTensor1D: 6, CheckTensor2D: 7, CheckTensor3D: 8, CheckTensor4D: 9,
	CheckDtype: 10, CheckAligned: 11, CheckStartAddr: 12, CheckEngine: 13,
}

// Number returns the message number ib_is_valid_engine_instruction logs
// with the reason ("Error message number:%u, message: %s"): 0 for OK, 1..13 for the shared predicates in the
// order of the Check* constants, 0x100 + opcode for is_valid_<mnemonic>.
func (r Reason) Number() uint32 {
	if r.OK {
		return 0
	}
	if n, ok := checkNumbers[r.Check]; ok {
		return n
	}
	if m, ok := strings.CutPrefix(r.Check, "is_valid_"); ok {
		if o, err := hwisa.ParseOpcode(m); err == nil {
			return 0x100 + uint32(o)
		}
	}
	return 0xFFFF
}

// String renders the reason — the message of ib_is_valid_engine_instruction's
// log line and of InvalidError: "ok", or "check field: message".
func (r Reason) String() string {
	switch {
	case r.OK:
		return "ok"
	case r.Field == "":
		return r.Check + ": " + r.Msg
	}
	return r.Check + " " + r.Field + ": " + r.Msg
}

// The runtime's log strings, exactly as libnrt.so carries them (C format
// strings: %u is an unsigned decimal). The Logger receives them with %u
// turned into Go's %d.
const (
	// MsgUnknownEngine is ib_hal_to_isa_engine's line for a HAL engine past SP (@0x812f58).
	MsgUnknownEngine = "Unknown hal->isa engine enum conversion (%u --> ?)"
	// MsgInvalidInstruction is ib_final_inst_validity_check's line for the first bad record (@0x813030).
	MsgInvalidInstruction = "Found invalid instruction! opcode=%u, offset=%u"
	// MsgErrorMessage is ib_is_valid_engine_instruction's diagnostic tail, which
	// logs the DEBUG_BOOL reason of a rejected record (@0x812f30).
	MsgErrorMessage = "Error message number:%u, message: %s"
)

// GoFormat turns one of the ib_* glue's nlog_write format strings (C, %u)
// into a Go one (%d), as the Logger receives it.
func GoFormat(c string) string { return strings.ReplaceAll(c, "%u", "%d") }

var (
	fmtUnknownEngine      = GoFormat(MsgUnknownEngine)
	fmtInvalidInstruction = GoFormat(MsgInvalidInstruction)
	fmtErrorMessage       = GoFormat(MsgErrorMessage)
)

// Logger receives the nlog_write lines of ib_hal_to_isa_engine,
// ib_is_valid_engine_instruction and ib_final_inst_validity_check (the Msg*
// strings, Go formatted). A nil Logger logs nothing.
type Logger interface {
	Logf(format string, args ...any)
}

// LoggerFunc adapts a function (log.Printf, t.Logf) to Logger, the sink of
// the ib_* glue's nlog_write lines.
type LoggerFunc func(format string, args ...any)

// Logf calls f with one nlog_write line.
func (f LoggerFunc) Logf(format string, args ...any) { f(format, args...) }

// Errors of ib_final_inst_validity_check.
var (
	// ErrBlockSize: the instruction block is not a whole number of 64-byte
	// records (the driver's TPB_INST_NBYTES stride assert).
	ErrBlockSize = errors.New("instruction block size is not a multiple of TPB_INST_NBYTES (64)")
	// ErrInvalidInstruction: a record of the block failed
	// ib_is_valid_engine_instruction; the error is an *InvalidError.
	ErrInvalidInstruction = errors.New("invalid instruction")
)

// InvalidError is ib_final_inst_validity_check's verdict on a block: the
// first rejected record's opcode byte and byte offset, and the debug twin's
// reason. It wraps ErrInvalidInstruction.
type InvalidError struct {
	Opcode uint8
	Offset int
	Reason Reason
}

// Error is the runtime's log line ("Found invalid instruction! opcode=%u,
// offset=%u") followed by ": " and the reason.
func (e *InvalidError) Error() string {
	return fmt.Sprintf(fmtInvalidInstruction, e.Opcode, e.Offset) + ": " + e.Reason.String()
}

// Unwrap returns ErrInvalidInstruction (ib_final_inst_validity_check's false).
func (e *InvalidError) Unwrap() error { return ErrInvalidInstruction }
