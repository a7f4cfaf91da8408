package nccom_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{1000, "1000B"},
		{1024, "1KiB"},
		{1536, "1536B"},
		{3 << 10, "3KiB"},
		{1 << 20, "1MiB"},
		{1<<20 + 1024, "1025KiB"},
		{64 << 20, "64MiB"},
		{1 << 30, "1GiB"},
		{6 << 30, "6GiB"},
		{-2048, "-2KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := nccom.FormatSize(tt.in)
			assert.Equal(t, tt.want, got)
			if tt.in >= 0 {
				back, err := units.ParseBytes("size", got)
				require.NoError(t, err)
				assert.Equal(t, tt.in, back, "units.ParseBytes reads FormatSize back")
			}
		})
	}
}

func pow2s(lo, hi int) []int64 {
	var out []int64
	for e := lo; e <= hi; e++ {
		out = append(out, int64(1)<<e)
	}
	return out
}

func TestSizes(t *testing.T) {
	const K, M, G = int64(1) << 10, int64(1) << 20, int64(1) << 30
	tests := []struct {
		name                         string
		min, max, factor, step, alig int64
		want                         []int64
		wantLen                      int // checked when want is nil and wantErr is ""
		wantErr                      string
	}{
		{name: "factor 2 1K to 1G", min: K, max: G, factor: 2, alig: 4 * 32, want: pow2s(10, 30)},
		{name: "factor 4", min: K, max: 64 * K, factor: 4, alig: 1, want: []int64{K, 4 * K, 16 * K, 64 * K}},
		{name: "factor misses max", min: K, max: 5 * K, factor: 2, alig: 1, want: []int64{K, 2 * K, 4 * K}},
		{name: "factor near MaxInt64 stops without overflow", min: 1 << 61, max: math.MaxInt64, factor: 2, alig: 1, want: []int64{1 << 61, 1 << 62}},
		{name: "single point", min: 4 * M, max: 4 * M, factor: 2, alig: 4, want: []int64{4 * M}},
		{name: "additive step", min: K, max: 4 * K, step: K, alig: 1, want: []int64{K, 2 * K, 3 * K, 4 * K}},
		{name: "additive step misses max", min: 0, max: 10, step: 4, alig: 1, want: []int64{1, 4, 8}},
		{name: "default step is a tenth", min: 0, max: 100, alig: 1, want: []int64{1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}},
		{name: "default step 1K to 11K", min: K, max: 11 * K, alig: 1, want: []int64{K, 2 * K, 3 * K, 4 * K, 5 * K, 6 * K, 7 * K, 8 * K, 9 * K, 10 * K, 11 * K}},
		{name: "default step at least 1", min: 10, max: 15, alig: 1, want: []int64{10, 11, 12, 13, 14, 15}},
		{name: "align rounds down", min: 1000, max: 3000, step: 1000, alig: 128, want: []int64{896, 1920, 2944}},
		{name: "align minimum and repeats dropped", min: 1, max: 64, factor: 2, alig: 16, want: []int64{16, 32, 64}},
		{name: "align with default step", min: 0, max: 1000, alig: 256, want: []int64{256, 512, 768}},
		{name: "exactly MaxSweepPoints", min: 1, max: nccom.MaxSweepPoints, step: 1, alig: 1, wantLen: nccom.MaxSweepPoints},
		{name: "too many points", min: 1, max: nccom.MaxSweepPoints + 1, step: 1, alig: 1, wantErr: "10001 points"},
		{name: "too many default points", min: 0, max: 1 << 40, step: 1, alig: 1, wantErr: "points"},
		{name: "every byte of the int64 range", min: 0, max: math.MaxInt64, step: 1, alig: 4, wantErr: "0B to 9223372036854775807B by 1 bytes is 9223372036854775808 points (at most 10000)"},
		{name: "every byte past 1 of the int64 range", min: 1, max: math.MaxInt64, step: 1, alig: 1, wantErr: "is 9223372036854775807 points (at most 10000)"},
		{name: "every other byte of the int64 range", min: 0, max: math.MaxInt64, step: 2, alig: 1, wantErr: "is 4611686018427387904 points (at most 10000)"},
		{name: "one step past the int64 range", min: 1, max: math.MaxInt64, step: math.MaxInt64, alig: 1, want: []int64{1}},
		{name: "negative min", min: -1, max: K, factor: 2, alig: 1, wantErr: "negative"},
		{name: "max below min", min: 2 * K, max: K, factor: 2, alig: 1, wantErr: "maximum size 1KiB: below minimum size (2KiB)"},
		{name: "max below align", min: 1, max: 64, factor: 2, alig: 128, wantErr: "alignment"},
		{name: "zero align", min: 1, max: 64, factor: 2, alig: 0, wantErr: "alignment"},
		{name: "factor 1", min: 1, max: 64, factor: 1, alig: 1, wantErr: "at least 2"},
		{name: "negative factor", min: 1, max: 64, factor: -2, alig: 1, wantErr: "at least 2"},
		{name: "negative step", min: 1, max: 64, step: -2, alig: 1, wantErr: "negative"},
		{name: "both factor and step", min: 1, max: 64, factor: 2, step: 2, alig: 1, wantErr: "use one"},
		{name: "factor from zero", min: 0, max: 64, factor: 2, alig: 1, wantErr: "minimum size 0: step factor 2 would never grow it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nccom.Sizes(tt.min, tt.max, tt.factor, tt.step, tt.alig)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, nccom.ErrBadSweep)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.want != nil {
				assert.Equal(t, tt.want, got)
			} else {
				assert.Len(t, got, tt.wantLen)
			}
			for i, s := range got {
				assert.Zero(t, s%tt.alig, "size %d is a multiple of %d", s, tt.alig)
				assert.LessOrEqual(t, s, tt.max)
				if i > 0 {
					assert.Greater(t, s, got[i-1], "strictly increasing")
				}
			}
		})
	}
}

// TestSizesFromFlags is the nccom-test command line "-b 1K -e 1G -f 2".
func TestSizesFromFlags(t *testing.T) {
	lo, err := units.ParseBytes("-b", "1K")
	require.NoError(t, err)
	hi, err := units.ParseBytes("-e", "1G")
	require.NoError(t, err)
	got, err := nccom.Sizes(lo, hi, 2, 0, 4)
	require.NoError(t, err)
	require.Len(t, got, 21)
	assert.Equal(t, int64(1024), got[0])
	assert.Equal(t, int64(1)<<30, got[20])
}

// TestSizesInNamesTheBound: SizesIn's errors of a bound the user gave name
// it as the surface spells it (the command line's flags here), as
// CheckRange's do; the command line printed them as "nccom: bad sweep: …"
// naming no flag. Each is a *RangeError wrapping ErrBadSweep.
func TestSizesInNamesTheBound(t *testing.T) {
	for _, tc := range []struct {
		name                          string
		min, max, factor, step, align int64
		want                          string
	}{
		{"max below the granule", 0, 3, 0, 1, 4, "-e/--maxbytes 3B: below the alignment 4B (the element size, times the ranks for an op that splits its buffer): no size in the sweep is a multiple of it"},
		{"max 0", 0, 0, 0, 0, 4, "-e/--maxbytes 0B: below the alignment 4B"},
		{"factor 1", 1, 64, 1, 0, 1, "-f/--stepfactor 1: must be at least 2"},
		{"negative step", 1, 64, 0, -2, 1, "-i/--stepbytes -2: negative"},
		{"factor and step", 1024, 4096, 2, 1024, 1, "-i/--stepbytes 1KiB: and -f/--stepfactor 2 both given; use one"},
		{"too many points", 1, 1 << 20, 0, 1, 1, "-i/--stepbytes 1B: 1B to 1MiB by 1 bytes is 1048576 points (at most 10000)"},
		{"max below min", 2048, 1024, 2, 0, 1, "-e/--maxbytes 1KiB: below -b/--minbytes (2KiB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := nccom.SizesIn(tc.min, tc.max, tc.factor, tc.step, tc.align, nccom.Flags)
			require.Error(t, err)
			var re *nccom.RangeError
			require.True(t, errors.As(err, &re), "%v", err)
			assert.ErrorIs(t, err, nccom.ErrBadSweep)
			assert.Equal(t, tc.want, err.Error()[:min(len(err.Error()), len(tc.want))])
		})
	}
}
