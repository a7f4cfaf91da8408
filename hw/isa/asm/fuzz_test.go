package asm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/neuronsim/neuronsim/hw/isa"
)

// FuzzDisasmRoundTrip: any whole number of records disassembles, assembles
// back to the same bytes and disassembles again to the same text.
func FuzzDisasmRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, isa.RecordSize))
	mm := isa.Record{Opcode: isa.OpMultiplyMoving, Engine: isa.PE, Flags: isa.FlagAccumulate,
		Signal: isa.Sync{Mode: isa.SignalSemIncr, Index: 1, Value: 1},
		Dst:    isa.Tensor{Addr: isa.AddrPSUM, Dtype: isa.FP32, Partitions: 64, Dims: dl(512, 1)},
		Src0:   isa.Tensor{Dtype: isa.BF16, Partitions: 128, Dims: dl(512, 1)}}
	f.Add(bytesOf(mm))
	f.Add(bytes.Repeat([]byte{0xFF}, 2*isa.RecordSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64*isa.RecordSize {
			data = data[:64*isa.RecordSize]
		}
		bin := append([]byte(nil), data...)
		bin = append(bin, make([]byte, (isa.RecordSize-len(bin)%isa.RecordSize)%isa.RecordSize)...)
		text, err := Disassemble(bin)
		if err != nil {
			t.Fatal(err)
		}
		if len(text) > len(bin)/isa.RecordSize*MaxRecordText {
			t.Fatalf("%d bytes of text for %d records: more than MaxRecordText a record", len(text), len(bin)/isa.RecordSize)
		}
		back, err := Assemble("fuzz.s", []byte(text))
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		if !bytes.Equal(back, bin) && len(bin) > 0 {
			t.Fatalf("round trip changed the bytes\n%x\n%x\n%s", bin, back, text)
		}
		again, err := Disassemble(back)
		if err != nil || again != text {
			t.Fatalf("disassembly not stable: %v\n%s\n%s", err, text, again)
		}
		for i := 0; i < len(bin); i += isa.RecordSize {
			rec, err := ParseRecord(FormatRecord(bin[i:]))
			if err != nil || !bytes.Equal(rec[:], bin[i:i+isa.RecordSize]) {
				t.Fatalf("FormatRecord/ParseRecord of record %d: %v", i/isa.RecordSize, err)
			}
		}
	})
}

// FuzzAssemble: the assembler never panics, and what it assembles survives
// disassembly.
func FuzzAssemble(f *testing.F) {
	f.Add(".engine pe\nload_stationary src0=sbuf[0:128,0]:bf16[64]\n")
	f.Add("activation engine=act op=relu wait=sem_ge(0,1) dst=sbuf[0:64,0x1000]:bf16[512/1] src0=psum[0:64,0]:fp32[512] imm0=f32(1.0) last")
	f.Add(".engine dve\ntensor_tensor op=add dst=sbuf[4:16,0]:fp32[8/16,16/1] src0=sbuf[4:16,0x400]:fp32[8,16] src1=sbuf[4,0x800]:fp32 ; c\n")
	f.Add(".record " + string(bytes.Repeat([]byte("ab"), isa.RecordSize)) + "\n")
	f.Add("nop engine=pe dst=sbuf[0:1,0]:int8[2,256,256]\nnop\n")
	f.Add("nop engine=pe imm0=f32(0xep-200) imm1=f32(0x1p128)\n")
	f.Add(".engine pe ;" + strings.Repeat("x", MaxLineLen-11) + "\r\nnop last\r\n")
	f.Add(".engine pe ;" + strings.Repeat("x", MaxLineLen-12) + "\r\nnop last\r")
	f.Add("nop engine=pe imm0=f32(-0x0ep-160) imm1=f32(0x1.0000001p-150)\n")
	f.Fuzz(func(t *testing.T, src string) {
		bin, err := Assemble("fuzz.s", []byte(src))
		if err != nil {
			if _, ok := err.(ErrorList); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		if len(bin)%isa.RecordSize != 0 {
			t.Fatalf("%d bytes", len(bin))
		}
		text, err := Disassemble(bin)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Assemble("disasm.s", []byte(text))
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		if !bytes.Equal(back, bin) && len(bin) > 0 {
			t.Fatalf("disasm/asm changed the bytes\nsource: %q\ntext: %s", src, text)
		}
	})
}
