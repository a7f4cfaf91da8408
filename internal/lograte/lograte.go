// Package lograte bounds how many lines a server writes to its log: a peer
// that makes the server complain (a flood of connections, of malformed
// messages) must not fill the operator's terminal or disk. A [Limiter]
// passes up to Burst lines at once and then one line per Interval on
// average (a token bucket); the lines it drops are counted, and the next
// line it passes is preceded by one that says how many were dropped, so
// nothing is lost silently.
package lograte

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// The defaults of a serve log: 20 lines at once, then one a second.
const (
	DefaultBurst    = 20
	DefaultInterval = time.Second
)

// Limiter writes lines to W at a bounded rate. It is safe for concurrent
// use; lines are written whole, one at a time.
type Limiter struct {
	mu       sync.Mutex
	w        io.Writer
	prefix   string
	burst    float64
	interval time.Duration
	now      func() time.Time

	tokens  float64   // lines that may be written now
	last    time.Time // when tokens was last brought up to date
	dropped uint64    // lines dropped since the last line written
}

// New returns a Limiter that writes each line to w as prefix + the line +
// a newline, at most burst lines at once and one per interval after that.
// burst must be at least 1 and interval positive.
func New(w io.Writer, prefix string, burst int, interval time.Duration) (*Limiter, error) {
	if burst < 1 || interval <= 0 {
		return nil, fmt.Errorf("lograte: burst %d, interval %v: want a burst of at least 1 and a positive interval", burst, interval)
	}
	return newLimiter(w, prefix, burst, interval), nil
}

// NewDefault is New with DefaultBurst and DefaultInterval, which are
// valid.
func NewDefault(w io.Writer, prefix string) *Limiter {
	return newLimiter(w, prefix, DefaultBurst, DefaultInterval)
}

// newLimiter is New of settings already checked.
func newLimiter(w io.Writer, prefix string, burst int, interval time.Duration) *Limiter {
	return &Limiter{w: w, prefix: prefix, burst: float64(burst), interval: interval, now: time.Now, tokens: float64(burst)}
}

// Logf formats a line as fmt.Sprintf does and writes it, or counts it as
// dropped when the rate is spent. It reports whether the line was written.
func (l *Limiter) Logf(format string, args ...any) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.now()
	if !l.last.IsZero() && t.After(l.last) {
		l.tokens = min(l.burst, l.tokens+float64(t.Sub(l.last))/float64(l.interval))
	}
	if l.last.IsZero() || t.After(l.last) {
		l.last = t
	}
	if l.tokens < 1 {
		l.dropped++
		return false
	}
	l.tokens--
	l.flush()
	fmt.Fprintf(l.w, l.prefix+format+"\n", args...)
	return true
}

// Flush writes the count of the lines dropped since the last line
// written, if any (a server calls it as it stops, so that no drop goes
// unsaid).
func (l *Limiter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flush()
}

func (l *Limiter) flush() {
	if l.dropped > 0 {
		fmt.Fprintf(l.w, "%s%d log lines dropped (more than %d at once, or one per %v after that)\n", l.prefix, l.dropped, int(l.burst), l.interval)
		l.dropped = 0
	}
}

// Dropped returns the lines dropped since the last line written.
func (l *Limiter) Dropped() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}
