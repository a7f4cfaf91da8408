package strictyaml

// Scalars: strings, booleans, integers (exact fit, no ambiguous octal),
// floats (no NaN) and durations (bounded by the latest virtual time).

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/units"
)

// scalar returns the text of n, which must be a non-null scalar; what names
// the expected value for the error.
func (d *Decoder) scalar(n *yaml.Node, path, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return "", d.Errorf(n, path, "expected %s, got %s", what, describe(n))
	}
	return n.Value, nil
}

// unquoted is scalar for numbers and booleans, which must not be quoted or
// tagged as strings, nor tagged as other than one of tags.
func (d *Decoder) unquoted(n *yaml.Node, path, what string, tags ...string) (string, error) {
	s, err := d.scalar(n, path, what)
	if err == nil && isQuoted(n) {
		err = d.Errorf(n, path, "expected %s, got %s", what, describe(n))
	}
	if err == nil {
		err = d.taggedAs(n, path, what, tags...)
	}
	return s, err
}

// taggedAs refuses a scalar written with an explicit tag other than one of
// tags, the ones that agree with the value expected: `arch: !!bool
// cayman` or `devices: !!float 1` say another type than the key's, which
// the tag would otherwise be silently dropped for. An untagged scalar is
// read from its text.
func (d *Decoder) taggedAs(n *yaml.Node, path, what string, tags ...string) error {
	if n.Style&yaml.TaggedStyle == 0 || slices.Contains(tags, n.ShortTag()) {
		return nil
	}
	return d.Errorf(n, path, "expected %s, got %q tagged %s: leave the tag out (a value's type comes from its key)", what, n.Value, n.ShortTag())
}

func (d *Decoder) boolean(n *yaml.Node, path string, v reflect.Value) error {
	s, err := d.unquoted(n, path, "true or false", "!!bool")
	if err != nil {
		return err
	}
	switch s {
	case "true":
		v.SetBool(true)
	case "false":
		v.SetBool(false)
	default:
		return d.Errorf(n, path, "expected true or false, got %s", describe(n))
	}
	return nil
}

// intSyntax reports whether s is an integer literal the command line
// reads the same way, and if not, why: a count, index or other signed
// integer is a plain decimal (digits, with a '-' for a negative number,
// as units.ParseInt reads --devices); an unsigned one — an address, a
// register value, a seed — is decimal or 0x hex (as units.ParseUint reads
// csr's ADDR and --seed). Refused are what YAML 1.1 readers and Go's
// strconv with base 0 would read but the command line refuses — a '+'
// sign, underscores (1_6), 0o and 0b, 0x where decimal is expected, a sign
// on an unsigned integer — and a decimal with a leading zero, which is
// octal to Go and to YAML 1.1 but decimal to YAML 1.2. want names the
// syntax expected, hint (if any) says what was wrong and how to write it.
func intSyntax(s string, hex bool) (want, hint string) {
	want = "a plain decimal integer"
	if hex {
		want = "a decimal or 0x hex integer"
	}
	digits := func(t string, hex bool) bool {
		return t != "" && strings.IndexFunc(t, func(c rune) bool {
			return !('0' <= c && c <= '9' || hex && ('a' <= c && c <= 'f' || 'A' <= c && c <= 'F'))
		}) < 0
	}
	body := s
	if !hex {
		body = strings.TrimPrefix(s, "-")
	}
	prefixed := len(body) > 2 && body[0] == '0' && strings.ContainsRune("xXoObB", rune(body[1]))
	switch {
	case hex && len(body) > 2 && (body[:2] == "0x" || body[:2] == "0X") && digits(body[2:], true):
		return want, ""
	case len(body) > 1 && body[0] == '0' && digits(body, false):
		return want, "a leading zero is ambiguous: write the number without it"
	case digits(body, false):
		return want, ""
	case strings.HasPrefix(s, "+"):
		hint = "no '+' sign"
	case hex && strings.HasPrefix(s, "-"):
		hint = "no sign: the value is unsigned"
	case strings.ContainsRune(s, '_'):
		hint = "no underscores"
	case prefixed && hex && body[1] != 'x' && body[1] != 'X':
		hint = "no 0o or 0b prefix"
	case prefixed && hex:
		return want, "-"
	case prefixed:
		hint = "no 0x, 0o or 0b prefix"
	default:
		return want, "-" // no integer at all
	}
	if v, err := strconv.ParseInt(s, 0, 64); err == nil && !(hex && v < 0) {
		return want, fmt.Sprintf("%s: write %d", hint, v)
	}
	if v, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 0, 64); err == nil {
		return want, fmt.Sprintf("%s: write %d", hint, v)
	}
	return want, hint
}

// integer returns the text of an integer scalar, refused as no integer
// when it is quoted, tagged otherwise or not in the syntax of its kind
// (intSyntax: decimal, or decimal or 0x hex for an unsigned integer).
func (d *Decoder) integer(n *yaml.Node, path string, hex bool) (string, error) {
	s, err := d.unquoted(n, path, "an integer", "!!int")
	if err != nil {
		return "", err
	}
	switch want, hint := intSyntax(s, hex); hint {
	case "":
		return s, nil
	case "-": // no integer at all (abc, 1.5)
		return "", d.Errorf(n, path, "expected an integer, got %s", describe(n))
	default:
		return "", d.Errorf(n, path, "expected %s, got %s (%s)", want, describe(n), hint)
	}
}

// IntegerText is the text of the integer scalar n, refused as a field of
// an integer type refuses it (quoted, tagged otherwise, or not in the
// syntax of the kind: a plain decimal integer, or with hex a decimal or
// 0x hex one): for a reader that takes a scalar of any kind and checks
// its range itself (a sweep grid's counts), so that it refuses "16" and
// 0x10 as a scenario's field does.
func (d *Decoder) IntegerText(n *yaml.Node, path string, hex bool) (string, error) {
	return d.integer(n, path, hex)
}

// NumberText is the text of the number scalar n, refused as a field of a
// float type refuses it when it is quoted or tagged otherwise: for a
// reader that takes a scalar of any kind and reads the number itself (a
// sweep grid's efa.oversubscription).
func (d *Decoder) NumberText(n *yaml.Node, path string) (string, error) {
	return d.unquoted(n, path, "a number", "!!float", "!!int")
}

// integerErr is the decoder's error for an integer scalar s that strconv
// refused with err: out of range for v's kind, naming its range (lo to
// hi), or no integer at all.
func (d *Decoder) integerErr(n *yaml.Node, path, s string, v reflect.Value, err error, lo, hi any) error {
	if errors.Is(err, strconv.ErrRange) {
		return d.Errorf(n, path, "%s is out of range for %s (%d to %d)", clip(s), v.Kind(), lo, hi)
	}
	return d.Errorf(n, path, "expected an integer, got %s", describe(n))
}

func (d *Decoder) signed(n *yaml.Node, path string, v reflect.Value) error {
	s, err := d.integer(n, path, false)
	if err != nil {
		return err
	}
	x, err := strconv.ParseInt(s, 10, 64)
	if err == nil && v.OverflowInt(x) {
		err = strconv.ErrRange
	}
	if err != nil {
		bits := v.Type().Bits()
		return d.integerErr(n, path, s, v, err, int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1))
	}
	v.SetInt(x)
	return nil
}

func (d *Decoder) unsigned(n *yaml.Node, path string, v reflect.Value) error {
	s, err := d.integer(n, path, true)
	if err != nil {
		return err
	}
	x, err := strconv.ParseUint(s, 0, 64)
	if err == nil && v.OverflowUint(x) {
		err = strconv.ErrRange
	}
	if err != nil {
		return d.integerErr(n, path, s, v, err, 0, ^uint64(0)>>(64-v.Type().Bits()))
	}
	v.SetUint(x)
	return nil
}

func (d *Decoder) float(n *yaml.Node, path string, v reflect.Value) error {
	const what = "a number"
	s, err := d.unquoted(n, path, what, "!!float", "!!int")
	if err != nil {
		return err
	}
	var x float64
	switch strings.TrimLeft(s, "+-") {
	case ".inf", ".Inf", ".INF":
		x = math.Inf(1)
		if strings.HasPrefix(s, "-") {
			x = math.Inf(-1)
		}
	case ".nan", ".NaN", ".NAN":
		x = math.NaN()
	default:
		x, err = strconv.ParseFloat(s, v.Type().Bits())
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return d.Errorf(n, path, "%s is out of range for %s", clip(s), v.Kind())
			}
			return d.Errorf(n, path, "expected %s, got %s", what, describe(n))
		}
	}
	if math.IsNaN(x) {
		return d.Errorf(n, path, "expected %s, got %s (NaN is not allowed)", what, describe(n))
	}
	v.SetFloat(x)
	return nil
}

func (d *Decoder) duration(n *yaml.Node, path string, v reflect.Value) error {
	const what = `a duration such as "1.5ms" or "2s" (units ns, us, ms, s, m, h)`
	s, err := d.scalar(n, path, what)
	if err == nil {
		err = d.taggedAs(n, path, what, "!!str")
	}
	if err != nil {
		return err
	}
	x, err := time.ParseDuration(s)
	if err != nil {
		return d.Errorf(n, path, "expected %s, got %s", what, describe(n))
	}
	if !units.WholeNanoseconds(s) {
		// time.ParseDuration drops what is finer than a nanosecond.
		return d.Errorf(n, path, "%s is not a whole number of nanoseconds: a duration's resolution is 1ns", describe(n))
	}
	// A duration is of virtual time: none may pass the latest time a clock
	// may reach (units.MaxTimePS), either way, so adding one to a time
	// cannot wrap. The sign is the field's to check.
	if _, err := units.DurationToPS(path, max(x, -x)); err != nil {
		return d.ValueError(n, path, err)
	}
	v.SetInt(int64(x))
	return nil
}
