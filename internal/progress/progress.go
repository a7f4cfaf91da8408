// Package progress draws a progress bar on a terminal while a long
// command-line job (a collective sweep) runs, and nothing elsewhere. It is
// the command line's, kept out of runtime/.
package progress

import (
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar reports a long sweep's progress. On a terminal it draws a
// progress bar over the number of points (with a count and a time
// estimate), moving within a point as [Bar.Within] reports; otherwise (a
// pipe, a file, CI) it writes nothing, so that the table printed after it
// is all the output holds. A nil *Bar is a valid reporter that does
// nothing.
type Bar struct {
	bar        *progressbar.ProgressBar
	w          io.Writer
	desc       string
	points, at int // the sweep's points and those done
	done       bool
}

// perPoint is the bar's steps per point: a point's progress is drawn to
// 0.1 %.
const perPoint = 1000

// New returns a reporter for a sweep of total points that draws on
// w when isTerminal is true (see [IsTerminal]), described by desc (such as
// "all_reduce 32 devices"). With isTerminal false, a nil w or total < 1 the
// reporter writes nothing.
func New(w io.Writer, total int, isTerminal bool, desc string) *Bar {
	p := &Bar{w: w, desc: desc, points: total}
	if !isTerminal || w == nil || total < 1 || total > math.MaxInt/perPoint {
		return p
	}
	p.bar = progressbar.NewOptions(total*perPoint,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(p.label()),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
	)
	return p
}

// label is the bar's description: desc and the points done.
func (p *Bar) label() string { return fmt.Sprintf("%s %d/%d", p.desc, p.at, p.points) }

// Step records that one point of the sweep is done.
func (p *Bar) Step() {
	if p == nil || p.bar == nil || p.done || p.at >= p.points {
		return
	}
	p.at++
	_ = p.bar.Set(p.at * perPoint) // errors only concern the drawing
	p.bar.Describe(p.label())
}

// Within records how much of the point under way is done, a fraction
// from 0 to 1 (clamped; NaN is 0): a long collective's descriptors
// fetched of its total.
func (p *Bar) Within(fraction float64) {
	if p == nil || p.bar == nil || p.done || p.at >= p.points {
		return
	}
	if !(fraction > 0) {
		fraction = 0
	}
	_ = p.bar.Set(p.at*perPoint + int(min(fraction, 1)*(perPoint-1)))
}

// Done ends the bar, leaving it on screen as it stands, and moves to a new
// line so that what is printed next starts cleanly. Calling it again, or on
// a reporter that draws nothing, does nothing.
func (p *Bar) Done() {
	if p == nil || p.bar == nil || p.done {
		return
	}
	p.done = true
	if !p.bar.IsFinished() {
		_ = p.bar.Exit()
	}
	fmt.Fprintln(p.w)
}

// IsTerminal reports whether f is a terminal; a nil f is not.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}
