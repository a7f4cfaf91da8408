package main

// The EFA scale-out flags of fabric sweep and fabric topo: --nodes N joins
// N copies of the system the other flags give (its devices and topology)
// over the EFA network (docs/fabric.md §EFA).

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

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
	cmd        *cobra.Command
}

// networkValue records that --efa-network was given.
type networkValue struct{ f *efaFlags }

func (v networkValue) String() string { return v.f.network.String() }
func (v networkValue) Set(s string) error {
	if err := v.f.network.Set(s); err != nil {
		return err
	}
	v.f.networkSet = true
	return nil
}
func (v networkValue) Type() string { return "network" }

// ratioValue is a ratio of at least 1 (a decimal number: 1, 1.5, 4).
type ratioValue struct {
	name string
	max  float64
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
	if f < 1 || f > v.max {
		return &units.Error{Field: v.name, Value: strconv.Quote(s), Reason: fmt.Sprintf("a ratio from 1 (non-blocking) to %g", v.max), Err: units.ErrRange}
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
		nodes:     newIntDefault("--nodes", 1, hwarch.MaxFabricDevices, 1),
		ratio:     &ratioValue{name: "--oversubscription", max: fabric.MaxOversubscription},
		bw:        newBandwidth("--efa-bw"),
		latency:   newNS("--efa-latency"),
		leafPorts: newInt("--leaf-ports", 1, fabric.MaxLeafPorts),
		spines:    newInt("--spines", 1, fabric.MaxSpines),
		perNIC:    newInt("--devices-per-nic", 1, hwarch.MaxFabricDevices),
	}
	fl := cmd.Flags()
	fl.Var(f.nodes, "nodes", "N copies of the system the other flags give (--devices, --topology), joined by the EFA scale-out network: N × devices in all, device index = node × devices + local index (docs/fabric.md §EFA)")
	fl.Var(networkValue{f}, "efa-network", "the EFA network with --nodes: rail (rail-optimised: NIC k of every node on rail k's leaves, spines join them) or fat-tree (NICs on leaves of --leaf-ports in order, leaves on spines)")
	fl.Var(f.ratio, "oversubscription", fmt.Sprintf("R: a leaf's downlink bandwidth over its uplink bandwidth, 1..%d (default 1, non-blocking)", fabric.MaxOversubscription))
	fl.Var(f.bw, "efa-bw", fmt.Sprintf("each NIC's bandwidth per direction, in GB/s of 1e9 B/s or with its unit as --link-bw (400Gbps); default the generation's: 100 Gbps on sunda (800 Gbps per trn1.32xlarge over 8 NICs), %s on cayman and mariana", "200 Gbps"))
	fl.Var(f.latency, "efa-latency", fmt.Sprintf("the latency of a minimal message between two nodes on one leaf, HBM to HBM, ns (default %d: 2 × NIC + 2 × leaf link + a switch + the endpoint delay; the NIC's share is set to make it so)",
		(2*def.NICLatency+2*def.LeafLatency+defP.Switch+defP.Endpoint)/1000))
	fl.Var(f.leafPorts, "leaf-ports", fmt.Sprintf("NICs per leaf switch (its radix of downlinks), 1..%d (default %d)", fabric.MaxLeafPorts, def.LeafPorts))
	fl.Var(f.spines, "spines", fmt.Sprintf("spine switches, 1..%d (default %d; a leaf sends a write for device d to spine d mod spines)", fabric.MaxSpines, def.Spines))
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

// check refuses the EFA flags without --nodes > 1 and a node count past
// hwarch.MaxFabricDevices devices.
func (f *efaFlags) check(perNode []int) error {
	if f.count() == 1 {
		for _, o := range []struct {
			flag string
			set  bool
		}{{"--efa-network", f.networkSet}, {"--oversubscription", f.ratio.set}, {"--efa-bw", f.bw.set}, {"--efa-latency", f.latency.set},
			{"--leaf-ports", f.leafPorts.set}, {"--spines", f.spines.set}, {"--devices-per-nic", f.perNIC.set}} {
			if o.set {
				return fmt.Errorf("%s: one node has no EFA network; it applies with --nodes 2 or more", o.flag)
			}
		}
		return nil
	}
	for _, n := range perNode {
		if f.count() > fabric.MaxNodes(n) {
			return fmt.Errorf("--nodes %d: %d nodes of %d devices are %d devices, more than the fabric's %d (at most %d nodes)",
				f.count(), f.count(), n, f.count()*n, hwarch.MaxFabricDevices, fabric.MaxNodes(n))
		}
	}
	return nil
}

// apply sets the EFA overrides on p. --efa-latency T sets the NIC latency
// to (T − 2 × leaf latency − σ − δ) / 2 (rounded down to the picosecond),
// so that a minimal message between two nodes on one leaf takes T;
// a T too small for the rest of the path is refused.
func (f *efaFlags) apply(p *fabric.Params) error {
	e := &p.EFA
	if f.networkSet {
		e.Network = f.network
	}
	if f.ratio.set {
		e.Oversubscription = f.ratio.v
	}
	if f.bw.set {
		e.NICBandwidth = f.bw.v
	}
	if f.leafPorts.set {
		e.LeafPorts = f.leafPorts.int()
	}
	if f.spines.set {
		e.Spines = f.spines.int()
	}
	if f.perNIC.set {
		e.DevicesPerNIC = f.perNIC.int()
	}
	if f.latency.set {
		rest := 2*e.LeafLatency + p.Switch + p.Endpoint
		if f.latency.v < rest {
			return fmt.Errorf("--efa-latency %s: below the %s ns the rest of the path takes (2 leaf links of %d ns, a switch's %d ns, the endpoint's %d ns)",
				f.latency.text, strconv.FormatFloat(float64(rest)/1000, 'f', -1, 64), e.LeafLatency/1000, p.Switch/1000, p.Endpoint/1000)
		}
		e.NICLatency = (f.latency.v - rest) / 2
	}
	return nil
}
