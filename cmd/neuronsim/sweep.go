package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/neuronsim/neuronsim/internal/sweep"
	"github.com/neuronsim/neuronsim/internal/units"
)

// newSweepCmd is `neuronsim sweep`: experiment grids planned, run in
// shards (a Slurm job array, a Kubernetes Indexed Job, or locally) and
// merged (docs/sweeps.md). The workload managers' subcommands come from
// sweepJobCommands (sweep_jobs.go).
func newSweepCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Experiment grids: plan, run in shards (Slurm job arrays, Kubernetes Indexed Jobs, locally), merge",
		Long: `sweep runs a grid of independent simulation points — device counts or systems ×
sizes × collectives × algorithms × data types × network models × link
parameters × topologies × ranks per device — described by a grid file
(docs/sweeps.md). plan lists the points with their hashes and estimates; run
runs one shard of them into a results folder, one file per point, skipping
the points already done; merge gathers the folder into nccom-test's JSON
reports, a CSV, plots and optionally a SQLite database.`,
		Example: `  neuronsim sweep plan scenarios/sweeps/example.yaml
  neuronsim sweep run scenarios/sweeps/example.yaml --out results -j 2
  neuronsim sweep run scenarios/sweeps/example.yaml --out results --shard 0/4
  neuronsim sweep merge results --sqlite results/points.db`,
	}
	cmd.AddCommand(newSweepPlanCmd(), newSweepRunCmd(), newSweepMergeCmd())
	cmd.AddCommand(sweepJobCommands()...)
	return cmd
}

func newSweepPlanCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan GRID.yaml",
		Short: "Expand a grid into its points: each one's axes, hash, estimated host time and memory; the totals",
		Long: `plan expands the grid file into its ordered list of points and prints, per
point, its axes, its hash (of its inputs) and an estimate of the host time and
memory it takes, then the totals. Every value is checked, and every point is
built, before anything runs: a bad grid is refused here. The host time is a
model of the point's work calibrated on this machine by timing a small
reference point.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := sweep.LoadGrid(args[0])
			if err != nil {
				return err
			}
			cal, err := sweep.Calibrate()
			if err != nil {
				return err
			}
			p := g.Plan(cal)
			if asJSON {
				return p.WriteJSON(cmd.OutOrStdout())
			}
			return p.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

// sweepRunFlags are the flags of `neuronsim sweep run`.
type sweepRunFlags struct {
	out, shard string
	verbose    bool
	count      *intValue
	jobs       *intValue
}

// newSweepRunCmd is `neuronsim sweep run`: one shard of a grid run into a
// results folder.
func newSweepRunCmd() *cobra.Command {
	o := &sweepRunFlags{count: newInt("--count", 1, sweep.MaxShards), jobs: newIntDefault("-j/--jobs", 1, sweep.MaxJobs, 1)}
	cmd := &cobra.Command{
		Use:   "run GRID.yaml --out DIR",
		Short: "Run a shard of a grid into a results folder, one result file per point; points already done are skipped",
		Long: `run runs the points of one shard of the grid, writing each point's result to
DIR/points/<hash>.json atomically; a point whose result file is there and
valid is skipped, so a killed or pre-empted task simply runs again. A failed
point writes its error into its result file (merge lists it) and is retried
by the next run. DIR/grid.json records the grid's hash on first use: a folder
of another grid is refused.

The shard: --shard I/N (shard I of N, I from 0); without it, a Slurm array
task's SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT (or _MIN/_MAX), or a
Kubernetes Indexed Job's JOB_COMPLETION_INDEX with --count N; with neither,
the whole grid. The partition is the same on every machine, balanced by the
points' estimated work. -j runs that many points at once.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0])
		},
	}
	o.add(cmd.Flags())
	return cmd
}

// add registers the flags of `neuronsim sweep run` on fs.
func (o *sweepRunFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&o.out, "out", "", "the results folder (created if missing)")
	fs.StringVar(&o.shard, "shard", "", "run shard I of N (I from 0), e.g. 0/4")
	fs.Var(o.count, "count", "the number of shards of a Kubernetes Indexed Job (its completions), with JOB_COMPLETION_INDEX")
	fs.VarP(o.jobs, "jobs", "j", fmt.Sprintf("points run at once, 1..%d", sweep.MaxJobs))
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "print a line per point run (its index, hash, wall time and status) on stderr")
}

// run runs the shard of the grid file gridArg into --out and says on
// stderr how many of its points ran, were skipped and failed.
func (o *sweepRunFlags) run(cmd *cobra.Command, gridArg string) error {
	if o.out == "" {
		return fmt.Errorf("--out: give the results folder")
	}
	if err := refuseEmpty(cmd, "shard", "--shard", o.shard, "give I/N (0/4), or leave --shard out for the whole grid or the job array's task"); err != nil {
		return err
	}
	s, err := o.shardToRun()
	if err != nil {
		return err
	}
	g, err := sweep.LoadGrid(gridArg)
	if err != nil {
		return err
	}
	defer removeOutputsOnSignal(cmd.ErrOrStderr())()
	opt := sweep.RunOptions{Dir: o.out, Shard: s, Jobs: o.jobs.int()}
	if o.verbose {
		opt.Log = cmd.ErrOrStderr()
	}
	st, err := sweep.Run(g, opt)
	if err == nil || errors.Is(err, sweep.ErrIncomplete) {
		fmt.Fprintf(cmd.ErrOrStderr(), "neuronsim: sweep run %s: %s of %s: %d ran, %d skipped (already done), %d failed\n",
			o.out, shardDescription(s), units.Plural(int64(st.Points), "point", "points"), st.Ran, st.Skipped, st.Failed)
	}
	return err
}

// shardToRun returns the shard to run: --shard I/N; without it, the one
// the environment names (a Slurm array task, or a Kubernetes Indexed Job's
// with --count); with neither, the whole grid. --count with --shard is
// refused.
func (o *sweepRunFlags) shardToRun() (sweep.Shard, error) {
	switch {
	case o.shard != "" && o.count.set:
		return sweep.Shard{}, fmt.Errorf("--count: it goes with JOB_COMPLETION_INDEX; --shard %s names its count", o.shard)
	case o.shard != "":
		return sweep.ParseShard(o.shard)
	}
	c := 0
	if o.count.set {
		c = o.count.int()
	}
	s, _, err := sweep.ShardFromEnv(os.LookupEnv, c)
	return s, err
}

// shardDescription names shard s in the run's summary: the whole grid, or
// the shard and where it came from.
func shardDescription(s sweep.Shard) string {
	if s.From != "" {
		return fmt.Sprintf("shard %s (%s)", s, s.From)
	}
	return "the whole grid"
}

func newSweepMergeCmd() *cobra.Command {
	var sqlite string
	cmd := &cobra.Command{
		Use:   "merge DIR",
		Short: "Gather a results folder into nccom-test's JSON reports, a CSV and plots (and a SQLite database)",
		Long: `merge writes DIR/merged/report.json (a JSON array of nccom-test's reports, one
per group of points sharing every axis but the size, in point order),
DIR/merged/points.csv (one row per point, every axis a column, then the
results) and, unless the grid's outputs.plots is false, a plot of busbw
against size per group (DIR/merged/busbw-NNNN.png), each atomically. Missing
and failed points are listed with their errors on stderr and make the exit
status non-zero, after everything else is written. --sqlite FILE writes the
CSV's rows to table "points" of a new SQLite database; it may not be a file
of the results folder's own (its manifest, points/, host/, merged/).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseEmpty(cmd, "sqlite", "--sqlite", sqlite, "give a database file, or leave --sqlite out for none"); err != nil {
				return err
			}
			defer removeOutputsOnSignal(cmd.ErrOrStderr())()
			st, err := sweep.Merge(args[0], sweep.MergeOptions{SQLite: sqlite})
			for _, f := range st.Files {
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", f)
			}
			if errors.Is(err, sweep.ErrIncomplete) {
				fmt.Fprintf(cmd.ErrOrStderr(), "neuronsim: sweep merge %s: %d missing or failed (rerun sweep run to retry them)\n", args[0],
					len(st.Problems))
			}
			return err
		},
	}
	cmd.Flags().StringVar(&sqlite, "sqlite", "", "also write the rows to this SQLite database file")
	return cmd
}
