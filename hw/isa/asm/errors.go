package asm

import (
	"fmt"
	"strings"
)

// Limits of the assembler, so hostile input cannot make it allocate without
// bound.
const (
	MaxLineLen = 4096    // bytes in one source line, comment included, line end (LF or CR-LF) not
	MaxRecords = 1 << 20 // records in one program (64 MiB of binary)
	MaxErrors  = 10      // errors Assemble collects before it stops
	// MaxRecordText is the most bytes Disassemble writes for one record:
	// its line and newline, and the blank line and ".engine NAME" line of
	// an engine change before it. A record whose readable form is longer
	// (none is: the longest is about 360 bytes) is written as ".record HEX".
	MaxRecordText = 384
	// MaxSource is the most bytes in one source file, as the commands and
	// scenarios read it: what Disassemble writes for MaxRecords records,
	// and a header line of `neuronsim disasm`, fit, so that the
	// disassembly of any program assembles back.
	MaxSource = 385 << 20
)

// The disassembly of the largest program, and a header line, fit in
// MaxSource (a negative constant does not convert to uint).
const _ = uint(MaxSource - MaxRecords*MaxRecordText - (MaxLineLen + 1))

// MaxSourceWhy says what MaxSource is, for the refusal of a larger source
// file.
const MaxSourceWhy = "asm reads sources up to 385 MiB (the disassembly of the largest program)"

// Error is one assembly error: where it is and what was expected.
type Error struct {
	File string // the name given to Assemble; may be empty
	Line int    // from 1
	Col  int    // byte column, from 1
	Msg  string
}

// Error returns "file:line:col: msg" ("line:col: msg" without a file name).
func (e *Error) Error() string {
	if e.File == "" {
		return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// ErrorList is the errors of one assembly, in source order; Assemble returns
// one whenever it fails.
type ErrorList []*Error

// Error returns the errors one per line; a list of MaxErrors ends with a
// line saying assembly stopped there (there may be more).
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	if len(l) >= MaxErrors {
		fmt.Fprintf(&b, "\n(stopped after %d errors: the rest of the file is not checked)", MaxErrors)
	}
	return b.String()
}

// Unwrap returns the errors, for errors.As and errors.Is.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}
