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
)

// The sample types below stand in for a scenario file: nested structs,
// slices of structs, pointers, maps, integers of several sizes, durations,
// booleans, floats and a union (strictStep) that decodes itself.

type strictSample struct {
	Name    string                  `yaml:"name"`
	Seed    uint64                  `yaml:"seed"`
	Mask    uint8                   `yaml:"mask"`
	Offset  int32                   `yaml:"offset,omitempty"`
	Verbose bool                    `yaml:"verbose"`
	Timeout time.Duration           `yaml:"timeout"`
	Ratio   float64                 `yaml:"ratio"`
	Cluster strictCluster           `yaml:"cluster"`
	Switch  *strictSwitch           `yaml:"switch"`
	Devices map[string]strictDevice `yaml:"devices"`
	Steps   []strictStep            `yaml:"steps"`
	Tags    []string                `yaml:"tags"`
	Limit   int                     // no tag: the key is "limit"
	Scratch string                  `yaml:"-"`
}

type strictCluster struct {
	Arch    string `yaml:"arch,required"`
	Devices int    `yaml:"devices"`
	Switch  string `yaml:"switch"`
}

// MarshalYAML hides the ",required" option, which yaml.v3 does not know
// (its Marshal panics on it), by converting to an identical untagged type.
func (c strictCluster) MarshalYAML() (any, error) {
	type plain struct {
		Arch    string `yaml:"arch"`
		Devices int    `yaml:"devices"`
		Switch  string `yaml:"switch"`
	}
	return plain(c), nil
}

type strictSwitch struct {
	Ports   uint16        `yaml:"ports"`
	Latency time.Duration `yaml:"latency"`
}

type strictDevice struct {
	Cores int     `yaml:"cores"`
	HBM   *uint64 `yaml:"hbm"`
	Links []int16 `yaml:"links"`
	Clock float32 `yaml:"clock"`
}

type strictCopy struct {
	Bytes uint32 `yaml:"bytes,required"`
	Src   string `yaml:"src"`
}

// MarshalYAML: see strictCluster.MarshalYAML.
func (c strictCopy) MarshalYAML() (any, error) {
	type plain struct {
		Bytes uint32 `yaml:"bytes"`
		Src   string `yaml:"src"`
	}
	return plain(c), nil
}

// strictStep is a union: a one-key mapping "copy: {...}" or "wait: 1ms".
type strictStep struct {
	Copy *strictCopy
	Wait *time.Duration
}

func (s *strictStep) UnmarshalStrict(d *Decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return d.Errorf(n, path, "expected a one-key mapping such as {wait: 1ms} or {copy: {bytes: 4}}")
	}
	k, v := n.Content[0], n.Content[1]
	switch k.Value {
	case "copy":
		s.Copy = new(strictCopy)
		return d.Node(v, path+".copy", s.Copy)
	case "wait":
		s.Wait = new(time.Duration)
		return d.Node(v, path+".wait", s.Wait)
	}
	return d.Errorf(k, path+"."+k.Value, "unknown step %q; expected copy or wait", k.Value)
}

func (s strictStep) MarshalYAML() (any, error) {
	if s.Wait != nil {
		return map[string]string{"wait": s.Wait.String()}, nil
	}
	return map[string]*strictCopy{"copy": s.Copy}, nil
}

// strictBroken is an Unmarshaler that fails with an ordinary error.
type strictBroken struct{}

var errStrictBroken = errors.New("broken on purpose")

func (*strictBroken) UnmarshalStrict(*Decoder, *yaml.Node, string) error { return errStrictBroken }

// strictSelf calls Node on its own node and type: endless without a guard.
type strictSelf struct{}

func (s *strictSelf) UnmarshalStrict(d *Decoder, n *yaml.Node, path string) error {
	return d.Node(n, path, s)
}

const strictValidDoc = `# a sample scenario
name: ring-allreduce
seed: 0xDEADBEEF
mask: 0xA5
offset: -12
verbose: true
timeout: 1.5ms
ratio: 0.25
limit: 1000
cluster:
  arch: trn2
  devices: 16
  switch: leaf
switch:
  ports: 64
  latency: 250ns
devices:
  dev0: {cores: 8, hbm: 0x40000000, links: [1, -2], clock: 1.4e9}
  "dev 1":
    cores: 2
    links: []
steps:
  - copy: {bytes: 4}
  - wait: 1ms
  - copy:
      bytes: 4096
      src: "dev0"
tags:
  - a
  - "b"
  - 'c'
  - 42
  - true
  - |
    block
`

func strictPtr[T any](v T) *T { return &v }

func strictValidWant() strictSample {
	return strictSample{
		Name:    "ring-allreduce",
		Seed:    0xDEADBEEF,
		Mask:    0xA5,
		Offset:  -12,
		Verbose: true,
		Timeout: 1500 * time.Microsecond,
		Ratio:   0.25,
		Limit:   1000,
		Cluster: strictCluster{Arch: "trn2", Devices: 16, Switch: "leaf"},
		Switch:  &strictSwitch{Ports: 64, Latency: 250 * time.Nanosecond},
		Devices: map[string]strictDevice{
			"dev0":  {Cores: 8, HBM: strictPtr(uint64(1 << 30)), Links: []int16{1, -2}, Clock: 1.4e9},
			"dev 1": {Cores: 2},
		},
		Steps: []strictStep{
			{Copy: &strictCopy{Bytes: 4}},
			{Wait: strictPtr(time.Millisecond)},
			{Copy: &strictCopy{Bytes: 4096, Src: "dev0"}},
		},
		Tags: []string{"a", "b", "c", "42", "true", "block\n"},
	}
}

func TestStrictDecodeValid(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want strictSample
	}{
		{"full", strictValidDoc, strictValidWant()},
		{"null struct, pointer, slice and map", "name: x\ncluster:\nswitch: null\nsteps: ~\ndevices:\n", strictSample{Name: "x"}},
		{"empty collections are nil", "name: x\nsteps: []\ntags: []\ndevices: {}\ncluster: {arch: a}\n", strictSample{Name: "x", Cluster: strictCluster{Arch: "a"}}},
		{"explicit document markers", "---\nname: x\n...\n", strictSample{Name: "x"}},
		{"standard tags", "name: !!str 12\nlimit: !!int 7\nratio: !!float 1\n", strictSample{Name: "12", Limit: 7, Ratio: 1}},
		{"anchor without alias", "cluster: &c {arch: a}\n", strictSample{Cluster: strictCluster{Arch: "a"}}},
		{"integer limits", "offset: -2147483648\nseed: 18446744073709551615\nmask: 0xFF\nlimit: -16\n",
			strictSample{Offset: -2147483648, Seed: 18446744073709551615, Mask: 255, Limit: -16}},
		{"infinities", "ratio: -.inf\n", strictSample{Ratio: math.Inf(-1)}},
		{"duration zero and negative", "timeout: -1h2m\nswitch: {latency: 0}\n",
			strictSample{Timeout: -(time.Hour + 2*time.Minute), Switch: &strictSwitch{}}},
		{"quoted duration", "timeout: \"2s\"\n", strictSample{Timeout: 2 * time.Second}},
		{"fractional duration in whole nanoseconds", "timeout: 1.5us\n", strictSample{Timeout: 1500 * time.Nanosecond}},
		{"compound fractional duration", "timeout: 1.000000001s2.5us\n", strictSample{Timeout: time.Second + 2501*time.Nanosecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got strictSample
			require.NoError(t, Decode("s.yaml", []byte(tt.doc), &got))
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestStrictDecodeErrors(t *testing.T) {
	deep := "tags: " + strings.Repeat("[", 64) + strings.Repeat("]", 64) + "\n"
	deepPath := "tags" + strings.Repeat("[0]", 63)
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"unknown key", "cluster:\n  arch: x\n  foo: 1\n",
			`s.yaml:3:3: cluster.foo: unknown key "foo"; expected one of: arch, devices, switch`},
		{"unknown key in a sequence item", "steps:\n  - wait: 1ms\n  - copy: {bites: 4}\n",
			`s.yaml:3:12: steps[1].copy.bites: unknown key "bites"; expected one of: bytes, src`},
		{"unknown key at the top", "nmae: x\n",
			`s.yaml:1:1: nmae: unknown key "nmae"; expected one of: cluster, devices, limit, mask, name, offset, ratio, seed, steps, switch, tags, timeout, verbose`},
		{"duplicate key", "cluster:\n  arch: a\n  arch: b\n",
			`s.yaml:3:3: cluster.arch: duplicate key "arch" (first at line 2, column 3)`},
		{"duplicate map key", "devices:\n  d: {}\n  \"d\": {}\n",
			`s.yaml:3:3: devices.d: duplicate key "d" (first at line 2, column 3)`},
		{"missing required key", "name: x\ncluster:\n  devices: 2\n",
			`s.yaml:3:3: cluster: missing key "arch"`},
		{"missing required key in a step", "steps:\n  - copy: {src: a}\n",
			`s.yaml:2:11: steps[0].copy: missing key "bytes"`},
		{"string for int", "limit: abc\n",
			`s.yaml:1:8: limit: expected an integer, got "abc"`},
		{"quoted int", "limit: \"42\"\n",
			`s.yaml:1:8: limit: expected an integer, got the string "42"`},
		{"float for int", "limit: 1.5\n",
			`s.yaml:1:8: limit: expected an integer, got "1.5"`},
		{"leading zero", "limit: 010\n",
			`s.yaml:1:8: limit: expected a plain decimal integer, got "010" (a leading zero is ambiguous: write the number without it)`},
		{"mapping for int", "limit: {a: 1}\n",
			`s.yaml:1:8: limit: expected an integer, got a mapping`},
		{"null for int", "limit:\nname: x\n",
			`s.yaml:1:7: limit: expected an integer, got null`},
		{"sequence for struct", "cluster: [1]\n",
			`s.yaml:1:10: cluster: expected a mapping, got a sequence`},
		{"scalar for slice", "tags: a\n",
			`s.yaml:1:7: tags: expected a sequence, got "a"`},
		{"mapping for string", "tags: [{a: 1}]\n",
			`s.yaml:1:8: tags[0]: expected a string, got a mapping`},
		{"yes for bool", "verbose: yes\n",
			`s.yaml:1:10: verbose: expected true or false, got "yes"`},
		{"quoted bool", "verbose: 'true'\n",
			`s.yaml:1:10: verbose: expected true or false, got the string "true"`},
		{"uint8 out of range", "mask: 300\n",
			`s.yaml:1:7: mask: 300 is out of range for uint8 (0 to 255)`},
		{"negative uint", "seed: -1\n",
			`s.yaml:1:7: seed: expected a decimal or 0x hex integer, got "-1" (no sign: the value is unsigned)`},
		{"int32 out of range", "offset: 2147483648\n",
			`s.yaml:1:9: offset: 2147483648 is out of range for int32 (-2147483648 to 2147483647)`},
		// The command line's integer syntax: a signed integer (a count, an
		// index) is a plain decimal, an unsigned one (an address, a value,
		// a seed) decimal or 0x hex; YAML 1.1's and Go's other forms are
		// refused.
		{"hex for int", "limit: 0x10\n",
			`s.yaml:1:8: limit: expected a plain decimal integer, got "0x10" (no 0x, 0o or 0b prefix: write 16)`},
		{"plus for int", "limit: +16\n",
			`s.yaml:1:8: limit: expected a plain decimal integer, got "+16" (no '+' sign: write 16)`},
		{"octal for uint", "seed: 0o20\n",
			`s.yaml:1:7: seed: expected a decimal or 0x hex integer, got "0o20" (no 0o or 0b prefix: write 16)`},
		{"binary for uint", "mask: 0b101\n",
			`s.yaml:1:7: mask: expected a decimal or 0x hex integer, got "0b101" (no 0o or 0b prefix: write 5)`},
		{"underscore for uint", "seed: 0xDEAD_BEEF\n",
			`s.yaml:1:7: seed: expected a decimal or 0x hex integer, got "0xDEAD_BEEF" (no underscores: write 3735928559)`},
		{"plus for uint", "mask: +255\n",
			`s.yaml:1:7: mask: expected a decimal or 0x hex integer, got "+255" (no '+' sign: write 255)`},
		{"minus for uint", "mask: -1\n",
			`s.yaml:1:7: mask: expected a decimal or 0x hex integer, got "-1" (no sign: the value is unsigned)`},
		{"int64 out of range", "limit: 9223372036854775808\n",
			`s.yaml:1:8: limit: 9223372036854775808 is out of range for int (-9223372036854775808 to 9223372036854775807)`},
		{"int16 in a map of structs", "devices:\n  \"dev 1\": {links: [1, 40000]}\n",
			`s.yaml:2:24: devices["dev 1"].links[1]: 40000 is out of range for int16 (-32768 to 32767)`},
		{"float32 out of range", "devices:\n  d: {clock: 1e39}\n",
			`s.yaml:2:14: devices.d.clock: 1e39 is out of range for float32`},
		{"NaN", "ratio: .nan\n",
			`s.yaml:1:8: ratio: expected a number, got ".nan" (NaN is not allowed)`},
		{"bad duration", "timeout: 5\n",
			`s.yaml:1:10: timeout: expected a duration such as "1.5ms" or "2s" (units ns, us, ms, s, m, h), got "5"`},
		{"duration finer than a nanosecond", "timeout: 1.5ns\n",
			`s.yaml:1:10: timeout: "1.5ns" is not a whole number of nanoseconds: a duration's resolution is 1ns`},
		{"compound duration finer than a nanosecond", "timeout: 1s0.0001us\n",
			`s.yaml:1:10: timeout: "1s0.0001us" is not a whole number of nanoseconds: a duration's resolution is 1ns`},
		{"bad duration in a step", "steps:\n  - wait: soon\n",
			`s.yaml:2:11: steps[0].wait: expected a duration such as "1.5ms" or "2s" (units ns, us, ms, s, m, h), got "soon"`},
		{"unknown step", "steps:\n  - jump: 1\n",
			`s.yaml:2:5: steps[0].jump: unknown step "jump"; expected copy or wait`},
		{"step not a one-key mapping", "steps:\n  - 3\n",
			`s.yaml:2:5: steps[0]: expected a one-key mapping such as {wait: 1ms} or {copy: {bytes: 4}}`},
		{"syntax error (scanner)", "name: x\ncluster: a: b\n",
			`s.yaml:2: syntax error: mapping values are not allowed in this context`},
		{"syntax error on line 1", "name: @x\n",
			`s.yaml:1: syntax error: found character that cannot start any token`},
		{"syntax error (parser)", "steps:\n- wait: 1ms\nname: x\n- wait: 2ms\n",
			`s.yaml:4: syntax error: did not find expected key`},
		{"syntax error in a flow sequence", "name: x\ntags: [a, b\nlimit: 1\n",
			`s.yaml:2: syntax error: did not find expected ',' or ']'`},
		{"unterminated string", "name: x\ntags: \"a\n",
			`s.yaml:2: syntax error: found unexpected end of stream`},
		{"two documents", "name: a\n---\nname: b\n",
			`s.yaml:2:1: more than one document; a scenario file holds exactly one`},
		{"syntax error in the second document", "name: a\n---\nname: [\n",
			`s.yaml:4: syntax error: did not find expected node content`},
		{"alias", "cluster: &c {arch: a}\nswitch: *c\n",
			`s.yaml:2:9: switch: aliases are not supported (found *c)`},
		{"alias as a key", "name: &n x\ndevices: {*n : {}}\n",
			`s.yaml:2:11: devices: aliases are not supported (found *n)`},
		{"unknown anchor", "switch: *c\n",
			`s.yaml: aliases are not supported (unknown anchor 'c' referenced)`},
		{"merge key", "cluster:\n  <<: {arch: a}\n",
			`s.yaml:2:3: cluster: merge keys (<<) are not supported`},
		{"custom tag", "name: !foo x\n",
			`s.yaml:1:7: name: unsupported tag !foo; only the standard tags (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq) are allowed`},
		{"binary tag", "name: !!binary aGk=\n",
			`s.yaml:1:7: name: unsupported tag !!binary; only the standard tags (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq) are allowed`},
		// An explicit tag that says another type than the key's (once
		// dropped: name: !!int 5 was the string "5").
		{"string tagged int", "name: !!int 5\n",
			`s.yaml:1:7: name: expected a string, got "5" tagged !!int: leave the tag out (a value's type comes from its key)`},
		{"string tagged timestamp", "name: !!timestamp 2001-01-01\n",
			`s.yaml:1:7: name: expected a string, got "2001-01-01" tagged !!timestamp: leave the tag out (a value's type comes from its key)`},
		{"bool tagged int", "verbose: !!int 1\n",
			`s.yaml:1:10: verbose: expected true or false, got "1" tagged !!int: leave the tag out (a value's type comes from its key)`},
		{"int tagged float", "limit: !!float 1\n",
			`s.yaml:1:8: limit: expected an integer, got "1" tagged !!float: leave the tag out (a value's type comes from its key)`},
		{"float tagged bool", "ratio: !!bool true\n",
			`s.yaml:1:8: ratio: expected a number, got "true" tagged !!bool: leave the tag out (a value's type comes from its key)`},
		{"duration tagged int", "timeout: !!int 5\n",
			`s.yaml:1:10: timeout: expected a duration such as "1.5ms" or "2s" (units ns, us, ms, s, m, h), got "5" tagged !!int: leave the tag out (a value's type comes from its key)`},
		{"tag of the wrong kind", "tags: !!map [a]\n",
			`s.yaml:1:7: tags: tag !!map cannot be used on a sequence`},
		{"long unknown key", "cluster:\n  " + strings.Repeat("k", 100) + ": 1\n",
			`s.yaml:2:3: cluster["` + strings.Repeat("k", 64) + `…"]: unknown key "` + strings.Repeat("k", 64) + `…"; expected one of: arch, devices, switch`},
		{"unprintable tag", "name: !a%09b x\n",
			`s.yaml:1:7: name: unsupported tag "!a\tb"; only the standard tags (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq) are allowed`},
		{"long value", "limit: " + strings.Repeat("9", 100) + "\n",
			`s.yaml:1:8: limit: ` + strings.Repeat("9", 64) + `… is out of range for int (-9223372036854775808 to 9223372036854775807)`},
		{"mapping key", "devices: {[a]: {}}\n",
			`s.yaml:1:11: devices: expected a string key, got a sequence`},
		{"null key", "devices: {~: {}}\n",
			`s.yaml:1:11: devices: expected a string key, got null`},
		{"empty input", "", `s.yaml: empty document`},
		{"only a comment", "# nothing here\n", `s.yaml: empty document`},
		{"only a document marker", "---\n", `s.yaml:2:1: empty document`},
		{"null document", "null\n", `s.yaml:1:1: empty document`},
		{"sequence at the top", "- a\n", `s.yaml:1:1: expected a mapping, got a sequence`},
		{"too deep", deep,
			`s.yaml:1:70: ` + deepPath + `: nesting deeper than 64 levels`},
		{"far too deep for yaml.v3", "tags: " + strings.Repeat("[", 10001),
			`s.yaml:1: nesting deeper than 64 levels`},
		{"too long", "tags: [" + strings.Repeat("a,", 100001) + "]\n",
			`s.yaml:1:7: tags: sequence has 100001 items; at most 100000 are allowed`},
		{"too large", "name: x\n" + strings.Repeat("#", 1<<20) + "\n",
			`s.yaml: document is 1048585 bytes; at most 1048576 (1 MiB) are allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got strictSample
			err := Decode("s.yaml", []byte(tt.doc), &got)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.ErrorIs(t, err, ErrStrict)
			var e *Error
			assert.ErrorAs(t, err, &e)
		})
	}
}

func TestStrictErrorsIsAs(t *testing.T) {
	var got strictSample
	err := Decode("s.yaml", []byte("cluster:\n  arch: a\n  bogus: 1\n"), &got)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrStrict))
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, Error{File: "s.yaml", Line: 3, Column: 3, Path: "cluster.bogus",
		Msg: `unknown key "bogus"; expected one of: arch, devices, switch`}, *e)

	// An ordinary error from an Unmarshaler gets a place and stays visible.
	var b struct {
		B strictBroken `yaml:"b"`
	}
	err = Decode("b.yaml", []byte("b: 1\n"), &b)
	require.Error(t, err)
	assert.Equal(t, "b.yaml:1:4: b: broken on purpose", err.Error())
	assert.ErrorIs(t, err, ErrStrict)
	assert.ErrorIs(t, err, errStrictBroken)

	// %w in Errorf wraps too.
	d := &Decoder{File: "w.yaml"}
	err = d.Errorf(&yaml.Node{Line: 2, Column: 5}, "a.b", "bad: %w", errStrictBroken)
	assert.Equal(t, "w.yaml:2:5: a.b: bad: broken on purpose", err.Error())
	assert.ErrorIs(t, err, ErrStrict)
	assert.ErrorIs(t, err, errStrictBroken)
}

func TestStrictErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "f.yaml", Line: 3, Column: 7, Path: "a.b", Msg: "m"}, "f.yaml:3:7: a.b: m"},
		{Error{File: "f.yaml", Line: 3, Path: "a.b", Msg: "m"}, "f.yaml:3: a.b: m"},
		{Error{File: "f.yaml", Path: "a.b", Msg: "m"}, "f.yaml: a.b: m"},
		{Error{File: "f.yaml", Line: 3, Column: 7, Msg: "m"}, "f.yaml:3:7: m"},
		{Error{Line: 3, Column: 7, Path: "a", Msg: "m"}, "3:7: a: m"},
		{Error{Path: "a", Msg: "m"}, "a: m"},
		{Error{Msg: "m"}, "m"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}
}

func TestStrictNode(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("a: 1\n"), &doc))
	d := &Decoder{File: "n.yaml"}

	var m map[string]int
	require.NoError(t, d.Node(&doc, "", &m))
	assert.Equal(t, map[string]int{"a": 1}, m)

	// Node checks the tree when called from outside: an alias is rejected.
	alias := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: 1, Column: 1, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "a", Line: 1, Column: 1},
		{Kind: yaml.AliasNode, Value: "x", Line: 1, Column: 4},
	}}
	err := d.Node(alias, "top", &m)
	assert.EqualError(t, err, "n.yaml:1:4: top.a: aliases are not supported (found *x)")

	// Bad targets and broken trees are errors, not panics.
	assert.EqualError(t, d.Node(&doc, "", m), "n.yaml:1:1: cannot decode into map[string]int: need a non-nil pointer")
	assert.EqualError(t, d.Node(nil, "p", &m), "n.yaml: p: no node to decode")
	odd := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "a"}}}
	assert.EqualError(t, d.Node(odd, "", &m), "n.yaml: mapping has a key without a value")
	holey := &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{nil}}
	var s []int
	assert.EqualError(t, d.Node(holey, "s", &s), "n.yaml: s[0]: missing node")
	var c chan int
	assert.EqualError(t, d.Node(&doc, "", &c), "n.yaml:1:1: cannot decode into Go type chan int (not supported by the scenario decoder)")
	var ik map[int]int
	assert.EqualError(t, d.Node(&doc, "", &ik), "n.yaml:1:1: cannot decode into Go type map[int]int: map keys must be strings")
	var bad struct {
		A int `yaml:"a,inline"`
	}
	assert.EqualError(t, d.Node(&doc, "", &bad), `n.yaml:1:1: cannot decode into Go type struct { A int "yaml:\"a,inline\"" }: field A: yaml tag option "inline" is not supported`)

	// An Unmarshaler that decodes its own node into its own type is stopped.
	var self strictSelf
	err = d.Node(&doc, "", &self)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decoding recursed more than 1024 levels")

	// Decode needs a pointer too.
	assert.EqualError(t, Decode("d.yaml", []byte("a: 1\n"), nil), "d.yaml: cannot decode into <nil>: need a non-nil pointer")
}

// TestStrictRoundTrip checks what FuzzDecode relies on with the valid sample.
func TestStrictRoundTrip(t *testing.T) {
	var a strictSample
	require.NoError(t, Decode("s.yaml", []byte(strictValidDoc), &a))
	strictCheckRoundTrip(t, a)
}

func strictCheckRoundTrip(t *testing.T, a strictSample) {
	t.Helper()
	if _, ok := a.Devices["<<"]; ok {
		// yaml.v3 writes the key "<<" unquoted, which makes it a merge key
		// (rejected by Decode): yaml.v3's output does not mean its input.
		return
	}
	out, err := yaml.Marshal(&a)
	require.NoError(t, err)
	var b strictSample
	require.NoError(t, Decode("again.yaml", out, &b), "re-encoded:\n%s", out)
	require.Equal(t, a, b, "re-encoded:\n%s", out)
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(strictValidDoc))
	f.Add([]byte("name: x\ncluster: {arch: a}\nsteps: [{wait: 1s}, {copy: {bytes: 1, src: \"\\u00e9\"}}]\n"))
	f.Add([]byte("devices:\n  d: {links: [1, 2], hbm: 0x10, clock: .inf}\n  \"a b\": {}\n"))
	f.Add([]byte("cluster: &c {arch: a}\nswitch: *c\n"))
	f.Add([]byte("tags: [[[[[a]]]]]\n"))
	f.Add([]byte("a: 1\n---\nb: 2\n"))
	f.Add([]byte("name: !foo x\nratio: -0x1p-2\ntimeout: -1h\n"))
	f.Add([]byte("name: \"null\"\ntags: [\"\", ' lead', 'trail ', \"a\\tb\", \"\\u00e9\\u2028x\", \"#c\", '- d', '0o17', '1_000', '2001-01-01', \"<<\"]\n"))
	f.Add([]byte("devices:\n  \"<<\": {}\n  \"\": {cores: -1}\n  \"a: b\": {links: [-32768, 32767]}\n  '1': {hbm: 18446744073709551615}\n"))
	f.Add([]byte("name: |-\n  two\n  lines\nverbose: false\nmask: 255\nseed: 0\noffset: -2147483648\n"))
	f.Add([]byte("ratio: 1e308\ntimeout: -2562047h47m16.854775808s\nswitch: {ports: 65535, latency: 2562047h47m16.854775807s}\n"))
	f.Add([]byte("devices: {d: {clock: 3.4028235e38}, e: {clock: -.inf}, f: {clock: 1e-45}}\nratio: -0\n"))
	f.Add([]byte("steps:\n- wait: 0s\n- copy: {bytes: 4294967295, src: 'x: y'}\n- copy: ~\n"))
	f.Add([]byte("name:\nswitch: ~\ntags: [a, ~, null]\nsteps:\n- wait:\n- copy: {bytes: null}\n"))
	f.Add([]byte("devices: {'x y': {links: [[~]]}, d: null}\ncluster: !!null\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// RefuseNulls takes any tree yaml.v3 parses: it never panics, and
		// every error is an *Error wrapping ErrStrict.
		var root yaml.Node
		if yaml.Unmarshal(data, &root) == nil {
			if err := (&Decoder{File: "fuzz.yaml"}).RefuseNulls(&root, "steps", "steps[].*", "tags[]"); err != nil {
				var e *Error
				if !errors.As(err, &e) || !errors.Is(err, ErrStrict) {
					t.Fatalf("RefuseNulls: error is not an *Error wrapping ErrStrict: %#v", err)
				}
			}
		}
		var a strictSample
		err := Decode("fuzz.yaml", data, &a)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrStrict) {
				t.Fatalf("error is not an *Error wrapping ErrStrict: %#v", err)
			}
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("panic turned into an error: %v", err)
			}
			return
		}
		strictCheckRoundTrip(t, a)
	})
}
