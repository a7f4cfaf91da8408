package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/strictyaml"
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
}

// heldKeys lists the keys of the system section that a snapshot's system
// carries and the scenario gives: topology (but auto, which any topology
// is), model, the EFA network's parameters (efa: the keys it gives), and the
// fabric timing keys (every system.timing key but
// engines and launch_cost_ns, which are the runtime's collective
// executor's and stay in effect across a restore). Each compares against
// the value resolved into r.
func (r *resolved) heldKeys(root *yaml.Node) []heldKey {
	sysNode := child(docRoot(root), "system")
	var keys []heldKey
	add := func(parent *yaml.Node, path, key string, holds func(*fabric.System) (string, bool)) {
		if n := child(parent, key); n != nil {
			keys = append(keys, heldKey{path: path + key, n: n, given: n.Value, holds: holds})
		}
	}
	if n := child(sysNode, "topology"); n != nil {
		if k, err := fabric.ParseKind(n.Value); err == nil && k != fabric.KindAuto {
			add(sysNode, "system.", "topology", func(sys *fabric.System) (string, bool) {
				got := sys.Topology().Kind
				return "topology " + got.String(), got == k
			})
		}
	}
	model := r.params.Model
	add(sysNode, "system.", "model", func(sys *fabric.System) (string, bool) {
		got := sys.Params().Model
		return "model " + got.String(), got == model
	})
	// The efa keys agree when, applied to the snapshot's network, they
	// change nothing (as takeNodes checks them against a Base).
	settings := r.efa
	add(sysNode, "system.", "efa", func(sys *fabric.System) (string, bool) {
		held := sys.Params()
		p := held
		if err := settings.Apply(&p, efaKeys); err != nil {
			return "an EFA network the keys do not apply to (" + err.Error() + ")", false
		}
		return "an EFA network of " + describeEFA(held.EFA), p.EFA == held.EFA
	})
	if len(keys) > 0 && keys[len(keys)-1].path == "system.efa" {
		keys[len(keys)-1].givenOn = func(sys *fabric.System) string {
			p := sys.Params()
			if settings.Apply(&p, efaKeys) != nil {
				return "keys"
			}
			return describeEFA(p.EFA)
		}
	}
	tn := child(sysNode, "timing")
	p := r.params
	lat, bw := p.Link.Latency, p.Link.Bandwidth // every kind's, as given (cluster.LinkTiming)
	add(tn, "system.timing.", "link_latency_ns", func(sys *fabric.System) (string, bool) {
		return linksHeld(sys, "latency", func(l fabric.LinkParams) (string, bool) { return nsText(l.Latency) + " ns", l.Latency == lat })
	})
	add(tn, "system.timing.", "link_bw_gbs", func(sys *fabric.System) (string, bool) {
		return linksHeld(sys, "bandwidth", func(l fabric.LinkParams) (string, bool) {
			return strconv.FormatFloat(float64(l.Bandwidth)/1e9, 'g', -1, 64) + " GB/s", l.Bandwidth == bw
		})
	})
	ps := func(key, what string, v uint64, of func(fabric.Params) uint64) {
		add(tn, "system.timing.", key, func(sys *fabric.System) (string, bool) {
			got := of(sys.Params())
			return what + " " + nsText(got) + " ns", got == v
		})
	}
	ps("endpoint_delay_ns", "an endpoint delay of", p.Endpoint, func(q fabric.Params) uint64 { return q.Endpoint })
	ps("switch_latency_ns", "a switch latency of", p.Switch, func(q fabric.Params) uint64 { return q.Switch })
	count := func(key, format string, v int, of func(fabric.Params) int) {
		add(tn, "system.timing.", key, func(sys *fabric.System) (string, bool) {
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
// the value of a key the scenario gives (heldKeys): the error is at the
// key, says what the scenario gives and what the snapshot holds.
func (r *resolved) agree(d *strictyaml.Decoder, sys *fabric.System, from string) error {
	for _, k := range r.held {
		if held, ok := k.holds(sys); !ok {
			given := k.given
			if k.givenOn != nil {
				given = k.givenOn(sys)
			}
			return d.Errorf(k.n, k.path, "%s, but the snapshot %s holds a system with %s (a restore takes the system from the snapshot, its timing included; drop the key or make it agree)",
				given, from, held)
		}
	}
	return nil
}
