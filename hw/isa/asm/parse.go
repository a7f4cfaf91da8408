package asm

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/neuronsim/neuronsim/hw/isa"
)

// Assemble assembles a program and returns its records concatenated. name is
// the file name errors carry (may be empty). On failure it returns an
// ErrorList of up to MaxErrors errors and no bytes.
func Assemble(name string, src []byte) ([]byte, error) {
	text := src // lines are made strings one at a time: no copy of a large source
	var out []byte
	var errs ErrorList
	fail := func(line int, e *Error) bool {
		e.File, e.Line = name, line
		errs = append(errs, e)
		return len(errs) >= MaxErrors
	}
	var eng isa.Engine
	haveEng, records := false, 0
	for line := 1; len(text) > 0; line++ {
		lb := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			lb, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		// A CR-LF line end is a line end: its CR is no byte of the line.
		lb = bytes.TrimSuffix(lb, []byte("\r"))
		if len(lb) > MaxLineLen {
			l := string(lb[:MaxLineLen])
			if fail(line, &Error{Col: MaxLineLen + 1, Msg: fmt.Sprintf("line too long (%d bytes; at most %d)", len(lb), MaxLineLen)}) {
				break
			}
			if toks := tokenize(l); len(toks) > 0 && toks[0].s == ".engine" {
				haveEng = true // as for a bad .engine: the records after it are not engineless
			}
			continue
		}
		l := string(lb)
		res, e := parseLine(l, eng, haveEng)
		if res.kind == lineEngine && e != nil {
			haveEng = true // a bad .engine: do not also blame every record after it
		}
		if e != nil {
			if fail(line, e) {
				break
			}
			continue
		}
		switch res.kind {
		case lineEngine:
			eng, haveEng = res.engine, true
		case lineRecord:
			if records == MaxRecords {
				fail(line, &Error{Col: 1, Msg: fmt.Sprintf("more than %d records", MaxRecords)})
				return nil, errs
			}
			records++
			if errs == nil {
				out = append(out, res.rec[:]...)
			}
		}
	}
	if errs != nil {
		return nil, errs
	}
	return out, nil
}

// ParseRecord reads one record line as FormatRecord writes it: a record
// with engine= (there is no .engine before it) or a .record line; a comment
// may follow. Errors are *Error with Line 1.
func ParseRecord(line string) ([isa.RecordSize]byte, error) {
	res, e := parseLine(line, 0, false)
	if e == nil && res.kind != lineRecord {
		e = &Error{Col: 1, Msg: "want one record (MNEMONIC field... or .record HEX)"}
	}
	if e != nil {
		e.Line = 1
		return [isa.RecordSize]byte{}, e
	}
	return res.rec, nil
}

type lineKind int

const (
	lineEmpty lineKind = iota
	lineEngine
	lineRecord
)

type lineResult struct {
	kind   lineKind
	engine isa.Engine
	rec    [isa.RecordSize]byte
}

type token struct {
	s   string
	col int
}

// tokenize splits a line, comment removed, at spaces and tabs.
func tokenize(line string) []token {
	if i := strings.IndexAny(line, ";#"); i >= 0 {
		line = line[:i]
	}
	var toks []token
	for i := 0; i < len(line); {
		if line[i] == ' ' || line[i] == '\t' || line[i] == '\r' {
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' && line[j] != '\r' {
			j++
		}
		toks = append(toks, token{line[i:j], i + 1})
		i = j
	}
	return toks
}

// recordEngines are the engines the syntax names (TOP_SP is never a
// record's engine).
const recordEngines = isa.SP + 1

func parseEngine(t token) (isa.Engine, *Error) {
	for e := isa.Engine(0); e < recordEngines; e++ {
		if t.s == e.String() {
			return e, nil
		}
	}
	return 0, &Error{Col: t.col, Msg: fmt.Sprintf("unknown engine %q (want pe, act, pool, dve or sp)", t.s)}
}

func parseLine(line string, eng isa.Engine, haveEng bool) (lineResult, *Error) {
	var res lineResult
	toks := tokenize(line)
	if len(toks) == 0 {
		return res, nil
	}
	if !strings.HasPrefix(toks[0].s, ".") {
		rec, e := parseRecord(toks, eng, haveEng)
		res.kind, res.rec = lineRecord, rec
		return res, e
	}
	d := toks[0]
	var want string
	switch d.s {
	case ".engine":
		want = "an engine name (pe, act, pool, dve or sp)"
	case ".record":
		want = "128 hex digits (one 64-byte record)"
	default:
		return res, &Error{Col: d.col, Msg: fmt.Sprintf("unknown directive %q (want .engine or .record)", d.s)}
	}
	if len(toks) == 1 {
		return res, &Error{Col: d.col + len(d.s), Msg: fmt.Sprintf("want %s after %s", want, d.s)}
	}
	if len(toks) > 2 {
		return res, &Error{Col: toks[2].col, Msg: fmt.Sprintf("unexpected %q: %s takes one argument, %s", toks[2].s, d.s, want)}
	}
	arg := toks[1]
	if d.s == ".engine" {
		e, err := parseEngine(arg)
		res.kind, res.engine = lineEngine, e
		return res, err
	}
	for i := 0; i < len(arg.s); i++ {
		if digit(arg.s[i]) > 15 {
			return res, &Error{Col: arg.col + i, Msg: fmt.Sprintf("want hex digits after .record, got %q", arg.s[i])}
		}
	}
	if len(arg.s) != 2*isa.RecordSize {
		return res, &Error{Col: arg.col, Msg: fmt.Sprintf("want exactly %d hex digits after .record (one %d-byte record), got %d", 2*isa.RecordSize, isa.RecordSize, len(arg.s))}
	}
	res.kind = lineRecord
	_, err := hex.Decode(res.rec[:], []byte(arg.s))
	if err != nil { // unreachable: the digits are checked above
		return res, &Error{Col: arg.col, Msg: err.Error()}
	}
	return res, nil
}

// The fields of a record line, in the disassembler's order.
const (
	fEngine = iota
	fAcc
	fLast
	fOp
	fWait
	fSignal
	fDst
	fSrc0
	fSrc1
	fImm0
	fImm1
	fAux
	numFields
)

var fieldNames = [numFields]string{"engine", "acc", "last", "op", "wait", "signal", "dst", "src0", "src1", "imm0", "imm1", "aux"}

const fieldList = "engine, op, wait, signal, dst, src0, src1, imm0, imm1, aux"

func parseRecord(toks []token, eng isa.Engine, haveEng bool) ([isa.RecordSize]byte, *Error) {
	mn := toks[0]
	opcode, err := isa.ParseOpcode(mn.s)
	if err != nil {
		return [isa.RecordSize]byte{}, &Error{Col: mn.col, Msg: unknownMnemonic(mn.s)}
	}
	r := isa.Record{Opcode: opcode, Engine: eng}
	var seen [numFields]int // column of the field's first occurrence
	for i, t := range toks[1:] {
		key, val, hasVal := strings.Cut(t.s, "=")
		f := -1
		for i, n := range fieldNames {
			if key == n {
				f = i
			}
		}
		switch {
		case f < 0 && hasVal:
			return r.Bytes(), &Error{Col: t.col, Msg: fmt.Sprintf("unknown field %q (want one of %s)", key, fieldList)}
		case f < 0:
			return r.Bytes(), &Error{Col: t.col, Msg: fmt.Sprintf("unknown flag %q (want acc, last or KEY=VALUE with KEY one of %s)", t.s, fieldList)}
		case (f == fAcc || f == fLast) && hasVal:
			return r.Bytes(), &Error{Col: t.col, Msg: fmt.Sprintf("flag %s takes no value", key)}
		case f != fAcc && f != fLast && !hasVal:
			return r.Bytes(), &Error{Col: t.col + len(key), Msg: fmt.Sprintf("want '=' and a value after %s", key)}
		case seen[f] != 0:
			return r.Bytes(), &Error{Col: t.col, Msg: fmt.Sprintf("duplicate %s (first at column %d)", key, seen[f])}
		}
		seen[f] = t.col
		c := &cursor{s: val, col: t.col + len(key) + 1}
		var e *Error
		switch f {
		case fEngine:
			r.Engine, e = parseEngine(token{val, c.col})
		case fAcc:
			r.Flags |= isa.FlagAccumulate
		case fLast:
			r.Flags |= isa.FlagLast
		case fOp:
			r.Op, e = parseOp(c, opcode)
		case fWait:
			r.Wait, e = c.sync()
		case fSignal:
			r.Signal, e = c.sync()
		case fDst:
			r.Dst, e = c.tensor()
		case fSrc0:
			r.Src0, e = c.tensor()
		case fSrc1:
			r.Src1, e = c.src1()
		case fImm0:
			r.Imm0, e = c.imm()
		case fImm1:
			r.Imm1, e = c.imm()
		case fAux:
			var v int64
			v, e = c.num("aux", 0, 0xFFFF)
			if e == nil {
				r.Aux, e = uint16(v), c.end("aux")
			}
		}
		if e != nil {
			if strings.HasSuffix(e.Msg, "got end of field") && i+2 < len(toks) {
				e.Msg += " (a field contains no spaces)"
			}
			return r.Bytes(), e
		}
	}
	if seen[fEngine] == 0 && !haveEng {
		return r.Bytes(), &Error{Col: mn.col, Msg: "no engine for this record: put .engine NAME (pe, act, pool, dve or sp) before it or add engine=NAME"}
	}
	return r.Bytes(), nil
}

type opKind int

const (
	opRaw opKind = iota
	opALU
	opAct
)

func kindOf(o isa.Opcode) opKind {
	switch o {
	case isa.OpTensorTensor, isa.OpTensorScalar, isa.OpTensorReduce:
		return opALU
	case isa.OpActivation:
		return opAct
	}
	return opRaw
}

func names(f func(uint8) string, n uint8) string {
	var s []string
	for i := uint8(0); i < n; i++ {
		s = append(s, f(i))
	}
	return strings.Join(s, ", ")
}

func parseOp(c *cursor, o isa.Opcode) (uint8, *Error) {
	switch kindOf(o) {
	case opALU:
		name := c.ident()
		v, err := isa.ParseALU(name)
		if err != nil || !c.eof() {
			return 0, c.errf(0, "unknown ALU op %q for %s (want one of %s)", c.s, o, names(isa.ALUName, isa.NumALUOps))
		}
		return v, nil
	case opAct:
		name := c.ident()
		v, err := isa.ParseAct(name)
		if err != nil || !c.eof() {
			return 0, c.errf(0, "unknown activation function %q (want one of %s)", c.s, names(isa.ActName, isa.NumActFuncs))
		}
		return v, nil
	}
	if ch := c.peek(); ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' {
		return 0, c.errf(0, "%s takes a numeric op=N (0..255), got %q; op names are for tensor_tensor, tensor_scalar, tensor_reduce and activation", o, c.s)
	}
	v, e := c.num("op", 0, 0xFF)
	if e != nil {
		return 0, e
	}
	return uint8(v), c.end("op")
}

// unknownMnemonic says so, suggesting the nearest mnemonic when it is close.
func unknownMnemonic(s string) string {
	best, bestD := "", 3
	var all []string
	for _, o := range isa.Opcodes() {
		all = append(all, o.Name)
		if d := distance(s, o.Name); d < bestD {
			best, bestD = o.Name, d
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown mnemonic %q (did you mean %s?)", s, best)
	}
	return fmt.Sprintf("unknown mnemonic %q (want one of %s)", s, strings.Join(all, ", "))
}

// distance is the Levenshtein distance, capped at 3 for long inputs.
func distance(a, b string) int {
	if len(a) > 64 {
		return 3
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
