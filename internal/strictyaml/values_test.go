package strictyaml

import (
	"errors"
	"math"
	"strings"
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

// TestInt: an Int reads every integer literal an int field reads, however
// large — one past int64 held saturated with its digits, for the reader's
// range check to refuse naming the setting's range —, refuses what an int
// field refuses, and a null leaves an *Int nil.
func TestInt(t *testing.T) {
	type counts struct {
		N *Int `yaml:"n"`
		M Int  `yaml:"m"`
	}
	for _, tc := range []struct {
		doc    string
		text   string
		v      int64
		in1to9 bool
	}{
		{"n: 5\n", "5", 5, true},
		{"n: -3\n", "-3", -3, false},
		{"n: -0\n", "-0", 0, false},
		{"n: 9223372036854775807\n", "9223372036854775807", math.MaxInt64, false},
		{"n: 99999999999999999999\n", "99999999999999999999", math.MaxInt64, false},
		{"n: -99999999999999999999\n", "-99999999999999999999", math.MinInt64, false},
		{"n: " + strings.Repeat("9", 70) + "\n", strings.Repeat("9", 64) + "…", math.MaxInt64, false},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			var c counts
			require.NoError(t, Decode("s.yaml", []byte(tc.doc), &c))
			require.NotNil(t, c.N)
			assert.Equal(t, tc.text, c.N.String())
			assert.Equal(t, tc.v, c.N.Int64())
			assert.Equal(t, tc.in1to9, c.N.In(1, 9))
			v, err := c.N.Check("a.n", 1, 9)
			if tc.in1to9 {
				require.NoError(t, err)
				assert.EqualValues(t, tc.v, v)
				return
			}
			assert.EqualError(t, err, "a.n "+tc.text+": must be in 1..9")
			assert.ErrorIs(t, err, units.ErrRange)
		})
	}
	for _, tc := range []struct{ doc, want string }{
		{"n: '5'\n", `s.yaml:1:4: n: expected an integer, got the string "5"`},
		{"n: 017\n", `s.yaml:1:4: n: expected a plain decimal integer, got "017" (a leading zero is ambiguous: write the number without it)`},
		// YAML 1.1's and Go's other integer forms, which the command line
		// refuses (--devices 0x10, +4): a count is a plain decimal.
		{"n: 0x10\n", `s.yaml:1:4: n: expected a plain decimal integer, got "0x10" (no 0x, 0o or 0b prefix: write 16)`},
		{"n: 0o20\n", `s.yaml:1:4: n: expected a plain decimal integer, got "0o20" (no 0x, 0o or 0b prefix: write 16)`},
		{"n: 0b10000\n", `s.yaml:1:4: n: expected a plain decimal integer, got "0b10000" (no 0x, 0o or 0b prefix: write 16)`},
		{"n: +16\n", `s.yaml:1:4: n: expected a plain decimal integer, got "+16" (no '+' sign: write 16)`},
		{"n: 1_6\n", `s.yaml:1:4: n: expected a plain decimal integer, got "1_6" (no underscores: write 16)`},
		{"n: -0x10\n", `s.yaml:1:4: n: expected a plain decimal integer, got "-0x10" (no 0x, 0o or 0b prefix: write -16)`},
		{"n: 1.5\n", `s.yaml:1:4: n: expected an integer, got "1.5"`},
		{"n: 0x\n", `s.yaml:1:4: n: expected an integer, got "0x"`},
		{"n: [1]\n", `s.yaml:1:4: n: expected an integer, got a sequence`},
		{"m:\n", `s.yaml:1:3: m: expected an integer, got null`},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			var c counts
			err := Decode("s.yaml", []byte(tc.doc), &c)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrStrict)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	var c counts
	require.NoError(t, Decode("s.yaml", []byte("n:\nm: 2\n"), &c))
	assert.Nil(t, c.N, "a null leaves the pointer nil: the key's default")
	assert.Equal(t, "2", c.M.String())
	assert.Equal(t, "12", IntOf(12).String())
	assert.Equal(t, 12, IntOf(12).Int())
}
