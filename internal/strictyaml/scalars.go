package strictyaml

// Scalars: strings, booleans, integers (exact fit, no ambiguous octal),
// floats (no NaN) and durations (bounded by the latest virtual time).

import (
	"errors"
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

// intSyntax checks what strconv.ParseInt with base 0 would accept too
// but YAML readers would read differently: a decimal with a leading zero,
// which is octal to Go and to YAML 1.1 but decimal to YAML 1.2.
func intSyntax(s string) string {
	body := strings.TrimLeft(s, "+-")
	if len(body) > 1 && body[0] == '0' && (body[1] >= '0' && body[1] <= '9' || body[1] == '_') {
		return " (a leading zero is ambiguous: write the number without it, or with 0o for octal)"
	}
	return ""
}

// integer returns the text of an integer scalar, refused as no integer
// when it is quoted, tagged otherwise or has a leading zero (intSyntax).
func (d *Decoder) integer(n *yaml.Node, path string) (string, error) {
	s, err := d.unquoted(n, path, "an integer", "!!int")
	if err != nil {
		return "", err
	}
	if hint := intSyntax(s); hint != "" {
		return "", d.Errorf(n, path, "expected an integer, got %s%s", describe(n), hint)
	}
	return s, nil
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
	s, err := d.integer(n, path)
	if err != nil {
		return err
	}
	x, err := strconv.ParseInt(s, 0, 64)
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
	s, err := d.integer(n, path)
	if err != nil {
		return err
	}
	if strings.HasPrefix(s, "-") {
		// A negative integer is out of range (but -0 is 0); anything else
		// after a minus is no integer.
		x, err := strconv.ParseInt(s, 0, 64)
		switch {
		case err == nil && x == 0:
			v.SetUint(0)
			return nil
		case err == nil:
			err = strconv.ErrRange
		}
		return d.integerErr(n, path, s, v, err, 0, ^uint64(0)>>(64-v.Type().Bits()))
	}
	x, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 0, 64)
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
