package simkernel

import (
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Time is a point in, or a span of, virtual time, counted in picoseconds.
//
// A uint64 of picoseconds keeps every sum exact: no floating point enters the
// timing model, so the same inputs give the same event order on every
// machine. Clocks stop at [MaxTime] (2^62 ps, about 53 days), a quarter of
// what a uint64 holds, so that a time plus any duration accepted from outside
// never wraps.
type Time uint64

// Units of virtual time.
const (
	Picosecond  Time = 1
	Nanosecond       = 1000 * Picosecond
	Microsecond      = 1000 * Nanosecond
	Millisecond      = 1000 * Microsecond
	Second           = 1000 * Millisecond
)

// MaxTime is the latest time any clock may reach: [units.MaxTimePS], 2^62 ps
// (about 53 days). The engine refuses to schedule an event after it or to
// run past it ([ErrTimeOverflow]); [CyclesAt] and [FromDuration] saturate to
// it, so a duration that large can never be scheduled from a clock past 0.
const MaxTime Time = Time(units.MaxTimePS)

// picosecondsPerSecond is Second as a plain integer, for CyclesAt.
const picosecondsPerSecond = uint64(Second)

// String formats t in the largest unit (ps, ns, µs, ms, s) that is not larger
// than t, with the exact decimal fraction and no trailing zeros: "250ps",
// "1.5µs", "3ms", "12.000001s" (µs as time.Duration writes it). Zero is "0s".
func (t Time) String() string {
	if t == 0 {
		return "0s"
	}
	unit, name := Picosecond, "ps"
	switch {
	case t >= Second:
		unit, name = Second, "s"
	case t >= Millisecond:
		unit, name = Millisecond, "ms"
	case t >= Microsecond:
		unit, name = Microsecond, "µs"
	case t >= Nanosecond:
		unit, name = Nanosecond, "ns"
	}
	var buf [32]byte
	b := strconv.AppendUint(buf[:0], uint64(t/unit), 10)
	if frac := uint64(t % unit); frac != 0 {
		digits := 0 // decimal digits in unit - 1
		for u := uint64(unit); u > 1; u /= 10 {
			digits++
		}
		var fb [20]byte
		f := strconv.AppendUint(fb[:0], frac, 10)
		b = append(b, '.')
		for i := len(f); i < digits; i++ {
			b = append(b, '0')
		}
		for len(f) > 0 && f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		b = append(b, f...)
	}
	b = append(b, name...)
	return string(b)
}

// Duration converts t to a [time.Duration], truncating toward zero to whole
// nanoseconds. Every Time up to MaxTime fits: MaxTime is about 53 days.
func (t Time) Duration() time.Duration {
	return time.Duration(t / Nanosecond)
}

// CyclesAt returns how long cycles clock cycles last at a clock of hz hertz.
//
// The exact value cycles × 10¹² / hz picoseconds is computed in 128-bit
// integer arithmetic and rounded to the nearest picosecond, halves rounded up;
// no floating point is involved, so the result is the same on every machine.
// Because each call rounds once, CyclesAt(hz, a)+CyclesAt(hz, b) may differ by
// a picosecond from CyclesAt(hz, a+b): convert a total cycle count, not its
// parts, when the difference matters.
//
// A result later than [MaxTime] saturates to it, as does hz == 0 (a
// stopped clock never completes a cycle) unless cycles is also 0.
func CyclesAt(hz uint64, cycles uint64) Time {
	if cycles == 0 {
		return 0
	}
	if hz == 0 {
		return MaxTime
	}
	hi, lo := bits.Mul64(cycles, picosecondsPerSecond)
	var carry uint64
	lo, carry = bits.Add64(lo, hz/2, 0) // hz/2 rounds halves up: floor((x + hz/2) / hz)
	hi += carry                         // cannot overflow: hi < 10¹² after Mul64
	if hi >= hz {
		return MaxTime // quotient does not fit in 64 bits
	}
	q, _ := bits.Div64(hi, lo, hz)
	return min(Time(q), MaxTime)
}

// AtRate returns how long n units of work take at perSecond units per
// second: n × 10¹² / perSecond picoseconds, rounded up to the next whole
// picosecond, in exact 128-bit integer arithmetic (the same on every
// machine). It is the one conversion the models time their work with:
// bytes at a bandwidth (a DMA engine, the HBM, the host link, a fabric link)
// and engine cycles at a clock (a NeuronCore record). Rounding up means a
// resource is never free before its last unit of work is done.
//
// n == 0 or perSecond == 0 takes no time (a rate of 0 is a resource the
// configuration does not model; every configured rate is validated above
// 0). A result is not clamped to [MaxTime] — the engine refuses to schedule
// past it with [ErrTimeOverflow] — but one that would not fit in 64 bits
// saturates to 2^64-1.
//
// [CyclesAt] asks a different question (the nearest instant of a clock's
// n-th cycle) and rounds to nearest; see the package documentation.
func AtRate(n, perSecond uint64) Time {
	if perSecond == 0 || n == 0 {
		return 0
	}
	hi, lo := bits.Mul64(n, picosecondsPerSecond)
	if hi >= perSecond {
		return Time(math.MaxUint64)
	}
	q, r := bits.Div64(hi, lo, perSecond)
	if r != 0 {
		if q == math.MaxUint64 {
			return Time(math.MaxUint64) // rounding up would wrap to 0
		}
		q++
	}
	return Time(q)
}

// FromDuration converts a [time.Duration] to virtual time. A negative
// duration is 0; one longer than [MaxTime] saturates to it. Durations from
// outside the program go through [units.DurationToPS] instead, which refuses
// them.
func FromDuration(d time.Duration) Time {
	if d <= 0 {
		return 0
	}
	if uint64(d) > uint64(MaxTime/Nanosecond) {
		return MaxTime
	}
	return Time(d) * Nanosecond
}
