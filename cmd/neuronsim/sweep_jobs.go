package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/sweep"
	"github.com/neuronsim/neuronsim/internal/sweepjobs"
	"github.com/neuronsim/neuronsim/internal/units"
)

// sweepJobCommands returns the subcommands of `neuronsim sweep` that turn a
// grid into jobs for a workload manager (`slurm`, `k8s`). newSweepCmd adds
// whatever it returns after plan, run and merge.
func sweepJobCommands() []*cobra.Command {
	return []*cobra.Command{newSweepSlurmCommand(), newSweepK8sCommand()}
}

// timeLimitValue is a --time flag: a Slurm time limit read by
// sweepjobs.ParseTimeLimit.
type timeLimitValue struct {
	name string
	v    time.Duration
	set  bool
	text string
}

func (v *timeLimitValue) String() string { return v.text }

// Set implements pflag.Value.
func (v *timeLimitValue) Set(s string) error {
	d, err := sweepjobs.ParseTimeLimit(v.name, s)
	if err != nil {
		return err
	}
	v.v, v.set, v.text = d, true, s
	return nil
}

// Type implements pflag.Value.
func (v *timeLimitValue) Type() string { return "duration" }

// loadJobGrid loads the grid a job command renders, and returns it with its
// absolute path.
func loadJobGrid(arg string) (*sweep.Grid, string, error) {
	abs, err := filepath.Abs(arg)
	if err != nil {
		return nil, "", fmt.Errorf("grid %s: %w", arg, err)
	}
	g, err := sweep.LoadGrid(abs)
	if err != nil {
		return nil, "", err
	}
	return g, abs, nil
}

// readGridFile reads a grid file, refusing one larger than sweep.MaxGridBytes.
func readGridFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sweep: grid %s: %w: %w", path, err, sweep.ErrGrid)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, sweep.MaxGridBytes+1))
	if err != nil {
		return nil, fmt.Errorf("sweep: grid %s: %w: %w", path, err, sweep.ErrGrid)
	}
	return data, nil
}

// shellWord quotes s for a shell command line when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+:=@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// resolveShards returns the shard count (--shards; unset, one shard per
// point up to sweepjobs.MaxShards) and how many run at once (par; unset,
// all), checking --shards against the grid's points and par against the
// shards.
func resolveShards(shards, par *intValue, points int) (n, m int, err error) {
	n = min(points, sweepjobs.MaxShards)
	if shards.set {
		if err := shards.within(int64(n), fmt.Sprintf("at most one shard per point: the grid has %s", units.Plural(int64(points), "point", "points"))); err != nil {
			return 0, 0, err
		}
		n = shards.int()
	}
	m = n
	if par.set {
		if err := par.within(int64(n), fmt.Sprintf("at most the %s", units.Plural(int64(n), "shard", "shards"))); err != nil {
			return 0, 0, err
		}
		m = par.int()
	}
	return n, m, nil
}

// notAnInput refuses an output path (of flag) that names one of the
// inputs (or an earlier output), which writing it would destroy.
func notAnInput(flag, path string, inputs ...string) error {
	if path == "" {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	fi, statErr := os.Stat(abs)
	for _, in := range inputs {
		if in == "" {
			continue
		}
		inAbs, err := filepath.Abs(in)
		if err != nil {
			return fmt.Errorf("%s %s: %w", flag, in, err)
		}
		same := inAbs == abs
		if fj, err := os.Stat(inAbs); !same && statErr == nil && err == nil {
			same = os.SameFile(fi, fj)
		}
		if same {
			return fmt.Errorf("%s %s: is %s, an input or an earlier output of this command: nothing was written", flag, path, in)
		}
	}
	return nil
}

// writeJobFile writes data to path atomically, or to out when path is empty.
func writeJobFile(out io.Writer, path string, data []byte) error {
	if path == "" {
		_, err := out.Write(data)
		return err
	}
	return output.WriteFile(path, data)
}

func newSweepSlurmCommand() *cobra.Command {
	var (
		out, partition, binary, script string
		shards                         = newInt("--shards", 1, sweepjobs.MaxShards)
		maxParallel                    = newInt("--max-parallel", 1, sweepjobs.MaxShards)
		cpus                           = newIntDefault("--cpus-per-task", 1, sweepjobs.MaxCPUsPerTask, 1)
		limit                          = &timeLimitValue{name: "--time"}
	)
	cmd := &cobra.Command{
		Use:   "slurm GRID.yaml --out DIR",
		Short: "Write an sbatch script running a grid as a Slurm job array, and its merge job",
		Long: "Write an sbatch script that runs the grid as a Slurm job array (--array=0-(N-1)%M), one\n" +
			"shard per array task, each task running `neuronsim sweep run GRID --out DIR` (the\n" +
			"shard is read from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT).\n\n" +
			"Run the script with bash to submit the array and, after it (--dependency=afterany),\n" +
			"the job that merges the results into DIR/merged; `bash SCRIPT --wait` returns when\n" +
			"the merge has ended, with its status. `sbatch SCRIPT` submits the array alone.\n" +
			"A point already done is skipped, so after a failed or pre-empted task submitting\n" +
			"the array again computes only the missing points. Run through bash, the script has\n" +
			"Slurm write the logs in DIR/" + sweepjobs.LogDir + ".\n\n" +
			"The grid, DIR and the binary must be at the same absolute paths on every node\n" +
			"(a shared file system); they are written into the script as absolute paths.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("sweep slurm: --out DIR is required (the results folder every task writes into)")
			}
			g, gridPath, err := loadJobGrid(args[0])
			if err != nil {
				return err
			}
			s := sweepjobs.Slurm{Grid: gridPath, GridHash: g.Hash(), Points: g.Len(), Partition: partition,
				CPUsPerTask: cpus.int(), TimeLimit: limit.v, HasTimeLimit: limit.set}
			if s.Out, err = filepath.Abs(out); err != nil {
				return fmt.Errorf("--out %s: %w", out, err)
			}
			if binary == "" {
				if binary, err = os.Executable(); err != nil {
					return fmt.Errorf("sweep slurm: finding this binary (give --binary): %w", err)
				}
				if binary, err = filepath.EvalSymlinks(binary); err != nil {
					return fmt.Errorf("sweep slurm: finding this binary (give --binary): %w", err)
				}
			}
			if s.Binary, err = filepath.Abs(binary); err != nil {
				return fmt.Errorf("--binary %s: %w", binary, err)
			}
			if fi, err := os.Stat(s.Binary); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
				return fmt.Errorf("--binary %s: not an executable file on this host (the nodes run it from the same path)", s.Binary)
			}
			if s.Shards, s.MaxParallel, err = resolveShards(shards, maxParallel, s.Points); err != nil {
				return err
			}
			if err := notAnInput("--script", script, gridPath, s.Binary); err != nil {
				return err
			}
			// A results folder of another grid would fail every task: refuse
			// it now. One of this grid (a restart) says what is left to do.
			done, restart := 0, false
			if _, err := os.Stat(filepath.Join(s.Out, sweep.ManifestName)); err == nil {
				f, err := sweep.ReadFolder(s.Out)
				if err != nil {
					return err
				}
				if f.Grid != g.Hash() {
					return fmt.Errorf("sweep slurm: --out %s: written by another grid (hash %s; %s is %s): use another --out, nothing was written: %w", s.Out, f.Grid, gridPath, g.Hash(), sweep.ErrFolder)
				}
				done, restart = len(f.Results)-len(f.Problems()), true
			}
			data, err := s.Script()
			if err != nil {
				return err
			}
			if err := writeJobFile(cmd.OutOrStdout(), script, data); err != nil {
				return err
			}
			if script != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: an array of %s (%s), at most %d at once. Submit it and the merge after it:\n  bash %s --wait\n",
					script, units.Plural(int64(s.Shards), "task", "tasks"), units.Plural(int64(s.Points), "point", "points"), s.MaxParallel, shellWord(script))
			}
			if restart {
				fmt.Fprintf(cmd.ErrOrStderr(), "neuronsim: sweep slurm: %s already holds %d of %s done; the tasks will skip them\n", s.Out, done, units.Plural(int64(s.Points), "point", "points"))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "the results folder, shared by every node (required)")
	f.Var(shards, "shards", fmt.Sprintf("array tasks, each running one shard (default: one per point, at most %d)", sweepjobs.MaxShards))
	f.Var(maxParallel, "max-parallel", "array tasks running at once, the %M of --array (default: --shards)")
	f.Var(cpus, "cpus-per-task", "CPUs each task asks for; it runs that many points at once (-j)")
	f.StringVar(&partition, "partition", "", "the partition both jobs go to (default: the cluster's default partition)")
	f.Var(limit, "time", "each job's time limit: "+sweepjobs.TimeLimitGrammar+" (default: the partition's)")
	f.StringVar(&binary, "binary", "", "the neuronsim binary the nodes run, at the same path on every node (default: this binary)")
	f.StringVar(&script, "script", "", "write the script to this file (atomically) instead of standard output")
	return cmd
}

func newSweepK8sCommand() *cobra.Command {
	var (
		out, image, pvc, binary, manifest, merge string
		shards                                   = newInt("--shards", 1, sweepjobs.MaxShards)
		parallelism                              = newInt("--parallelism", 1, sweepjobs.MaxShards)
		cpus                                     = newIntDefault("--cpus-per-task", 1, sweepjobs.MaxCPUsPerTask, 1)
	)
	cmd := &cobra.Command{
		Use:   "k8s GRID.yaml --out DIR --image IMAGE",
		Short: "Write a Kubernetes Indexed Job manifest running a grid, and its merge Job",
		Long: "Write a Kubernetes manifest that runs the grid as an Indexed Job (completionMode:\n" +
			"Indexed, one shard per completion index): a ConfigMap carrying the grid, and the Job,\n" +
			"whose pods run `neuronsim sweep run GRID --out DIR --count N` (the shard is read from\n" +
			"JOB_COMPLETION_INDEX) with the PersistentVolumeClaim --pvc mounted at DIR.\n\n" +
			"--merge FILE also writes the Job that merges the results into DIR/merged: apply it\n" +
			"once the Indexed Job has completed (kubectl wait --for=condition=complete job/NAME).\n" +
			"A point already done is skipped, so deleting and re-applying the Job after failures\n" +
			"computes only the missing points.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case out == "":
				return errors.New("sweep k8s: --out DIR is required (where the volume is mounted in the pods)")
			case image == "":
				return errors.New("sweep k8s: --image is required (the container image holding neuronsim)")
			}
			// Read once: the ConfigMap carries exactly the bytes expanded here.
			gridPath, err := filepath.Abs(args[0])
			if err != nil {
				return fmt.Errorf("grid %s: %w", args[0], err)
			}
			data, err := readGridFile(gridPath)
			if err != nil {
				return err
			}
			g, err := sweep.ParseGrid(gridPath, data)
			if err != nil {
				return err
			}
			k := sweepjobs.K8s{Image: image, Binary: binary, GridData: data, GridHash: g.Hash(), Points: g.Len(),
				Out: out, PVC: pvc, CPUs: cpus.int()}
			if k.Shards, k.Parallelism, err = resolveShards(shards, parallelism, k.Points); err != nil {
				return err
			}
			if err := notAnInput("-o/--manifest", manifest, gridPath); err != nil {
				return err
			}
			if err := notAnInput("--merge", merge, gridPath, manifest); err != nil {
				return err
			}
			job, err := k.Manifest()
			if err != nil {
				return err
			}
			var mergeJob []byte
			if merge != "" {
				if mergeJob, err = k.MergeManifest(); err != nil {
					return err
				}
				if err := output.Check(merge); err != nil {
					return err
				}
			}
			if err := writeJobFile(cmd.OutOrStdout(), manifest, job); err != nil {
				return err
			}
			if merge != "" {
				if err := output.WriteFile(merge, mergeJob); err != nil {
					return err
				}
			}
			if manifest != "" {
				name, _ := sweepjobs.JobName(g.Hash(), k.Out)
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: an Indexed Job of %s (%s). Run it:\n  kubectl apply -f %s\n  kubectl wait --for=condition=complete --timeout=24h job/%s\n",
					manifest, units.Plural(int64(k.Shards), "shard", "shards"), units.Plural(int64(k.Points), "point", "points"), shellWord(manifest), name)
				if merge != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "then merge:\n  kubectl apply -f %s\n", shellWord(merge))
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "then merge with the Job --merge FILE writes, or `neuronsim sweep merge %s` where the volume is mounted\n", shellWord(k.Out))
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "the results folder inside the pods, where the volume is mounted (required, absolute)")
	f.StringVar(&image, "image", "", "the container image holding neuronsim (required)")
	f.StringVar(&pvc, "pvc", "neuronsim-sweep", "the PersistentVolumeClaim (ReadWriteMany) every pod mounts at --out")
	f.StringVar(&binary, "binary", "neuronsim", "the neuronsim command in the image: a name on its PATH or an absolute path")
	f.Var(shards, "shards", fmt.Sprintf("completions, each running one shard (default: one per point, at most %d)", sweepjobs.MaxShards))
	f.Var(parallelism, "parallelism", "pods running at once (default: --shards)")
	f.Var(cpus, "cpus-per-task", "CPUs each pod requests; it runs that many points at once (-j)")
	f.StringVarP(&manifest, "manifest", "o", "", "write the manifest to this file (atomically) instead of standard output")
	f.StringVar(&merge, "merge", "", "also write the merge Job's manifest to this file (atomically)")
	return cmd
}
