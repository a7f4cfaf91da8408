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
	"github.com/spf13/pflag"

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

// readJobGrid reads the grid a job command renders, once, and parses it:
// it returns the grid, its absolute path and the bytes it was parsed from
// (what a Kubernetes ConfigMap carries).
func readJobGrid(arg string) (*sweep.Grid, string, []byte, error) {
	abs, err := filepath.Abs(arg)
	if err != nil {
		return nil, "", nil, fmt.Errorf("grid %s: %w", arg, err)
	}
	data, err := sweep.ReadGrid(abs)
	if err != nil {
		return nil, "", nil, err
	}
	g, err := sweep.ParseGrid(abs, data)
	if err != nil {
		return nil, "", nil, err
	}
	return g, abs, data, nil
}

// shellWord quotes s for a shell command line when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+:=@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shardFlags are the flags both job commands size their job with:
// --shards, how many shards run at once (parallel: Slurm's --max-parallel,
// Kubernetes' --parallelism) and --cpus-per-task.
type shardFlags struct {
	shards, parallel, cpus *intValue
}

// newShardFlags returns the shard flags of a job command whose flag for
// the shards running at once is parallelFlag.
func newShardFlags(parallelFlag string) shardFlags {
	return shardFlags{
		shards:   newInt("--shards", 1, sweepjobs.MaxShards),
		parallel: newInt(parallelFlag, 1, sweepjobs.MaxShards),
		cpus:     newIntDefault("--cpus-per-task", 1, sweepjobs.MaxCPUsPerTask, 1),
	}
}

// addShardFlags registers the shard flags on fs: shardRunners names what
// runs one shard each (array tasks, completions); parallelHelp and
// cpusHelp are the other two flags' help.
func (sf shardFlags) addShardFlags(fs *pflag.FlagSet, shardRunners, parallelHelp, cpusHelp string) {
	fs.Var(sf.shards, "shards", fmt.Sprintf("%s, each running one shard (default: one per point, at most %d)", shardRunners, sweepjobs.MaxShards))
	fs.Var(sf.parallel, strings.TrimPrefix(sf.parallel.name, "--"), parallelHelp)
	fs.Var(sf.cpus, "cpus-per-task", cpusHelp)
}

// resolveShards returns the shard count (--shards; unset, one shard per
// point up to sweepjobs.MaxShards) and how many run at once (parallel;
// unset, all), checking --shards against the grid's points and parallel
// against the shards.
func (sf shardFlags) resolveShards(points int) (n, m int, err error) {
	n = min(points, sweepjobs.MaxShards)
	if sf.shards.set {
		if err := sf.shards.within(int64(n), fmt.Sprintf("at most one shard per point: the grid has %s", units.Plural(int64(points), "point", "points"))); err != nil {
			return 0, 0, err
		}
		n = sf.shards.int()
	}
	m = n
	if sf.parallel.set {
		if err := sf.parallel.within(int64(n), fmt.Sprintf("at most the %s", units.Plural(int64(n), "shard", "shards"))); err != nil {
			return 0, 0, err
		}
		m = sf.parallel.int()
	}
	return n, m, nil
}

// notAnInput refuses an output path (of flag) that names one of the
// inputs (or an earlier output), which writing it would destroy.
func notAnInput(flag, path string, inputs ...string) error {
	for _, in := range inputs {
		if output.SameFile(path, in) {
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

// slurmFlags are the flags of `neuronsim sweep slurm`.
type slurmFlags struct {
	out, partition, binary, script string
	shardFlags
	limit *timeLimitValue
}

// newSweepSlurmCommand is `neuronsim sweep slurm`: a grid as an sbatch
// script of a Slurm job array and its merge job.
func newSweepSlurmCommand() *cobra.Command {
	o := &slurmFlags{shardFlags: newShardFlags("--max-parallel"), limit: &timeLimitValue{name: "--time"}}
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
			return o.run(cmd, args[0])
		},
	}
	o.add(cmd.Flags())
	return cmd
}

// add registers the flags of `neuronsim sweep slurm` on fs.
func (o *slurmFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&o.out, "out", "", "the results folder, shared by every node (required)")
	o.addShardFlags(fs, "array tasks",
		"array tasks running at once, the %M of --array (default: --shards)",
		"CPUs each task asks for; it runs that many points at once (-j)")
	fs.StringVar(&o.partition, "partition", "", "the partition both jobs go to (default: the cluster's default partition)")
	fs.Var(o.limit, "time", "each job's time limit: "+sweepjobs.TimeLimitGrammar+" (default: the partition's)")
	fs.StringVar(&o.binary, "binary", "", "the neuronsim binary the nodes run, at the same path on every node (default: this binary)")
	fs.StringVar(&o.script, "script", "", "write the script to this file (atomically) instead of standard output")
}

// run writes the sbatch script of the grid file gridArg to --script, or
// to standard output, and says how to submit it and, for a results folder
// already in use, how many of its points are done.
func (o *slurmFlags) run(cmd *cobra.Command, gridArg string) error {
	if o.out == "" {
		return errors.New("sweep slurm: --out DIR is required (the results folder every task writes into)")
	}
	for _, f := range []struct{ name, v, want string }{
		{"script", o.script, "give a file, or leave --script out for standard output"},
		{"partition", o.partition, "give a partition, or leave --partition out for the cluster's default"},
		{"binary", o.binary, "give the binary's path, or leave --binary out for this one"},
	} {
		if err := refuseEmpty(cmd, f.name, "--"+f.name, f.v, f.want); err != nil {
			return err
		}
	}
	g, gridPath, _, err := readJobGrid(gridArg)
	if err != nil {
		return err
	}
	s, err := o.job(g, gridPath)
	if err != nil {
		return err
	}
	if err := notAnInput("--script", o.script, gridPath, s.Binary); err != nil {
		return err
	}
	done, restart, err := resultsDone(s.Out, g, gridPath)
	if err != nil {
		return err
	}
	data, err := s.Script()
	if err != nil {
		return err
	}
	if err := writeJobFile(cmd.OutOrStdout(), o.script, data); err != nil {
		return err
	}
	if o.script != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: an array of %s (%s), at most %d at once. Submit it and the merge after it:\n  bash %s --wait\n",
			o.script, units.Plural(int64(s.Shards), "task", "tasks"), units.Plural(int64(s.Points), "point", "points"), s.MaxParallel, shellWord(o.script))
	}
	if restart {
		fmt.Fprintf(cmd.ErrOrStderr(), "neuronsim: sweep slurm: %s already holds %d of %s done; the tasks will skip them\n", s.Out, done, units.Plural(int64(s.Points), "point", "points"))
	}
	return nil
}

// job returns the Slurm job array of the grid g read from gridPath, as the
// flags shape it: its results folder and binary as absolute paths, its
// shards, CPUs, partition and time limit.
func (o *slurmFlags) job(g *sweep.Grid, gridPath string) (*sweepjobs.Slurm, error) {
	s := &sweepjobs.Slurm{Grid: gridPath, GridHash: g.Hash(), Points: g.Len(), Partition: o.partition,
		CPUsPerTask: o.cpus.int(), TimeLimit: o.limit.v, HasTimeLimit: o.limit.set}
	var err error
	if s.Out, err = filepath.Abs(o.out); err != nil {
		return nil, fmt.Errorf("--out %s: %w", o.out, err)
	}
	if s.Binary, err = nodeBinary(o.binary); err != nil {
		return nil, err
	}
	if s.Shards, s.MaxParallel, err = o.resolveShards(s.Points); err != nil {
		return nil, err
	}
	return s, nil
}

// nodeBinary returns the absolute path of the neuronsim binary the Slurm
// nodes run: binary (--binary) or, when it is empty, this one with its
// links resolved. It must be an executable file on this host.
func nodeBinary(binary string) (string, error) {
	if binary == "" {
		var err error
		if binary, err = os.Executable(); err != nil {
			return "", fmt.Errorf("sweep slurm: finding this binary (give --binary): %w", err)
		}
		if binary, err = filepath.EvalSymlinks(binary); err != nil {
			return "", fmt.Errorf("sweep slurm: finding this binary (give --binary): %w", err)
		}
	}
	abs, err := filepath.Abs(binary)
	if err != nil {
		return "", fmt.Errorf("--binary %s: %w", binary, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("--binary %s: not an executable file on this host (the nodes run it from the same path)", abs)
	}
	return abs, nil
}

// resultsDone reads a results folder out that is already in use (a
// restart): it returns how many of its points are done, and restart true.
// A folder of another grid would fail every task, so it is refused now. A
// folder not in use yet gives 0 and false.
func resultsDone(out string, g *sweep.Grid, gridPath string) (done int, restart bool, err error) {
	if _, err := os.Stat(filepath.Join(out, sweep.ManifestName)); err != nil {
		return 0, false, nil
	}
	f, err := sweep.ReadFolder(out)
	if err != nil {
		return 0, false, err
	}
	if f.Grid != g.Hash() {
		return 0, false, fmt.Errorf("sweep slurm: --out %s: written by another grid (hash %s; %s is %s): use another --out, nothing was written: %w", out, f.Grid, gridPath, g.Hash(), sweep.ErrFolder)
	}
	return len(f.Results) - len(f.Problems()), true, nil
}

// k8sFlags are the flags of `neuronsim sweep k8s`.
type k8sFlags struct {
	out, image, pvc, binary, manifest, merge string
	shardFlags
}

// newSweepK8sCommand is `neuronsim sweep k8s`: a grid as the manifest of a
// Kubernetes Indexed Job and, with --merge, of its merge Job.
func newSweepK8sCommand() *cobra.Command {
	o := &k8sFlags{shardFlags: newShardFlags("--parallelism")}
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
			return o.run(cmd, args[0])
		},
	}
	o.add(cmd.Flags())
	return cmd
}

// add registers the flags of `neuronsim sweep k8s` on fs.
func (o *k8sFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&o.out, "out", "", "the results folder inside the pods, where the volume is mounted (required, absolute)")
	fs.StringVar(&o.image, "image", "", "the container image holding neuronsim (required)")
	fs.StringVar(&o.pvc, "pvc", "neuronsim-sweep", "the PersistentVolumeClaim (ReadWriteMany) every pod mounts at --out")
	fs.StringVar(&o.binary, "binary", "neuronsim", "the neuronsim command in the image: a name on its PATH or an absolute path")
	o.addShardFlags(fs, "completions",
		"pods running at once (default: --shards)",
		"CPUs each pod requests; it runs that many points at once (-j)")
	fs.StringVarP(&o.manifest, "manifest", "o", "", "write the manifest to this file (atomically) instead of standard output")
	fs.StringVar(&o.merge, "merge", "", "also write the merge Job's manifest to this file (atomically)")
}

// run writes the Indexed Job's manifest of the grid file gridArg to
// --manifest, or to standard output, and the merge Job's to --merge; with
// --manifest it says how to run them.
func (o *k8sFlags) run(cmd *cobra.Command, gridArg string) error {
	switch {
	case o.out == "":
		return errors.New("sweep k8s: --out DIR is required (where the volume is mounted in the pods)")
	case o.image == "":
		return errors.New("sweep k8s: --image is required (the container image holding neuronsim)")
	}
	if err := refuseEmpty(cmd, "manifest", "-o/--manifest", o.manifest, "give a file, or leave -o out for standard output"); err != nil {
		return err
	}
	if err := refuseEmpty(cmd, "merge", "--merge", o.merge, "give a file, or leave --merge out for no merge Job"); err != nil {
		return err
	}
	// Read once: the ConfigMap carries exactly the bytes expanded here.
	g, gridPath, data, err := readJobGrid(gridArg)
	if err != nil {
		return err
	}
	k := sweepjobs.K8s{Image: o.image, Binary: o.binary, GridData: data, GridHash: g.Hash(), Points: g.Len(),
		Out: o.out, PVC: o.pvc, CPUs: o.cpus.int()}
	if k.Shards, k.Parallelism, err = o.resolveShards(k.Points); err != nil {
		return err
	}
	if err := notAnInput("-o/--manifest", o.manifest, gridPath); err != nil {
		return err
	}
	if err := notAnInput("--merge", o.merge, gridPath, o.manifest); err != nil {
		return err
	}
	job, mergeJob, err := o.manifests(&k)
	if err != nil {
		return err
	}
	if err := o.write(cmd.OutOrStdout(), job, mergeJob); err != nil {
		return err
	}
	if o.manifest != "" {
		o.printHowToRun(cmd.OutOrStdout(), &k)
	}
	return nil
}

// manifests renders the Indexed Job's manifest and, with --merge, the
// merge Job's, checking that the --merge file can be written.
func (o *k8sFlags) manifests(k *sweepjobs.K8s) (job, mergeJob []byte, err error) {
	if job, err = k.Manifest(); err != nil {
		return nil, nil, err
	}
	if o.merge == "" {
		return job, nil, nil
	}
	if mergeJob, err = k.MergeManifest(); err != nil {
		return nil, nil, err
	}
	if err := output.Check(o.merge); err != nil {
		return nil, nil, err
	}
	return job, mergeJob, nil
}

// write writes the Indexed Job's manifest to --manifest (or to out) and,
// with --merge, the merge Job's to that file.
func (o *k8sFlags) write(out io.Writer, job, mergeJob []byte) error {
	if err := writeJobFile(out, o.manifest, job); err != nil {
		return err
	}
	if o.merge != "" {
		return output.WriteFile(o.merge, mergeJob)
	}
	return nil
}

// printHowToRun tells, after the manifest was written to --manifest, what
// it holds and the kubectl commands that run the job and then the merge.
func (o *k8sFlags) printHowToRun(w io.Writer, k *sweepjobs.K8s) {
	name, _ := sweepjobs.JobName(k.GridHash, k.Out)
	fmt.Fprintf(w, "wrote %s: an Indexed Job of %s (%s). Run it:\n  kubectl apply -f %s\n  kubectl wait --for=condition=complete --timeout=24h job/%s\n",
		o.manifest, units.Plural(int64(k.Shards), "shard", "shards"), units.Plural(int64(k.Points), "point", "points"), shellWord(o.manifest), name)
	if o.merge != "" {
		fmt.Fprintf(w, "then merge:\n  kubectl apply -f %s\n", shellWord(o.merge))
	} else {
		fmt.Fprintf(w, "then merge with the Job --merge FILE writes, or `neuronsim sweep merge %s` where the volume is mounted\n", shellWord(k.Out))
	}
}
