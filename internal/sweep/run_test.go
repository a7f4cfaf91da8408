package sweep

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/output"
)

const exampleGrid = "../../scenarios/sweeps/example.yaml"

func loadExample(t *testing.T) *Grid {
	t.Helper()
	g, err := LoadGrid(exampleGrid)
	require.NoError(t, err)
	return g
}

// tree returns every regular file under dir (relative path → contents),
// skipping the host/ folder (host times are run-dependent by design).
func tree(t *testing.T, dir string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		for _, s := range skip {
			if rel == s {
				return filepath.SkipDir
			}
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	}))
	return out
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func run(t *testing.T, g *Grid, dir string, s Shard, jobs int) RunStats {
	t.Helper()
	st, err := Run(g, RunOptions{Dir: dir, Shard: s, Jobs: jobs})
	require.NoError(t, err)
	return st
}

func merge(t *testing.T, dir string) {
	t.Helper()
	_, err := Merge(dir, MergeOptions{})
	require.NoError(t, err)
}

// TestDeterminism: the example grid gives byte-identical results and
// merged outputs (report.json, points.csv, every plot) whether it runs in
// one shard, in 4 shards, in 4 shards with a task killed and rerun, or in
// one shard with -j 2. The kill leaves what a SIGKILL between the write
// and the rename leaves (a partial temporary file), a truncated result
// (a file system that lost the tail), and a missing one: the rerun runs
// exactly those two points again, and nothing else.
//
// Under the race detector, which slows every point and plot tenfold, a
// 12-point grid without plots stands in for the example (the concurrency
// of -j is the same; the plots' determinism is internal/plot's and the
// normal run's).
func TestDeterminism(t *testing.T) {
	g := loadExample(t)
	require.GreaterOrEqual(t, g.Len(), 32)
	if raceEnabled {
		g = mustGrid(t, gridYAML("  devices: [2, 3, 4]\n  ops: [all_reduce]\n  models: [aware, free]\n  sizes: [64K, 1M]\n  algos: [ring]\n")+"outputs:\n  plots: false\n")
		require.Equal(t, 12, g.Len())
	}
	base := t.TempDir()
	dirs := map[string]string{}
	for _, name := range []string{"one", "four", "killed", "j2"} {
		dirs[name] = filepath.Join(base, name)
	}

	st := run(t, g, dirs["one"], All, 1)
	assert.Equal(t, RunStats{Points: g.Len(), Ran: g.Len()}, st)
	merge(t, dirs["one"])

	total := 0
	for i := range 4 {
		st := run(t, g, dirs["four"], Shard{Index: i, Count: 4}, 1)
		assert.Equal(t, st.Points, st.Ran)
		total += st.Ran
	}
	assert.Equal(t, g.Len(), total, "the 4 shards cover the grid once")
	merge(t, dirs["four"])

	run(t, g, dirs["j2"], All, 2)
	merge(t, dirs["j2"])

	// Shard 2 of 4 is killed: its points after the first two are lost,
	// one of those two is truncated, and a temporary file is left.
	shard2, err := g.Shard(Shard{Index: 2, Count: 4})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(shard2), 3)
	for _, i := range []int{0, 1, 3} {
		run(t, g, dirs["killed"], Shard{Index: i, Count: 4}, 1)
	}
	killed := Shard{Index: 2, Count: 4}
	run(t, g, dirs["killed"], killed, 1)
	for _, i := range shard2[2:] {
		require.NoError(t, os.Remove(resultPath(dirs["killed"], &g.points[i])))
	}
	trunc := resultPath(dirs["killed"], &g.points[shard2[1]])
	data, err := os.ReadFile(trunc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(trunc, data[:len(data)/2], 0o644))
	partial := output.TempName(resultPath(dirs["killed"], &g.points[shard2[2]]), "deadbeef")
	require.NoError(t, os.WriteFile(partial, data[:len(data)/3], 0o644))
	killedAt := time.Now().Add(-StaleTempAge - time.Minute) // left by a run killed long enough ago
	require.NoError(t, os.Chtimes(partial, killedAt, killedAt))

	// Merged now, the killed points are missing: listed, and an error.
	mst, err := Merge(dirs["killed"], MergeOptions{})
	require.ErrorIs(t, err, ErrIncomplete)
	assert.Len(t, mst.Problems, len(shard2)-1)
	assert.Contains(t, err.Error(), "malformed result file", "the truncated result is not trusted")

	// The rerun runs exactly the lost points.
	st = run(t, g, dirs["killed"], killed, 1)
	assert.Equal(t, RunStats{Points: len(shard2), Ran: len(shard2) - 1, Skipped: 1}, st)
	_, err = os.Stat(partial)
	assert.ErrorIs(t, err, fs.ErrNotExist, "the rerun removed the temporary file of the point it finished")
	merge(t, dirs["killed"])

	// And a third run of anything runs nothing.
	st = run(t, g, dirs["killed"], All, 2)
	assert.Equal(t, RunStats{Points: g.Len(), Skipped: g.Len()}, st)

	want := tree(t, dirs["one"], HostDir)
	require.Contains(t, want, filepath.Join(MergedDir, ReportName))
	require.Contains(t, want, filepath.Join(MergedDir, CSVName))
	if g.Outputs.Plots {
		require.Contains(t, want, filepath.Join(MergedDir, PlotName(0)))
	}
	for _, name := range []string{"four", "killed", "j2"} {
		got := tree(t, dirs[name], HostDir)
		assert.Equal(t, names(want), names(got), name)
		for k, v := range want {
			assert.True(t, got[k] == v, "%s: %s differs from the one-shard run's", name, k)
		}
	}
	hosts := tree(t, filepath.Join(dirs["one"], HostDir))
	assert.Len(t, hosts, g.Len(), "a host time per point, kept out of the merged outputs")
}

// TestOtherGridRefused: a results folder written by one grid refuses a run
// of another (ErrFolder, naming both hashes) and nothing in it changes;
// a manifest edited by hand is refused too.
func TestOtherGridRefused(t *testing.T) {
	g := loadExample(t)
	dir := t.TempDir()
	small := mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [1K]\n"))
	run(t, g, dir, Shard{Index: 0, Count: 8}, 1)
	before := tree(t, dir)

	_, err := Run(small, RunOptions{Dir: dir, Shard: All, Jobs: 1})
	require.ErrorIs(t, err, ErrFolder)
	assert.Contains(t, err.Error(), g.Hash())
	assert.Contains(t, err.Error(), small.Hash())
	assert.Contains(t, err.Error(), "another grid")
	assert.Equal(t, before, tree(t, dir), "nothing was overwritten")

	// An edited manifest is refused by run and merge, and left alone.
	man := filepath.Join(dir, ManifestName)
	edited := strings.Replace(before[ManifestName], `"size":65536`, `"size":65540`, 1)
	require.NotEqual(t, before[ManifestName], edited)
	require.NoError(t, os.WriteFile(man, []byte(edited), 0o644))
	_, err = Run(g, RunOptions{Dir: dir, Shard: All, Jobs: 1})
	require.ErrorIs(t, err, ErrFolder)
	assert.Contains(t, err.Error(), "does not match its inputs")
	_, err = Merge(dir, MergeOptions{})
	require.ErrorIs(t, err, ErrFolder)
	got, _ := os.ReadFile(man)
	assert.Equal(t, edited, string(got))

	// A folder that is not one at all.
	_, err = Merge(t.TempDir(), MergeOptions{})
	require.ErrorIs(t, err, ErrFolder)
}

// TestFailedPoints: a point that fails at run time writes its error into
// its result file; the run ends with ErrIncomplete after the other points
// ran; merge writes everything else, lists it with its error and fails;
// the next run retries it (and only it).
func TestFailedPoints(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2, 4]\n  ops: [all_reduce]\n  sizes: [1K, 4K]\n"))
	g.fail = func(i int) error {
		if i == 2 {
			return errors.New("injected failure of point 2")
		}
		return nil
	}
	dir := t.TempDir()
	st, err := Run(g, RunOptions{Dir: dir, Shard: All, Jobs: 2})
	require.ErrorIs(t, err, ErrIncomplete)
	assert.Equal(t, RunStats{Points: 4, Ran: 4, Failed: 1}, st)
	assert.Contains(t, err.Error(), "injected failure of point 2")
	r, err := readResult(dir, &g.points[2])
	require.NoError(t, err)
	assert.Equal(t, "injected failure of point 2", r.Error)
	assert.Nil(t, r.Row)

	mst, err := Merge(dir, MergeOptions{})
	require.ErrorIs(t, err, ErrIncomplete)
	require.Len(t, mst.Problems, 1)
	assert.Equal(t, StatusFailed, mst.Problems[0].Status)
	assert.Contains(t, err.Error(), "point 2 ("+g.points[2].Hash+") failed: injected failure of point 2")
	csv, err := os.ReadFile(filepath.Join(dir, MergedDir, CSVName))
	require.NoError(t, err)
	assert.Contains(t, string(csv), ",failed,,,,,,,injected failure of point 2\n")
	assert.Equal(t, 5, strings.Count(string(csv), "\n"), "a header and a row per point")

	g.fail = nil
	st, err = Run(g, RunOptions{Dir: dir, Shard: All, Jobs: 1})
	require.NoError(t, err)
	assert.Equal(t, RunStats{Points: 4, Ran: 1, Skipped: 3}, st)
	merge(t, dir)
}

// TestResultNotTrusted: a result file is used only when it is exactly
// this point's: a copy of another point's, one of another format, one
// with data after it, one with neither a row nor an error, or one whose
// count, time or bandwidths are not what its exact time gives is rerun.
func TestResultNotTrusted(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [1K, 4K]\n"))
	dir := t.TempDir()
	run(t, g, dir, All, 1)
	p0, p1 := resultPath(dir, &g.points[0]), resultPath(dir, &g.points[1])
	good, err := os.ReadFile(p0)
	require.NoError(t, err)
	other, err := os.ReadFile(p1)
	require.NoError(t, err)
	for name, data := range map[string]string{
		"another point's": string(other),
		"another format":  strings.Replace(string(good), fmt.Sprintf(`"format": %d`, Format), fmt.Sprintf(`"format": %d`, Format+1), 1),
		"trailing data":   string(good) + "{}",
		"no row":          strings.Replace(string(good), `"row"`, `"rows"`, 1),
		"empty":           "",
		"negative time":   strings.Replace(string(good), `"time_us": `, `"time_us": -`, 1),
		// Valid numbers that are not the ones the exact time gives.
		"time_ps edited": regexp.MustCompile(`"time_ps": \d+`).ReplaceAllString(string(good), `"time_ps": 999`),
		"count edited":   regexp.MustCompile(`"count": \d+`).ReplaceAllString(string(good), `"count": 1`),
		"busbw edited":   regexp.MustCompile(`"busbw": [0-9.e+-]+`).ReplaceAllString(string(good), `"busbw": 123.5`),
		// An algorithm the point does not run as (once taken: a single
		// word was enough), and a time no clock reaches.
		"algorithm not one":   regexp.MustCompile(`"algorithm": "[a-z]+"`).ReplaceAllString(string(good), `"algorithm": "bogus"`),
		"algorithm auto":      regexp.MustCompile(`"algorithm": "[a-z]+"`).ReplaceAllString(string(good), `"algorithm": "auto"`),
		"time_ps past clocks": regexp.MustCompile(`"time_ps": \d+`).ReplaceAllString(string(good), `"time_ps": 18446744073709551615`),
	} {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, string(good), data)
			require.NoError(t, os.WriteFile(p0, []byte(data), 0o644))
			_, err := readResult(dir, &g.points[0])
			require.ErrorIs(t, err, errMalformed)
			st := run(t, g, dir, All, 1)
			assert.Equal(t, RunStats{Points: 2, Ran: 1, Skipped: 1}, st)
			got, _ := os.ReadFile(p0)
			assert.Equal(t, string(good), string(got), "rerun gives the same bytes")
		})
	}
}

// TestMergeSQLite: --sqlite writes the CSV's rows to table points, with
// NULL for the results of a point not OK; the file is written atomically
// (no temporary file is left beside it).
func TestMergeSQLite(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2, 4]\n  ops: [all_reduce, all_gather]\n  sizes: [4K, 64K]\n"))
	dir := t.TempDir()
	run(t, g, dir, All, 2)
	require.NoError(t, os.Remove(resultPath(dir, &g.points[5])))
	db := filepath.Join(t.TempDir(), "points.db")
	require.NoError(t, os.WriteFile(db, []byte("an older file, replaced whole"), 0o644))
	_, err := Merge(dir, MergeOptions{SQLite: db})
	require.ErrorIs(t, err, ErrIncomplete)

	entries, err := os.ReadDir(filepath.Dir(db))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the database, no temporary or journal file")

	conn, err := sql.Open("sqlite", db)
	require.NoError(t, err)
	defer conn.Close()
	var n, ok int
	require.NoError(t, conn.QueryRow(`SELECT COUNT(*), SUM(status = 'ok') FROM points`).Scan(&n, &ok))
	assert.Equal(t, g.Len(), n)
	assert.Equal(t, g.Len()-1, ok)
	var status string
	var busbw sql.NullFloat64
	require.NoError(t, conn.QueryRow(`SELECT status, busbw_GBps FROM points WHERE "index" = 5`).Scan(&status, &busbw))
	assert.Equal(t, "missing", status)
	assert.False(t, busbw.Valid)

	f, err := ReadFolder(dir)
	require.NoError(t, err)
	var csvBus string
	col := slices.Index(Columns, "busbw_GBps")
	require.Positive(t, col)
	for _, rec := range f.Records() {
		if rec[0] == "3" {
			csvBus = rec[col]
		}
	}
	var size int64
	var hash string
	require.NoError(t, conn.QueryRow(`SELECT size_B, hash, busbw_GBps FROM points WHERE "index" = 3`).Scan(&size, &hash, &busbw))
	assert.Equal(t, g.points[3].Size, size)
	assert.Equal(t, g.points[3].Hash, hash)
	assert.Equal(t, csvBus, fmt.Sprint(busbw.Float64))
}

// TestMergeSQLiteNotTheFolders: --sqlite naming the manifest, a point's
// result, a merged output or a new file among points/, host/ or merged/ —
// by path, through a hard link, a symbolic link (even dangling: the new
// file it leads to) or a linked directory — is refused before anything is
// written, and the folder merges as before; a link out of the folder is
// written through, and DIR/points.db is taken.
func TestMergeSQLiteNotTheFolders(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [4K, 64K]\n"))
	dir, err := filepath.EvalSymlinks(t.TempDir()) // the errors name it resolved
	require.NoError(t, err)
	run(t, g, dir, All, 2)
	_, err = Merge(dir, MergeOptions{})
	require.NoError(t, err)
	point := resultPath(dir, &g.points[0])
	elsewhere, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	link := filepath.Join(elsewhere, "link.db")
	require.NoError(t, os.Link(point, link))
	// Symbolic links: a dangling one whose target is a new file in merged/
	// (relative, in the folder, and absolute, outside it), and linked
	// directories: to merged/ (a new file there) and to points/ (a
	// point's result by its name there).
	out, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	dangling := filepath.Join(dir, "dangling.db")
	require.NoError(t, os.Symlink(filepath.Join(MergedDir, "new.db"), dangling))
	danglingOut := filepath.Join(out, "dangling.db")
	require.NoError(t, os.Symlink(filepath.Join(dir, MergedDir, "new.db"), danglingOut))
	mergedLink, pointsLink := filepath.Join(out, "m"), filepath.Join(out, "p")
	require.NoError(t, os.Symlink(filepath.Join(dir, MergedDir), mergedLink))
	require.NoError(t, os.Symlink(filepath.Dir(point), pointsLink))
	before := map[string][]byte{}
	for _, p := range []string{filepath.Join(dir, ManifestName), point, filepath.Join(dir, MergedDir, "points.csv")} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		before[p] = b
	}
	for _, db := range []string{
		filepath.Join(dir, ManifestName),
		point,
		filepath.Join(dir, MergedDir, "points.csv"),
		filepath.Join(dir, PointsDir, "new.db"),
		filepath.Join(dir, HostDir, "new.db"),
		link,
		dangling,
		danglingOut,
		filepath.Join(mergedLink, "new.db"),
		filepath.Join(mergedLink, "points.csv"),
		filepath.Join(pointsLink, filepath.Base(point)),
		filepath.Join(pointsLink, "new.db"),
	} {
		_, err := Merge(dir, MergeOptions{SQLite: db})
		require.ErrorIs(t, err, ErrFolder, db)
		assert.ErrorContains(t, err, "nothing was written", db)
	}
	for p, b := range before {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, b, got, "%s as it was", p)
	}
	assert.NoFileExists(t, filepath.Join(dir, PointsDir, "new.db"))
	assert.NoFileExists(t, filepath.Join(dir, MergedDir, "new.db"))
	_, err = Merge(dir, MergeOptions{SQLite: dangling})
	assert.ErrorContains(t, err, "sweep: --sqlite "+dangling+": is in the results folder's merged/, which merge reads or writes (it leads to "+filepath.Join(dir, MergedDir, "new.db")+"): nothing was written")
	_, err = Merge(dir, MergeOptions{SQLite: link})
	assert.ErrorContains(t, err, "sweep: --sqlite "+link+": is "+point+", a file of the results folder: nothing was written")
	// A link out of the folder is written through, the link kept.
	outLink := filepath.Join(out, "elsewhere.db")
	require.NoError(t, os.Symlink(filepath.Join(out, "target.db"), outLink))
	_, err = Merge(dir, MergeOptions{SQLite: outLink})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(out, "target.db"))
	_, err = Merge(dir, MergeOptions{SQLite: filepath.Join(dir, "points.db")})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "points.db"))
}

// TestMergeOutputs: report.json is a JSON array of nccom-test's reports,
// one per group in point order, each of the group's sizes; the plots are
// one per group; outputs.plots: false draws none.
func TestMergeOutputs(t *testing.T) {
	for _, plots := range []bool{true, false} {
		src := gridYAML("  devices: [2]\n  ops: [all_reduce, all_gather]\n  sizes: [4K, 64K, 1M]\n")
		src += fmt.Sprintf("outputs:\n  plots: %t\n", plots)
		g := mustGrid(t, src)
		dir := t.TempDir()
		run(t, g, dir, All, 1)
		merge(t, dir)
		f, err := ReadFolder(dir)
		require.NoError(t, err)
		reps := f.Reports()
		require.Len(t, reps, 2)
		assert.Equal(t, "all_reduce", reps[0].Op)
		assert.Equal(t, "all_gather", reps[1].Op)
		for _, r := range reps {
			require.Len(t, r.Rows, 3)
			assert.Equal(t, []int64{4096, 65536, 1 << 20}, []int64{r.Rows[0].Size, r.Rows[1].Size, r.Rows[2].Size})
		}
		data, err := os.ReadFile(filepath.Join(dir, MergedDir, ReportName))
		require.NoError(t, err)
		assert.True(t, bytes.HasPrefix(data, []byte("[\n{\n  \"results\": [")), string(data[:40]))
		_, err = os.Stat(filepath.Join(dir, MergedDir, PlotName(1)))
		if plots {
			assert.NoError(t, err)
		} else {
			assert.ErrorIs(t, err, fs.ErrNotExist)
		}
	}
}

// TestMergeStalePlot: a group whose points are all gone since the last
// merge loses its plot (it would contradict report.json); the others stay.
func TestMergeStalePlot(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce, all_gather]\n  sizes: [4K, 64K]\n"))
	dir := t.TempDir()
	run(t, g, dir, All, 1)
	merge(t, dir)
	require.FileExists(t, filepath.Join(dir, MergedDir, PlotName(1)))
	for _, i := range []int{2, 3} {
		require.NoError(t, os.Remove(resultPath(dir, &g.points[i])))
	}
	_, err := Merge(dir, MergeOptions{})
	require.ErrorIs(t, err, ErrIncomplete)
	assert.FileExists(t, filepath.Join(dir, MergedDir, PlotName(0)))
	assert.NoFileExists(t, filepath.Join(dir, MergedDir, PlotName(1)))
}

// TestMergeStalePlotGlobCharacters: a results folder whose name holds a
// glob's special characters loses its own stale plots and never another
// folder's (filepath.Glob of DIR/merged/busbw-*.png once matched r*'s
// siblings' plots, and none of q[1]'s own).
func TestMergeStalePlotGlobCharacters(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce, all_gather]\n  sizes: [4K, 64K]\n"))
	base := t.TempDir()
	other := filepath.Join(base, "rX", MergedDir)
	require.NoError(t, os.MkdirAll(other, 0o755))
	otherPlot := filepath.Join(other, PlotName(7))
	require.NoError(t, os.WriteFile(otherPlot, []byte("another folder's plot"), 0o644))
	for _, name := range []string{"r*", "r?", "q[1]", "a[", `r\`} {
		dir := filepath.Join(base, name)
		run(t, g, dir, All, 1)
		merge(t, dir)
		require.FileExists(t, filepath.Join(dir, MergedDir, PlotName(1)), name)
		for _, i := range []int{2, 3} {
			require.NoError(t, os.Remove(resultPath(dir, &g.points[i])))
		}
		_, err := Merge(dir, MergeOptions{})
		require.ErrorIs(t, err, ErrIncomplete, name)
		assert.FileExists(t, filepath.Join(dir, MergedDir, PlotName(0)), name)
		assert.NoFileExists(t, filepath.Join(dir, MergedDir, PlotName(1)), "%s: its stale plot is removed", name)
		assert.FileExists(t, otherPlot, "%s: merging it left another folder's plot alone", name)
	}
}

// TestRunStaleTempsGlobCharacters: a run removes the temporary files a
// killed run left of the points it runs, in points/ and host/, also in a
// folder whose name holds a glob's special characters, and never another
// folder's (a glob of DIR/points/.HASH.json.tmp-* once matched r*'s
// siblings' files — a sibling's write in flight — and none of q[1]'s own).
func TestRunStaleTempsGlobCharacters(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [4K]\n"))
	p := &g.points[0]
	base := t.TempDir()
	sibling := filepath.Join(base, "rX")
	require.NoError(t, os.MkdirAll(filepath.Join(sibling, PointsDir), 0o755))
	siblingTemp := output.TempName(resultPath(sibling, p), "0badf00d")
	require.NoError(t, os.WriteFile(siblingTemp, []byte("{"), 0o644))
	for _, name := range []string{"r*", "r?", "q[1]", "a["} {
		dir := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, PointsDir), 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, HostDir), 0o755))
		temps := []string{
			output.TempName(resultPath(dir, p), "deadbeef"),
			output.TempName(filepath.Join(dir, HostDir, p.Hash+".json"), "deadbeef"),
		}
		old := time.Now().Add(-StaleTempAge - time.Minute)
		for _, tmp := range temps {
			require.NoError(t, os.WriteFile(tmp, []byte("{"), 0o644))
			require.NoError(t, os.Chtimes(tmp, old, old))
		}
		run(t, g, dir, All, 1)
		for _, tmp := range temps {
			assert.NoFileExists(t, tmp, "%s: the killed run's temporary file is removed", name)
		}
		assert.FileExists(t, siblingTemp, "%s: another folder's temporary file is left alone", name)
	}
}

// TestRunLeavesYoungTemps: a temporary file of a point younger than
// StaleTempAge may be another task's write in flight (two tasks running
// one point: a shard resubmitted while the first still runs) and is left
// alone; an older one is removed.
func TestRunLeavesYoungTemps(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [4K]\n"))
	p := &g.points[0]
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, PointsDir), 0o755))
	young := output.TempName(resultPath(dir, p), "00000001")
	stale := output.TempName(resultPath(dir, p), "00000002")
	for _, tmp := range []string{young, stale} {
		require.NoError(t, os.WriteFile(tmp, []byte("{"), 0o644))
	}
	for _, c := range []struct {
		path string
		age  time.Duration
	}{{young, StaleTempAge - time.Minute}, {stale, StaleTempAge + time.Minute}} {
		when := time.Now().Add(-c.age)
		require.NoError(t, os.Chtimes(c.path, when, when))
	}
	run(t, g, dir, All, 1)
	assert.FileExists(t, young, "a write that may be in flight is left alone")
	assert.NoFileExists(t, stale, "a killed run's leftover is removed")
	assert.FileExists(t, resultPath(dir, p), "the point ran")
}

// TestManifestDerivedFieldsEdited: a manifest's fields that no hash
// covers — a point's ranks, and a point of one node's efa and channels —
// edited keep every hash; run and merge refuse the folder rather than run
// says every point is done while merge says every point is missing.
func TestManifestDerivedFieldsEdited(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [4K, 64K]\n"))
	orig := t.TempDir()
	run(t, g, orig, All, 1)
	data, err := os.ReadFile(filepath.Join(orig, ManifestName))
	require.NoError(t, err)
	for _, edit := range [][2]string{
		{`"ranks":2,`, `"ranks":4,`},
		{`"seed":0}`, `"seed":0,"channels":2}`},
		{`"seed":0}`, `"seed":0,"efa":{}}`},
	} {
		edited := strings.Replace(string(data), edit[0], edit[1], 1)
		require.NotEqual(t, string(data), edited, edit)
		dir := t.TempDir()
		require.NoError(t, os.CopyFS(dir, os.DirFS(orig)))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestName), []byte(edited), 0o644))
		_, err := Run(g, RunOptions{Dir: dir, Shard: All, Jobs: 1})
		require.ErrorIs(t, err, ErrFolder, edit[1])
		assert.Contains(t, err.Error(), "point 0", edit[1])
		assert.Contains(t, err.Error(), "edited", edit[1])
		_, err = Merge(dir, MergeOptions{})
		require.ErrorIs(t, err, ErrFolder, edit[1])
		assert.NotErrorIs(t, err, ErrIncomplete, edit[1])
	}
}

// TestMergeRefusesLinkedOutputs: a symbolic link in DIR/merged at the
// name of a merged output is refused before anything is written: merge
// once wrote points.csv through a link to ../grid.json, replacing the
// folder's manifest with the CSV.
func TestMergeRefusesLinkedOutputs(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [4K, 64K]\n"))
	for _, name := range []string{CSVName, ReportName, PlotName(0)} {
		dir := t.TempDir()
		run(t, g, dir, All, 1)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, MergedDir), 0o755))
		require.NoError(t, os.Symlink(filepath.Join("..", ManifestName), filepath.Join(dir, MergedDir, name)))
		before := tree(t, dir)
		_, err := Merge(dir, MergeOptions{})
		require.ErrorIs(t, err, ErrFolder, name)
		assert.Contains(t, err.Error(), "symbolic link", name)
		assert.Equal(t, before, tree(t, dir), "%s: nothing was written", name)
		_, err = Run(g, RunOptions{Dir: dir, Shard: All, Jobs: 1})
		require.NoError(t, err, "%s: the manifest is intact", name)
	}
}

// TestRunRefusesLinkedResults: a symbolic link at the result or host-time
// file of a point to run is refused before anything runs: run once wrote
// the point's result through a link in DIR/points onto its target, a file
// outside the folder.
func TestRunRefusesLinkedResults(t *testing.T) {
	g := mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [4K]\n"))
	p := &g.points[0]
	for _, sub := range []string{PointsDir, HostDir} {
		dir := t.TempDir()
		outside := filepath.Join(t.TempDir(), "precious.txt")
		require.NoError(t, os.WriteFile(outside, []byte("not a result\n"), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
		require.NoError(t, os.Symlink(outside, filepath.Join(dir, sub, p.Hash+".json")))
		st, err := Run(g, RunOptions{Dir: dir, Shard: All, Jobs: 1})
		require.ErrorIs(t, err, ErrFolder, sub)
		assert.Contains(t, err.Error(), "symbolic link", sub)
		assert.Zero(t, st.Ran, sub)
		got, err := os.ReadFile(outside)
		require.NoError(t, err)
		assert.Equal(t, "not a result\n", string(got), "%s: the link's target is left alone", sub)
	}
}

// TestRunBadOptions: -j and the shard are checked before the folder is
// touched.
func TestRunBadOptions(t *testing.T) {
	g := loadExample(t)
	for _, o := range []RunOptions{
		{Shard: All, Jobs: 0}, {Shard: All, Jobs: MaxJobs + 1},
		{Shard: Shard{Index: 4, Count: 4}, Jobs: 1}, {Shard: Shard{Index: -1, Count: 2}, Jobs: 1}, {Shard: Shard{Index: 0, Count: 0}, Jobs: 1},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		o.Dir = dir
		_, err := Run(g, o)
		require.ErrorIs(t, err, ErrShard, "%+v", o)
		_, err = os.Stat(dir)
		assert.ErrorIs(t, err, fs.ErrNotExist, "nothing created for %+v", o)
	}
}

// TestRunMemoryBound: -j workers at once must fit in the memory limit
// together: a functional point of several GiB refuses -j 256 before the
// folder is touched.
func TestRunMemoryBound(t *testing.T) {
	g, err := ParseGrid("grid.yaml", []byte("arch: cayman\nmode: functional\naxes:\n  devices: [2]\n  ops: [all_reduce]\n  sizes: [256M]\n"))
	if errors.Is(err, memlimit.ErrTooLarge) {
		t.Skipf("SKIPPED: this machine's memory limit refuses the point itself: %v", err)
	}
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "out")
	_, err = Run(g, RunOptions{Dir: dir, Shard: All, Jobs: MaxJobs})
	require.ErrorIs(t, err, memlimit.ErrTooLarge)
	assert.Contains(t, err.Error(), "lower -j")
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// TestRowValues: points.csv's records and the SQLite table's values are
// one row of Columns, of the types Records formats, empty or NULL where a
// point has none; an unsigned number past SQLite's INTEGER is refused
// naming its column, not wrapped.
func TestRowValues(t *testing.T) {
	bw := uint64(50 << 30)
	ok := PointResult{Point: Point{Index: 3, Hash: "h", Arch: "mariana", Devices: 4, Nodes: 2, Channels: 8, Size: 4096, Seed: 7, LinkBW: &bw},
		Status: StatusOK, Row: &Row{Count: 1024, TimePS: 1 << 40, TimeUS: 1.5, AlgBW: 2.25, BusBW: 3, Algorithm: "ring"}}
	failed := PointResult{Point: Point{Index: 4, Seed: 1 << 63}, Status: StatusFailed, Error: "no"}
	for _, r := range []PointResult{ok, failed} {
		vals := rowValues(&r)
		require.Len(t, vals, len(Columns))
		for i, v := range vals {
			switch v.(type) {
			case nil, string, int, int64, uint64, float64:
			default:
				t.Errorf("column %s holds a %T", Columns[i], v)
			}
		}
	}
	f := &Folder{Results: []PointResult{ok, failed}}
	recs := f.Records()
	col := func(name string) int { return slices.Index(Columns, name) }
	assert.Equal(t, []string{"", "53687091200", "8", "7", "1099511627776", "1.5", "ring", ""},
		[]string{recs[0][col("system")], recs[0][col("link_bw_Bps")], recs[0][col("channels")], recs[0][col("seed")],
			recs[0][col("time_ps")], recs[0][col("time_avg_us")], recs[0][col("algorithm")], recs[0][col("error")]})
	assert.Equal(t, []string{"", "", "9223372036854775808", "no"},
		[]string{recs[1][col("channels")], recs[1][col("time_ps")], recs[1][col("seed")], recs[1][col("error")]})

	vals, err := sqliteValues(&ok)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<40), vals[col("time_ps")])
	assert.Nil(t, vals[col("system")])
	_, err = sqliteValues(&failed)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "column seed: 9223372036854775808 exceeds SQLite's INTEGER")
}

// TestPrepareRace: tasks of two grids that start together on one new
// results folder — as two job arrays aimed at the same --out do — leave
// exactly one grid's manifest, and only that grid's tasks go on: each of
// the other's is refused as written by another grid, whichever won.
func TestPrepareRace(t *testing.T) {
	grids := []*Grid{
		mustGrid(t, gridYAML("  devices: [2]\n  ops: [all_reduce]\n  sizes: [1K]\n")),
		mustGrid(t, gridYAML("  devices: [4]\n  ops: [all_reduce]\n  sizes: [1K]\n")),
	}
	require.NotEqual(t, grids[0].hash, grids[1].hash)
	for round := range 20 {
		dir := filepath.Join(t.TempDir(), "out")
		const tasks = 8 // per grid
		errs := make([]error, 2*tasks)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = grids[i%2].prepare(dir) })
		}
		wg.Wait()
		m, err := readManifest(dir)
		require.NoError(t, err, "round %d", round)
		won := slices.IndexFunc(grids, func(g *Grid) bool { return g.hash == m.Grid })
		require.GreaterOrEqual(t, won, 0, "round %d: the manifest is one of the grids'", round)
		for i, err := range errs {
			if i%2 == won {
				assert.NoError(t, err, "round %d task %d", round, i)
			} else {
				assert.ErrorIs(t, err, ErrFolder, "round %d task %d", round, i)
				assert.ErrorContains(t, err, "written by another grid")
			}
		}
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			assert.False(t, output.IsTemp(e.Name()), "round %d: %s left behind", round, e.Name())
		}
	}
}
