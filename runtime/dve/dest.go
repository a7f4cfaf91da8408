package dve

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
)

// Sunda's implicit DVE table offsets inside the TPB window. Sunda has no
// get_dve_table_offsets getter (seed 001 §3: "offsets are implicit"); these
// are chosen: the three sunda tables packed contiguously, in
// dve_config_dma_state_t order, directly below sunda's parameter RAM
// (get_dve_parameter_ram_params_sunda 0x2B84000), so that datapath ends
// exactly where the parameter RAM begins.
const (
	SundaOpcodeOffset      uint64 = 0x2B8_0000 // 0x2000 bytes
	SundaControlFastOffset uint64 = 0x2B8_2000 // 0x1000 bytes
	SundaDatapathOffset    uint64 = 0x2B8_3000 // 0x1000 bytes; ends at 0x2B84000
)

// Dest is one staged destination of the DVE-table load.
type Dest struct {
	// Name is the table name (TableOpcode, …, TableParamRAM).
	Name string
	// Offset is the destination offset inside the NeuronCore's TPB window
	// (get_dve_table_offsets / get_dve_parameter_ram_params).
	Offset uint64
	// Addr is the destination device address: the TPB AXI base
	// (aws_hal_stpb_get_axi_offset, here Khal.TPBBase(nc)) + Offset.
	Addr uint64
	// Size is the number of bytes (get_dve_table_sizes; 0x400 for param RAM).
	Size uint64
}

// End returns the first device address past the destination.
func (d Dest) End() uint64 { return d.Addr + d.Size }

// Destinations returns the staged destinations of NeuronCore nc in load
// order: opcode, control-fast, control-slow (cayman/mariana only), datapath,
// parameter RAM. Offsets come from get_dve_table_offsets_<arch>
// (Khal.DVETableOffsets) on cayman/mariana and from the implicit
// SundaOpcodeOffset / SundaControlFastOffset / SundaDatapathOffset on sunda;
// the parameter RAM from get_dve_parameter_ram_params_<arch>
// (Khal.DVEParameterRAM). Each Addr is AXIBase(nc) + Offset. An nc past
// the TPB table wraps arch.ErrIndex.
func Destinations(at *arch.Tables, nc int) ([]Dest, error) {
	if at == nil || at.Khal == nil {
		return nil, fmt.Errorf("dve destinations: %w", ErrNoArch)
	}
	k := at.Khal
	base, err := AXIBase(at, nc)
	if err != nil {
		return nil, err
	}
	off, ok := k.DVETableOffsets()
	if !ok {
		if at.Generation != hwarch.Sunda {
			return nil, fmt.Errorf("dve destinations %s: no get_dve_table_offsets", at.Generation)
		}
		off = arch.DVETables{Opcode: SundaOpcodeOffset, ControlFast: SundaControlFastOffset, Datapath: SundaDatapathOffset}
	}
	sz := k.DVETableSizes()
	prOff, prSize := k.DVEParameterRAM()
	all := []Dest{
		{Name: TableOpcode, Offset: off.Opcode, Size: sz.Opcode},
		{Name: TableControlFast, Offset: off.ControlFast, Size: sz.ControlFast},
		{Name: TableControlSlow, Offset: off.ControlSlow, Size: sz.ControlSlow},
		{Name: TableDatapath, Offset: off.Datapath, Size: sz.Datapath},
		{Name: TableParamRAM, Offset: prOff, Size: prSize},
	}
	out := make([]Dest, 0, len(all))
	for _, d := range all {
		if !staged(at.Generation, d.Name) {
			continue
		}
		d.Addr = base + d.Offset
		out = append(out, d)
	}
	return out, nil
}

// AXIBase is aws_hal_stpb_get_axi_offset: the device address from which the
// DVE table offsets (0x2B8xxxx) count. The offsets lie in the upper half of
// an NC's 64 MiB TPB window — the PSUM half, which starts 0x200_0000 into it
// — and that half sits at Khal.PSUMBase in the device's address space (TPB
// base + 0x8_0200_0000 on cayman/mariana, + 0x200_0000 on sunda). So the
// base is PSUMBase − 0x200_0000 (derived: the seed places the tables in the
// DVE tile's window, whose host-visible base 0x802B00000 carries the same
// 0x8_0000_0000 prefix).
func AXIBase(at *arch.Tables, nc int) (uint64, error) {
	psum, err := at.Khal.PSUMBase(nc)
	if err != nil {
		return 0, fmt.Errorf("dve destinations: aws_hal_stpb_get_axi_offset: %w", err)
	}
	return psum - at.Geometry.BAR0.PSUMOffset, nil
}

// Transfer is one copy of the DVE-table load: the bytes of one table and
// where they go. The DMA half stages Data into device DRAM
// (dmem_alloc + dmem_buf_copyin) and adds a descriptor from the staged copy
// to Dest.Addr (vring_add_desc_transfer).
type Transfer struct {
	Dest
	Data []byte // len(Data) == Dest.Size; shares t's memory
}

// Transfers validates t against generation at and returns, in load order, one
// Transfer per staged table of NeuronCore nc (4 on sunda, 5 on
// cayman/mariana): Destinations paired with the table bytes.
func Transfers(at *arch.Tables, nc int, t Tables) ([]Transfer, error) {
	if err := t.Validate(at); err != nil {
		return nil, err
	}
	dests, err := Destinations(at, nc)
	if err != nil {
		return nil, err
	}
	out := make([]Transfer, len(dests))
	for i, d := range dests {
		out[i] = Transfer{Dest: d, Data: t.Get(d.Name)}
	}
	return out, nil
}
