package isa

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/arch"
)

// Legality constants of the record model (docs/isa.md) that are the same on
// every generation. They sit in Limits beside the per-generation ones so
// that every number a validator compares against lives in one table.
const (
	// QuadrantPartitions is the quadrant geometry of seed 004 §3 in this
	// model: is_valid_transpose keeps a DVE transpose in one 32-partition quadrant.
	QuadrantPartitions = 32
	// MaxStationary is is_valid_load_stationary's M (and K, the partitions): 128.
	MaxStationary = 128
	// MaxMovingN is is_valid_multiply_moving's N: 512 fp32 results fill one 2 KiB PSUM bank.
	MaxMovingN = 512
	// MaxPETranspose is is_valid_transpose's P and F limit on PE: 128.
	MaxPETranspose = 128
	// MaxDVETranspose is is_valid_transpose's P and F limit on DVE: 32 (one quadrant).
	MaxDVETranspose = 32
	// MaxDMADescriptors is the largest descriptor count is_valid_dma_trigger
	// accepts in imm1: 2^24 − 16.
	MaxDMADescriptors = 1<<24 - 16
)

// DtypeSet holds one bit per hw/isa dtype: the dtypes a generation's
// is_valid_dtype accepts.
type DtypeSet uint32

// Has reports whether the set holds dtype d: is_valid_dtype's test.
func (s DtypeSet) Has(d hwisa.Dtype) bool { return d < 32 && s&(1<<d) != 0 }

// OpcodeSet holds one bit per opcode byte: the opcodes a generation's
// is_valid_opcode (the dispatcher's opcode→struct switch) accepts.
type OpcodeSet [4]uint64

// Has reports whether the set holds opcode o: is_valid_opcode's test.
func (s *OpcodeSet) Has(o hwisa.Opcode) bool { return s[o>>6]&(1<<(o&63)) != 0 }

func (s *OpcodeSet) add(o hwisa.Opcode) { s[o>>6] |= 1 << (o & 63) }

// Limits is one generation's constant table: the "+Δ const" cells of seed
// 004 §3 in this model. In libnrt.so the validator forest is compiled three
// times from one aws_neuron_isa_tpb_assert.h, each copy against its arch's
// legality constants — address apertures, quadrant geometry, active-channel
// windows, the dtype set and the per-generation opcodes. Here the forest
// exists once and reads those constants from a Limits:
//
//   - address aperture → SBUFPartitionBytes (<arch>_get_valid_sbuf_partition_size),
//     Partitions (<arch>_get_num_sbuf_partitions), PSUMPartitionBytes and
//     PSUMBankBytes: a tensor's every byte must lie in its partition, and a
//     PSUM tensor in one bank;
//   - quadrant geometry → QuadrantPartitions (the DVE transpose quadrant);
//   - active-channel windows → DMAEngines and DMAQueues (the DMA engine-id
//     window the aux field of dma_* records must fall in);
//   - the dtype set → Dtypes (fp8_e4m3fn, MX and fp4 on mariana; 64-bit
//     integers not on sunda), and the opcode delta → Opcodes.
//
// Limits is comparable; LimitsFor builds it from the runtime's arch tables.
type Limits struct {
	Generation hwarch.Generation

	SBUFPartitionBytes uint32 // Soc.ValidSBUFPartitionSize: 0x30000 / 0x38000 / 0x40000
	Partitions         int    // Soc.NumSBUFPartitions: 128 (SBUF and PSUM)
	PSUMPartitionBytes uint32 // Geometry.PSUMPartitionSize: 16 KiB
	PSUMBankBytes      uint32 // PSUM partition / Geometry.PSUMBanks: 2 KiB
	QuadrantPartitions int    // 32

	DMAEngines        int    // Geometry.DMAEngines: engine ids 0..33 (sunda) / 0..131
	DMAQueues         int    // Geometry.DMAQueuesPerEngine: 16
	MaxDMADescriptors uint32 // 2^24 − 16

	MaxStationary   int // load_stationary M: 128
	MaxMovingN      int // multiply_moving N: 512
	MaxPETranspose  int // 128
	MaxDVETranspose int // 32

	Dtypes  DtypeSet  // isa.Dtype.AvailableOn
	Opcodes OpcodeSet // isa.Opcode.AvailableOn
}

// LimitsFor returns the "+Δ const" column of seed 004 §3 for the generation
// the arch tables describe: the SBUF aperture from
// <arch>_get_valid_sbuf_partition_size and <arch>_get_num_sbuf_partitions
// (Soc), PSUM and the DMA engine window from the geometry, the dtype and
// opcode sets from hw/isa. t must come from arch.For (or a Dispatch); a nil
// or partial table panics.
func LimitsFor(t *arch.Tables) Limits {
	if t == nil || t.Soc == nil || t.Geometry == nil {
		panic("runtime/isa: LimitsFor needs complete arch tables (arch.For or a Dispatch)")
	}
	geo := t.Geometry
	psum := geo.PSUMPartitionSize()
	l := Limits{
		Generation:         t.Generation,
		SBUFPartitionBytes: uint32(t.Soc.ValidSBUFPartitionSize()),
		Partitions:         int(t.Soc.NumSBUFPartitions()),
		PSUMPartitionBytes: uint32(psum),
		PSUMBankBytes:      uint32(psum / uint64(geo.PSUMBanks)),
		QuadrantPartitions: QuadrantPartitions,
		DMAEngines:         geo.DMAEngines,
		DMAQueues:          geo.DMAQueuesPerEngine,
		MaxDMADescriptors:  MaxDMADescriptors,
		MaxStationary:      MaxStationary,
		MaxMovingN:         MaxMovingN,
		MaxPETranspose:     MaxPETranspose,
		MaxDVETranspose:    MaxDVETranspose,
	}
	for d := hwisa.Dtype(0); d < hwisa.NumDtypes; d++ {
		if d.AvailableOn(t.Generation) {
			l.Dtypes |= 1 << d
		}
	}
	for o := 0; o < 256; o++ {
		if hwisa.Opcode(o).AvailableOn(t.Generation) {
			l.Opcodes.add(hwisa.Opcode(o))
		}
	}
	return l
}

// String summarises the "+Δ const" table.
func (l Limits) String() string {
	n := 0
	for o := 0; o < 256; o++ {
		if l.Opcodes.Has(hwisa.Opcode(o)) {
			n++
		}
	}
	return fmt.Sprintf("%s: SBUF partition %#x B × %d, PSUM partition %d B (banks of %d B), quadrant %d, "+
		"DMA engines %d × %d queues, %d opcodes, dtypes %#x",
		l.Generation, l.SBUFPartitionBytes, l.Partitions, l.PSUMPartitionBytes, l.PSUMBankBytes,
		l.QuadrantPartitions, l.DMAEngines, l.DMAQueues, n, uint32(l.Dtypes))
}
