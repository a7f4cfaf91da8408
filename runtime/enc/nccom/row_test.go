package nccom_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

func TestBusFactor(t *testing.T) {
	want := map[string]map[int]float64{
		"all_reduce":     {1: 0, 2: 1, 8: 1.75, 32: 1.9375},
		"all_gather":     {1: 0, 2: 0.5, 8: 0.875, 32: 0.96875},
		"reduce_scatter": {1: 0, 2: 0.5, 8: 0.875, 32: 0.96875},
		"alltoall":       {1: 0, 2: 0.5, 8: 0.875, 32: 0.96875},
		"permute":        {1: 1, 2: 1, 8: 1, 32: 1},
	}
	require.ElementsMatch(t, nccom.Ops(), []string{"all_reduce", "all_gather", "reduce_scatter", "alltoall", "permute"})
	for _, op := range nccom.Ops() {
		for _, r := range []int{1, 2, 8, 32} {
			t.Run(fmt.Sprintf("%s/r=%d", op, r), func(t *testing.T) {
				got, err := nccom.BusFactor(op, r)
				require.NoError(t, err)
				assert.Equal(t, want[op][r], got)
			})
		}
	}
}

func TestBusFactorErrors(t *testing.T) {
	tests := []struct {
		name    string
		op      string
		ranks   int
		wantErr error
	}{
		{"unknown op", "broadcast", 2, nccom.ErrUnknownOp},
		{"wrong case", "All_Reduce", 2, nccom.ErrUnknownOp},
		{"nccom-test abbreviation", "allr", 2, nccom.ErrUnknownOp},
		{"empty op", "", 2, nccom.ErrUnknownOp},
		{"zero ranks", "all_reduce", 0, nccom.ErrBadRanks},
		{"negative ranks", "permute", -3, nccom.ErrBadRanks},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := nccom.BusFactor(tt.op, tt.ranks)
			assert.ErrorIs(t, err, tt.wantErr)
		})
	}
}

func TestNewRow(t *testing.T) {
	tests := []struct {
		name      string
		op        string
		ranks     int
		size      int64
		elem      int
		typ       string
		timePS    uint64
		algo      string
		wantCount int64
		wantUS    float64
		wantAlg   float64 // checked to 1e-12 relative
	}{
		{"1KiB fp32 ring", "all_reduce", 32, 1024, 4, "fp32", 58_000_000, "ring", 256, 58, 1024 / 58e-6 / 1e9},
		{"512MiB example", "all_gather", 16, 512 << 20, 2, "bf16", 9_689_510_000, "mesh", 256 << 20, 9689.51, (512 << 20) / 9689.51e-6 / 1e9},
		{"uint8 permute", "permute", 2, 33554432, 1, "uint8", 768_000_000, "rdh", 33554432, 768, 33554432 / 768e-6 / 1e9},
		{"one rank", "reduce_scatter", 1, 4096, 2, "fp16", 1_000_000, "hier", 2048, 1, 4.096},
		{"zero size", "alltoall", 8, 0, 4, "int32", 5_000_000, "kangaring", 0, 5, 0},
		{"odd picoseconds", "all_reduce", 8, 8192, 1, "int8", 1, "ring", 8192, 1e-6, 8192e3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, err := nccom.NewRow(tt.op, tt.ranks, tt.size, tt.elem, tt.typ, tt.timePS, tt.algo)
			require.NoError(t, err)
			assert.Equal(t, tt.size, row.Size)
			assert.Equal(t, tt.wantCount, row.Count)
			assert.Equal(t, tt.typ, row.Type)
			assert.Equal(t, tt.algo, row.Algorithm)
			assert.InDelta(t, tt.wantUS, row.TimeUS, 1e-9*tt.wantUS)
			assert.InEpsilon(t, tt.wantAlg+1, row.AlgBW+1, 1e-6)
			f, err := nccom.BusFactor(tt.op, tt.ranks)
			require.NoError(t, err)
			assert.Equal(t, f*row.AlgBW, row.BusBW, "busbw is exactly factor × algbw")
			assert.NoError(t, row.Validate())
		})
	}
}

func TestNewRowBusBWExactOverSweep(t *testing.T) {
	sizes, err := nccom.Sizes(1024, 1<<30, 2, 0, 4*32)
	require.NoError(t, err)
	for _, op := range nccom.Ops() {
		for _, r := range []int{1, 2, 3, 8, 32, 64} {
			f, err := nccom.BusFactor(op, r)
			require.NoError(t, err)
			for i, s := range sizes {
				ps := uint64(s)*777 + uint64(i)*12345 + 3
				row, err := nccom.NewRow(op, r, s, 4, "fp32", ps, "ring")
				require.NoError(t, err)
				require.Equal(t, f*row.AlgBW, row.BusBW, "%s r=%d size=%d", op, r, s)
				require.False(t, math.IsInf(row.AlgBW, 0) || math.IsNaN(row.AlgBW))
			}
		}
	}
}

func TestNewRowZeroTime(t *testing.T) {
	row, err := nccom.NewRow("all_reduce", 8, 1<<20, 4, "fp32", 0, "ring")
	require.NoError(t, err)
	assert.Zero(t, row.TimeUS)
	assert.Zero(t, row.AlgBW)
	assert.Zero(t, row.BusBW)
	assert.False(t, math.Signbit(row.BusBW))
	assert.NoError(t, row.Validate())
}

func TestNewRowErrors(t *testing.T) {
	tests := []struct {
		name    string
		op      string
		ranks   int
		size    int64
		elem    int
		typ     string
		algo    string
		wantErr error
	}{
		{"unknown op", "gather", 2, 1024, 4, "fp32", "ring", nccom.ErrUnknownOp},
		{"zero ranks", "all_reduce", 0, 1024, 4, "fp32", "ring", nccom.ErrBadRanks},
		{"negative size", "all_reduce", 2, -4, 4, "fp32", "ring", nccom.ErrBadReport},
		{"zero element size", "all_reduce", 2, 1024, 0, "fp32", "ring", nccom.ErrBadReport},
		{"partial element", "all_reduce", 2, 1022, 4, "fp32", "ring", nccom.ErrBadReport},
		{"empty type", "all_reduce", 2, 1024, 4, "", "ring", nccom.ErrBadReport},
		{"type with space", "all_reduce", 2, 1024, 4, "fp 32", "ring", nccom.ErrBadReport},
		{"empty algorithm", "all_reduce", 2, 1024, 4, "fp32", "", nccom.ErrBadReport},
		{"algorithm with newline", "all_reduce", 2, 1024, 4, "fp32", "ring\n", nccom.ErrBadReport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := nccom.NewRow(tt.op, tt.ranks, tt.size, tt.elem, tt.typ, 1000, tt.algo)
			assert.ErrorIs(t, err, tt.wantErr)
		})
	}
}
