package strictyaml

// How nodes, values and places in the document are named in messages.

import (
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/units"
)

// isNull reports whether n is a null scalar ("", "~", "null", !!null).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// isQuoted reports whether n is a scalar that was written as a string:
// quoted, a block scalar or tagged !!str.
func isQuoted(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Style != 0
}

func kindName(k yaml.Kind) string {
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

// describe says what n is, for "expected X, got Y".
func describe(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return kindName(n.Kind)
	}
	if isNull(n) {
		return "null"
	}
	if isQuoted(n) {
		return "the string " + quote(n.Value)
	}
	return quote(n.Value)
}

// clip shortens text from the file that goes into a message, as every
// message cuts a value it echoes (units.Clip: 64 characters and "…").
func clip(s string) string { return units.Clip(s) }

// quote quotes text from the file for a message, shortened.
func quote(s string) string {
	return strconv.Quote(clip(s))
}

// tagName shows a tag in a message: as written if it is short and
// printable, else quoted.
func tagName(tag string) string {
	for _, r := range tag {
		if r <= ' ' || r > '~' {
			return quote(tag)
		}
	}
	return clip(tag)
}

// joinKey names the value under key in the mapping at path: "a.b", or
// a["b c"] when the key is not a plain name. A long key is shortened.
func joinKey(path, key string) string {
	key = clip(key)
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

// joinIndex names item i of the sequence at path: "a[3]" (0-based).
func joinIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
