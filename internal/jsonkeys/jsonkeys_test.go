package jsonkeys_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/jsonkeys"
)

func TestUnique(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want string // "" accepted; otherwise a part of the error
		dup  bool   // the error wraps ErrDuplicate
	}{
		{`{"a":1,"b":[1,2,{"a":3}]}`, "", false},
		{`[]`, "", false},
		{`17`, "", false},
		{`{"a":{"x":1},"b":{"x":2}}`, "", false}, // one key in two objects
		{`{"a":1,"a":2}`, `the top-level object: key "a" given twice`, true},
		{`{"a":1,"\u0061":2}`, `key "a" given twice`, true},
		{`{"seed":1,"Seed":2}`, `key "Seed" given twice`, true},
		{`{"s":1,"ſ":2}`, `given twice`, true},
		{`{"results":[{"t":1},{"t":1,"t":2}]}`, `results[1]: key "t" given twice`, true},
		{`{"p":{"q":{"r":1,"r":1}}}`, `p.q: key "r" given twice`, true},
		{`{"a":1} {}`, "data after the JSON value", false},
		{`{"a":`, "EOF", false},
		{strings.Repeat("[", jsonkeys.MaxDepth+1) + strings.Repeat("]", jsonkeys.MaxDepth+1), "nested deeper than 1000", false},
	} {
		t.Run(tc.doc[:min(len(tc.doc), 40)], func(t *testing.T) {
			err := jsonkeys.Unique([]byte(tc.doc))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, tc.dup, errors.Is(err, jsonkeys.ErrDuplicate))
		})
	}
}

// FuzzUnique: any input is answered without a panic, and a document with
// a key added twice to its top-level object is always refused.
func FuzzUnique(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[{"b":{}}]`, `"x"`, `{"a":[1,{"a":2}]}`, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		err := jsonkeys.Unique([]byte(doc))
		if err != nil || !strings.HasPrefix(strings.TrimSpace(doc), "{") {
			return
		}
		d := strings.TrimSpace(doc)
		twice := fmt.Sprintf(`{"dup0":0,"dup0":1%s`, map[bool]string{true: "}", false: "," + d[1:]}[strings.TrimSpace(d[1:]) == "}"])
		if errors.Is(jsonkeys.Unique([]byte(twice)), jsonkeys.ErrDuplicate) {
			return
		}
		t.Fatalf("%q: the key given twice was not refused", twice)
	})
}

func ExampleUnique() {
	fmt.Println(jsonkeys.Unique([]byte(`{"size":1,"time_ps":5,"time_ps":7}`)))
	// Output: the top-level object: key "time_ps" given twice: duplicate key
}
