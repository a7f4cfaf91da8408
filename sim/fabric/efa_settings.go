package fabric

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
)

// EFASetting names one of the settings of EFASettings, so that a caller
// names it in its own terms (a flag, or a scenario key and its position).
type EFASetting uint8

// The settings of EFASettings.
const (
	SettingNodes EFASetting = iota
	SettingNetwork
	SettingOversubscription
	SettingBandwidth
	SettingLatency
	SettingLeafPorts
	SettingSpines
	SettingDevicesPerNIC
	SettingRouting
)

// EFACountMax is the largest value of one of the integer settings —
// SettingNodes, SettingLeafPorts, SettingSpines, SettingDevicesPerNIC, each
// at least 1 — as Check holds them (0 for another setting), so that a
// caller reading one (a flag) refuses past it with the same bound.
func EFACountMax(s EFASetting) int64 {
	switch s {
	case SettingNodes, SettingDevicesPerNIC:
		return hwarch.MaxFabricDevices
	case SettingLeafPorts:
		return MaxLeafPorts
	case SettingSpines:
		return MaxSpines
	}
	return 0
}

// EFASettings are the scale-out settings a user gives: the node count and
// the overrides of the EFA network's parameters — the command line's
// --nodes and --efa-network, --oversubscription, --efa-bw, --efa-latency,
// --leaf-ports, --spines, --devices-per-nic, --efa-routing, and a
// scenario's system.nodes and system.efa block. A nil override keeps the generation's value
// (DefaultEFA). Check and Apply are the one place their values are checked
// and assembled into Params.
type EFASettings struct {
	Nodes            int // 1: one node (no EFA network)
	Network          *EFANetwork
	Oversubscription *float64
	Bandwidth        *uint64 // each NIC's, bytes/s per direction
	// Latency is the latency of a minimal message between two nodes on one
	// leaf, HBM to HBM (ps): Apply sets EFAParams.NICLatency from it.
	Latency       *uint64
	LeafPorts     *int
	Spines        *int
	DevicesPerNIC *int
	Routing       *EFARouting
}

// EFASettingError is the error of one setting of EFASettings: Setting says
// which; Err is the whole message (naming the setting as the caller's
// names function spells it) and wraps units.ErrRange, units.ErrSyntax or
// ErrParams.
type EFASettingError struct {
	Setting EFASetting
	Err     error
}

func (e *EFASettingError) Error() string { return e.Err.Error() }

// Unwrap returns the error of the setting.
func (e *EFASettingError) Unwrap() error { return e.Err }

// overrides lists the settings given besides the node count.
func (s EFASettings) overrides() []EFASetting {
	var set []EFASetting
	for _, o := range []struct {
		s   EFASetting
		set bool
	}{{SettingNetwork, s.Network != nil}, {SettingOversubscription, s.Oversubscription != nil}, {SettingBandwidth, s.Bandwidth != nil},
		{SettingLatency, s.Latency != nil}, {SettingLeafPorts, s.LeafPorts != nil}, {SettingSpines, s.Spines != nil},
		{SettingDevicesPerNIC, s.DevicesPerNIC != nil}, {SettingRouting, s.Routing != nil}} {
		if o.set {
			set = append(set, o.s)
		}
	}
	return set
}

// Check checks the settings for systems of nodes of perNode devices each
// (one system per count): Nodes 1..MaxNodes of every count, no override
// with one node (one node has no EFA network), each override within the
// bounds EFAParams.Validate holds (a known network, Oversubscription
// 1..MaxOversubscription, Bandwidth 1..units.MaxBandwidthBps, Latency at
// most MaxEFALatencyPS, LeafPorts 1..MaxLeafPorts, Spines 1..MaxSpines,
// DevicesPerNIC 1..MaxFabricDevices dividing every node's devices, a known
// routing). name
// spells a setting in the caller's terms; the error is an
// *EFASettingError.
func (s EFASettings) Check(perNode []int, name func(EFASetting) string) error {
	fail := func(set EFASetting, err error) error { return &EFASettingError{Setting: set, Err: err} }
	nodes := name(SettingNodes)
	if _, err := units.Int(nodes, int64(s.Nodes), 1, EFACountMax(SettingNodes)); err != nil {
		return fail(SettingNodes, err)
	}
	if s.Nodes == 1 {
		if set := s.overrides(); len(set) > 0 {
			return fail(set[0], paramsError("%s: one node has no EFA network; it applies with %s 2 or more", name(set[0]), nodes))
		}
		return nil
	}
	for _, n := range perNode {
		if s.Nodes > MaxNodes(n) {
			return fail(SettingNodes, paramsError("%s %d: %d nodes of %d devices are %d devices, more than the fabric's %d (at most %d nodes)",
				nodes, s.Nodes, s.Nodes, n, s.Nodes*n, hwarch.MaxFabricDevices, MaxNodes(n)))
		}
	}
	if v := s.Network; v != nil && v.refusal() != "" {
		return fail(SettingNetwork, paramsError("%s %d: %s", name(SettingNetwork), uint8(*v), v.refusal()))
	}
	if v := s.Routing; v != nil && v.refusal() != "" {
		return fail(SettingRouting, paramsError("%s %d: %s", name(SettingRouting), uint8(*v), v.refusal()))
	}
	if v := s.Oversubscription; v != nil && (math.IsNaN(*v) || *v < 1 || *v > MaxOversubscription) {
		return fail(SettingOversubscription, &units.Error{Field: name(SettingOversubscription), Value: strconv.FormatFloat(*v, 'g', -1, 64),
			Reason: fmt.Sprintf("a ratio from 1 (non-blocking) to %d: a leaf's downlink bandwidth over its uplink bandwidth", MaxOversubscription), Err: units.ErrRange})
	}
	if v := s.Bandwidth; v != nil {
		if _, err := units.Uint(name(SettingBandwidth), *v, 1, units.MaxBandwidthBps); err != nil {
			return fail(SettingBandwidth, err)
		}
	}
	if v := s.Latency; v != nil && *v > MaxEFALatencyPS {
		return fail(SettingLatency, &units.Error{Field: name(SettingLatency), Value: nsText(*v), Err: units.ErrRange,
			Reason: fmt.Sprintf("too long: a minimal message between two nodes takes at most %s ns (1 ms, some 65 times EFA's ~15 µs; docs/fabric.md §EFA)", nsText(MaxEFALatencyPS))})
	}
	for _, c := range []struct {
		s EFASetting
		v *int
	}{{SettingLeafPorts, s.LeafPorts}, {SettingSpines, s.Spines}, {SettingDevicesPerNIC, s.DevicesPerNIC}} {
		if c.v == nil {
			continue
		}
		if _, err := units.Int(name(c.s), int64(*c.v), 1, EFACountMax(c.s)); err != nil {
			return fail(c.s, err)
		}
	}
	if v := s.DevicesPerNIC; v != nil {
		for _, n := range perNode {
			if n%*v != 0 {
				return fail(SettingDevicesPerNIC, paramsError("%s %d: does not divide the %d devices of a node (every NIC holds as many devices)",
					name(SettingDevicesPerNIC), *v, n))
			}
		}
	}
	return nil
}

// Apply sets the overrides on p.EFA (after Check) for systems of nodes of
// perNode devices each (one system per count). Latency T sets the NIC
// latency to (T − 2 × leaf latency − σ − δ) / 2 (rounded down to the
// picosecond), so that a minimal message between two nodes on one leaf
// takes T (EFAParams); a T below the rest of that path is refused, and so
// is a network whose spine links the overrides leave out of 1 B/s..
// units.MaxBandwidthBps (checkSpines), each as an *EFASettingError.
func (s EFASettings) Apply(p *Params, perNode []int, name func(EFASetting) string) error {
	p.EFA = s.WithOverrides(p.EFA)
	e := &p.EFA
	if err := s.checkNICs(*e, perNode, name); err != nil {
		return err
	}
	if s.Latency != nil {
		t := *s.Latency
		rest := 2*e.LeafLatency + p.Switch + p.Endpoint
		if t < rest {
			return &EFASettingError{Setting: SettingLatency, Err: paramsError("%s %s: below the %s ns the rest of the path takes (2 leaf links of %s ns, a switch's %s ns, the endpoint's %s ns)",
				name(SettingLatency), nsText(t), nsText(rest), nsText(e.LeafLatency), nsText(p.Switch), nsText(p.Endpoint))}
		}
		e.NICLatency = (t - rest) / 2
	}
	return s.checkSpines(*e, perNode, name)
}

// checkNICs refuses nodes whose devices the generation's DevicesPerNIC
// (e's, not given as an override: Check has checked one that is) does
// not divide — a Trn1 node of an odd count of devices, two a NIC by
// default — naming the node count and the setting that would change it;
// BuildNodes refused them after, as "EFA.DevicesPerNIC 2 does not divide
// the 3 devices of a node", a field name and no flag or key.
func (s EFASettings) checkNICs(e EFAParams, perNode []int, name func(EFASetting) string) error {
	if s.Nodes < 2 || s.DevicesPerNIC != nil || e.DevicesPerNIC < 1 {
		return nil
	}
	for _, n := range perNode {
		if n%e.DevicesPerNIC != 0 {
			return &EFASettingError{Setting: SettingNodes, Err: paramsError("%s %d: a node of %s does not split into NICs of %d devices, the generation's (%s sets another: one that divides %d)",
				name(SettingNodes), s.Nodes, units.Plural(int64(n), "device", "devices"), e.DevicesPerNIC, name(SettingDevicesPerNIC), n)}
		}
	}
	return nil
}

// checkSpines refuses EFA parameters e (the overrides applied) whose
// spine links, each a leaf's NIC bandwidth over the oversubscription and
// the spines (EFAParams.SpineLoads), fall out of 1 B/s..
// units.MaxBandwidthBps on a system of s.Nodes nodes of perNode devices:
// the error blames the first override given that moves the bandwidth that
// way (too low: the oversubscription, the spines, the NIC bandwidth, the
// leaf ports, the devices per NIC; too high: the NIC bandwidth, the spines,
// the oversubscription, the leaf ports, the network), named as the caller
// spells it, or else the node count.
func (s EFASettings) checkSpines(e EFAParams, perNode []int, name func(EFASetting) string) error {
	if s.Nodes < 2 {
		return nil
	}
	for _, n := range perNode {
		least, most, ok := e.SpineLoads(s.Nodes, n)
		if !ok {
			continue
		}
		if err := s.checkSpinesReached(e, n, most, name); err != nil {
			return err
		}
		l, blame, why := least, []EFASetting{SettingOversubscription, SettingSpines, SettingBandwidth, SettingLeafPorts, SettingDevicesPerNIC}, "less than 1 B/s"
		if most.Bandwidth > float64(units.MaxBandwidthBps) {
			l, blame, why = most, []EFASetting{SettingBandwidth, SettingSpines, SettingOversubscription, SettingLeafPorts, SettingNetwork}, fmt.Sprintf("more than %d B/s (1000TB/s), the most a link has", units.MaxBandwidthBps)
		} else if least.Bandwidth >= 1 {
			continue
		}
		set := SettingNodes
		for _, b := range blame {
			if slices.Contains(s.overrides(), b) {
				set = b
				break
			}
		}
		given := map[EFASetting]string{SettingNodes: strconv.Itoa(s.Nodes), SettingOversubscription: strconv.FormatFloat(e.Oversubscription, 'g', -1, 64),
			SettingSpines: strconv.Itoa(e.Spines), SettingBandwidth: strconv.FormatUint(e.NICBandwidth, 10) + " B/s", SettingLeafPorts: strconv.Itoa(e.LeafPorts),
			SettingDevicesPerNIC: strconv.Itoa(e.DevicesPerNIC), SettingNetwork: e.Network.String()}[set]
		return &EFASettingError{Setting: set, Err: paramsError("%s %s: with %d nodes of %d devices, leaf %s's %d NICs of %d B/s (%s) over an oversubscription of %g (%s) and %d spines (%s) leave %g B/s per spine link, %s",
			name(set), given, s.Nodes, n, l.Leaf, l.NICs, e.NICBandwidth, name(SettingBandwidth), e.Oversubscription, name(SettingOversubscription), e.Spines, name(SettingSpines), l.Bandwidth, why)}
	}
	return nil
}

// checkSpinesReached refuses a network of RouteFixed routing with more
// spines than the most NICs on a leaf (most, of a system of s.Nodes nodes
// of n devices) where writes cross the spines (not SpinesIdle): a write goes up to spine p mod Spines,
// p its destination NIC's port on its leaf, so the spines from that count
// on would never carry a write, while each spine link has 1/Spines of a
// leaf's uplink bandwidth — a non-blocking network that ran as an
// oversubscribed one (2 nodes, one port a leaf, 8 spines: 5.5× slower
// than one spine). The error blames the spine count if given, else the
// leaf ports, else the node count.
func (s EFASettings) checkSpinesReached(e EFAParams, n int, most SpineLoad, name func(EFASetting) string) error {
	if e.Routing != RouteFixed || e.Spines <= most.NICs || e.SpinesIdle(s.Nodes, n) != "" {
		return nil
	}
	set, given := SettingNodes, strconv.Itoa(s.Nodes)
	switch {
	case s.Spines != nil:
		set, given = SettingSpines, strconv.Itoa(e.Spines)
	case s.LeafPorts != nil:
		set, given = SettingLeafPorts, strconv.Itoa(e.LeafPorts)
	}
	return &EFASettingError{Setting: set, Err: paramsError("%s %s: with %d nodes of %d devices a leaf holds at most %s (%s), and under fixed routing (%s) a write goes up to spine p mod %d (%s), p its destination NIC's port on its leaf, so %d of the %d spines would carry nothing while each spine link has 1/%d of a leaf's uplink bandwidth: give at most %s, or more NICs a leaf (%s), or spray or adaptive routing",
		name(set), given, s.Nodes, n, units.Plural(int64(most.NICs), "NIC", "NICs"), most.Leaf, name(SettingRouting), e.Spines, name(SettingSpines), e.Spines-most.NICs, e.Spines, e.Spines,
		units.Plural(int64(most.NICs), "spine", "spines"), name(SettingLeafPorts))}
}

// nsText is a time in picoseconds as nanoseconds, without trailing zeros.
func nsText(ps uint64) string { return strconv.FormatFloat(float64(ps)/1000, 'f', -1, 64) }

// settingError is a refused setting's message; it wraps ErrParams without
// adding ErrParams' text to the message.
type settingError struct{ msg string }

func (e *settingError) Error() string { return e.msg }
func (e *settingError) Unwrap() error { return ErrParams }

func paramsError(format string, a ...any) error { return &settingError{fmt.Sprintf(format, a...)} }

// SpinesIdle says why no write of any collective crosses a spine of the
// EFA network e joining nodes nodes of nodeDevices devices each, or ""
// when some may: the network has no spines (one leaf holds every NIC), or
// it is rail-optimised with each rail's NICs on one leaf (a write between
// nodes leaves through the NIC of its destination's rail, so it never
// leaves that rail's leaf). The shapes of cluster.SpinesNote that do not
// depend on the traffic.
func (e EFAParams) SpinesIdle(nodes, nodeDevices int) string {
	nics := nodeDevices / e.DevicesPerNIC
	leaves := (nodes*nics + e.LeafPorts - 1) / e.LeafPorts // leafLayout's, counted: a fat tree's NICs in order
	if e.Network == RailOptimised {
		leaves = nics * ((nodes + e.LeafPorts - 1) / e.LeafPorts) // each rail's nodes, LeafPorts a leaf
	}
	if leaves < 2 {
		return fmt.Sprintf("one leaf of %d ports holds all %d NICs (%d nodes × %d), so the network has no spines", e.LeafPorts, nodes*nics, nodes, nics)
	}
	if e.Network == RailOptimised && nodes <= e.LeafPorts {
		return fmt.Sprintf("the network is rail-optimised and each rail's %d nodes fit one leaf of %d ports, so no write between nodes leaves its rail's leaf", nodes, e.LeafPorts)
	}
	return ""
}

// WithOverrides returns e with the settings' overrides of the network's
// shape and bandwidths set (not the latency, which Apply derives): the
// parameters Apply would give, for checks before any system is built.
func (s EFASettings) WithOverrides(e EFAParams) EFAParams {
	if s.Network != nil {
		e.Network = *s.Network
	}
	if s.Oversubscription != nil {
		e.Oversubscription = *s.Oversubscription
	}
	if s.Bandwidth != nil {
		e.NICBandwidth = *s.Bandwidth
	}
	if s.LeafPorts != nil {
		e.LeafPorts = *s.LeafPorts
	}
	if s.Spines != nil {
		e.Spines = *s.Spines
	}
	if s.DevicesPerNIC != nil {
		e.DevicesPerNIC = *s.DevicesPerNIC
	}
	if s.Routing != nil {
		e.Routing = *s.Routing
	}
	return e
}

// spineOverride is the first of the settings that act on the spine links
// alone — the spine count, the oversubscription of a leaf's uplinks, the
// routing over the spines — that is given, and false when none is.
func (s EFASettings) spineOverride() (EFASetting, bool) {
	switch {
	case s.Spines != nil:
		return SettingSpines, true
	case s.Oversubscription != nil:
		return SettingOversubscription, true
	case s.Routing != nil:
		return SettingRouting, true
	}
	return 0, false
}

// CheckSpinesUsed refuses a spine count, an oversubscription or a routing
// given (the settings act on the spine links alone) when, under the effective
// parameters e (WithOverrides), no system of s.Nodes nodes of perNode
// devices has a spine a write could cross (SpinesIdle of every count): the
// override would change nothing. The error, an *EFASettingError, names
// the override and says why.
func (s EFASettings) CheckSpinesUsed(e EFAParams, perNode []int, name func(EFASetting) string) error {
	set, ok := s.spineOverride()
	if !ok || s.Nodes < 2 {
		return nil
	}
	why := ""
	for _, n := range perNode {
		if why = e.SpinesIdle(s.Nodes, n); why == "" {
			return nil
		}
	}
	return &EFASettingError{Setting: set, Err: paramsError("%s: changes nothing here: with %d nodes of %d devices %s (docs/fabric.md §EFA, \"Idle spines\")",
		name(set), s.Nodes, perNode[len(perNode)-1], why)}
}
