package strictyaml

// Errors: the positioned *Error, the messages made from yaml.v3's syntax
// errors, and the errors of values internal/units refuses.

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Error is a decoding error at a place in a file.
type Error struct {
	File         string
	Line, Column int    // 1-based; 0 when unknown
	Path         string // where in the document, e.g. "steps[3].collective.size"
	Msg          string // what is wrong and what was expected

	cause error // an error this one wraps, if any
}

// Error formats e as "file:line:column: path: msg". A part that is unknown is
// left out with its separator: no column gives "file:line: path: msg", no
// position at all gives "file: path: msg", and an empty path drops "path: ".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if e.File != "" {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrStrict and, when e wraps another error (one returned by
// an Unmarshaler, or one passed to Errorf with %w), that error too, so that
// errors.Is and errors.As see both.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrStrict, e.cause}
	}
	return []error{ErrStrict}
}

// ErrStrict is wrapped by every *Error (errors.Is(err, ErrStrict)).
var ErrStrict = errors.New("scenario decoding")

// Errorf makes an *Error at node n. n may be nil for an error with no place
// in the file. The message is formatted as by fmt.Errorf, so %w makes the
// *Error wrap that error as well as ErrStrict.
func (d *Decoder) Errorf(n *yaml.Node, path, format string, args ...any) error {
	wrapped := fmt.Errorf(format, args...)
	e := &Error{Path: path, Msg: wrapped.Error()}
	if d != nil {
		e.File = d.File
	}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	switch wrapped.(type) {
	case interface{ Unwrap() error }, interface{ Unwrap() []error }:
		e.cause = wrapped
	}
	return e
}

// ValueError is the positioned error of a value internal/units refused
// (a *units.Error): its message is the units error's without the field,
// which path names, and it wraps err. Any other error is wrapped as by
// Errorf with %w.
func (d *Decoder) ValueError(n *yaml.Node, path string, err error) error {
	var ue *units.Error
	if !errors.As(err, &ue) {
		return d.Errorf(n, path, "%w", err)
	}
	e := &Error{Path: path, Msg: ue.Shown() + ": " + ue.Reason, cause: err}
	if d != nil {
		e.File = d.File
	}
	if ue.Value == "" {
		e.Msg = ue.Reason
	}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// ErrorWith makes an *Error at node n (nil: no place in the file) with
// message msg that wraps cause (errors.Is and errors.As see it) without
// repeating its text: for an Unmarshaler that words cause's message
// itself.
func (d *Decoder) ErrorWith(n *yaml.Node, path, msg string, cause error) error {
	e := &Error{Path: path, Msg: msg, cause: cause}
	if d != nil {
		e.File = d.File
	}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

func (d *Decoder) aliasError(n *yaml.Node, path string) error {
	return d.Errorf(n, path, "aliases are not supported (found *%s)", tagName(n.Value))
}

// yamlLine splits yaml.v3's "yaml: line N: problem".
var yamlLine = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)

// parserProblems are the problems that libyaml's parser (as opposed to
// its scanner) reports. yaml.v3 gives their line 0-based, and leaves the
// line out when it is 0.
var parserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"found undefined tag handle",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

// placelessProblems are yaml.v3 errors that carry no position: those
// of its reader (bad encodings) and of its tree building.
var placelessProblems = []string{
	"control characters are not allowed",
	"expected low surrogate area",
	"incomplete UTF-16",
	"incomplete UTF-8 octet sequence",
	"input error",
	"invalid Unicode character",
	"invalid leading UTF-8 octet",
	"invalid length of a UTF-8 sequence",
	"invalid trailing UTF-8 octet",
	"unexpected low surrogate area",
	"unknown anchor",
	"attempted to go past the end of stream",
	"anchor '",
	"document contains excessive aliasing",
}

// syntaxError converts an error of yaml.v3's parser into an *Error. yaml.v3
// reports a line but no column. Its scanner's lines are 1-based, its
// parser's 0-based (and left out when 0), which is corrected here.
func (d *Decoder) syntaxError(err error) error {
	msg := err.Error()
	line, hasLine := 0, false
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if l, err := strconv.Atoi(m[1]); err == nil {
			line, hasLine = l, true
		}
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	switch {
	case hasPrefix(msg, parserProblems):
		line++
	case hasLine:
	case hasPrefix(msg, placelessProblems):
		line = 0
	default:
		line = 1 // a scanner error on the first line
	}
	e := &Error{File: d.File, Line: line, Msg: "syntax error: " + msg, cause: err}
	switch {
	case strings.HasPrefix(msg, "unknown anchor"):
		e.Msg = "aliases are not supported (" + msg + ")"
	case strings.HasPrefix(msg, "exceeded max depth"):
		e.Msg = fmt.Sprintf("nesting deeper than %d levels", maxDepth)
	}
	return e
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
