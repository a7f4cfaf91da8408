package isa_test

import (
	"errors"
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/isa"
)

func Example() {
	// The runtime selects its arch once; the validator follows it.
	var d arch.Dispatch
	if _, err := d.Select(hwarch.PCIIdentity{Vendor: 0x1D0F, Device: 0x7164}, arch.Options{}); err != nil { // Trn1: sunda
		panic(err)
	}
	v, err := isa.FromDispatch(&d)
	if err != nil {
		panic(err)
	}
	v = v.WithLogger(isa.LoggerFunc(func(format string, args ...any) { fmt.Printf("log: "+format+"\n", args...) }))

	copyRec := hwisa.Record{Opcode: hwisa.OpTensorCopy, Engine: hwisa.DVE,
		Dst:  hwisa.Tensor{Addr: hwisa.Addr(false, 0, 0), Dtype: hwisa.BF16, Partitions: 128, Dims: [3]hwisa.Dim{{Size: 64, Stride: 1}}},
		Src0: hwisa.Tensor{Addr: hwisa.Addr(false, 0, 0x400), Dtype: hwisa.FP32, Partitions: 128, Dims: [3]hwisa.Dim{{Size: 64, Stride: 1}}}}
	good := copyRec.Bytes()
	fmt.Println(v.Limits().Generation, "tensor_copy valid:", v.IsValid(good[:]))

	dmaT := hwisa.Record{Opcode: hwisa.OpDMATranspose, Engine: hwisa.SP, Aux: 1,
		Dst:  hwisa.Tensor{Addr: hwisa.Addr(false, 0, 0), Dtype: hwisa.BF16, Partitions: 64, Dims: [3]hwisa.Dim{{Size: 128, Stride: 1}}},
		Src0: hwisa.Tensor{Addr: hwisa.Addr(false, 0, 0x400), Dtype: hwisa.BF16, Partitions: 128, Dims: [3]hwisa.Dim{{Size: 64, Stride: 1}}}}
	bad := dmaT.Bytes()
	fmt.Println(v.Debug(bad[:]))

	blk := append(append(append([]byte(nil), good[:]...), good[:]...), good[:]...)
	blk[128+2] = hwisa.FlagAccumulate // the third record: accumulate on a copy
	err = v.FinalInstValidityCheck(blk, uint32(hwisa.DVE))
	var ie *isa.InvalidError
	fmt.Println(errors.Is(err, isa.ErrInvalidInstruction), errors.As(err, &ie) && ie.Offset == 128)
	// Output:
	// sunda tensor_copy valid: true
	// is_valid_opcode opcode: opcode 0xbd (dma_transpose) needs cayman or later; this is sunda
	// log: Error message number:3, message: has_valid_neuron_header flags: accumulate is defined for multiply_moving and activation only, not tensor_copy
	// log: Found invalid instruction! opcode=50, offset=128
	// true true
}
