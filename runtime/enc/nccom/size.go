package nccom

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxSweepPoints is the longest sweep [Sizes] returns; a longer one is an
// error (it would be a typing mistake, not an experiment).
const MaxSweepPoints = 10000

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// ParseSize reads a byte count the way nccom-test reads its -b/--minbytes and
// -e/--maxbytes flags: a non-negative decimal integer ("512"), optionally
// followed by a unit suffix K, M or G in any case, which may be followed by B
// or iB ("1K", "4KB", "64M", "1gb", "2GiB"). A bare "B" suffix means bytes.
// The units are powers of 1024, as in nccom-test: "1K" = 1024, "1G" = 1<<30.
//
// Only integers are accepted: "1.5M" is an error rather than a rounded
// 1572864, so that a sweep bound is never silently changed. Signs, spaces,
// unknown suffixes and values above math.MaxInt64 are errors too. Every
// error wraps [ErrBadSize] and quotes the input.
func ParseSize(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty string (want an integer number of bytes such as 512, 4K, 64M or 1G)", ErrBadSize)
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	digits, suffix := s[:i], s[i:]
	if digits == "" {
		if s[0] == '-' || s[0] == '+' {
			return 0, fmt.Errorf("%w: %q: sizes are unsigned integers, without a sign", ErrBadSize, s)
		}
		return 0, fmt.Errorf("%w: %q: does not start with a digit", ErrBadSize, s)
	}
	if strings.HasPrefix(suffix, ".") || strings.HasPrefix(suffix, ",") {
		return 0, fmt.Errorf("%w: %q: sizes are integers only (write 1536K, not 1.5M)", ErrBadSize, s)
	}
	var unit int64
	switch strings.ToLower(suffix) {
	case "", "b":
		unit = 1
	case "k", "kb", "kib":
		unit = kib
	case "m", "mb", "mib":
		unit = mib
	case "g", "gb", "gib":
		unit = gib
	default:
		return 0, fmt.Errorf("%w: %q: unknown unit %q (want none, B, K, KB, M, MB, G or GB, any case)", ErrBadSize, s, suffix)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: too large (the limit is %d bytes)", ErrBadSize, s, int64(math.MaxInt64))
	}
	if n > math.MaxInt64/unit {
		return 0, fmt.Errorf("%w: %q: too large (the limit is %d bytes)", ErrBadSize, s, int64(math.MaxInt64))
	}
	return n * unit, nil
}

// FormatSize prints a byte count for messages, in the largest binary unit
// that divides it exactly: "1GiB", "64MiB", "4KiB", otherwise plain bytes
// such as "1000B" or "0B". The result never loses precision and, for n ≥ 0,
// [ParseSize] reads it back. The IEC spelling (KiB, not K or KB) is used
// because the unit is a power of 1024, which "KB" would leave ambiguous next
// to bandwidths in decimal GB/s.
func FormatSize(n int64) string {
	switch {
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

// Sizes returns the sizes of a sweep from min to max bytes, both bounds
// inclusive, as nccom-test's flags describe it:
//
//   - factor ≥ 2 (-f/--stepfactor): min, min·factor, min·factor², … ≤ max;
//   - step > 0 (-i/--stepbytes): min, min+step, min+2·step, … ≤ max;
//   - both zero: the default additive step (max−min)/10, at least 1, which
//     gives eleven points when max−min is a multiple of ten.
//
// At most one of factor and step may be non-zero. The last point is the
// largest one not above max; max itself is not appended when the steps miss
// it (1K to 5K by factor 2 gives 1K, 2K, 4K).
//
// align is the granule every size must be a multiple of, normally the
// element size times the number of ranks so that each rank gets whole
// elements. Each point is rounded down to a multiple of align, and a point
// below align becomes align; rounding can make neighbouring points equal,
// and such repeats are dropped, so the result is strictly increasing.
//
// Errors (wrapping [ErrBadSweep]): min < 0, max < min, align < 1, max <
// align (no multiple of align fits in the range), factor < 0 or 1, step < 0,
// both factor and step set, factor with min = 0 (it would never grow), and a
// sweep of more than [MaxSweepPoints] points.
func Sizes(min, max int64, factor int64, step int64, align int64) ([]int64, error) {
	switch {
	case min < 0:
		return nil, fmt.Errorf("%w: minimum size %d is negative", ErrBadSweep, min)
	case max < min:
		return nil, fmt.Errorf("%w: maximum size %s is below minimum size %s", ErrBadSweep, FormatSize(max), FormatSize(min))
	case align < 1:
		return nil, fmt.Errorf("%w: alignment %d is not positive", ErrBadSweep, align)
	case max < align:
		return nil, fmt.Errorf("%w: maximum size %s is below the alignment %s (element size × ranks): no size in the sweep is a multiple of it", ErrBadSweep, FormatSize(max), FormatSize(align))
	case factor < 0 || factor == 1:
		return nil, fmt.Errorf("%w: step factor %d must be at least 2", ErrBadSweep, factor)
	case step < 0:
		return nil, fmt.Errorf("%w: step %d is negative", ErrBadSweep, step)
	case factor != 0 && step != 0:
		return nil, fmt.Errorf("%w: both a step factor (%d) and a step (%d) given; use one", ErrBadSweep, factor, step)
	case factor != 0 && min == 0:
		return nil, fmt.Errorf("%w: a step factor needs a minimum size above 0", ErrBadSweep)
	}

	var raw []int64
	if factor != 0 {
		for cur := min; ; cur *= factor {
			raw = append(raw, cur)
			if cur > max/factor { // the next point would pass max (or overflow)
				break
			}
		}
	} else {
		if step == 0 {
			step = (max - min) / 10
			if step < 1 {
				step = 1
			}
		}
		n := (max-min)/step + 1
		if n > MaxSweepPoints {
			return nil, fmt.Errorf("%w: %s to %s by %d bytes is %d points (at most %d)", ErrBadSweep, FormatSize(min), FormatSize(max), step, n, MaxSweepPoints)
		}
		raw = make([]int64, 0, n)
		for i := int64(0); i < n; i++ {
			raw = append(raw, min+i*step)
		}
	}
	if len(raw) > MaxSweepPoints {
		return nil, fmt.Errorf("%w: sweep of %d points (at most %d)", ErrBadSweep, len(raw), MaxSweepPoints)
	}

	out := make([]int64, 0, len(raw))
	for _, s := range raw {
		s -= s % align
		if s < align {
			s = align
		}
		if len(out) > 0 && out[len(out)-1] == s {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}
