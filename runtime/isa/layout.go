package isa

import (
	"encoding/binary"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
)

// The record layout of docs/isa.md, read here straight from the bytes:
// accept reads words, the checker decodes only what an opcode uses. TestLayout holds these
// against hw/isa's Encode.
const (
	offOpcode = 0  // u8
	offEngine = 1  // u8
	offFlags  = 2  // u8
	offOp     = 3  // u8
	offWait   = 4  // mode u8, index u8, value u16
	offSignal = 8  // mode u8, index u8, value u16
	offDst    = 12 // tensor descriptor, 18 bytes
	offSrc0   = 30 // tensor descriptor, 18 bytes
	offSrc1   = 48 // address u32, dtype u8, reserved u8
	offImm0   = 54 // u32
	offImm1   = 58 // u32
	offAux    = 62 // u16
)

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func loadSync(b []byte) hwisa.Sync {
	return hwisa.Sync{Mode: hwisa.SyncMode(b[0]), Index: b[1], Value: le16(b[2:])}
}

// loadTensor decodes an 18-byte tensor descriptor. It stores each field
// directly: a composite literal would be built in a temporary with narrow
// stores and copied with wide loads, which stalls store forwarding.
func loadTensor(t *hwisa.Tensor, b []byte) {
	x, y, z := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint16(b[8:]), binary.LittleEndian.Uint64(b[10:])
	t.Addr, t.Dtype, t.Partitions = uint32(x), hwisa.Dtype(x>>32), uint8(x>>40)
	t.Dims[0].Size, t.Dims[0].Stride = uint16(x>>48), int16(y)
	t.Dims[1].Size, t.Dims[1].Stride = uint16(z), int16(z>>16)
	t.Dims[2].Size, t.Dims[2].Stride = uint16(z>>32), int16(z>>48)
}

// operandFields are the record's operand regions, in the order a Reason
// names them: an opcode that does not use one requires it all zero.
var operandFields = [...]struct {
	uses     uint16
	name     string
	from, to int
}{
	{hwisa.UsesDst, "dst", offDst, offSrc0},
	{hwisa.UsesSrc0, "src0", offSrc0, offSrc1},
	{hwisa.UsesSrc1, "src1", offSrc1, offImm0},
	{hwisa.UsesImm0, "imm0", offImm0, offImm1},
	{hwisa.UsesImm1, "imm1", offImm1, offAux},
	{hwisa.UsesAux, "aux", offAux, hwisa.RecordSize},
}

// zeroMask marks, 8 bytes to a word, the record bytes an opcode requires
// zero: its unused operands and the Src1 reserved byte.
type zeroMask [hwisa.RecordSize / 8]uint64

func zeroMaskOf(operands uint16) zeroMask {
	var bytes [hwisa.RecordSize]byte
	for _, f := range operandFields {
		if operands&f.uses == 0 {
			for i := f.from; i < f.to; i++ {
				bytes[i] = 0xFF
			}
		}
	}
	bytes[offSrc1+5] = 0xFF
	var m zeroMask
	for k := range m {
		m[k] = le64(bytes[8*k:])
	}
	return m
}
