package simkernel

import (
	"math"
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
		{1500 * Nanosecond, "1.5us"},
		{Microsecond + Picosecond, "1.000001us"},
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
