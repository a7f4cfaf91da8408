package sweep

// Merging a results folder: nccom-test's JSON reports, the CSV and the
// plots, in point order, each written atomically.

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/plot"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// Merged outputs, in DIR/merged/.
const (
	ReportName = "report.json"
	CSVName    = "points.csv"
)

// Status is a point's state in a results folder.
type Status string

// The states of a point.
const (
	StatusOK      Status = "ok"
	StatusFailed  Status = "failed"  // its result file holds an error
	StatusMissing Status = "missing" // no result file, or one that cannot be trusted
)

// PointResult is a point and what its result file says.
type PointResult struct {
	Point
	Status Status
	Row    *Row   // StatusOK
	Error  string // StatusFailed: the point's error; StatusMissing: why (no file, or why it is not trusted)
}

// Folder is a results folder read back: the grid's points in order, each
// with its result.
type Folder struct {
	Dir     string
	Grid    string // the grid's hash
	Outputs Outputs
	Results []PointResult
}

// ReadFolder reads a results folder: its manifest and every point's
// result file.
func ReadFolder(dir string) (*Folder, error) {
	m, err := readManifest(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sweep: %s: no %s: not a results folder of sweep run: %w", dir, ManifestName, ErrFolder)
		}
		return nil, err
	}
	f := &Folder{Dir: dir, Grid: m.Grid, Outputs: m.Outputs}
	for i := range m.Points {
		p := &m.Points[i]
		pr := PointResult{Point: *p}
		r, err := readResult(dir, p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			pr.Status, pr.Error = StatusMissing, "no result file"
		case err != nil:
			pr.Status, pr.Error = StatusMissing, err.Error()
		case r.Row != nil:
			pr.Status, pr.Row = StatusOK, r.Row
		default:
			pr.Status, pr.Error = StatusFailed, r.Error
		}
		f.Results = append(f.Results, pr)
	}
	return f, nil
}

// Problems returns the points not OK, in order.
func (f *Folder) Problems() []PointResult {
	var out []PointResult
	for _, r := range f.Results {
		if r.Status != StatusOK {
			out = append(out, r)
		}
	}
	return out
}

// groupKey is what a group's points share: every input but the size.
func groupKey(p *Point) string {
	q := *p
	q.Size, q.Index, q.Hash = 0, 0, ""
	return q.canonical()
}

// group is a run of points sharing every input but the size.
type group struct {
	first   Point
	results []PointResult
}

func (f *Folder) groups() []group {
	var out []group
	last := ""
	for _, r := range f.Results {
		k := groupKey(&r.Point)
		if len(out) == 0 || k != last {
			out = append(out, group{first: r.Point})
			last = k
		}
		out[len(out)-1].results = append(out[len(out)-1].results, r)
	}
	return out
}

// report is group's nccom-test report: its OK points' rows; Extra names
// the group's axes.
func (gr *group) report(i int) *nccom.Report {
	p := gr.first
	opt := func(v *uint64) any {
		if v == nil {
			return "default"
		}
		return *v
	}
	rep := &nccom.Report{Op: p.Op, Ranks: p.Ranks, Extra: map[string]any{
		"group": i, "arch": p.Arch, "product": p.productOf(), "switch": p.Switch, "devices": p.Devices, "topology": p.Topology,
		"ranks_per_device": p.RanksPer, "model": p.Model, "endpoints": p.Endpoints, "mode": p.Mode,
		"algo": p.Algo, "link_bw_Bps": opt(p.LinkBW), "link_latency_ps": opt(p.LinkLatency),
	}}
	if p.System != "" {
		rep.Extra["system"] = p.System
	}
	if p.Nodes > 1 {
		// Several nodes: the node count and the EFA network's overrides
		// ("default": the generation's), as fabric sweep --nodes' report
		// has nodes and efa_network. A group of one node has none, as
		// before the nodes axis.
		rep.Extra["nodes"] = p.Nodes
		for _, kv := range p.EFA.lines() {
			rep.Extra[strings.ReplaceAll(kv[0], ".", "_")+efaUnits[kv[0]]] = kv[1]
		}
	}
	if p.Mode == "functional" {
		rep.Extra["seed"] = p.Seed
	}
	for _, r := range gr.results {
		if r.Status == StatusOK {
			rep.Rows = append(rep.Rows, r.Row.nccom(&r.Point))
		}
	}
	cluster.NoteFlatRing(rep, p.Nodes, p.Channels, p.nodeNICs()) // as fabric sweep's report has it
	if p.RingOrder != "" {
		cluster.NoteRingOrder(rep, cluster.RingOrder{Note: p.RingOrder}, nil, false) // the order, as the point has it
	}
	return rep
}

// title is the group's plot title.
func (gr *group) title() string {
	p := gr.first
	sys := p.System
	if sys == "" {
		sys = fmt.Sprintf("%s × %d %s", p.Topology, p.Devices, p.devicesWord())
	}
	if p.Nodes > 1 {
		sys = fmt.Sprintf("%d nodes of %s", p.Nodes, sys)
	}
	s := fmt.Sprintf("%s %s %s on %s, %s, %s model", p.Op, p.Algo, p.Dtype, sys, units.Plural(int64(p.Ranks), "rank", "ranks"), p.Model)
	if p.LinkBW != nil {
		s += fmt.Sprintf(", links %g GB/s", float64(*p.LinkBW)/1e9)
	}
	if p.LinkLatency != nil {
		s += fmt.Sprintf(" %g ns", float64(*p.LinkLatency)/1e3)
	}
	return s
}

// Reports returns nccom-test's report of every group, in point order.
func (f *Folder) Reports() []*nccom.Report {
	var out []*nccom.Report
	for i, gr := range f.groups() {
		out = append(out, gr.report(i))
	}
	return out
}

// ReportJSON returns DIR/merged/report.json: a JSON array of nccom-test's
// reports (nccom.Report.WriteJSON's objects), one per group.
func (f *Folder) ReportJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, rep := range f.Reports() {
		if i > 0 {
			b.WriteString(",\n")
		}
		var one bytes.Buffer
		if err := rep.WriteJSON(&one); err != nil {
			return nil, err
		}
		b.Write(bytes.TrimRight(one.Bytes(), "\n"))
	}
	b.WriteString("\n]\n")
	return b.Bytes(), nil
}

// efaUnits are the units a merged report's EFA keys name (efa_latency_ps,
// efa_bandwidth_Bps, as link_latency_ps, link_bw_Bps and fabric sweep's
// report name theirs): the grid's canonical keys (EFA.lines, which point
// hashes cover) have none.
var efaUnits = map[string]string{"efa.latency": "_ps", "efa.bandwidth": "_Bps"}

// Columns are points.csv's header (and the SQLite table's columns): the
// index and hash, every axis, then the results. The product names the
// devices (Trn1, Inf2, Trn2, Trn3: arch sunda is Trn1 or Inf2).
var Columns = []string{
	"index", "hash", "system", "arch", "product", "switch", "devices", "nodes", "topology", "ranks_per_device", "ranks",
	"model", "endpoints", "link_bw_Bps", "link_latency_ps", "op", "algo", "channels", "dtype", "size_B", "mode", "seed",
	"status", "count_elems", "time_ps", "time_avg_us", "algbw_GBps", "busbw_GBps", "algorithm", "error",
}

// Records returns a row of Columns per point, in point order; an unset
// link parameter (each link kind's default), the channels of a point they
// do not apply to and the results of a point not OK are empty.
func (f *Folder) Records() [][]string {
	var out [][]string
	for i := range f.Results {
		vals := rowValues(&f.Results[i])
		rec := make([]string, len(vals))
		for j, v := range vals {
			switch v := v.(type) {
			case nil:
			case string:
				rec[j] = v
			case int:
				rec[j] = strconv.Itoa(v)
			case int64:
				rec[j] = strconv.FormatInt(v, 10)
			case uint64:
				rec[j] = strconv.FormatUint(v, 10)
			case float64:
				rec[j] = strconv.FormatFloat(v, 'g', -1, 64)
			default: // rowValues gives only the types above (TestRowValues)
				rec[j] = fmt.Sprint(v)
			}
		}
		out = append(out, rec)
	}
	return out
}

// rowValues are a point's values in Columns' order, for points.csv and
// the SQLite table alike: numbers as int, int64, uint64 or float64, text
// as string, and nil where there is none (an unset link parameter, the
// channels of a point they do not apply to, the results of a point not
// OK, an error of one that is).
func rowValues(r *PointResult) []any {
	p := &r.Point
	opt := func(v *uint64) any {
		if v == nil {
			return nil
		}
		return *v
	}
	var sys, channels any
	if p.System != "" {
		sys = p.System
	}
	if p.Channels > 0 { // else a point channels do not apply to
		channels = p.Channels
	}
	vals := []any{p.Index, p.Hash, sys, p.Arch, p.productOf(), p.Switch, p.Devices, p.Nodes, p.Topology, p.RanksPer, p.Ranks,
		p.Model, p.Endpoints, opt(p.LinkBW), opt(p.LinkLatency), p.Op, p.Algo, channels, p.Dtype, p.Size, p.Mode, p.Seed, string(r.Status)}
	if r.Row != nil {
		return append(vals, r.Row.Count, r.Row.TimePS, r.Row.TimeUS, r.Row.AlgBW, r.Row.BusBW, r.Row.Algorithm, nil)
	}
	return append(vals, nil, nil, nil, nil, nil, nil, r.Error)
}

// CSV returns DIR/merged/points.csv.
func (f *Folder) CSV() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(Columns); err != nil {
		return nil, err
	}
	if err := w.WriteAll(f.Records()); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// PlotName is the file of group i's plot in DIR/merged/.
func PlotName(i int) string { return fmt.Sprintf("busbw-%04d.png", i) }

// MergeOptions are a merge's.
type MergeOptions struct {
	// SQLite, when not "", is a database file to write the rows to.
	SQLite string
}

// MergeStats is what a merge wrote.
type MergeStats struct {
	Files    []string      // written, in order
	Problems []PointResult // the points missing or failed, in order
}

// checkSQLitePath refuses a database path that would replace the results
// folder's own files — its manifest, or a file in its points/, host/ or
// merged/ folders, which merge reads or writes — or put a file among
// them: nothing is written then. The path is taken where the database
// would be written (output.Resolve: every symbolic link followed, the
// path's own even when it is dangling, as output.Create follows it, and
// those of linked directories), and the files it might be are compared
// with it by output.FindSameAs, so a link or a hard link to one of them is
// caught too. A path elsewhere in the folder (DIR/points.db, the documented one)
// is taken.
func checkSQLitePath(dir, db string) error {
	at, err := output.Resolve(db)
	if err != nil {
		return fmt.Errorf("sweep: --sqlite: %w", err)
	}
	leads := "" // where a link leads
	if abs, err := filepath.Abs(db); err != nil || abs != at {
		leads = " (it leads to " + at + ")"
	}
	refuse := func(what string) error {
		return fmt.Errorf("sweep: --sqlite %s: %s%s: nothing was written: %w", db, what, leads, ErrFolder)
	}
	others, what := []string{filepath.Join(dir, ManifestName)}, []string{"the results folder's manifest " + ManifestName}
	for _, sub := range []string{PointsDir, HostDir, MergedDir} {
		d := filepath.Join(dir, sub)
		if rd, err := output.Resolve(d); err == nil && filepath.Dir(at) == rd {
			return refuse("is in the results folder's " + sub + "/, which merge reads or writes")
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			others, what = append(others, p), append(what, p+", a file of the results folder")
		}
	}
	if i := output.FindSameAs(db, others); i >= 0 {
		return refuse("is " + what[i])
	}
	return nil
}

// Merge writes the merged outputs of the folder dir: merged/report.json,
// merged/points.csv, a plot per group with OK points (outputs.plots) and
// with opt.SQLite the database — each atomically. Points missing or failed
// are left out of the reports and plots and are rows with their status in
// the CSV and the database; with any, the error wraps ErrIncomplete (and
// lists them) after everything has been written.
func Merge(dir string, opt MergeOptions) (MergeStats, error) {
	var st MergeStats
	f, err := ReadFolder(dir)
	if err != nil {
		return st, err
	}
	if opt.SQLite != "" {
		if err := checkSQLitePath(dir, opt.SQLite); err != nil {
			return st, err
		}
		if err := output.Check(opt.SQLite); err != nil {
			return st, fmt.Errorf("sweep: --sqlite: %w", err)
		}
	}
	merged := mergedFiles{dir: filepath.Join(dir, MergedDir), st: &st}
	if err := merged.refuseLinks(f); err != nil {
		return st, err
	}
	if err := os.MkdirAll(merged.dir, 0o755); err != nil {
		return st, fmt.Errorf("sweep: %w", err)
	}
	if err := merged.writeTables(f); err != nil {
		return st, err
	}
	if f.Outputs.Plots {
		if err := merged.writePlots(f); err != nil {
			return st, err
		}
	}
	if err := merged.removeStalePlots(); err != nil {
		return st, err
	}
	if opt.SQLite != "" {
		if err := writeSQLite(opt.SQLite, f); err != nil {
			return st, err
		}
		st.Files = append(st.Files, opt.SQLite)
	}
	st.Problems = f.Problems()
	if len(st.Problems) > 0 {
		return st, incompleteError(dir, st.Problems, len(f.Results))
	}
	return st, nil
}

// mergedFiles writes the files of a results folder's DIR/merged, adding
// each file written to the merge's stats.
type mergedFiles struct {
	dir string // DIR/merged
	st  *MergeStats
}

// refuseLinks refuses, before anything is written, a symbolic link in
// DIR/merged at the name of a file merge writes there: an output is
// written through a link (internal/output), and DIR/merged/points.csv
// linked to ../grid.json would replace the folder's manifest, an input,
// with the CSV.
func (m mergedFiles) refuseLinks(f *Folder) error {
	names := []string{ReportName, CSVName}
	if f.Outputs.Plots {
		for i := range f.groups() {
			names = append(names, PlotName(i))
		}
	}
	for _, name := range names {
		p := filepath.Join(m.dir, name)
		to, linked := linkAt(p)
		if !linked {
			continue
		}
		return fmt.Errorf("sweep: %s: a symbolic link (to %s): merge writes its own files in %s/ and would write through it; remove it: nothing was written: %w",
			p, to, MergedDir, ErrFolder)
	}
	return nil
}

// write writes data to the file name in DIR/merged, atomically.
func (m mergedFiles) write(name string, data []byte) error {
	path := filepath.Join(m.dir, name)
	if err := output.WriteFile(path, data); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	m.st.Files = append(m.st.Files, path)
	return nil
}

// writeTables writes the folder's report.json and points.csv.
func (m mergedFiles) writeTables(f *Folder) error {
	rep, err := f.ReportJSON()
	if err != nil {
		return err
	}
	if err := m.write(ReportName, rep); err != nil {
		return err
	}
	c, err := f.CSV()
	if err != nil {
		return err
	}
	return m.write(CSVName, c)
}

// writePlots writes the plot of every group of the folder that has
// something to draw (group.plot).
func (m mergedFiles) writePlots(f *Folder) error {
	for i, gr := range f.groups() {
		png, ok, err := gr.plot(i)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := m.write(PlotName(i), png); err != nil {
			return err
		}
	}
	return nil
}

// plot draws group i's busbw against size, a PNG, from its OK points of a
// size above 0 B; ok is false when it has none.
func (gr *group) plot(i int) (png []byte, ok bool, err error) {
	r := gr.report(i)
	rows := r.Rows[:0:0]
	for _, row := range r.Rows {
		if row.Size > 0 { // a log axis has no place for 0 B
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil, false, nil
	}
	r.Rows = rows
	png, err = plot.PNG(gr.title(), []plot.Series{{Label: units.Plural(int64(gr.first.Ranks), "rank", "ranks"), Report: r}})
	if err != nil {
		return nil, false, fmt.Errorf("sweep: plot of group %d: %w", i, err)
	}
	return png, true, nil
}

// removeStalePlots removes the plots in DIR/merged this merge did not
// write: one an earlier merge drew for a group with no OK point now would
// contradict report.json.
func (m mergedFiles) removeStalePlots() error {
	drawn := map[string]bool{}
	for _, p := range m.st.Files {
		drawn[filepath.Base(p)] = true
	}
	// The folder is listed, not globbed: DIR may hold a glob's special
	// characters ('*', '?', '['), and a pattern made of it would match
	// other folders' plots, or none of this one's.
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return fmt.Errorf("sweep: listing %s for stale plots: %w", m.dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !isPlotName(name) || drawn[name] {
			continue
		}
		p := filepath.Join(m.dir, name)
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("sweep: removing the stale plot %s: %w", p, err)
		}
	}
	return nil
}

// isPlotName reports whether name is one of PlotName's, as the pattern
// busbw-*.png matches them.
func isPlotName(name string) bool {
	return strings.HasPrefix(name, "busbw-") && strings.HasSuffix(name, ".png") && len(name) >= len("busbw-.png")
}

// incompleteError is the error of a merge of the folder dir whose points
// problems (of total points) are missing or failed: it lists them, and
// wraps ErrIncomplete.
func incompleteError(dir string, problems []PointResult, total int) error {
	var lines []string
	for _, p := range problems {
		lines = append(lines, fmt.Sprintf("point %d (%s) %s: %s", p.Index, p.Hash, p.Status, p.Error))
	}
	return fmt.Errorf("sweep: %s: %d of %d points are missing or failed:\n  %s: %w", dir, len(problems), total, strings.Join(lines, "\n  "), ErrIncomplete)
}
