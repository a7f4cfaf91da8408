package scenario

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/strictyaml"
)

// refuseNulls refuses a key whose value is YAML null (`key:`, `key: ~`,
// `key: null`) anywhere in the document, and a null item of a sequence:
// the decoder would take it as the key left out, its default, which a
// user who typed the key did not ask for. Two nulls are accepted, which
// mean what they say: a step's kind alone (`- bringup:`), the step with no
// fields, and the top-level `steps:` alone, no steps (as left out).
func refuseNulls(d *strictyaml.Decoder, root *yaml.Node) error {
	return nulls(d, docRoot(root), "", false)
}

// nulls is refuseNulls for node n at path; step says n is a step (an item
// of the top-level steps).
func nulls(d *strictyaml.Decoder, n *yaml.Node, path string, step bool) error {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := k.Value
			if path != "" {
				sub = path + "." + k.Value
			}
			if isNullNode(v) {
				if step || sub == "steps" {
					continue // "- bringup:": a step without fields; "steps:": none
				}
				return d.Errorf(v, sub, "null: give a value, or leave the key out for its default")
			}
			if err := nulls(d, v, sub, false); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			sub := fmt.Sprintf("%s[%d]", path, i)
			if isNullNode(v) {
				return d.Errorf(v, sub, "null: give a value (an empty item is not one)")
			}
			if err := nulls(d, v, sub, path == "steps"); err != nil {
				return err
			}
		}
	}
	return nil
}

// isNullNode reports whether n is a null scalar ("", "~", "null", !!null).
func isNullNode(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }
