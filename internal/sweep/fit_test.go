package sweep

import (
	"fmt"
	"go/format"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// fitEnv is the environment variable that turns TestFitEstimates on.
const fitEnv = "NEURONSIM_FIT_ESTIMATES"

// workTerm is one constant of the host-time model (features.work): its Go
// name in plan.go, its current value, and the feature it multiplies.
type workTerm struct {
	name  string
	value func() float64
	of    func(f features) float64
}

// workTerms lists features.work's constants in the order plan.go declares
// them; work is the sum over them of value × of (TestWorkTerms holds the
// two equal).
var workTerms = []workTerm{
	{"workBase", func() float64 { return workBase }, func(features) float64 { return 1 }},
	perDevice(hwarch.Sunda), perDevice(hwarch.Cayman), perDevice(hwarch.Mariana),
	devPair(hwarch.Sunda), devPair(hwarch.Cayman), devPair(hwarch.Mariana),
	{"workPerRank", func() float64 { return workPerRank }, func(f features) float64 { return float64(f.ranks) }},
	{"workPerDesc", func() float64 { return workPerDesc }, func(f features) float64 { return descsOf(f) }},
	{"workDescRank", func() float64 { return workDescRank }, func(f features) float64 { return descsOf(f) * float64(f.ranks) }},
	{"workRankStep", func() float64 { return workRankStep }, func(f features) float64 { return float64(f.rankSteps) }},
	perByte(fabric.Aware), perByte(fabric.Free),
	{"workPerByteFn", func() float64 { return workPerByteFn }, func(f features) float64 { return when(f.functional && !halfFloat(f), float64(f.bytes)) }},
	{"workPerByteHF", func() float64 { return workPerByteHF }, func(f features) float64 { return when(f.functional && halfFloat(f), float64(f.bytes)) }},
	{"workPerBufFn", func() float64 { return workPerBufFn }, func(f features) float64 { return when(f.functional && !halfFloat(f), f.payload()) }},
	{"workPerBufHF", func() float64 { return workPerBufHF }, func(f features) float64 { return when(f.functional && halfFloat(f), f.payload()) }},
}

func perDevice(g hwarch.Generation) workTerm {
	return workTerm{fmt.Sprintf("workPerDevice[hwarch.%s]", genName(g)), func() float64 { return workPerDevice[g] },
		func(f features) float64 { return when(f.gen == g, float64(f.devices)) }}
}

func devPair(g hwarch.Generation) workTerm {
	return workTerm{fmt.Sprintf("workDevPair[hwarch.%s]", genName(g)), func() float64 { return workDevPair[g] },
		func(f features) float64 { return when(f.gen == g, float64(f.devices)*float64(f.devices)) }}
}

func perByte(m fabric.Model) workTerm {
	return workTerm{fmt.Sprintf("workPerByte[fabric.%s]", map[fabric.Model]string{fabric.Aware: "Aware", fabric.Free: "Free"}[m]),
		func() float64 { return workPerByte[m] }, func(f features) float64 { return when(!f.functional && f.model == m, float64(f.bytes)) }}
}

func genName(g hwarch.Generation) string {
	return map[hwarch.Generation]string{hwarch.Sunda: "Sunda", hwarch.Cayman: "Cayman", hwarch.Mariana: "Mariana"}[g]
}

func descsOf(f features) float64 { return float64(f.xfers) * float64(f.engines) }

func halfFloat(f features) bool { return f.dtype == enc.BFloat16 || f.dtype == enc.Float16 }

// when is v when cond holds, and 0 otherwise.
func when(cond bool, v float64) float64 {
	if !cond {
		return 0
	}
	return v
}

// fitRows are the rows of the least-squares problem fitNonNegative
// solves: a point's features over its measured time, and 1 (its target
// value) last, so that the residual is the relative error; and one row
// more, weighted as all the points together, for the reference points'
// sums: Calibrate scales every estimate by their measured time over their
// work, so that is made 1 (as good as a constraint) and the points'
// fitted ratios are their calibrated ones.
func fitRows(pts []fitPoint) [][]float64 {
	n := len(workTerms)
	rows := make([][]float64, len(pts), len(pts)+1)
	ref := make([]float64, n+1)
	for i, p := range pts {
		m := float64(p.measured.Nanoseconds())
		rows[i] = make([]float64, n+1)
		for j, v := range p.x {
			rows[i][j] = v / m
			if p.reference {
				ref[j] += v
			}
		}
		rows[i][n] = 1
		if p.reference {
			ref[n] += m
		}
	}
	w := math.Sqrt(float64(len(pts)))
	for j := range n {
		ref[j] *= w / ref[n]
	}
	ref[n] = w
	return append(rows, ref)
}

// fitPoint is one measured point of the fitting grids.
type fitPoint struct {
	what      string        // file, index and a description
	reference bool          // one of Calibrate's reference points
	x         []float64     // workTerms' features
	measured  time.Duration // the best CPU time of its runs
}

// TestFitEstimates refits the host-time model's constants (features.work)
// on this machine, when NEURONSIM_FIT_ESTIMATES=1: it measures the CPU
// time of every point of testdata/estimate*.yaml, testdata/fit/*.yaml and
// Calibrate's reference points (the best of 3 runs of each, 2 for a point
// over 100 ms), fits the constants by least squares of the relative error
// (non-negative: a term that comes out negative is dropped, 0, and the rest
// refitted) and prints them as the Go source of plan.go's block, with the
// fitted and the calibrated estimate/measured ratios and the worst points.
func TestFitEstimates(t *testing.T) {
	if os.Getenv(fitEnv) != "1" {
		t.Skipf("SKIPPED TestFitEstimates: it refits the host-time model (about 2 minutes); run it with %s=1 go test ./internal/sweep/ -run TestFitEstimates -count=1 -v", fitEnv)
	}
	if raceEnabled || !cpuTimeWorks {
		t.Skip("SKIPPED TestFitEstimates: it needs CPU time (getrusage) and no race detector")
	}
	pts := measureFitPoints(t)
	c := fitNonNegative(fitRows(pts))
	fmt.Print(fitReport(pts, c))
}

// measureFitPoints measures every point of the fitting grids.
func measureFitPoints(t *testing.T) []fitPoint {
	files, err := filepath.Glob("testdata/fit/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/fit/*.yaml: %v", err)
	}
	var grids []*Grid
	var names []string
	for _, src := range referenceGrids {
		g, err := ParseGrid("(reference points)", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		grids, names = append(grids, g), append(names, "reference")
	}
	for _, f := range append([]string{"testdata/estimate.yaml", "testdata/estimate-functional.yaml"}, files...) {
		g, err := LoadGrid(f)
		if err != nil {
			t.Fatal(err)
		}
		grids, names = append(grids, g), append(names, f)
	}
	var pts []fitPoint
	start := time.Now()
	for k, g := range grids {
		for i, p := range g.Points() {
			d, err := g.cpuTimeOf(i)
			if err == nil {
				var more time.Duration
				more, err = g.bestCPUTime(i, fitRuns(d)-1)
				d = min(d, more)
			}
			if err != nil {
				t.Fatalf("%s point %d: %v", names[k], i, err)
			}
			f := g.specs[i].feat
			x := make([]float64, len(workTerms))
			for j, term := range workTerms {
				x[j] = term.of(f)
			}
			what := fmt.Sprintf("%s #%d (%s %d devices × %d ranks, %s %s %s %s %d B)", names[k], i,
				p.Arch, p.Devices, p.RanksPer, p.Mode, p.Model, p.Op, p.Dtype, p.Size)
			pts = append(pts, fitPoint{what: what, reference: names[k] == "reference", x: x, measured: max(d, time.Microsecond)})
		}
	}
	t.Logf("measured %d points in %v", len(pts), time.Since(start).Round(time.Second))
	return pts
}

// fitRuns is how many runs of a point whose first run took d measure it:
// 3, and 2 past 100 ms (so the fit stays a couple of minutes).
func fitRuns(d time.Duration) int {
	if d > 100*time.Millisecond {
		return 2
	}
	return 3
}

// fitNonNegative returns the c ≥ 0 minimising Σᵢ (rows[i]·c − yᵢ)², yᵢ
// each row's last value and rows[i]·c the product with the others: the
// least-squares solution over the terms still in, with the most negative
// term dropped (its constant 0) and the rest refitted until none is
// negative. A term no row has (a zero column) is dropped too.
func fitNonNegative(rows [][]float64) []float64 {
	n := len(rows[0]) - 1
	in := make([]bool, n)
	for _, r := range rows {
		for j, v := range r[:n] {
			in[j] = in[j] || v != 0
		}
	}
	for {
		c := leastSquares(rows, in)
		worst := -1
		for j := range c {
			if in[j] && c[j] < 0 && (worst < 0 || c[j] < c[worst]) {
				worst = j
			}
		}
		if worst < 0 {
			return c
		}
		in[worst] = false
	}
}

// leastSquares solves the normal equations of rows·c ≈ y over the columns
// in (the others' c are 0), each column scaled to a largest |value| of 1
// for the conditioning, by Gaussian elimination with partial pivoting.
func leastSquares(rows [][]float64, in []bool) []float64 {
	var cols []int
	for j, ok := range in {
		if ok {
			cols = append(cols, j)
		}
	}
	scale := make([]float64, len(cols))
	for k, j := range cols {
		for _, r := range rows {
			scale[k] = max(scale[k], math.Abs(r[j]))
		}
	}
	m := len(cols)
	a := make([][]float64, m) // the normal equations, b in column m
	for p := range a {
		a[p] = make([]float64, m+1)
		for _, r := range rows {
			for q := range m {
				a[p][q] += r[cols[p]] / scale[p] * r[cols[q]] / scale[q]
			}
			a[p][m] += r[cols[p]] / scale[p] * r[len(in)]
		}
	}
	for p := range m {
		piv := p
		for q := p + 1; q < m; q++ {
			if math.Abs(a[q][p]) > math.Abs(a[piv][p]) {
				piv = q
			}
		}
		a[p], a[piv] = a[piv], a[p]
		for q := p + 1; q < m; q++ {
			f := a[q][p] / a[p][p]
			for k := p; k <= m; k++ {
				a[q][k] -= f * a[p][k]
			}
		}
	}
	c := make([]float64, len(in))
	for p := m - 1; p >= 0; p-- {
		v := a[p][m]
		for q := p + 1; q < m; q++ {
			v -= a[p][q] * c[cols[q]] * scale[q]
		}
		c[cols[p]] = v / a[p][p] / scale[p]
	}
	return c
}

// fitReport is what TestFitEstimates prints: the fitted constants as the Go
// source of plan.go's block, then, as comments, each constant before and
// after, and the estimate/measured ratios of the old and the new constants.
func fitReport(pts []fitPoint, c []float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "var (\n// Fitted by TestFitEstimates on %s: %d points.\n", time.Now().UTC().Format("2006-01-02"), len(pts))
	var keys []string
	entries := map[string][]string{}
	for j, term := range workTerms {
		key, elem, isMap := strings.Cut(term.name, "[")
		if _, seen := entries[key]; !seen {
			keys = append(keys, key)
		}
		if isMap {
			entries[key] = append(entries[key], strings.TrimSuffix(elem, "]")+": "+goFloat(c[j]))
		} else {
			entries[key] = append(entries[key], goFloat(c[j]))
		}
	}
	for _, key := range keys {
		v := entries[key][0]
		if strings.Contains(v, ": ") {
			typ := "map[hwarch.Generation]float64"
			if strings.HasPrefix(v, "fabric.") {
				typ = "map[fabric.Model]float64"
			}
			v = typ + "{" + strings.Join(entries[key], ", ") + "}"
		}
		fmt.Fprintf(&b, "%s = %s\n", key, v)
	}
	b.WriteString(")\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		return fmt.Sprintf("formatting the fitted constants: %v\n%s", err, b.String())
	}
	out := "\n// ---- paste over plan.go's host-time constants (the var block of workBase …) ----\n" + string(src) + "// ----\n"
	for j, term := range workTerms {
		out += fmt.Sprintf("// %-30s before %-10s after %s\n", term.name, goFloat(term.value()), goFloat(c[j]))
	}
	old := make([]float64, len(workTerms))
	for j, term := range workTerms {
		old[j] = term.value()
	}
	out += ratioReport("before (plan.go's constants)", pts, old, 0)
	return out + ratioReport("after (the fitted constants)", pts, c, 12)
}

// ratioReport summarises the estimate/measured ratios of constants c over
// pts, calibrated as Calibrate does (scaled by the reference points'
// measured time over their work), with the worst points.
func ratioReport(title string, pts []fitPoint, c []float64, worst int) string {
	work := func(p fitPoint) float64 {
		var w float64
		for j, v := range p.x {
			w += v * c[j]
		}
		return w
	}
	var refMeasured, refWork float64
	for _, p := range pts {
		if p.reference {
			refMeasured += float64(p.measured.Nanoseconds())
			refWork += work(p)
		}
	}
	scale := refMeasured / refWork
	type ratio struct {
		r float64
		p fitPoint
	}
	rs := make([]ratio, len(pts))
	outside := 0
	for i, p := range pts {
		rs[i] = ratio{work(p) * scale / float64(p.measured.Nanoseconds()), p}
		if rs[i].r < 0.5 || rs[i].r > 2 {
			outside++
		}
	}
	sort.Slice(rs, func(a, b int) bool { return rs[a].r < rs[b].r })
	s := fmt.Sprintf("// %s: calibration %.3g; estimate/measured min %.2f, median %.2f, max %.2f; %d of %d outside 2×\n",
		title, scale, rs[0].r, rs[len(rs)/2].r, rs[len(rs)-1].r, outside, len(rs))
	sort.Slice(rs, func(a, b int) bool { return math.Abs(math.Log(rs[a].r)) > math.Abs(math.Log(rs[b].r)) })
	for _, r := range rs[:min(worst, len(rs))] {
		s += fmt.Sprintf("//   %.2f  %v  %s\n", r.r, r.p.measured.Round(time.Microsecond), r.p.what)
	}
	return s
}

// goFloat writes v as a float literal of 4 significant digits, in
// thousands (56.23e3) from 10,000 up.
func goFloat(v float64) string {
	if math.Abs(v) >= 1e4 {
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", roundSig(v/1e3, 4)), "0"), ".") + "e3"
	}
	s := fmt.Sprintf("%.4g", v)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, float64(n-1)-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// TestWorkTerms: workTerms is features.work term by term, so the constants
// TestFitEstimates fits are the ones work uses, on every kind of point.
func TestWorkTerms(t *testing.T) {
	for _, f := range []features{
		{gen: hwarch.Sunda, devices: 8, ranks: 16, engines: 4, xfers: 300, rankSteps: 90, bytes: 1 << 20},
		{gen: hwarch.Cayman, devices: 4, model: fabric.Free, ranks: 4, engines: 16, xfers: 24, rankSteps: 12, bytes: 3 << 20},
		{gen: hwarch.Mariana, devices: 64, ranks: 256, engines: 1, xfers: 70000, rankSteps: 6000, bytes: 1 << 30},
		{gen: hwarch.Cayman, devices: 2, functional: true, dtype: enc.Float32, ranks: 2, engines: 16, xfers: 4, rankSteps: 4, bytes: 1 << 20, buffers: 3 << 20},
		{gen: hwarch.Cayman, devices: 2, functional: true, dtype: enc.BFloat16, ranks: 2, engines: 16, xfers: 4, rankSteps: 4, bytes: 1 << 20, buffers: 3 << 20},
	} {
		var w float64
		for _, term := range workTerms {
			w += term.value() * term.of(f)
		}
		if got := f.work(); math.Abs(float64(got)-w) > 1 {
			t.Errorf("%+v: work() %d, workTerms give %.1f", f, got, w)
		}
	}
}

// TestFitNonNegative: the fit recovers the constants of exact data, and a
// term the data would make negative comes out 0 with the rest refitted.
func TestFitNonNegative(t *testing.T) {
	for _, tc := range []struct {
		name string
		x    [][]float64 // features, one row a point
		y    []float64
		want []float64
	}{
		{"exact", [][]float64{{1, 2, 0}, {1, 5, 1e6}, {1, 9, 3e6}, {1, 1, 0}},
			[]float64{1 + 2*3, 1 + 5*3 + 1e6*1e-3, 1 + 9*3 + 3e6*1e-3, 1 + 3}, []float64{1, 3, 1e-3}},
		{"a negative term dropped", [][]float64{{1, 1}, {1, 2}, {1, 3}},
			[]float64{3, 2, 1}, []float64{2, 0}},
		{"a term no point has", [][]float64{{1, 0}, {2, 0}}, []float64{2, 4}, []float64{2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := make([][]float64, len(tc.x))
			for i, x := range tc.x {
				rows[i] = append(append([]float64(nil), x...), tc.y[i])
			}
			got := fitNonNegative(rows)
			for j := range tc.want {
				if math.Abs(got[j]-tc.want[j]) > 1e-9*math.Max(1, math.Abs(tc.want[j])) {
					t.Errorf("constant %d: got %g, want %g (all %v)", j, got[j], tc.want[j], got)
				}
			}
		})
	}
}
