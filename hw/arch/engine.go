package arch

import "fmt"

// Engine is the hardware engine index of a NeuronCore (al_hal_tpb_eng_type),
// used for register addressing. It is the same on every generation.
type Engine uint8

// The five engines of a NeuronCore.
const (
	EnginePE   Engine = 0 // AL_HAL_TPB_ENG_PE: the tensor (matmul) engine
	EngineACT  Engine = 1 // AL_HAL_TPB_ENG_ACT: the scalar/activation engine
	EnginePOOL Engine = 2 // AL_HAL_TPB_ENG_POOL: the pooling / GpSimd engine
	EngineDVE  Engine = 3 // AL_HAL_TPB_ENG_DVE: the data vector engine
	EngineSP   Engine = 4 // AL_HAL_TPB_ENG_SP: the sync engine (sequencer only)

	NumEngines = 5 // AL_HAL_TPB_MAX_ENG_*
)

var engineNames = [NumEngines]string{"PE", "ACT", "POOL", "DVE", "SP"}

// Engines lists the engines in index order.
func Engines() []Engine { return []Engine{EnginePE, EngineACT, EnginePOOL, EngineDVE, EngineSP} }

// Valid reports whether e is one of the five engines.
func (e Engine) Valid() bool { return e < NumEngines }

// String returns "PE", "ACT", "POOL", "DVE" or "SP".
func (e Engine) String() string {
	if e.Valid() {
		return engineNames[e]
	}
	return fmt.Sprintf("engine(%d)", uint8(e))
}

// CoreType is the microcode core type (nrtucode_coretype_t), which selects
// the microcode blob for an engine. It is a flat enumeration with one block
// per generation; it is not the engine index.
type CoreType int8

// The core types, in declaration order. Each generation's block lists ACT,
// DVE, POOL, PE, SP, TOPSP, then the Q7 (GpSimd) cores.
const (
	CoreTypeNone CoreType = -1 // the value the runtime returns for an engine out of range

	SundaNXACT   CoreType = 0
	SundaNXDVE   CoreType = 1
	SundaNXPOOL  CoreType = 2
	SundaNXPE    CoreType = 3
	SundaNXSP    CoreType = 4
	SundaNXTOPSP CoreType = 5
	SundaQ7POOL  CoreType = 6

	CaymanNXACT   CoreType = 7
	CaymanNXDVE   CoreType = 8
	CaymanNXPOOL  CoreType = 9
	CaymanNXPE    CoreType = 10
	CaymanNXSP    CoreType = 11
	CaymanNXTOPSP CoreType = 12
	CaymanQ7POOL  CoreType = 13
	CaymanQ7CCE   CoreType = 14

	MarianaNXACT   CoreType = 15
	MarianaNXDVE   CoreType = 16
	MarianaNXPOOL  CoreType = 17
	MarianaNXPE    CoreType = 18
	MarianaNXSP    CoreType = 19
	MarianaNXTOPSP CoreType = 20
	MarianaQ7POOL  CoreType = 21
	MarianaQ7CCE   CoreType = 22

	// The mariana_plus block (a Trn3 successor) has core types but no
	// generation value in the kernel or the runtime arch enum.
	MarianaPlusNXACT   CoreType = 23
	MarianaPlusNXDVE   CoreType = 24
	MarianaPlusNXPOOL  CoreType = 25
	MarianaPlusNXPE    CoreType = 26
	MarianaPlusNXSP    CoreType = 27
	MarianaPlusNXTOPSP CoreType = 28
	MarianaPlusQ7POOL  CoreType = 29
	MarianaPlusQ7CCE   CoreType = 30

	NumCoreTypes = 31
)

// coreTypeBlock is one family's block of the flat enumeration.
type coreTypeBlock struct {
	family string
	base   CoreType
	kinds  []string // in declaration order
}

var coreTypeBlocks = []coreTypeBlock{
	{"SUNDA", SundaNXACT, []string{"NX_ACT", "NX_DVE", "NX_POOL", "NX_PE", "NX_SP", "NX_TOPSP", "Q7_POOL"}},
	{"CAYMAN", CaymanNXACT, []string{"NX_ACT", "NX_DVE", "NX_POOL", "NX_PE", "NX_SP", "NX_TOPSP", "Q7_POOL", "Q7_CCE"}},
	{"MARIANA", MarianaNXACT, []string{"NX_ACT", "NX_DVE", "NX_POOL", "NX_PE", "NX_SP", "NX_TOPSP", "Q7_POOL", "Q7_CCE"}},
	{"MARIANA_PLUS", MarianaPlusNXACT, []string{"NX_ACT", "NX_DVE", "NX_POOL", "NX_PE", "NX_SP", "NX_TOPSP", "Q7_POOL", "Q7_CCE"}},
}

// String returns the enumerator name, e.g. "CAYMAN_NX_PE".
func (c CoreType) String() string {
	for _, b := range coreTypeBlocks {
		if c >= b.base && int(c-b.base) < len(b.kinds) {
			return b.family + "_" + b.kinds[c-b.base]
		}
	}
	return fmt.Sprintf("coretype(%d)", int8(c))
}

// nxDeclarationSlot is the position of each engine's NX core type inside its
// generation's block: the block is declared ACT, DVE, POOL, PE, SP while the
// engine index order is PE, ACT, POOL, DVE, SP.
var nxDeclarationSlot = [NumEngines]CoreType{
	EnginePE:   3,
	EngineACT:  0,
	EnginePOOL: 2,
	EngineDVE:  1,
	EngineSP:   4,
}

// NXCoreType maps an engine of generation g to its NX microcode core type
// (tdrv_arch_get_nx_core_type_<arch>). The table is the declaration-order
// remap from the generation's block base, e.g. cayman (CSWTCH_16_0)
// {PE,ACT,POOL,DVE,SP} → {10,7,9,8,11}. An engine out of range, or a
// generation without a block, gives (CoreTypeNone, false): the runtime's -1.
func NXCoreType(g Generation, e Engine) (CoreType, bool) {
	if !e.Valid() {
		return CoreTypeNone, false
	}
	var base CoreType
	switch g {
	case Sunda:
		base = SundaNXACT
	case Cayman:
		base = CaymanNXACT
	case Mariana:
		base = MarianaNXACT
	default:
		return CoreTypeNone, false
	}
	return base + nxDeclarationSlot[e], true
}
