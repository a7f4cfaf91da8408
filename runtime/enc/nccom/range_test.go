package nccom_test

import (
	"errors"
	"testing"

	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// TestCheckRange: the one rule of a sweep's range the command line's
// -b/-e/-f and a scenario's min/max/factor share: a minimum of 0 is a
// sweep (its first size one granule, as Sizes rounds every size below it)
// except with a step factor, which would never grow it; the errors name the
// bound as the surface spells it.
func TestCheckRange(t *testing.T) {
	for _, tc := range []struct {
		name             string
		min, max, factor int64
		want             string // "": accepted
		at               string // the bound named
	}{
		{"0 with a step", 0, 4096, 0, "", ""},
		{"1 with a factor", 1, 4096, 2, "", ""},
		{"0 with a factor", 0, 4096, 2, "-b/--minbytes 0: -f/--stepfactor 2 would never grow it: give at least 1 byte, or -i/--stepbytes instead", "-b/--minbytes"},
		{"max below min", 8192, 4096, 0, "-e/--maxbytes 4KiB: below -b/--minbytes (8KiB)", "-e/--maxbytes"},
		{"negative min", -1, 4096, 0, "-b/--minbytes -1: negative", "-b/--minbytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := nccom.CheckRange(tc.min, tc.max, tc.factor, nccom.Flags)
			if tc.want == "" {
				require.NoError(t, err)
				_, err := nccom.Sizes(tc.min, tc.max, tc.factor, 0, 4)
				require.NoError(t, err, "Sizes takes what CheckRange takes")
				return
			}
			require.EqualError(t, err, tc.want)
			assert.ErrorIs(t, err, nccom.ErrBadSweep)
			var re *nccom.RangeError
			require.True(t, errors.As(err, &re))
			assert.Equal(t, tc.at, re.Name)
			_, err = nccom.Sizes(tc.min, tc.max, tc.factor, 0, 1)
			assert.ErrorIs(t, err, nccom.ErrBadSweep, "Sizes refuses what CheckRange refuses")
		})
	}
}

// TestCheckMaxSize: a sweep's maximum is at most the largest collective,
// refused naming the bound as the surface spells it (SizesIn too), while
// Sizes, nccom-test's arithmetic, takes any int64.
func TestCheckMaxSize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max int64
		want     string
	}{
		{"at the largest collective", 1, nccom.MaxSize, ""},
		// Once refused by enc.Build naming no flag ("size … exceeds MaxSize").
		{"past the largest collective", 1, 8388607 << 40, "-e/--maxbytes 8388607TiB: above the largest collective, 1048576TiB (1152921504606846976 B)"},
		{"min and max past it", nccom.MaxSize + 1, nccom.MaxSize + 1, "-e/--maxbytes 1152921504606846977B: above the largest collective, 1048576TiB (1152921504606846976 B)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := nccom.CheckMaxSize(tc.max, nccom.Flags)
			_, errIn := nccom.SizesIn(tc.min, tc.max, 2, 0, 4, nccom.Flags)
			if tc.want == "" {
				require.NoError(t, err)
				require.NoError(t, errIn)
				return
			}
			require.EqualError(t, err, tc.want)
			require.EqualError(t, errIn, tc.want)
			assert.ErrorIs(t, err, nccom.ErrBadSweep)
			_, err = nccom.Sizes(tc.min, tc.max, 2, 0, 4)
			assert.NoError(t, err, "Sizes takes any int64")
		})
	}
}

// TestMaxSizeIsEnc: the sweeps' bound is the largest collective enc builds.
func TestMaxSizeIsEnc(t *testing.T) {
	assert.EqualValues(t, enc.MaxSize, nccom.MaxSize)
}
