package nccom

import (
	"errors"
	"fmt"

	"github.com/neuronsim/neuronsim/internal/units"
)

// MaxSize is the largest size a sweep may reach, in bytes: enc.MaxSize
// (1 EiB), the largest collective the runtime builds (a test keeps the two
// equal; enc does not import this package, nor this package enc).
const MaxSize = 1 << 60

// MaxSweepPoints is the longest sweep [Sizes] returns; a longer one is an
// error (it would be a typing mistake, not an experiment).
const MaxSweepPoints = 10000

// FormatSize prints a byte count for messages with [units.FormatBytes]: in
// the largest binary unit that divides it exactly ("1GiB", "64MiB", "4KiB",
// otherwise plain bytes such as "1000B" or "0B"). Sizes are read with
// [units.ParseBytes], the one size grammar of every flag and file, which
// reads the result back. The IEC spelling (KiB, not K or KB) is used because
// the unit is a power of 1024, which "KB" would leave ambiguous next to
// bandwidths in decimal GB/s.
func FormatSize(n int64) string { return units.FormatBytes(n) }

// RangeNames name a sweep's minimum size, maximum size, step factor and
// step as a surface spells them (flags, a file's keys), for CheckRange's
// errors.
type RangeNames struct{ Min, Max, Factor, Step string }

// Flags are nccom-test's flags of a sweep's range, which `neuronsim fabric
// sweep` takes too.
var Flags = RangeNames{Min: "-b/--minbytes", Max: "-e/--maxbytes", Factor: "-f/--stepfactor", Step: "-i/--stepbytes"}

// plainNames are the names Sizes gives its own errors.
var plainNames = RangeNames{Min: "minimum size", Max: "maximum size", Factor: "step factor", Step: "a step"}

// RangeError is a sweep's range that CheckRange refuses: Name (one of the
// RangeNames it was given) is the bound at fault, Value its value as
// printed, Reason why. It wraps ErrBadSweep.
type RangeError struct{ Name, Value, Reason string }

func (e *RangeError) Error() string { return e.Name + " " + e.Value + ": " + e.Reason }

// Unwrap returns ErrBadSweep.
func (e *RangeError) Unwrap() error { return ErrBadSweep }

// CheckRange is the one rule for a sweep's range, whichever surface gives
// it (the command line's -b/-e/-f, a scenario's min/max/factor, Sizes
// itself): min ≥ 0, max ≥ min, and a step factor (0: none) only from a
// minimum of at least 1 byte, since 0·factor never grows. A minimum of 0
// with a step (or the default step) is a sweep: as every size below the
// op's granule, 0 runs one granule (Sizes), as nccom-test rounds sizes
// down to whole elements per rank. Its errors are *RangeError naming the
// bound with names.
func CheckRange(min, max, factor int64, names RangeNames) error {
	switch {
	case min < 0:
		return &RangeError{names.Min, fmt.Sprint(min), "negative"}
	case max < min:
		return &RangeError{names.Max, FormatSize(max), fmt.Sprintf("below %s (%s)", names.Min, FormatSize(min))}
	case factor != 0 && min == 0:
		return &RangeError{names.Min, "0", fmt.Sprintf("%s %d would never grow it: give at least 1 byte, or %s instead", names.Factor, factor, names.Step)}
	}
	return nil
}

// CheckMaxSize refuses a sweep's maximum above [MaxSize], the largest
// collective, naming it with names (until 2026-12-07 the command line's
// -e 8388607T was refused by the schedule's builder, "enc: auto
// all_reduce of 4 ranks: size … exceeds MaxSize …", naming no flag; a
// minimum above it is above the maximum, or the maximum is too). [SizesIn]
// checks it; [Sizes], nccom-test's arithmetic, takes any int64.
func CheckMaxSize(max int64, names RangeNames) error {
	if max > MaxSize {
		return &RangeError{names.Max, FormatSize(max), fmt.Sprintf("above the largest collective, %s (%d B)", FormatSize(MaxSize), int64(MaxSize))}
	}
	return nil
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
// Errors (wrapping [ErrBadSweep]): a range CheckRange refuses (min < 0,
// max < min, factor with min = 0), align < 1, max < align (no multiple of
// align fits in the range), factor < 0 or 1, step < 0, both factor and step
// set, and a sweep of more than [MaxSweepPoints] points.
func Sizes(min, max int64, factor int64, step int64, align int64) ([]int64, error) {
	sizes, err := sizesIn(min, max, factor, step, align, plainNames)
	var re *RangeError
	if errors.As(err, &re) {
		return nil, fmt.Errorf("%w: %w", ErrBadSweep, err)
	}
	return sizes, err
}

// SizesIn is [Sizes] for a surface that names the range's bounds its own
// way (names: the command line's [Flags], a file's keys): the errors of a
// bound the user gave — every one of CheckRange's, and a maximum below the
// granule, a step factor below 2, a negative step, both a factor and a
// step, a step that makes more than [MaxSweepPoints] points — are
// *RangeError naming it, as CheckRange's are (until 2026-12-07 the command
// line printed these as "nccom: bad sweep: maximum size 3B is below the
// alignment 4B …", naming no flag). They wrap [ErrBadSweep].
func SizesIn(min, max int64, factor int64, step int64, align int64, names RangeNames) ([]int64, error) {
	if err := CheckRange(min, max, 0, names); err == nil {
		// CheckRange's errors (with the factor) are sizesIn's, first.
		if err := CheckMaxSize(max, names); err != nil {
			return nil, err
		}
	}
	return sizesIn(min, max, factor, step, align, names)
}

// sizesIn is SizesIn without CheckMaxSize.
func sizesIn(min, max int64, factor int64, step int64, align int64, names RangeNames) ([]int64, error) {
	grows := factor
	if grows < 0 {
		grows = 0 // refused below
	}
	if err := CheckRange(min, max, grows, names); err != nil {
		return nil, err
	}
	switch {
	case align < 1:
		return nil, fmt.Errorf("%w: alignment %d is not positive", ErrBadSweep, align)
	case max < align:
		return nil, &RangeError{names.Max, FormatSize(max), fmt.Sprintf("below the alignment %s (the element size, times the ranks for an op that splits its buffer): no size in the sweep is a multiple of it", FormatSize(align))}
	case factor < 0 || factor == 1:
		return nil, &RangeError{names.Factor, fmt.Sprint(factor), "must be at least 2"}
	case step < 0:
		return nil, &RangeError{names.Step, fmt.Sprint(step), "negative"}
	case factor != 0 && step != 0:
		return nil, &RangeError{names.Step, FormatSize(step), fmt.Sprintf("and %s %d both given; use one", names.Factor, factor)}
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
		// The points are (max−min)/step + 1, counted in uint64: from 0 to
		// 2^63−1 by 1 byte they are 2^63, one past int64.
		n := uint64((max-min)/step) + 1
		if n > MaxSweepPoints {
			return nil, &RangeError{names.Step, FormatSize(step), fmt.Sprintf("%s to %s by %d bytes is %d points (at most %d)", FormatSize(min), FormatSize(max), step, n, MaxSweepPoints)}
		}
		raw = make([]int64, 0, n)
		for i := range int64(n) {
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
