package strictyaml

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/units"
)

// TestStrictDurationBound: a duration longer than the latest virtual time
// (2^62 ps, about 1281 hours), either way, is refused where it is written,
// for every duration field; one within it decodes.
func TestStrictDurationBound(t *testing.T) {
	for _, doc := range []string{"timeout: 2000000h\n", "timeout: -2000000h\n", "timeout: 1281h1m27s\n"} {
		var s strictSample
		err := Decode("s.yaml", []byte(doc), &s)
		require.Error(t, err, doc)
		assert.ErrorIs(t, err, units.ErrRange)
		assert.Contains(t, err.Error(), "s.yaml:1:10: timeout: ")
		assert.Contains(t, err.Error(), "too long (the limit is 1281h1m26.018427387s)")
	}
	var s strictSample
	require.NoError(t, Decode("s.yaml", []byte("timeout: 1281h1m26s\n"), &s))
	assert.Equal(t, 1281*time.Hour+time.Minute+26*time.Second, s.Timeout)
}

// TestValueErrorAndErrorWith: the errors an Unmarshaler makes of a value
// internal/units refused carry the place, word the message without the
// field (which the path names), and keep the cause for errors.Is/As.
func TestValueErrorAndErrorWith(t *testing.T) {
	d := &Decoder{File: "v.yaml"}
	n := &yaml.Node{Line: 3, Column: 9}
	_, uerr := units.ParseBytes("a.size", "1X")
	var ue *units.Error
	require.ErrorAs(t, uerr, &ue)
	require.Contains(t, ue.Reason, `unknown unit "X"`)
	other := errors.New("plain")
	for _, tc := range []struct {
		name string
		err  error
		want string
		is   []error
	}{
		{"units error", d.ValueError(n, "a.size", uerr), `v.yaml:3:9: a.size: "1X": ` + ue.Reason, []error{ErrStrict, units.ErrSyntax}},
		{"units error without a value", d.ValueError(n, "a.n", &units.Error{Field: "a.n", Reason: "must be positive", Err: units.ErrRange}),
			"v.yaml:3:9: a.n: must be positive", []error{ErrStrict, units.ErrRange}},
		{"another error", d.ValueError(nil, "a", other), "v.yaml: a: plain", []error{ErrStrict, other}},
		{"ErrorWith", d.ErrorWith(n, "a.size", "1X: no such unit", uerr), "v.yaml:3:9: a.size: 1X: no such unit", []error{ErrStrict, units.ErrSyntax}},
		{"ErrorWith, no place", (*Decoder)(nil).ErrorWith(nil, "", "m", other), "m", []error{ErrStrict, other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.err.Error())
			for _, target := range tc.is {
				assert.ErrorIs(t, tc.err, target)
			}
			var e *Error
			assert.ErrorAs(t, tc.err, &e)
		})
	}
}
