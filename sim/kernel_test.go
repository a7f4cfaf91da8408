package sim

import "testing"

// pageShift is log2(PageSize): the host-memory tests build page numbers
// with it (the kernel's own constant is unexported).
const pageShift = 12

func TestPageShift(t *testing.T) {
	if 1<<pageShift != PageSize {
		t.Fatalf("1<<pageShift = %d, PageSize = %d", 1<<pageShift, PageSize)
	}
}
