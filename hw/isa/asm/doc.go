// Package asm is the assembler and disassembler of the text syntax for the
// 64-byte instruction records of package isa (docs/isa.md): Assemble turns
// text into concatenated records, Disassemble turns records into text that
// assembles back to the same bytes, FormatRecord and ParseRecord do one
// record. `neuronsim asm` and `neuronsim disasm` are their command line.
//
// # Syntax
//
// One record or directive per line. A ';' or '#' starts a comment that runs
// to the end of the line; blank lines are ignored. Fields are separated by
// spaces or tabs and contain none. Names are lower case (dtype names are
// matched without regard to case).
//
//	line      = [ directive | record ] [ comment ] .
//	comment   = ( ";" | "#" ) { any character } .
//	directive = ".engine" ENGINE        sets the engine of the records that follow
//	          | ".record" HEX128 .      one raw record: exactly 128 hex digits, any bytes
//	record    = MNEMONIC { field } .    MNEMONIC: an isa.Opcodes() name
//	field     = "acc" | "last"          flags FlagAccumulate, FlagLast
//	          | "engine=" ENGINE        this record's engine (overrides .engine)
//	          | "op=" OP                byte 3
//	          | "wait=" sync | "signal=" sync
//	          | "dst=" tensor | "src0=" tensor
//	          | "src1=" addr ":" DTYPE  src1's address and dtype; its shape is src0's
//	          | "imm0=" imm | "imm1=" imm
//	          | "aux=" NUMBER .         u16
//	tensor    = SPACE "[" START ":" COUNT "," OFFSET "]" ":" DTYPE [ "[" [ dim { "," dim } ] "]" ] .
//	dim       = SIZE [ "/" STRIDE ] .   at most 3 dims; STRIDE in elements
//	addr      = SPACE "[" START "," OFFSET "]" .
//	sync      = MODE "(" INDEX [ "," VALUE ] ")" .
//	imm       = NUMBER | "f32(" FLOAT ")" .
//	NUMBER    = [ "-" ] ( DECIMAL | "0x" HEXDIGITS ) .
//	ENGINE    = "pe" | "act" | "pool" | "dve" | "sp" .
//	SPACE     = "sbuf" | "psum" .
//
// Ranges: START 0..127 (the start partition), COUNT 0..255 (partitions),
// OFFSET 0..0xFFFFFF (the byte offset inside the partition), SIZE 1..65535,
// STRIDE -32768..32767, INDEX 0..255, VALUE 0..65535, imm -2147483648..
// 0xFFFFFFFF (a negative number is stored as its two's complement). A number
// is decimal or 0x hex; a leading zero does not make it octal. A dim without
// a stride gets the row-major contiguous one: the product of the sizes of the
// dims after it (which must fit int16). A tensor with no dims (rank 1, the
// partitions only) is written without brackets or with "[]".
//
// OP is, for tensor_tensor, tensor_scalar and tensor_reduce, an ALU op name
// (isa.ParseALU: bypass, add, subtract, multiply, max, min, divide); for
// activation an activation function name (isa.ParseAct: identity, relu, exp,
// tanh, sigmoid, square, sqrt); for every other opcode a NUMBER 0..255.
//
// MODE is an isa.ParseSyncMode name. event, event_set and event_clear take
// an INDEX only, every other mode (none, sem_ge, sem_eq, sem_gt, sem_set,
// sem_incr, sem_decr) an INDEX and a VALUE. The slot a mode is written in is
// not checked: wait=sem_incr(1,1) encodes what it says.
//
// FLOAT is anything strconv.ParseFloat accepts (1, -0.5, 1e-3, 0x1p-4, inf,
// -Inf, nan) without underscores that fits fp32; its fp32 bit pattern is
// stored. A literal fp32 cannot hold exactly is rounded to the nearest fp32
// (ties to even), a denormal included (1e-45 is 0x1p-149), but a literal
// that would round to ±Inf (past 0x1.fffffep127, e.g. 1e39 or 0x1p128) or a
// non-zero literal that would round to zero (below half of 0x1p-149, e.g.
// 1e-50 or 0xep-200) is an error naming the literal and its column: write
// inf, or 0, for those.
//
// Examples:
//
//	.engine pe
//	load_stationary src0=sbuf[0:128,0]:bf16[64]
//	multiply_moving dst=psum[0:64,0]:fp32[512] src0=sbuf[0:128,0x80]:bf16[512] signal=sem_incr(0,1)
//	activation engine=act op=relu wait=sem_ge(0,1) dst=sbuf[0:64,0x1000]:bf16[512/1] src0=psum[0:64,0]:fp32[512] imm0=f32(1.0)
//	tensor_tensor engine=dve op=add dst=sbuf[4:16,0]:fp32[8/16,16/1] src0=sbuf[4:16,0x400]:fp32[8,16] src1=sbuf[4,0x800]:fp32
//	.record 00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
//
// # What the assembler checks
//
// Only syntax. It encodes what is written, whatever the opcode: a field the
// opcode does not use, an engine the opcode is not legal on or a tensor that
// overruns its partition assembles, and the runtime's validators judge it. It
// rejects what cannot be encoded or is not the syntax: unknown names,
// numbers out of their field's range, a zero dim size, more than 3 dims, a
// field given twice, a record before any engine is known. Errors carry the
// line and the byte column (both from 1) and say what was expected;
// Assemble reports up to MaxErrors of them. A line is at most MaxLineLen
// bytes, not counting its end (LF or CR-LF: a CR before the LF, or at the
// end of the file, is not one of the line's bytes), and a program at most
// MaxRecords records. A line too long is one error: the records after a too
// long .engine line are not also blamed for having no engine.
//
// # Disassembly
//
// Disassemble prints each record in the readable form when that form
// assembles back to the identical 64 bytes, and as ".record HEX" otherwise
// (an unknown opcode or engine, flag bits other than acc and last, a name
// out of range, the src1 reserved byte set, a tensor descriptor with
// nonzero dims after a zero size, an event mode with a value, …). The
// readable form is canonical: ".engine" when the engine changes (a raw
// record does not change it), then the fields in the order flags, op, wait,
// signal, dst, src0, src1, imm0, imm1, aux, zero fields omitted, every dim
// with its stride, offsets and immediates in hex. An immediate is printed as
// f32(X) when the opcode reads it as a float (activation imm0 and imm1;
// imm0 of tensor_scalar and memset with a float dst dtype) and X reproduces
// the bits. So Assemble(Disassemble(bin)) == bin for every bin whose length
// is a multiple of 64 (up to MaxRecords records), and disassembling that
// again gives the same text. Disassemble writes at most MaxRecordText bytes
// a record, so the text of MaxRecords records fits in MaxSource, what the
// commands read of a source.
package asm
