package sweep

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		in   string
		want Shard
		err  string
	}{
		{"0/1", Shard{0, 1, "--shard"}, ""},
		{"3/4", Shard{3, 4, "--shard"}, ""},
		{" 2 / 8 ", Shard{2, 8, "--shard"}, ""},
		{"4/4", Shard{}, "index 4 is past the count: shards are 0..3 of 4"},
		{"3/0", Shard{}, "outside 1..100000"},
		{"-1/2", Shard{}, "not a decimal number"},
		{"a/b", Shard{}, "not a decimal number"},
		{"1", Shard{}, "expected I/N"},
		{"", Shard{}, "expected I/N"},
		{"1/2/3", Shard{}, "not a decimal number"},
		{"0/100001", Shard{}, "outside 1..100000"},
		{"0/99999999999999999999", Shard{}, "outside 1..100000"},
		{"/4", Shard{}, "empty"},
		{"+1/4", Shard{}, "not a decimal number"},
		{"0x1/4", Shard{}, "not a decimal number"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseShard(tc.in)
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			require.ErrorIs(t, err, ErrShard)
			assert.Contains(t, err.Error(), tc.err)
			assert.Contains(t, err.Error(), "--shard")
		})
	}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestShardFromEnv(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		count int
		want  Shard
		found bool
		err   string
	}{
		{"nothing", nil, 0, All, false, ""},
		{"slurm count", map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, Shard{2, 4, "SLURM_ARRAY_TASK_ID"}, true, ""},
		{"slurm min max", map[string]string{"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "5", "SLURM_ARRAY_TASK_MAX": "8"}, 0, Shard{2, 4, "SLURM_ARRAY_TASK_ID"}, true, ""},
		{"slurm all agree", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, Shard{0, 4, "SLURM_ARRAY_TASK_ID"}, true, ""},
		{"slurm stepped", map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "12", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, Shard{}, false, "stepped or sparse"},
		{"slurm count without id", map[string]string{"SLURM_ARRAY_TASK_COUNT": "4"}, 0, Shard{}, false, "SLURM_ARRAY_TASK_COUNT=4 is set but SLURM_ARRAY_TASK_ID is not"}, // once the whole grid
		{"slurm max without id", map[string]string{"SLURM_ARRAY_TASK_MAX": "3"}, 0, Shard{}, false, "SLURM_ARRAY_TASK_MAX=3 is set but SLURM_ARRAY_TASK_ID is not"},
		{"slurm id past count", map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, Shard{}, false, "outside the array 0..3"},
		{"slurm id below min", map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "2", "SLURM_ARRAY_TASK_MAX": "3"}, 0, Shard{}, false, "outside the array 2..3"},
		{"slurm id alone", map[string]string{"SLURM_ARRAY_TASK_ID": "1"}, 0, Shard{}, false, "without SLURM_ARRAY_TASK_COUNT"},
		{"slurm min alone", map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0"}, 0, Shard{}, false, "one is set without the other"},
		{"slurm max below min", map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "3", "SLURM_ARRAY_TASK_MAX": "1"}, 0, Shard{}, false, "below"},
		{"slurm bad id", map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, Shard{}, false, "SLURM_ARRAY_TASK_ID"},
		{"slurm count 0", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "0"}, 0, Shard{}, false, "SLURM_ARRAY_TASK_COUNT"},
		{"slurm with --count", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2"}, 2, Shard{}, false, "--count"},
		{"slurm too many", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "200000"}, 0, Shard{}, false, "at most 100000"},
		{"k8s", map[string]string{"JOB_COMPLETION_INDEX": "3"}, 4, Shard{3, 4, "JOB_COMPLETION_INDEX"}, true, ""},
		{"k8s past count", map[string]string{"JOB_COMPLETION_INDEX": "4"}, 4, Shard{}, false, "past --count 4"},
		{"k8s without count", map[string]string{"JOB_COMPLETION_INDEX": "0"}, 0, Shard{}, false, "give --count"},
		{"k8s negative", map[string]string{"JOB_COMPLETION_INDEX": "-1"}, 4, Shard{}, false, "not a decimal number"},
		{"k8s count too large", map[string]string{"JOB_COMPLETION_INDEX": "0"}, MaxShards + 1, Shard{}, false, "outside 1..100000"},
		{"count alone", nil, 4, Shard{}, false, "JOB_COMPLETION_INDEX is not set"},
		{"both", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2", "JOB_COMPLETION_INDEX": "0"}, 0, Shard{}, false, "both"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := ShardFromEnv(env(tc.env), tc.count)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrShard)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.found, found)
		})
	}
}

// TestPartition: for every count, the shards hold every point exactly once,
// in point order; the partition is the same every time; and it is
// balanced as LPT guarantees: no shard's work exceeds the mean by more
// than the costliest point.
func TestPartition(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2, 4, 8, 16]\n  ops: [all_reduce, all_gather]\n  algos: [ring, auto]\n  sizes: {min: 1K, max: 16M, factor: 4}\n"))
	var total, largest uint64
	for i := range g.specs {
		w := g.specs[i].feat.work()
		total += w
		largest = max(largest, w)
	}
	for _, n := range []int{1, 2, 3, 4, 7, 64, g.Len(), g.Len() + 5} {
		parts, err := g.Partition(n)
		require.NoError(t, err)
		require.Len(t, parts, n)
		again, _ := g.Partition(n)
		assert.Equal(t, parts, again, "deterministic")
		seen := make([]int, g.Len())
		for s, part := range parts {
			assert.True(t, slices.IsSorted(part), "shard %d in point order", s)
			var w uint64
			for _, i := range part {
				seen[i]++
				w += g.specs[i].feat.work()
			}
			assert.LessOrEqual(t, w, total/uint64(n)+largest, "shard %d of %d: work %d, mean %d, largest point %d", s, n, w, total/uint64(n), largest)
			got, err := g.Shard(Shard{Index: s, Count: n})
			require.NoError(t, err)
			assert.Equal(t, part, got)
		}
		for i, c := range seen {
			assert.Equal(t, 1, c, "point %d with %d shards", i, n)
		}
	}
	_, err := g.Partition(0)
	require.ErrorIs(t, err, ErrShard)
	_, err = g.Shard(Shard{Index: 2, Count: 2})
	require.ErrorIs(t, err, ErrShard)
}

// TestPartitionIgnoresCalibration: the partition uses the work alone, so
// a task on a machine twice as fast cuts the grid the same way.
func TestPartitionIgnoresCalibration(t *testing.T) {
	g := loadExample(t)
	a := g.Estimates(Calibration{Scale: 1e-9})
	b := g.Estimates(Calibration{Scale: 2e-9})
	for i := range a {
		assert.Equal(t, a[i].Work, b[i].Work)
	}
	p4, err := g.Partition(4)
	require.NoError(t, err)
	for _, part := range p4 {
		assert.NotEmpty(t, part, "the example grid fills 4 shards")
	}
}

// FuzzShard: no --shard value or environment panics, every error wraps
// ErrShard, and every shard returned has 0 ≤ Index < Count ≤ MaxShards.
func FuzzShard(f *testing.F) {
	for _, s := range [][5]string{
		{"0/4", "", "", "", ""}, {"4/4", "2", "4", "", ""}, {"a/b", "7", "", "5", "8"}, {"-1/2", "", "", "", "3"},
		{"3/0", "1", "", "", ""}, {"", "0", "4", "0", "3"}, {"1/1", "99999999999", "1", "", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], 0)
		f.Add(s[0], "", "", "", s[4], 4)
	}
	f.Fuzz(func(t *testing.T, shard, id, count, lo, k8s string, n int) {
		check := func(s Shard, err error) {
			if err != nil {
				if !errors.Is(err, ErrShard) {
					t.Fatalf("error does not wrap ErrShard: %v", err)
				}
				return
			}
			if s.Index < 0 || s.Index >= s.Count || s.Count > MaxShards {
				t.Fatalf("shard %+v", s)
			}
		}
		check(ParseShard(shard))
		m := map[string]string{}
		for k, v := range map[string]string{"SLURM_ARRAY_TASK_ID": id, "SLURM_ARRAY_TASK_COUNT": count, "JOB_COMPLETION_INDEX": k8s} {
			if v != "" {
				m[k] = v
			}
		}
		if lo != "" {
			a, b, _ := strings.Cut(lo, ",")
			m["SLURM_ARRAY_TASK_MIN"], m["SLURM_ARRAY_TASK_MAX"] = a, b
		}
		s, _, err := ShardFromEnv(env(m), n)
		check(s, err)
	})
}
