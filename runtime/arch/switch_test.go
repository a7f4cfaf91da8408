package arch

import (
	"errors"
	"strings"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// TestCheckSwitch: the switch family changes mariana's tables (get_max_devs,
// get_mesh_max_folds) and nothing of sunda's or cayman's, read from the
// tables; a family that is not the generation's default and changes
// nothing is refused, naming the generation and where a family applies.
func TestCheckSwitch(t *testing.T) {
	for _, tc := range []struct {
		g       hwarch.Generation
		f       hwarch.SwitchFamily
		changes bool
	}{
		{hwarch.Mariana, hwarch.SwitchNone, true},
		{hwarch.Mariana, hwarch.SwitchV1, false}, // the default
		{hwarch.Cayman, hwarch.SwitchV1, false},
		{hwarch.Sunda, hwarch.SwitchV1, false},
		{hwarch.Cayman, hwarch.SwitchNone, false},
	} {
		if got := SwitchChanges(tc.g, tc.f); got != tc.changes {
			t.Errorf("SwitchChanges(%s, %s) = %v, want %v", tc.g, tc.f, got, tc.changes)
		}
	}
	for _, g := range hwarch.Generations() {
		if err := CheckSwitch(g, hwarch.DefaultSwitchFamily(g)); err != nil {
			t.Errorf("CheckSwitch(%s, its default): %v", g, err)
		}
	}
	if err := CheckSwitch(hwarch.Mariana, hwarch.SwitchNone); err != nil {
		t.Errorf("CheckSwitch(mariana, none): %v", err)
	}
	for _, g := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman} {
		err := CheckSwitch(g, hwarch.SwitchV1)
		want := "the switch family changes nothing on " + g.String() + ": its runtime tables with switch v1 are those with none, its default (a switch family applies to mariana only)"
		if !errors.Is(err, ErrSwitchChangesNothing) || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSwitch(%s, v1) = %v, want %q", g, err, want)
		}
	}
}
