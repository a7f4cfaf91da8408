package isa

import (
	"fmt"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/arch"
)

// Validator is one generation's validator forest: the silent predicates,
// their debug twins and the ib_* glue of seed 004, instantiated from that
// generation's Limits. The generation is fixed when the Validator is built,
// as tdrv_arch_ops latches ib_final_inst_validity_check_v{2,3,4} once per
// process. A Validator is immutable and safe for concurrent use.
type Validator struct {
	f   *forest
	log Logger
}

// New returns the validator forest (is_valid_neuron_isa_instruction and the
// ib_* glue) of the generation the arch tables describe — the runtime's arch
// selection, as al_hal_tpb_get_arch_type latches ib_*_v{2,3,4}. t must be
// complete (arch.For or a Dispatch).
func New(t *arch.Tables) *Validator { return &Validator{f: newForest(LimitsFor(t))} }

// FromDispatch returns the validator forest of the runtime's selected arch
// (the tdrv_arch_ops final_inst_validity_check slot), or an error wrapping
// arch.ErrNotSelected before any selection.
func FromDispatch(d *arch.Dispatch) (*Validator, error) {
	t, err := d.Tables()
	if err != nil {
		return nil, fmt.Errorf("runtime/isa: validator: %w", err)
	}
	return New(t), nil
}

// WithLogger returns a validator of the same forest that writes the
// nlog_write lines of ib_hal_to_isa_engine, ib_is_valid_engine_instruction
// and ib_final_inst_validity_check to l (nil: none).
func (v *Validator) WithLogger(l Logger) *Validator { return &Validator{f: v.f, log: l} }

// Limits returns the "+Δ const" table (seed 004 §3) the forest was
// instantiated with.
func (v *Validator) Limits() Limits { return v.f.lim }

// IsValid is is_valid_neuron_isa_instruction, the silent structural
// predicate over one 64-byte record: the header and events preamble
// (has_valid_neuron_header, has_valid_neuron_events), the unused operands,
// the tensor ladder (tensorNd_valid, is_valid_dtype, addr_aligned_dtype,
// tensor_start_addr_valid) and the opcode's own is_valid_<mnemonic>. It
// does not allocate. Any length other than 64 is invalid.
func (v *Validator) IsValid(rec []byte) bool {
	return len(rec) == hwisa.RecordSize && v.f.accept((*[hwisa.RecordSize]byte)(rec))
}

// Debug is the debug twin of IsValid (dbg_is_valid_*, returning a
// NEURON_ISA_TPB_DEBUG_BOOL): the same rules, walked in order, with the
// first failure's check, field and message. Debug(rec).OK ==
// IsValid(rec) for every input.
func (v *Validator) Debug(rec []byte) Reason {
	c := checker{f: v.f}
	if c.record(rec) {
		return Reason{OK: true}
	}
	return c.why
}

// HalToISAEngine is ib_hal_to_isa_engine: HAL engines 0..4 (PE, ACT, POOL,
// DVE, SP) map to the ISA engines of the same numbers; anything past SP logs
// MsgUnknownEngine and falls back to TOP_SP.
func (v *Validator) HalToISAEngine(hal uint32) hwisa.Engine {
	e, ok := halToISA(hal)
	if !ok && v.log != nil {
		v.log.Logf(fmtUnknownEngine, hal)
	}
	return e
}

func halToISA(hal uint32) (hwisa.Engine, bool) {
	if hal > uint32(hwisa.SP) {
		return hwisa.TopSP, false
	}
	return hwisa.Engine(hal), true
}

// IsValidEngineInstruction is ib_is_valid_engine_instruction: the HAL
// engine is mapped (HalToISAEngine, which logs an unknown one), the record
// must pass IsValid, and then the mapped engine must issue the opcode
// (OpInfo.Engines; TOP_SP never) and be the engine the record was built
// for. A rejected record's debug reason is logged as MsgErrorMessage. The
// accepting path does not allocate.
func (v *Validator) IsValidEngineInstruction(hal uint32, rec []byte) bool {
	return v.engineInstruction(v.HalToISAEngine(hal), rec)
}

// engineInstruction is IsValidEngineInstruction past the engine mapping.
// Once accept holds, the record's engine issues the opcode, so the engine
// rule reduces to the record being built for eng (never TOP_SP then).
func (v *Validator) engineInstruction(eng hwisa.Engine, rec []byte) bool {
	if len(rec) == hwisa.RecordSize && v.f.accept((*[hwisa.RecordSize]byte)(rec)) && hwisa.Engine(rec[offEngine]) == eng {
		return true
	}
	if v.log != nil {
		r := v.debugEngine(eng, rec)
		v.log.Logf(fmtErrorMessage, r.Number(), r.String())
	}
	return false
}

// DebugEngineInstruction is the debug twin of IsValidEngineInstruction
// (ib_is_valid_engine_instruction's diagnostic tail,
// debug_invalid_neuron_isa_instruction): the reason it would log, without
// logging. Its OK equals IsValidEngineInstruction's answer.
func (v *Validator) DebugEngineInstruction(hal uint32, rec []byte) Reason {
	eng, _ := halToISA(hal)
	return v.debugEngine(eng, rec)
}

func (v *Validator) debugEngine(eng hwisa.Engine, rec []byte) Reason {
	c := checker{f: v.f}
	if c.record(rec) && c.engine(eng) {
		return Reason{OK: true}
	}
	return c.why
}

// FinalInstValidityCheck is ib_final_inst_validity_check, the block driver
// behind tdrv_arch_ops' final_inst_validity_check slot: the block must be a
// whole number of 64-byte records (else an error wrapping ErrBlockSize),
// and each record, in order, must pass IsValidEngineInstruction for HAL
// engine hal. The first rejected record stops the walk: it is logged as
// MsgInvalidInstruction (opcode byte, byte offset) and returned as an
// *InvalidError wrapping ErrInvalidInstruction. An empty block is valid.
func (v *Validator) FinalInstValidityCheck(block []byte, hal uint32) error {
	if n := len(block); n%hwisa.RecordSize != 0 {
		return fmt.Errorf("ib_final_inst_validity_check: a block of %d bytes: %w", n, ErrBlockSize)
	}
	if len(block) == 0 {
		return nil
	}
	eng := v.HalToISAEngine(hal) // once: the walk stops at the first record an unknown engine rejects
	for off := 0; off < len(block); off += hwisa.RecordSize {
		rec := (*[hwisa.RecordSize]byte)(block[off : off+hwisa.RecordSize])
		if v.f.accept(rec) && hwisa.Engine(rec[offEngine]) == eng {
			continue
		}
		v.engineInstruction(eng, rec[:]) // logs the reason
		if v.log != nil {
			v.log.Logf(fmtInvalidInstruction, rec[0], off)
		}
		return &InvalidError{Opcode: rec[0], Offset: off, Reason: v.debugEngine(eng, rec[:])}
	}
	return nil
}
