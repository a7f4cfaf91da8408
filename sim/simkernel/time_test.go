package simkernel

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTimeString(t *testing.T) {
	tests := []struct {
		in   Time
		want string
	}{
		{0, "0s"},
		{1, "1ps"},
		{250, "250ps"},
		{999, "999ps"},
		{Nanosecond, "1ns"},
		{1500 * Picosecond, "1.5ns"},
		{1001 * Picosecond, "1.001ns"},
		{1500 * Nanosecond, "1.5µs"},
		{Microsecond + Picosecond, "1.000001µs"},
		{3 * Millisecond, "3ms"},
		{12*Second + Microsecond, "12.000001s"},
		{12*Second + Picosecond, "12.000000000001s"},
		{MaxTime, "4611686.018427387904s"},
		{Time(math.MaxUint64), "18446744.073709551615s"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.in.String())
		})
	}
}

func TestTimeDuration(t *testing.T) {
	tests := []struct {
		name string
		in   Time
		want time.Duration
	}{
		{"zero", 0, 0},
		{"truncates", 1999 * Picosecond, time.Nanosecond},
		{"ms", 3 * Millisecond, 3 * time.Millisecond},
		{"max", MaxTime, time.Duration(uint64(MaxTime) / 1000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.in.Duration())
		})
	}
}

func TestCyclesAt(t *testing.T) {
	tests := []struct {
		name   string
		hz     uint64
		cycles uint64
		want   Time
	}{
		{"1GHz one cycle", 1_000_000_000, 1, Nanosecond},
		{"1GHz zero cycles", 1_000_000_000, 0, 0},
		{"1.4GHz rounds down", 1_400_000_000, 1, 714},      // 714.285...
		{"1.4GHz exact", 1_400_000_000, 7, 5 * Nanosecond}, // 5000 exactly
		{"3GHz rounds up", 3_000_000_000, 2, 667},          // 666.67
		{"half rounds up", 8_000_000_000_000, 1, 0},        // 0.125 -> 0
		{"exact half", 2_000_000_000_000, 1, 1},            // 0.5 -> 1
		{"1Hz", 1, 5, 5 * Second},
		{"1THz+ below a picosecond", 3_000_000_000_000, 1, 0}, // 0.33 -> 0
		{"large count", 1_000_000_000, 1 << 40, Time(1<<40) * Nanosecond},
		{"saturates", 1, math.MaxUint64, MaxTime},
		{"stopped clock", 0, 1, MaxTime},
		{"stopped clock, no cycles", 0, 0, 0},
		{"largest exact", 1_000_000_000_000, math.MaxUint64, MaxTime},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, CyclesAt(tc.hz, tc.cycles))
		})
	}
}

// TestAtRate: n units at perSecond per second, rounded up, exact; 0 for no
// work or no rate; past 64 bits saturated, including the quotient 2^64-1
// with a remainder, which rounding up used to wrap to 0 (dma.TransferTime
// and tpb.Picoseconds, the two copies AtRate replaces, returned 0 for
// 18446744073691104871 bytes at 999999999999 B/s).
func TestAtRate(t *testing.T) {
	tests := []struct {
		name         string
		n, perSecond uint64
		want         Time
	}{
		{"no work", 0, 17e9, 0},
		{"no rate", 1 << 20, 0, 0},
		{"neither", 0, 0, 0},
		{"one ps", 1, 1e12, 1},
		{"a third rounds up", 1, 3e12, 1},
		{"exact", 3, 3e12, 1},
		{"four thirds round up", 4, 3e12, 2},
		{"one per second", 1, 1, Second},
		{"64 KiB at 17 GB/s", 65536, 17e9, 3_855_059},
		{"one cycle at 1.12 GHz", 1, 1_120_000_000, 893}, // 892.857
		{"64 cycles at 1.2 GHz", 64, 1_200_000_000, 53_334},
		{"past MaxTime is not clamped", math.MaxUint64, 1e12 + 1, Time(math.MaxUint64 - 18_446_744)},
		{"exact 2^64-1", math.MaxUint64, 1e12, Time(math.MaxUint64)},
		{"does not fit", 1 << 63, 1, Time(math.MaxUint64)},
		{"2^64-1 and a remainder saturates", 18446744073691104871, 999_999_999_999, Time(math.MaxUint64)},
		{"2^64-1 and a remainder, another rate", 18446744073654211383, 999_999_999_997, Time(math.MaxUint64)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, AtRate(tc.n, tc.perSecond))
		})
	}
}

// FuzzAtRate checks AtRate against big-integer arithmetic: the ceiling of
// n·10¹²/perSecond, or 2^64-1 when that does not fit.
func FuzzAtRate(f *testing.F) {
	f.Add(uint64(65536), uint64(17e9))
	f.Add(uint64(18446744073691104871), uint64(999_999_999_999))
	f.Add(uint64(1), uint64(3))
	f.Fuzz(func(t *testing.T, n, perSecond uint64) {
		got := AtRate(n, perSecond)
		if n == 0 || perSecond == 0 {
			if got != 0 {
				t.Fatalf("AtRate(%d, %d) = %d, want 0", n, perSecond, got)
			}
			return
		}
		num := new(big.Int).Mul(new(big.Int).SetUint64(n), big.NewInt(1e12))
		d := new(big.Int).SetUint64(perSecond)
		num.Add(num, new(big.Int).Sub(d, big.NewInt(1)))
		want := num.Div(num, d)
		if !want.IsUint64() {
			want.SetUint64(math.MaxUint64)
		}
		if uint64(got) != want.Uint64() {
			t.Fatalf("AtRate(%d, %d) = %d, want %s", n, perSecond, uint64(got), want)
		}
	})
}
