package scenario

import (
	"go.yaml.in/yaml/v3"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// systemWords are the words of the system section as written, each read
// into its value, without defaults: a key left out is nil. readWords is
// the one reading of them — resolveSystem takes its values from it, and
// so do the keys a restore compares with the snapshot's system (givenKeys)
// — so that a word means the same to both, and a word that is no value of
// its key is refused whether or not a snapshot is restored.
type systemWords struct {
	gen      *hwarch.Generation
	deviceID uint16 // a product word's PCI device id (inf2: 0x7264); 0 for a generation word
	family   *hwarch.SwitchFamily
	revision *uint8
	kind     *fabric.Kind
	model    *fabric.Model
	timing   *bool // mode: timing (true) or functional
}

// readWords reads the system section's arch, switch, revision, topology,
// model and mode, refusing a word that is none of its key's at the key.
func readWords(d *strictyaml.Decoder, at func(string) *yaml.Node, sys *System) (systemWords, error) {
	var w systemWords
	if sys.Arch != "" {
		g, err := hwarch.ParseGeneration(sys.Arch)
		if err != nil {
			return w, d.Errorf(at("system.arch"), "system.arch", "expected sunda|cayman|mariana (or v2|v3|v4, trn1|inf2|trn2|trn3), got %q", sys.Arch)
		}
		w.gen = &g
		w.deviceID, _ = hwarch.DeviceOfProduct(sys.Arch) // inf2 is a sunda device of its own id
	}
	if sys.Switch != "" {
		f, err := hwarch.ParseSwitchFamily(sys.Switch)
		if err != nil {
			return w, d.Errorf(at("system.switch"), "system.switch", "expected v1 or none, got %q", sys.Switch)
		}
		w.family = &f
	}
	if sys.Revision != "" {
		rev, err := hwarch.ParseRevision(sys.Revision)
		if err != nil {
			return w, d.Errorf(at("system.revision"), "system.revision", "expected silicon, emu, qemu or 0xNN, got %q", sys.Revision)
		}
		w.revision = &rev
	}
	if sys.Topology != "" {
		k, err := fabric.ParseKind(sys.Topology)
		if err != nil {
			return w, d.Errorf(at("system.topology"), "system.topology", "%v", err)
		}
		w.kind = &k
	}
	if sys.Model != "" {
		m, err := fabric.ParseModel(sys.Model)
		if err != nil {
			return w, d.Errorf(at("system.model"), "system.model", "expected aware or free, got %q", sys.Model)
		}
		w.model = &m
	}
	switch units.Word(sys.Mode) {
	case "":
	case "timing", "functional":
		timing := units.Word(sys.Mode) == "timing"
		w.timing = &timing
	default:
		return w, d.Errorf(at("system.mode"), "system.mode", "expected timing or functional, got %q", sys.Mode)
	}
	return w, nil
}
