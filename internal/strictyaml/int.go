package strictyaml

// Int: an integer setting whose range is its reader's to check.

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Int is an integer setting whose range its reader checks, against bounds
// the Go type does not know and which may depend on other settings (a
// scenario's system.devices is bounded by its arch, switch and what_if).
// It reads every integer literal an int field reads — a plain decimal
// integer, with a '-' for a negative one; quoted numbers, a '+', 0x, 0o,
// 0b, underscores and ambiguous leading zeros refused — however large, so that a count past what an int64 holds is
// refused by the setting's own check, naming the setting's range, and not
// by the decoder naming int's.
//
// A literal past int64 is held saturated at the bound it passes
// (math.MaxInt64 or math.MinInt64) and String gives it as written: every
// setting read into an Int has a range narrower than int64's, so its check
// refuses the literal and its message shows what the file says. A reader
// takes the value (Int, Int64) only after checking its range (In, Check).
type Int struct {
	v    int64
	text string // the literal as written, clipped for messages; "" for IntOf
}

// IntOf is an Int of value v, as code sets one (a default, a value taken
// from elsewhere); its String is v in decimal.
func IntOf(v int64) Int { return Int{v: v} }

// UnmarshalStrict reads an integer scalar (the decoder's integer syntax);
// one past int64 is held saturated with its text (see Int).
func (i *Int) UnmarshalStrict(d *Decoder, n *yaml.Node, path string) error {
	s, err := d.integer(n, path, false)
	if err != nil {
		return err
	}
	x, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		x = math.MaxInt64
		if strings.HasPrefix(s, "-") {
			x = math.MinInt64
		}
	} else if err != nil {
		return d.Errorf(n, path, "expected an integer, got %s", describe(n))
	}
	*i = Int{v: x, text: clip(s)}
	return nil
}

// String is the integer as the file wrote it (a
// literal past int64 keeps its digits), or in decimal for an IntOf.
func (i Int) String() string {
	if i.text != "" {
		return i.text
	}
	return strconv.FormatInt(i.v, 10)
}

// In reports whether the integer lies in lo..hi. A literal past int64 lies
// in no range narrower than int64's.
func (i Int) In(lo, hi int64) bool { return i.v >= lo && i.v <= hi }

// Int64 is the value, saturated at int64's bounds when the literal passes
// them (see Int: use it after a range check).
func (i Int) Int64() int64 { return i.v }

// Int is the value as an int, saturated at int's bounds (on a 32-bit
// platform too; see Int: use it after a range check).
func (i Int) Int() int {
	return int(min(max(i.v, math.MinInt), math.MaxInt))
}

// Check returns the value if it lies in lo..hi, else units.Int's
// *units.Error of field ("must be in lo..hi") with the value as written,
// for a reader whose setting has no wording of its own.
func (i Int) Check(field string, lo, hi int64) (int, error) {
	if _, err := units.Int(field, i.v, lo, hi); err != nil {
		var ue *units.Error
		if errors.As(err, &ue) {
			ue.Value = i.String()
		}
		return 0, err
	}
	return i.Int(), nil
}
