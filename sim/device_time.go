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
