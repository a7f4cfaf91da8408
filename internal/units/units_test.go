package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFloatToUint(t *testing.T) {
	for _, c := range []struct {
		v      float64
		want   uint64
		err    error
		substr string
	}{
		{0, 0, nil, ""},
		{1.5, 1500, nil, ""},
		// The resolution is 1 ps: a fraction of one is refused, not
		// rounded (0.0004 ns was 0 ps), but for float64 noise.
		{0.0004, 0, ErrRange, "0.4 ps is not a whole number of ps: the resolution is 1 ps (0 or 1 ps is)"},
		{0.0001, 0, ErrRange, "0.1 ps is not a whole number of ps"},
		{0.0015, 0, ErrRange, "1.5 ps is not a whole number of ps: the resolution is 1 ps (1 or 2 ps is)"},
		{1e-300, 0, ErrRange, "not a whole number of ps"},
		{9999999999.9995, 0, ErrRange, "not a whole number of ps"},
		{1.1, 1100, nil, ""}, // 1100.0000000000002 ps in float64
		{0.001, 1, nil, ""},
		{0.3, 300, nil, ""},
		{123.456, 123456, nil, ""},
		{9999999999.999, 9999999999999, nil, ""},
		{1e18, 0, ErrRange, "too long: a latency is at most 10000000000 ns"},
		{1.8e16, 0, ErrRange, "too long"},
		{1e10 + 0.001, 0, ErrRange, "too long"},
		{1e10, 1e13, nil, ""}, // 10 s: all the device time a collective may take
		{-5, 0, ErrRange, "negative"},
		{math.NaN(), 0, ErrSyntax, "finite"},
		{math.Inf(1), 0, ErrSyntax, "finite"},
	} {
		got, err := LatencyToPS("--link-latency", c.v)
		if c.err == nil {
			if err != nil || got != c.want {
				t.Errorf("LatencyToPS(%v) = %d, %v; want %d", c.v, got, err, c.want)
			}
			continue
		}
		if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.substr) || !strings.HasPrefix(err.Error(), "--link-latency ") {
			t.Errorf("LatencyToPS(%v) error %v; want %v containing %q", c.v, err, c.err, c.substr)
		}
	}
}

// TestParseLatency: a grid's latency, a number of ns or a duration with its
// unit, is a whole number of ps (the resolution), at most MaxLatencyPS,
// its errors quoting it as written.
func TestParseLatency(t *testing.T) {
	for _, c := range []struct {
		in     string
		want   uint64
		substr string // "" for accepted
	}{
		{"500", 500e3, ""}, {"500ns", 500e3, ""}, {"1.5us", 1.5e6, ""}, {"1.1us", 1.1e6, ""}, {"1.1ns", 1100, ""},
		{"2µs", 2e6, ""}, {"2ms", 2e9, ""}, {"10s", 1e13, ""}, {"0", 0, ""}, {"0.001ns", 1, ""}, {"0.000001us", 1, ""},
		{"0.0001ns", 0, `"0.0001ns": 0.1 ps is not a whole number of ps: the resolution is 1 ps (0 or 1 ps is)`},
		{"0.0001", 0, `"0.0001": 0.1 ps is not a whole number of ps`},
		{"1.0000005us", 0, `"1.0000005us": 1000000.5 ps is not a whole number of ps: the resolution is 1 ps (1000000 or 1000001 ps is)`},
		{"11s", 0, `"11s": too long: a latency is at most 10000000000 ns`},
		{"1e400", 0, `"1e400": too long`},
		{"-5ns", 0, `"-5ns": negative`},
		{"5 parsecs", 0, `"5 parsecs": expected nanoseconds (500) or a duration with its unit`},
		// No space before the unit, as in a size or a bandwidth (said so).
		{"500 ns", 0, `"500 ns": no space between the number and its unit: write 500ns`},
		{"1.5 us", 0, `"1.5 us": no space between the number and its unit: write 1.5us`},
		{"1us500ns", 0, "expected nanoseconds"},
		{"ns", 0, "expected nanoseconds"},
		// A sign is refused, as in a size or a bandwidth; a number with a
		// unit is decimal.
		{"+500", 0, `"+500": latencies are unsigned, without a sign`},
		{"+500ns", 0, "without a sign"},
		{"0x10ns", 0, `"0x10ns": a number with a unit is decimal, not hex`},
		{"0x1p4us", 0, "decimal, not hex"},
		{"0x1p4", 16e3, ""},
		{"1_000ns", 0, "no underscores"},
	} {
		got, err := ParseLatency("axes.link_latency[0]", c.in)
		if c.substr == "" {
			if err != nil || got != c.want {
				t.Errorf("ParseLatency(%q) = %d, %v; want %d", c.in, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.substr) || !strings.HasPrefix(err.Error(), "axes.link_latency[0] ") {
			t.Errorf("ParseLatency(%q) = %d, %v; want an error containing %q", c.in, got, err, c.substr)
		}
	}
}

// TestParseNanoseconds: the command line's latency flags, a bare number of
// ns, a whole number of ps, at most MaxLatencyPS; "+" is refused as in
// ParseLatency, a size and a bandwidth (it was taken), and a number with
// a unit says the flag is in ns (it said "not a number").
func TestParseNanoseconds(t *testing.T) {
	for _, c := range []struct {
		in     string
		want   uint64
		substr string // "" for accepted
	}{
		{"500", 500e3, ""}, {"1.5", 1500, ""}, {"2e3", 2e6, ""}, {" 7 ", 7000, ""}, {"0", 0, ""}, {"0x1p4", 16e3, ""},
		{"+500", 0, `--link-latency "+500": latencies are unsigned, without a sign`},
		{" +1", 0, "without a sign"},
		{"-5", 0, "--link-latency -5: negative"},
		{"500ns", 0, `--link-latency "500ns": not a number of nanoseconds: give the number alone, in ns (500, 1.5, 2e3)`},
		{"0x10ns", 0, "not a number of nanoseconds"},
		{"1_000", 0, "no underscores"},
		{"", 0, "not a number"},
		{"NaN", 0, "not a finite number"},
		{"1e400", 0, "too large for a number"},
		{"2e10", 0, "--link-latency 2e+10: too long: a latency is at most 10000000000 ns"},
		{"0.0001", 0, "0.1 ps is not a whole number of ps"},
	} {
		got, err := ParseNanoseconds("--link-latency", c.in)
		if c.substr == "" {
			if err != nil || got != c.want {
				t.Errorf("ParseNanoseconds(%q) = %d, %v; want %d", c.in, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.substr) || !strings.HasPrefix(err.Error(), "--link-latency ") {
			t.Errorf("ParseNanoseconds(%q) = %d, %v; want an error containing %q", c.in, got, err, c.substr)
		}
	}
}

func TestDurationToPS(t *testing.T) {
	if _, err := DurationToPS("fault.in", 1000000*time.Hour); !errors.Is(err, ErrRange) {
		t.Errorf("1000000h accepted: %v", err)
	}
	if _, err := DurationToPS("fault.in", -time.Second); !errors.Is(err, ErrRange) {
		t.Errorf("-1s accepted: %v", err)
	}
	if ps, err := DurationToPS("fault.in", 3*time.Microsecond); err != nil || ps != 3e6 {
		t.Errorf("3us = %d, %v", ps, err)
	}
	if _, err := PS("SLEEP", math.MaxInt64); !errors.Is(err, ErrRange) {
		t.Errorf("PS(2^63-1) accepted")
	}
}

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  error
	}{
		{"512", 512, nil}, {"4K", 4096, nil}, {"4kb", 4096, nil}, {"4KiB", 4096, nil},
		{"1M", 1 << 20, nil}, {"1MB", 1 << 20, nil}, {"2GiB", 2 << 30, nil}, {"1T", 1 << 40, nil},
		{"0", 0, nil}, {"7B", 7, nil},
		{"", 0, ErrSyntax}, {"-1", 0, ErrSyntax}, {"1.5M", 0, ErrSyntax}, {"1X", 0, ErrSyntax},
		{"9223372036854775808", 0, ErrRange}, {"9000000000000T", 0, ErrRange},
	} {
		got, err := ParseBytes("--size", c.in)
		if (c.err == nil) != (err == nil) || (err != nil && !errors.Is(err, c.err)) || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, %v", c.in, got, err, c.want, c.err)
		}
		if err == nil {
			if back, err := ParseBytes("x", FormatBytes(got)); err != nil || back != got {
				t.Errorf("FormatBytes(%d) = %q does not read back", got, FormatBytes(got))
			}
		}
	}
	if _, err := ParseBytesIn("--size", "0", 1, 1<<48); !errors.Is(err, ErrRange) {
		t.Errorf("ParseBytesIn 0 with min 1 accepted")
	}
}

func TestParseInt(t *testing.T) {
	if _, err := ParseInt("--devices", "0", 1, 64); !errors.Is(err, ErrRange) {
		t.Error("0 devices accepted")
	}
	if _, err := ParseInt("--devices", "x", 1, 64); !errors.Is(err, ErrSyntax) {
		t.Error("x accepted")
	}
	if _, err := ParseInt("--devices", "99999999999999999999", 1, 64); !errors.Is(err, ErrRange) {
		t.Error("huge accepted")
	}
	if v, err := ParseInt("--devices", "16", 1, 64); err != nil || v != 16 {
		t.Error(v, err)
	}
	// No '+', as sizes, bandwidths and latencies have none (--nodes +2 was
	// read as 2).
	for _, in := range []string{"+2", " +2"} {
		if _, err := ParseInt("--nodes", in, 1, 64); !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "without a '+'") {
			t.Errorf("ParseInt %q: %v", in, err)
		}
		if _, err := ParseCount("--nodes", in); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseCount %q: %v", in, err)
		}
		if _, err := ParseFloat("--oversubscription", in); !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "without a '+'") {
			t.Errorf("ParseFloat %q: %v", in, err)
		}
	}
}

// TestParseCount: a count past int is held saturated at the bound it
// passes, for the caller's range check; what is no integer is refused.
func TestParseCount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"16", 16}, {" -3 ", -3}, {"0", 0},
		{"99999999999999999999", math.MaxInt}, {"-99999999999999999999", math.MinInt}, {" 99999999999999999999 ", math.MaxInt},
	} {
		if v, err := ParseCount("--devices", tc.in); err != nil || v != tc.want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", tc.in, v, err, tc.want)
		}
	}
	for _, in := range []string{"x", "", "1.5", "0x10", "1_000", "--3"} {
		if _, err := ParseCount("--devices", in); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseCount(%q): %v, not a syntax error", in, err)
		}
	}
}

func TestParseFloat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  error
	}{
		{"1.5", 1.5, nil},
		{" 2e3 ", 2000, nil},
		{"-5", -5, nil},
		{"NaN", 0, ErrSyntax},
		{"inf", 0, ErrSyntax},
		{"-Inf", 0, ErrSyntax},
		{"1e400", 0, ErrRange},
		{"1_000", 0, ErrSyntax}, // strconv takes Go literals; one decimal grammar here
		{"0x1p3", 8, nil},       // an exact value, as strconv reads it
		{"1e-400", 0, ErrRange}, // positive, but below float64: not read as 0
		{"-2.5e-400", 0, ErrRange},
		{"0x1p-2000", 0, ErrRange},
		{"0xap-2000", 0, ErrRange},
		{"0e-400", 0, nil},
		{"0x0p5", 0, nil},
		{"-0.000", 0, nil},
		{"", 0, ErrSyntax},
		{"5ns", 0, ErrSyntax},
	} {
		v, err := ParseFloat("--x", tc.in)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "--x") {
				t.Errorf("%q: %v, want %v naming --x", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || v != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.in, v, err, tc.want)
		}
	}
}

func ExampleLatencyToPS() {
	ps, err := LatencyToPS("--link-latency", 1.5)
	fmt.Println(ps, err)
	_, err = LatencyToPS("--link-latency", 1e18)
	fmt.Println(err)
	// Output:
	// 1500 <nil>
	// --link-latency 1e+18: too long: a latency is at most 10000000000 ns (10 s, all the device time a collective may take: no run with a longer one could finish)
}

func TestLatencyPS(t *testing.T) {
	for _, ps := range []uint64{0, 1, MaxLatencyPS} {
		if got, err := LatencyPS("efa.latency", ps); err != nil || got != ps {
			t.Errorf("LatencyPS(%d) = %d, %v", ps, got, err)
		}
	}
	for _, ps := range []uint64{MaxLatencyPS + 1, MaxTimePS, math.MaxUint64} {
		_, err := LatencyPS("efa.latency", ps)
		if !errors.Is(err, ErrRange) || !strings.HasPrefix(err.Error(), fmt.Sprintf("efa.latency %dps: too long", ps)) {
			t.Errorf("LatencyPS(%d) error %v", ps, err)
		}
	}
}

// TestParseUint: decimal or 0x hex, a leading zero decimal (010 is ten, as
// in the assembler: once octal on the command line, so "csr read 010" read
// offset 8), nothing else.
func TestParseUint(t *testing.T) {
	for s, want := range map[string]uint64{"0": 0, "10": 10, "010": 10, "08": 8, "0x10": 16, "0X1f": 31, " 7 ": 7, "0xffffffff": math.MaxUint32} {
		got, err := ParseUint("ADDR", s, math.MaxUint32)
		if err != nil || got != want {
			t.Errorf("ParseUint(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for s, want := range map[string]error{"": ErrSyntax, "0x": ErrSyntax, "0o17": ErrSyntax, "0b101": ErrSyntax, "1_000": ErrSyntax, "0x_10": ErrSyntax,
		"-1": ErrSyntax, "+1": ErrSyntax, "1e3": ErrSyntax, "0x100000000": ErrRange, "99999999999999999999999": ErrRange} {
		_, err := ParseUint("ADDR", s, math.MaxUint32)
		if !errors.Is(err, want) || !strings.HasPrefix(fmt.Sprint(err), "ADDR ") {
			t.Errorf("ParseUint(%q) error %v; want %v naming ADDR", s, err, want)
		}
	}
}

// FuzzParseUint: what ParseUint accepts is decimal digits, or 0x/0X and hex
// digits, whose value it returns and which is at most max; what it refuses
// is an *Error naming the field, wrapping ErrSyntax or ErrRange.
func FuzzParseUint(f *testing.F) {
	for _, s := range []string{"0", "010", "0x10", "0X1f", "0x", "0o7", "1_0", "-1", " 7 ", "18446744073709551615", "18446744073709551616", "0xffffffffffffffff0"} {
		f.Add(s, uint64(math.MaxUint32))
	}
	f.Fuzz(func(t *testing.T, s string, max uint64) {
		v, err := ParseUint("ADDR", s, max)
		if err != nil {
			var ue *Error
			if !errors.As(err, &ue) || ue.Field != "ADDR" || !(errors.Is(err, ErrSyntax) || errors.Is(err, ErrRange)) {
				t.Fatalf("%q: error %v", s, err)
			}
			return
		}
		d, base := strings.TrimSpace(s), 10
		if len(d) > 2 && (d[:2] == "0x" || d[:2] == "0X") {
			d, base = d[2:], 16
		}
		want, perr := strconv.ParseUint(d, base, 64)
		if perr != nil || want != v || v > max || strings.ContainsAny(d, "_+-") {
			t.Fatalf("%q (max %d): accepted as %d; strconv base %d gives %d, %v", s, max, v, base, want, perr)
		}
	})
}

// TestErrorClipsValue: a refused value is echoed at most MaxShown
// characters long, cut whole characters and marked "…" (a --devices of
// 100,000 digits was echoed whole).
func TestErrorClipsValue(t *testing.T) {
	for _, tc := range []struct{ value, shown string }{
		{"", ""},
		{strings.Repeat("9", 64), strings.Repeat("9", 64)},
		{strings.Repeat("9", 65), strings.Repeat("9", 64) + "…"},
		{strings.Repeat("9", 100000), strings.Repeat("9", 64) + "…"},
		{strings.Repeat("µ", 70), strings.Repeat("µ", 64) + "…"},
	} {
		e := &Error{Field: "--devices", Value: tc.value, Reason: "bad", Err: ErrRange}
		if got := e.Shown(); got != tc.shown {
			t.Errorf("Shown of %d characters: %q, want %q", len(tc.value), got, tc.shown)
		}
		want := "--devices " + tc.shown + ": bad"
		if tc.value == "" {
			want = "--devices: bad"
		}
		if got := e.Error(); got != want {
			t.Errorf("Error of %d characters: %q, want %q", len(tc.value), got, want)
		}
	}
}
