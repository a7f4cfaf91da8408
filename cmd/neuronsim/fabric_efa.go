package main

// The EFA scale-out flags of fabric sweep and fabric topo: --nodes N joins
// N copies of the system the other flags give (its devices and topology)
// over the EFA network (docs/fabric.md §EFA).

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// efaFlags are --nodes and the EFA network's parameters. Each override is
// unset unless given; unset, it keeps the generation's default
// (fabric.DefaultEFA).
type efaFlags struct {
	nodes      *intValue
	network    fabric.EFANetwork
	networkSet bool
	ratio      *ratioValue
	bw         *scaledValue
	latency    *scaledValue
	leafPorts  *intValue
	spines     *intValue
	perNIC     *intValue
	routing    fabric.EFARouting
	routingSet bool
	cmd        *cobra.Command
}

// givenValue is a flag's value that records that the flag was given
// (--efa-network, --efa-routing: a word whose zero value is a default).
type givenValue struct {
	pflag.Value
	given *bool
}

// Set implements pflag.Value.
func (v givenValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return err
	}
	*v.given = true
	return nil
}

// ratioValue is a ratio (a decimal number: 1, 1.5, 4); its range is
// checked with the other EFA settings (fabric.EFASettings.Check).
type ratioValue struct {
	name string
	v    float64
	set  bool
	text string
}

func (v *ratioValue) String() string { return v.text }

// Set implements pflag.Value.
func (v *ratioValue) Set(s string) error {
	f, err := units.ParseFloat(v.name, s)
	if err != nil {
		return err
	}
	v.v, v.set, v.text = f, true, s
	return nil
}

// Type implements pflag.Value.
func (v *ratioValue) Type() string { return "ratio" }

func addEFAFlags(cmd *cobra.Command) *efaFlags {
	defP := fabric.DefaultParams(hwarch.Cayman)
	def := defP.EFA
	f := &efaFlags{cmd: cmd,
		// The flags read within the settings' own ranges (fabric.EFACountMax,
		// the bounds fabric.EFASettings.Check holds for them and for a
		// scenario's system.efa), so that a number too large for any says so.
		nodes:     newIntDefault("--nodes", 1, fabric.EFACountMax(fabric.SettingNodes), 1),
		ratio:     &ratioValue{name: "--oversubscription"},
		bw:        newBandwidth("--efa-bw"),
		latency:   newLatency("--efa-latency"),
		leafPorts: newInt("--leaf-ports", 1, fabric.EFACountMax(fabric.SettingLeafPorts)),
		spines:    newInt("--spines", 1, fabric.EFACountMax(fabric.SettingSpines)),
		perNIC:    newInt("--devices-per-nic", 1, fabric.EFACountMax(fabric.SettingDevicesPerNIC)),
	}
	fl := cmd.Flags()
	fl.Var(f.nodes, "nodes", "N copies of the system the other flags give (--devices, --topology), joined by the EFA scale-out network: N × devices in all, device index = node × devices + local index (docs/fabric.md §EFA)")
	fl.Var(givenValue{&f.network, &f.networkSet}, "efa-network", "the EFA network with --nodes: rail (rail-optimised: NIC k of every node on rail k's leaves, spines join them) or fat-tree (NICs on leaves of --leaf-ports in order, leaves on spines)")
	fl.Var(f.ratio, "oversubscription", fmt.Sprintf("R: a leaf's downlink bandwidth over its uplink bandwidth, 1..%d (default 1, non-blocking)", fabric.MaxOversubscription))
	fl.Var(f.bw, "efa-bw", fmt.Sprintf("each NIC's bandwidth per direction with its unit, as --link-bw (400Gbps, 50GB/s; a bare number is refused); default the generation's: 100 Gbps on sunda (800 Gbps per trn1.32xlarge over 8 NICs), %s on cayman and mariana", "200 Gbps"))
	fl.Var(f.latency, "efa-latency", fmt.Sprintf("T: the latency of a minimal message between two nodes on one leaf, HBM to HBM, ns, at most %d (1 ms): 2 × NIC + 2 × leaf link + a switch + the endpoint delay, the NIC's share set to make it T. Not given, the NIC links keep their %d ns, which make %d with the default switch and endpoint delays (%d in --endpoints ideal, which has neither)",
		fabric.MaxEFALatencyPS/1000, def.NICLatency/1000, (2*def.NICLatency+2*def.LeafLatency+defP.Switch+defP.Endpoint)/1000, (2*def.NICLatency+2*def.LeafLatency)/1000))
	fl.Var(f.leafPorts, "leaf-ports", fmt.Sprintf("NICs per leaf switch (its radix of downlinks), 1..%d (default %d)", fabric.MaxLeafPorts, def.LeafPorts))
	fl.Var(f.spines, "spines", fmt.Sprintf("spine switches, 1..%d (default %d; each leaf's uplink bandwidth split evenly over them; --efa-routing says which a write takes)", fabric.MaxSpines, def.Spines))
	fl.Var(givenValue{&f.routing, &f.routingSet}, "efa-routing", fmt.Sprintf("how a leaf chooses a write's spine: spray (each NIC sends its writes across the spines to them in turn, as EFA's SRD sprays a flow over the paths: a flow has the whole uplink) fixed (spine p mod spines, p the destination NIC's port on its leaf: a flow takes one spine, 1/spines of the uplink) or adaptive (the spine whose link up from the leaf is booked until the earliest time, the NIC's turn among equals; in the aware model); default %s", def.Routing))
	fl.Var(f.perNIC, "devices-per-nic", "devices sharing one NIC (default the generation's: 2 on sunda, 1 on cayman and mariana)")
	return f
}

// count is the number of nodes (1 without --nodes).
func (f *efaFlags) count() int { return int(f.nodes.v) }

// total returns the systems' device counts over all nodes.
func (f *efaFlags) total(perNode []int) []int {
	out := make([]int, len(perNode))
	for i, n := range perNode {
		out[i] = n * f.count()
	}
	return out
}

// efaFlagNames spells the EFA settings as the flags.
func efaFlagNames(s fabric.EFASetting) string {
	return [...]string{fabric.SettingNodes: "--nodes", fabric.SettingNetwork: "--efa-network", fabric.SettingOversubscription: "--oversubscription",
		fabric.SettingBandwidth: "--efa-bw", fabric.SettingLatency: "--efa-latency", fabric.SettingLeafPorts: "--leaf-ports",
		fabric.SettingSpines: "--spines", fabric.SettingDevicesPerNIC: "--devices-per-nic", fabric.SettingRouting: "--efa-routing"}[s]
}

// settings are the flags given, as the EFA settings.
func (f *efaFlags) settings() fabric.EFASettings {
	s := fabric.EFASettings{Nodes: int(f.nodes.v)}
	if f.networkSet {
		s.Network = &f.network
	}
	if f.routingSet {
		s.Routing = &f.routing
	}
	if f.ratio.set {
		s.Oversubscription = &f.ratio.v
	}
	if f.bw.set {
		s.Bandwidth = &f.bw.v
	}
	if f.latency.set {
		s.Latency = &f.latency.v
	}
	for _, o := range []struct {
		v  *intValue
		to **int
	}{{f.leafPorts, &s.LeafPorts}, {f.spines, &s.Spines}, {f.perNIC, &s.DevicesPerNIC}} {
		if o.v.set {
			n := o.v.int()
			*o.to = &n
		}
	}
	return s
}

// check refuses the EFA flags without --nodes 2 or more, a node count past
// hwarch.MaxFabricDevices devices and every value out of its range
// (fabric.EFASettings.Check, the checks a scenario's system.efa takes).
func (f *efaFlags) check(perNode []int) error {
	return f.settings().Check(perNode, efaFlagNames)
}

// apply sets the EFA overrides on p (fabric.EFASettings.Apply) for nodes of
// perNode devices: --efa-latency T sets the NIC latency so that a minimal
// message between two nodes on one leaf takes T; a T too small for the
// rest of the path is refused, and so are overrides that leave a spine
// link out of 1 B/s..10^15 B/s, and --spines or --oversubscription where
// no system of the sweep has a spine a write could cross
// (fabric.EFASettings.CheckSpinesUsed), naming the flag.
func (f *efaFlags) apply(p *fabric.Params, perNode []int) error {
	s := f.settings()
	if err := s.Apply(p, perNode, efaFlagNames); err != nil {
		return err
	}
	return s.CheckSpinesUsed(p.EFA, perNode, efaFlagNames)
}
