package arch

import (
	"errors"
	"fmt"
	"strings"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// ErrSwitchChangesNothing is wrapped by CheckSwitch's refusal.
var ErrSwitchChangesNothing = errors.New("the switch family changes nothing")

// SwitchChanges reports whether switch family f gives generation g (a
// valid one) other runtime tables than its default family does
// (hwarch.DefaultSwitchFamily): whether a property of them differs. It is
// read from the tables, not assumed: mariana's get_max_devs and
// get_mesh_max_folds follow the family; no property of sunda's or
// cayman's does.
func SwitchChanges(g hwarch.Generation, f hwarch.SwitchFamily) bool {
	a, b := MustFor(g, Options{Switch: f}), MustFor(g, Options{Switch: hwarch.DefaultSwitchFamily(g)})
	for _, p := range properties {
		if FormatValue(p.Get(a), true) != FormatValue(p.Get(b), true) {
			return true
		}
	}
	return false
}

// CheckSwitch refuses switch family f given for a system of generation g
// (a valid one) when it is not g's default and changes nothing there
// (SwitchChanges): a generation without NeuronSwitch-v1, whose tables are
// the same with either family, would otherwise run, and be reported, "with
// switch v1" as if that were in effect. The default is accepted, given or
// not. Every command's --switch, a scenario's system.switch and a sweep
// grid's switch take this one check; the caller names the setting.
func CheckSwitch(g hwarch.Generation, f hwarch.SwitchFamily) error {
	def := hwarch.DefaultSwitchFamily(g)
	if f == def || SwitchChanges(g, f) {
		return nil
	}
	var on []string
	for _, h := range hwarch.Generations() {
		for _, other := range []hwarch.SwitchFamily{hwarch.SwitchNone, hwarch.SwitchV1} {
			if other != hwarch.DefaultSwitchFamily(h) && SwitchChanges(h, other) {
				on = append(on, h.String())
				break
			}
		}
	}
	return fmt.Errorf("%w on %s: its runtime tables with switch %s are those with %s, its default (a switch family applies to %s only): leave it out",
		ErrSwitchChangesNothing, g, f, def, strings.Join(on, ", "))
}
