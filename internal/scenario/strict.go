package scenario

// Strict decoding of scenario files.
//
// Scenario files are written by hand, so a mistake in one must be reported
// where it is, as file:line:column, together with what was expected there.
// yaml.v3's own decoder cannot do that: its type errors name only a line,
// (*yaml.Node).Decode silently drops keys that match no struct field, and
// aliases are expanded while decoding, which lets a small file grow without
// bound ("billion laughs"). So yaml.v3 is used here only to parse text into a
// *yaml.Node tree, which keeps the line and column of every node, and this
// file walks that tree itself and fills Go values by reflection under strict
// rules: unknown and duplicate keys are errors, required keys are checked,
// every scalar must fit its Go type exactly, aliases and custom tags are
// rejected, and the size of the input is bounded.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Limits on what Decode accepts. They bound the time and memory that a
// hostile or broken file can cost.
const (
	strictMaxBytes = 1 << 20 // largest document, in bytes
	strictMaxDepth = 64      // deepest nesting of mappings and sequences
	strictMaxItems = 100000  // longest sequence
	// strictMaxCalls bounds the recursion of the walker itself, which can be
	// deeper than the document when Unmarshalers call Decoder.Node (and would
	// be unbounded if one called Node on its own type with the same node).
	strictMaxCalls = 1024
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

// Unmarshaler is implemented by types that decode themselves from a node
// (unions such as a step that is a one-key map, sizes like "64M"). They use
// d to decode parts and to make positioned errors.
//
// UnmarshalStrict is called with every node that is decoded into the type,
// null included (but null for a pointer to the type sets the pointer to nil
// without calling it); path names the node in the document. An error that
// is not already an *Error is wrapped into one at n.
type Unmarshaler interface {
	UnmarshalStrict(d *Decoder, n *yaml.Node, path string) error
}

// Decoder holds the file name for errors. The zero value works; a Decoder
// must not be used by several goroutines at once.
type Decoder struct {
	File string

	calls int // depth of the walker's recursion
}

// Decode reads exactly one YAML document from data into out (a non-nil
// pointer). Every error it returns is (or wraps) an *Error, and so wraps
// ErrStrict.
func Decode(file string, data []byte, out any) (err error) {
	d := &Decoder{File: file}
	defer func() {
		// A last resort: the code below is written not to panic.
		if r := recover(); r != nil {
			err = &Error{File: file, Msg: fmt.Sprintf("internal error (a bug in the scenario decoder): %v", r)}
		}
	}()
	if !strictIsTarget(out) {
		return d.Errorf(nil, "", "cannot decode into %T: need a non-nil pointer", out)
	}
	if len(data) > strictMaxBytes {
		return d.Errorf(nil, "", "document is %d bytes; at most %d (1 MiB) are allowed", len(data), strictMaxBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return d.Errorf(nil, "", "empty document")
		}
		return d.syntaxError(err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return d.Errorf(&next, "", "more than one document; a scenario file holds exactly one")
	} else if !errors.Is(err, io.EOF) {
		return d.syntaxError(err)
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) != 1 || doc.Content[0] == nil {
			return d.Errorf(&doc, "", "empty document")
		}
		root = doc.Content[0]
	}
	if strictIsNull(root) {
		return d.Errorf(root, "", "empty document")
	}
	return d.Node(root, "", out)
}

// Node decodes node n into the value that out (a non-nil pointer) points
// to, path naming n in the document.
//
// Called from outside an Unmarshaler, Node first checks the whole tree under
// n for aliases, tags other than the standard ones, nesting deeper than 64
// and sequences longer than 100000 items. Unmarshalers call it to decode
// parts of their node; the tree has been checked by then.
func (d *Decoder) Node(n *yaml.Node, path string, out any) (err error) {
	if d == nil {
		d = &Decoder{}
	}
	if !strictIsTarget(out) {
		return d.Errorf(n, path, "cannot decode into %T: need a non-nil pointer", out)
	}
	if n == nil {
		return d.Errorf(nil, path, "no node to decode")
	}
	if d.calls == 0 {
		defer func() {
			// A last resort, as in Decode.
			if r := recover(); r != nil {
				err = d.Errorf(n, path, "internal error (a bug in the scenario decoder or an Unmarshaler): %v", r)
			}
		}()
		if err := d.check(n, path, 0); err != nil {
			return err
		}
	}
	return d.value(n, path, reflect.ValueOf(out).Elem())
}

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

// strictIsTarget reports whether out is a non-nil pointer.
func strictIsTarget(out any) bool {
	v := reflect.ValueOf(out)
	return v.IsValid() && v.Kind() == reflect.Pointer && !v.IsNil()
}

// check walks the tree under n before anything is decoded and rejects what
// the decoder never accepts anywhere: aliases, unknown tags, too deep
// nesting and too long sequences. depth is the number of mappings and
// sequences above n. The recursion stops at strictMaxDepth.
func (d *Decoder) check(n *yaml.Node, path string, depth int) error {
	if n == nil {
		return d.Errorf(nil, path, "missing node")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := d.check(c, path, depth); err != nil {
				return err
			}
		}
		return nil
	case yaml.AliasNode:
		return d.aliasError(n, path)
	case yaml.ScalarNode:
		return d.checkTag(n, path)
	case yaml.SequenceNode, yaml.MappingNode:
	default:
		return d.Errorf(n, path, "node of unknown kind %d", n.Kind)
	}
	if depth++; depth > strictMaxDepth {
		return d.Errorf(n, path, "nesting deeper than %d levels", strictMaxDepth)
	}
	if err := d.checkTag(n, path); err != nil {
		return err
	}
	if n.Kind == yaml.SequenceNode {
		if len(n.Content) > strictMaxItems {
			return d.Errorf(n, path, "sequence has %d items; at most %d are allowed", len(n.Content), strictMaxItems)
		}
		for i, c := range n.Content {
			if err := d.check(c, strictIndex(path, i), depth); err != nil {
				return err
			}
		}
		return nil
	}
	if len(n.Content)%2 != 0 {
		return d.Errorf(n, path, "mapping has a key without a value")
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := d.check(k, path, depth); err != nil {
			return err
		}
		sub := path
		if k != nil && k.Kind == yaml.ScalarNode {
			sub = strictJoin(path, k.Value)
		}
		if err := d.check(v, sub, depth); err != nil {
			return err
		}
	}
	return nil
}

// strictScalarTags are the tags a scalar may carry: the standard ones, and
// !!timestamp and !!merge, which yaml.v3 gives to plain scalars that look
// like dates or are "<<".
var strictScalarTags = map[string]bool{
	"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true,
	"!!timestamp": true, "!!merge": true,
}

// checkTag rejects a tag other than the standard ones, or one that does not
// fit the kind of n.
func (d *Decoder) checkTag(n *yaml.Node, path string) error {
	tag := n.ShortTag()
	var ok bool
	switch n.Kind {
	case yaml.ScalarNode:
		ok = strictScalarTags[tag]
	case yaml.MappingNode:
		ok = tag == "!!map"
	case yaml.SequenceNode:
		ok = tag == "!!seq"
	default:
		return nil
	}
	if ok {
		return nil
	}
	if strictScalarTags[tag] || tag == "!!map" || tag == "!!seq" {
		return d.Errorf(n, path, "tag %s cannot be used on %s", tag, strictKindName(n.Kind))
	}
	return d.Errorf(n, path, "unsupported tag %s; only the standard tags (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq) are allowed", strictTagName(tag))
}

func (d *Decoder) aliasError(n *yaml.Node, path string) error {
	return d.Errorf(n, path, "aliases are not supported (found *%s)", strictTagName(n.Value))
}

var (
	strictUnmarshalerType = reflect.TypeFor[Unmarshaler]()
	strictDurationType    = reflect.TypeFor[time.Duration]()
)

// value decodes n into v, which must be settable.
func (d *Decoder) value(n *yaml.Node, path string, v reflect.Value) error {
	d.calls++
	defer func() { d.calls-- }()
	if d.calls > strictMaxCalls {
		return d.Errorf(n, path, "decoding recursed more than %d levels (does an Unmarshaler call Node with its own node and type?)", strictMaxCalls)
	}
	if n == nil {
		return d.Errorf(nil, path, "missing node")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return d.Errorf(n, path, "empty document")
		}
		return d.value(n.Content[0], path, v)
	case yaml.AliasNode:
		return d.aliasError(n, path)
	case yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode:
	default:
		return d.Errorf(n, path, "node of unknown kind %d", n.Kind)
	}
	if err := d.checkTag(n, path); err != nil {
		return err
	}
	if v.CanAddr() && v.CanInterface() && v.Addr().Type().Implements(strictUnmarshalerType) {
		u, _ := v.Addr().Interface().(Unmarshaler)
		return d.wrap(n, path, u.UnmarshalStrict(d, n, path))
	}
	if v.Kind() == reflect.Pointer {
		if strictIsNull(n) {
			v.SetZero()
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.value(n, path, v.Elem())
	}
	if v.Type() == strictDurationType {
		return d.duration(n, path, v)
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.structure(n, path, v)
	case reflect.Map:
		return d.mapping(n, path, v)
	case reflect.Slice:
		return d.sequence(n, path, v)
	case reflect.String:
		s, err := d.scalar(n, path, "a string")
		if err != nil {
			return err
		}
		v.SetString(s)
		return nil
	case reflect.Bool:
		return d.boolean(n, path, v)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return d.signed(n, path, v)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return d.unsigned(n, path, v)
	case reflect.Float32, reflect.Float64:
		return d.float(n, path, v)
	}
	return d.Errorf(n, path, "cannot decode into Go type %s (not supported by the scenario decoder)", v.Type())
}

// wrap turns an error from an Unmarshaler into an *Error at n, keeping one
// that already is an *Error.
func (d *Decoder) wrap(n *yaml.Node, path string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{File: d.File, Line: n.Line, Column: n.Column, Path: path, Msg: err.Error(), cause: err}
}

// structure decodes a mapping into the struct v. Null leaves v as it is.
func (d *Decoder) structure(n *yaml.Node, path string, v reflect.Value) error {
	if strictIsNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return d.Errorf(n, path, "expected a mapping, got %s", strictDescribe(n))
	}
	info, err := strictFieldsOf(v.Type())
	if err != nil {
		return d.Errorf(n, path, "%v", err)
	}
	if len(n.Content)%2 != 0 {
		return d.Errorf(n, path, "mapping has a key without a value")
	}
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name, err := d.key(k, path)
		if err != nil {
			return err
		}
		sub := strictJoin(path, name)
		f, ok := info.byName[name]
		if !ok {
			if len(info.names) == 0 {
				return d.Errorf(k, sub, "unknown key %s; no keys are accepted here", strictQuote(name))
			}
			return d.Errorf(k, sub, "unknown key %s; expected one of: %s", strictQuote(name), strings.Join(info.names, ", "))
		}
		if first := seen[name]; first != nil {
			return d.Errorf(k, sub, "duplicate key %s (first at line %d, column %d)", strictQuote(name), first.Line, first.Column)
		}
		seen[name] = k
		if err := d.value(val, sub, v.Field(info.fields[f].index)); err != nil {
			return err
		}
	}
	var missing []string
	for _, f := range info.fields {
		if f.required && seen[f.name] == nil {
			missing = append(missing, strconv.Quote(f.name))
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return d.Errorf(n, path, "missing key %s", missing[0])
	default:
		return d.Errorf(n, path, "missing keys %s", strings.Join(missing, ", "))
	}
}

// mapping decodes a mapping into the map v, whose keys are strings. Null
// sets v to nil; an empty mapping leaves v as it is (nil stays nil).
func (d *Decoder) mapping(n *yaml.Node, path string, v reflect.Value) error {
	if strictIsNull(n) {
		v.SetZero()
		return nil
	}
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		return d.Errorf(n, path, "cannot decode into Go type %s: map keys must be strings", t)
	}
	if n.Kind != yaml.MappingNode {
		return d.Errorf(n, path, "expected a mapping, got %s", strictDescribe(n))
	}
	if len(n.Content)%2 != 0 {
		return d.Errorf(n, path, "mapping has a key without a value")
	}
	if len(n.Content) == 0 {
		return nil
	}
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(t, len(n.Content)/2))
	}
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name, err := d.key(k, path)
		if err != nil {
			return err
		}
		sub := strictJoin(path, name)
		if first := seen[name]; first != nil {
			return d.Errorf(k, sub, "duplicate key %s (first at line %d, column %d)", strictQuote(name), first.Line, first.Column)
		}
		seen[name] = k
		elem := reflect.New(t.Elem()).Elem()
		if err := d.value(val, sub, elem); err != nil {
			return err
		}
		kv := reflect.New(t.Key()).Elem()
		kv.SetString(name)
		v.SetMapIndex(kv, elem)
	}
	return nil
}

// key returns the text of a mapping key, which must be a non-null scalar.
func (d *Decoder) key(k *yaml.Node, path string) (string, error) {
	switch {
	case k == nil:
		return "", d.Errorf(nil, path, "missing key node")
	case k.Kind == yaml.AliasNode:
		return "", d.aliasError(k, path)
	case k.Kind != yaml.ScalarNode || strictIsNull(k):
		return "", d.Errorf(k, path, "expected a string key, got %s", strictDescribe(k))
	case k.ShortTag() == "!!merge":
		return "", d.Errorf(k, path, "merge keys (<<) are not supported")
	}
	if err := d.checkTag(k, path); err != nil {
		return "", err
	}
	return k.Value, nil
}

// sequence decodes a sequence into the slice v. Null and an empty sequence
// set v to nil.
func (d *Decoder) sequence(n *yaml.Node, path string, v reflect.Value) error {
	if strictIsNull(n) {
		v.SetZero()
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return d.Errorf(n, path, "expected a sequence, got %s", strictDescribe(n))
	}
	if len(n.Content) > strictMaxItems {
		return d.Errorf(n, path, "sequence has %d items; at most %d are allowed", len(n.Content), strictMaxItems)
	}
	if len(n.Content) == 0 {
		v.SetZero()
		return nil
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		if err := d.value(c, strictIndex(path, i), s.Index(i)); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

// scalar returns the text of n, which must be a non-null scalar; what names
// the expected value for the error.
func (d *Decoder) scalar(n *yaml.Node, path, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || strictIsNull(n) {
		return "", d.Errorf(n, path, "expected %s, got %s", what, strictDescribe(n))
	}
	return n.Value, nil
}

// unquoted is scalar for numbers and booleans, which must not be quoted or
// tagged as strings.
func (d *Decoder) unquoted(n *yaml.Node, path, what string) (string, error) {
	s, err := d.scalar(n, path, what)
	if err == nil && strictIsQuoted(n) {
		err = d.Errorf(n, path, "expected %s, got %s", what, strictDescribe(n))
	}
	return s, err
}

func (d *Decoder) boolean(n *yaml.Node, path string, v reflect.Value) error {
	s, err := d.unquoted(n, path, "true or false")
	if err != nil {
		return err
	}
	switch s {
	case "true":
		v.SetBool(true)
	case "false":
		v.SetBool(false)
	default:
		return d.Errorf(n, path, "expected true or false, got %s", strictDescribe(n))
	}
	return nil
}

// strictIntSyntax checks what strconv.ParseInt with base 0 would accept too
// but YAML readers would read differently: a decimal with a leading zero,
// which is octal to Go and to YAML 1.1 but decimal to YAML 1.2.
func strictIntSyntax(s string) string {
	body := strings.TrimLeft(s, "+-")
	if len(body) > 1 && body[0] == '0' && (body[1] >= '0' && body[1] <= '9' || body[1] == '_') {
		return " (a leading zero is ambiguous: write the number without it, or with 0o for octal)"
	}
	return ""
}

func (d *Decoder) signed(n *yaml.Node, path string, v reflect.Value) error {
	const what = "an integer"
	s, err := d.unquoted(n, path, what)
	if err != nil {
		return err
	}
	if hint := strictIntSyntax(s); hint != "" {
		return d.Errorf(n, path, "expected %s, got %s%s", what, strictDescribe(n), hint)
	}
	bits := v.Type().Bits()
	x, err := strconv.ParseInt(s, 0, 64)
	if err == nil && v.OverflowInt(x) {
		err = strconv.ErrRange
	}
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			lo, hi := int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1)
			return d.Errorf(n, path, "%s is out of range for %s (%d to %d)", strictClip(s), v.Kind(), lo, hi)
		}
		return d.Errorf(n, path, "expected %s, got %s", what, strictDescribe(n))
	}
	v.SetInt(x)
	return nil
}

func (d *Decoder) unsigned(n *yaml.Node, path string, v reflect.Value) error {
	const what = "an integer"
	s, err := d.unquoted(n, path, what)
	if err != nil {
		return err
	}
	if hint := strictIntSyntax(s); hint != "" {
		return d.Errorf(n, path, "expected %s, got %s%s", what, strictDescribe(n), hint)
	}
	bits := v.Type().Bits()
	rangeErr := func() error {
		return d.Errorf(n, path, "%s is out of range for %s (0 to %d)", strictClip(s), v.Kind(), ^uint64(0)>>(64-bits))
	}
	if strings.HasPrefix(s, "-") {
		x, err := strconv.ParseInt(s, 0, 64)
		switch {
		case err == nil && x == 0:
			v.SetUint(0)
			return nil
		case err == nil || errors.Is(err, strconv.ErrRange):
			return rangeErr()
		}
		return d.Errorf(n, path, "expected %s, got %s", what, strictDescribe(n))
	}
	x, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 0, 64)
	if err == nil && v.OverflowUint(x) {
		err = strconv.ErrRange
	}
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return rangeErr()
		}
		return d.Errorf(n, path, "expected %s, got %s", what, strictDescribe(n))
	}
	v.SetUint(x)
	return nil
}

func (d *Decoder) float(n *yaml.Node, path string, v reflect.Value) error {
	const what = "a number"
	s, err := d.unquoted(n, path, what)
	if err != nil {
		return err
	}
	var x float64
	switch strings.TrimLeft(s, "+-") {
	case ".inf", ".Inf", ".INF":
		x = math.Inf(1)
		if strings.HasPrefix(s, "-") {
			x = math.Inf(-1)
		}
	case ".nan", ".NaN", ".NAN":
		x = math.NaN()
	default:
		x, err = strconv.ParseFloat(s, v.Type().Bits())
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return d.Errorf(n, path, "%s is out of range for %s", strictClip(s), v.Kind())
			}
			return d.Errorf(n, path, "expected %s, got %s", what, strictDescribe(n))
		}
	}
	if math.IsNaN(x) {
		return d.Errorf(n, path, "expected %s, got %s (NaN is not allowed)", what, strictDescribe(n))
	}
	v.SetFloat(x)
	return nil
}

func (d *Decoder) duration(n *yaml.Node, path string, v reflect.Value) error {
	const what = `a duration such as "1.5ms" or "2s" (units ns, us, ms, s, m, h)`
	s, err := d.scalar(n, path, what)
	if err != nil {
		return err
	}
	x, err := time.ParseDuration(s)
	if err != nil {
		return d.Errorf(n, path, "expected %s, got %s", what, strictDescribe(n))
	}
	// A duration is of virtual time: none may pass the latest time a clock
	// may reach (units.MaxTimePS), either way, so adding one to a time
	// cannot wrap. The sign is the field's to check.
	if _, err := units.DurationToPS(path, max(x, -x)); err != nil {
		return d.valueError(n, path, err)
	}
	v.SetInt(int64(x))
	return nil
}

// strictField is a struct field that a mapping key can fill.
type strictField struct {
	name     string
	index    int
	required bool
}

// strictStruct is what the decoder knows about a struct type.
type strictStruct struct {
	fields []strictField
	byName map[string]int // name -> index into fields
	names  []string       // sorted, for "expected one of"
}

// strictStructs caches strictFieldsOf: reflect.Type -> *strictStruct or error.
var strictStructs sync.Map

// strictFieldsOf reads the yaml tags of the struct type t.
func strictFieldsOf(t reflect.Type) (*strictStruct, error) {
	if c, ok := strictStructs.Load(t); ok {
		if err, isErr := c.(error); isErr {
			return nil, err
		}
		return c.(*strictStruct), nil
	}
	info, err := strictReadFields(t)
	if err != nil {
		strictStructs.Store(t, err)
		return nil, err
	}
	strictStructs.Store(t, info)
	return info, nil
}

func strictReadFields(t reflect.Type) (*strictStruct, error) {
	info := &strictStruct{byName: make(map[string]int)}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		parts := strings.Split(tag, ",")
		field := strictField{name: parts[0], index: i}
		if field.name == "" {
			field.name = strings.ToLower(f.Name)
		}
		for _, opt := range parts[1:] {
			switch opt {
			case "required":
				field.required = true
			case "omitempty", "flow", "":
				// For encoding only.
			default:
				return nil, fmt.Errorf("cannot decode into Go type %s: field %s: yaml tag option %q is not supported", t, f.Name, opt)
			}
		}
		if _, dup := info.byName[field.name]; dup {
			return nil, fmt.Errorf("cannot decode into Go type %s: two fields are named %q", t, field.name)
		}
		info.byName[field.name] = len(info.fields)
		info.fields = append(info.fields, field)
		info.names = append(info.names, field.name)
	}
	sort.Strings(info.names)
	return info, nil
}

// strictIsNull reports whether n is a null scalar ("", "~", "null", !!null).
func strictIsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// strictIsQuoted reports whether n is a scalar that was written as a string:
// quoted, a block scalar or tagged !!str.
func strictIsQuoted(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Style != 0
}

func strictKindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	return "a node of unknown kind"
}

// strictDescribe says what n is, for "expected X, got Y".
func strictDescribe(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return strictKindName(n.Kind)
	}
	if strictIsNull(n) {
		return "null"
	}
	if strictIsQuoted(n) {
		return "the string " + strictQuote(n.Value)
	}
	return strictQuote(n.Value)
}

// strictClip shortens text from the file that goes into a message.
func strictClip(s string) string {
	const most = 60
	if len(s) <= most {
		return s
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// strictQuote quotes text from the file for a message, shortened.
func strictQuote(s string) string {
	return strconv.Quote(strictClip(s))
}

// strictTagName shows a tag in a message: as written if it is short and
// printable, else quoted.
func strictTagName(tag string) string {
	for _, r := range tag {
		if r <= ' ' || r > '~' {
			return strictQuote(tag)
		}
	}
	return strictClip(tag)
}

// strictJoin names the value under key in the mapping at path: "a.b", or
// a["b c"] when the key is not a plain name. A long key is shortened.
func strictJoin(path, key string) string {
	key = strictClip(key)
	plain := key != ""
	for i, r := range key {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && (r == '-' || r >= '0' && r <= '9')) {
			plain = false
			break
		}
	}
	if !plain {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// strictIndex names item i of the sequence at path: "a[3]" (0-based).
func strictIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// strictYAMLLine splits yaml.v3's "yaml: line N: problem".
var strictYAMLLine = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)

// strictParserProblems are the problems that libyaml's parser (as opposed to
// its scanner) reports. yaml.v3 gives their line 0-based, and leaves the
// line out when it is 0.
var strictParserProblems = []string{
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

// strictPlacelessProblems are yaml.v3 errors that carry no position: those
// of its reader (bad encodings) and of its tree building.
var strictPlacelessProblems = []string{
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
	if m := strictYAMLLine.FindStringSubmatch(msg); m != nil {
		if l, err := strconv.Atoi(m[1]); err == nil {
			line, hasLine = l, true
		}
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	switch {
	case strictHasPrefix(msg, strictParserProblems):
		line++
	case hasLine:
	case strictHasPrefix(msg, strictPlacelessProblems):
		line = 0
	default:
		line = 1 // a scanner error on the first line
	}
	e := &Error{File: d.File, Line: line, Msg: "syntax error: " + msg, cause: err}
	switch {
	case strings.HasPrefix(msg, "unknown anchor"):
		e.Msg = "aliases are not supported (" + msg + ")"
	case strings.HasPrefix(msg, "exceeded max depth"):
		e.Msg = fmt.Sprintf("nesting deeper than %d levels", strictMaxDepth)
	}
	return e
}

func strictHasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
