package vfiouser

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim"
)

// ErrPacing: the Options of a server ask for pacing that cannot be: a
// Pacer together with NoPacing, a Pacer of another system's clock, or no
// Pacer for a device of a system.
var ErrPacing = errors.New("vfio-user: pacing misconfigured")

// ErrWiring: a device's guest memory (its host port) cannot be the
// server's: another server has it, or it was built with other DMA limits.
var ErrWiring = errors.New("vfio-user: device and server do not fit together")

// WallClock returns the wall time passed since an origin of its own; it
// is read by a Pacer, which only uses differences of its readings. A
// reading below an earlier one counts as no time passed.
type WallClock func() time.Duration

// RealWallClock returns a WallClock of the process's monotonic clock, its
// origin the call.
func RealWallClock() WallClock {
	start := time.Now()
	return func() time.Duration { return time.Since(start) }
}

// Bounds of PacerOptions.Tick.
const (
	DefaultTick = time.Millisecond
	MinTick     = 10 * time.Microsecond
	MaxTick     = time.Second
)

// PacerOptions configure a Pacer; a zero field takes the default named
// beside it.
type PacerOptions struct {
	// Wall is the wall clock pacing follows (RealWallClock()); tests give
	// their own, so that pacing is deterministic.
	Wall WallClock
	// Tick is how often the clock is paced while a client is connected but
	// makes no BAR access (DefaultTick; MinTick to MaxTick): the driver
	// waits for a DMA's completion by polling guest memory, not registers.
	Tick time.Duration
	// RunAhead is how far past the clock the events a BAR write leaves
	// pending run at once, after the write (DefaultRunAhead; 0 to
	// MaxRunAhead; NoRunAhead turns it off): a DMA the write started
	// completes before the guest polls for it, whatever the host's load
	// (sim.Device.RunAhead). Work due later (a firmware reset) still
	// waits for wall time.
	RunAhead time.Duration
	// NoRunAhead turns running ahead off.
	NoRunAhead bool
}

// Bounds of PacerOptions.RunAhead.
const (
	DefaultRunAhead = time.Millisecond
	MaxRunAhead     = 10 * time.Millisecond
)

// Pacer keeps the device clock of one system up with wall time while its
// devices are served to a guest. A guest driver waits in wall time (msleep
// between polls of a register), while the model's clock otherwise moves
// only by the MMIO latency of each access, so without pacing a firmware
// boot of 500 ms would take half a million polls. Before each BAR access
// it handles, a Server calls Pace, which moves the clock to at least its
// time when the Pacer was made plus the wall time passed since, running
// the events that fall due (firmware boot and resets, DMA completions).
// While at least one client of the system is connected it also paces every
// Tick in the background, so that a DMA completes in wall time while the
// driver polls its completion marker in guest memory with no register
// access at all (neuron_dma.c:224–270, udelay between reads of the marker).
// An error of background pacing (the clock's limit) is reported by the
// next access.
//
// The devices of one system share one engine and one lock
// (sim.Wiring.Engine/Lock), so they share one Pacer: build it from
// any one of them and pass it in the Options of every server of the
// system. The clock goes on following wall time across sessions — while no
// client is connected a real device keeps running too — and catches up
// with the first access of the next session. A Pacer is safe for
// concurrent use.
type Pacer struct {
	dev    *sim.Device // any device of the system: its clock is the system's
	wall   WallClock
	tick   time.Duration
	ahead  sim.Time      // RunAhead; 0: off
	wall0  time.Duration // the wall clock's reading when the Pacer was made
	clock0 sim.Time      // the device clock then

	mu       sync.Mutex
	sessions int           // clients connected to the system's servers
	stop     chan struct{} // closes to end the background pacing
	done     chan struct{} // closed when it has ended
}

// NewPacer returns a Pacer of dev's clock (the system's, for a device of a
// system). A Tick outside [MinTick, MaxTick] is refused with ErrLimit.
func NewPacer(dev *sim.Device, opt PacerOptions) (*Pacer, error) {
	if dev == nil {
		return nil, fmt.Errorf("vfio-user: pacer of no device: %w", ErrMessage)
	}
	if opt.Wall == nil {
		opt.Wall = RealWallClock()
	}
	if opt.Tick == 0 {
		opt.Tick = DefaultTick
	}
	if opt.Tick < MinTick || opt.Tick > MaxTick {
		return nil, fmt.Errorf("vfio-user: pacer tick %v outside [%v, %v]: %w", opt.Tick, MinTick, MaxTick, ErrLimit)
	}
	switch {
	case opt.NoRunAhead && opt.RunAhead != 0:
		return nil, fmt.Errorf("vfio-user: pacer: both RunAhead %v and NoRunAhead: %w", opt.RunAhead, ErrLimit)
	case opt.RunAhead == 0 && !opt.NoRunAhead:
		opt.RunAhead = DefaultRunAhead
	case opt.RunAhead < 0 || opt.RunAhead > MaxRunAhead:
		return nil, fmt.Errorf("vfio-user: pacer: RunAhead %v outside [0, %v]: %w", opt.RunAhead, MaxRunAhead, ErrLimit)
	}
	return &Pacer{dev: dev, wall: opt.Wall, tick: opt.Tick, ahead: sim.FromDuration(opt.RunAhead), wall0: opt.Wall(), clock0: dev.Now()}, nil
}

// enter counts a session in; the first starts the background pacing.
func (p *Pacer) enter() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sessions++
	if p.sessions > 1 {
		return
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.background(p.stop, p.done)
}

// shared reports whether another session than the caller's is live on
// the Pacer's system: a wait of the caller's, which holds the system's
// lock, then stalls a client of another device (Options.WaitBudget).
func (p *Pacer) shared() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions > 1
}

// leave counts a session out; the last stops the background pacing and
// waits for it to end.
func (p *Pacer) leave() {
	p.mu.Lock()
	p.sessions--
	if p.sessions > 0 {
		p.mu.Unlock()
		return
	}
	stop, done := p.stop, p.done
	p.stop, p.done = nil, nil
	p.mu.Unlock()
	close(stop)
	<-done
}

func (p *Pacer) background(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(p.tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_ = p.Pace() // a failure (the clock's limit) is the next access's error
		}
	}
}

// runAhead runs the events due within the pacer's RunAhead at once (after
// a BAR write).
func (p *Pacer) runAhead() {
	if p.ahead > 0 {
		p.dev.RunAhead(p.ahead)
	}
}

// paces reports whether p keeps the clock of d (d shares its engine).
func (p *Pacer) paces(d *sim.Device) bool { return p.dev.Engine() == d.Engine() }

// Target returns the clock time pacing moves to now: the clock's time when
// the Pacer was made plus the wall time passed since. A target past
// sim.MaxTime (the clock has run for about 53 days of wall time) is
// refused with an error wrapping sim.ErrTimeOverflow.
func (p *Pacer) Target() (sim.Time, error) {
	passed := p.wall() - p.wall0
	if passed < 0 {
		passed = 0 // the wall clock went back: no time passed
	}
	ps, err := units.DurationToPS("pacing: wall time passed", passed)
	if err != nil || sim.Time(ps) > sim.MaxTime-p.clock0 {
		return 0, fmt.Errorf("vfio-user: pacing: the device clock at %v plus %v of wall time passes the latest time %v: %w",
			p.clock0, passed, sim.MaxTime, sim.ErrTimeOverflow)
	}
	return p.clock0 + sim.Time(ps), nil
}

// Pace moves the clock to Target when it is behind it, running the events
// that fall due; a clock ahead of it (MMIO latency and sleeps run it ahead)
// stays where it is. It fails, moving nothing, as Target does.
func (p *Pacer) Pace() error {
	t, err := p.Target()
	if err != nil {
		return err
	}
	if _, err := p.dev.AdvanceTo(t); err != nil {
		return fmt.Errorf("vfio-user: pacing: %w", err)
	}
	return nil
}
