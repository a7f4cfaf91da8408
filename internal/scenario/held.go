package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/internal/units"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// heldKey is a key of the scenario's system section whose value a restored
// snapshot carries with its system — the topology, the network model and
// the fabric's timing — so that, once the snapshot is restored, the
// snapshot's value is the one in effect, not the scenario's. A restore
// (either form) refuses a snapshot that holds another value than the one
// the scenario gives (resolved.agree): the user who wrote the key would
// otherwise believe it in effect.
type heldKey struct {
	path  string     // "system.timing.link_bw_gbs"
	n     *yaml.Node // the value as written, for its position
	given string     // what the scenario gives: the value as written
	// holds reports whether sys has the value given, and if not what it
	// has instead ("links of 500 ns (xy)").
	holds func(sys *fabric.System) (held string, ok bool)
	// givenOn, when set, says what the key gives on sys, for a key whose
	// value is not a word (efa: the network its keys make of sys's).
	givenOn func(sys *fabric.System) string
	// advice, when set, replaces the refusal's closing advice (switch,
	// which the runtime keeps across a restore).
	advice string
	// invalid, when set, refuses a value that sys cannot take at all —
	// an efa key out of range for the snapshot's nodes — positioned at
	// the key within the section that is wrong.
	invalid func(sys *fabric.System) error
}

// givenKeys lists the keys of the system section that a snapshot's system
// carries and the scenario gives, with the values of their words as
// written (readWords' w): name (the named system's generation, product,
// shape and switch family, nameHolds), switch, arch (a product word the
// product too; a generation word any product of it), devices (a node's),
// nodes, revision, mode, topology (but auto, which any topology is),
// model and the EFA network's parameters (efa: the keys it gives). Being
// read from the words alone, they are compared with a snapshot before the
// rest of the section is resolved — by `snapshot restore` (check), which
// then fills the keys left out from the snapshot's system — and, with
// resolvedKeys, when a restore step's snapshot is loaded (runner.fits). A
// name or EFA key that is no value of its key is refused at the key.
func givenKeys(d *strictyaml.Decoder, at func(string) *yaml.Node, root *yaml.Node, sys *System, w systemWords) ([]heldKey, error) {
	sysNode := child(docRoot(root), "system")
	var keys []heldKey
	add := func(key string, holds func(*fabric.System) (string, bool)) {
		if n := child(sysNode, key); n != nil {
			keys = append(keys, heldKey{path: "system." + key, n: n, given: n.Value, holds: holds})
		}
	}
	if sys.Name != "" {
		spec, err := fabric.LookupSystem(sys.Name)
		if err != nil {
			return nil, d.Errorf(at("system.name"), "system.name", "%v", err)
		}
		n, path := child(sysNode, "name"), "system.name"
		if sysNode != nil && sysNode.Kind == yaml.ScalarNode {
			n, path = sysNode, "system" // system: NAME
		}
		keys = append(keys, heldKey{path: path, n: n, holds: func(sys *fabric.System) (string, bool) { return nameHolds(spec, sys) },
			given: fmt.Sprintf("%s (%d %s devices, topology %s)", spec.Name, spec.Devices, spec.Generation, spec.Kind)})
	}
	if n, f := child(sysNode, "switch"), w.family; n != nil && f != nil {
		keys = append(keys, heldKey{path: "system.switch", n: n, given: n.Value, advice: runtimeKeepsSwitch + ": make the key agree",
			holds: func(sys *fabric.System) (string, bool) { return switchHolds(*f, sys) }})
	}
	if g := w.gen; g != nil {
		dev := w.deviceID
		add("arch", func(sys *fabric.System) (string, bool) {
			cfg := sys.Device(0).Config()
			if cfg.Generation != *g {
				return "arch " + cfg.Generation.String(), false
			}
			p := hwarch.ProductOfDevice(cfg.DeviceID)
			return fmt.Sprintf("arch %s (device id %#04x)", p, cfg.DeviceID), dev == 0 || p == hwarch.ProductOfDevice(dev)
		})
	}
	if n := sys.Devices; n != nil {
		add("devices", func(sys *fabric.System) (string, bool) {
			got, nodes := heldShape(sys)
			held := units.Plural(int64(got), "device", "devices")
			if nodes > 1 {
				held += " per node"
			}
			return held, int64(got) == n.Int64()
		})
	}
	if n := sys.Nodes; n != nil {
		add("nodes", func(sys *fabric.System) (string, bool) {
			_, got := heldShape(sys)
			held := "1 node (no EFA network)"
			if got > 1 {
				held = fmt.Sprintf("%d nodes", got)
			}
			return held, int64(got) == n.Int64()
		})
	}
	if rev := w.revision; rev != nil {
		add("revision", func(sys *fabric.System) (string, bool) {
			got := sys.Device(0).Config().Revision
			return fmt.Sprintf("revision %#02x", got), got == *rev
		})
	}
	if timing := w.timing; timing != nil {
		add("mode", func(sys *fabric.System) (string, bool) {
			got := sys.Device(0).Config().TimingOnly
			mode := "functional"
			if got {
				mode = "timing"
			}
			return "mode " + mode, got == *timing
		})
	}
	if k := w.kind; k != nil && *k != fabric.KindAuto {
		add("topology", func(sys *fabric.System) (string, bool) {
			got := sys.Topology().Kind
			return "topology " + got.String(), got == *k
		})
	}
	if m := w.model; m != nil {
		add("model", func(sys *fabric.System) (string, bool) {
			got := sys.Params().Model
			return "model " + got.String(), got == *m
		})
	}
	if child(sysNode, "efa") != nil {
		settings, err := efaSettings(d, at, sys)
		if err != nil {
			return nil, err
		}
		// The efa keys agree when, applied to the snapshot's network, they
		// change nothing; their node count is the snapshot's when the
		// scenario leaves nodes out (a restore fills it from there).
		nodesGiven := sys.Nodes != nil
		apply := func(sys *fabric.System) (fabric.Params, error) {
			s := settings
			perNode, nodes := heldShape(sys)
			if !nodesGiven {
				s.Nodes = nodes
			}
			p := sys.Params()
			if err := s.Check([]int{perNode}, efaKeys); err != nil {
				return p, err
			}
			return p, s.Apply(&p, []int{perNode}, efaKeys)
		}
		n := child(sysNode, "efa")
		keys = append(keys, heldKey{path: "system.efa", n: n, given: n.Value,
			// invalid runs first: holds and givenOn see keys that apply.
			invalid: func(sys *fabric.System) error {
				if _, err := apply(sys); err != nil {
					return settingError(d, at, err)
				}
				return nil
			},
			holds: func(sys *fabric.System) (string, bool) {
				p, err := apply(sys)
				held := sys.Params().EFA
				return "an EFA network of " + describeEFA(held), err == nil && p.EFA == held
			},
			givenOn: func(sys *fabric.System) string {
				p, _ := apply(sys)
				return describeEFA(p.EFA)
			}})
	}
	return keys, nil
}

// heldShape is a system's devices per node and its node count.
func heldShape(sys *fabric.System) (perNode, nodes int) {
	t := sys.Topology()
	if so := t.Scale; so != nil {
		return so.NodeDevices, so.Nodes
	}
	return t.Devices, 1
}

// runtimeKeepsSwitch says why a restore refuses a switch family its
// snapshot's fabric was not built for.
const runtimeKeepsSwitch = "the runtime keeps the scenario's switch family across a restore, and it sets get_mesh_max_folds, which the snapshot's fabric holds for its own"

// resolvedKeys lists the keys a snapshot's system carries whose values
// are the resolved section's, not a word's: switch left out (the family
// the runtime keeps, the generation's default, switchHolds), and the
// fabric timing keys (every system.timing key but engines and
// launch_cost_ns, which are the runtime's collective executor's and stay
// in effect across a restore).
func (r *resolved) resolvedKeys(root *yaml.Node) []heldKey {
	sysNode := child(docRoot(root), "system")
	var keys []heldKey
	if child(sysNode, "switch") == nil {
		// Left out: the generation's default, which the snapshot's fabric
		// must have been built for too.
		family := r.family
		at, path := sysNode, "system"
		if at == nil {
			at, path = docRoot(root), ""
		}
		keys = append(keys, heldKey{path: path, n: at, holds: func(sys *fabric.System) (string, bool) { return switchHolds(family, sys) },
			given:  fmt.Sprintf("switch left out (the runtime takes %s, %s's default)", family, r.gen),
			advice: runtimeKeepsSwitch + ": give system.switch the snapshot's family"})
	}
	tn := child(sysNode, "timing")
	add := func(key string, holds func(*fabric.System) (string, bool)) {
		if n := child(tn, key); n != nil {
			keys = append(keys, heldKey{path: "system.timing." + key, n: n, given: n.Value, holds: holds})
		}
	}
	p := r.params
	lat, bw := p.Link.Latency, p.Link.Bandwidth // every kind's, as given (cluster.LinkTiming)
	add("link_latency_ns", func(sys *fabric.System) (string, bool) {
		return linksHeld(sys, "latency", func(l fabric.LinkParams) (string, bool) { return nsText(l.Latency) + " ns", l.Latency == lat })
	})
	add("link_bw_gbs", func(sys *fabric.System) (string, bool) {
		return linksHeld(sys, "bandwidth", func(l fabric.LinkParams) (string, bool) {
			return strconv.FormatFloat(float64(l.Bandwidth)/1e9, 'g', -1, 64) + " GB/s", l.Bandwidth == bw
		})
	})
	ps := func(key, what string, v uint64, of func(fabric.Params) uint64) {
		add(key, func(sys *fabric.System) (string, bool) {
			got := of(sys.Params())
			return what + " " + nsText(got) + " ns", got == v
		})
	}
	ps("endpoint_delay_ns", "an endpoint delay of", p.Endpoint, func(q fabric.Params) uint64 { return q.Endpoint })
	ps("switch_latency_ns", "a switch latency of", p.Switch, func(q fabric.Params) uint64 { return q.Switch })
	count := func(key, format string, v int, of func(fabric.Params) int) {
		add(key, func(sys *fabric.System) (string, bool) {
			got := of(sys.Params())
			return fmt.Sprintf(format, got), got == v
		})
	}
	count("chunk_bytes", "chunks of %d bytes", p.ChunkBytes, func(q fabric.Params) int { return q.ChunkBytes })
	count("server_size", "servers of %d devices", p.ServerSize, func(q fabric.Params) int { return q.ServerSize })
	return keys
}

// linksHeld reports whether every link of sys's own fabric (not its EFA
// network's, which the link keys do not reach) has what one gives, and if
// not, the values its links have, each with the link groups having it:
// "links of latency 500 ns (xy, z)".
func linksHeld(sys *fabric.System, what string, one func(fabric.LinkParams) (string, bool)) (string, bool) {
	groups := map[string][]string{}
	var order []string
	all := true
	for _, l := range sys.Topology().Links {
		if strings.HasPrefix(l.Group, "efa-") {
			continue
		}
		v, ok := one(l.Params)
		all = all && ok
		if _, seen := groups[v]; !seen {
			order = append(order, v)
		}
		if !slices.Contains(groups[v], l.Group) {
			groups[v] = append(groups[v], l.Group)
		}
	}
	parts := make([]string, len(order))
	for i, v := range order {
		parts[i] = fmt.Sprintf("%s (%s)", v, strings.Join(groups[v], ", "))
	}
	return "links of " + what + " " + strings.Join(parts, ", "), all
}

// nsText is a time in picoseconds written in nanoseconds, as the keys
// take it.
func nsText(ps uint64) string { return strconv.FormatFloat(float64(ps)/1000, 'f', -1, 64) }

// agree refuses a snapshot's system, restored from from, that does not hold
// the value of a key the scenario gives (r.held: givenKeys and
// resolvedKeys).
func (r *resolved) agree(d *strictyaml.Decoder, sys *fabric.System, from string) error {
	return agreeKeys(d, r.held, sys, from)
}

// agreeKeys refuses a snapshot's system, restored from from, that does not
// hold the value of one of keys: the error is at the key, says what the
// scenario gives and what the snapshot holds.
func agreeKeys(d *strictyaml.Decoder, keys []heldKey, sys *fabric.System, from string) error {
	for _, k := range keys {
		if k.invalid != nil {
			if err := k.invalid(sys); err != nil {
				return err
			}
		}
		if held, ok := k.holds(sys); !ok {
			given := k.given
			if k.givenOn != nil {
				given = k.givenOn(sys)
			}
			advice := k.advice
			if advice == "" {
				advice = "a restore takes the system from the snapshot, its timing included; drop the key or make it agree"
			}
			return d.Errorf(k.n, k.path, "%s, but the snapshot %s holds a system with %s (%s)", given, from, held, advice)
		}
	}
	return nil
}

// nameHolds reports whether sys is the named system spec — its generation
// and product (trn1-32xl is Trn1 devices, not Inf2 ones), a node's device
// count, its topology, and the switch family its fabric was built for —
// and if not, what sys is instead ("16 sunda devices, topology torus2d").
// A system of several nodes is the named system's nodes.
func nameHolds(spec fabric.SystemSpec, sys *fabric.System) (string, bool) {
	cfg := sys.Device(0).Config()
	t := sys.Topology()
	g, n, k := cfg.Generation, t.Devices, t.Kind
	held := fmt.Sprintf("%d %s devices", n, g)
	if so := t.Scale; so != nil {
		n = so.NodeDevices // a node's: the name is one node's system
		held = fmt.Sprintf("%d nodes of %d %s devices", so.Nodes, n, g)
	}
	ok := g == spec.Generation && n == spec.Devices && k == spec.Kind
	if def := hwarch.DefaultProduct(spec.Generation); def != "" && g == spec.Generation {
		if p := hwarch.ProductOfDevice(cfg.DeviceID); p != def {
			held += fmt.Sprintf(" (%s, device id %#04x)", p, cfg.DeviceID)
			ok = false
		}
	}
	held += ", topology " + k.String()
	if sw, swOK := switchHolds(spec.Switch(), sys); !swOK {
		held += ", " + sw
		ok = false
	}
	return held, ok
}

// switchFamilies are the switch families a scenario's system.switch names.
var switchFamilies = []hwarch.SwitchFamily{hwarch.SwitchNone, hwarch.SwitchV1}

// meshMaxFolds is get_mesh_max_folds of the runtime's tables for
// generation g with switch family f (the family's one effect on a fabric
// the runtime builds: cluster.DefaultParamsOf puts it in the fabric's
// parameters as MaxFolds).
func meshMaxFolds(g hwarch.Generation, f hwarch.SwitchFamily) (int, bool) {
	t, err := rtarch.For(g, rtarch.Options{Switch: f})
	if err != nil {
		return 0, false
	}
	return t.Soc.MeshMaxFolds(), true
}

// heldSwitch returns the switch families whose runtime tables give the
// get_mesh_max_folds sys's fabric holds (its Params.MaxFolds), and that
// value; recorded is false for a fabric built without the runtime's tables
// (MaxFolds 0), which holds no family.
func heldSwitch(sys *fabric.System) (fams []hwarch.SwitchFamily, folds int, recorded bool) {
	folds = sys.Params().MaxFolds
	if folds == 0 {
		return nil, 0, false
	}
	g := sys.Device(0).Config().Generation
	for _, f := range switchFamilies {
		if v, ok := meshMaxFolds(g, f); ok && v == folds {
			fams = append(fams, f)
		}
	}
	return fams, folds, true
}

// switchHolds reports whether sys's fabric was built for switch family f
// (heldSwitch; a fabric that records none holds any), and if not, what it
// was built for: "switch v1 (get_mesh_max_folds 16)".
func switchHolds(f hwarch.SwitchFamily, sys *fabric.System) (string, bool) {
	fams, folds, recorded := heldSwitch(sys)
	if !recorded || slices.Contains(fams, f) {
		return "", true
	}
	if len(fams) == 0 {
		return fmt.Sprintf("get_mesh_max_folds %d, which no switch family of %s gives", folds, sys.Device(0).Config().Generation), false
	}
	return fmt.Sprintf("switch %s (get_mesh_max_folds %d)", fams[0], folds), false
}
