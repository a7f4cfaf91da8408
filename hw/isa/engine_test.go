package isa

import "testing"

// TestErrorText: every ERROR code is said in words, and a code past them
// as unknown.
func TestErrorText(t *testing.T) {
	for c := uint32(0); c < NumErrors; c++ {
		if ErrorText(c) == "" {
			t.Errorf("code %d has no text", c)
		}
	}
	if got := ErrorText(NumErrors); got != "code 6, unknown" {
		t.Errorf("ErrorText(%d) = %q", NumErrors, got)
	}
}
