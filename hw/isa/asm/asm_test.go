package asm

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/isa"
)

// checkRoundTrip checks the two guarantees of Disassemble on bin.
func checkRoundTrip(t testing.TB, bin []byte) string {
	t.Helper()
	text, err := Disassemble(bin)
	require.NoError(t, err)
	back, err := Assemble("disasm.s", []byte(text))
	require.NoError(t, err, text)
	require.Equal(t, len(bin), len(back), text)
	if len(bin) > 0 {
		require.Equal(t, bin, back, text)
	}
	again, err := Disassemble(back)
	require.NoError(t, err)
	require.Equal(t, text, again)
	return text
}

func firstEngine(m isa.EngineMask) isa.Engine {
	for e := isa.Engine(0); e < recordEngines; e++ {
		if m.Has(e) {
			return e
		}
	}
	return isa.PE
}

func TestEveryOpcode(t *testing.T) {
	for _, info := range isa.Opcodes() {
		t.Run(info.Name, func(t *testing.T) {
			eng := firstEngine(info.Engines)
			want := isa.Record{Opcode: info.Opcode, Engine: eng, Flags: isa.FlagLast}
			line := info.Name + " engine=" + eng.String() + " last"
			if info.Operands&isa.UsesOp != 0 {
				line += " op=" + map[opKind]string{opALU: "max", opAct: "tanh"}[kindOf(info.Opcode)]
				want.Op = map[opKind]uint8{opALU: isa.ALUMax, opAct: isa.ActTanh}[kindOf(info.Opcode)]
			}
			if info.Operands&isa.UsesDst != 0 {
				line += " dst=psum[2:8,0x40]:fp32[16]"
				want.Dst = isa.Tensor{Addr: isa.Addr(true, 2, 0x40), Dtype: isa.FP32, Partitions: 8, Dims: dl(16, 1)}
			}
			if info.Operands&isa.UsesSrc0 != 0 {
				line += " src0=sbuf[0:8,0x100]:bf16[4,16]"
				want.Src0 = isa.Tensor{Addr: isa.Addr(false, 0, 0x100), Dtype: isa.BF16, Partitions: 8, Dims: dl(4, 16, 16, 1)}
			}
			if info.Operands&isa.UsesSrc1 != 0 {
				line += " src1=sbuf[0,0x2000]:bf16"
				want.Src1 = isa.Src1{Addr: isa.Addr(false, 0, 0x2000), Dtype: isa.BF16}
			}
			if info.Operands&isa.UsesImm0 != 0 {
				line += " imm0=f32(0.5)"
				want.Imm0 = math.Float32bits(0.5)
			}
			if info.Operands&isa.UsesImm1 != 0 {
				line += " imm1=-2"
				want.Imm1 = 0xFFFF_FFFE
			}
			if info.Operands&isa.UsesAux != 0 {
				line += " aux=17"
				want.Aux = 17
			}
			bin, err := Assemble("", []byte(line))
			require.NoError(t, err, line)
			require.Len(t, bin, isa.RecordSize)
			got, err := isa.Decode(bin)
			require.NoError(t, err)
			assert.Equal(t, want, got)

			text := checkRoundTrip(t, bin)
			assert.NotContains(t, text, ".record", "every opcode has a readable form")
			assert.True(t, strings.HasPrefix(text, ".engine "+eng.String()+"\n"+info.Name), text)
			one := FormatRecord(bin)
			assert.Contains(t, one, info.Name+" engine="+eng.String()+" last")
			rec, err := ParseRecord(one)
			require.NoError(t, err)
			assert.Equal(t, bin, rec[:])
		})
	}
}

func TestTensorSyntax(t *testing.T) {
	tests := []struct {
		in   string
		want isa.Tensor
	}{
		{"sbuf[0:128,0x100]:bf16[64]", isa.Tensor{Addr: isa.Addr(false, 0, 0x100), Dtype: isa.BF16, Partitions: 128, Dims: dl(64, 1)}},
		{"psum[0:64,0]:fp32[512/1]", isa.Tensor{Addr: isa.Addr(true, 0, 0), Dtype: isa.FP32, Partitions: 64, Dims: dl(512, 1)}},
		{"sbuf[4:16,0]:fp32[8/16,16/1]", isa.Tensor{Addr: isa.Addr(false, 4, 0), Dtype: isa.FP32, Partitions: 16, Dims: dl(8, 16, 16, 1)}},
		{"sbuf[127:255,0xffffff]:int8", isa.Tensor{Addr: isa.Addr(false, 127, 0xFFFFFF), Dtype: isa.Int8, Partitions: 255}},
		{"sbuf[1:2,3]:uint16[]", isa.Tensor{Addr: isa.Addr(false, 1, 3), Dtype: isa.Uint16, Partitions: 2}},
		{"psum[0:0,0]:fp8_e4m3fn_x4", isa.Tensor{Addr: isa.AddrPSUM, Dtype: isa.FP8E4M3FNx4}},
		{"sbuf[0:1,0]:int32[4,8,16]", isa.Tensor{Addr: 0, Dtype: isa.Int32, Partitions: 1, Dims: dl(4, 128, 8, 16, 16, 1)}},
		{"sbuf[0:1,0]:int32[2,3/5,7]", isa.Tensor{Dtype: isa.Int32, Partitions: 1, Dims: dl(2, 21, 3, 5, 7, 1)}},
		{"sbuf[0:1,0]:fp16[8/-1,2/0]", isa.Tensor{Dtype: isa.FP16, Partitions: 1, Dims: dl(8, -1, 2, 0)}},
		{"sbuf[0:1,0]:fp16[65535/-32768,1/32767]", isa.Tensor{Dtype: isa.FP16, Partitions: 1, Dims: dl(65535, -32768, 1, 32767)}},
		{"sbuf[0:1,0]:fp16[32767,1]", isa.Tensor{Dtype: isa.FP16, Partitions: 1, Dims: dl(32767, 1, 1, 1)}},
		{"sbuf[010:0X10,0x0ABC]:BF16[0x10]", isa.Tensor{Addr: isa.Addr(false, 10, 0xABC), Dtype: isa.BF16, Partitions: 16, Dims: dl(16, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			bin, err := Assemble("", []byte("tensor_copy engine=dve dst="+tt.in))
			require.NoError(t, err)
			r, err := isa.Decode(bin)
			require.NoError(t, err)
			assert.Equal(t, tt.want, r.Dst)
			checkRoundTrip(t, bin)
		})
	}
}

func TestFieldSyntax(t *testing.T) {
	tests := []struct {
		in   string
		want func(*isa.Record)
	}{
		{"nop engine=sp", func(r *isa.Record) { r.Engine = isa.SP }},
		{"nop engine=act acc last", func(r *isa.Record) { r.Engine, r.Flags = isa.ACT, isa.FlagAccumulate|isa.FlagLast }},
		{"nop engine=pe op=255", func(r *isa.Record) { r.Op = 255 }},
		{"activation engine=act op=sigmoid", func(r *isa.Record) { r.Opcode, r.Engine, r.Op = isa.OpActivation, isa.ACT, isa.ActSigmoid }},
		{"tensor_reduce engine=pool op=divide", func(r *isa.Record) { r.Opcode, r.Engine, r.Op = isa.OpTensorReduce, isa.POOL, isa.ALUDivide }},
		{"sem engine=pe wait=sem_eq(255,65535) signal=event_clear(9)", func(r *isa.Record) {
			r.Opcode, r.Wait, r.Signal = isa.OpSem, isa.Sync{Mode: isa.WaitSemEQ, Index: 255, Value: 65535}, isa.Sync{Mode: isa.SignalEventClr, Index: 9}
		}},
		{"sem engine=pe wait=event(3) signal=none(1,2)", func(r *isa.Record) {
			r.Opcode, r.Wait, r.Signal = isa.OpSem, isa.Sync{Mode: isa.WaitEvent, Index: 3}, isa.Sync{Mode: isa.SyncNone, Index: 1, Value: 2}
		}},
		{"nop engine=pe src1=psum[3,0x10]:tf32", func(r *isa.Record) { r.Src1 = isa.Src1{Addr: isa.Addr(true, 3, 0x10), Dtype: isa.TF32} }},
		{"nop engine=pe imm0=-2147483648 imm1=0xffffffff aux=65535", func(r *isa.Record) { r.Imm0, r.Imm1, r.Aux = 0x8000_0000, 0xFFFF_FFFF, 65535 }},
		{"nop engine=pe imm0=f32(-inf) imm1=f32(0x1p-3)", func(r *isa.Record) { r.Imm0, r.Imm1 = 0xFF80_0000, 0x3E00_0000 }},
		{"nop engine=pe imm0=f32(NaN) imm1=f32(-0)", func(r *isa.Record) { r.Imm0, r.Imm1 = 0x7FC0_0000, 0x8000_0000 }},
		{"nop engine=pe imm0=f32(1e-45)", func(r *isa.Record) { r.Imm0 = 1 }},
		// Rounded to the nearest fp32: into the denormals, up to the largest.
		{"nop engine=pe imm0=f32(0x1.0000001p-150) imm1=f32(-0x1p-149)", func(r *isa.Record) { r.Imm0, r.Imm1 = 1, 0x8000_0001 }},
		{"nop engine=pe imm0=f32(3.4028235e38) imm1=f32(0x1.fffffep127)", func(r *isa.Record) { r.Imm0, r.Imm1 = 0x7F7F_FFFF, 0x7F7F_FFFF }},
		{"nop engine=pe imm0=f32(0x0p-2000) imm1=f32(-0e-900)", func(r *isa.Record) { r.Imm0, r.Imm1 = 0, 0x8000_0000 }},
		{"nop engine=pe imm0=f32(0xep-140)", func(r *isa.Record) { r.Imm0 = math.Float32bits(0xep-140) }},
		{"\t nop \t engine=pe\r", func(*isa.Record) {}},
		{"nop engine=pe ; a comment with = and [", func(*isa.Record) {}},
		{"nop engine=pe# another", func(*isa.Record) {}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			bin, err := Assemble("", []byte(tt.in))
			require.NoError(t, err)
			var want isa.Record
			tt.want(&want)
			got, err := isa.Decode(bin)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			checkRoundTrip(t, bin)
		})
	}
}

func TestErrors(t *testing.T) {
	const dtypes = "int8, int16, int32, uint8, uint16, uint32, fp16, bf16, tf32, fp32, fp8_e4m3, fp8_e5m2, fp8_e4m3fn, fp8_e8m0, fp8_e5m2_x4, fp8_e4m3fn_x4, fp4_e2m1fn_x4, int64, uint64"
	tests := []struct {
		name, src, want string
	}{
		{"unknown dtype", ".engine pe\n\nmultiply_moving dst=psum[0:1,0]:bf61", "prog.s:3:33: unknown dtype \"bf61\" (want one of " + dtypes + ")"},
		{"unknown mnemonic near", ".engine act\nactvation", "prog.s:2:1: unknown mnemonic \"actvation\" (did you mean activation?)"},
		{"unknown mnemonic far", ".engine act\nfrobnicate", "prog.s:2:1: unknown mnemonic \"frobnicate\" (want one of nop, barrier, sem,"},
		{"no engine", "nop", "prog.s:1:1: no engine for this record"},
		{"no engine indented", "  ; comment\n   barrier last", "prog.s:2:4: no engine for this record"},
		{"unknown engine directive", ".engine top_sp", "prog.s:1:9: unknown engine \"top_sp\" (want pe, act, pool, dve or sp)"},
		{"unknown engine field", "nop engine=gpu", "prog.s:1:12: unknown engine \"gpu\""},
		{"engine missing", ".engine", "prog.s:1:8: want an engine name (pe, act, pool, dve or sp) after .engine"},
		{"engine extra", ".engine pe act", "prog.s:1:12: unexpected \"act\": .engine takes one argument"},
		{"unknown directive", "  .org 0", "prog.s:1:3: unknown directive \".org\" (want .engine or .record)"},
		{"record short", ".record 00ff", "prog.s:1:9: want exactly 128 hex digits after .record (one 64-byte record), got 4"},
		{"record bad digit", ".record 00fg", "prog.s:1:12: want hex digits after .record, got 'g'"},
		{"record missing", ".record", "prog.s:1:8: want 128 hex digits (one 64-byte record) after .record"},
		{"unknown field", "nop engine=pe dest=sbuf[0:1,0]:int8", "prog.s:1:15: unknown field \"dest\" (want one of engine, op,"},
		{"unknown flag", "nop engine=pe accumulate", "prog.s:1:15: unknown flag \"accumulate\" (want acc, last or KEY=VALUE"},
		{"flag with value", "nop engine=pe last=1", "prog.s:1:15: flag last takes no value"},
		{"field without value", "nop engine=pe aux", "prog.s:1:18: want '=' and a value after aux"},
		{"duplicate field", "nop engine=pe aux=1 aux=2", "prog.s:1:21: duplicate aux (first at column 15)"},
		{"duplicate flag", "nop engine=pe acc acc", "prog.s:1:19: duplicate acc (first at column 15)"},
		{"duplicate engine", ".engine pe\nnop engine=act engine=act", "prog.s:2:16: duplicate engine"},
		{"unknown space", "nop engine=pe dst=hbm[0:1,0]:int8", "prog.s:1:19: unknown memory space \"hbm\" (want sbuf or psum)"},
		{"missing space", "nop engine=pe dst=[0:1,0]:int8", "prog.s:1:19: want a memory space (sbuf or psum), got \"[0:1,0]:int8\""},
		{"partition", "nop engine=pe dst=sbuf[128:1,0]:int8", "prog.s:1:24: start partition 128 out of range (want 0..127)"},
		{"count", "nop engine=pe dst=sbuf[0:256,0]:int8", "prog.s:1:26: partition count 256 out of range (want 0..255)"},
		{"negative count", "nop engine=pe dst=sbuf[0:-1,0]:int8", "prog.s:1:26: partition count -1 out of range (want 0..255)"},
		{"offset", "nop engine=pe dst=sbuf[0:1,0x1000000]:int8", "prog.s:1:28: byte offset 0x1000000 out of range (want 0..0xffffff)"},
		{"huge number", "nop engine=pe dst=sbuf[0:1,99999999999999999999999999]:int8", "prog.s:1:28: byte offset 99999999999999999999999999 out of range"},
		{"malformed number", "nop engine=pe dst=sbuf[0:1,12ab]:int8", "prog.s:1:28: malformed number \"12ab\" for byte offset"},
		{"missing colon", "nop engine=pe dst=sbuf[0,0]:int8", "prog.s:1:25: want ':' between start partition and partition count"},
		{"missing dtype", "nop engine=pe dst=sbuf[0:1,0]", "prog.s:1:30: want ':' before the dtype, got end of field"},
		{"size", "nop engine=pe dst=sbuf[0:1,0]:int8[65536]", "prog.s:1:36: dim size 65536 out of range (want 1..65535)"},
		{"zero size", "nop engine=pe dst=sbuf[0:1,0]:int8[4,0]", "prog.s:1:38: dim size 0 out of range (want 1..65535)"},
		{"stride", "nop engine=pe dst=sbuf[0:1,0]:int8[4/32768]", "prog.s:1:38: stride 32768 out of range (want -32768..32767)"},
		{"negative stride", "nop engine=pe dst=sbuf[0:1,0]:int8[4/-32769]", "prog.s:1:38: stride -32769 out of range"},
		{"four dims", "nop engine=pe dst=sbuf[0:1,0]:int8[1,2,3,4]", "prog.s:1:42: more than 3 dims"},
		{"default stride overflow", "nop engine=pe dst=sbuf[0:1,0]:int8[2,256,256]", "prog.s:1:36: the default stride of this dim, 65536, does not fit int16"},
		{"unclosed dims", "nop engine=pe dst=sbuf[0:1,0]:int8[4", "prog.s:1:37: want ']' or ',' after a dim, got end of field"},
		{"space inside a field", "nop engine=pe wait=sem_ge(1, 2)", "prog.s:1:29: want sync value (a decimal or 0x hex number), got end of field (a field contains no spaces)"},
		{"trailing", "nop engine=pe dst=sbuf[0:1,0]:int8[4]x", "prog.s:1:38: unexpected \"x\" after the tensor"},
		{"src1 with count", "nop engine=pe src1=sbuf[0:1,0]:int8", "prog.s:1:26: want ',' between start partition and byte offset (src1 is SPACE[START,OFFSET]:DTYPE)"},
		{"src1 with dims", "nop engine=pe src1=sbuf[0,0]:int8[4]", "prog.s:1:34: unexpected \"[4]\" after the src1 operand"},
		{"imm range", "nop engine=pe imm0=0x100000000", "prog.s:1:20: immediate 0x100000000 out of range (want -2147483648..0xffffffff)"},
		{"imm negative range", "nop engine=pe imm1=-2147483649", "prog.s:1:20: immediate -2147483649 out of range"},
		{"f32 range", "nop engine=pe imm0=f32(1e39)", "prog.s:1:24: \"1e39\" is out of fp32 range"},
		{"f32 underflow", "nop engine=pe imm0=f32(1e-50)", "prog.s:1:24: \"1e-50\" is too small for fp32 (it would round to 0"},                    // once silently 0
		{"f32 hex underflow, digit e", "nop engine=pe imm0=f32(0xep-200)", "prog.s:1:24: \"0xep-200\" is too small for fp32 (it would round to 0"}, // once silently 0
		{"f32 hex underflow, digit a", "nop engine=pe imm0=f32(-0xAp-200)", "prog.s:1:24: \"-0xAp-200\" is too small for fp32"},
		{"f32 hex underflow, 0e digits", "nop engine=pe imm0=f32(0x0ep-160)", "prog.s:1:24: \"0x0ep-160\" is too small for fp32"},
		{"f32 half the smallest", "nop engine=pe imm0=f32(0x1p-150)", "prog.s:1:24: \"0x1p-150\" is too small for fp32"},
		{"f32 decimal under half the smallest", "nop engine=pe imm1=f32(7e-46)", "prog.s:1:24: \"7e-46\" is too small for fp32"},
		{"f32 hex overflow", "nop engine=pe imm0=f32(0x1p128)", "prog.s:1:24: \"0x1p128\" is out of fp32 range (it would round to ±Inf"},
		{"f32 just past the largest", "nop engine=pe imm0=f32(-3.40282357e38)", "prog.s:1:24: \"-3.40282357e38\" is out of fp32 range"},
		{"f32 underscores", "nop engine=pe imm0=f32(1_000)", "prog.s:1:24: want an fp32 literal in f32(...), got \"1_000\" (no underscores)"},
		{"f32 syntax", "nop engine=pe imm0=f32(one)", "prog.s:1:24: want an fp32 literal in f32(...), got \"one\""},
		{"f32 unclosed", "nop engine=pe imm0=f32(1", "prog.s:1:25: want ')' to close f32("},
		{"imm word", "nop engine=pe imm0=1.5", "prog.s:1:20: \"1.5\" is not an integer: write f32(1.5) for an fp32 immediate"},
		{"alu name", "tensor_tensor engine=dve op=relu", "prog.s:1:29: unknown ALU op \"relu\" for tensor_tensor (want one of bypass, add, subtract, multiply, max, min, divide)"},
		{"alu number", "tensor_scalar engine=dve op=1", "prog.s:1:29: unknown ALU op \"1\" for tensor_scalar"},
		{"act name", "activation engine=act op=add", "prog.s:1:26: unknown activation function \"add\" (want one of identity, relu, exp, tanh, sigmoid, square, sqrt)"},
		{"op name on raw", "nop engine=pe op=add", "prog.s:1:18: nop takes a numeric op=N (0..255)"},
		{"op range", "nop engine=pe op=256", "prog.s:1:18: op 256 out of range (want 0..255)"},
		{"sync mode", "nop engine=pe wait=sem_ge3(1,1)", "prog.s:1:20: unknown sync mode \"sem_ge3\" (want one of none, sem_ge,"},
		{"sync value missing", "nop engine=pe wait=sem_ge(1)", "prog.s:1:28: want ',' and a value: sem_ge(INDEX,VALUE), got \")\""},
		{"sync value extra", "nop engine=pe signal=event_set(1,1)", "prog.s:1:33: want ')' to close event_set(INDEX), got \",1)\""},
		{"sync index", "nop engine=pe signal=sem_set(256,0)", "prog.s:1:30: semaphore/event index 256 out of range (want 0..255)"},
		{"sync value", "nop engine=pe signal=sem_set(0,65536)", "prog.s:1:32: sync value 65536 out of range (want 0..65535)"},
		{"aux", "nop engine=pe aux=65536", "prog.s:1:19: aux 65536 out of range (want 0..65535)"},
		{"aux trailing", "nop engine=pe aux=1)", "prog.s:1:20: unexpected \")\" after the aux"},
		{"line too long", "nop engine=pe ;" + strings.Repeat("x", MaxLineLen), "prog.s:1:4097: line too long (4111 bytes; at most 4096)"},
		// The records after a too-long .engine line are not also blamed for
		// having no engine.
		{"engine line too long", ".engine pe ;" + strings.Repeat("x", MaxLineLen) + "\nnop last\nnop\n", "prog.s:1:4097: line too long (4108 bytes; at most 4096)"},
		{"CR-LF line too long", ".engine pe ;" + strings.Repeat("x", MaxLineLen-11) + "\r\nnop last\r\n", "prog.s:1:4097: line too long (4097 bytes; at most 4096)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin, err := Assemble("prog.s", []byte(tt.src))
			require.Error(t, err)
			assert.Nil(t, bin)
			var list ErrorList
			require.True(t, errors.As(err, &list))
			require.Len(t, list, 1, err.Error())
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "got  %s\nwant %s", err, tt.want)
			var one *Error
			require.True(t, errors.As(err, &one))
			assert.Equal(t, "prog.s", one.File)
		})
	}
}

func TestErrorCollection(t *testing.T) {
	src := ".engine bogus\nnop\nnop aux=1 aux=2\nbarrier\n"
	_, err := Assemble("", []byte(src))
	var list ErrorList
	require.True(t, errors.As(err, &list))
	require.Len(t, list, 2, "a bad .engine does not also fail the records after it")
	assert.Equal(t, [2]int{1, 9}, [2]int{list[0].Line, list[0].Col})
	assert.Equal(t, [2]int{3, 11}, [2]int{list[1].Line, list[1].Col})
	assert.Equal(t, "1:9: unknown engine \"bogus\" (want pe, act, pool, dve or sp)\n3:11: duplicate aux (first at column 5)", err.Error())

	_, err = Assemble("x.s", []byte(strings.Repeat("bogus\n", 100)))
	require.True(t, errors.As(err, &list))
	assert.Len(t, list, MaxErrors)
	assert.Equal(t, MaxErrors, list[MaxErrors-1].Line)
	assert.True(t, strings.HasSuffix(err.Error(), "\n(stopped after 10 errors: the rest of the file is not checked)"), "a full list says it stopped")
	assert.Equal(t, "no errors", ErrorList(nil).Error())
}

func TestMaxRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("assembles 64 MiB")
	}
	src := ".engine pe\n" + strings.Repeat("nop\n", MaxRecords)
	bin, err := Assemble("", []byte(src))
	require.NoError(t, err)
	assert.Len(t, bin, MaxRecords*isa.RecordSize)
	_, err = Assemble("big.s", []byte(src+"nop\n"))
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf("big.s:%d:1: more than %d records", MaxRecords+2, MaxRecords), err.Error())
	_, err = Disassemble(make([]byte, (MaxRecords+1)*isa.RecordSize))
	assert.ErrorContains(t, err, "more than the 1048576 a program may hold")
}

func TestRawRecords(t *testing.T) {
	var raw [isa.RecordSize]byte
	for i := range raw {
		raw[i] = byte(0xF0 + i)
	}
	hexUpper := strings.ToUpper(rawRecord(raw[:])[len(".record "):])
	bin, err := Assemble("", []byte(".record "+hexUpper+" ; any bytes"))
	require.NoError(t, err)
	assert.Equal(t, raw[:], bin)
	assert.Equal(t, rawRecord(raw[:])+"\n", checkRoundTrip(t, bin))

	// A raw record needs no engine and does not change the current one.
	src := ".engine act\nnop\n.record " + strings.Repeat("00", 64) + "\nnop last\n"
	bin, err = Assemble("", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, []byte{0, byte(isa.ACT), 0}, bin[0:3])
	assert.Equal(t, []byte{0, byte(isa.PE), 0}, bin[64:67], "the raw record carries its own engine")
	assert.Equal(t, []byte{0, byte(isa.ACT), isa.FlagLast}, bin[128:131])

	// Disassembly: a raw record between two ACT records does not repeat .engine.
	rec := func(r isa.Record) []byte { b := r.Bytes(); return b[:] }
	junk := rec(isa.Record{Opcode: 0xEE, Engine: isa.PE})
	prog := append(append(rec(isa.Record{Engine: isa.ACT}), junk...), rec(isa.Record{Engine: isa.ACT, Flags: isa.FlagLast})...)
	assert.Equal(t, ".engine act\nnop\n"+rawRecord(junk)+"\nnop last\n", checkRoundTrip(t, prog))
	// A raw record first: the readable record after it still gets its .engine.
	prog = append(append([]byte(nil), junk...), rec(isa.Record{Engine: isa.DVE})...)
	assert.Equal(t, rawRecord(junk)+"\n.engine dve\nnop\n", checkRoundTrip(t, prog))
}

func TestParseRecord(t *testing.T) {
	r := isa.Record{Opcode: isa.OpTensorScalar, Engine: isa.POOL, Op: isa.ALUMultiply,
		Dst:  isa.Tensor{Addr: isa.Addr(false, 0, 0x40), Dtype: isa.FP32, Partitions: 4, Dims: dl(8, 1)},
		Src0: isa.Tensor{Addr: isa.Addr(false, 0, 0x80), Dtype: isa.FP32, Partitions: 4, Dims: dl(8, 1)},
		Imm0: math.Float32bits(2.5)}
	b := r.Bytes()
	line := FormatRecord(b[:])
	assert.Equal(t, "tensor_scalar engine=pool op=multiply dst=sbuf[0:4,0x40]:fp32[8/1] src0=sbuf[0:4,0x80]:fp32[8/1] imm0=f32(2.5)", line)
	got, err := ParseRecord(line + " # comment")
	require.NoError(t, err)
	assert.Equal(t, b, got)

	for _, bad := range []string{"", "; nothing", ".engine pe", "nop", "nop engine=pe aux=x"} {
		_, err := ParseRecord(bad)
		var e *Error
		require.True(t, errors.As(err, &e), bad)
		assert.Equal(t, 1, e.Line)
	}
	assert.Panics(t, func() { FormatRecord(make([]byte, 63)) })
}

func TestDisassembleLength(t *testing.T) {
	_, err := Disassemble(make([]byte, 130))
	assert.EqualError(t, err, "asm: 130 bytes is not a whole number of 64-byte records: 2 over")
	text, err := Disassemble(nil)
	require.NoError(t, err)
	assert.Empty(t, text)
}

// TestLineEnds: a line of MaxLineLen bytes assembles whatever ends it (LF,
// CR-LF, the end of the file); its CR is not one of its bytes.
func TestLineEnds(t *testing.T) {
	full := ".engine pe ;" + strings.Repeat("x", MaxLineLen-12)
	require.Len(t, full, MaxLineLen)
	rec := "nop last ;" + strings.Repeat("y", MaxLineLen-10)
	tests := []struct {
		name, src string
		records   int
	}{
		{"LF", full + "\n" + rec + "\n", 1},
		{"CR-LF", full + "\r\n" + rec + "\r\n", 1},
		{"CR-LF, no end on the last line", full + "\r\n" + rec, 1},
		{"CR at the end of the file", full + "\r\n" + rec + "\r", 1},
		{"CR-LF blank lines", "\r\n" + full + "\r\n\r\n" + rec + "\r\n" + rec + "\r\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin, err := Assemble("prog.s", []byte(tt.src))
			require.NoError(t, err)
			assert.Len(t, bin, tt.records*isa.RecordSize)
		})
	}
}
