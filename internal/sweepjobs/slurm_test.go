package sweepjobs

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/neuronsim/neuronsim/internal/units"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendering (go test -update rewrites it); got:\n%s", p, got)
	}
}

func exampleSlurm() Slurm {
	return Slurm{
		Binary: "/opt/neuronsim/bin/neuronsim", Grid: "/shared/grids/example.yaml", Out: "/shared/runs/example",
		GridHash: "0123456789abcdef", Points: 48, Shards: 4, MaxParallel: 2, CPUsPerTask: 2,
		Partition: "cpu", TimeLimit: 90 * time.Minute, HasTimeLimit: true,
	}
}

func TestSlurmScriptGolden(t *testing.T) {
	s := exampleSlurm()
	got, err := s.Script()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "slurm.sbatch", got)
	for _, want := range []string{"#SBATCH --array=0-3%2\n", "#SBATCH --cpus-per-task=2\n", "#SBATCH --partition=cpu\n", "#SBATCH --time=0-01:30:00\n", "#SBATCH --job-name=neuronsim-sweep-0123456789ab-f9e862c8\n"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("the script lacks %q", want)
		}
	}
	// sbatch reads #SBATCH lines only before the first command.
	first := true
	for _, line := range strings.Split(string(got), "\n") {
		if strings.HasPrefix(line, "#SBATCH") && !first {
			t.Fatalf("#SBATCH line %q after the first command", line)
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			first = false
		}
		if line == "NEURONSIM_MERGE_SCRIPT" || strings.HasPrefix(line, "  cat <<") {
			break // the merge job's script, its own #SBATCH lines
		}
	}
	if err := exec.Command("bash", "-n", "-c", string(got)).Run(); err != nil {
		t.Errorf("bash -n: %v", err)
	}
}

func TestSlurmScriptMinimal(t *testing.T) {
	s := exampleSlurm()
	s.Partition, s.HasTimeLimit, s.TimeLimit = "", false, 0
	s.Shards, s.MaxParallel, s.CPUsPerTask, s.Points = 1, 1, 1, 1
	got, err := s.Script()
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"--partition", "--time"} {
		if bytes.Contains(got, []byte(absent)) {
			t.Errorf("the script has %s though none was given", absent)
		}
	}
	if !bytes.Contains(got, []byte("#SBATCH --array=0-0%1\n")) {
		t.Errorf("no --array=0-0%%1 in\n%s", got)
	}
}

func TestSlurmRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*Slurm)
		want   error
		says   string
	}{
		{"relative grid", func(s *Slurm) { s.Grid = "grids/x.yaml" }, ErrInvalid, "not an absolute path"},
		{"unclean out", func(s *Slurm) { s.Out = "/shared/../runs/" }, ErrInvalid, "not a clean path"},
		{"newline in grid", func(s *Slurm) { s.Grid = "/shared/a\nb.yaml" }, ErrInvalid, "control character"},
		{"empty binary", func(s *Slurm) { s.Binary = "" }, ErrInvalid, "empty"},
		{"no shards", func(s *Slurm) { s.Shards = 0 }, units.ErrRange, "--shards 0"},
		{"shards past points", func(s *Slurm) { s.Shards = 49 }, units.ErrRange, "--shards 49: must be in 1..48"},
		{"shards past the array limit", func(s *Slurm) { s.Points, s.Shards = 5000, MaxShards+1 }, units.ErrRange, "must be in 1..1000"},
		{"max-parallel past shards", func(s *Slurm) { s.MaxParallel = 5 }, units.ErrRange, "--max-parallel 5: must be in 1..4"},
		{"no cpus", func(s *Slurm) { s.CPUsPerTask = 0 }, units.ErrRange, "--cpus-per-task 0"},
		{"partition with a space", func(s *Slurm) { s.Partition = "a b" }, ErrInvalid, "--partition"},
		{"partition with a quote", func(s *Slurm) { s.Partition = `a"` }, ErrInvalid, "--partition"},
		{"fractional time", func(s *Slurm) { s.TimeLimit = 1500 * time.Millisecond }, units.ErrSyntax, "whole seconds"},
		{"zero time", func(s *Slurm) { s.TimeLimit = 0 }, units.ErrRange, "--time"},
		{"time past the limit", func(s *Slurm) { s.TimeLimit = MaxTimeLimit + time.Second }, units.ErrRange, "--time"},
		{"short hash", func(s *Slurm) { s.GridHash = "abc" }, ErrInvalid, "grid hash"},
		{"hash with a slash", func(s *Slurm) { s.GridHash = "0123456789a/cdef" }, ErrInvalid, "grid hash"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := exampleSlurm()
			c.change(&s)
			got, err := s.Script()
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v (script %d bytes), want an error wrapping %v saying %q", err, len(got), c.want, c.says)
			}
		})
	}
}

// fakeTools writes executables into a fresh directory: a neuronsim that
// records its arguments one per line (quoted with %q so spaces and quotes
// show) and an sbatch that records its arguments and standard input and
// prints a job id.
func fakeTools(t *testing.T) (dir, record string) {
	t.Helper()
	dir = t.TempDir()
	record = filepath.Join(dir, "record")
	neuronsim := "#!/bin/bash\nfor a in \"$@\"; do printf 'arg %q\\n' \"$a\"; done >>\"$RECORD\"\n"
	sbatch := "#!/bin/bash\n" +
		"n=$(cat \"$RECORD.n\" 2>/dev/null || echo 0); n=$((n+1)); echo $n >\"$RECORD.n\"\n" +
		"{ echo \"sbatch $n\"; for a in \"$@\"; do printf 'arg %q\\n' \"$a\"; done; } >>\"$RECORD\"\n" +
		"last=${!#}\n" +
		"if [ ! -f \"$last\" ]; then cat >\"$RECORD.stdin$n\"; fi\n" +
		"case \" $* \" in *' --parsable '*) echo \"$((100+n));cluster\" ;; *) echo \"Submitted batch job $((100+n))\" ;; esac\n" +
		"[ \"${FAIL_SBATCH:-}\" != $n ] || exit 3\n"
	squeue := "#!/bin/bash\nprintf '%s' \"${FAKE_SQUEUE:-}\"\n"
	for name, text := range map[string]string{"neuronsim": neuronsim, "sbatch": sbatch, "squeue": squeue} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, record
}

// TestSlurmScriptQuoting runs the script with paths holding spaces, both
// kinds of quotes, $, backquotes, backslashes, % and a glob, as an array
// task and as the driver (with a fake sbatch), and checks every command
// gets each path as one argument, unchanged.
func TestSlurmScriptQuoting(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	tools, record := fakeTools(t)
	base := t.TempDir()
	nasty := filepath.Join(base, `it's a "grid" $HOME `+"`id`"+` \n %A *`)
	if err := os.MkdirAll(nasty, 0o755); err != nil {
		t.Fatal(err)
	}
	s := exampleSlurm()
	s.Binary = filepath.Join(tools, "neuronsim")
	s.Grid = filepath.Join(nasty, "grid.yaml")
	s.Out = filepath.Join(nasty, "out")
	script, err := s.Script()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(base, "sweep.sbatch")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(env []string, args ...string) string {
		t.Helper()
		os.Remove(record)
		cmd := exec.Command("bash", append([]string{path}, args...)...)
		cmd.Env = append(os.Environ(), append(env, "RECORD="+record, "PATH="+tools+":"+os.Getenv("PATH"))...)
		cmd.Dir = base
		outb, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash %s %v: %v\n%s", path, args, err, outb)
		}
		rec, err := os.ReadFile(record)
		if err != nil {
			t.Fatal(err)
		}
		return string(rec)
	}
	q := func(s string) string { // bash's printf %q of s, to compare records
		out, err := exec.Command("bash", "-c", `printf %q "$1"`, "-", s).Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}

	// An array task runs sweep run on the grid into out, with -j from Slurm.
	got := run([]string{"SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_COUNT=4", "SLURM_CPUS_PER_TASK=3"})
	want := "arg sweep\narg run\narg " + q(s.Grid) + "\narg --out\narg " + q(s.Out) + "\narg -j\narg 3\n"
	if got != want {
		t.Errorf("the array task ran\n%s\nwant\n%s", got, want)
	}

	// The driver submits the script itself, then the merge job after it.
	os.Remove(record + ".n")
	got = run(nil, "--wait")
	pattern := strings.ReplaceAll(s.Out, "%", "%%") + "/" + LogDir
	want = "sbatch 1\narg --parsable\narg " + q("--output="+pattern+"/%x-%A_%a.out") + "\narg " + q(path) + "\n" +
		"sbatch 2\narg --wait\narg --dependency=afterany:101\narg " + q("--output="+pattern+"/%x-%j.out") + "\n"
	if got != want {
		t.Errorf("the driver ran\n%s\nwant\n%s", got, want)
	}
	if fi, err := os.Stat(filepath.Join(s.Out, LogDir)); err != nil || !fi.IsDir() {
		t.Errorf("the driver did not make the log folder: %v", err)
	}
	merge, err := os.ReadFile(record + ".stdin2")
	if err != nil {
		t.Fatal(err)
	}
	name, err := JobName(s.GridHash, s.Out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(merge, []byte("#!/bin/bash\n#SBATCH --job-name="+name+"-merge\n")) {
		t.Errorf("the merge job's script starts\n%s", merge)
	}
	// The merge job's script, run, merges out.
	mergePath := filepath.Join(base, "merge.sh")
	if err := os.WriteFile(mergePath, merge, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(record)
	cmd := exec.Command("bash", mergePath)
	cmd.Env = append(os.Environ(), "RECORD="+record)
	if outb, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the merge script: %v\n%s", err, outb)
	}
	rec, _ := os.ReadFile(record)
	if want := "arg sweep\narg merge\narg " + q(s.Out) + "\n"; string(rec) != want {
		t.Errorf("the merge script ran\n%s\nwant\n%s", rec, want)
	}

	// A merge job that fails (sbatch --wait exits non-zero) fails the
	// driver, saying where the log is.
	os.Remove(record + ".n")
	cmd = exec.Command("bash", path, "--wait")
	cmd.Env = append(os.Environ(), "PATH="+tools+":"+os.Getenv("PATH"), "RECORD="+record, "FAIL_SBATCH=2")
	if outb, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(outb), "the merge job failed; see its log in "+filepath.Join(s.Out, LogDir)) {
		t.Errorf("bash SCRIPT --wait with a failing merge job: %v, %s; want a failure naming the logs", err, outb)
	}

	// While jobs of the sweep are queued, the driver submits nothing.
	os.Remove(record)
	cmd = exec.Command("bash", path)
	cmd.Env = append(os.Environ(), "PATH="+tools+":"+os.Getenv("PATH"), "RECORD="+record, "FAKE_SQUEUE=123_[2-3]\n124\n")
	if outb, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(outb), "jobs of this sweep are queued or running (123_[2-3] 124)") {
		t.Errorf("bash SCRIPT with the sweep's jobs queued: %v, %s; want a refusal", err, outb)
	}
	if _, err := os.Stat(record); err == nil {
		t.Errorf("the driver submitted jobs while the sweep's were queued")
	}

	// Anything but --wait is refused.
	cmd = exec.Command("bash", path, "--now")
	cmd.Env = append(os.Environ(), "PATH="+tools+":"+os.Getenv("PATH"), "RECORD="+record)
	if outb, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(outb), "usage:") {
		t.Errorf("bash SCRIPT --now: %v, %s; want a usage error", err, outb)
	}
}

func TestParseTimeLimit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  error
	}{
		{"90m", 90 * time.Minute, nil},
		{"1h30m", 90 * time.Minute, nil},
		{"45s", 45 * time.Second, nil},
		{"60", time.Hour, nil},
		{"5:30", 5*time.Minute + 30*time.Second, nil},
		{"1:02:03", time.Hour + 2*time.Minute + 3*time.Second, nil},
		{"2-0", 48 * time.Hour, nil},
		{"1-2:03", 26*time.Hour + 3*time.Minute, nil},
		{"1-02:03:04", 26*time.Hour + 3*time.Minute + 4*time.Second, nil},
		{"365-0", MaxTimeLimit, nil},
		{"", 0, units.ErrSyntax},
		{"0", 0, units.ErrRange},
		{"0s", 0, units.ErrRange},
		{"-5m", 0, units.ErrRange},
		{"-5", 0, units.ErrSyntax},
		{"1.5s", 0, units.ErrSyntax},
		{"1:2:3:4", 0, units.ErrSyntax},
		{"1-2:3:4:5", 0, units.ErrSyntax},
		{"1::3", 0, units.ErrSyntax},
		{"a:b", 0, units.ErrSyntax},
		{"366-0", 0, units.ErrRange},
		{"9999999999999999999", 0, units.ErrRange},
		{"8761h", 0, units.ErrRange},
		{"forever", 0, units.ErrSyntax},
	} {
		got, err := ParseTimeLimit("--time", c.in)
		if c.err == nil {
			if err != nil || got != c.want {
				t.Errorf("ParseTimeLimit(%q) = %v, %v; want %v", c.in, got, err, c.want)
			}
			continue
		}
		if !errors.Is(err, c.err) || !strings.Contains(err.Error(), "--time") {
			t.Errorf("ParseTimeLimit(%q) = %v, %v; want an error wrapping %v naming --time", c.in, got, err, c.err)
		}
	}
}

func TestSlurmTime(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second:                   "0-00:00:01",
		90 * time.Minute:              "0-01:30:00",
		26*time.Hour + 61*time.Second: "1-02:01:01",
		MaxTimeLimit:                  "365-00:00:00",
	} {
		if got := slurmTime(d); got != want {
			t.Errorf("slurmTime(%v) = %s, want %s", d, got, want)
		}
	}
}

// TestJobName: the jobs' name carries the grid's hash and its output
// folder's, so one grid run into two folders gives two names (the script
// refuses to submit only beside jobs writing its own folder).
func TestJobName(t *testing.T) {
	for _, tc := range []struct{ hash, out, want string }{
		{"FEDCBA9876543210", "/shared/runs/example", "neuronsim-sweep-fedcba987654-f9e862c8"},
		{"FEDCBA9876543210", "/results/example", "neuronsim-sweep-fedcba987654-967f968b"},
	} {
		if got, err := JobName(tc.hash, tc.out); err != nil || got != tc.want {
			t.Errorf("JobName(%q, %q) = %q, %v; want %q", tc.hash, tc.out, got, err, tc.want)
		}
	}
	for _, bad := range [][2]string{{"short", "/out"}, {"0123456789a-bcdef", "/out"}, {"0123456789abcdef", ""}} {
		if got, err := JobName(bad[0], bad[1]); err == nil {
			t.Errorf("JobName(%q, %q) = %q, want an error", bad[0], bad[1], got)
		}
	}
}
