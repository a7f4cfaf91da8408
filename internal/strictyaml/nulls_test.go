package strictyaml

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestRefuseNulls: every null value of a key and every null item is
// refused at its key path and position, but those an allow pattern names
// ("[]" any item, "*" any key, the whole path matched); a quoted "null" is
// a string, not a null; the tree is checked as Node checks it.
func TestRefuseNulls(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		allow     []string
		want      string // "" when accepted
	}{
		{"key without value", "a: 1\nb:\n", nil, "n.yaml:2:3: b: null: give a value, or leave the key out for its default"},
		{"tilde", "a: {b: ~}\n", nil, "n.yaml:1:8: a.b: null: give a value, or leave the key out"},
		{"null word", "a: {b: {c: null}}\n", nil, "n.yaml:1:12: a.b.c: null: give a value"},
		{"tagged null", "a: !!null x\n", nil, "n.yaml:1:4: a: null"},
		{"null item", "a: [1, ~]\n", nil, "n.yaml:1:8: a[1]: null: give a value (an empty item is not one)"},
		{"empty block item", "a:\n  - 1\n  -\n", nil, "a[1]: null: give a value (an empty item is not one)"},
		{"null in an item", "a:\n  - {b: 1}\n  - {b: ~}\n", nil, "n.yaml:3:9: a[1].b: null"},
		{"odd key quoted in the path", "\"x y\": ~\n", nil, `["x y"]: null`},
		{"quoted null is a string", "a: 'null'\nb: \"~\"\nc: ''\n", nil, ""},
		{"empty collections are not nulls", "a: []\nb: {}\n", nil, ""},
		{"top-level key allowed", "steps:\n", []string{"steps"}, ""},
		{"allowed only at its path", "a: {steps: ~}\n", []string{"steps"}, "a.steps: null"},
		{"any key of any item", "steps:\n  - bringup:\n  - reset: ~\n", []string{"steps[].*"}, ""},
		{"pattern is the whole path", "steps:\n  - reset: {device: ~}\n", []string{"steps[].*"}, "n.yaml:2:21: steps[0].reset.device: null"},
		{"items allowed", "a: [~, 1, null]\n", []string{"a[]"}, ""},
		{"item pattern is not a key's", "a: {b: ~}\n", []string{"a[]"}, "a.b: null"},
		{"key pattern is not an item's", "a: [~]\n", []string{"a.*"}, "a[0]: null"},
		{"nested items", "a: [[1], [~]]\n", []string{"a[][]"}, ""},
		{"alias refused", "a: &x 1\nb: *x\n", nil, "aliases are not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var root yaml.Node
			require.NoError(t, yaml.Unmarshal([]byte(tc.doc), &root))
			err := (&Decoder{File: "n.yaml"}).RefuseNulls(&root, tc.allow...)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrStrict)
			var e *Error
			require.True(t, errors.As(err, &e))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// No node, an empty document and a nil Decoder are not errors.
	require.NoError(t, (*Decoder)(nil).RefuseNulls(nil))
	require.NoError(t, (*Decoder)(nil).RefuseNulls(&yaml.Node{Kind: yaml.DocumentNode}))
}

// TestRefuseEmptyStrings: a quoted empty string, of a key or an item, is
// refused at its key path as RefuseNulls refuses a null, but where an
// allow pattern names it; a plain empty value is a null, not its concern.
func TestRefuseEmptyStrings(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		allow     []string
		want      string // "" when accepted
	}{
		{"double quotes", "a: 1\nb: \"\"\n", nil, "n.yaml:2:4: b: '': give a value, or leave the key out for its default"},
		{"single quotes, nested", "a: {b: ''}\n", nil, "n.yaml:1:8: a.b: '': give a value"},
		{"empty item", "a: [x, '']\n", nil, "n.yaml:1:8: a[1]: '': give a value (an empty item is not one)"},
		{"allowed key", "d: ''\n", []string{"d"}, ""},
		{"allowed keys of a section", "o: {x: '', y: \"\"}\n", []string{"o.*"}, ""},
		{"a null is not an empty string", "a:\nb: ~\n", nil, ""},
		{"text is not empty", "a: ' '\n", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var root yaml.Node
			require.NoError(t, yaml.Unmarshal([]byte(tc.doc), &root))
			err := (&Decoder{File: "n.yaml"}).RefuseEmptyStrings(&root, tc.allow...)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrStrict)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
