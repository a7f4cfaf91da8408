package program

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// TestCheckTile: a tile fits exactly up to the last partition and the
// partition's last byte; one byte or one partition more is refused, naming
// the bound.
func TestCheckTile(t *testing.T) {
	cay := hwarch.MustGeometry(hwarch.Cayman) // SBUF partitions of 0x38000 bytes, PSUM of 0x4000
	for _, tc := range []struct {
		name              string
		psum              bool
		start, partitions int
		off, per          uint64
		want              string // "" for fits
	}{
		{"whole SBUF", false, 0, 128, 0, 0x38000, ""},
		{"last byte", false, 127, 1, 0x37fff, 1, ""},
		{"one byte past", false, 0, 128, 0x100, 0x37f01, "a cayman SBUF partition holds 0x38000 bytes (229376)"},
		{"offset at the end", false, 0, 1, 0x38000, 4, "pass its end"},
		{"huge per partition", false, 0, 128, 0, 1000000, "SBUF bytes [0x0, 0xf4240)"},
		{"overflowing sum", false, 0, 1, 0x10, ^uint64(0) - 4, "pass its end"},
		{"PSUM bound", true, 0, 128, 0x3f00, 0x200, "a cayman PSUM partition holds 0x4000 bytes"},
		{"partition past 127", false, 100, 29, 0, 4, "partitions 100..128: a cayman core has partitions 0..127"},
		{"no partitions", false, 0, 0, 0, 4, "partitions"},
		{"no bytes", false, 0, 1, 0, 0, "0 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckTile(cay, tc.psum, tc.start, tc.partitions, tc.off, tc.per)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.True(t, errors.Is(err, ErrTileBounds), "%v", err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
