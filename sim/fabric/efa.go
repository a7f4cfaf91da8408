package fabric

import (
	"errors"
	"fmt"
	"math"
	"strings"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
)

// EFANetwork is the shape of the scale-out network that joins the nodes of
// a system (docs/fabric.md §EFA).
type EFANetwork uint8

// The scale-out networks.
const (
	// RailOptimised puts NIC k of every node on rail k: the leaves of rail
	// k hold only NICs k (LeafPorts nodes per leaf), spines join the
	// leaves. A write to another node leaves through the NIC of the
	// destination's rail (the PXN rule, EFAParams).
	RailOptimised EFANetwork = iota
	// FatTree puts the NICs on leaves of LeafPorts ports in order (node
	// by node), the leaves on spines; a device always sends through its own
	// NIC.
	FatTree
)

var efaNetworkNames = [...]string{RailOptimised: "rail", FatTree: "fat-tree"}

// String returns "rail" or "fat-tree".
func (n EFANetwork) String() string {
	if int(n) < len(efaNetworkNames) {
		return efaNetworkNames[n]
	}
	return fmt.Sprintf("efa-network(%d)", uint8(n))
}

// ErrUnknownEFANetwork is returned (wrapped) by ParseEFANetwork.
var ErrUnknownEFANetwork = errors.New("unknown EFA network")

// ParseEFANetwork reads "rail" (also "rail-optimised", "rail-optimized")
// or "fat-tree".
func ParseEFANetwork(s string) (EFANetwork, error) {
	switch units.Word(s) {
	case "rail", "rail-optimised", "rail-optimized":
		return RailOptimised, nil
	case "fat-tree", "fattree":
		return FatTree, nil
	}
	return 0, fmt.Errorf("%w %q: accepted words are rail|fat-tree", ErrUnknownEFANetwork, s)
}

// Set implements pflag.Value.
func (n *EFANetwork) Set(s string) error {
	v, err := ParseEFANetwork(s)
	if err == nil {
		*n = v
	}
	return err
}

// Type implements pflag.Value.
func (n *EFANetwork) Type() string { return "network" }

// refusal says why n is not a network, or "" when it is one
// (EFAParams.Validate, EFASettings.Check).
func (n EFANetwork) refusal() string {
	if n == RailOptimised || n == FatTree {
		return ""
	}
	return fmt.Sprintf("not rail (%d) or fat-tree (%d)", RailOptimised, FatTree)
}

// EFARouting is how a leaf chooses the spine a write to another leaf goes
// up to (docs/fabric.md §EFA, "Spine choice").
type EFARouting uint8

// The spine choices.
const (
	// RouteSpray spreads the writes that cross the spines over them, as
	// EFA's SRD transport sprays a flow's packets over the paths between
	// two NICs: each NIC sends its writes across the spines to the spines
	// in turn (state.SprayNext: its first write to spine p mod Spines, p
	// its port on its leaf, so that the NICs of a leaf start out of step;
	// its next to the spine after, …), skipping a spine whose leaf → spine
	// or spine → leaf link of the write's path is down. A NIC's load on
	// its leaf's uplinks is so spread evenly at every moment, whatever its
	// flows, and a flow alone gets the whole of its leaf's uplink
	// bandwidth, not 1/Spines of it.
	// SRD chooses a path per packet from the congestion it sees; this
	// choice is per write (one descriptor, at most 64 KiB) and blind to
	// congestion: chosen. The default.
	RouteSpray EFARouting = iota
	// RouteFixed sends every write to NIC port p of another leaf up to
	// spine p mod Spines (ScaleOut.SpineOf): destination-mod-k routing on
	// the leaf port, as an InfiniBand fat tree routes; a flow gets 1/Spines
	// of its leaf's uplink bandwidth however idle the other spines are.
	RouteFixed
	// RouteAdaptive sends each write that crosses the spines up to the
	// spine whose link from the write's leaf is booked until the earliest
	// time (its queue the shortest), of those whose leaf → spine and spine
	// → leaf links of the write's path are up; among spines equally free
	// by the write's start — every idle one — it takes the first in the
	// sending NIC's turn (state.SprayNext, as RouteSpray), and the NIC's
	// turn moves past the spine taken. It is adaptive routing as a switch
	// does it, from its own output queues, blind to the queues further on
	// (the spine's link down to the destination's leaf); SRD's choice at
	// the sending NIC, from the round trips it measures, is not modelled:
	// chosen. The contention-free model keeps no queue on a spine link, so
	// there it is RouteSpray.
	RouteAdaptive
)

var efaRoutingNames = [...]string{RouteSpray: "spray", RouteFixed: "fixed", RouteAdaptive: "adaptive"}

// String returns "spray", "fixed" or "adaptive".
func (r EFARouting) String() string {
	if int(r) < len(efaRoutingNames) {
		return efaRoutingNames[r]
	}
	return fmt.Sprintf("efa-routing(%d)", uint8(r))
}

// ErrUnknownEFARouting is returned (wrapped) by ParseEFARouting.
var ErrUnknownEFARouting = errors.New("unknown EFA routing")

// ParseEFARouting reads "spray", "fixed" or "adaptive", in any case
// (units.Word).
func ParseEFARouting(s string) (EFARouting, error) {
	w := units.Word(s)
	for r, name := range efaRoutingNames {
		if w == name {
			return EFARouting(r), nil
		}
	}
	return 0, fmt.Errorf("%w %q: accepted words are %s", ErrUnknownEFARouting, s, strings.Join(efaRoutingNames[:], "|"))
}

// Set implements pflag.Value.
func (r *EFARouting) Set(s string) error {
	v, err := ParseEFARouting(s)
	if err == nil {
		*r = v
	}
	return err
}

// Type implements pflag.Value.
func (r *EFARouting) Type() string { return "routing" }

// refusal says why r is not a routing, or "" when it is one
// (EFAParams.Validate, EFASettings.Check).
func (r EFARouting) refusal() string {
	if int(r) < len(efaRoutingNames) {
		return ""
	}
	words := make([]string, len(efaRoutingNames))
	for i, name := range efaRoutingNames {
		words[i] = fmt.Sprintf("%s (%d)", name, i)
	}
	last := len(words) - 1
	return "not " + strings.Join(words[:last], ", ") + " or " + words[last]
}

// EFAParams are the parameters of the EFA scale-out network that joins the
// nodes of a system of several nodes (Config.Nodes > 1). Every device
// belongs to one NIC, DevicesPerNIC devices per NIC; a NIC's links, its
// links to its leaf and the leaves' links to the spines are ordinary
// links of the fabric (groups "efa-nic", "efa-leaf", "efa-spine"), shared
// by every write that crosses them in the aware model.
//
// The latency of a write between two nodes in the free model, with real
// endpoints (σ = Params.Switch, δ = Params.Endpoint; NICs are not switches
// and add no σ):
//
//	same leaf:   2·NICLatency + 2·LeafLatency + σ + δ + m/B
//	other leaf:  2·NICLatency + 2·LeafLatency + 2·SpineLatency + 3σ + δ + m/B
//
// plus the hops inside the source node first when the write moves to the
// device on the destination's rail (RailOptimised), B the slowest link of
// the path. The defaults make the first 15 µs: the ~15 µs HBM-to-HBM of a
// minimal message between two trn2.48xlarge nodes [C2, C4].
type EFAParams struct {
	Network EFANetwork
	// DevicesPerNIC is how many devices share a NIC: 2 on Trn1
	// (trn1.32xlarge: 16 chips, 8 EFA devices [A6, X2]), 1 on Trn2 (16
	// NICs of 200 Gbps, one per chip [A8, C2]) and Trn3 (not published:
	// chosen, 200 Gbps per chip as 12,800 / 64 and 28,800 / 144 [A9]).
	DevicesPerNIC int
	// NICBandwidth is each NIC's bandwidth per direction (bytes/s): 100
	// Gbps on Trn1 (800 Gbps per instance over 8 NICs [A6]), 200 Gbps on
	// Trn2 [A8, C2] and Trn3 (derived [A9]). The device ↔ NIC links have the
	// same bandwidth (the PCIe link is not published: chosen, so that one
	// device alone fills its NIC and two devices on one NIC share it).
	NICBandwidth uint64
	// NICLatency is the latency of a device ↔ NIC link (ps): the PCIe
	// crossing and the NIC's own processing, the bulk of EFA's latency.
	// Default 6,600 ns: chosen so that a minimal message between two nodes
	// on one leaf costs 15 µs with the other defaults [C2, C4].
	NICLatency uint64
	// LeafLatency is the latency of a NIC ↔ leaf link (ps): the wire and
	// serdes, 500 ns like every other link (chosen).
	LeafLatency uint64
	// SpineLatency is the latency of a leaf ↔ spine link (ps): 500 ns
	// (chosen).
	SpineLatency uint64
	// LeafPorts is the radix of a leaf: how many NICs it holds (its
	// downlinks). Default 64 (a 128-port switch with half its ports up;
	// chosen). Rail-optimised: a rail of more nodes than LeafPorts has
	// several leaves.
	LeafPorts int
	// Spines is the number of spine switches; every leaf links to every
	// one (none when there is one leaf). Default 2 (chosen). Which spine a
	// write goes up to is Routing's.
	Spines int
	// Routing is how a leaf chooses a write's spine: RouteSpray (the
	// default: every flow's writes spread over the spines, as SRD sprays
	// them), RouteFixed (spine p mod Spines, p the port of the
	// destination's NIC on its own leaf: a flow takes one spine, 1/Spines
	// of the leaf's uplink bandwidth, and traffic that does not cover the
	// spines evenly is slower with more of them) or RouteAdaptive (the
	// spine whose uplink is booked until the earliest time); docs/fabric.md
	// §EFA, "Spine choice".
	Routing EFARouting
	// Oversubscription is the ratio of a leaf's downlink bandwidth to its
	// uplink bandwidth (≥ 1): its links to the spines carry together the
	// sum of its NIC links' bandwidth / Oversubscription, split evenly over
	// the spines. Default 1 (non-blocking; chosen).
	Oversubscription float64
}

// The bounds of EFAParams (Validate).
const (
	MaxLeafPorts        = 4096
	MaxSpines           = 256
	MaxOversubscription = 1024
)

// MaxEFALatencyPS bounds the EFA latency a user sets (EFASettings.Latency:
// --efa-latency, a scenario's system.efa.latency_ns, a grid's
// efa.latency_ns), a minimal message between two nodes on one leaf: 1 ms,
// some 65 times the ~15 µs per inter-node hop the Neuron runtime measured
// [C2, C4], room for what-if networks far slower than EFA. The 10 s every
// other latency may reach (units.MaxLatencyPS, a collective's whole device
// time) describes no network: a hop of seconds was taken.
const MaxEFALatencyPS uint64 = 1_000_000_000

// DefaultEFA returns the EFA parameters of a generation's instances
// (trainium-facts §4, §10; docs/fabric.md §EFA): see EFAParams.
func DefaultEFA(g hwarch.Generation) EFAParams {
	e := EFAParams{Network: RailOptimised, DevicesPerNIC: 1, NICBandwidth: 25e9, NICLatency: 6600 * ns,
		LeafLatency: 500 * ns, SpineLatency: 500 * ns, LeafPorts: 64, Spines: 2, Oversubscription: 1}
	if g == hwarch.Sunda {
		e.DevicesPerNIC, e.NICBandwidth = 2, 12.5e9
	}
	return e
}

// Validate checks the parameters by themselves, naming the field: a known
// network, DevicesPerNIC 1..MaxFabricDevices, NICBandwidth 1..
// units.MaxBandwidthBps, latencies at most units.MaxLatencyPS, LeafPorts
// 1..MaxLeafPorts, Spines 1..MaxSpines, a known routing, Oversubscription 1..
// MaxOversubscription. What depends on the system's shape is checked when
// it is built (BuildNodes).
func (e EFAParams) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("fabric EFA: "+format+": %w", append(a, ErrParams)...)
	}
	switch {
	case e.Network.refusal() != "":
		return bad("EFA.Network %d: %s", uint8(e.Network), e.Network.refusal())
	case e.DevicesPerNIC < 1 || e.DevicesPerNIC > hwarch.MaxFabricDevices:
		return bad("EFA.DevicesPerNIC %d (1..%d)", e.DevicesPerNIC, hwarch.MaxFabricDevices)
	case e.NICBandwidth == 0 || e.NICBandwidth > maxBandwidth:
		return bad("EFA.NICBandwidth %d B/s (1..%d)", e.NICBandwidth, uint64(maxBandwidth))
	case e.LeafPorts < 1 || e.LeafPorts > MaxLeafPorts:
		return bad("EFA.LeafPorts %d (1..%d)", e.LeafPorts, MaxLeafPorts)
	case e.Spines < 1 || e.Spines > MaxSpines:
		return bad("EFA.Spines %d (1..%d)", e.Spines, MaxSpines)
	case e.Routing.refusal() != "":
		return bad("EFA.Routing %d: %s", uint8(e.Routing), e.Routing.refusal())
	case math.IsNaN(e.Oversubscription) || e.Oversubscription < 1 || e.Oversubscription > MaxOversubscription:
		return bad("EFA.Oversubscription %v (1..%d: downlink bandwidth over uplink bandwidth)", e.Oversubscription, MaxOversubscription)
	}
	for _, l := range []struct {
		name string
		ps   uint64
	}{{"EFA.NICLatency", e.NICLatency}, {"EFA.LeafLatency", e.LeafLatency}, {"EFA.SpineLatency", e.SpineLatency}} {
		if l.ps > units.MaxLatencyPS {
			return bad("%s %d ps (at most %d: 10 s, all the device time a collective may take)", l.name, l.ps, units.MaxLatencyPS)
		}
	}
	return nil
}

// maxBandwidth is the bound of a bandwidth: units.MaxBandwidthBps, 10^15
// B/s, which sim/fabric's checks share with the flags and files that set
// one (once 2^50, a bound no flag had).
const maxBandwidth = units.MaxBandwidthBps

// ScaleOut is the EFA network of a topology of several nodes: node m holds
// devices m·NodeDevices … (m+1)·NodeDevices−1 (device index = node ×
// NodeDevices + local index), each node a copy of Base. Its NICs, leaves
// and spines are nodes of the topology (NodeNIC, NodeSwitch): NIC k of
// node m is node NIC(m, k).
type ScaleOut struct {
	Nodes, NodeDevices int
	NICs               int // per node
	Network            EFANetwork
	Leaves, Spines     int
	// Base is one node's own topology (node 0's devices; every node is a
	// copy of it).
	Base *Topology

	p                     EFAParams
	baseLinks, baseSwitch int       // per node
	nic0, leaf0, spine0   int       // the first NIC, leaf and spine node
	up, down              []int32   // per device: its link to its NIC, its NIC's link to it
	nicUp, nicDown        []int32   // per NIC (m·NICs + k): to its leaf, from its leaf
	nicLeaf               []int32   // per NIC: its leaf (0..Leaves−1)
	nicPort               []int32   // per NIC: its port on its leaf (0..LeafPorts−1)
	leafUp                [][]int32 // [leaf][spine]
	spineDown             [][]int32 // [spine][leaf]
}

// NIC returns the topology node of NIC k of node m.
func (s *ScaleOut) NIC(m, k int) int { return s.nic0 + m*s.NICs + k }

// NICOf returns the NIC (0..NICs−1 of its node) of a device's local index.
func (s *ScaleOut) NICOf(local int) int { return local / s.p.DevicesPerNIC }

// Leaf returns the topology node of leaf i (0..Leaves−1).
func (s *ScaleOut) Leaf(i int) int { return s.leaf0 + i }

// LeafOf returns the leaf (0..Leaves−1) of NIC k of node m.
func (s *ScaleOut) LeafOf(m, k int) int { return int(s.nicLeaf[m*s.NICs+k]) }

// PortOf returns the port (0..LeafPorts−1) of NIC k of node m on its leaf:
// the NICs of a leaf in the order they fill it (rail-optimised, node m's
// NIC is port m mod LeafPorts of its rail's leaf; fat tree, NIC i of the
// system is port i mod LeafPorts).
func (s *ScaleOut) PortOf(m, k int) int { return int(s.nicPort[m*s.NICs+k]) }

// SpineOf returns the spine (0..Spines−1) a leaf sends a write up to for
// NIC k of node m on another leaf under RouteFixed — its port mod Spines —
// and the spine of the topology's paths (Topology.Path), which RouteSpray
// changes write by write (EFARouting). -1 when there are no spines (one
// leaf).
func (s *ScaleOut) SpineOf(m, k int) int {
	if s.Spines == 0 {
		return -1
	}
	return s.PortOf(m, k) % s.Spines
}

// spineCrossing returns where path, a path of topology t whose scale-out
// network is so, crosses the spines: the index i ≥ 1 of its leaf → spine
// link (path[i−1] is the sending NIC's link to the leaf, path[i+1] the
// spine → leaf link), the sending NIC (node·NICs + k), the spine, and the
// leaves it leaves and reaches (0..Leaves−1); ok false when it crosses
// none.
func (so *ScaleOut) spineCrossing(t *Topology, path []int) (i, nic, spine, from, to int, ok bool) {
	for i := 1; i+1 < len(path); i++ {
		l := &t.Links[path[i]]
		if l.From >= so.leaf0 && l.From < so.spine0 && l.To >= so.spine0 && l.To < so.spine0+so.Spines {
			return i, t.Links[path[i-1]].From - so.nic0, l.To - so.spine0, l.From - so.leaf0, t.Links[path[i+1]].To - so.leaf0, true
		}
	}
	return 0, 0, 0, 0, 0, false
}

// NICCount is the NICs of the network: NICs per node times nodes.
func (so *ScaleOut) NICCount() int { return so.Nodes * so.NICs }

// sprayStart is each NIC's first spine under RouteSpray: its port on its
// leaf mod Spines, so that the NICs of a leaf start out of step — started
// together on spine 0, the NICs of a leaf sending in step (the steps of a
// collective) all sent their first write to spine 0, their second to
// spine 1, …, each spine link carrying a whole leaf's writes by turns.
func (so *ScaleOut) sprayStart() []uint32 {
	next := make([]uint32, so.NICCount())
	for i := range next {
		next[i] = uint32(so.firstTurn(i))
	}
	return next
}

// firstTurn is NIC nic's first spine (sprayStart): its port on its leaf
// mod Spines.
func (so *ScaleOut) firstTurn(nic int) int { return int(so.nicPort[nic]) % so.Spines }

// Spine returns the topology node of spine i (0..Spines−1).
func (s *ScaleOut) Spine(i int) int { return s.spine0 + i }

// Params returns the EFA parameters the network was built with.
func (s *ScaleOut) Params() EFAParams { return s.p }

// MaxNodes is the most nodes of devicesPerNode devices a system may have:
// hwarch.MaxFabricDevices devices in all.
func MaxNodes(devicesPerNode int) int {
	if devicesPerNode < 1 {
		return 0
	}
	return hwarch.MaxFabricDevices / devicesPerNode
}

// BuildNodes returns the topology of a system of nodes copies of a system
// of kind k (devices/nodes devices each, built as Build builds it), joined
// by the EFA network of p.EFA (docs/fabric.md §EFA). One node is Build's
// topology. The nodes must divide the devices, the devices of a node be a
// multiple of EFA.DevicesPerNIC, and every node have a leaf link to a spine
// of at least 1 B/s.
//
// Routing is deterministic: inside a node, the node's own (Build's) paths;
// to another node, a device sends through its own NIC (fat tree) or, in a
// rail-optimised network, through the NIC of the destination's rail — a
// write whose destination has another local NIC first moves inside its node
// along the node's path towards the device of the destination's local
// index, and leaves through the NIC of the first device on that path that
// is on the destination's rail (that device, or on Trn1 possibly the other
// chip of its NIC): the rail-local, "PXN" rule rail-optimised GPU
// clusters use (NCCL's PXN); AWS does not publish libnccom's: chosen. The NIC
// sends to its leaf; a leaf delivers to a NIC of its own, or sends up to
// spine p mod Spines, p the destination NIC's port on its leaf (SpineOf),
// which sends down to the destination NIC's leaf.
func BuildNodes(k Kind, g hwarch.Generation, devices, nodes int, p Params) (*Topology, error) {
	if nodes == 1 {
		return Build(k, g, devices, p)
	}
	if devices < 1 || devices > hwarch.MaxFabricDevices {
		return nil, fmt.Errorf("fabric %s: %d devices (1..%d): %w", k, devices, hwarch.MaxFabricDevices, ErrTopology)
	}
	if nodes < 1 || nodes > devices || devices%nodes != 0 {
		return nil, fmt.Errorf("fabric %s: %d nodes for %d devices: the nodes (1..%d) must divide the devices: %w", k, nodes, devices, devices, ErrTopology)
	}
	e := p.EFA
	if err := e.Validate(); err != nil {
		return nil, err
	}
	nd := devices / nodes
	if nd%e.DevicesPerNIC != 0 {
		return nil, fmt.Errorf("fabric %s: EFA.DevicesPerNIC %d does not divide the %d devices of a node: %w", k, e.DevicesPerNIC, nd, ErrParams)
	}
	if k == KindAuto {
		k = AutoKind(g, nd)
	}
	base, err := Build(k, g, nd, p)
	if err != nil {
		return nil, err
	}
	if err := base.Connected(); err != nil {
		return nil, fmt.Errorf("fabric: a node of %d devices: %w", nd, err)
	}
	t := &Topology{Kind: k, Devices: devices}
	so := &ScaleOut{Nodes: nodes, NodeDevices: nd, NICs: nd / e.DevicesPerNIC, Network: e.Network, Base: base, p: e,
		baseLinks: len(base.Links), baseSwitch: len(base.Nodes) - nd}
	t.Scale = so
	t.replicate(so)
	if err := t.scaleOut(so); err != nil {
		return nil, err
	}
	return t, nil
}

// replicate adds the nodes' copies of the base topology: devices first (by
// index), then each node's switches ("n<m>-<name>"), then each node's links
// in the base's order (so link j of node m is m·baseLinks + j and ports
// keep their numbers), and the neighbour tables shifted to the node.
func (t *Topology) replicate(so *ScaleOut) {
	base, nd := so.Base, so.NodeDevices
	for i := range t.Devices {
		t.Nodes = append(t.Nodes, Node{Kind: NodeDevice, Name: fmt.Sprintf("neuron%d", i)})
	}
	for m := range so.Nodes {
		for _, n := range base.Nodes[nd:] {
			t.Nodes = append(t.Nodes, Node{Kind: n.Kind, Name: fmt.Sprintf("n%d-%s", m, n.Name)})
		}
	}
	for m := range so.Nodes {
		for _, l := range base.Links {
			id := t.link(so.node(m, l.From), so.node(m, l.To), l.Group, l.Params)
			t.Links[id].ToPort = l.ToPort
		}
	}
	if len(base.Neighbours) > 0 {
		t.Neighbours = make([][]int, t.Devices)
		for d := range t.Devices {
			row := make([]int, len(base.Neighbours[d%nd]))
			for s, x := range base.Neighbours[d%nd] {
				row[s] = -1
				if x >= 0 {
					row[s] = d/nd*nd + x
				}
			}
			t.Neighbours[d] = row
		}
	}
}

// node maps node i of the base topology to its copy in node m.
func (so *ScaleOut) node(m, i int) int {
	if i < so.NodeDevices {
		return m*so.NodeDevices + i
	}
	return so.Nodes*so.NodeDevices + m*so.baseSwitch + i - so.NodeDevices
}

// scaleOut adds the NICs, leaves and spines and their links.
func (t *Topology) scaleOut(so *ScaleOut) error {
	e := so.p
	nd, nics := so.NodeDevices, so.Nodes*so.NICs
	so.nic0 = len(t.Nodes)
	for m := range so.Nodes {
		for k := range so.NICs {
			t.Nodes = append(t.Nodes, Node{Kind: NodeNIC, Name: fmt.Sprintf("n%d-nic%d", m, k)})
		}
	}
	var names []string
	names, so.nicLeaf = leafLayout(e, so.Nodes, so.NICs)
	so.Leaves = len(names)
	so.leaf0 = len(t.Nodes)
	for _, name := range names {
		t.addSwitch(name)
	}
	so.spine0 = len(t.Nodes)
	if so.Leaves > 1 {
		so.Spines = e.Spines
		for i := range so.Spines {
			t.addSwitch(fmt.Sprintf("spine%d", i))
		}
	}
	nic := LinkParams{Bandwidth: e.NICBandwidth, Latency: e.NICLatency}
	so.up, so.down = make([]int32, t.Devices), make([]int32, t.Devices)
	for d := range t.Devices {
		m, l := d/nd, d%nd
		so.up[d], so.down[d] = t.duplexIDs(d, so.NIC(m, so.NICOf(l)), "efa-nic", nic)
	}
	wire := LinkParams{Bandwidth: e.NICBandwidth, Latency: e.LeafLatency}
	so.nicUp, so.nicDown = make([]int32, nics), make([]int32, nics)
	so.nicPort = make([]int32, nics)
	down := make([]int, so.Leaves) // NICs per leaf
	for i := range nics {
		leaf := int(so.nicLeaf[i])
		so.nicUp[i], so.nicDown[i] = t.duplexIDs(so.nic0+i, so.Leaf(leaf), "efa-leaf", wire)
		so.nicPort[i] = int32(down[leaf]) // the NICs fill a leaf's ports in NIC order
		down[leaf]++
	}
	so.leafUp = make([][]int32, so.Leaves)
	so.spineDown = make([][]int32, so.Spines)
	for s := range so.spineDown {
		so.spineDown[s] = make([]int32, so.Leaves)
	}
	if so.Spines == 0 {
		return nil
	}
	for leaf := range so.Leaves {
		bw := spineLinkBandwidth(e, down[leaf])
		if bw < 1 || bw > float64(maxBandwidth) {
			return fmt.Errorf("fabric EFA: leaf %s: %d NICs of %d B/s over EFA.Oversubscription %v and %d spines leave %g B/s per spine link (1..%d): %w",
				t.Nodes[so.Leaf(leaf)].Name, down[leaf], e.NICBandwidth, e.Oversubscription, so.Spines, bw, uint64(maxBandwidth), ErrParams)
		}
		upl := LinkParams{Bandwidth: uint64(bw), Latency: e.SpineLatency}
		so.leafUp[leaf] = make([]int32, so.Spines)
		for s := range so.Spines {
			so.leafUp[leaf][s], so.spineDown[s][leaf] = t.duplexIDs(so.Leaf(leaf), so.Spine(s), "efa-spine", upl)
		}
	}
	return nil
}

// leafLayout places the NICs of nodes nodes of nics NICs each on leaves:
// a rail's NICs in node order, LeafPorts a leaf (rail-optimised); or every
// NIC in order (fat tree). It returns the leaves' names and each NIC's
// leaf (NIC k of node m is NIC m·nics + k).
func leafLayout(e EFAParams, nodes, nics int) (names []string, nicLeaf []int32) {
	nicLeaf = make([]int32, nodes*nics)
	if e.Network == RailOptimised {
		per := (nodes + e.LeafPorts - 1) / e.LeafPorts
		for k := range nics {
			for j := range per {
				name := fmt.Sprintf("rail%d-leaf", k)
				if per > 1 {
					name = fmt.Sprintf("rail%d-leaf%d", k, j)
				}
				names = append(names, name)
			}
			for m := range nodes {
				nicLeaf[m*nics+k] = int32(k*per + m/e.LeafPorts)
			}
		}
		return names, nicLeaf
	}
	for j := range (len(nicLeaf) + e.LeafPorts - 1) / e.LeafPorts {
		names = append(names, fmt.Sprintf("leaf%d", j))
	}
	for i := range nicLeaf {
		nicLeaf[i] = int32(i / e.LeafPorts)
	}
	return names, nicLeaf
}

// spineLinkBandwidth is the bandwidth of each spine link of a leaf of
// nics NICs: their bandwidth over the oversubscription, split evenly over
// the spines.
func spineLinkBandwidth(e EFAParams, nics int) float64 {
	return float64(nics) * float64(e.NICBandwidth) / e.Oversubscription / float64(e.Spines)
}

// SpineLoad is a leaf of a scale-out network and the bandwidth of each of
// its spine links.
type SpineLoad struct {
	Leaf      string
	NICs      int     // the leaf's NICs
	Bandwidth float64 // of each spine link, B/s
}

// SpineLoads returns the leaves of the EFA network of nodes nodes of
// nodeDevices devices each (e's layout) with the least and the most
// NICs, and the bandwidth of each of their spine links; ok is false when
// the network has no spines (one leaf). The bandwidth must be in
// 1..units.MaxBandwidthBps (scaleOut refuses it otherwise).
func (e EFAParams) SpineLoads(nodes, nodeDevices int) (least, most SpineLoad, ok bool) {
	names, nicLeaf := leafLayout(e, nodes, nodeDevices/e.DevicesPerNIC)
	if len(names) < 2 {
		return least, most, false
	}
	down := make([]int, len(names))
	for _, l := range nicLeaf {
		down[l]++
	}
	for i, n := range down {
		l := SpineLoad{Leaf: names[i], NICs: n, Bandwidth: spineLinkBandwidth(e, n)}
		if i == 0 || n < least.NICs {
			least = l
		}
		if i == 0 || n > most.NICs {
			most = l
		}
	}
	return least, most, true
}

// duplexIDs adds both directions of a link between a and b and returns
// their ids (a→b, b→a).
func (t *Topology) duplexIDs(a, b int, group string, p LinkParams) (ab, ba int32) {
	x, y := t.link(a, b, group, p), t.link(b, a, group, p)
	t.Links[x].ToPort, t.Links[y].ToPort = t.Links[y].FromPort, t.Links[x].FromPort
	return int32(x), int32(y)
}

// hop is the link a packet at node x takes towards device dst (-1: none),
// by the rules of BuildNodes.
func (so *ScaleOut) hop(x, dst int) int32 {
	nd := so.NodeDevices
	dn, dl := dst/nd, dst%nd
	n := so.Nodes * nd
	baseHop := func(m, from int) int32 { // node m's own path from base node from towards local dl
		id := so.Base.next.hop(from, dl)
		if id < 0 {
			return -1
		}
		return int32(m*so.baseLinks) + id
	}
	switch {
	case x < n: // a device
		m, l := x/nd, x%nd
		if m == dn {
			return baseHop(m, l)
		}
		if so.Network == RailOptimised && so.NICOf(l) != so.NICOf(dl) {
			return baseHop(m, l) // to the device on the destination's rail first
		}
		return so.up[x]
	case x < so.nic0: // a switch of a node
		i := x - n
		return baseHop(i/so.baseSwitch, nd+i%so.baseSwitch)
	case x < so.leaf0: // a NIC
		i := x - so.nic0
		if i/so.NICs != dn {
			return so.nicUp[i]
		}
		if i%so.NICs == so.NICOf(dl) {
			return so.down[dst]
		}
		return -1
	}
	dest := dn*so.NICs + so.NICOf(dl)
	leaf := int(so.nicLeaf[dest])
	switch {
	case x < so.spine0: // a leaf
		if x-so.leaf0 == leaf {
			return so.nicDown[dest]
		}
		return so.leafUp[x-so.leaf0][int(so.nicPort[dest])%so.Spines]
	case x < so.spine0+so.Spines: // a spine
		return so.spineDown[x-so.spine0][leaf]
	}
	return -1
}

// isEFAGroup reports whether the links of group g are the EFA network's:
// a device's link to its NIC, a NIC's to its leaf, a leaf's to a spine.
func isEFAGroup(g string) bool {
	return g == "efa-nic" || g == "efa-leaf" || g == "efa-spine"
}
