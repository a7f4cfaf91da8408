package asm

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/neuronsim/neuronsim/hw/isa"
)

// cursor reads one field value; col is the source column of s[0], so errors
// point into the line.
type cursor struct {
	s   string
	i   int
	col int
}

func (c *cursor) errf(at int, format string, args ...any) *Error {
	return &Error{Col: c.col + at, Msg: fmt.Sprintf(format, args...)}
}

func (c *cursor) eof() bool { return c.i >= len(c.s) }

func (c *cursor) peek() byte {
	if c.eof() {
		return 0
	}
	return c.s[c.i]
}

// got describes what the cursor holds at position at, for "got …" messages.
func (c *cursor) got(at int) string {
	if at >= len(c.s) {
		return "end of field"
	}
	rest := c.s[at:]
	if len(rest) > 16 {
		rest = rest[:16] + "…"
	}
	return strconv.Quote(rest)
}

func (c *cursor) expect(ch byte, where string) *Error {
	if c.peek() != ch {
		return c.errf(c.i, "want %q %s, got %s", ch, where, c.got(c.i))
	}
	c.i++
	return nil
}

func (c *cursor) end(what string) *Error {
	if !c.eof() {
		return c.errf(c.i, "unexpected %s after the %s", c.got(c.i), what)
	}
	return nil
}

func isIdent(ch byte) bool {
	return ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_'
}

// ident reads [A-Za-z0-9_]*.
func (c *cursor) ident() string {
	start := c.i
	for c.i < len(c.s) && isIdent(c.s[c.i]) {
		c.i++
	}
	return c.s[start:c.i]
}

func digit(ch byte) int {
	switch {
	case ch >= '0' && ch <= '9':
		return int(ch - '0')
	case ch >= 'a' && ch <= 'f':
		return int(ch-'a') + 10
	case ch >= 'A' && ch <= 'F':
		return int(ch-'A') + 10
	}
	return 99
}

func bound(v int64) string {
	if v > 0xFFFF {
		return fmt.Sprintf("%#x", v)
	}
	return strconv.FormatInt(v, 10)
}

// num reads [-] (decimal | 0x hex) and checks it lies in lo..hi.
func (c *cursor) num(what string, lo, hi int64) (int64, *Error) {
	start := c.i
	neg := c.peek() == '-'
	if neg {
		c.i++
	}
	base := 10
	if strings.HasPrefix(c.s[c.i:], "0x") || strings.HasPrefix(c.s[c.i:], "0X") {
		base = 16
		c.i += 2
	}
	digits := c.i
	var v uint64
	big := false
	for ; c.i < len(c.s) && digit(c.s[c.i]) < base; c.i++ {
		if v > 1<<40 {
			big = true
			continue
		}
		v = v*uint64(base) + uint64(digit(c.s[c.i]))
	}
	if c.i == digits {
		return 0, c.errf(start, "want %s (a decimal or 0x hex number), got %s", what, c.got(start))
	}
	if c.i < len(c.s) && isIdent(c.s[c.i]) {
		for c.i < len(c.s) && isIdent(c.s[c.i]) {
			c.i++
		}
		return 0, c.errf(start, "malformed number %q for %s (want decimal or 0x hex)", c.s[start:c.i], what)
	}
	n := int64(v)
	if neg {
		n = -n
	}
	if big || n < lo || n > hi {
		return 0, c.errf(start, "%s %s out of range (want %s..%s)", what, c.s[start:c.i], bound(lo), bound(hi))
	}
	return n, nil
}

var dtypeNames = func() string {
	var names []string
	for d := isa.Dtype(1); d < isa.NumDtypes; d++ {
		names = append(names, d.String())
	}
	return strings.Join(names, ", ")
}()

func (c *cursor) dtype() (isa.Dtype, *Error) {
	at := c.i
	name := c.ident()
	if name == "" {
		return 0, c.errf(at, "want a dtype (one of %s), got %s", dtypeNames, c.got(at))
	}
	d, err := isa.ParseDtype(name)
	if err != nil {
		return 0, c.errf(at, "unknown dtype %q (want one of %s)", name, dtypeNames)
	}
	return d, nil
}

// space reads sbuf or psum and the '[' after it.
func (c *cursor) space() (bool, *Error) {
	at := c.i
	name := c.ident()
	var psum bool
	switch name {
	case "sbuf":
	case "psum":
		psum = true
	case "":
		return false, c.errf(at, "want a memory space (sbuf or psum), got %s", c.got(at))
	default:
		return false, c.errf(at, "unknown memory space %q (want sbuf or psum)", name)
	}
	return psum, c.expect('[', "after the memory space")
}

// tensor reads SPACE[START:COUNT,OFFSET]:DTYPE[DIM,...].
func (c *cursor) tensor() (isa.Tensor, *Error) {
	var t isa.Tensor
	psum, e := c.space()
	if e != nil {
		return t, e
	}
	start, e := c.num("start partition", 0, 127)
	if e != nil {
		return t, e
	}
	if e := c.expect(':', "between start partition and partition count (SPACE[START:COUNT,OFFSET])"); e != nil {
		return t, e
	}
	count, e := c.num("partition count", 0, 255)
	if e != nil {
		return t, e
	}
	if e := c.expect(',', "between partition count and byte offset"); e != nil {
		return t, e
	}
	off, e := c.num("byte offset", 0, 0xFF_FFFF)
	if e != nil {
		return t, e
	}
	if e := c.expect(']', "after the byte offset"); e != nil {
		return t, e
	}
	if e := c.expect(':', "before the dtype"); e != nil {
		return t, e
	}
	if t.Dtype, e = c.dtype(); e != nil {
		return t, e
	}
	t.Addr, t.Partitions = isa.Addr(psum, int(start), uint32(off)), uint8(count)
	if c.peek() == '[' {
		c.i++
		if e := c.dims(&t); e != nil {
			return t, e
		}
	}
	return t, c.end("tensor")
}

// dims reads DIM{,DIM}] after the '['.
func (c *cursor) dims(t *isa.Tensor) *Error {
	if c.peek() == ']' {
		c.i++
		return nil
	}
	var explicit [isa.MaxFreeDims]bool
	var at [isa.MaxFreeDims]int
	n := 0
	for {
		if n == isa.MaxFreeDims {
			return c.errf(c.i, "more than %d dims (a tensor descriptor holds %d free dims)", isa.MaxFreeDims, isa.MaxFreeDims)
		}
		at[n] = c.i
		size, e := c.num("dim size", 1, math.MaxUint16)
		if e != nil {
			return e
		}
		t.Dims[n].Size = uint16(size)
		if c.peek() == '/' {
			c.i++
			stride, e := c.num("stride", math.MinInt16, math.MaxInt16)
			if e != nil {
				return e
			}
			t.Dims[n].Stride, explicit[n] = int16(stride), true
		}
		n++
		if c.peek() != ',' {
			break
		}
		c.i++
	}
	if e := c.expect(']', "or ',' after a dim"); e != nil {
		return e
	}
	prod := int64(1)
	for k := n - 1; k >= 0; k-- {
		if !explicit[k] {
			if prod > math.MaxInt16 {
				return c.errf(at[k], "the default stride of this dim, %d, does not fit int16 (write SIZE/STRIDE)", prod)
			}
			t.Dims[k].Stride = int16(prod)
		}
		prod *= int64(t.Dims[k].Size)
	}
	return nil
}

// src1 reads SPACE[START,OFFSET]:DTYPE.
func (c *cursor) src1() (isa.Src1, *Error) {
	var s isa.Src1
	psum, e := c.space()
	if e != nil {
		return s, e
	}
	start, e := c.num("start partition", 0, 127)
	if e != nil {
		return s, e
	}
	if e := c.expect(',', "between start partition and byte offset (src1 is SPACE[START,OFFSET]:DTYPE)"); e != nil {
		return s, e
	}
	off, e := c.num("byte offset", 0, 0xFF_FFFF)
	if e != nil {
		return s, e
	}
	if e := c.expect(']', "after the byte offset"); e != nil {
		return s, e
	}
	if e := c.expect(':', "before the dtype"); e != nil {
		return s, e
	}
	if s.Dtype, e = c.dtype(); e != nil {
		return s, e
	}
	s.Addr = isa.Addr(psum, int(start), uint32(off))
	return s, c.end("src1 operand (its shape is src0's)")
}

var syncModeNames = func() string {
	var names []string
	for m := isa.SyncMode(0); m < isa.NumSyncModes; m++ {
		names = append(names, m.String())
	}
	return strings.Join(names, ", ")
}()

// noValue reports whether a sync mode is written with an index only.
func noValue(m isa.SyncMode) bool {
	return m == isa.WaitEvent || m == isa.SignalEventSet || m == isa.SignalEventClr
}

// sync reads MODE(INDEX[,VALUE]).
func (c *cursor) sync() (isa.Sync, *Error) {
	var s isa.Sync
	at := c.i
	name := c.ident()
	if name == "" {
		return s, c.errf(at, "want a sync mode (one of %s), got %s", syncModeNames, c.got(at))
	}
	m, err := isa.ParseSyncMode(name)
	if err != nil {
		return s, c.errf(at, "unknown sync mode %q (want one of %s)", name, syncModeNames)
	}
	s.Mode = m
	form := "(INDEX,VALUE)"
	if noValue(m) {
		form = "(INDEX)"
	}
	if e := c.expect('(', "after the sync mode: "+name+form); e != nil {
		return s, e
	}
	idx, e := c.num("semaphore/event index", 0, math.MaxUint8)
	if e != nil {
		return s, e
	}
	s.Index = uint8(idx)
	if !noValue(m) {
		if e := c.expect(',', "and a value: "+name+form); e != nil {
			return s, e
		}
		v, e := c.num("sync value", 0, math.MaxUint16)
		if e != nil {
			return s, e
		}
		s.Value = uint16(v)
	}
	if e := c.expect(')', "to close "+name+form); e != nil {
		return s, e
	}
	return s, c.end("sync operand")
}

// imm reads a NUMBER or f32(FLOAT) into 32 bits.
func (c *cursor) imm() (uint32, *Error) {
	if strings.HasPrefix(c.s[c.i:], "f32(") {
		c.i += 4
		at := c.i
		close := strings.LastIndexByte(c.s, ')')
		if close < at {
			return 0, c.errf(len(c.s), "want ')' to close f32(, got end of field")
		}
		text := c.s[at:close]
		f, err := strconv.ParseFloat(text, 32)
		if err == nil && strings.ContainsRune(text, '_') {
			return 0, c.errf(at, "want an fp32 literal in f32(...), got %q (no underscores)", text)
		}
		if err == nil && f == 0 && nonzeroLiteral(text) {
			return 0, c.errf(at, "%q is too small for fp32 (it would round to 0; the smallest is 0x1p-149)", text)
		}
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return 0, c.errf(at, "%q is out of fp32 range (it would round to ±Inf; the largest is 0x1.fffffep127); write inf for an infinity", text)
			}
			return 0, c.errf(at, "want an fp32 literal in f32(...), got %q", text)
		}
		c.i = close + 1
		return math.Float32bits(float32(f)), c.end("f32(...) immediate")
	}
	v, e := c.num("immediate", math.MinInt32, math.MaxUint32)
	if e == nil {
		e = c.end("immediate")
	}
	if e != nil {
		_, notInt := strconv.ParseInt(c.s, 0, 64)
		if _, err := strconv.ParseFloat(c.s, 32); err == nil && notInt != nil {
			return 0, c.errf(0, "%q is not an integer: write f32(%s) for an fp32 immediate", c.s, c.s)
		}
	}
	return uint32(v), e
}

// nonzeroLiteral reports whether a literal strconv.ParseFloat accepted
// names a value other than zero: whether its significand (the digits
// before the exponent, "e" of a decimal, "p" of a 0x hex literal) has a
// digit other than 0. A hex significand's digits include a..f, and its
// exponent starts at "p", not at an "e" digit.
func nonzeroLiteral(text string) bool {
	s := strings.ToLower(strings.TrimLeft(text, "+-"))
	digits := "123456789"
	if rest, ok := strings.CutPrefix(s, "0x"); ok {
		s, _, _ = strings.Cut(rest, "p")
		digits += "abcdef"
	} else {
		s, _, _ = strings.Cut(s, "e")
	}
	return strings.ContainsAny(s, digits)
}
