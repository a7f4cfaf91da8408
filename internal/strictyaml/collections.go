package strictyaml

// Mappings, structs (by their yaml tags) and sequences.

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// structure decodes a mapping into the struct v. Null leaves v as it is.
func (d *Decoder) structure(n *yaml.Node, path string, v reflect.Value) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return d.Errorf(n, path, "expected a mapping, got %s", describe(n))
	}
	info, err := fieldsOf(v.Type())
	if err != nil {
		return d.Errorf(n, path, "%v", err)
	}
	if len(n.Content)%2 != 0 {
		return d.Errorf(n, path, "mapping has a key without a value")
	}
	seen, err := d.eachKey(n, path, func(k, val *yaml.Node, name, sub string) error {
		f, ok := info.byName[name]
		if !ok {
			if len(info.names) == 0 {
				return d.Errorf(k, sub, "unknown key %s; no keys are accepted here", quote(name))
			}
			return d.Errorf(k, sub, "unknown key %s; expected one of: %s", quote(name), strings.Join(info.names, ", "))
		}
		return d.value(val, sub, v.Field(info.fields[f].index))
	})
	if err != nil {
		return err
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
	if isNull(n) {
		v.SetZero()
		return nil
	}
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		return d.Errorf(n, path, "cannot decode into Go type %s: map keys must be strings", t)
	}
	if n.Kind != yaml.MappingNode {
		return d.Errorf(n, path, "expected a mapping, got %s", describe(n))
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
	_, err := d.eachKey(n, path, func(_, val *yaml.Node, name, sub string) error {
		elem := reflect.New(t.Elem()).Elem()
		if err := d.value(val, sub, elem); err != nil {
			return err
		}
		kv := reflect.New(t.Key()).Elem()
		kv.SetString(name)
		v.SetMapIndex(kv, elem)
		return nil
	})
	return err
}

// eachKey calls fn for every key k of mapping n (its content already
// checked to pair keys with values) with its value, its text and its path,
// in order, refusing a key that is not a string and a key given twice
// (naming where it was first) before fn sees it; it returns each key's
// node by text. The first error ends it.
func (d *Decoder) eachKey(n *yaml.Node, path string, fn func(k, val *yaml.Node, name, sub string) error) (map[string]*yaml.Node, error) {
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name, err := d.key(k, path)
		if err != nil {
			return nil, err
		}
		sub := joinKey(path, name)
		if first := seen[name]; first != nil {
			return nil, d.Errorf(k, sub, "duplicate key %s (first at line %d, column %d)", quote(name), first.Line, first.Column)
		}
		seen[name] = k
		if err := fn(k, val, name, sub); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// key returns the text of a mapping key, which must be a non-null scalar.
func (d *Decoder) key(k *yaml.Node, path string) (string, error) {
	switch {
	case k == nil:
		return "", d.Errorf(nil, path, "missing key node")
	case k.Kind == yaml.AliasNode:
		return "", d.aliasError(k, path)
	case k.Kind != yaml.ScalarNode || isNull(k):
		return "", d.Errorf(k, path, "expected a string key, got %s", describe(k))
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
	if isNull(n) {
		v.SetZero()
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return d.Errorf(n, path, "expected a sequence, got %s", describe(n))
	}
	if len(n.Content) > maxItems {
		return d.Errorf(n, path, "sequence has %d items; at most %d are allowed", len(n.Content), maxItems)
	}
	if len(n.Content) == 0 {
		v.SetZero()
		return nil
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		if err := d.value(c, joinIndex(path, i), s.Index(i)); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

// fieldInfo is a struct field that a mapping key can fill.
type fieldInfo struct {
	name     string
	index    int
	required bool
}

// structInfo is what the decoder knows about a struct type.
type structInfo struct {
	fields []fieldInfo
	byName map[string]int // name -> index into fields
	names  []string       // sorted, for "expected one of"
}

// structCache caches fieldsOf: reflect.Type -> *structInfo or error.
var structCache sync.Map

// fieldsOf reads the yaml tags of the struct type t.
func fieldsOf(t reflect.Type) (*structInfo, error) {
	if c, ok := structCache.Load(t); ok {
		if err, isErr := c.(error); isErr {
			return nil, err
		}
		return c.(*structInfo), nil
	}
	info, err := readFields(t)
	if err != nil {
		structCache.Store(t, err)
		return nil, err
	}
	structCache.Store(t, info)
	return info, nil
}

func readFields(t reflect.Type) (*structInfo, error) {
	info := &structInfo{byName: make(map[string]int)}
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
		field := fieldInfo{name: parts[0], index: i}
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
