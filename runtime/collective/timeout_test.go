package collective

import (
	"testing"

	"github.com/neuronsim/neuronsim/internal/units"
)

// TestLatencyBoundIsTheTimeout: the longest latency a link, switch,
// endpoint or NIC may be given (units.MaxLatencyPS) is a collective's whole
// device-time budget, DefaultTimeout: a longer one could never finish.
func TestLatencyBoundIsTheTimeout(t *testing.T) {
	if got := uint64(DefaultTimeout.Nanoseconds()) * 1000; got != units.MaxLatencyPS {
		t.Fatalf("DefaultTimeout is %d ps, units.MaxLatencyPS %d ps: keep them one", got, units.MaxLatencyPS)
	}
}
