package cluster

import (
	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// NodeRanks returns the ranks of one node of the cluster (Devices/Nodes ×
// RanksPerDevice), 0 for a cluster of one node.
func (cfg Config) NodeRanks() int {
	if cfg.Nodes <= 1 || cfg.Devices%cfg.Nodes != 0 {
		return 0
	}
	return cfg.Devices / cfg.Nodes * max(cfg.RanksPerDevice, 1)
}

// NodeNICs returns the EFA NICs of one node of a cluster of several nodes
// — its devices over the EFA parameters' DevicesPerNIC (Params', or the
// generation's, fabric.DefaultEFA), as the scale-out network gives each
// node (fabric.ScaleOut.NICs) — and 0 for a cluster of one node.
func (cfg Config) NodeNICs() int {
	if cfg.Nodes <= 1 || cfg.Devices%cfg.Nodes != 0 {
		return 0
	}
	e := fabric.DefaultEFA(cfg.Generation)
	if cfg.Params != nil {
		e = cfg.Params.EFA
	}
	if e.DevicesPerNIC < 1 {
		return 0
	}
	return cfg.Devices / cfg.Nodes / e.DevicesPerNIC
}

// PolicyFor returns the algorithm policy of a generation's runtime
// (trainium-facts §5.1): enc.FlatRingPolicy on Trn1 (sunda), whose runtime
// takes a flat ring across nodes for large messages, else
// enc.DefaultPolicy.
func PolicyFor(g hwarch.Generation) enc.Policy {
	if g == hwarch.Sunda {
		return enc.FlatRingPolicy()
	}
	return enc.DefaultPolicy()
}

// CollectiveOptions returns opt with what the cluster's shape decides and
// opt leaves unset: the group size, the ranks of a node (NodeRanks) when
// the cluster has several nodes — so Auto chooses between Hier and a flat
// ring (enc.Policy.ChooseIn) and Hier runs over the nodes —, the flat
// ring's channels, one per EFA NIC of a node (NodeNICs) as the Neuron
// runtime runs them (trainium-facts §5.1; docs/fabric.md §EFA), and the
// policy, the generation's (PolicyFor).
func (cfg Config) CollectiveOptions(opt enc.Options) enc.Options {
	if opt.GroupSize == 0 {
		opt.GroupSize = cfg.NodeRanks()
	}
	if opt.Channels == 0 {
		opt.Channels = cfg.NodeNICs()
	}
	if opt.Policy == (enc.Policy{}) {
		opt.Policy = PolicyFor(cfg.Generation)
	}
	return opt
}
