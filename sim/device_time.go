package sim

import "fmt"

// AdvanceTo moves the device's clock — the system's, for a device of a
// system, so every device of it moves together — forward to t, running the
// events that fall due on the way, as if the device had been left alone
// until then (sim/vfiouser's Pacer keeps a served device's clock up with
// the guest's wall time this way). It takes the device's lock and may be
// called from any goroutine, but not from an event handler. A t at or
// before the clock changes nothing: time never moves backwards. A t past
// [MaxTime] is refused with an error wrapping [ErrTimeOverflow], and
// nothing runs. It returns the clock afterwards.
func (d *Device) AdvanceTo(t Time) (Time, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t > MaxTime {
		return d.engine.Now(), fmt.Errorf("sim device %s: advance to %dps: past the latest time %dps (%v): %w",
			d.cfg.Name, uint64(t), uint64(MaxTime), MaxTime, ErrTimeOverflow)
	}
	d.engine.RunUntil(t) // a t before now runs nothing and leaves the clock alone
	return d.engine.Now(), nil
}

// RunAhead runs at once the events due within h of the device's clock (the
// system's), leaving the clock at the last one's time rather than at
// now+h, and returns the clock. It lets work a register write just started
// — a DMA of microseconds — finish without waiting for time to pass on the
// host: a served device's clock otherwise moves with the host's wall time,
// which a loaded host may let lag behind a driver's tight completion poll
// (sim/vfiouser runs ahead after each BAR write). Events further out than
// h, such as a firmware reset of hundreds of milliseconds, keep their
// time. It takes the device's lock and may not be called from an event
// handler. An h past the clock's room is cut to it.
func (d *Device) RunAhead(h Time) Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	limit := d.engine.Now() + min(h, MaxTime-d.engine.Now())
	for {
		at, ok := d.engine.NextAt()
		if !ok || at > limit {
			return d.engine.Now()
		}
		d.engine.RunUntil(at)
	}
}
