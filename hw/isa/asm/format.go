package asm

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/neuronsim/neuronsim/hw/isa"
)

// Disassemble returns the text of a sequence of records: one line per
// record, readable where the readable form reproduces the record exactly and
// ".record HEX" elsewhere, with an ".engine" line (preceded by a blank line,
// except at the top) wherever the engine of the readable records changes.
// Assembling the text gives bin back. bin must hold whole records, at most
// MaxRecords of them.
func Disassemble(bin []byte) (string, error) {
	if n := len(bin) % isa.RecordSize; n != 0 {
		return "", fmt.Errorf("asm: %d bytes is not a whole number of %d-byte records: %d over", len(bin), isa.RecordSize, n)
	}
	if n := len(bin) / isa.RecordSize; n > MaxRecords {
		return "", fmt.Errorf("asm: %d records (%d bytes) is more than the %d a program may hold", n, len(bin), MaxRecords)
	}
	var sb strings.Builder
	var cur isa.Engine
	have := false
	for i := 0; i < len(bin); i += isa.RecordSize {
		b := bin[i : i+isa.RecordSize]
		line, ok := readable(b, false)
		if !ok {
			sb.WriteString(rawRecord(b))
			sb.WriteByte('\n')
			continue
		}
		if e := isa.Engine(b[1]); !have || e != cur {
			if have {
				sb.WriteByte('\n')
			}
			sb.WriteString(".engine " + e.String() + "\n")
			cur, have = e, true
		}
		sb.WriteString(line)
		sb.WriteByte('\n')
	}
	return sb.String(), nil
}

// FormatRecord returns the record in b[:64] as one line without a newline:
// the readable form, engine= included, when it assembles back to exactly
// these bytes, else ".record HEX". ParseRecord reads it back. It panics if b
// is shorter than a record.
func FormatRecord(b []byte) string {
	if len(b) < isa.RecordSize {
		panic(fmt.Sprintf("asm: FormatRecord of %d bytes (a record is %d)", len(b), isa.RecordSize))
	}
	if line, ok := readable(b[:isa.RecordSize], true); ok {
		return line
	}
	return rawRecord(b[:isa.RecordSize])
}

func rawRecord(b []byte) string { return ".record " + hex.EncodeToString(b) }

// maxReadable is the longest readable line Disassemble and FormatRecord
// write: with its newline and an engine change before it
// ("\n.engine pool\n"), MaxRecordText.
const maxReadable = MaxRecordText - 1 - len("\n.engine pool\n")

// readable formats the record in the text syntax, with or without its
// engine= field, and reports whether that text assembles back to b exactly.
func readable(b []byte, withEngine bool) (string, bool) {
	r, err := isa.Decode(b)
	if err != nil || isa.Reserved(b) != 0 || r.Engine >= recordEngines || r.Flags&^isa.FlagMask != 0 {
		return "", false
	}
	info, ok := r.Opcode.Info()
	if !ok {
		return "", false
	}
	var sb strings.Builder
	sb.WriteString(info.Name)
	if withEngine {
		sb.WriteString(" engine=" + r.Engine.String())
	}
	if r.Flags&isa.FlagAccumulate != 0 {
		sb.WriteString(" acc")
	}
	if r.Flags&isa.FlagLast != 0 {
		sb.WriteString(" last")
	}
	if r.Op != 0 {
		switch kindOf(r.Opcode) {
		case opALU:
			if r.Op >= isa.NumALUOps {
				return "", false
			}
			sb.WriteString(" op=" + isa.ALUName(r.Op))
		case opAct:
			if r.Op >= isa.NumActFuncs {
				return "", false
			}
			sb.WriteString(" op=" + isa.ActName(r.Op))
		default:
			sb.WriteString(" op=" + strconv.Itoa(int(r.Op)))
		}
	}
	ok = field(&sb, "wait", r.Wait != isa.Sync{}, func() (string, bool) { return formatSync(r.Wait) }) &&
		field(&sb, "signal", r.Signal != isa.Sync{}, func() (string, bool) { return formatSync(r.Signal) }) &&
		field(&sb, "dst", !r.Dst.Zero(), func() (string, bool) { return formatTensor(r.Dst) }) &&
		field(&sb, "src0", !r.Src0.Zero(), func() (string, bool) { return formatTensor(r.Src0) }) &&
		field(&sb, "src1", r.Src1 != isa.Src1{}, func() (string, bool) { return formatSrc1(r.Src1) })
	if !ok {
		return "", false
	}
	if r.Imm0 != 0 {
		sb.WriteString(" imm0=" + formatImm(r.Imm0, floatImm(&r, 0)))
	}
	if r.Imm1 != 0 {
		sb.WriteString(" imm1=" + formatImm(r.Imm1, floatImm(&r, 1)))
	}
	if r.Aux != 0 {
		sb.WriteString(" aux=" + strconv.Itoa(int(r.Aux)))
	}
	line := sb.String()
	if len(line) > maxReadable {
		return "", false // not reached; keeps Disassemble within MaxRecordText a record
	}
	// The checks above should make this hold; verifying makes it certain.
	res, e := parseLine(line, r.Engine, !withEngine)
	if e != nil || res.kind != lineRecord || string(res.rec[:]) != string(b) {
		return "", false
	}
	return line, true
}

// field writes " key=value" when present; it reports false when the value
// has no readable form.
func field(sb *strings.Builder, key string, present bool, format func() (string, bool)) bool {
	if !present {
		return true
	}
	s, ok := format()
	if ok {
		sb.WriteString(" " + key + "=" + s)
	}
	return ok
}

func formatSync(s isa.Sync) (string, bool) {
	switch {
	case s.Mode >= isa.NumSyncModes:
		return "", false
	case noValue(s.Mode):
		return fmt.Sprintf("%s(%d)", s.Mode, s.Index), s.Value == 0
	}
	return fmt.Sprintf("%s(%d,%d)", s.Mode, s.Index, s.Value), true
}

func validDtype(d isa.Dtype) bool { return d != isa.DtypeInvalid && d < isa.NumDtypes }

func formatAddr(sb *strings.Builder, a uint32, count string) {
	psum, p, off := isa.Location(a)
	if psum {
		sb.WriteString("psum[")
	} else {
		sb.WriteString("sbuf[")
	}
	sb.WriteString(strconv.Itoa(p) + count + ",")
	if off == 0 {
		sb.WriteString("0]")
	} else {
		sb.WriteString("0x" + strconv.FormatUint(uint64(off), 16) + "]")
	}
}

func formatTensor(t isa.Tensor) (string, bool) {
	if !validDtype(t.Dtype) {
		return "", false
	}
	n := t.Rank() - 1
	for _, d := range t.Dims[n:] {
		if d != (isa.Dim{}) { // a dim after the list's end: not writable
			return "", false
		}
	}
	var sb strings.Builder
	formatAddr(&sb, t.Addr, ":"+strconv.Itoa(int(t.Partitions)))
	sb.WriteString(":" + t.Dtype.String())
	if n > 0 {
		sb.WriteByte('[')
		for i, d := range t.Dims[:n] {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(int(d.Size)) + "/" + strconv.Itoa(int(d.Stride)))
		}
		sb.WriteByte(']')
	}
	return sb.String(), true
}

func formatSrc1(s isa.Src1) (string, bool) {
	if !validDtype(s.Dtype) {
		return "", false
	}
	var sb strings.Builder
	formatAddr(&sb, s.Addr, "")
	sb.WriteString(":" + s.Dtype.String())
	return sb.String(), true
}

// floatImm reports whether the opcode reads immediate i (0 or 1) as an fp32.
func floatImm(r *isa.Record, i int) bool {
	switch r.Opcode {
	case isa.OpActivation:
		return true
	case isa.OpTensorScalar, isa.OpMemset:
		return i == 0 && r.Dst.Dtype.Float()
	}
	return false
}

func formatImm(v uint32, float bool) string {
	if float {
		s := strconv.FormatFloat(float64(math.Float32frombits(v)), 'g', -1, 32)
		if f, err := strconv.ParseFloat(s, 32); err == nil && math.Float32bits(float32(f)) == v {
			return "f32(" + s + ")"
		}
	}
	return "0x" + strconv.FormatUint(uint64(v), 16)
}
