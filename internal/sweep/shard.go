package sweep

// Shards: which part of a grid one task runs, from --shard I/N or from the
// workload manager's environment, and the partition itself.

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxShards is the most shards a grid may be cut into.
const MaxShards = MaxPoints

// Shard is part Index of Count (0 ≤ Index < Count) of a grid.
type Shard struct {
	Index, Count int
	// From says where the shard came from, for messages: "--shard",
	// "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX" or "" (the whole grid).
	From string
}

// All is the whole grid: shard 0 of 1.
var All = Shard{Index: 0, Count: 1}

// String returns "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// parseCount reads a decimal count or index in [lo, hi] for what.
func parseCount(what, s string, lo, hi int) (int, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%s %q: empty: %w", what, s, ErrShard)
	}
	for _, c := range t {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%s %q: not a decimal number (digits only, no sign): %w", what, s, ErrShard)
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < int64(lo) || v > int64(hi) {
		return 0, fmt.Errorf("%s %q: outside %d..%d: %w", what, s, lo, hi, ErrShard)
	}
	return int(v), nil
}

// ParseShard reads --shard's "I/N": shard I (from 0) of N, 1 ≤ N ≤
// MaxShards, I < N.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("--shard %q: expected I/N (shard I of N, I from 0): %w", s, ErrShard)
	}
	count, err := parseCount("--shard "+s+": N", n, 1, MaxShards)
	if err != nil {
		return Shard{}, err
	}
	idx, err := parseCount("--shard "+s+": I", i, 0, MaxShards)
	if err != nil {
		return Shard{}, err
	}
	if idx >= count {
		return Shard{}, fmt.Errorf("--shard %s: index %d is past the count: shards are 0..%d of %d: %w", s, idx, count-1, count, ErrShard)
	}
	return Shard{Index: idx, Count: count, From: "--shard"}, nil
}

// ShardFromEnv finds the shard of a task of a workload manager in its
// environment (getenv returns a variable and whether it is set), count
// being --count (0: not given):
//
//   - Slurm job arrays: SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT,
//     or with SLURM_ARRAY_TASK_MIN and _MAX (count MAX−MIN+1, index
//     ID−MIN); when all are set they must agree (a stepped array such as
//     0-15:4 does not).
//   - Kubernetes Indexed Jobs: JOB_COMPLETION_INDEX with --count, the
//     Job's completions.
//
// With neither, and no --count, it returns All and false. Anything else —
// both, one half of a pair, --count without JOB_COMPLETION_INDEX or with
// Slurm, an index past the count — is an error wrapping ErrShard.
func ShardFromEnv(getenv func(string) (string, bool), count int) (Shard, bool, error) {
	id, slurm := getenv("SLURM_ARRAY_TASK_ID")
	k8s, isK8s := getenv("JOB_COMPLETION_INDEX")
	switch {
	case slurm && isK8s:
		return Shard{}, false, fmt.Errorf("both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are set: which workload manager runs this task? give --shard I/N: %w", ErrShard)
	case slurm:
		if count != 0 {
			return Shard{}, false, fmt.Errorf("--count %d: a Slurm array task has its count (SLURM_ARRAY_TASK_COUNT); --count is for JOB_COMPLETION_INDEX: %w", count, ErrShard)
		}
		return slurmShard(getenv, id)
	case isK8s:
		if count == 0 {
			return Shard{}, false, fmt.Errorf("JOB_COMPLETION_INDEX=%s: give --count N, the Indexed Job's completions: %w", k8s, ErrShard)
		}
		if count < 1 || count > MaxShards {
			return Shard{}, false, fmt.Errorf("--count %d: outside 1..%d: %w", count, MaxShards, ErrShard)
		}
		idx, err := parseCount("JOB_COMPLETION_INDEX", k8s, 0, MaxShards)
		if err != nil {
			return Shard{}, false, err
		}
		if idx >= count {
			return Shard{}, false, fmt.Errorf("JOB_COMPLETION_INDEX=%d is past --count %d (indices 0..%d): %w", idx, count, count-1, ErrShard)
		}
		return Shard{Index: idx, Count: count, From: "JOB_COMPLETION_INDEX"}, true, nil
	case count != 0:
		return Shard{}, false, fmt.Errorf("--count %d: it is the count of a Kubernetes Indexed Job, but JOB_COMPLETION_INDEX is not set (use --shard I/N by hand): %w", count, ErrShard)
	}
	// An array's other variables without its task id: not a task of it,
	// or a broken environment — not the whole grid.
	for _, v := range []string{"SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX"} {
		if val, ok := getenv(v); ok {
			return Shard{}, false, fmt.Errorf("%s=%s is set but SLURM_ARRAY_TASK_ID is not: which task is this? give --shard I/N: %w", v, val, ErrShard)
		}
	}
	return All, false, nil
}

func slurmShard(getenv func(string) (string, bool), id string) (Shard, bool, error) {
	const maxID = 1 << 31 // Slurm's MaxArraySize is far below
	taskID, err := parseCount("SLURM_ARRAY_TASK_ID", id, 0, maxID)
	if err != nil {
		return Shard{}, false, err
	}
	cs, hasCount := getenv("SLURM_ARRAY_TASK_COUNT")
	mins, hasMin := getenv("SLURM_ARRAY_TASK_MIN")
	maxs, hasMax := getenv("SLURM_ARRAY_TASK_MAX")
	if hasMin != hasMax {
		return Shard{}, false, fmt.Errorf("SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX: one is set without the other: %w", ErrShard)
	}
	lo, count := 0, 0
	if hasMin {
		if lo, err = parseCount("SLURM_ARRAY_TASK_MIN", mins, 0, maxID); err != nil {
			return Shard{}, false, err
		}
		hi, err := parseCount("SLURM_ARRAY_TASK_MAX", maxs, 0, maxID)
		if err != nil {
			return Shard{}, false, err
		}
		if hi < lo {
			return Shard{}, false, fmt.Errorf("SLURM_ARRAY_TASK_MAX=%d is below SLURM_ARRAY_TASK_MIN=%d: %w", hi, lo, ErrShard)
		}
		count = hi - lo + 1
	}
	if hasCount {
		c, err := parseCount("SLURM_ARRAY_TASK_COUNT", cs, 1, maxID)
		if err != nil {
			return Shard{}, false, err
		}
		if hasMin && c != count {
			return Shard{}, false, fmt.Errorf("SLURM_ARRAY_TASK_COUNT=%d but SLURM_ARRAY_TASK_MIN..MAX is %d..%d (%d tasks): a stepped or sparse array; submit --array=0-(N-1): %w", c, lo, lo+count-1, count, ErrShard)
		}
		count = c
	}
	if !hasCount && !hasMin {
		return Shard{}, false, fmt.Errorf("SLURM_ARRAY_TASK_ID=%d without SLURM_ARRAY_TASK_COUNT or SLURM_ARRAY_TASK_MIN/MAX: %w", taskID, ErrShard)
	}
	if count > MaxShards {
		return Shard{}, false, fmt.Errorf("a Slurm array of %d tasks: at most %d shards: %w", count, MaxShards, ErrShard)
	}
	if taskID < lo || taskID-lo >= count {
		return Shard{}, false, fmt.Errorf("SLURM_ARRAY_TASK_ID=%d is outside the array %d..%d: %w", taskID, lo, lo+count-1, ErrShard)
	}
	return Shard{Index: taskID - lo, Count: count, From: "SLURM_ARRAY_TASK_ID"}, true, nil
}

// Partition cuts the grid into count shards balanced by the points' work
// (longest processing time first: each point, the costliest first, goes to
// the shard with the least work so far; ties go to the earlier point and
// the lower shard). It depends only on the grid, never on the machine, so
// every task of an array computes the same partition. Each shard's point
// indices are in point order.
func (g *Grid) Partition(count int) ([][]int, error) {
	if count < 1 || count > MaxShards {
		return nil, fmt.Errorf("%d shards: outside 1..%d: %w", count, MaxShards, ErrShard)
	}
	order := make([]int, len(g.points))
	work := make([]uint64, len(g.points))
	for i := range order {
		order[i] = i
		work[i] = g.specs[i].feat.work()
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(work[b], work[a]) })
	h := make(loads, count)
	for i := range h {
		h[i] = load{shard: i}
	}
	out := make([][]int, count)
	for _, p := range order {
		out[h[0].shard] = append(out[h[0].shard], p)
		h[0].work += work[p]
		heap.Fix(&h, 0)
	}
	for i := range out {
		slices.Sort(out[i])
	}
	return out, nil
}

// Shard returns the point indices of shard s, in point order.
func (g *Grid) Shard(s Shard) ([]int, error) {
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return nil, fmt.Errorf("shard %d/%d: the index must be in 0..count-1: %w", s.Index, s.Count, ErrShard)
	}
	parts, err := g.Partition(s.Count)
	if err != nil {
		return nil, err
	}
	return parts[s.Index], nil
}

type load struct {
	work  uint64
	shard int
}

// loads is a min-heap of shards by work, then shard index
// (container/heap's Interface).
type loads []load

// Len, Less, Swap, Push and Pop implement heap.Interface.
func (h loads) Len() int { return len(h) }
func (h loads) Less(i, j int) bool {
	if h[i].work != h[j].work {
		return h[i].work < h[j].work
	}
	return h[i].shard < h[j].shard
}
func (h loads) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *loads) Push(x any)   { *h = append(*h, x.(load)) }
func (h *loads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
