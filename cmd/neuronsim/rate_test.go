package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/neuronsim/neuronsim/sim"
)

// TestDMABandwidthDigits: a bandwidth is printed to the fewest significant
// digits (one at least, rateDigits at most) whose rounding stays within
// what the time leaves uncertain — the time is known to within res (one
// poll interval a batch), so the rate to within rate·res/t — and so never
// to more digits than the time justifies, nor to fewer than keep it near
// the rate: 128 KiB in 8.8 µs known to 1 µs is 14.9 GB/s give or take
// 1.7, and once printed "10 GB/s" (one digit, as t/res < 10 gave), a
// third off; it prints "15 GB/s". It once printed two decimals whatever
// the time: "0.80 GB/s" from a 5.1 µs copy known to 1 µs.
func TestDMABandwidthDigits(t *testing.T) {
	us := sim.Microsecond
	for _, tc := range []struct {
		name string
		n    uint64
		t    sim.Time
		res  sim.Time
		want string
	}{
		{"4099B in 5.1us", 4099, 5100 * sim.Nanosecond, us, "0.8 GB/s"},
		{"64KiB in 7.1us", 65536, 7100 * sim.Nanosecond, us, "9 GB/s"},
		{"64KiB-1 in 5.8us", 65535, 5800 * sim.Nanosecond, us, "11 GB/s"},
		{"128KiB in 8.8us", 131072, 8800 * sim.Nanosecond, us, "15 GB/s"},
		{"1MiB in 51.1us", 1 << 20, 51100 * sim.Nanosecond, us, "20.5 GB/s"},
		{"1MiB in 51.1us, 2us", 1 << 20, 51100 * sim.Nanosecond, 2 * us, "21 GB/s"},
		{"64MiB in 2.0894ms", 64 << 20, 2089400 * sim.Nanosecond, us, "32.1 GB/s"},
		{"4GiB in 133.5ms, 33 batches", 4 << 30, 133541800 * sim.Nanosecond, 33 * us, "32.2 GB/s"},
		{"exact time: rateDigits", 1 << 20, 51100 * sim.Nanosecond, 0, "20.5 GB/s"},
		{"rounds up into the next decade", 999_600, 100 * us, us, "10 GB/s"},
		{"large rate", 1_234_000_000, sim.Millisecond, us, "1230 GB/s"},
		{"shorter than its resolution", 4096, 500 * sim.Nanosecond, us, "8 GB/s"},
		{"no time", 4096, 0, us, "n/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			bandwidth(&b, tc.n, tc.t, tc.res)
			assert.Equal(t, tc.want, b.String())
		})
	}
}

// TestDMAWallRateDigits: the kernel copy's host wall-time rate has
// rateDigits significant digits, as the device-time rates at most.
func TestDMAWallRateDigits(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		d    time.Duration
		want string
	}{
		{1 << 20, 123456 * time.Nanosecond, "8.49 GB/s"},
		{1 << 20, 12 * time.Millisecond, "0.0874 GB/s"},
		{1 << 30, 10 * time.Millisecond, "107 GB/s"},
		{1 << 20, 0, "n/a GB/s"},
	} {
		assert.Equal(t, tc.want, wallRate(tc.n, tc.d), "%d bytes in %v", tc.n, tc.d)
	}
}
