// Package isa is the project's model of the NeuronCore instruction record
// (docs/isa.md): a 64-byte record whose byte 0 is the opcode, a common header,
// an events preamble (one semaphore/event wait and one semaphore/event
// signal), up to three tensor descriptors and two immediates; the dtype set
// per generation; and the opcode table with per-generation availability and
// per-engine legality. The real encoding is not public; this one is ours, and
// the validators (runtime/isa), the engines (sim/tpb) and the assembler all
// read it from here.
package isa

import (
	"encoding/binary"
	"fmt"
)

// RecordSize is the size of one instruction record (TPB_INST_NBYTES).
const RecordSize = 64

// Record byte layout.
const (
	offOpcode = 0  // u8
	offEngine = 1  // u8: the ISA engine the record is built for
	offFlags  = 2  // u8: Flag*
	offOp     = 3  // u8: ALU op, activation function or reduce op
	offWait   = 4  // Sync: mode u8, index u8, value u16
	offSignal = 8  // Sync
	offDst    = 12 // Tensor (18 bytes)
	offSrc0   = 30 // Tensor (18 bytes)
	offSrc1   = 48 // Src1: address u32, dtype u8, reserved u8
	offImm0   = 54 // u32 (f32 bits or integer)
	offImm1   = 58 // u32
	offAux    = 62 // u16: DMA engine of a trigger, reserved otherwise
	tensorLen = 18
)

// Engine is an ISA engine (NEURON_ISA_TPB_NEURON_ENGINE).
type Engine uint8

// The ISA engines: PE, ACT, POOL, DVE, SP map one-to-one from the HAL's;
// TOP_SP is where an unknown HAL engine falls back to.
const (
	PE Engine = iota
	ACT
	POOL
	DVE
	SP
	TopSP
	NumEngines
)

var engineNames = [NumEngines]string{"pe", "act", "pool", "dve", "sp", "top_sp"}

// String returns the engine's name in the text syntax.
func (e Engine) String() string {
	if e < NumEngines {
		return engineNames[e]
	}
	return fmt.Sprintf("engine(%d)", uint8(e))
}

// ParseEngine reads an engine name.
func ParseEngine(s string) (Engine, error) {
	for e := Engine(0); e < NumEngines; e++ {
		if s == engineNames[e] {
			return e, nil
		}
	}
	return 0, fmt.Errorf("isa: unknown engine %q (want pe, act, pool, dve, sp or top_sp)", s)
}

// Record flags (byte 2).
const (
	FlagAccumulate uint8 = 1 << 0 // PE: add into PSUM; ACT: add into dst
	FlagLast       uint8 = 1 << 1 // the engine stops after this record
	FlagMask       uint8 = FlagAccumulate | FlagLast
)

// SyncMode says what a wait or signal does.
type SyncMode uint8

// Wait modes (waits block the record until true) and signal modes (done when
// the record completes). Conditions compare the semaphore, as a signed
// 32-bit value, with the 16-bit value.
const (
	SyncNone       SyncMode = iota
	WaitSemGE               // wait until semaphore ≥ value
	WaitSemEQ               // wait until semaphore == value
	WaitSemGT               // wait until semaphore > value
	WaitEvent               // wait until the event is set
	SignalSemSet            // semaphore = value
	SignalSemIncr           // semaphore += value
	SignalSemDecr           // semaphore -= value
	SignalEventSet          // event = 1
	SignalEventClr          // event = 0
	NumSyncModes
)

var syncNames = [NumSyncModes]string{"none", "sem_ge", "sem_eq", "sem_gt", "event", "sem_set", "sem_incr", "sem_decr", "event_set", "event_clear"}

// String returns the mode's name in the text syntax.
func (m SyncMode) String() string {
	if m < NumSyncModes {
		return syncNames[m]
	}
	return fmt.Sprintf("sync(%d)", uint8(m))
}

// IsWait reports whether the mode is a wait (allowed in the wait slot).
func (m SyncMode) IsWait() bool { return m >= WaitSemGE && m <= WaitEvent }

// IsSignal reports whether the mode is a signal (allowed in the signal slot).
func (m SyncMode) IsSignal() bool { return m >= SignalSemSet && m <= SignalEventClr }

// ParseSyncMode reads a sync mode name.
func ParseSyncMode(s string) (SyncMode, error) {
	for m := SyncMode(0); m < NumSyncModes; m++ {
		if s == syncNames[m] {
			return m, nil
		}
	}
	return 0, fmt.Errorf("isa: unknown sync mode %q", s)
}

// Sync is one slot of the events preamble.
type Sync struct {
	Mode  SyncMode
	Index uint8  // semaphore or event index, 0..255
	Value uint16 // compared or applied value
}

// Address bits of a tensor's start address: bit 31 selects PSUM, bits 30..24
// the start partition, bits 23..0 the byte offset inside the partition.
const (
	AddrPSUM           uint32 = 1 << 31
	addrPartitionShift        = 24
	addrPartitionMask  uint32 = 0x7F
	addrOffsetMask     uint32 = 0xFF_FFFF
)

// Addr builds a start address.
func Addr(psum bool, partition int, offset uint32) uint32 {
	a := uint32(partition)&addrPartitionMask<<addrPartitionShift | offset&addrOffsetMask
	if psum {
		a |= AddrPSUM
	}
	return a
}

// Location splits a start address.
func Location(a uint32) (psum bool, partition int, offset uint32) {
	return a&AddrPSUM != 0, int(a >> addrPartitionShift & addrPartitionMask), a & addrOffsetMask
}

// MaxFreeElements is the most elements per partition a tensor may describe:
// the engines' 64 K free size (trainium-facts §7: Vector/Scalar free size up
// to 64K elements).
const MaxFreeElements = 1 << 16

// MaxFreeDims is the number of free dimensions a tensor descriptor holds
// (the partition dimension is the fourth).
const MaxFreeDims = 3

// Dim is one free dimension: Size elements, Stride elements apart.
type Dim struct {
	Size   uint16
	Stride int16
}

// Tensor is a tensor descriptor: Partitions partitions from the start
// address's partition, and up to three free dimensions; a dimension of size
// 0 ends the list. Element (p, i, j, k) sits in partition start+p at byte
// offset + (i·s1 + j·s2 + k·s3)·size of Dtype.
type Tensor struct {
	Addr       uint32
	Dtype      Dtype
	Partitions uint8
	Dims       [MaxFreeDims]Dim
}

// Rank returns 1 (the partitions) plus the free dimensions in use.
func (t Tensor) Rank() int {
	r := 1
	for _, d := range t.Dims {
		if d.Size == 0 {
			break
		}
		r++
	}
	return r
}

// Elements returns the elements per partition (the product of the free
// sizes in use).
func (t Tensor) Elements() int {
	n := 1
	for _, d := range t.Dims {
		if d.Size == 0 {
			break
		}
		n *= int(d.Size)
	}
	return n
}

// Zero reports whether the descriptor is unused (all zero).
func (t Tensor) Zero() bool { return t == Tensor{} }

// Src1 is the third operand: its own address and dtype, the shape and
// strides of Src0.
type Src1 struct {
	Addr  uint32
	Dtype Dtype
}

// Record is one decoded instruction record.
type Record struct {
	Opcode Opcode
	Engine Engine
	Flags  uint8
	Op     uint8 // ALU op, activation function or reduce op
	Wait   Sync
	Signal Sync
	Dst    Tensor
	Src0   Tensor
	Src1   Src1
	Imm0   uint32
	Imm1   uint32
	Aux    uint16
}

// Encode writes the record's 64 bytes into b[:64].
func (r *Record) Encode(b []byte) {
	_ = b[RecordSize-1]
	clear(b[:RecordSize])
	b[offOpcode], b[offEngine], b[offFlags], b[offOp] = byte(r.Opcode), byte(r.Engine), r.Flags, r.Op
	putSync(b[offWait:], r.Wait)
	putSync(b[offSignal:], r.Signal)
	putTensor(b[offDst:], r.Dst)
	putTensor(b[offSrc0:], r.Src0)
	binary.LittleEndian.PutUint32(b[offSrc1:], r.Src1.Addr)
	b[offSrc1+4] = byte(r.Src1.Dtype)
	binary.LittleEndian.PutUint32(b[offImm0:], r.Imm0)
	binary.LittleEndian.PutUint32(b[offImm1:], r.Imm1)
	binary.LittleEndian.PutUint16(b[offAux:], r.Aux)
}

// Bytes returns the record's encoding.
func (r *Record) Bytes() [RecordSize]byte {
	var b [RecordSize]byte
	r.Encode(b[:])
	return b
}

// Decode reads a record from b[:64]. It never fails on content: every byte
// pattern decodes, and the validators judge it. Only a short buffer is an
// error. Reserved bytes are ignored here (the validators require them 0).
func Decode(b []byte) (Record, error) {
	if len(b) < RecordSize {
		return Record{}, fmt.Errorf("isa: a record is %d bytes, got %d", RecordSize, len(b))
	}
	return Record{
		Opcode: Opcode(b[offOpcode]), Engine: Engine(b[offEngine]), Flags: b[offFlags], Op: b[offOp],
		Wait: getSync(b[offWait:]), Signal: getSync(b[offSignal:]),
		Dst: getTensor(b[offDst:]), Src0: getTensor(b[offSrc0:]),
		Src1: Src1{Addr: binary.LittleEndian.Uint32(b[offSrc1:]), Dtype: Dtype(b[offSrc1+4])},
		Imm0: binary.LittleEndian.Uint32(b[offImm0:]), Imm1: binary.LittleEndian.Uint32(b[offImm1:]),
		Aux: binary.LittleEndian.Uint16(b[offAux:]),
	}, nil
}

// Reserved returns the reserved byte of the Src1 slot, which must be 0.
func Reserved(b []byte) uint8 { return b[offSrc1+5] }

func putSync(b []byte, s Sync) {
	b[0], b[1] = byte(s.Mode), s.Index
	binary.LittleEndian.PutUint16(b[2:], s.Value)
}

func getSync(b []byte) Sync {
	return Sync{Mode: SyncMode(b[0]), Index: b[1], Value: binary.LittleEndian.Uint16(b[2:])}
}

func putTensor(b []byte, t Tensor) {
	binary.LittleEndian.PutUint32(b[0:], t.Addr)
	b[4], b[5] = byte(t.Dtype), t.Partitions
	for i, d := range t.Dims {
		binary.LittleEndian.PutUint16(b[6+4*i:], d.Size)
		binary.LittleEndian.PutUint16(b[8+4*i:], uint16(d.Stride))
	}
}

func getTensor(b []byte) Tensor {
	t := Tensor{Addr: binary.LittleEndian.Uint32(b[0:]), Dtype: Dtype(b[4]), Partitions: b[5]}
	for i := range t.Dims {
		t.Dims[i] = Dim{Size: binary.LittleEndian.Uint16(b[6+4*i:]), Stride: int16(binary.LittleEndian.Uint16(b[8+4*i:]))}
	}
	return t
}
