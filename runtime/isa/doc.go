// Package isa is the runtime's instruction validators (seed 004): the
// silent predicate is_valid_neuron_isa_instruction and its debug twin
// (dbg_is_valid_*, the NEURON_ISA_TPB_DEBUG_BOOL idea), the per-engine gate
// ib_is_valid_engine_instruction with its HAL→ISA engine map
// ib_hal_to_isa_engine, and the block driver ib_final_inst_validity_check,
// over the 64-byte records of docs/isa.md (package hw/isa).
//
// libnrt.so carries the validator forest three times, one compiled copy per
// generation. Here it exists once: a Validator is that one design
// instantiated with one generation's constant table (Limits, the "+Δ const"
// cells of seed 004 §3), built from the runtime's arch tables (New,
// FromDispatch). The rules have two forms over one per-generation
// opcode table. The debug twins (Debug, DebugEngineInstruction, the
// reason in an InvalidError) walk them in the order below and name the
// first one a record breaks. The silent predicates (IsValid,
// IsValidEngineInstruction, FinalInstValidityCheck) need only the verdict
// and compute it in one pass straight from the record's words, with no call
// per rule and no allocation: the block driver checks every record a
// program loads. The two forms give the same verdict on every input; the
// agreement tests, the rule tests and FuzzValidator hold them to it.
//
// # Rules
//
// Checked in this order; the first failure is the Reason (Check, Field).
//
//  1. Size (tpb_inst_nbytes, "record"): exactly 64 bytes.
//  2. Opcode (is_valid_opcode, "opcode"): an opcode of the ISA, and available
//     on the generation ("opcode 0xbd (dma_transpose) needs cayman or later;
//     this is sunda").
//  3. Header (has_valid_neuron_header): engine byte 0..4 (top_sp 5 never),
//     and one of the opcode's engines ("engine"); flags only ACCUMULATE and
//     LAST, ACCUMULATE only on multiply_moving and activation ("flags"); op
//     byte 0 when the opcode does not use it ("op").
//  4. Op byte (is_valid_enum, "op"): tensor_tensor and tensor_scalar an ALU
//     op < 7; tensor_reduce add, max, min or multiply; activation a
//     function < 7.
//  5. Events (has_valid_neuron_events; is_valid_enum for a mode > 9):
//     wait slot none or a wait mode (sem_ge, sem_eq, sem_gt, event); signal
//     slot none or a signal mode (sem_set, sem_incr, sem_decr, event_set,
//     event_clear); mode none → index and value 0; event modes → value 0.
//     Fields "wait.mode", "signal.index", ….
//  6. Unused operands (is_valid_<mnemonic>): every operand the opcode does
//     not use (OpInfo.Operands) is all-zero bytes: "dst", "src0", "src1",
//     "imm0", "imm1", "aux"; and the src1 reserved byte is 0 whether src1 is
//     used or not ("src1.reserved" when it is).
//  7. Each used tensor, dst then src0: the tensor rules below (fields
//     "dst.…", "src0.…").
//  8. src1 when used: the tensor rules for src0's shape and strides at
//     src1's address and dtype ("src1.addr", "src1.dtype").
//  9. The opcode's own predicate is_valid_<mnemonic> (below).
//
// # Tensor rules
//
//  1. The ladder tensor1d_valid … tensor4d_valid, at the tensor's rank
//     (1 + the leading non-zero free sizes): partitions ≥ 1
//     (".partitions"); every dim from the first size-0 one on has size 0 and
//     stride 0 (".dims[i].size", ".dims[i].stride"); start partition +
//     partitions ≤ 128 (".partitions"; for src1 "src1.addr").
//  2. is_valid_dtype (".dtype"): a dtype of the generation (fp8_e4m3fn,
//     fp8_e8m0, MX ×4 and fp4 only mariana; int64/uint64 not sunda).
//  3. addr_aligned_dtype (".addr"): the byte offset is a multiple of the
//     dtype size.
//  4. tensor_start_addr_valid (".addr"): every addressed byte — offset +
//     Σ min(0, (size−1)·stride)·esize up to offset + (Σ max(0,
//     (size−1)·stride) + 1)·esize — lies in the partition (SBUF: the
//     generation's partition size; PSUM: 16 KiB), and a PSUM tensor lies in
//     one 2 KiB bank.
//
// # Per-opcode rules (is_valid_<mnemonic>)
//
//   - load_stationary: src0 rank 2, M ≤ 128 elements (K ≤ 128 partitions by
//     the ladder), in SBUF, not packed.
//   - multiply_moving: src0 in SBUF, rank 2, N ≤ 512, not packed; dst in
//     PSUM, fp32, rank 2, dst N == src0 N (dst partitions ≤ 128 by the
//     ladder; one PSUM bank by tensor_start_addr_valid).
//   - activation, tensor_tensor, tensor_scalar, reciprocal, act_reciprocal:
//     no packed operand; dst partitions and elements per partition equal
//     src0's (src1 has src0's shape by construction).
//   - tensor_copy, copy_cast: a packed dtype on either side needs equal
//     dtypes; dst shaped like src0.
//   - tensor_reduce: no packed operand; dst partitions == src0's, one
//     element per partition.
//   - transpose: no packed operand; src0 rank 2 [P × F]; PE: P, F ≤ 128,
//     DVE: P, F ≤ 32; dst rank 2 [F × P]; DVE: src0 and dst each inside one
//     32-partition quadrant (start/32 == (start+count−1)/32).
//   - memset, sort, conv_lut, jpeg_decode, s3s3d1_bn, s3s3d1_bn2: no packed
//     operand. quantize_fp4: src0 not packed (dst may be fp4).
//   - iota: dst an integer dtype.
//   - dma_trigger: aux < the generation's DMA engines (34 / 132), imm0 < 16
//     queues, 1 ≤ imm1 ≤ 2^24 − 16 descriptors.
//   - dma_transpose, dma_gather_transpose, dma_indirect: aux < DMA engines.
//   - nop, barrier, sem, ctrl_poll_sem, modify_pool_config, ctrl_es: nothing
//     beyond the shared rules.
//
// # Engine legality
//
// ib_is_valid_engine_instruction adds, after the structural check
// (ib_is_valid_engine_instruction, "engine"): the HAL engine's ISA engine is
// not TOP_SP, issues the opcode, and is the engine the record was built for.
package isa
