package sweepjobs

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/neuronsim/neuronsim/internal/sweep"
	"github.com/neuronsim/neuronsim/internal/units"
)

// MaxTimeLimit is the longest --time accepted: 365 days, far past any
// partition's limit, and small enough to print in Slurm's D-HH:MM:SS.
const MaxTimeLimit = 365 * 24 * time.Hour

// MaxCPUsPerTask bounds --cpus-per-task: the -j each task runs `sweep run`
// with, so sweep.MaxJobs.
const MaxCPUsPerTask = sweep.MaxJobs

// LogDir is the directory, inside the sweep's output directory, where the
// driver of a Slurm script has Slurm write the tasks' and the merge job's
// standard output and error.
const LogDir = "slurm"

// Slurm is a sweep as a Slurm job array: Shards array tasks, at most
// MaxParallel running at once, each running the points of its shard, and a
// merge job that depends on the array (afterany).
type Slurm struct {
	Binary      string // absolute path of the neuronsim binary, as the compute nodes see it
	Grid        string // absolute path of the grid file, as the compute nodes see it
	Out         string // absolute path of the sweep's output directory (shared by every node)
	GridHash    string // the grid's hash ((*sweep.Grid).Hash), naming the jobs
	Points      int    // the grid's point count
	Shards      int    // array tasks, 1..min(Points, MaxShards)
	MaxParallel int    // tasks running at once (the %M of --array), 1..Shards
	CPUsPerTask int    // CPUs each task asks for and runs its points on (-j), 1..MaxCPUsPerTask

	// Partition, when not empty, is the partition both jobs are submitted to.
	Partition string
	// TimeLimit, when HasTimeLimit is set, is each job's time limit, a whole
	// number of seconds in 1 s..MaxTimeLimit.
	TimeLimit    time.Duration
	HasTimeLimit bool
}

// check refuses a Slurm whose fields cannot be rendered.
func (s *Slurm) check() error {
	for _, p := range []struct{ field, path string }{{"--binary", s.Binary}, {"grid", s.Grid}, {"--out", s.Out}} {
		if err := checkPath(p.field, p.path); err != nil {
			return err
		}
	}
	if _, err := units.Int("grid points", int64(s.Points), 1, sweep.MaxPoints); err != nil {
		return err
	}
	if _, err := units.Int("--shards", int64(s.Shards), 1, min(int64(s.Points), MaxShards)); err != nil {
		return fmt.Errorf("%w (at most one shard per point, and at most %d)", err, MaxShards)
	}
	if _, err := units.Int("--max-parallel", int64(s.MaxParallel), 1, int64(s.Shards)); err != nil {
		return fmt.Errorf("%w (at most --shards)", err)
	}
	if _, err := units.Int("--cpus-per-task", int64(s.CPUsPerTask), 1, MaxCPUsPerTask); err != nil {
		return err
	}
	if s.Partition != "" {
		if err := safeName("--partition", s.Partition, 64); err != nil {
			return err
		}
	}
	if s.HasTimeLimit {
		if err := CheckTimeLimit("--time", s.TimeLimit); err != nil {
			return err
		}
	}
	_, err := JobName(s.GridHash, s.Out)
	return err
}

// CheckTimeLimit checks a Slurm time limit: a whole number of seconds in
// 1 s..MaxTimeLimit.
func CheckTimeLimit(field string, d time.Duration) error {
	if d%time.Second != 0 {
		return &units.Error{Field: field, Value: d.String(), Reason: "Slurm time limits are whole seconds", Err: units.ErrSyntax}
	}
	if _, err := units.Int(field, int64(d/time.Second), 1, int64(MaxTimeLimit/time.Second)); err != nil {
		return fmt.Errorf("%w seconds (1s..%v)", err, MaxTimeLimit)
	}
	return nil
}

// slurmTime prints d as Slurm's D-HH:MM:SS.
func slurmTime(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("%d-%02d:%02d:%02d", s/86400, s/3600%24, s/60%60, s%60)
}

// Script renders the sbatch script. It is a valid sbatch script (submitting
// it with sbatch submits the array alone) and a driver: run with bash
// outside an array task, it submits itself as the array, then the merge job
// with --dependency=afterany on it; with --wait it blocks until the merge
// has ended and exits with its status.
func (s *Slurm) Script() ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	name, _ := JobName(s.GridHash, s.Out)
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("#!/bin/bash\n")
	p("# neuronsim sweep on Slurm (written by neuronsim sweep slurm): the grid %s\n", shellQuote(s.Grid))
	p("# (%s, hash %s) as an array of %s, at most %d running at once,\n", units.Plural(int64(s.Points), "point", "points"), s.GridHash, units.Plural(int64(s.Shards), "task", "tasks"), s.MaxParallel)
	p("# writing its results in %s.\n", shellQuote(s.Out))
	p("#\n")
	p("# Submit the array, and after it the job that merges its results:\n")
	p("#     bash THIS_SCRIPT [--wait]\n")
	p("# (--wait: return when the merge has ended, with its exit status). Or submit\n")
	p("# the array alone, and merge by hand once it has ended:\n")
	p("#     sbatch THIS_SCRIPT; neuronsim sweep merge %s\n", shellQuote(s.Out))
	p("# Each task runs the points of its shard (SLURM_ARRAY_TASK_ID of\n")
	p("# SLURM_ARRAY_TASK_COUNT), skipping the points already done: after a failed\n")
	p("# or pre-empted task, submit the whole array again and only the missing points\n")
	p("# are computed. Logs: %s.\n", shellQuote(s.Out+"/"+LogDir))
	p("#SBATCH --job-name=%s\n", name)
	p("#SBATCH --array=0-%d%%%d\n", s.Shards-1, s.MaxParallel)
	p("#SBATCH --cpus-per-task=%d\n", s.CPUsPerTask)
	s.jobOptions(&b)
	p("set -euo pipefail\n")
	p("neuronsim=%s\n", shellQuote(s.Binary))
	p("grid=%s\n", shellQuote(s.Grid))
	p("out=%s\n", shellQuote(s.Out))
	p("if [ -n \"${SLURM_ARRAY_TASK_ID:-}\" ]; then\n")
	p("  # An array task: the shard is read from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT.\n")
	p("  exec \"$neuronsim\" sweep run \"$grid\" --out \"$out\" -j \"${SLURM_CPUS_PER_TASK:-%d}\"\n", s.CPUsPerTask)
	p("fi\n")
	p("\n")
	p("# Not an array task: submit the array, then the merge job after it.\n")
	p("wait=\n")
	p("case \"$#:${1:-}\" in\n")
	p("  0:) ;;\n")
	p("  1:--wait) wait=--wait ;;\n")
	p("  *) echo \"usage: bash $0 [--wait]\" >&2; exit 2 ;;\n")
	p("esac\n")
	p("command -v sbatch >/dev/null || { echo \"$0: sbatch not found: run this on a Slurm submit host\" >&2; exit 1; }\n")
	p("# Two arrays of one sweep at once would compute their shards twice: refuse.\n")
	p("if queued=$(squeue -h -n %s,%s-merge -o %%i 2>/dev/null) && [ -n \"$queued\" ]; then\n", name, name)
	p("  echo \"$0: jobs of this sweep are queued or running (${queued//$'\\n'/ }): wait for them or scancel them, then run this again\" >&2\n")
	p("  exit 1\n")
	p("fi\n")
	p("logs=\"$out/%s\"\n", LogDir)
	p("mkdir -p -- \"$logs\"\n")
	p("pattern=\"${logs//%%/%%%%}\"  # a %% in a path is %%%% in sbatch's file patterns\n")
	p("array=$(sbatch --parsable --output=\"$pattern/%%x-%%A_%%a.out\" \"$0\")\n")
	p("array=${array%%%%;*}\n")
	p("echo \"neuronsim sweep: submitted the array job $array (%s); logs in $logs\"\n", units.Plural(int64(s.Shards), "task", "tasks"))
	p("merge_script() {\n")
	p("  cat <<'NEURONSIM_MERGE_SCRIPT'\n")
	p("#!/bin/bash\n")
	p("#SBATCH --job-name=%s-merge\n", name)
	s.jobOptions(&b)
	p("exec %s sweep merge %s\n", shellQuote(s.Binary), shellQuote(s.Out))
	p("NEURONSIM_MERGE_SCRIPT\n")
	p("}\n")
	p("if ! merge_script | sbatch $wait --dependency=afterany:\"$array\" --output=\"$pattern/%%x-%%j.out\"; then\n")
	p("  echo \"neuronsim sweep: the merge job failed; see its log in $logs (it lists the missing and failed points)\" >&2\n")
	p("  exit 1\n")
	p("fi\n")
	p("if [ -n \"$wait\" ]; then\n")
	p("  echo \"neuronsim sweep: merged into $out/merged\"\n")
	p("else\n")
	p("  echo \"neuronsim sweep: the merge job runs after the array; its results will be in $out/merged\"\n")
	p("fi\n")
	return b.Bytes(), nil
}

// jobOptions writes the #SBATCH lines both jobs share.
func (s *Slurm) jobOptions(b *bytes.Buffer) {
	if s.Partition != "" {
		fmt.Fprintf(b, "#SBATCH --partition=%s\n", s.Partition)
	}
	if s.HasTimeLimit {
		fmt.Fprintf(b, "#SBATCH --time=%s\n", slurmTime(s.TimeLimit))
	}
}

// TimeLimitGrammar says what [ParseTimeLimit] reads, for help texts.
const TimeLimitGrammar = "a duration with units (90m, 1h30m, 2h, 45s) or in Slurm's forms MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (a bare number is minutes, as in sbatch)"

// ParseTimeLimit reads a Slurm time limit (see [TimeLimitGrammar]) and
// checks it with [CheckTimeLimit].
func ParseTimeLimit(field, s string) (time.Duration, error) {
	q := strconv.Quote(s)
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, &units.Error{Field: field, Value: q, Reason: "empty (want " + TimeLimitGrammar + ")", Err: units.ErrSyntax}
	}
	var d time.Duration
	if strings.ContainsAny(t, "hms") {
		var err error
		if d, err = time.ParseDuration(t); err != nil {
			return 0, &units.Error{Field: field, Value: q, Reason: "not a duration (want " + TimeLimitGrammar + ")", Err: units.ErrSyntax}
		}
		if d < 0 {
			return 0, &units.Error{Field: field, Value: q, Reason: "negative", Err: units.ErrRange}
		}
	} else {
		days, rest, hasDays := strings.Cut(t, "-")
		if !hasDays {
			rest = days
		}
		parts := strings.Split(rest, ":")
		// The units of parts, from the first: without days MM, MM:SS or
		// HH:MM:SS; with days HH, HH:MM or HH:MM:SS.
		var unit []time.Duration
		switch {
		case !hasDays && len(parts) == 1:
			unit = []time.Duration{time.Minute}
		case !hasDays && len(parts) == 2:
			unit = []time.Duration{time.Minute, time.Second}
		case len(parts) == 3:
			unit = []time.Duration{time.Hour, time.Minute, time.Second}
		case hasDays && len(parts) == 1:
			unit = []time.Duration{time.Hour}
		case hasDays && len(parts) == 2:
			unit = []time.Duration{time.Hour, time.Minute}
		default:
			return 0, &units.Error{Field: field, Value: q, Reason: "not a time limit (want " + TimeLimitGrammar + ")", Err: units.ErrSyntax}
		}
		limit := int64(MaxTimeLimit / time.Second)
		if hasDays {
			n, err := units.ParseInt(field+" days", days, 0, limit/86400)
			if err != nil {
				return 0, err
			}
			d = time.Duration(n) * 24 * time.Hour
		}
		for i, p := range parts {
			if p == "" || strings.TrimSpace(p) != p || p[0] == '+' || p[0] == '-' {
				return 0, &units.Error{Field: field, Value: q, Reason: "not a time limit (want " + TimeLimitGrammar + ")", Err: units.ErrSyntax}
			}
			n, err := units.ParseInt(field, p, 0, limit/int64(unit[i]/time.Second))
			if err != nil {
				return 0, err
			}
			d += time.Duration(n) * unit[i]
		}
	}
	if err := CheckTimeLimit(field, d); err != nil {
		return 0, err
	}
	return d, nil
}
