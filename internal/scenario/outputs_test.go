package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/sim/fabric"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

// small is a fast system: two cayman devices, ready at once.
const small = "system: {arch: cayman, devices: 2, boot: false, reset: false, buffer_bytes: 1M}\n"

// runDoc parses and runs a scenario in dir.
func runDoc(t *testing.T, dir, doc string, opt Options) (*Summary, error) {
	t.Helper()
	p, err := Parse(filepath.Join(dir, "x.yaml"), []byte(doc))
	require.NoError(t, err)
	opt.OutDir = dir
	return p.Run(opt)
}

// countBuilds makes the runs of the test count the systems they build
// (none, when a precheck refuses the run) into the int it returns.
func countBuilds(t *testing.T) *int {
	t.Helper()
	built := new(int)
	buildCluster = func(cfg cluster.Config) (*cluster.Cluster, error) {
		*built++
		return cluster.New(cfg)
	}
	t.Cleanup(func() { buildCluster = cluster.New })
	return built
}

// noTemps asserts that dir holds no temporary output file.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range es {
		assert.False(t, output.IsTemp(e.Name()), "temporary file %s left", e.Name())
	}
}

// TestFailedRunKeepsPreviousOutputs: a run that fails part-way leaves the
// outputs of the run before it byte for byte (no 24-byte pcap beside an
// older sweep.json), no temporary file, and a report that says it failed
// and lists only itself.
func TestFailedRunKeepsPreviousOutputs(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	outs := "outputs: {json: sweep.json, plot: busbw.png, pcap: fabric.pcap}\n"
	good := "name: good\n" + small + "steps:\n  - sweep: {op: all_reduce, min: 4K, max: 16K, factor: 2}\n" + outs
	_, err := runDoc(t, dir, good, Options{})
	require.NoError(t, err)
	before := readDir(t, dir)
	require.Contains(t, before, "fabric.pcap")
	require.Greater(t, len(before["fabric.pcap"]), 24)

	bad := "name: bad\n" + small + "steps:\n  - sweep: {op: all_gather, min: 8K, max: 8K}\n" +
		"  - csr_read: {offset: 0x30FA0024, expect: 7}\n" + outs
	sum, err := runDoc(t, dir, bad, Options{})
	require.Error(t, err)
	after := readDir(t, dir)
	for _, f := range []string{"sweep.json", "busbw.png", "fabric.pcap"} {
		assert.True(t, bytes.Equal(before[f], after[f]), "%s of the earlier run is untouched", f)
	}
	noTemps(t, dir)
	report := string(after["report.txt"])
	assert.True(t, strings.HasPrefix(report, "status: FAILED: "), "the report says it failed first:\n%s", report)
	assert.NotContains(t, report, "sweep.json")
	assert.Equal(t, []string{filepath.Join(dir, "report.txt")}, sum.Outputs)
}

// TestReportListsOutputs: a complete run's report says so and lists every
// file the run wrote with its size.
func TestReportListsOutputs(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	doc := "name: good\n" + small + "steps:\n  - sweep: {op: all_reduce, min: 4K, max: 8K, factor: 2}\n  - snapshot: {save: end.snap}\n" +
		"outputs: {json: s.json, plot: p.png, pcap: f.pcap, trace: t.json}\n"
	sum, err := runDoc(t, dir, doc, Options{})
	require.NoError(t, err)
	report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(report), "status: complete\n"))
	names := []string{"end.snap", "f.pcap", "t.json", "s.json", "p.png"}
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		require.NoError(t, err)
		assert.Contains(t, string(report), fmt.Sprintf("\n  %s  %d bytes\n", n, fi.Size()))
	}
	assert.Len(t, sum.Outputs, len(names)+1)
	assert.Equal(t, filepath.Join(dir, "report.txt"), sum.Outputs[len(sum.Outputs)-1], "the report is written last")
	noTemps(t, dir)
}

// TestSnapshotSaveIsAtomic: a run that saves a snapshot and then fails
// leaves the snapshot file of an earlier run as it was.
func TestSnapshotSaveIsAtomic(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	_, err := runDoc(t, dir, "name: a\n"+small+"steps:\n  - snapshot: {save: sys.snap}\n", Options{})
	require.NoError(t, err)
	old, err := os.ReadFile(filepath.Join(dir, "sys.snap"))
	require.NoError(t, err)
	_, err = runDoc(t, dir, "name: b\n"+small+"steps:\n  - dma_copy: {bytes: 4K}\n  - snapshot: {save: sys.snap}\n"+
		"  - csr_read: {offset: 0x30FA0024, expect: 7}\n", Options{})
	require.Error(t, err)
	now, err := os.ReadFile(filepath.Join(dir, "sys.snap"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(old, now), "the earlier snapshot is untouched")
	noTemps(t, dir)
}

// TestPrecheckBeforeBringUp: what can be known before the system is built
// is found before it is: no device is brought up, no report is written.
func TestPrecheckBeforeBringUp(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	snapDir := t.TempDir()
	// A snapshot of a one-device system, for the mismatch.
	one, err := fabric.New(fabric.Config{Generation: 3, Devices: 1, Ready: true})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, one.Save(&b))
	require.NoError(t, os.WriteFile(filepath.Join(snapDir, "one.snap"), b.Bytes(), 0o644))
	bad := append([]byte(nil), b.Bytes()...)
	bad[len(bad)-10] ^= 1
	require.NoError(t, os.WriteFile(filepath.Join(snapDir, "flip.snap"), bad, 0o644))

	// 20000 reciprocals of 64 Ki elements on cayman's 960 MHz DVE: at least
	// 10.92 s of device time, more than an exec step may run.
	slow := filepath.Join(snapDir, "slow.s")
	require.NoError(t, os.WriteFile(slow, []byte(".engine dve\n"+strings.Repeat("reciprocal dst=sbuf[0:128,0]:bf16[256,256] src0=sbuf[0:128,0x10000]:bf16[256,256]\n", 20000)+"nop engine=dve last\n"), 0o644))

	for _, tc := range []struct {
		name, steps, outputs string
		opt                  Options
		want                 string
	}{
		{"exec that must take longer than allowed", "  - validate: {program: " + slow + "}\n  - exec: {program: " + slow + "}\n", "", Options{},
			"steps[1] (exec): " + slow + ": the program takes at least 10.922666681042s of device time on cayman (its records' costs), more than the 10s an exec step may run: it cannot finish"},
		{"program file missing", "  - exec: {program: no-such.s}\n", "", Options{}, "no-such.s: no such file or directory"},
		{"program does not assemble", "  - validate: {source: \"frobnicate x\"}\n", "", Options{}, "steps[0] (validate)"},
		{"output dir under a file", "", "outputs: {dir: " + filepath.Join(file, "out") + "}\n", Options{OutDir: "-"}, "outputs.dir"},
		{"output in a missing directory", "  - sweep: {op: all_reduce, min: 4K, max: 4K}\n", "outputs: {json: nope/s.json}\n", Options{}, "outputs.json: output"},
		{"output is a directory", "", "outputs: {pcap: " + snapDir + "}\n", Options{}, "outputs.pcap: output"},
		{"two outputs, one file", "", "outputs: {pcap: r.txt, report: r.txt}\n", Options{}, "r.txt: the same file as outputs.report "},
		{"snapshot save in a missing directory", "  - snapshot: {save: no/dir/s.snap}\n", "", Options{}, "steps[0] (snapshot).save"},
		{"restore file missing", "  - snapshot: {restore: " + filepath.Join(snapDir, "none.snap") + "}\n", "", Options{}, "steps[0] (snapshot): restore"},
		{"restore of a damaged file", "  - dma_copy: {bytes: 4K}\n  - snapshot: {restore: " + filepath.Join(snapDir, "flip.snap") + "}\n", "", Options{}, "steps[1] (snapshot): restore " + filepath.Join(snapDir, "flip.snap") + ": fabric snapshot: checksum mismatch"},
		{"restore of another system", "  - snapshot: {restore: " + filepath.Join(snapDir, "one.snap") + "}\n", "", Options{}, "system.devices: 2, but the snapshot " + filepath.Join(snapDir, "one.snap") + " holds a system with 1 device"},
		{"memory above the limit", "  - dma_copy: {bytes: 1M}\n", "", Options{MemLimit: memlimit.Limit{Bytes: 1 << 20, Source: "test"}}, "steps[0] (dma_copy): a DMA copy of 1 MiB needs about 10 MiB of memory, more than the limit of 1 MiB (test)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built := countBuilds(t)
			out := t.TempDir()
			opt := tc.opt
			doc := "name: x\n" + small + "steps:\n" + tc.steps + tc.outputs
			p, err := Parse(filepath.Join(out, "x.yaml"), []byte(doc))
			require.NoError(t, err)
			if opt.OutDir == "" {
				opt.OutDir = out
			} else {
				opt.OutDir = ""
			}
			_, err = p.Run(opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Zero(t, *built, "no device is brought up")
			assert.NoFileExists(t, filepath.Join(out, "report.txt"))
			noTemps(t, out)
		})
	}
}

// TestOutputsThroughLinks: two outputs that are one file through a
// symbolic link — the output's own (od/l.png -> a.json, even before a.json
// exists), a linked directory, a chain of links — or a hard link are
// refused before the system is built, naming both keys and the file; an
// output that is a link to a file no other output names is written where
// the link leads, the link kept.
func TestOutputsThroughLinks(t *testing.T) {
	sweep := "  - sweep: {op: all_reduce, min: 4K, max: 4K}\n"
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, od string)
		outputs string
		want    string // "": the run succeeds
	}{
		{"plot a link to the json", func(t *testing.T, od string) {
			require.NoError(t, os.Symlink("a.json", filepath.Join(od, "l.png")))
		}, "{json: a.json, plot: l.png}", "outputs.plot OD/l.png: the same file as outputs.json OD/a.json (both are OD/a.json)"},
		{"through a chain of links", func(t *testing.T, od string) {
			require.NoError(t, os.Symlink("m", filepath.Join(od, "l.png")))
			require.NoError(t, os.Symlink("a.json", filepath.Join(od, "m")))
		}, "{json: a.json, plot: l.png}", "outputs.plot OD/l.png: the same file as outputs.json OD/a.json"},
		{"through a linked directory", func(t *testing.T, od string) {
			require.NoError(t, os.Mkdir(filepath.Join(od, "sub"), 0o755))
			require.NoError(t, os.Symlink("sub", filepath.Join(od, "subl")))
		}, "{json: subl/x.json, plot: sub/x.json}", "outputs.plot OD/sub/x.json: the same file as outputs.json OD/subl/x.json (both are OD/sub/x.json)"},
		{"a hard link", func(t *testing.T, od string) {
			require.NoError(t, os.WriteFile(filepath.Join(od, "a.json"), []byte("earlier"), 0o644))
			require.NoError(t, os.Link(filepath.Join(od, "a.json"), filepath.Join(od, "h.png")))
		}, "{json: a.json, plot: h.png}", "outputs.plot OD/h.png: the same file as outputs.json OD/a.json"},
		{"a link to the report", func(t *testing.T, od string) {
			require.NoError(t, os.Symlink("report.txt", filepath.Join(od, "p.pcap")))
		}, "{pcap: p.pcap}", "outputs.pcap OD/p.pcap: the same file as outputs.report OD/report.txt"},
		{"a link to an unrelated file is written through", func(t *testing.T, od string) {
			require.NoError(t, os.Mkdir(filepath.Join(od, "elsewhere"), 0o755))
			require.NoError(t, os.Symlink("elsewhere/p.png", filepath.Join(od, "l.png")))
		}, "{json: a.json, plot: l.png}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built := countBuilds(t)
			od, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			tc.setup(t, od)
			p, err := Parse(filepath.Join(od, "x.yaml"), []byte("name: x\n"+small+"steps:\n"+sweep+"outputs: "+tc.outputs+"\n"))
			require.NoError(t, err)
			_, err = p.Run(Options{OutDir: od})
			if tc.want == "" {
				require.NoError(t, err)
				fi, err := os.Lstat(filepath.Join(od, "l.png"))
				require.NoError(t, err)
				assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is kept")
				b, err := os.ReadFile(filepath.Join(od, "elsewhere", "p.png"))
				require.NoError(t, err)
				assert.True(t, bytes.HasPrefix(b, []byte("\x89PNG")), "the plot is where the link leads")
				b, err = os.ReadFile(filepath.Join(od, "a.json"))
				require.NoError(t, err)
				assert.True(t, bytes.HasPrefix(b, []byte("{")), "a.json is the JSON")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), strings.ReplaceAll(tc.want, "OD", od))
			assert.Contains(t, err.Error(), "nothing was run")
			assert.Zero(t, *built, "refused before the system is built")
			assert.NoFileExists(t, filepath.Join(od, "report.txt"))
			noTemps(t, od)
		})
	}
}

// TestBufferTooSmallAtParse: a collective or sweep that does not fit in
// system.buffer_bytes is refused when the file is read, at its line.
func TestBufferTooSmallAtParse(t *testing.T) {
	for _, tc := range []struct{ step, want string }{
		{"collective: {op: all_reduce, size: 1M}", "x.yaml:4:40: steps[0].collective.size: it needs"},
		{"sweep: {op: all_reduce, min: 4K, max: 1M, factor: 2}", "steps[0].sweep.max: the sweep's largest size needs"},
	} {
		_, err := Parse("x.yaml", []byte("name: x\n"+small+"steps:\n  - "+tc.step+"\n"))
		require.Error(t, err, tc.step)
		assert.ErrorIs(t, err, ErrStrict)
		assert.Contains(t, err.Error(), tc.want)
		assert.Contains(t, err.Error(), "system.buffer_bytes is 1048576 (1 MiB)")
	}
}

// TestCaptureAndTraceLimits: outputs.pcap_max and trace_max stop the
// capture and the trace cleanly: the files stay within them, parse, and
// the report notes the stop.
func TestCaptureAndTraceLimits(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	doc := "name: x\n" + small + "steps:\n  - dve_load: {devices: [0], cores: [0]}\n  - sweep: {op: all_reduce, min: 4K, max: 64K, factor: 2}\n" +
		"outputs: {pcap: f.pcap, pcap_max: 16K, trace: t.json, trace_max: 8K}\n"
	_, err := runDoc(t, dir, doc, Options{})
	require.NoError(t, err)
	for _, bad := range []string{"{pcap: f.pcap, pcap_max: 10}", "{trace: t.json, trace_max: 100}"} {
		_, err := Parse("x.yaml", []byte("name: x\n"+small+"outputs: "+bad+"\n"))
		assert.ErrorContains(t, err, "x.yaml:3:", bad)
	}
	pcap, err := os.ReadFile(filepath.Join(dir, "f.pcap"))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(pcap), 16<<10)
	pk, err := capture.ReadAll(bytes.NewReader(pcap))
	require.NoError(t, err, "the pcap stays valid")
	assert.NotEmpty(t, pk)
	tr, err := os.ReadFile(filepath.Join(dir, "t.json"))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(tr), 8<<10)
	var doc2 struct {
		Metadata map[string]string `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(tr, &doc2))
	assert.Contains(t, doc2.Metadata["stopped"], "size limit")
	report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "pcap f.pcap: stopped at outputs.pcap_max (16KiB) after 227 packets; 13 not recorded")
	assert.Contains(t, string(report), "trace t.json: stopped at outputs.trace_max (8KiB)")
}

// TestRestoreTakesTheSystem: a scenario run on a restored snapshot need not
// describe the system; what it gives must agree; a damaged snapshot is
// blamed, not the scenario.
func TestRestoreTakesTheSystem(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	_, err := runDoc(t, dir, "name: a\n"+small+"steps:\n  - snapshot: {save: sys.snap}\n", Options{})
	require.NoError(t, err)
	path := filepath.Join(dir, "sys.snap")
	base, err := LoadSnapshot(path, fabric.LoadOptions{})
	require.NoError(t, err)
	p, err := ParseWith("more.yaml", []byte("name: more\nsteps:\n  - dma_copy: {bytes: 4K}\n"), base)
	require.NoError(t, err)
	out := t.TempDir()
	sum, err := p.Run(Options{OutDir: out})
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Devices)
	report, err := os.ReadFile(filepath.Join(out, "report.txt"))
	require.NoError(t, err)
	// The report numbers the file's steps as its errors do (steps[0] is
	// "step 0"); the restore the command line added is named, not counted.
	assert.Contains(t, string(report), "\nthe restore of "+path+": snapshot (from the command line)\n")
	assert.Contains(t, string(report), "\nstep 0: dma_copy\n")
	_, err = p.Run(Options{OutDir: t.TempDir()})
	assert.ErrorContains(t, err, "has been run on already", "a restored system is run on once")

	base, err = LoadSnapshot(path, fabric.LoadOptions{})
	require.NoError(t, err)
	_, err = ParseWith("more.yaml", []byte("name: more\nsystem: {arch: cayman, devices: 4}\n"), base)
	require.ErrorIs(t, err, ErrStrict)
	assert.Contains(t, err.Error(), "more.yaml:2:33: system.devices: 4, but the snapshot "+path+" holds a system with 2 devices")
	_, err = ParseWith("more.yaml", []byte("name: more\nsystem: {arch: sunda}\n"), base)
	assert.ErrorContains(t, err, "system.arch: sunda, but the snapshot")
	_, err = Parse("more.yaml", []byte("name: more\n"))
	assert.ErrorContains(t, err, `missing key "system"`)
	_, err = Parse("more.yaml", []byte("name: more\nsystem: {devices: 2}\n"))
	assert.ErrorContains(t, err, `more.yaml:2:9: system: missing key "arch"`)
	p, err = ParseWith("more.yaml", []byte("name: more\nsystem: {devices: 2, buffer_bytes: 2M}\n"), base)
	require.NoError(t, err, "a restore needs no arch")
	_, err = ParseWith("more.yaml", []byte("name: more\nsystem: {devices: 2, seed: 4}\n"), base)
	assert.ErrorContains(t, err, "more.yaml:2:28: system.seed: 4: mode timing (the snapshot "+path+"'s) moves no data", "the snapshot's system is timing-only: a seed seeds nothing")

	p, err = ParseWith("more.yaml", []byte("name: more\nsteps:\n  - csr_read: {offset: 0x30FA0024, expect: 7}\n"), base)
	require.NoError(t, err)
	_, err = p.Run(Options{OutDir: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more.yaml: steps[0] (csr_read)", "the file's own step numbers, the restore not counted")

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)-10] ^= 1
	flip := filepath.Join(dir, "flip.snap")
	require.NoError(t, os.WriteFile(flip, b, 0o644))
	_, err = LoadSnapshot(flip, fabric.LoadOptions{})
	require.ErrorIs(t, err, fabric.ErrSnapshot)
	assert.Contains(t, err.Error(), "snapshot "+flip+": fabric snapshot: checksum mismatch")
}

// TestSweepKeepsFinishedSizes: a sweep step stopped by a size that does
// not finish in the 10 s of device time a collective may take keeps the
// sizes before it, as fabric sweep does (cmd's TestSweepKeepsFinishedSizes):
// the report shows their rows under "# incomplete: …" and, when the step is
// the last sweep step (the one outputs.json is of), the json is written
// with them, marked "neuronsim_incomplete"; the plot and the pcap are not
// written (earlier files stay), and the run fails naming the size. A
// failed sweep that is not the last sweep step writes no json. Until
// 2026-12-07 such a step dropped its finished rows.
func TestSweepKeepsFinishedSizes(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	// 100 kB/s links: 64K takes 0.66 s, 256K 2.6 s, 1M would take 10.5 s.
	const sys = "system: {arch: cayman, devices: 2, boot: false, reset: false, mode: timing, buffer_bytes: 16M, timing: {link_bw_gbs: 0.0001}}\n"
	const slow = "  - sweep: {op: all_reduce, min: 64K, max: 4M, factor: 4}\n"
	const outs = "outputs: {json: s.json, plot: p.png, pcap: f.pcap}\n"
	for _, tc := range []struct {
		name  string
		steps string
		json  bool // the json is of the failed step
	}{
		{"the last sweep step", "  - sweep: {op: all_reduce, min: 4K, max: 8K, factor: 2}\n" + slow, true},
		{"a sweep step before another", slow + "  - sweep: {op: all_reduce, min: 4K, max: 8K, factor: 2}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"s.json", "p.png", "f.pcap"} {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("earlier"), 0o644))
			}
			sum, err := runDoc(t, dir, "name: slow\n"+sys+"steps:\n"+tc.steps+outs, Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "1048576 bytes: enc: all_reduce did not finish: rank 0 not done after 10s of device time")
			kept := "(the rows of the sizes before it are in the report; outputs.plot, outputs.pcap not written)"
			if tc.json {
				kept = "(the rows of the sizes before it are in the report and written to outputs.json (s.json), marked incomplete (neuronsim_incomplete); outputs.plot, outputs.pcap not written)"
			}
			assert.Contains(t, err.Error(), kept)
			note := "the sweep stopped at 1048576 bytes (1 size after it not run), which failed: "
			after := readDir(t, dir)
			report := string(after["report.txt"])
			assert.True(t, strings.HasPrefix(report, "status: FAILED: "), report)
			assert.Contains(t, report, "# incomplete: "+note)
			assert.Regexp(t, `\n +65536 +16384 +fp32 `, report, "the finished sizes' rows")
			assert.Regexp(t, `\n +262144 +65536 +fp32 `, report)
			for _, f := range []string{"p.png", "f.pcap"} {
				assert.Equal(t, "earlier", string(after[f]), "%s of the earlier run is untouched", f)
			}
			noTemps(t, dir)
			last := sum.Sweeps[len(sum.Sweeps)-1]
			assert.Len(t, last.Rows, 2)
			assert.Contains(t, last.Extra[cluster.IncompleteKey], note)
			if !tc.json {
				assert.Equal(t, "earlier", string(after["s.json"]))
				assert.Contains(t, report, "(no other output of this run was kept;")
				assert.Equal(t, []string{filepath.Join(dir, "report.txt")}, sum.Outputs)
				return
			}
			assert.Contains(t, report, "(of its other outputs only s.json was kept, the failed sweep's finished sizes marked incomplete;")
			assert.Contains(t, report, fmt.Sprintf("\n  s.json  %d bytes\n", len(after["s.json"])))
			assert.Equal(t, []string{filepath.Join(dir, "s.json"), filepath.Join(dir, "report.txt")}, sum.Outputs)
			var rep struct {
				Results    []map[string]any `json:"results"`
				Incomplete string           `json:"neuronsim_incomplete"`
			}
			require.NoError(t, json.Unmarshal(after["s.json"], &rep))
			assert.Len(t, rep.Results, 2)
			assert.Contains(t, rep.Incomplete, note)
			assert.Contains(t, rep.Incomplete, "10s of device time")
		})
	}
}
