// Package progress draws a progress bar on a terminal while a long
// command-line job (a collective sweep) runs, and nothing elsewhere. It is
// the command line's, kept out of runtime/.
package progress

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar reports a long sweep's progress. On a terminal it draws a
// progress bar over the number of points (with a count and a time
// estimate); otherwise (a pipe, a file, CI) it writes nothing, so that the
// table printed after it is all the output holds. A nil *Bar is a valid
// reporter that does nothing.
type Bar struct {
	bar  *progressbar.ProgressBar
	w    io.Writer
	done bool
}

// New returns a reporter for a sweep of total points that draws on
// w when isTerminal is true (see [IsTerminal]), described by desc (such as
// "all_reduce 32 devices"). With isTerminal false, a nil w or total < 1 the
// reporter writes nothing.
func New(w io.Writer, total int, isTerminal bool, desc string) *Bar {
	p := &Bar{w: w}
	if !isTerminal || w == nil || total < 1 {
		return p
	}
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
	)
	return p
}

// Step records that one point of the sweep is done.
func (p *Bar) Step() {
	if p == nil || p.bar == nil || p.done {
		return
	}
	_ = p.bar.Add(1) // errors (a step past total) only concern the drawing
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
