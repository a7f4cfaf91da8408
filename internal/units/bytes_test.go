package units

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestParseBytesMessages is the size grammar in detail (it was nccom's
// ParseSize table before every size went through ParseBytes): what is read,
// and what each refusal says. Every error names the field and quotes the
// input.
func TestParseBytesMessages(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string // substring of the error; "" means success
		kind    error
	}{
		{in: "0", want: 0},
		{in: "512", want: 512},
		{in: "007", want: 7},
		{in: "512B", want: 512},
		{in: "512b", want: 512},
		{in: "1K", want: 1024},
		{in: "1k", want: 1024},
		{in: "4KB", want: 4096},
		{in: "4kb", want: 4096},
		{in: "4KiB", want: 4096},
		{in: "64M", want: 64 << 20},
		{in: "64MB", want: 64 << 20},
		{in: "64mib", want: 64 << 20},
		{in: "1G", want: 1 << 30},
		{in: "1gb", want: 1 << 30},
		{in: "2GiB", want: 2 << 30},
		{in: "3TiB", want: 3 << 40},
		{in: "8589934591G", want: 8589934591 << 30}, // just below 2^63
		{in: "9223372036854775807", want: math.MaxInt64},
		{in: "", wantErr: "empty", kind: ErrSyntax},
		// No space before the unit, as in a bandwidth or a latency.
		{in: "4 K", wantErr: `"4 K": no space between the number and its unit: write 4K`, kind: ErrSyntax},
		{in: "64 MiB", wantErr: "no space between the number and its unit: write 64MiB", kind: ErrSyntax},
		{in: "-1", wantErr: "without a sign", kind: ErrSyntax},
		{in: "+1", wantErr: "without a sign", kind: ErrSyntax},
		{in: "1X", wantErr: `unknown unit "X"`, kind: ErrSyntax},
		{in: "1P", wantErr: `unknown unit "P"`, kind: ErrSyntax},
		{in: "K", wantErr: "does not start with a digit", kind: ErrSyntax},
		{in: " 1K", wantErr: "does not start with a digit", kind: ErrSyntax},
		{in: "1 K", wantErr: "no space between the number and its unit", kind: ErrSyntax},
		{in: "1K ", wantErr: "unknown unit", kind: ErrSyntax},
		{in: "1.5M", wantErr: "integers only (write 1536K)", kind: ErrSyntax},
		// The hint is the size asked for, in the largest unit that makes it whole.
		{in: "1.5K", wantErr: "integers only (write 1536)", kind: ErrSyntax},
		{in: "2.25MiB", wantErr: "integers only (write 2304K)", kind: ErrSyntax},
		{in: "3.0G", wantErr: "integers only (write 3G)", kind: ErrSyntax},
		{in: "0.1K", wantErr: "(0.1K is not a whole number of bytes)", kind: ErrSyntax},
		{in: "1.5", wantErr: "(1.5 is not a whole number of bytes)", kind: ErrSyntax},
		{in: "99999999999.5T", wantErr: "integers only", kind: ErrSyntax},
		{in: "1,5M", wantErr: "integers only", kind: ErrSyntax},
		{in: "9223372036854775808", wantErr: "too large", kind: ErrRange},
		{in: "99999999999999999999999", wantErr: "too large", kind: ErrRange},
		{in: "8589934592G", wantErr: "too large", kind: ErrRange},
		{in: "9007199254740992K", wantErr: "too large", kind: ErrRange},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBytes("--size", tt.in)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ParseBytes(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseBytes(%q) = %d, want an error", tt.in, got)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("ParseBytes(%q): %v does not wrap %v", tt.in, err, tt.kind)
			}
			var ue *Error
			if !errors.As(err, &ue) || ue.Field != "--size" {
				t.Errorf("ParseBytes(%q): %v is not a *Error naming --size", tt.in, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantErr) || !strings.HasPrefix(msg, "--size ") {
				t.Errorf("ParseBytes(%q) = %q; want the field first and %q", tt.in, msg, tt.wantErr)
			}
			if tt.in != "" && !strings.Contains(msg, tt.in) {
				t.Errorf("ParseBytes(%q) = %q does not name the input", tt.in, msg)
			}
		})
	}
}
