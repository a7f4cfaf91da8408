package strictyaml

// Decoding: the entry points, the check of the whole tree before anything is
// decoded, and the dispatch of a node to the decoder of its Go type.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxBytes is the largest document Decode accepts, in bytes; a file read
// to be decoded is read within it (MaxBytesWhy says why, in the refusal).
const MaxBytes = 1 << 20

// MaxBytesWhy says what MaxBytes is, for the refusal of a larger file.
const MaxBytesWhy = "the YAML decoder reads documents up to 1 MiB"

// Limits on what Decode accepts. With MaxBytes, they bound the time and
// memory that a hostile or broken file can cost.
const (
	maxDepth = 64     // deepest nesting of mappings and sequences
	maxItems = 100000 // longest sequence
	// maxCalls bounds the recursion of the walker itself, which can be
	// deeper than the document when Unmarshalers call Decoder.Node (and would
	// be unbounded if one called Node on its own type with the same node).
	maxCalls = 1024
)

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
	return DecodeAs(file, "a scenario file", data, out)
}

// DecodeAs is Decode of a file of another kind than a scenario, which
// what names ("a sweep grid file") where an error says what the file must
// hold.
func DecodeAs(file, what string, data []byte, out any) (err error) {
	d := &Decoder{File: file}
	defer func() {
		// A last resort: the code below is written not to panic.
		if r := recover(); r != nil {
			err = &Error{File: file, Msg: fmt.Sprintf("internal error (a bug in the scenario decoder): %v", r)}
		}
	}()
	if !isTarget(out) {
		return d.Errorf(nil, "", "cannot decode into %T: need a non-nil pointer", out)
	}
	if len(data) > MaxBytes {
		return d.Errorf(nil, "", "document is %d bytes; at most %d (1 MiB) are allowed", len(data), MaxBytes)
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
		return d.Errorf(&next, "", "more than one document; %s holds exactly one", what)
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
	if isNull(root) {
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
	if !isTarget(out) {
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

// isTarget reports whether out is a non-nil pointer.
func isTarget(out any) bool {
	v := reflect.ValueOf(out)
	return v.IsValid() && v.Kind() == reflect.Pointer && !v.IsNil()
}

// check walks the tree under n before anything is decoded and rejects what
// the decoder never accepts anywhere: aliases, unknown tags, too deep
// nesting and too long sequences. depth is the number of mappings and
// sequences above n. The recursion stops at maxDepth.
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
	if depth++; depth > maxDepth {
		return d.Errorf(n, path, "nesting deeper than %d levels", maxDepth)
	}
	if err := d.checkTag(n, path); err != nil {
		return err
	}
	if n.Kind == yaml.SequenceNode {
		if len(n.Content) > maxItems {
			return d.Errorf(n, path, "sequence has %d items; at most %d are allowed", len(n.Content), maxItems)
		}
		for i, c := range n.Content {
			if err := d.check(c, joinIndex(path, i), depth); err != nil {
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
			sub = joinKey(path, k.Value)
		}
		if err := d.check(v, sub, depth); err != nil {
			return err
		}
	}
	return nil
}

// scalarTags are the tags a scalar may carry: the standard ones, and
// !!timestamp and !!merge, which yaml.v3 gives to plain scalars that look
// like dates or are "<<".
var scalarTags = map[string]bool{
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
		ok = scalarTags[tag]
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
	if scalarTags[tag] || tag == "!!map" || tag == "!!seq" {
		return d.Errorf(n, path, "tag %s cannot be used on %s", tag, kindName(n.Kind))
	}
	return d.Errorf(n, path, "unsupported tag %s; only the standard tags (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq) are allowed", tagName(tag))
}

var (
	unmarshalerType = reflect.TypeFor[Unmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// value decodes n into v, which must be settable.
func (d *Decoder) value(n *yaml.Node, path string, v reflect.Value) error {
	d.calls++
	defer func() { d.calls-- }()
	if d.calls > maxCalls {
		return d.Errorf(n, path, "decoding recursed more than %d levels (does an Unmarshaler call Node with its own node and type?)", maxCalls)
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
	if v.CanAddr() && v.CanInterface() && v.Addr().Type().Implements(unmarshalerType) {
		u, _ := v.Addr().Interface().(Unmarshaler)
		return d.wrap(n, path, u.UnmarshalStrict(d, n, path))
	}
	if v.Kind() == reflect.Pointer {
		if isNull(n) {
			v.SetZero()
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.value(n, path, v.Elem())
	}
	if v.Type() == durationType {
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
		if err == nil {
			err = d.taggedAs(n, path, "a string", "!!str")
		}
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
