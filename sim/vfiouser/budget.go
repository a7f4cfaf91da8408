package vfiouser

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrWaitBudget: a session ended because its client kept the server
// waiting longer in all than Options.WaitBudget allows, each wait within
// Options.ReplyTimeout.
var ErrWaitBudget = errors.New("vfio-user: the client kept the server waiting past its wait budget")

// waitBudget keeps a session's account of Options.WaitBudget: the
// waiting the server may still do on the client, spent while at least
// one wait is under way and earned back at 1/WaitRefillDivisor of the
// time passing, never above the budget. With left the account at t,
// left(t) = min over a ≤ t (a from the session's start) of
// budget + (t−a)/WaitRefillDivisor − waited(a, t), so it falls to 0 the
// moment the server has waited more than budget + L/WaitRefillDivisor
// over a stretch of length L ending then: the rule of Options.WaitBudget.
type waitBudget struct {
	mu     sync.Mutex
	budget time.Duration
	left   time.Duration // at last
	last   time.Time
	active int           // waits under way
	waited time.Duration // in all, up to last
	start  time.Time
}

func newWaitBudget(budget time.Duration, now time.Time) *waitBudget {
	return &waitBudget{budget: budget, left: budget, last: now, start: now}
}

// advance brings the account up to now (a time before the last one is
// taken as the last one).
func (b *waitBudget) advance(now time.Time) {
	d := now.Sub(b.last)
	if d <= 0 {
		return
	}
	b.last = now
	earned := d / WaitRefillDivisor
	if b.active > 0 {
		b.left -= d - earned
		b.waited += d
		return
	}
	b.left = min(b.budget, b.left+earned)
}

// begin starts a wait at now and returns when the budget runs out if
// the server waits on until then: while a wait is under way the account
// falls at (1 − 1/WaitRefillDivisor) of the time passing, whatever other
// waits begin or end, so this is the moment the session must end unless
// this wait ends first. Each begin is followed by one end.
func (b *waitBudget) begin(now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	b.active++
	return now.Add(spendable(b.left))
}

// end ends a wait begun with begin.
func (b *waitBudget) end(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	b.active--
}

// spendable is how long a wait may last on an account of left: at the
// rate the account falls while the server waits, left ×
// WaitRefillDivisor/(WaitRefillDivisor−1), rounded up (0 when none is
// left).
func spendable(left time.Duration) time.Duration {
	if left <= 0 {
		return 0
	}
	// left ≤ MaxWaitBudget: no overflow
	return (left*WaitRefillDivisor + WaitRefillDivisor - 2) / (WaitRefillDivisor - 1)
}

// exhausted is the error of a wait given up at now because the budget ran
// out: what says what waited.
func (b *waitBudget) exhausted(what string, now time.Time) error {
	b.mu.Lock()
	b.advance(now)
	waited, in := b.waited, now.Sub(b.start)
	b.mu.Unlock()
	return fmt.Errorf("%s when the session's wait budget ran out (WaitBudget %v plus a tenth of the time; the server waited %v of the session's %v); session ended: %w",
		what, b.budget, waited.Round(time.Millisecond), in.Round(time.Millisecond), budgetEnded{})
}

// budgetEnded is ErrDisconnected for a session the wait budget ended: it
// says so as ErrDisconnected does, and is also ErrWaitBudget.
type budgetEnded struct{}

func (budgetEnded) Error() string   { return ErrDisconnected.Error() }
func (budgetEnded) Unwrap() []error { return []error{ErrWaitBudget, ErrDisconnected} }
