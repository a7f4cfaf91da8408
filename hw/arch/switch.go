package arch

import (
	"errors"
	"fmt"

	"github.com/neuronsim/neuronsim/internal/units"
)

// SwitchFamily says which NeuronSwitch a Trn3 system is built on. The runtime
// asks it through nrt_is_neuron_switch_v1_family(); on mariana it doubles the
// fabric extent (get_max_devs, get_mesh_max_folds).
type SwitchFamily uint8

// The switch families.
const (
	SwitchNone SwitchFamily = iota // no NeuronSwitch-v1 (torus, ring or a non-v1 switch)
	SwitchV1                       // NeuronSwitch-v1 family
)

// DefaultSwitchFamily is the switch family a system of generation g has when
// none is named: NeuronSwitch-v1 on mariana (Trn3 systems are built on it,
// and it doubles their fabric extent to 32 devices), none on the others.
// Every command that builds or describes a system and every scenario file
// take this one rule.
func DefaultSwitchFamily(g Generation) SwitchFamily {
	if g == Mariana {
		return SwitchV1
	}
	return SwitchNone
}

// ErrUnknownSwitchFamily is returned (wrapped) by ParseSwitchFamily.
var ErrUnknownSwitchFamily = errors.New("unknown switch family")

// IsV1 reports whether the family is NeuronSwitch-v1 (nrt_is_neuron_switch_v1_family).
func (s SwitchFamily) IsV1() bool { return s == SwitchV1 }

// String returns "v1" or "none".
func (s SwitchFamily) String() string {
	switch s {
	case SwitchNone:
		return "none"
	case SwitchV1:
		return "v1"
	}
	return fmt.Sprintf("switch(%d)", uint8(s))
}

// ParseSwitchFamily reads "v1" or "none".
func ParseSwitchFamily(s string) (SwitchFamily, error) {
	switch units.Word(s) {
	case "v1":
		return SwitchV1, nil
	case "none":
		return SwitchNone, nil
	}
	return SwitchNone, fmt.Errorf("%w %q: accepted words are v1|none", ErrUnknownSwitchFamily, s)
}

// Set implements pflag.Value.
func (s *SwitchFamily) Set(v string) error {
	f, err := ParseSwitchFamily(v)
	if err != nil {
		return err
	}
	*s = f
	return nil
}

// Type implements pflag.Value.
func (s *SwitchFamily) Type() string { return "switch" }
