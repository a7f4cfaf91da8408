package slurmtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neuronsim/neuronsim/internal/sweep"
)

// slurmGrid is the grid the test sweeps: 32 timing-only points, slow
// enough (0.1 to 1 s each, a shard 2 to 3 s on one core) that an array task
// can be caught running, cheap enough that the test takes about a minute.
const slurmGrid = `# The grid of internal/sweep/slurmtest: 32 timing-only points.
arch: cayman
mode: timing
axes:
  devices: [8, 16]
  ops: [all_reduce, all_gather, reduce_scatter, all_to_all]
  sizes: [128M, 256M, 512M, 1G]
outputs:
  plots: true
`

// slurmPoints is slurmGrid's point count.
const slurmPoints = 32

// slurmShards is the array size the test submits.
const slurmShards = 4

// inCI reports whether the test runs in CI, where a missing Slurm fails
// instead of skipping.
func inCI() bool { v := os.Getenv("CI"); return v != "" && v != "0" && v != "false" }

// missing skips the test (outside CI) or fails it (in CI), saying why.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if inCI() {
		t.Fatalf("the Slurm test cannot run in CI: %s", msg)
	}
	t.Skipf("SKIPPED (not in CI): %s", msg)
}

// needSlurm checks for Slurm's commands and an up node.
func needSlurm(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("SKIPPED under -race: the sweep runs in Slurm's processes, which the race detector does not see; the plain test run covers it")
	}
	if testing.Short() {
		t.Skip("SKIPPED: -short: the Slurm test runs jobs for tens of seconds")
	}
	for _, tool := range []string{"sbatch", "squeue", "scancel", "sinfo", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, "%s not found (Debian: apt-get install slurm-wlm munge, then bash .ci/slurm-up as root)", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sinfo", "-h", "-o", "%t %D").CombinedOutput()
	if err != nil {
		missing(t, "sinfo: %v: %s (is slurmctld running? bash .ci/slurm-up starts a one-node cluster)", err, bytes.TrimSpace(out))
	}
	for _, line := range strings.Split(string(out), "\n") {
		if st, _, _ := strings.Cut(line, " "); st == "idle" || st == "mix" || st == "alloc" {
			return
		}
	}
	missing(t, "no Slurm node is up (sinfo: %q): bash .ci/slurm-up starts a one-node cluster", bytes.TrimSpace(out))
}

// repoRoot is the module's root, three up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s: %v", root, err)
	}
	return root
}

// cleanEnv is the environment without a workload manager's variables (the
// test may itself run inside a Slurm job), so a local `sweep run` runs the
// whole grid and sbatch starts from a clean slate.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SLURM_") || strings.HasPrefix(kv, "JOB_COMPLETION_INDEX=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// run runs a command with a bound on its time, failing the test on an
// error; it returns the combined output.
func run(t *testing.T, timeout time.Duration, dir, name string, args ...string) string {
	t.Helper()
	out, err := runErr(timeout, dir, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(timeout time.Duration, dir, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, cleanEnv()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (timed out after %v)", err, timeout)
	}
	return string(out), err
}

// tree reads every file under dir: relative path → contents.
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameTree fails unless got holds exactly want's files, byte for byte.
func sameTree(t *testing.T, what, got, want string) {
	t.Helper()
	g, w := tree(t, got), tree(t, want)
	if len(w) == 0 {
		t.Fatalf("%s: the local run's %s is empty", what, want)
	}
	var names []string
	for n := range w {
		names = append(names, n)
	}
	for n := range g {
		if _, ok := w[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		gb, gok := g[n]
		wb, wok := w[n]
		switch {
		case !gok:
			t.Errorf("%s: %s is missing (the local run wrote it)", what, n)
		case !wok:
			t.Errorf("%s: %s was written, but the local run has no such file", what, n)
		case !bytes.Equal(gb, wb):
			t.Errorf("%s: %s differs from the local run's (%d bytes, local %d)", what, n, len(gb), len(wb))
		}
	}
	if !t.Failed() {
		t.Logf("%s: %d merged files byte for byte the local run's", what, len(names))
	}
}

// stamp is what tells a result file written once from one rewritten: a
// rewrite (even of the same bytes, through a temporary file and a rename)
// gives a new inode and modification time.
type stamp struct {
	ino   uint64
	mtime time.Time
	size  int64
}

// results stamps the result files DIR/points/<hash>.json (not the
// temporary files a killed task may leave).
func results(t *testing.T, dir string) map[string]stamp {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "points"))
	if os.IsNotExist(err) {
		return map[string]stamp{}
	}
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]stamp{}
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			t.Fatalf("no inode for %s", n)
		}
		m[n] = stamp{ino: st.Ino, mtime: fi.ModTime(), size: fi.Size()}
	}
	return m
}

// doneOf counts the files of names that have is holds.
func doneOf(have map[string]stamp, names []string) int {
	n := 0
	for _, name := range names {
		if _, ok := have[name]; ok {
			n++
		}
	}
	return n
}

// ranLine is what `sweep run` prints when it ends: how many points it ran
// and skipped.
var ranLine = regexp.MustCompile(`: (\d+) ran, (\d+) skipped \(already done\), (\d+) failed`)

// taskCounts reads the logs matching glob (one per array task) and sums
// the points the tasks ran and skipped; it fails unless there is one log
// per shard, each with its ran line and no failed point.
func taskCounts(t *testing.T, glob string) (ran, skipped int) {
	t.Helper()
	logs, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != slurmShards {
		t.Fatalf("%d task logs match %s, want %d", len(logs), glob, slurmShards)
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		m := ranLine.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s has no \"N ran, M skipped\" line:\n%s", l, b)
		}
		r, _ := strconv.Atoi(string(m[1]))
		k, _ := strconv.Atoi(string(m[2]))
		if string(m[3]) != "0" {
			t.Errorf("%s: %s points failed:\n%s", l, m[3], b)
		}
		ran, skipped = ran+r, skipped+k
	}
	return ran, skipped
}

// slurmScript writes the sbatch script of grid into dir/name.sbatch with
// `neuronsim sweep slurm`.
func slurmScript(t *testing.T, bin, grid, out, name string, extra ...string) string {
	t.Helper()
	script := filepath.Join(filepath.Dir(out), name+".sbatch")
	args := append([]string{"sweep", "slurm", grid, "--out", out, "--shards", fmt.Sprint(slurmShards), "--binary", bin, "--script", script, "--time", "10m"}, extra...)
	run(t, time.Minute, filepath.Dir(out), bin, args...)
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("#SBATCH --array=0-%d%%", slurmShards-1); !bytes.Contains(b, []byte(want)) {
		t.Fatalf("the script has no %q:\n%s", want, b)
	}
	return script
}

// TestSlurmSweep runs a 32-point grid as a 4-way Slurm job array, with the
// merge as a dependent job, and checks the merged outputs equal a local
// run's byte for byte; then it cancels one array task mid-run, submits the
// array again, and checks no result file was written twice, none is
// missing, and the merge still equals the local run's.
func TestSlurmSweep(t *testing.T) {
	needSlurm(t)
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: the Slurm test reads inodes the Linux way")
	}
	start := time.Now()
	// Slurm runs the jobs as this user. On the one-node cluster of
	// .ci/slurm-up the node is this machine and a temporary folder will
	// do; on a cluster of several nodes NEURONSIM_SLURM_DIR names a folder
	// every node sees (a shared file system) to work under.
	work := t.TempDir()
	if shared := os.Getenv("NEURONSIM_SLURM_DIR"); shared != "" {
		var err error
		if work, err = os.MkdirTemp(shared, "slurmtest-"); err != nil {
			t.Fatalf("NEURONSIM_SLURM_DIR: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(work) })
	}
	// Give the tasks access whatever the umask.
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(work, "neuronsim")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/neuronsim")
	build.Dir, build.Env = repoRoot(t), append(cleanEnv(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building neuronsim: %v\n%s", err, out)
	}
	grid := filepath.Join(work, "grid with spaces and 'quotes'.yaml")
	if err := os.WriteFile(grid, []byte(slurmGrid), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := sweep.LoadGrid(grid)
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != slurmPoints {
		t.Fatalf("the grid has %d points, want %d", g.Len(), slurmPoints)
	}
	// Each shard's result file names, as the array's tasks run them.
	points := g.Points()
	shards := make([][]string, slurmShards)
	for k := range shards {
		idx, err := g.Shard(sweep.Shard{Index: k, Count: slurmShards})
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range idx {
			shards[k] = append(shards[k], points[i].Hash+".json")
		}
	}
	plan := run(t, time.Minute, work, bin, "sweep", "plan", grid)
	if !strings.Contains(plan, fmt.Sprint(slurmPoints)) {
		t.Fatalf("sweep plan does not count %d points:\n%s", slurmPoints, plan)
	}
	t.Logf("built neuronsim and planned the grid in %v", time.Since(start).Round(time.Millisecond))

	// The reference: the whole grid locally, two at a time.
	local := filepath.Join(work, "local")
	t0 := time.Now()
	run(t, 5*time.Minute, work, bin, "sweep", "run", grid, "--out", local, "-j", "2")
	run(t, time.Minute, work, bin, "sweep", "merge", local)
	if n := len(results(t, local)); n != slurmPoints {
		t.Fatalf("the local run wrote %d result files, want %d", n, slurmPoints)
	}
	t.Logf("local run and merge: %v", time.Since(t0).Round(time.Millisecond))

	t.Run("array", func(t *testing.T) {
		// What a user types: write the script, run it with bash: it
		// submits the array and the merge job after it (afterany); --wait
		// returns when the merge has ended.
		out := filepath.Join(work, "slurm 1")
		script := slurmScript(t, bin, grid, out, "array")
		t0 := time.Now()
		log := run(t, 5*time.Minute, work, "bash", script, "--wait")
		t.Logf("bash %s --wait: %v\n%s", filepath.Base(script), time.Since(t0).Round(time.Millisecond), log)
		if n := len(results(t, out)); n != slurmPoints {
			t.Fatalf("the array wrote %d result files, want %d", n, slurmPoints)
		}
		logs, _ := filepath.Glob(filepath.Join(out, "slurm", "*.out"))
		if len(logs) != slurmShards+1 {
			t.Errorf("%d Slurm logs in %s, want one per array task and the merge job's: %v", len(logs), filepath.Join(out, "slurm"), logs)
		}
		// Every point ran once, in one task: the shards partition the grid.
		if ran, skipped := taskCounts(t, filepath.Join(out, "slurm", "neuronsim-sweep-*_*.out")); ran != slurmPoints || skipped != 0 {
			t.Errorf("the tasks ran %d points and skipped %d, want %d and 0", ran, skipped, slurmPoints)
		}
		sameTree(t, "4-way array, merged by the dependent job", filepath.Join(out, "merged"), filepath.Join(local, "merged"))
	})

	t.Run("killed task", func(t *testing.T) {
		out := filepath.Join(work, "slurm 2")
		// Two tasks at a time, so the others wait while one is cancelled.
		script := slurmScript(t, bin, grid, out, "killed", "--max-parallel", "2")
		logDir := filepath.Join(work, "killed-logs")
		if err := os.Mkdir(logDir, 0o755); err != nil {
			t.Fatal(err)
		}
		output := "--output=" + logDir + "/%A_%a.out"

		// Submit the array alone and wait for it, cancelling one task
		// once it has written a result and is still running.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		sb := exec.CommandContext(ctx, "sbatch", "--parsable", "--wait", output, script)
		sb.Dir, sb.Env = work, cleanEnv()
		stdout, err := sb.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		sb.Stderr = &stderr
		if err := sb.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() {
			sb.Wait()
			t.Fatalf("sbatch printed no job id: %s", stderr.String())
		}
		job, _, _ := strings.Cut(strings.TrimSpace(lines.Text()), ";")
		// The victim: a running task that has written some of its shard's
		// result files, at most half (the partition is the grid's, the same
		// here as in the tasks).
		victim, victimShard := "", -1
		for deadline := time.Now().Add(3 * time.Minute); victim == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			sq, err := runErr(20*time.Second, work, "squeue", "-h", "-r", "-j", job, "-t", "RUNNING", "-o", "%i")
			if err != nil {
				t.Fatalf("squeue: %v: %s", err, sq)
			}
			have := results(t, out)
			for _, task := range strings.Fields(sq) {
				_, idx, _ := strings.Cut(task, "_")
				k, err := strconv.Atoi(idx)
				if err != nil || k < 0 || k >= slurmShards {
					t.Fatalf("squeue lists task %q of job %s", task, job)
				}
				// At most half written: a task nearly done may finish its
				// last point before scancel's signal reaches it (seen in CI).
				if n := doneOf(have, shards[k]); n > 0 && 2*n <= len(shards[k]) {
					victim, victimShard = task, k
					break
				}
			}
		}
		if victim == "" {
			t.Fatalf("no task of job %s was seen running with some but at most half of its results written", job)
		}
		run(t, 20*time.Second, work, "scancel", victim)
		for lines.Scan() {
		}
		waitErr := sb.Wait()
		done := results(t, out)
		t.Logf("cancelled task %s (shard %d of %d points) once it had written some; it had written %d when it stopped; sbatch --wait: %v %s",
			victim, victimShard, len(shards[victimShard]), doneOf(done, shards[victimShard]), waitErr, strings.TrimSpace(stderr.String()))
		// sbatch --wait's status (the tasks' highest) is not checked: the
		// cancelled task's record may be purged (MinJobAge) before the
		// last task ends, and then its status is lost. The files say
		// what happened.
		if n := doneOf(done, shards[victimShard]); n == len(shards[victimShard]) {
			t.Fatalf("task %s wrote all its %d points though it was cancelled: it was not caught mid-run (make the grid's points slower)", victim, n)
		}
		for k, idx := range shards {
			if n := doneOf(done, idx); k != victimShard && n != len(idx) {
				t.Errorf("shard %d, not cancelled, wrote %d of its %d points", k, n, len(idx))
			}
		}
		t.Logf("after the cancelled run: %d of %d points done", len(done), slurmPoints)
		// The merge of an incomplete folder fails and names what is missing.
		if mout, err := runErr(time.Minute, work, bin, "sweep", "merge", out); err == nil {
			t.Errorf("sweep merge of a folder missing %d points succeeded:\n%s", slurmPoints-len(done), mout)
		} else if !strings.Contains(strings.ToLower(mout), "missing") {
			t.Errorf("sweep merge of an incomplete folder does not say what is missing:\n%s", mout)
		}

		// Submit the whole array again: only the missing points are run.
		t0 := time.Now()
		log := run(t, 5*time.Minute, work, "sbatch", "--parsable", "--wait", output, script)
		again, _, _ := strings.Cut(strings.TrimSpace(log), ";")
		t.Logf("resubmitted as job %s: %v", again, time.Since(t0).Round(time.Millisecond))
		// The tasks ran exactly the missing points and skipped the rest.
		if ran, skipped := taskCounts(t, filepath.Join(logDir, again+"_*.out")); ran != slurmPoints-len(done) || skipped != len(done) {
			t.Errorf("the resubmitted tasks ran %d points and skipped %d, want %d (the missing) and %d (the done)", ran, skipped, slurmPoints-len(done), len(done))
		}
		after := results(t, out)
		if len(after) != slurmPoints {
			t.Fatalf("after the resubmission %d result files, want %d (lost points)", len(after), slurmPoints)
		}
		for name, st := range done {
			if now := after[name]; now != st {
				t.Errorf("%s was written again by the resubmission (inode %d → %d, mtime %v → %v): computed twice", name, st.ino, now.ino, st.mtime, now.mtime)
			}
		}
		run(t, time.Minute, work, bin, "sweep", "merge", out)
		sameTree(t, "array with a cancelled task, resubmitted", filepath.Join(out, "merged"), filepath.Join(local, "merged"))
	})
	t.Logf("the Slurm test took %v", time.Since(start).Round(time.Millisecond))
}
