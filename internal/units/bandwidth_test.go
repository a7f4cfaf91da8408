package units

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// bandwidthCase is one input of a bandwidth parser and what it must give.
type bandwidthCase struct {
	in      string
	want    uint64
	wantErr string // substring of the error; "" means success
	kind    error
}

// checkBandwidths runs each case through parse (named name in failures)
// for the field --link-bw: a value it must read is read as want; a
// refusal is an *Error naming the field and the value as given, quoted,
// wrapping kind and saying wantErr.
func checkBandwidths(t *testing.T, name string, parse func(field, s string) (uint64, error), cases []bandwidthCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parse("--link-bw", tc.in)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("%s(%q) = %d, %v; want %d", name, tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("%s(%q) = %d, want an error containing %q", name, tc.in, got, tc.wantErr)
			}
			prefix := "--link-bw " + strconv.Quote(tc.in) + ": "
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), prefix) {
				t.Fatalf("%s(%q) error %q: want %v starting %q, containing %q", name, tc.in, err, tc.kind, prefix, tc.wantErr)
			}
			var ue *Error
			if !errors.As(err, &ue) || ue.Field != "--link-bw" {
				t.Fatalf("%s(%q) error %#v is no *Error naming the field", name, tc.in, err)
			}
		})
	}
}

// TestParseBandwidth is the bandwidth grammar: bytes in powers of 1000 or
// 1024, bits in powers of 1000, the unit always explicit, the value read
// exactly and a whole number of bytes per second (none rounded: 0.5B/s and
// 7bps were once read as 1 B/s, 1.5B/s as 2); every refusal names the
// field and says why, and one that is not whole what it is in B/s.
func TestParseBandwidth(t *testing.T) {
	checkBandwidths(t, "ParseBandwidth", ParseBandwidth, []bandwidthCase{
		{in: "50GiB/s", want: 50 << 30},
		// SI's prefixes, case-sensitive as written (k or K, M, G, T, P; Ki,
		// Mi, Gi, Ti, Pi), B a byte and b a bit: every other spelling is
		// refused saying what it resembles (gbps, gB/s and mB/s were read,
		// the m as mega; Gib/s and GB/S refused as unknown).
		{in: "50gib/s", wantErr: `unknown unit "gib/s": the case of a unit matters: write GiB/s for bytes`, kind: ErrSyntax},
		{in: "50Gib/s", wantErr: `unknown unit "Gib/s": the case of a unit matters: write GiB/s for bytes`, kind: ErrSyntax},
		{in: "50giB/s", wantErr: `unknown unit "giB/s": the case of a unit matters: write GiB/s`, kind: ErrSyntax}, // once read
		{in: "50GB/S", wantErr: `unknown unit "GB/S": the case of a unit matters: write GB/s for bytes, or Gb/s for bits`, kind: ErrSyntax},
		{in: "50gB/s", wantErr: `unknown unit "gB/s": the case of a unit matters: write GB/s for bytes, or Gb/s for bits`, kind: ErrSyntax},             // once read
		{in: "50mB/s", wantErr: `unknown unit "mB/s": m is milli; the case of a unit matters: write MB/s for bytes, or Mb/s for bits`, kind: ErrSyntax}, // once mega
		{in: "50mbps", wantErr: `unknown unit "mbps": m is milli; the case of a unit matters: write Mbps for bits`, kind: ErrSyntax},                    // once mega
		{in: "50MB/s", want: 50e6},
		{in: "50Mbps", want: 50e6 / 8},
		{in: "1kB/s", want: 1000},
		{in: "1KB/s", want: 1000},
		{in: "8kbps", want: 1000},
		{in: "1KiB/s", want: 1024},
		{in: "1kiB/s", wantErr: `unknown unit "kiB/s": the case of a unit matters: write KiB/s`, kind: ErrSyntax},
		{in: "1PB/s", want: 1e15},
		{in: "0.5PiB/s", want: 1 << 49},
		{in: "53.7GB/s", want: 53_700_000_000},
		// No space before the unit, as in a size or a latency.
		{in: "53.7 GB/s", wantErr: "no space between the number and its unit: write 53.7GB/s", kind: ErrSyntax}, // once read
		{in: " 100GB/s ", want: 100e9},
		{in: "400Gbps", want: 50e9},
		{in: "400Gb/s", want: 50e9},
		{in: "400gbps", wantErr: `unknown unit "gbps": the case of a unit matters: write Gbps for bits`, kind: ErrSyntax}, // once read
		{in: "50gb/s", wantErr: `unknown unit "gb/s": the case of a unit matters: write GB/s for bytes, or Gb/s for bits`, kind: ErrSyntax},
		{in: "8kb/s", want: 1000}, // SI: k is kilo, b a bit
		{in: "8bps", want: 1},
		{in: "7bps", wantErr: "too small: 0.875 B/s (the smallest bandwidth is 1 B/s)", kind: ErrRange}, // once read as 1 B/s
		{in: "3bps", wantErr: "too small: 0.375 B/s", kind: ErrRange},                                   // refused before too, without the B/s
		{in: "12bps", wantErr: "1.5 B/s is not a whole number of bytes per second (1 or 2 B/s is)", kind: ErrRange},
		{in: "0.5B/s", wantErr: "too small: 0.5 B/s", kind: ErrRange},                                          // once 1 B/s
		{in: "0.49B/s", wantErr: "too small: 0.49 B/s", kind: ErrRange},                                        // refused before too
		{in: "0.999999999999B/s", wantErr: "too small: 0.999999999999 B/s", kind: ErrRange},                    // once 1 B/s
		{in: "1.5B/s", wantErr: `"1.5B/s": 1.5 B/s is not a whole number of bytes per second`, kind: ErrRange}, // once 2 B/s
		{in: "1.000000000000000000001B/s", wantErr: "1.000000000000000000001 B/s is not a whole number", kind: ErrRange},
		{in: "0.1GiB/s", wantErr: "107374182.4 B/s is not a whole number of bytes per second (107374182 or 107374183 B/s is)", kind: ErrRange},
		{in: "0.5KiB/s", want: 512},
		{in: "1.5e-9GB/s", wantErr: "1.5 B/s is not a whole number", kind: ErrRange},
		{in: "1e-40GB/s", wantErr: "too small: about 1e-31 B/s", kind: ErrRange}, // more digits than decimalOf writes
		{in: "1.5TB/s", want: 1_500_000_000_000},
		{in: "999999999999999.5B/s", wantErr: "999999999999999.5 B/s is not a whole number", kind: ErrRange},
		{in: "1000000000000000.5B/s", wantErr: "too large", kind: ErrRange},
		{in: "53.7000000000000000001GB/s", wantErr: "53700000000.0000000001 B/s is not a whole number", kind: ErrRange}, // a float64 reads it as 53.7
		{in: "1B/s", want: 1},
		{in: "1KB/s", want: 1000},
		{in: "1kB/s", want: 1000},
		{in: "1KiB/s", want: 1024},
		{in: "1MiB/s", want: 1 << 20},
		{in: "1TiB/s", want: 1 << 40},
		{in: "1e3MB/s", want: 1e9},
		{in: "1e+3MB/s", want: 1e9},
		{in: "2E3MB/s", want: 2e9},
		{in: "1.5e-3GB/s", want: 1_500_000},
		{in: "1e-300GB/s", wantErr: "too small", kind: ErrRange},
		{in: "1e-400GB/s", wantErr: "too small", kind: ErrRange}, // below float64: 0, but not written 0
		{in: "0e5GB/s", wantErr: "must be positive", kind: ErrRange},
		{in: "5eB/s", wantErr: `unknown unit "eB/s"`, kind: ErrSyntax},
		{in: "1e-GB/s", wantErr: `unknown unit "e-GB/s"`, kind: ErrSyntax},
		{in: "12.8Tbps", want: 1_600_000_000_000},
		{in: "1000TB/s", want: MaxBandwidthBps},
		{in: "", wantErr: "empty", kind: ErrSyntax},
		{in: "50", wantErr: "no unit: a bare number is not read; say which, as 50GB/s (10^9 B/s), 50GiB/s (2^30 B/s) or 50Gbps (bits)", kind: ErrSyntax},
		{in: "50.5", wantErr: "no unit", kind: ErrSyntax},
		{in: "+50", wantErr: "without a sign", kind: ErrSyntax},
		// Hex is refused, with a unit or without: its B and b would be
		// hex digits (0x10GB/s was refused as the unknown unit "x10GB/s").
		{in: "0x10GB/s", wantErr: "a bandwidth's number is decimal, not hex", kind: ErrSyntax},
		{in: "0x1p4GB/s", wantErr: "decimal, not hex", kind: ErrSyntax},
		{in: "0X10", wantErr: "decimal, not hex", kind: ErrSyntax},
		{in: "0.5GB/s", want: 500e6},
		{in: "-50GB/s", wantErr: "without a sign", kind: ErrSyntax},
		{in: "+50GB/s", wantErr: "without a sign", kind: ErrSyntax},
		{in: "GB/s", wantErr: "does not start with a number", kind: ErrSyntax},
		{in: "NaNGB/s", wantErr: "does not start with a number", kind: ErrSyntax},
		{in: "50GB", wantErr: "unknown unit", kind: ErrSyntax},
		{in: "50Gibps", wantErr: "unknown unit", kind: ErrSyntax},
		{in: "50Gib/s", wantErr: "unknown unit", kind: ErrSyntax},
		{in: "50 G B/s", wantErr: "unknown unit", kind: ErrSyntax},
		{in: "1.2.3GB/s", wantErr: "is not a number", kind: ErrSyntax},
		{in: "0GB/s", wantErr: "must be positive", kind: ErrRange},
		{in: "0.0bps", wantErr: "must be positive", kind: ErrRange},
		{in: "1bps", wantErr: "too small: 0.125 B/s", kind: ErrRange},
		{in: "1001TB/s", wantErr: "too large (the limit is 1000000000000000 B/s, 1000TB/s)", kind: ErrRange}, // a limit written in a unit the parser takes
		{in: "1e400GB/s", wantErr: "too large", kind: ErrRange},
	})
}

// TestGBpsToBps: a bare number of GB/s is read exactly and must be a
// whole number of bytes per second (1.5e-9 was once read as 2 B/s); every
// refusal names the field and the value as given, and one that is not
// whole says what it is in B/s.
func TestGBpsToBps(t *testing.T) {
	checkBandwidths(t, "GBpsToBps", GBpsToBps, []bandwidthCase{
		{in: "10", want: 10e9},
		{in: "53.7", want: 53_700_000_000}, // 53.7 as a float64 is 53.700000000000003
		{in: " 0.1 ", want: 100_000_000},
		{in: "1e-9", want: 1},
		{in: "0x1p-3", want: 125_000_000},
		{in: "1e6", want: MaxBandwidthBps},
		{in: "2.5e-9", wantErr: "2.5 B/s is not a whole number of bytes per second (2 or 3 B/s is)", kind: ErrRange},
		{in: "1.5e-9", wantErr: "1.5 B/s is not a whole number", kind: ErrRange},
		{in: "0.0000000015", wantErr: "1.5 B/s is not a whole number", kind: ErrRange},
		{in: "0.5e-9", wantErr: "too small: 0.5 B/s (the smallest bandwidth is 1 B/s)", kind: ErrRange},
		{in: "1e-10", wantErr: "too small: 0.1 B/s", kind: ErrRange},
		{in: "1e-300", wantErr: "too small: about 1e-291 B/s", kind: ErrRange},
		{in: "1e-400", wantErr: "too small (the smallest bandwidth is 1 B/s)", kind: ErrRange},
		{in: "1000000.000000001", wantErr: "too large", kind: ErrRange},
		{in: "1e7", wantErr: "too large", kind: ErrRange},
		{in: "1e400", wantErr: "too large", kind: ErrRange},
		{in: "0", wantErr: "must be positive", kind: ErrRange},
		{in: "-5", wantErr: "negative", kind: ErrRange},
		{in: "NaN", wantErr: "not a finite number", kind: ErrSyntax},
		{in: "Inf", wantErr: "not a finite number", kind: ErrSyntax},
		{in: "fast", wantErr: "not a number", kind: ErrSyntax},
	})
}

// FuzzParseBandwidth: any input is read or refused with an *Error, never a
// panic, and what is read is in range.
func FuzzParseBandwidth(f *testing.F) {
	for _, s := range []string{"50GiB/s", "53.7GB/s", "400Gbps", "50", "1e400GB/s", "-1B/s", "0.125bps", ".e1GB/s", "1e-400GB/s", "1.5E+3MB/s", "5eB/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseBandwidth("f", s)
		if err != nil {
			var ue *Error
			if !errors.As(err, &ue) || !(errors.Is(err, ErrSyntax) || errors.Is(err, ErrRange)) {
				t.Fatalf("ParseBandwidth(%q): %v is not a *Error wrapping ErrSyntax or ErrRange", s, err)
			}
			return
		}
		if v < 1 || v > MaxBandwidthBps {
			t.Fatalf("ParseBandwidth(%q) = %d, out of 1..%d", s, v, MaxBandwidthBps)
		}
	})
}
