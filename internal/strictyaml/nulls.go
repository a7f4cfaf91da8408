package strictyaml

// The refusal of YAML nulls a user typed.

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// RefuseNulls refuses, anywhere under n (a document or its root), a key
// whose value is YAML null (`key:`, `key: ~`, `key: null`) and a null item
// of a sequence. Decode takes a null for a pointer, a struct, a map or a
// slice as the key left out, which gives the key its default: a user who
// typed the key did not ask for that. The error is at the null, with its
// key path.
//
// allow names the places where a null means what it says and is
// accepted, as patterns of the key path: keys separated by dots, "[]" for
// any item of a sequence, "*" for any key. "steps" accepts `steps:` at the
// top; "steps[].*" the value of any key of any item of steps (a step's
// kind alone, `- bringup:`). A pattern matches the whole path.
//
// The tree under n is checked first as Node checks it (no aliases, no
// nesting deeper than 64 levels), so that RefuseNulls can be given a
// tree Decode has not seen.
func (d *Decoder) RefuseNulls(n *yaml.Node, allow ...string) error {
	return d.refuse(n, isNull, "null", allow)
}

// RefuseEmptyStrings is RefuseNulls for the quoted empty string (`key: ""`,
// `key: ”`, an empty quoted item), which Decode takes for a word as the
// key left out too — or as nothing asked, where any text contains it. A
// plain empty value is a null, for RefuseNulls. allow is as RefuseNulls
// takes it.
func (d *Decoder) RefuseEmptyStrings(n *yaml.Node, allow ...string) error {
	return d.refuse(n, isEmptyString, "''", allow)
}

// isEmptyString reports whether n is the scalar string "" (quoted: a plain
// empty scalar is null).
func isEmptyString(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "" && n.ShortTag() == "!!str"
}

// refuse is RefuseNulls and RefuseEmptyStrings: it refuses every value
// under n that is (is) and no pattern of allow accepts, calling it word in
// the error.
func (d *Decoder) refuse(n *yaml.Node, is func(*yaml.Node) bool, word string, allow []string) error {
	if d == nil {
		d = &Decoder{}
	}
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) != 1 {
			return nil
		}
		n = n.Content[0]
	}
	if err := d.check(n, "", 0); err != nil {
		return err
	}
	pats := make([][]segment, len(allow))
	for i, a := range allow {
		pats[i] = parsePattern(a)
	}
	return d.nulls(n, "", nil, walk{is: is, word: word, pats: pats})
}

// walk is what refuse looks for: the values is refuses, called word in the
// error, but where a pattern of pats accepts them.
type walk struct {
	is   func(*yaml.Node) bool
	word string
	pats [][]segment
}

// segment is one step of a key path: a key, or an item of a sequence.
type segment struct {
	key  string
	item bool
}

// parsePattern splits an allow pattern of RefuseNulls into its segments.
func parsePattern(p string) []segment {
	var out []segment
	for _, part := range strings.Split(p, ".") {
		items := 0
		for strings.HasSuffix(part, "[]") {
			part = strings.TrimSuffix(part, "[]")
			items++
		}
		if part != "" {
			out = append(out, segment{key: part})
		}
		for range items {
			out = append(out, segment{item: true})
		}
	}
	return out
}

// allowed reports whether the path of segments at matches one of pats.
func allowed(at []segment, pats [][]segment) bool {
next:
	for _, p := range pats {
		if len(p) != len(at) {
			continue
		}
		for i, s := range p {
			switch {
			case s.item != at[i].item:
				continue next
			case !s.item && s.key != "*" && s.key != at[i].key:
				continue next
			}
		}
		return true
	}
	return false
}

// nulls is refuse for node n at path, whose segments are at. The tree
// has been checked (check), which bounds the recursion.
func (d *Decoder) nulls(n *yaml.Node, path string, at []segment, w walk) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := joinKey(path, k.Value)
			here := append(at[:len(at):len(at)], segment{key: k.Value})
			if w.is(v) {
				if allowed(here, w.pats) {
					continue
				}
				return d.Errorf(v, sub, "%s: give a value, or leave the key out for its default", w.word)
			}
			if err := d.nulls(v, sub, here, w); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			sub := joinIndex(path, i)
			here := append(at[:len(at):len(at)], segment{item: true})
			if w.is(v) {
				if allowed(here, w.pats) {
					continue
				}
				return d.Errorf(v, sub, "%s: give a value (an empty item is not one)", w.word)
			}
			if err := d.nulls(v, sub, here, w); err != nil {
				return err
			}
		}
	}
	return nil
}
