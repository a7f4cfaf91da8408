package scenario

import (
	"strconv"

	"go.yaml.in/yaml/v3"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// UnmarshalStrict reads the system section: a mapping of its keys, or
// just a system's name (`system: trn3-gen1`, the same as
// `system: {name: trn3-gen1}`).
func (s *System) UnmarshalStrict(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		s.Name = n.Value
		return nil
	}
	type plain System // the same keys, without this method
	return d.Node(n, path, (*plain)(s))
}

// namedSystem resolves system.name — one of the systems AWS sells
// (fabric.Systems) — into the keys it sets: arch, devices, topology and
// switch. A key the scenario gives too must agree with it (topology auto
// agrees: it is what the real system has); what_if, true or false, does
// not go with a name (the system's device count is the hardware's, whatever
// get_max_devs says). It returns nil without a name.
func namedSystem(d *strictyaml.Decoder, at func(string) *yaml.Node, sys *System) (*fabric.SystemSpec, error) {
	if sys.Name == "" {
		return nil, nil
	}
	spec, err := fabric.LookupSystem(sys.Name)
	if err != nil {
		return nil, d.Errorf(at("system.name"), "system.name", "%v", err)
	}
	contradicts := func(key, given, held string) error {
		return d.Errorf(at("system."+key), "system."+key, "%s contradicts system.name %s (%s): %s %s; drop the key or make it agree",
			given, spec.Name, spec.About, key, held)
	}
	if sys.Arch != "" {
		if g, err := hwarch.ParseGeneration(sys.Arch); err == nil && g != spec.Generation {
			return nil, contradicts("arch", sys.Arch, spec.Generation.String())
		}
	}
	if id, ok := hwarch.DeviceOfProduct(sys.Arch); ok {
		if def := hwarch.DefaultProduct(spec.Generation); def != "" && hwarch.ProductOfDevice(id) != def {
			return nil, contradicts("arch", sys.Arch, "of "+def)
		}
	}
	if sys.Devices != nil && sys.Devices.Int64() != int64(spec.Devices) {
		return nil, contradicts("devices", sys.Devices.String(), strconv.Itoa(spec.Devices))
	}
	if sys.Topology != "" {
		if k, err := fabric.ParseKind(sys.Topology); err == nil && k != fabric.KindAuto && k != spec.Kind {
			return nil, contradicts("topology", sys.Topology, spec.Kind.String())
		}
	}
	if sys.Switch != "" {
		if f, err := hwarch.ParseSwitchFamily(sys.Switch); err == nil && f != spec.Switch() {
			return nil, contradicts("switch", sys.Switch, spec.Switch().String())
		}
	}
	// what_if is refused whatever its value, as docs/scenarios.md says
	// (false, too, would be a key that says nothing: the CLI refuses
	// --what-if with --system, and --what-if=false says nothing there).
	if wi := at("system.what_if"); sys.WhatIf || wi != at("system") {
		val := wi.Value
		if wi == at("system") {
			val = "true" // set for a snapshot's count, not in the file
		}
		return nil, d.Errorf(wi, "system.what_if", "%s: does not go with system.name %s: a named system is built at its own device count (%d), whatever get_max_devs says; what_if applies to system.devices (leave it out)",
			val, spec.Name, spec.Devices)
	}
	if sys.Arch == "" {
		sys.Arch = spec.Generation.String()
	}
	return &spec, nil
}
