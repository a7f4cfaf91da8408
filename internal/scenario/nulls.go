package scenario

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/strictyaml"
)

// nullsMeant are the nulls of a scenario that mean what they say
// (strictyaml.Decoder.RefuseNulls' patterns): a step's kind alone
// (`- bringup:`), the step with no fields, and the top-level `steps:`
// alone, no steps (as left out).
var nullsMeant = []string{"steps", "steps[].*"}

// refuseNulls refuses a key whose value is YAML null (`key:`, `key: ~`,
// `key: null`) anywhere in the document, and a null item of a sequence,
// but nullsMeant: the decoder would take it as the key left out, its
// default, which a user who typed the key did not ask for.
func refuseNulls(d *strictyaml.Decoder, root *yaml.Node) error {
	return d.RefuseNulls(root, nullsMeant...)
}

// emptyMeant are the top-level keys whose empty string refuseEmptyStrings
// leaves: a description may say nothing, and the scenario's name and the
// outputs have checks of their own, which say what to give instead.
var emptyMeant = map[string]bool{"description": true, "name": true, "outputs": true}

// refuseEmptyStrings refuses a key, or a list item, given the empty string
// (quoted, "" or two single quotes) anywhere in the document but under
// emptyMeant: the decoder would take it as the key left out, its default
// (a word key's: an empty mode as timing), or as nothing asked (an empty
// expect_error, which every error contains), which a user who typed the
// key did not ask for.
func refuseEmptyStrings(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := refuseEmptyStrings(d, c, path); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := k.Value
			if path != "" {
				sub = path + "." + k.Value
			}
			if path == "" && emptyMeant[k.Value] {
				continue
			}
			if isEmptyString(v) {
				return d.Errorf(v, sub, "'': give a value, or leave the key out for its default")
			}
			if err := refuseEmptyStrings(d, v, sub); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			sub := fmt.Sprintf("%s[%d]", path, i)
			if isEmptyString(v) {
				return d.Errorf(v, sub, "'': give a value (an empty item is not one)")
			}
			if err := refuseEmptyStrings(d, v, sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// isEmptyString reports whether n is the scalar string "" (quoted: a
// plain empty scalar is null, refused by refuseNulls).
func isEmptyString(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "" && n.ShortTag() == "!!str"
}
