// Package units is the one checked conversion of every quantity that comes
// from outside the program: a command-line flag, a scenario or grid field, a
// snapshot, a remote request.
//
// Every conversion takes the name of the place the value came from (a flag
// such as "--link-latency", a field such as "system.devices" or a request
// such as "SLEEP.ns") and either returns a value that is exactly in range or
// an [*Error] that names the place, the value and the limit it broke. Nothing
// is rounded into range, wrapped, or replaced by a default: NaN, infinities,
// negative numbers where none can be, and results that do not fit are
// refused. Errors wrap [ErrRange] or [ErrSyntax] so tests can match them.
//
// The units are fixed: sizes are bytes and their suffixes K/KB/KiB, M/MB/MiB,
// G/GB/GiB and T/TB/TiB are powers of 1024 (as nccom-test reads them);
// bandwidths are given with their unit ([ParseBandwidth]) or in GB/s of 1e9
// bytes per second ([GBpsToBps]), read exactly, and must be a whole number
// of bytes per second (1.5 B/s, 7 bps or 0.1 GiB/s is refused, not rounded);
// durations in nanoseconds (floating point on the command line) become
// picoseconds, the simulator's unit of time, and must be a whole number of
// them (0.0001 ns is refused, not rounded to 0 ps; 1.1 ns, whose float64
// product is 1100.0000000000002 ps, is 1100 ps).
package units

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxTimePS is the latest virtual time, in picoseconds, that any simulated
// clock may reach: 2^62 ps, about 53 days. The simulator's engine refuses to
// pass it, and every duration from outside is refused when it alone exceeds
// it, so that sums of a time and a duration never wrap a uint64.
const MaxTimePS uint64 = 1 << 62

// MaxLatencyPS is the longest latency or fixed delay a part of a simulated
// system may have — a link, a switch, an endpoint, a NIC, a program's
// launch: 10 s, all the device time a collective may take
// (runtime/collective.DefaultTimeout), so no run with a longer one could
// finish. It also keeps a path's sum of them far below MaxTimePS.
const MaxLatencyPS uint64 = 10_000_000_000_000

// MaxBandwidthBps is the largest bandwidth accepted, in bytes per second:
// 1e15 B/s (1 PB/s), far above any link, and small enough that bytes ×
// 10^12 / bandwidth stays exact in 128-bit arithmetic.
const MaxBandwidthBps uint64 = 1e15

// ErrRange reports a value outside the range its field accepts.
var ErrRange = errors.New("out of range")

// ErrSyntax reports a value that could not be read at all.
var ErrSyntax = errors.New("malformed")

// Error is a refused value: where it came from, what it was, and why.
type Error struct {
	Field  string // the flag, field or request, e.g. "--link-latency"
	Value  string // the value as given
	Reason string // what is wrong with it, naming the limit
	Err    error  // ErrRange or ErrSyntax
}

func (e *Error) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("%s %s: %s", e.Field, e.Shown(), e.Reason)
}

// MaxShown is the most characters of a refused value a message echoes
// (Error.Shown): a value of 100,000 digits is cut, not printed whole.
const MaxShown = 64

// Shown is the value as a message echoes it: Value, cut after MaxShown
// characters (not inside a character) and marked "…" when longer. Every
// message that quotes a refused value — this one's, a file's positioned
// one (internal/strictyaml, a grid's) — shows it so.
func (e *Error) Shown() string { return Clip(e.Value) }

// Clip is s cut after MaxShown characters, marked "…", for a message.
func Clip(s string) string {
	if utf8.RuneCountInString(s) <= MaxShown {
		return s
	}
	i, n := 0, 0
	for i < len(s) && n < MaxShown {
		_, w := utf8.DecodeRuneInString(s[i:])
		i, n = i+w, n+1
	}
	return s[:i] + "…"
}

// Unwrap returns ErrRange or ErrSyntax.
func (e *Error) Unwrap() error { return e.Err }

func rangeErr(field, value, format string, args ...any) error {
	return &Error{Field: field, Value: value, Reason: fmt.Sprintf(format, args...), Err: ErrRange}
}

func syntaxErr(field, value, format string, args ...any) error {
	return &Error{Field: field, Value: value, Reason: fmt.Sprintf(format, args...), Err: ErrSyntax}
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// FloatToUint converts v × scale to an integer and checks it lies in [min,
// max]. The product must be a whole number of unit, but for the noise of
// float64 arithmetic (1.1 × 1000 is 1100.0000000000002): a fraction of a
// unit is refused, not rounded (the resolution is 1 unit). NaN, infinities
// and negative values are refused, and so is a positive v whose product is
// below min. unit names the unit of min and max in messages ("ps", "B/s").
func FloatToUint(field string, v, scale float64, min, max uint64, unit string) (uint64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, syntaxErr(field, fmtFloat(v), "not a finite number")
	}
	if v < 0 {
		return 0, rangeErr(field, fmtFloat(v), "negative (the smallest value is %s)", fmtFloat(float64(min)/scale))
	}
	p := v * scale
	x := math.Round(p)
	// float64(max) may round up past max; compare in float first, then exactly.
	if x >= 0x1p64 || x > float64(max) || uint64(x) > max {
		return 0, rangeErr(field, fmtFloat(v), "too large (the limit is %s, %d %s)", fmtFloat(float64(max)/scale), max, unit)
	}
	// v is the decimal given within half an ulp, and p within another of
	// v × scale: a few ulps of p is noise (none at 0, which is exact).
	if math.Abs(p-x) > math.Abs(p)*2e-15 {
		lo := uint64(math.Floor(p))
		return 0, rangeErr(field, fmtFloat(v), "%s %s is not a whole number of %s: the resolution is 1 %s (%d or %d %s is)",
			strconv.FormatFloat(p, 'g', 15, 64), unit, unit, unit, lo, lo+1, unit)
	}
	u := uint64(x)
	if u < min {
		return 0, rangeErr(field, fmtFloat(v), "too small (the smallest value is %s, %d %s)", fmtFloat(float64(min)/scale), min, unit)
	}
	return u, nil
}

// LatencyToPS converts a latency or fixed delay given in (possibly
// fractional) nanoseconds to picoseconds, refusing what is negative, not
// finite, not a whole number of picoseconds, or above [MaxLatencyPS].
func LatencyToPS(field string, ns float64) (uint64, error) {
	return latencyToPS(field, ns, 1)
}

// latencyToPS is LatencyToPS of v in a unit of nsPer nanoseconds.
func latencyToPS(field string, v, nsPer float64) (uint64, error) {
	ps, err := FloatToUint(field, v, 1000*nsPer, 0, MaxLatencyPS, "ps")
	if errors.Is(err, ErrRange) && v > float64(MaxLatencyPS)/1000/nsPer { // not +Inf: that is not a number
		return 0, latencyErr(field, fmtFloat(v))
	}
	return ps, err
}

// LatencyGrammar is what ParseLatency reads.
const LatencyGrammar = "nanoseconds (500) or a duration with its unit (500ns, 1.5us, 2ms)"

// latencyUnits are the units ParseLatency reads, in nanoseconds: a suffix
// ending another (ns, s) after it.
var latencyUnits = []struct {
	name string
	ns   float64
}{{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"μs", 1e3}, {"ms", 1e6}, {"s", 1e9}}

// ParseLatency reads a latency written s — a bare number of nanoseconds as
// strconv.ParseFloat reads it, or a decimal number with its unit ns, us
// (µs), ms or s — to picoseconds, checked as [LatencyToPS] checks a number
// of nanoseconds. A sign is refused, as by every parser of an unsigned
// quantity (sizes, bandwidths, [ParseNanoseconds]), and so are hex
// numbers with a unit. Errors quote s as written.
func ParseLatency(field, s string) (uint64, error) {
	q := strconv.Quote(s)
	num, nsPer, unit := strings.TrimSpace(s), 1.0, ""
	for _, u := range latencyUnits {
		if strings.HasSuffix(num, u.name) {
			num, nsPer, unit = num[:len(num)-len(u.name)], u.ns, u.name
			break
		}
	}
	if strings.HasPrefix(num, "+") {
		return 0, syntaxErr(field, q, "latencies are unsigned, without a sign")
	}
	if unit != "" && strings.TrimRight(num, " \t") != num {
		// As a size and a bandwidth: "500 ns" is refused, saying so.
		return 0, syntaxErr(field, q, "no space between the number and its unit: write %s%s", strings.TrimSpace(num), unit)
	}
	if unit != "" && isHex(num) {
		return 0, syntaxErr(field, q, "a number with a unit is decimal, not hex (500ns, 1.5us)")
	}
	if strings.ContainsRune(num, '_') {
		return 0, syntaxErr(field, q, "expected %s (no underscores)", LatencyGrammar)
	}
	v, err := strconv.ParseFloat(num, 64)
	var ne *strconv.NumError
	switch {
	case errors.As(err, &ne) && ne.Err == strconv.ErrRange && !strings.HasPrefix(num, "-"):
		return 0, latencyErr(field, q)
	case err != nil:
		return 0, syntaxErr(field, q, "expected %s", LatencyGrammar)
	}
	ps, err := latencyToPS(field, v, nsPer)
	if e := (*Error)(nil); errors.As(err, &e) {
		e.Value = q
	}
	return ps, err
}

// ParseNanoseconds reads a latency or fixed delay written s as a bare
// number of nanoseconds (as [ParseFloat] reads it: 500, 1.5, 2e3) to
// picoseconds, checked as [LatencyToPS] checks it: the command line's
// latency flags. A leading sign is refused, "+" as not read (a latency is
// unsigned, as a size and a bandwidth are: [ParseBytes],
// [ParseBandwidth]) and "-" as negative; a number with a unit (500ns,
// 0x10ns) is refused saying the flag is in ns.
func ParseNanoseconds(field, s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "+") {
		return 0, syntaxErr(field, strconv.Quote(s), "latencies are unsigned, without a sign")
	}
	v, err := ParseFloat(field, s)
	if e := (*Error)(nil); errors.As(err, &e) && e.Reason == notANumber && t != "" {
		e.Reason = "not a number of nanoseconds: give the number alone, in ns (500, 1.5, 2e3)"
	}
	if err != nil {
		return 0, err
	}
	return LatencyToPS(field, v)
}

// LatencyPS checks a latency or fixed delay already in picoseconds (from a
// file or an API) against [MaxLatencyPS].
func LatencyPS(field string, ps uint64) (uint64, error) {
	if ps > MaxLatencyPS {
		return 0, latencyErr(field, strconv.FormatUint(ps, 10)+"ps")
	}
	return ps, nil
}

// latencyErr is the refusal of a latency above MaxLatencyPS.
func latencyErr(field, value string) error {
	return rangeErr(field, value, "too long: a latency is at most %d ns (10 s, all the device time a collective may take: no run with a longer one could finish)", MaxLatencyPS/1000)
}

// GBpsToBps converts a bandwidth written s, a bare number of GB/s (1e9 B/s)
// as strconv.ParseFloat reads it (an exponent, a hex float such as
// 0x1p-3), to bytes per second. The number is read exactly, not as a
// float64: 53.7 is 53,700,000,000 B/s. It must be a whole number of bytes
// per second, at least 1 B/s and at most [MaxBandwidthBps]; 1.5e-9 (1.5
// B/s) is refused, not rounded. NaN, infinities and negative numbers are
// refused too.
func GBpsToBps(field, s string) (uint64, error) {
	q, t := strconv.Quote(s), strings.TrimSpace(s)
	if err := positiveNumber(field, q, t, "not a number"); err != nil {
		return 0, err
	}
	return wholeBandwidth(field, q, t, gbps)
}

// positiveNumber refuses num, a bandwidth's number, unless
// strconv.ParseFloat reads it as positive and finite: not a number (with
// reason notNumber), too large for a float64, NaN or infinite, negative,
// 0, or so small it reads as 0. q is the value as given, quoted.
func positiveNumber(field, q, num, notNumber string) error {
	v, err := strconv.ParseFloat(num, 64)
	var ne *strconv.NumError
	switch {
	case errors.As(err, &ne) && ne.Err == strconv.ErrRange:
		return rangeErr(field, q, "too large (the limit is %d B/s, 1000TB/s)", MaxBandwidthBps)
	case err != nil:
		return syntaxErr(field, q, "%s", notNumber)
	case math.IsNaN(v) || math.IsInf(v, 0):
		return syntaxErr(field, q, "not a finite number")
	case v < 0:
		return rangeErr(field, q, "negative (the smallest bandwidth is 1 B/s)")
	case v == 0 && nonzeroMantissa(num):
		return rangeErr(field, q, "too small (the smallest bandwidth is 1 B/s)") // below float64's: read as 0
	case v == 0:
		return rangeErr(field, q, "a bandwidth must be positive")
	}
	return nil
}

// DurationToPS converts a [time.Duration] to picoseconds. Negative durations
// and durations above [MaxTimePS] are refused.
func DurationToPS(field string, d time.Duration) (uint64, error) {
	if d < 0 {
		return 0, rangeErr(field, d.String(), "negative")
	}
	if uint64(d) > MaxTimePS/1000 {
		return 0, rangeErr(field, d.String(), "too long (the limit is %v)", time.Duration(MaxTimePS/1000))
	}
	return uint64(d) * 1000, nil
}

// PS checks a time or duration already in picoseconds (from a file or the
// network) against [MaxTimePS].
func PS(field string, ps uint64) (uint64, error) {
	if ps > MaxTimePS {
		return 0, rangeErr(field, strconv.FormatUint(ps, 10)+"ps", "too long (the limit is %d ps, about %v)", MaxTimePS, time.Duration(MaxTimePS/1000))
	}
	return ps, nil
}

// Int checks that v lies in [min, max].
func Int(field string, v, min, max int64) (int64, error) {
	if v < min || v > max {
		if min == max {
			return 0, rangeErr(field, strconv.FormatInt(v, 10), "must be %d", min)
		}
		return 0, rangeErr(field, strconv.FormatInt(v, 10), "must be in %d..%d", min, max)
	}
	return v, nil
}

// Uint checks that v lies in [min, max].
func Uint(field string, v, min, max uint64) (uint64, error) {
	if v < min || v > max {
		return 0, rangeErr(field, strconv.FormatUint(v, 10), "must be in %d..%d", min, max)
	}
	return v, nil
}

// ParseInt reads a decimal integer and checks it lies in [min, max].
func ParseInt(field, s string, min, max int64) (int64, error) {
	if strings.HasPrefix(strings.TrimSpace(s), "+") {
		return 0, syntaxErr(field, strconv.Quote(s), "a decimal integer, without a '+'")
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, rangeErr(field, strconv.Quote(s), "must be in %d..%d", min, max)
		}
		return 0, syntaxErr(field, strconv.Quote(s), "not a decimal integer")
	}
	return Int(field, v, min, max)
}

// ParseCount reads a decimal integer for a count whose range its caller
// checks afterwards, against bounds that depend on other settings (a
// system's device count on its generation, switch and what-if). Text that
// is no decimal integer is refused as ParseInt refuses it, but an integer
// past int's range is not: it is returned saturated at the bound it passes
// (math.MaxInt or math.MinInt), outside every such count's range, so that
// the caller's check refuses it naming the count's own range, quoting the
// text as given.
func ParseCount(field, s string) (int, error) {
	v, err := ParseInt(field, s, math.MinInt, math.MaxInt)
	if errors.Is(err, ErrRange) {
		if strings.HasPrefix(strings.TrimSpace(s), "-") {
			return math.MinInt, nil
		}
		return math.MaxInt, nil
	}
	return int(v), err
}

// ParseUint reads an unsigned integer — decimal, or hex after 0x or 0X —
// and checks it is at most max. A leading zero is decimal (010 is ten, as
// in the assembler), never octal; signs, underscores, 0o and 0b prefixes
// are refused.
func ParseUint(field, s string, max uint64) (uint64, error) {
	t := strings.TrimSpace(s)
	base, digits := 10, t
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		base, digits = 16, t[2:]
	}
	if digits == "" || strings.IndexFunc(digits, func(c rune) bool {
		return !('0' <= c && c <= '9' || base == 16 && ('a' <= c && c <= 'f' || 'A' <= c && c <= 'F'))
	}) >= 0 {
		return 0, syntaxErr(field, strconv.Quote(s), "not a decimal or 0x hex integer")
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil || v > max {
		return 0, rangeErr(field, strconv.Quote(s), "at most %d (%#x)", max, max)
	}
	return v, nil
}

// notANumber is ParseFloat's reason for text strconv does not read.
const notANumber = "not a number"

// ParseFloat reads a decimal floating-point number (as strconv.ParseFloat
// does: exponents allowed, and hex floats such as 0x1p-3 for an exact
// value; Go's underscores refused). NaN and infinities are refused, and so is a
// number too large for a float64 or, not written as 0, too small for one
// (strconv would read it as 0).
func ParseFloat(field, s string) (float64, error) {
	if strings.ContainsRune(s, '_') { // strconv takes Go's 1_000; no other number here does
		return 0, syntaxErr(field, strconv.Quote(s), "not a number (no underscores)")
	}
	if strings.HasPrefix(strings.TrimSpace(s), "+") { // as sizes, bandwidths and latencies: no '+'
		return 0, syntaxErr(field, strconv.Quote(s), "a number, without a '+'")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, rangeErr(field, strconv.Quote(s), "too large for a number")
		}
		return 0, syntaxErr(field, strconv.Quote(s), notANumber)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, syntaxErr(field, strconv.Quote(s), "not a finite number")
	}
	if v == 0 && nonzeroMantissa(s) {
		return 0, rangeErr(field, strconv.Quote(s), "too small for a number (it would read as 0)")
	}
	return v, nil
}

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
	tib = int64(1) << 40
)

// SizeGrammar describes what [ParseBytes] reads, for help texts and errors.
const SizeGrammar = "an integer number of bytes, optionally with a unit K, M, G or T (also KB/KiB, MB/MiB, …, any case), all powers of 1024: 512, 4K, 64MiB, 1G"

// sizeUnit is the bytes of a size's unit as ParseBytes reads it: none or
// B, K, M, G, T, each optionally followed by B or iB, in any case.
func sizeUnit(suffix string) (int64, bool) {
	switch strings.ToLower(suffix) {
	case "", "b":
		return 1, true
	case "k", "kb", "kib":
		return kib, true
	case "m", "mb", "mib":
		return mib, true
	case "g", "gb", "gib":
		return gib, true
	case "t", "tb", "tib":
		return tib, true
	}
	return 0, false
}

// wholeHint is ParseBytes' hint for a fraction digits.frac[unit]: the
// same size written as an integer in the largest unit that makes it one
// (1.5M: "write 1536K"), or that it is not a whole number of bytes.
func wholeHint(digits, rest string) string {
	if rest[0] != '.' {
		return ""
	}
	i := 1
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	frac := rest[1:i]
	unit, ok := sizeUnit(rest[i:])
	whole, err1 := strconv.ParseInt(digits, 10, 64)
	if !ok || err1 != nil || len(frac) > 12 || whole > tib {
		return ""
	}
	f, _ := strconv.ParseInt("0"+frac, 10, 64)
	den := int64(1)
	for range frac {
		den *= 10
	}
	if f*unit%den != 0 { // whole ≤ 2^40 and unit ≤ 2^40: whole·unit may pass int64 only with T, refused below
		return " (" + digits + rest + " is not a whole number of bytes)"
	}
	if whole > math.MaxInt64/unit {
		return ""
	}
	n := whole*unit + f*unit/den
	for _, u := range []struct {
		name string
		v    int64
	}{{"T", tib}, {"G", gib}, {"M", mib}, {"K", kib}} {
		if n%u.v == 0 {
			return fmt.Sprintf(" (write %d%s)", n/u.v, u.name)
		}
	}
	return fmt.Sprintf(" (write %d)", n)
}

// ParseBytes reads a byte count: a non-negative decimal integer, optionally
// followed by a unit K, M, G or T in any case, which may be followed by B or
// iB ("4K", "4KB", "4KiB" are all 4096). A bare "B" means bytes. Only
// integers are accepted ("1.5M" is refused, not rounded); signs, spaces,
// unknown units and values above math.MaxInt64 are refused. field names the
// flag or field in the error.
func ParseBytes(field, s string) (int64, error) {
	if s == "" {
		return 0, syntaxErr(field, `""`, "empty (want %s)", SizeGrammar)
	}
	q := strconv.Quote(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	digits, suffix := s[:i], s[i:]
	if digits == "" {
		if s[0] == '-' || s[0] == '+' {
			return 0, syntaxErr(field, q, "sizes are unsigned integers, without a sign")
		}
		return 0, syntaxErr(field, q, "does not start with a digit (want %s)", SizeGrammar)
	}
	if strings.HasPrefix(suffix, ".") || strings.HasPrefix(suffix, ",") {
		return 0, syntaxErr(field, q, "sizes are integers only%s", wholeHint(digits, suffix))
	}
	unit, ok := sizeUnit(suffix)
	if _, spaced := sizeUnit(strings.TrimLeft(suffix, " \t")); !ok && spaced && suffix != "" {
		// As a bandwidth and a latency: "4 K" is refused, saying so.
		return 0, syntaxErr(field, q, "no space between the number and its unit: write %s%s", digits, strings.TrimLeft(suffix, " \t"))
	}
	if !ok {
		return 0, syntaxErr(field, q, "unknown unit %q (want none, B, K, M, G or T, optionally followed by B or iB, any case; all are powers of 1024)", suffix)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64/unit {
		return 0, rangeErr(field, q, "too large (the limit is %d bytes)", int64(math.MaxInt64))
	}
	return n * unit, nil
}

// ParseBytesIn reads a byte count with [ParseBytes] and checks it lies in
// [min, max], naming both as sizes.
func ParseBytesIn(field, s string, min, max int64) (int64, error) {
	n, err := ParseBytes(field, s)
	if err != nil {
		return 0, err
	}
	if n < min || n > max {
		return 0, rangeErr(field, strconv.Quote(s), "must be in %s..%s", FormatBytes(min), FormatBytes(max))
	}
	return n, nil
}

// FormatBytes prints a byte count in the largest binary unit that divides
// it exactly ("1GiB", "64MiB", "4KiB", "1000B"); [ParseBytes] reads it back.
func FormatBytes(n int64) string {
	switch {
	case n != 0 && n%tib == 0:
		return strconv.FormatInt(n/tib, 10) + "TiB"
	case n != 0 && n%gib == 0:
		return strconv.FormatInt(n/gib, 10) + "GiB"
	case n != 0 && n%mib == 0:
		return strconv.FormatInt(n/mib, 10) + "MiB"
	case n != 0 && n%kib == 0:
		return strconv.FormatInt(n/kib, 10) + "KiB"
	default:
		return strconv.FormatInt(n, 10) + "B"
	}
}

// Word is a word value (a flag's or a key's: --endpoints, a scenario's
// mode, a grid's models) as it is compared with the accepted words: the
// one rule for them is that case and surrounding space do not matter
// (IDEAL is ideal, as TRN2-48XL is trn2-48xl and FAT-TREE fat-tree).
func Word(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Plural returns "1 record" or "n records": n followed by one or other form.
func Plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// BandwidthGrammar describes what [ParseBandwidth] reads, for help texts and
// errors.
const BandwidthGrammar = "a number with a unit, written as here (the case matters): bytes per second as B/s, kB/s (or KB/s), MB/s, GB/s, TB/s, PB/s (powers of 1000) or KiB/s, MiB/s, GiB/s, TiB/s, PiB/s (powers of 1024); bits per second as bps, kbps, Mbps, Gbps, Tbps, Pbps or kb/s, Mb/s, Gb/s, Tb/s, Pb/s (powers of 1000), no space before the unit: 50GiB/s, 53.7GB/s, 400Gbps"

// bandwidthUnits are the units ParseBandwidth reads and their bytes per
// second, exact. The rule is SI's, case-sensitive as written: the
// prefixes k (also K, the usual spelling of kilo), M, G, T and P are
// powers of 1000 and Ki, Mi, Gi, Ti and Pi powers of 1024 (bytes only);
// B is a byte and b a bit (b/s or bps). Anything else — gB/s, GB/S,
// gbps, Gib/s, and mB/s, whose m is milli — is refused, saying which
// unit it resembles (bandwidthUnitHint).
var bandwidthUnits = func() map[string]*big.Rat {
	m := map[string]*big.Rat{"B/s": big.NewRat(1, 1), "bps": big.NewRat(1, 8), "b/s": big.NewRat(1, 8)}
	dec, bin := big.NewInt(1), big.NewInt(1)
	for _, p := range []string{"k", "M", "G", "T", "P"} {
		dec.Mul(dec, big.NewInt(1000))
		bin.Mul(bin, big.NewInt(1024))
		bp := strings.ToUpper(p)
		pfx := []string{p}
		if p == "k" {
			pfx = append(pfx, "K")
		}
		for _, pp := range pfx {
			m[pp+"B/s"] = new(big.Rat).SetInt(dec)
			m[pp+"bps"] = new(big.Rat).SetFrac(dec, big.NewInt(8))
			m[pp+"b/s"] = m[pp+"bps"]
		}
		m[bp+"iB/s"] = new(big.Rat).SetInt(bin)
	}
	return m
}()

// bandwidthUnitHint says which accepted units an unknown unit resembles
// (the same letters in another case), and that a lower-case m is milli,
// or "" when none does.
func bandwidthUnitHint(unit string) string {
	var like []string
	for u := range bandwidthUnits {
		if strings.EqualFold(u, unit) && u != "KB/s" && u != "Kbps" && u != "Kb/s" {
			like = append(like, u)
		}
	}
	if len(like) == 0 {
		return ""
	}
	slices.Sort(like) // bytes (B) before bits (b)
	for i, u := range like {
		if strings.Contains(u, "B") {
			like[i] = u + " for bytes"
		} else {
			like[i] = u + " for bits"
		}
	}
	hint := "the case of a unit matters: write " + strings.Join(like, ", or ")
	if strings.HasPrefix(unit, "m") {
		hint = "m is milli; " + hint
	}
	return hint
}

// gbps is a GB/s in bytes per second, the unit of a bare bandwidth
// (GBpsToBps).
var gbps = big.NewRat(1e9, 1)

// wholeBandwidth is num × scale bytes per second, computed exactly: num is
// a number strconv.ParseFloat reads as positive and finite (so its exponent
// is bounded), scale the bytes per second of its unit (never changed
// here). The result must be a whole number of bytes per second in
// 1..MaxBandwidthBps; the error of one that is not says what it is in B/s.
// q is the value as given, quoted.
func wholeBandwidth(field, q, num string, scale *big.Rat) (uint64, error) {
	r, ok := new(big.Rat).SetString(num)
	if !ok || r.Sign() <= 0 {
		return 0, syntaxErr(field, q, "%q is not a positive number", num)
	}
	r.Mul(r, scale)
	switch {
	case r.Cmp(new(big.Rat).SetUint64(MaxBandwidthBps)) > 0:
		return 0, rangeErr(field, q, "too large (the limit is %d B/s, 1000TB/s)", MaxBandwidthBps)
	case !r.IsInt() && r.Cmp(big.NewRat(1, 1)) < 0:
		return 0, rangeErr(field, q, "too small: %s B/s (the smallest bandwidth is 1 B/s)", decimalOf(r))
	case !r.IsInt():
		lo := new(big.Int).Quo(r.Num(), r.Denom())
		return 0, rangeErr(field, q, "%s B/s is not a whole number of bytes per second (%d or %d B/s is)",
			decimalOf(r), lo, new(big.Int).Add(lo, big.NewInt(1)))
	}
	return r.Num().Uint64(), nil
}

// decimalOf writes r, a positive rational, in decimal: exactly when that
// takes at most 24 digits after the point (a number read from decimal or
// hex digits, times a unit, has only 2s and 5s in its denominator, so its
// expansion ends), else "about" and 6 significant digits.
func decimalOf(r *big.Rat) string {
	const maxDigits = 24
	den := new(big.Int).Set(r.Denom())
	twos := int(den.TrailingZeroBits())
	den.Rsh(den, uint(twos))
	fives := 0
	five, rem := big.NewInt(5), new(big.Int)
	for fives <= maxDigits && den.Cmp(big.NewInt(1)) > 0 {
		q, m := new(big.Int).QuoRem(den, five, rem)
		if m.Sign() != 0 {
			break
		}
		den, fives = q, fives+1
	}
	if digits := max(twos, fives); den.Cmp(big.NewInt(1)) == 0 && digits <= maxDigits {
		return r.FloatString(digits)
	}
	return "about " + new(big.Float).SetRat(r).Text('g', 6)
}

// numberPrefix returns the length of the decimal number t starts with:
// digits and points, then an exponent (e or E, an optional sign, digits)
// when one follows the mantissa — "1.5e-3GB/s" is 1.5e-3 and "GB/s", but the
// e of "5eB/s" is not an exponent.
func numberPrefix(t string) int {
	digit := func(i int) bool { return i < len(t) && t[i] >= '0' && t[i] <= '9' }
	i := 0
	for digit(i) || i < len(t) && t[i] == '.' {
		i++
	}
	if i == 0 || i >= len(t) || t[i] != 'e' && t[i] != 'E' {
		return i
	}
	j := i + 1
	if j < len(t) && (t[j] == '+' || t[j] == '-') {
		j++
	}
	if !digit(j) {
		return i
	}
	for digit(j) {
		j++
	}
	return j
}

// nonzeroMantissa reports whether the number strconv.ParseFloat read from
// num has a digit other than 0 before its exponent: a number it read as 0
// that was not written as 0 lay below float64's range.
func nonzeroMantissa(num string) bool {
	m := strings.TrimLeft(strings.TrimSpace(num), "+-")
	digits, exp := "123456789", "eE"
	if len(m) > 1 && m[0] == '0' && (m[1] == 'x' || m[1] == 'X') {
		m, digits, exp = m[2:], "123456789abcdefABCDEF", "pP"
	}
	if i := strings.IndexAny(m, exp); i >= 0 {
		m = m[:i]
	}
	return strings.ContainsAny(m, digits)
}

// ParseBandwidth reads a bandwidth whose unit is explicit (see
// [BandwidthGrammar]): "50GiB/s" is 50·2^30 B/s, "53.7GB/s" is 53.7·10^9
// B/s, "400Gbps" and "400Gb/s" are 400·10^9 bits, 50·10^9 B/s. A bare
// number is refused — whether it meant GB/s or GiB/s, bytes or bits, is
// exactly what the unit must say — and so are signs, hex numbers (0x10GB/s:
// its B and b would be hex digits), unknown units (bandwidthUnits: the case
// of a unit matters), "iB" with bits and a space between the number and its
// unit (as in a size or a latency; spaces around the value are dropped; the
// number may have an exponent, as in 1.5e-3GB/s). The number
// is read exactly, not as a float64, and the result must be a whole number
// of bytes per second, at least 1 B/s and at most [MaxBandwidthBps]:
// 53.7GB/s is 53,700,000,000 B/s, while 1.5B/s, 7bps (0.875 B/s) and
// 0.1GiB/s (107,374,182.4 B/s) are refused, saying so, not rounded.
func ParseBandwidth(field, s string) (uint64, error) {
	q := strconv.Quote(s)
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, syntaxErr(field, q, "empty (want %s)", BandwidthGrammar)
	}
	if isHex(t) {
		return 0, syntaxErr(field, q, "a bandwidth's number is decimal, not hex (want %s)", BandwidthGrammar)
	}
	i := numberPrefix(t)
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if num == "" {
		if t[0] == '-' || t[0] == '+' {
			return 0, syntaxErr(field, q, "bandwidths are unsigned, without a sign")
		}
		return 0, syntaxErr(field, q, "does not start with a number (want %s)", BandwidthGrammar)
	}
	if unit == "" {
		return 0, syntaxErr(field, q, "no unit: a bare number is not read; say which, as %sGB/s (10^9 B/s), %sGiB/s (2^30 B/s) or %sGbps (bits)", num, num, num)
	}
	if strings.ContainsAny(unit, " \t") {
		return 0, syntaxErr(field, q, "unknown unit %q (want %s)", unit, BandwidthGrammar)
	}
	if unit != t[i:] {
		// As sizes and latencies: "50 GiB/s" is refused, not read.
		return 0, syntaxErr(field, q, "no space between the number and its unit: write %s%s", num, unit)
	}
	scale, ok := bandwidthUnits[unit]
	if !ok {
		if hint := bandwidthUnitHint(unit); hint != "" {
			return 0, syntaxErr(field, q, "unknown unit %q: %s", unit, hint)
		}
		return 0, syntaxErr(field, q, "unknown unit %q (want %s)", unit, BandwidthGrammar)
	}
	if err := positiveNumber(field, q, num, fmt.Sprintf("%q is not a number (want %s)", num, BandwidthGrammar)); err != nil {
		return 0, err
	}
	return wholeBandwidth(field, q, num, scale)
}

// isHex reports whether the number t starts with is written in hex (0x
// or 0X after the digit 0).
func isHex(t string) bool {
	return len(t) > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')
}

// durationUnits are time.ParseDuration's units in nanoseconds.
var durationUnits = map[string]int64{"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}

// WholeNanoseconds reports whether a duration time.ParseDuration has read
// ("1.5ms", "-1h2m", "0") is a whole number of nanoseconds, each of its
// parts read exactly; time.ParseDuration drops the rest ("1.5ns" is 1ns),
// so every duration a user gives (a flag, a file's key) is refused where
// this is false.
func WholeNanoseconds(s string) bool {
	s = strings.TrimLeft(s, "+-")
	sum := new(big.Rat)
	for s != "" && s != "0" {
		i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i <= 0 {
			return true // not this grammar: time.ParseDuration's reading stands
		}
		num, rest := s[:i], s[i:]
		j := strings.IndexFunc(rest, func(r rune) bool { return (r >= '0' && r <= '9') || r == '.' })
		if j < 0 {
			j = len(rest)
		}
		ns, ok := durationUnits[rest[:j]]
		v, okNum := new(big.Rat).SetString(num)
		if !ok || !okNum {
			return true
		}
		sum.Add(sum, v.Mul(v, new(big.Rat).SetInt64(ns)))
		s = rest[j:]
	}
	return sum.IsInt()
}
