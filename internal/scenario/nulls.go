package scenario

import (
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

// emptyMeant are the places where refuseEmptyStrings leaves the empty
// string (patterns as RefuseNulls takes them): a description may say
// nothing, and the scenario's name and the outputs have checks of their
// own, which say what to give instead.
var emptyMeant = []string{"description", "name", "outputs", "outputs.*"}

// refuseEmptyStrings refuses a key, or a list item, given the empty string
// (quoted, "" or two single quotes) anywhere in the document but under
// emptyMeant: the decoder would take it as the key left out, its default
// (a word key's: an empty mode as timing), or as nothing asked (an empty
// expect_error, which every error contains), which a user who typed the
// key did not ask for.
func refuseEmptyStrings(d *strictyaml.Decoder, root *yaml.Node) error {
	return d.RefuseEmptyStrings(root, emptyMeant...)
}
