package sweep

// Running a shard into a results folder:
//
//	DIR/grid.json           the manifest: the grid's hash, outputs and points
//	DIR/points/<hash>.json  one result per point (a row, or the error)
//	DIR/host/<hash>.json    the host time the point took (never merged)
//
// Every file is written atomically (internal/output: a temporary file in
// the same folder renamed onto its name), so a killed task leaves at most
// hidden temporary files, which nothing reads.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/inputfile"
	"github.com/neuronsim/neuronsim/internal/jsonkeys"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// MaxJobs bounds -j, the parallel workers of a run.
const MaxJobs = 256

// Folder layout.
const (
	ManifestName = "grid.json"
	PointsDir    = "points"
	HostDir      = "host"
	MergedDir    = "merged"
)

// MaxResultBytes is the largest result file read.
const MaxResultBytes = 1 << 20

// manifest is DIR/grid.json.
type manifest struct {
	Format  int     `json:"format"`
	Grid    string  `json:"grid"`
	Outputs Outputs `json:"outputs"`
	Points  []Point `json:"points"`
}

// Result is a point's result file, DIR/points/<hash>.json: the point and
// its row, or the error that stopped it. It holds nothing that depends on
// the run (no time of day, host or duration), so the same point gives the
// same bytes wherever it ran.
type Result struct {
	Format int    `json:"format"`
	Point  Point  `json:"point"`
	Row    *Row   `json:"row,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Row is a point's nccom-test row, with the exact simulated time.
type Row struct {
	Count     int64   `json:"count"` // elements
	TimePS    uint64  `json:"time_ps"`
	TimeUS    float64 `json:"time_us"`
	AlgBW     float64 `json:"algbw"` // GB/s of 1e9 B/s
	BusBW     float64 `json:"busbw"`
	Algorithm string  `json:"algorithm"` // as run (auto resolved)
}

// nccom returns the row as nccom-test's.
func (r *Row) nccom(p *Point) nccom.Row {
	return nccom.Row{Size: p.Size, Count: r.Count, Type: p.Dtype, TimeUS: r.TimeUS, AlgBW: r.AlgBW, BusBW: r.BusBW, Algorithm: r.Algorithm}
}

// RunOptions are a run's.
type RunOptions struct {
	// Dir is the results folder, created if missing.
	Dir string
	// Shard is the part of the grid to run (All: everything).
	Shard Shard
	// Jobs is the number of points run at once, 1..MaxJobs.
	Jobs int
	// Log, when not nil, gets a line per point run.
	Log io.Writer
}

// RunStats is what a run did.
type RunStats struct {
	Points  int // the shard's
	Ran     int
	Skipped int // already done: a valid result file with a row
	Failed  int // ran and failed (their result files hold the errors)
}

// Run runs the points of opt.Shard that have no valid result in opt.Dir
// yet. A folder of another grid is refused before anything is written
// (ErrFolder). A point whose result file is missing, malformed (a kill) or
// holds an error is run again. Failed points make the error wrap
// ErrIncomplete, after every other point has run.
func Run(g *Grid, opt RunOptions) (RunStats, error) {
	var st RunStats
	if opt.Jobs < 1 || opt.Jobs > MaxJobs {
		return st, fmt.Errorf("sweep: -j %d: outside 1..%d: %w", opt.Jobs, MaxJobs, ErrShard)
	}
	idx, err := g.Shard(opt.Shard)
	if err != nil {
		return st, err
	}
	st.Points = len(idx)
	if err := g.checkMemory(idx, opt.Jobs); err != nil {
		return st, err
	}
	if err := g.prepare(opt.Dir); err != nil {
		return st, err
	}
	todo, skipped := g.notDone(opt.Dir, idx)
	st.Skipped = skipped
	if err := g.refuseLinks(opt.Dir, todo); err != nil {
		return st, err
	}
	g.removeStaleTemps(opt.Dir, todo)
	r := &shardRunner{g: g, opt: opt, st: &st}
	r.runAll(todo)
	return st, r.err()
}

// checkMemory refuses to run jobs of the points idx at once when that many
// of the largest could need more memory than the limit.
func (g *Grid) checkMemory(idx []int, jobs int) error {
	var peak uint64
	for _, i := range idx {
		peak = max(peak, g.specs[i].mem())
	}
	if err := memLimit().Check(fmt.Sprintf("-j %d: %d points at once of up to %s each", jobs, jobs, memlimit.Human(peak)), peak*uint64(jobs)); err != nil {
		return fmt.Errorf("sweep: %w; lower -j", err)
	}
	return nil
}

// notDone returns the points of idx that have no valid result with a row
// in dir yet, in order, and how many do.
func (g *Grid) notDone(dir string, idx []int) (todo []int, done int) {
	for _, i := range idx {
		if r, err := readResult(dir, &g.points[i]); err == nil && r.Row != nil {
			done++
			continue
		}
		todo = append(todo, i)
	}
	return todo, done
}

// shardRunner runs a shard's points on opt.Jobs workers and gathers what
// they did into st.
type shardRunner struct {
	g   *Grid
	opt RunOptions

	mu       sync.Mutex // guards the fields below
	st       *RunStats
	firstErr error    // the first result that could not be written: no point starts after it
	failed   []string // the points that failed, a line each
}

// runAll runs the points todo, at most opt.Jobs at once, and returns when
// every point started has ended. After a result could not be written, no
// other point starts.
func (r *shardRunner) runAll(todo []int) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(r.opt.Jobs, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r.runOne(i)
			}
		}()
	}
	for _, i := range todo {
		if r.stopped() {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
}

// stopped reports whether a result could not be written.
func (r *shardRunner) stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstErr != nil
}

// runOne runs point i, writes its result and host time, and records the
// outcome.
func (r *shardRunner) runOne(i int) {
	start, cpu := time.Now(), cpuTime()
	row, perr := r.g.runPoint(i)
	host := time.Since(start)
	werr := r.g.writeResult(r.opt.Dir, i, row, perr, hostTime{Seconds: host.Seconds(), CPUSeconds: (cpuTime() - cpu).Seconds()})
	r.record(i, host, perr, werr)
}

// record counts point i's run, which took host and failed with perr (nil:
// it did not), and whose result's writing failed with werr; with
// opt.Log, it logs the point's line.
func (r *shardRunner) record(i int, host time.Duration, perr, werr error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Ran++
	if perr != nil {
		r.st.Failed++
		r.failed = append(r.failed, fmt.Sprintf("point %d (%s): %v", i, r.g.points[i].Hash, perr))
	}
	if werr != nil && r.firstErr == nil {
		r.firstErr = werr
	}
	if r.opt.Log != nil {
		status := "ok"
		if perr != nil {
			status = "FAILED: " + perr.Error()
		}
		fmt.Fprintf(r.opt.Log, "point %d %s: %.1f ms: %s\n", i, r.g.points[i].Hash, host.Seconds()*1e3, status)
	}
}

// err is the run's error once every point has ended: the first result
// that could not be written or, when points failed, the list of them,
// wrapping ErrIncomplete.
func (r *shardRunner) err() error {
	if r.firstErr != nil {
		return r.firstErr
	}
	if r.st.Failed > 0 {
		return fmt.Errorf("sweep: %d of %d points failed (their result files hold the errors; a rerun retries them):\n  %s: %w",
			r.st.Failed, r.st.Ran, strings.Join(r.failed, "\n  "), ErrIncomplete)
	}
	return nil
}

// prepare makes the folder and checks or writes its manifest: a folder
// whose manifest is another grid's, or unreadable, is refused.
func (g *Grid) prepare(dir string) error {
	if dir == "" {
		return fmt.Errorf("sweep: no results folder (--out): %w", ErrFolder)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sweep: results folder: %w: %w", err, ErrFolder)
	}
	path := filepath.Join(dir, ManifestName)
	m, err := readManifest(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data, err := g.manifestJSON()
		if err != nil {
			return err
		}
		// Tasks starting together, of this grid or of others, race to
		// make it: it is made whole or not at all (output.WriteNew), and
		// the one that stands must be this grid's.
		if err := output.WriteNew(path, data); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("sweep: %w: %w", err, ErrFolder)
		}
		if m, err = readManifest(dir); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if m.Grid != g.hash {
		return fmt.Errorf("sweep: %s: written by another grid (hash %s; %s is %s): use another --out, nothing was changed: %w", path, m.Grid, g.File, g.hash, ErrFolder)
	}
	// The same hashes, but a field no hash covers may have been edited:
	// merge reads the manifest's points, this run the grid's, and a point
	// that differs would be done for the one and missing for the other.
	for i := range m.Points {
		if !reflect.DeepEqual(m.Points[i], g.points[i]) {
			return fmt.Errorf("sweep: %s: point %d is not the grid's (the file was edited?): nothing was changed: %w", path, i, ErrFolder)
		}
	}
	for _, d := range []string{PointsDir, HostDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("sweep: results folder: %w: %w", err, ErrFolder)
		}
	}
	return nil
}

// manifestJSON is DIR/grid.json: the manifest with one point per line
// (100,000 points take about 40 MB).
func (g *Grid) manifestJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		Format  int     `json:"format"`
		Grid    string  `json:"grid"`
		Outputs Outputs `json:"outputs"`
	}{Format, g.hash, g.Outputs})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1]) // without its closing brace
	b.WriteString(`,"points":[`)
	for i := range g.points {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n")
		p, err := json.Marshal(&g.points[i])
		if err != nil {
			return nil, err
		}
		b.Write(p)
	}
	b.WriteString("\n]}\n")
	return b.Bytes(), nil
}

// readManifest reads and checks DIR/grid.json: its format, every point's
// hash against its inputs and the grid's hash against the points.
func readManifest(dir string) (*manifest, error) {
	path := filepath.Join(dir, ManifestName)
	data, err := inputfile.Read(path, 1<<28, "a sweep manifest is at most 256 MiB")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("sweep: %w: %w", err, ErrFolder)
	}
	var m manifest
	if err := jsonkeys.Unique(data); err != nil {
		return nil, fmt.Errorf("sweep: %s: not a sweep manifest: %v: %w", path, err, ErrFolder)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("sweep: %s: not a sweep manifest: %v: %w", path, err, ErrFolder)
	}
	if m.Format != Format && m.Format != formatOneNode {
		return nil, fmt.Errorf("sweep: %s: format %d; this neuronsim reads formats %d and %d: %w", path, m.Format, formatOneNode, Format, ErrFolder)
	}
	if len(m.Points) > MaxPoints {
		return nil, fmt.Errorf("sweep: %s: %d points; at most %d: %w", path, len(m.Points), MaxPoints, ErrFolder)
	}
	for i := range m.Points {
		if err := upgradePoint(m.Format, &m.Points[i]); err != nil {
			return nil, fmt.Errorf("sweep: %s: point %d: %v: %w", path, i, err, ErrFolder)
		}
	}
	g := &Grid{Outputs: m.Outputs, points: m.Points}
	for i := range m.Points {
		p := &m.Points[i]
		if p.Index != i || p.Hash != hashHex(p.canonical()) {
			return nil, fmt.Errorf("sweep: %s: point %d: its hash does not match its inputs (the file was edited?): %w", path, i, ErrFolder)
		}
		if err := p.checkDerived(); err != nil {
			return nil, fmt.Errorf("sweep: %s: point %d: %v (the file was edited?): %w", path, i, err, ErrFolder)
		}
	}
	if g.computeHash() != m.Grid {
		return nil, fmt.Errorf("sweep: %s: the grid hash does not match its points (the file was edited?): %w", path, ErrFolder)
	}
	return &m, nil
}

// checkDerived checks the fields of a point that its hash does not cover
// because they follow from the others: its ranks (devices × nodes × ranks
// per device), and for a point of one node, whose encoding has neither,
// no efa block and no channels. An edit of them keeps every hash.
func (p *Point) checkDerived() error {
	if p.Devices < 1 || p.Nodes < 1 || p.RanksPer < 1 || p.Ranks != p.Devices*p.Nodes*p.RanksPer {
		return fmt.Errorf("ranks %d is not devices %d × nodes %d × ranks_per_device %d", p.Ranks, p.Devices, p.Nodes, p.RanksPer)
	}
	if p.Nodes == 1 && (p.EFA != nil || p.Channels != 0) {
		return fmt.Errorf("a point of one node has no efa block and no channels")
	}
	return nil
}

// computeHash is the grid's hash from its outputs and points.
func (g *Grid) computeHash() string {
	var b strings.Builder
	fmt.Fprintf(&b, "neuronsim sweep grid\nformat=%d\nplots=%t\n", HashFormat, g.Outputs.Plots)
	for _, p := range g.points {
		b.WriteString(p.Hash)
		b.WriteByte('\n')
	}
	return hashHex(b.String())
}

// resultPath is where point p's result goes.
func resultPath(dir string, p *Point) string {
	return filepath.Join(dir, PointsDir, p.Hash+".json")
}

// formatOneNode is the format of the manifests and result files written
// before the nodes axis: their points have no nodes (one node) and no efa
// fields. They are read as points of one node, whose hashes are the same
// in both formats (HashFormat), so a results folder of format 1 goes on
// being run and merged; the result files written into it are of Format.
const formatOneNode = 1

// upgradePoint reads a point of a file of format f as a point of Format:
// format 1's points, which have no nodes field, are of one node.
func upgradePoint(f int, p *Point) error {
	if f != formatOneNode {
		return nil
	}
	if p.Nodes != 0 || p.EFA != nil {
		return fmt.Errorf("format %d has no nodes or efa fields", formatOneNode)
	}
	if p.Product != "" { // written only by a neuronsim of format 2 that runs arch inf2
		return fmt.Errorf("format %d has no product field", formatOneNode)
	}
	p.Nodes = 1
	return nil
}

// errMalformed marks a result file that cannot be trusted.
var errMalformed = errors.New("malformed result file")

// readResult reads and checks point p's result file: one JSON object of
// the current format, for exactly this point, with a valid row or an
// error (never both, never neither). Anything else — a truncated file, a
// file of another point — wraps errMalformed; a missing one
// fs.ErrNotExist.
func readResult(dir string, p *Point) (*Result, error) {
	path := resultPath(dir, p)
	data, err := inputfile.Read(path, MaxResultBytes, "a result file is at most 1 MiB")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %v: %w", path, err, errMalformed)
	}
	var r Result
	if err := jsonkeys.Unique(data); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", path, err, errMalformed)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", path, err, errMalformed)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: data after the result: %w", path, errMalformed)
	}
	if r.Format != Format && r.Format != formatOneNode {
		return nil, fmt.Errorf("%s: format %d, not %d (or %d): %w", path, r.Format, Format, formatOneNode, errMalformed)
	}
	if err := upgradePoint(r.Format, &r.Point); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", path, err, errMalformed)
	}
	switch {
	case !reflect.DeepEqual(r.Point, *p):
		return nil, fmt.Errorf("%s: the result of another point: %w", path, errMalformed)
	case (r.Row == nil) == (r.Error == ""):
		return nil, fmt.Errorf("%s: neither a row nor an error, or both: %w", path, errMalformed)
	}
	if r.Row != nil {
		if err := r.Row.nccom(p).Validate(); err != nil {
			return nil, fmt.Errorf("%s: %v: %w", path, err, errMalformed)
		}
		if err := r.Row.consistent(p); err != nil {
			return nil, fmt.Errorf("%s: %v: %w", path, err, errMalformed)
		}
	}
	return &r, nil
}

// consistent checks that the row's time is one a clock can reach, its
// algorithm one the point runs as (the point's algo, or what auto resolves
// to: any other), and its count, time and bandwidths the ones its exact
// time gives for the point (nccom.NewRow, as the run made them): a file
// whose numbers were edited, or corrupted into other valid ones, is not a
// result.
func (r *Row) consistent(p *Point) error {
	d, err := enc.ParseDtype(p.Dtype)
	if err != nil {
		return err
	}
	if _, err := units.PS("time_ps", r.TimePS); err != nil {
		return err
	}
	// The algorithm run: auto's resolution, or the point's own.
	a, err := enc.ParseAlgo(r.Algorithm)
	if err != nil || a == enc.Auto || p.Algo != enc.Auto.String() && r.Algorithm != p.Algo {
		return fmt.Errorf("algorithm %q: not one the point's algo %s runs as", r.Algorithm, p.Algo)
	}
	want, err := nccom.NewRow(p.Op, p.Ranks, p.Size, d.Size(), p.Dtype, r.TimePS, r.Algorithm)
	if err != nil {
		return err
	}
	if want.Count != r.Count || want.TimeUS != r.TimeUS || want.AlgBW != r.AlgBW || want.BusBW != r.BusBW {
		return fmt.Errorf("count %d, time_us %v, algbw %v, busbw %v are not what time_ps %d gives for %d bytes of %s on %d ranks (%d, %v, %v, %v)",
			r.Count, r.TimeUS, r.AlgBW, r.BusBW, r.TimePS, p.Size, p.Dtype, p.Ranks, want.Count, want.TimeUS, want.AlgBW, want.BusBW)
	}
	return nil
}

// hostTime is DIR/host/<hash>.json: how long the point took on this run's
// host. It is not an input of anything merged.
type hostTime struct {
	Seconds    float64 `json:"host_seconds"` // wall time
	CPUSeconds float64 `json:"cpu_seconds"`  // the process's CPU time (other workers' too with -j above 1)
}

// writeResult writes point i's result (its row, or perr) and its host time.
func (g *Grid) writeResult(dir string, i int, row Row, perr error, host hostTime) error {
	p := &g.points[i]
	r := Result{Format: Format, Point: *p}
	if perr != nil {
		r.Error = perr.Error()
	} else {
		r.Row = &row
	}
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	if err := output.WriteFile(resultPath(dir, p), append(data, '\n')); err != nil {
		return fmt.Errorf("sweep: point %d: %w", i, err)
	}
	h, _ := json.Marshal(host)
	if err := output.WriteFile(filepath.Join(dir, HostDir, p.Hash+".json"), append(h, '\n')); err != nil {
		return fmt.Errorf("sweep: point %d: %w", i, err)
	}
	return nil
}

// refuseLinks refuses, before any point runs, a symbolic link at the
// result or host-time file of a point todo: an output is written through
// a link (internal/output), so a link planted in DIR/points would have the
// run overwrite its target, anywhere, with the point's result.
func (g *Grid) refuseLinks(dir string, todo []int) error {
	for _, i := range todo {
		p := &g.points[i]
		for _, path := range []string{resultPath(dir, p), filepath.Join(dir, HostDir, p.Hash+".json")} {
			to, linked := linkAt(path)
			if !linked {
				continue
			}
			return fmt.Errorf("sweep: point %d: %s: a symbolic link (to %s): run writes its own files in the results folder and would write through it; remove it: nothing was run: %w",
				i, path, to, ErrFolder)
		}
	}
	return nil
}

// linkAt reports whether path is a symbolic link, and what it names.
func linkAt(path string) (to string, linked bool) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return "", false
	}
	to, _ = os.Readlink(path)
	return to, true
}

// StaleTempAge is how long ago a temporary file in a results folder must
// have been written for a run to take it for a killed run's leftover and
// remove it. A live task writes a result in well under a second, but two
// tasks may run one point at once (a shard resubmitted while the first
// still runs, overlapping --shard arguments): a younger file may be the
// other task's write in flight, which removing would fail. The margin
// also covers clocks of the hosts sharing the folder that disagree.
const StaleTempAge = 10 * time.Minute

// removeStaleTemps removes the temporary files a killed run left of the
// points todo, which this run is about to run, in DIR/points and DIR/host,
// once older than StaleTempAge (a younger one is left for the next run:
// it is hidden and nothing reads it). The folders
// are listed once per run — not globbed per point, which cost a scan of
// the whole folder per point (quadratic in the grid) and, DIR being part of
// the pattern, matched other folders' files when DIR held a glob's special
// characters ('*', '?', '[') and none of its own.
func (g *Grid) removeStaleTemps(dir string, todo []int) {
	if len(todo) == 0 {
		return
	}
	ours := make(map[string]bool, len(todo))
	for _, i := range todo {
		ours[g.points[i].Hash+".json"] = true
	}
	for _, sub := range []string{PointsDir, HostDir} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if of, ok := output.TempOf(name); !ok || !ours[of] {
				continue
			}
			if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < StaleTempAge {
				continue
			}
			os.Remove(filepath.Join(dir, sub, name))
		}
	}
}

// runPoint builds point i's system, brings it up and runs its collective
// once. A panic of the simulator is the point's error, not the run's end.
func (g *Grid) runPoint(i int) (row Row, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error (a bug in the simulator): %v", r)
		}
	}()
	if g.fail != nil {
		if err := g.fail(i); err != nil {
			return row, err
		}
	}
	p, s := &g.points[i], &g.specs[i]
	need, err := cluster.BufferNeed(s.op, s.algo, p.Ranks, s.dtype, []int64{p.Size}, s.opts)
	if err != nil {
		return row, err
	}
	cfg := s.config(p, need)
	c, err := cluster.New(cfg)
	if err != nil {
		return row, err
	}
	defer c.Exec.Release()
	nr, res, err := c.Collective(s.op, s.algo, s.dtype, p.Size, p.Seed, s.opts)
	if err != nil {
		return row, err
	}
	return Row{Count: nr.Count, TimePS: res.TimePS, TimeUS: nr.TimeUS, AlgBW: nr.AlgBW, BusBW: nr.BusBW, Algorithm: nr.Algorithm}, nil
}
