package asm_test

import (
	"fmt"

	"github.com/neuronsim/neuronsim/hw/isa/asm"
)

// A 128×64 stationary tile times a 128×512 moving tile into PSUM, then a
// ReLU on ACT once the PE has signalled semaphore 0.
func Example() {
	src := `
.engine pe
load_stationary src0=sbuf[0:128,0]:bf16[64]                  ; K=128 × M=64 weights
multiply_moving dst=psum[0:64,0]:fp32[512] src0=sbuf[0:128,0x80]:bf16[512] signal=sem_incr(0,1)
.engine act
activation op=relu wait=sem_ge(0,1) dst=sbuf[0:64,0x1000]:bf16[512] src0=psum[0:64,0]:fp32[512] imm0=f32(1.0) last
`
	bin, err := asm.Assemble("matmul.s", []byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes\n", len(bin))
	text, _ := asm.Disassemble(bin)
	fmt.Print(text)

	_, err = asm.Assemble("matmul.s", []byte(".engine pe\nmultiply_moving dst=psum[0:64,0]:fp23[512]\n"))
	fmt.Println(err)
	// Output:
	// 192 bytes
	// .engine pe
	// load_stationary src0=sbuf[0:128,0]:bf16[64/1]
	// multiply_moving signal=sem_incr(0,1) dst=psum[0:64,0]:fp32[512/1] src0=sbuf[0:128,0x80]:bf16[512/1]
	//
	// .engine act
	// activation last op=relu wait=sem_ge(0,1) dst=sbuf[0:64,0x1000]:bf16[512/1] src0=psum[0:64,0]:fp32[512/1] imm0=f32(1)
	// matmul.s:2:34: unknown dtype "fp23" (want one of int8, int16, int32, uint8, uint16, uint32, fp16, bf16, tf32, fp32, fp8_e4m3, fp8_e5m2, fp8_e4m3fn, fp8_e8m0, fp8_e5m2_x4, fp8_e4m3fn_x4, fp4_e2m1fn_x4, int64, uint64)
}

// FormatRecord and ParseRecord work on one record, engine= included.
func ExampleFormatRecord() {
	bin, _ := asm.Assemble("", []byte("memset engine=dve dst=sbuf[0:128,0x40]:fp32[128] imm0=f32(-0.5)\n.record "+
		"99000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001"))
	fmt.Println(asm.FormatRecord(bin[:64]))
	fmt.Println(asm.FormatRecord(bin[64:]))
	// Output:
	// memset engine=dve dst=sbuf[0:128,0x40]:fp32[128/1] imm0=f32(-0.5)
	// .record 99000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001
}
