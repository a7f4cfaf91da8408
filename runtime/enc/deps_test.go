package enc

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoDeviceDependency: the schedules' algebra knows no device. Its
// dependencies (go list -deps) hold no runtime package but itself and no
// simulator or hardware package: running schedules on devices is
// runtime/collective's job.
func TestNoDeviceDependency(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const mod = "github.com/neuronsim/neuronsim/"
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, mod)
		if !ok || rel == "runtime/enc" {
			continue
		}
		for _, banned := range []string{"runtime/", "sim", "hw/"} {
			if strings.HasPrefix(rel, banned) {
				t.Errorf("runtime/enc depends on %s", p)
			}
		}
	}
}
