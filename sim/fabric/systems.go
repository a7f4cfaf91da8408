package fabric

import (
	"errors"
	"fmt"
	"strings"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
)

// The shapes of the Trn3 UltraServers (trainium-facts §1, §4 [A9]).
const (
	// Gen1Servers × Gen1ServerSize devices make a Trn3 Gen1 UltraServer.
	Gen1Servers, Gen1ServerSize = 4, 16
	// Gen1RackServers is how many of a Gen1 UltraServer's servers share a
	// rack: the direct inter-rack links join the two racks. The split of
	// the 4 servers over racks is not public: chosen (docs/fabric.md).
	Gen1RackServers = 2
	// Gen2Servers × Gen2ServerSize devices make a Trn3 Gen2 UltraServer.
	Gen2Servers, Gen2ServerSize = 36, 4
	// Gen2Spines is the number of second-level switches of a Gen2
	// UltraServer.
	Gen2Spines = 2
)

// DefaultInterRack is a Trn3 device's bundle of 2 direct inter-rack links:
// 128 GB/s bidirectional [A9], so 64 GB/s per direction; 500 ns like every
// other link (chosen, docs/fabric.md).
var DefaultInterRack = LinkParams{Bandwidth: 64e9, Latency: 500 * ns}

// switchedTrn3 reports whether the kind is a Trn3 NeuronSwitch-v1 fabric,
// whose inter-server link group the pod-port budget bounds.
func (k Kind) switchedTrn3() bool {
	return k == KindSwitch || k == KindTrn3Gen1 || k == KindTrn3Gen2
}

// ServerSizeRefusal says why a server size (Params.ServerSize: the
// devices of a server of the switch topology) does not apply to a
// topology of kind k, not KindSwitch: the Trn3 UltraServers have their
// servers fixed by the hardware (§Systems), the other kinds have none.
// The command line's --server-size and a scenario's timing.server_size
// refuse it with these words.
func (k Kind) ServerSizeRefusal() string {
	if k == KindTrn3Gen1 || k == KindTrn3Gen2 {
		return fmt.Sprintf("a %s topology has its servers fixed (docs/fabric.md §Systems)", k)
	}
	return fmt.Sprintf("a %s topology has no servers", k)
}

// DevicesRefusal says why a topology of kind k cannot be built of n
// devices — its shape fixes the count — or "": a torus2d needs a multiple
// of 16, an UltraServer (ultraserver, trn3-gen1) 64 devices, a Gen2
// UltraServer 144. Build (graph, for every kind) refuses such a count with these words, and the
// command line (--topology, --devices) and a scenario (system.topology)
// before building, naming their keys.
func (k Kind) DevicesRefusal(n int) string {
	switch {
	case k == KindTorus2D && n%16 != 0:
		return "the 4×4 torus needs a multiple of 16"
	case k == KindUltraServer && n != 64:
		return "an UltraServer is 4 × 16 = 64"
	case k == KindTrn3Gen1 && n != Gen1Servers*Gen1ServerSize:
		return fmt.Sprintf("a Trn3 Gen1 UltraServer is %d servers × %d = %d", Gen1Servers, Gen1ServerSize, Gen1Servers*Gen1ServerSize)
	case k == KindTrn3Gen2 && n != Gen2Servers*Gen2ServerSize:
		return fmt.Sprintf("a Trn3 Gen2 UltraServer is %d servers × %d = %d", Gen2Servers, Gen2ServerSize, Gen2Servers*Gen2ServerSize)
	}
	return ""
}

// ServerSizeFit says why size devices per server (Params.ServerSize,
// given) do not make servers of a switch topology of n devices, or "":
// a size above n builds one server and no inter-server switch, and one
// that does not divide n a last server of fewer devices (the default, 16,
// is not checked: a switch topology takes any device count, its last
// server the rest). The command line's --server-size and a scenario's
// timing.server_size refuse it with these words.
func ServerSizeFit(size, n int) string {
	switch {
	case size > n:
		return fmt.Sprintf("%d devices per server is more than the system's %d devices: it would build one server of %d and no inter-server switch (a server size of %d says that)", size, n, n, n)
	case n%size != 0:
		return fmt.Sprintf("%d devices per server does not divide the system's %d devices: the last server would have %d", size, n, n%size)
	}
	return ""
}

// GenerationRefusal says why a topology of kind k cannot be built of
// devices of generation g, or "" when it can. The switched kinds
// (switch, trn3-gen1, trn3-gen2) are Trn3's: NeuronSwitch and the
// in-server and inter-server link groups they are built of (Params.InServer,
// InterServer, the pod-port budget) exist only on mariana; sunda (Trn1,
// Inf2) and cayman (Trn2) devices are joined by direct links. Star, every
// device on one switch, is an α-β experiment and takes any generation.
// The Trn2 UltraServer (KindUltraServer) is cayman's alone: its Z links
// join Trn2 nodes. The command line's --topology, a scenario's system.topology and a sweep
// grid's topologies refuse it with these words.
func (k Kind) GenerationRefusal(g hwarch.Generation) string {
	if k == KindUltraServer && g != hwarch.Cayman {
		return fmt.Sprintf("an %s topology is Trn2's: the Trn2 UltraServer joins four trn2u nodes' 4×4 tori by Z links between same-position chips; %s (%s) has no such system (trainium-facts §4)",
			k, g, g.Product())
	}
	if !k.switchedTrn3() || g == hwarch.Mariana {
		return ""
	}
	return fmt.Sprintf("a %s topology is Trn3's: only mariana (Trn3) systems have NeuronSwitch and its in-server and inter-server links; %s (%s) devices are joined by direct links (torus2d, ring, chain, Trn2's ultraserver; star or fully-connected for α-β experiments)",
		k, g, g.Product())
}

// HasSwitches reports whether a topology of kind k has switches, whose
// forwarding delay is Params.Switch (an EFA network's leaves and spines
// have it too, whatever the nodes' kind).
func (k Kind) HasSwitches() bool { return k.switchedTrn3() || k == KindStar }

// trn3Gen1 builds the Trn3 Gen1 UltraServer (trainium-facts §4 [A9]): 64
// devices, 4 servers of 16. Every device has three link groups, each a
// bundle of lanes modelled as one link per direction of the bundle's
// bandwidth:
//   - "in-server": 4 links to its server's in-server switch l1-sw<s>
//     (Params.InServer);
//   - "inter-server": 5 links to the inter-server switch l2-sw
//     (Params.InterServer), the one level that joins the servers;
//   - "inter-rack": 2 direct links to the device of the same position in
//     the other rack (Params.InterRack); racks of Gen1RackServers servers.
//
// Routing is shortest-path with the in-server switch preferred inside a
// server (as KindSwitch): a device reaches its server's devices in 2 hops
// (one switch), the other servers' in 2 (through l2-sw), and its
// inter-rack peer in 1.
func (t *Topology) trn3Gen1(n int, p Params) error {
	l1 := t.serverSwitches(Gen1Servers)
	l2 := t.addSwitch("l2-sw")
	rackSize := Gen1RackServers * Gen1ServerSize
	for d := range n {
		t.duplex(d, l1[d/Gen1ServerSize], "in-server", p.InServer)
		t.duplex(d, l2, "inter-server", p.InterServer)
	}
	for d := range n - rackSize {
		t.duplex(d, d+rackSize, "inter-rack", p.InterRack)
	}
	return nil
}

// trn3Gen2 builds the Trn3 Gen2 UltraServer (trainium-facts §4 [A9]): 144
// devices, 36 servers of 4, a first-level switch per server (l1-sw<s>) and
// two second-level switches across the servers (l2-sw0, l2-sw1). Each
// device's 4 in-server links go to its server's first-level switch
// (Params.InServer, one bundle) and its 5 inter-server links to the
// second-level switches, a link to each of Params.SecondLevel (by default
// half the group's bandwidth: the split of 5 lanes over 2 switches is not
// public: chosen, docs/fabric.md). A device reaches its server's devices
// in 2 hops (the first-level switch) and the other servers' in 2 (a
// second-level switch, chosen by spreadGen2).
func (t *Topology) trn3Gen2(n int, p Params) error {
	l1 := t.serverSwitches(Gen2Servers)
	var l2 [Gen2Spines]int
	for i := range l2 {
		l2[i] = t.addSwitch(fmt.Sprintf("l2-sw%d", i))
	}
	for d := range n {
		t.duplex(d, l1[d/Gen2ServerSize], "in-server", p.InServer)
		for _, sw := range l2 {
			t.duplex(d, sw, "inter-server", p.SecondLevel)
		}
	}
	return nil
}

// spreadGen2 spreads a Gen2 UltraServer's traffic between servers over its
// second-level switches: the shortest-path table sends it all through the
// first (reached first); a write from device a to device b of another
// server takes l2-sw<(a+b) mod 2> instead, as an address-routed fabric
// would by a bit of the pair. Paths inside a server are left alone. It
// returns the change as route's adjust of a block of columns.
func (t *Topology) spreadGen2() func(lo int, col [][]int32) {
	up := make([][]int32, t.Devices) // up[d][i]: d's link to l2-sw<i>
	for d := range t.Devices {
		for _, id := range t.Nodes[d].Ports {
			if t.Links[id].Group == "inter-server" {
				up[d] = append(up[d], int32(id))
			}
		}
	}
	return func(lo int, col [][]int32) {
		for a := range t.Devices {
			if len(up[a]) == 0 {
				continue
			}
			for i := range col[a] {
				if b := lo + i; b < t.Devices && a/Gen2ServerSize != b/Gen2ServerSize {
					col[a][i] = up[a][(a+b)%len(up[a])]
				}
			}
		}
	}
}

// SystemSpec is a system AWS sells, as the fabric builds it: its
// generation, device count and topology kind, and the parameters it takes
// (DefaultParams of the generation), with its EFA scale-out: the
// per-instance (here per-node) EFA bandwidth and NIC count AWS publishes,
// so that a SystemSpec and a node count give the whole cluster (Cluster).
type SystemSpec struct {
	Name       string // as the CLI spells it: trn1-32xl, trn2-48xl, trn2-ultraserver, trn3-gen1, trn3-gen2
	About      string
	Generation hwarch.Generation
	Devices    int
	Kind       Kind
	// EFABandwidth is the node's EFA bandwidth per direction, bytes/s
	// (trainium-facts §4): trn1.32xlarge 800 Gbps [A6], trn2.48xlarge
	// 3,200 Gbps [A8, C2], a Trn2 UltraServer 4 × 3,200 [A8], Trn3 Gen1
	// 12,800 and Gen2 28,800 Gbps [A9].
	EFABandwidth uint64
	// NICs is the node's EFA devices: 8 on trn1.32xlarge [X2], 16 on
	// trn2.48xlarge (one per chip [A8, C2]), 64 on a Trn2 UltraServer (4 ×
	// 16); one per chip on Trn3 (not published: chosen).
	NICs int
}

// Gbps is a bandwidth of n gigabits per second in bytes per second.
func Gbps(n uint64) uint64 { return n * 1e9 / 8 }

// Systems are the systems of trainium-facts §1 and §4, by name.
var Systems = []SystemSpec{
	{"trn1-32xl", "trn1.32xlarge: 16 Trainium chips, 4×4 2D torus [A6]", hwarch.Sunda, 16, KindTorus2D, Gbps(800), 8},
	{"trn2-48xl", "trn2.48xlarge: 16 Trainium2 chips, 4×4 2D torus [A8]", hwarch.Cayman, 16, KindTorus2D, Gbps(3200), 16},
	{"trn2-ultraserver", "Trn2 UltraServer: 4 trn2u.48xlarge × 16, same-position chips in a Z ring of 4 [A8]", hwarch.Cayman, 64, KindUltraServer, 4 * Gbps(3200), 64},
	{"trn3-gen1", "Trn3 Gen1 UltraServer: 4 servers × 16 on NeuronSwitch-v1 [A9]", hwarch.Mariana, 64, KindTrn3Gen1, Gbps(12800), 64},
	{"trn3-gen2", "Trn3 Gen2 UltraServer: 36 servers × 4, two switch levels [A9]", hwarch.Mariana, 144, KindTrn3Gen2, Gbps(28800), 144},
}

// ErrUnknownSystem is returned (wrapped) by LookupSystem.
var ErrUnknownSystem = errors.New("unknown system")

// LookupSystem returns the system of that name (case-insensitive).
func LookupSystem(name string) (SystemSpec, error) {
	names := make([]string, len(Systems))
	for i, s := range Systems {
		if units.Word(name) == s.Name {
			return s, nil
		}
		names[i] = s.Name
	}
	return SystemSpec{}, fmt.Errorf("%w %q: accepted names are %s", ErrUnknownSystem, name, strings.Join(names, "|"))
}

// Config returns the configuration of the system with the generation's
// default parameters (the caller sets the rest: DMA timing, readiness,
// timing-only).
func (s SystemSpec) Config() Config {
	return Config{Generation: s.Generation, Devices: s.Devices, Kind: s.Kind}
}

// Switch returns the switch family of the system: NeuronSwitch-v1 for the
// Trn3 systems, none for Trn1 and Trn2 (trainium-facts §4; the rule
// hwarch.DefaultSwitchFamily gives each generation).
func (s SystemSpec) Switch() hwarch.SwitchFamily { return hwarch.DefaultSwitchFamily(s.Generation) }

// EFA returns the generation's EFA parameters with the system's NICs and
// bandwidth: Devices/NICs devices per NIC, EFABandwidth/NICs per NIC.
func (s SystemSpec) EFA() EFAParams {
	e := DefaultEFA(s.Generation)
	if s.NICs > 0 {
		e.DevicesPerNIC, e.NICBandwidth = max(1, s.Devices/s.NICs), s.EFABandwidth/uint64(s.NICs)
	}
	return e
}

// Cluster returns the configuration of nodes copies of the system joined
// by EFA: Devices × nodes devices, the generation's default parameters
// with the system's EFA (SystemSpec.EFA).
func (s SystemSpec) Cluster(nodes int) Config {
	p := DefaultParams(s.Generation)
	p.EFA = s.EFA()
	return Config{Generation: s.Generation, Devices: s.Devices * nodes, Nodes: nodes, Kind: s.Kind, Params: &p}
}
