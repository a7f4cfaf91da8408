package nccom_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoDrawingDependency: nccom-test's formatting is text and JSON; the
// plotting library, the progress bar and the terminal package are the
// command line's (internal/plot, internal/progress) and stay out of
// runtime/ (go list -deps).
func TestNoDrawingDependency(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, banned := range []string{"gonum.org/v1/plot", "github.com/schollz/progressbar", "golang.org/x/term"} {
			if p == banned || strings.HasPrefix(p, banned+"/") {
				t.Errorf("runtime/enc/nccom depends on %s", p)
			}
		}
	}
}
