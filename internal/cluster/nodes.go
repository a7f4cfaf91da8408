package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
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

// ChannelsApply reports whether flat-ring channels (enc.Options.Channels)
// are those of a collective op of algo on the cluster: they are the flat
// ring's across nodes, so the cluster has several nodes and
// enc.ChannelsApply holds — algo ring or auto (whose choice across nodes
// may be the flat ring) and op all_reduce, all_gather or reduce_scatter
// (a permute's ring and an alltoall's mesh run no channels). Every surface
// that takes channels — fabric sweep's --channels, a scenario step's, a
// sweep grid's axis — asks it.
func (cfg Config) ChannelsApply(op enc.Op, algo enc.Algo) bool {
	return cfg.Nodes > 1 && enc.ChannelsApply(op, algo)
}

// CheckChannels says why k flat-ring channels cannot be those of a
// collective op of algo on the cluster — outside 1..enc.MaxChannels, not
// applying to it (ChannelsApply: one node, an op or an algorithm that runs
// no channels), or not dividing a node's ranks (each channel enters a node
// at its own local rank); nil when they can. The caller wraps it in where
// the count came from and its own sentinel.
func (cfg Config) CheckChannels(k int, op enc.Op, algo enc.Algo) error {
	node := cfg.NodeRanks()
	switch {
	case k < 1 || k > enc.MaxChannels:
		return fmt.Errorf("1..%d rings side by side, not %d", enc.MaxChannels, k)
	case cfg.Nodes <= 1:
		return errors.New("channels are the flat ring's across nodes, and the system has one node")
	case op == enc.Permute:
		return errors.New("a permute runs no ring channels (its ring is one shift to its peers), so they would change nothing; channels apply to all_reduce, all_gather and reduce_scatter")
	case op == enc.AllToAll:
		return errors.New("an alltoall runs on mesh, not a ring, so channels would change nothing; they apply to all_reduce, all_gather and reduce_scatter")
	case !cfg.ChannelsApply(op, algo):
		return fmt.Errorf("channels are the flat ring's: algo ring or auto, not %s", algo)
	case node%k != 0:
		return fmt.Errorf("%d channels do not divide a node's %d ranks: each channel enters a node at its own local rank", k, node)
	}
	return nil
}

// CheckAutoChannels says why channels are wasted on a collective of op
// with algo auto over sizes on the cluster: across nodes auto resolves
// per size (opt's policy and group size, as CollectiveOptions sets them),
// and where it runs no flat ring at any of the sizes — hier at every size
// on Trn2 and Trn3, on Trn1 below the flat ring's 64 MiB — the channels
// would change nothing; nil when auto runs the ring at some size. The
// caller has checked the channels with CheckChannels, and wraps the error
// in where they came from.
func (cfg Config) CheckAutoChannels(op enc.Op, sizes []int64, opt enc.Options) error {
	ranks, runs, none := cfg.autoRunsNone(op, sizes, opt, func(a enc.Algo) bool { return a == enc.Ring })
	if !none {
		return nil
	}
	return fmt.Errorf("algo auto runs no flat ring at any size here (%s on %d ranks in nodes of %d: auto runs %s), so the channels would change nothing; give algo ring, or sizes where auto takes the ring",
		op, ranks, opt.GroupSize, runs)
}

// autoRunsNone reports whether auto, resolved per size of op over sizes
// (opt's policy and group size; Largest), runs no algorithm want takes at
// any of them, and says what it runs ("mesh up to 1024 bytes, rdh up to
// 4194304 bytes") on how many ranks, for CheckAutoChannels and
// CheckAutoRingOrder.
func (cfg Config) autoRunsNone(op enc.Op, sizes []int64, opt enc.Options, want func(enc.Algo) bool) (ranks int, runs string, none bool) {
	ranks = cfg.Devices * max(cfg.RanksPerDevice, 1)
	largest := Largest(op, enc.Auto, ranks, sizes, opt)
	parts := make([]string, 0, len(largest))
	for _, a := range largest {
		if want(a.Algo) {
			return ranks, "", false
		}
		parts = append(parts, fmt.Sprintf("%s up to %d bytes", a.Algo, a.Size))
	}
	return ranks, strings.Join(parts, ", "), true
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
// runtime runs them (trainium-facts §5.1; docs/fabric.md §EFA), the
// policy, the generation's (PolicyFor), and the ring order, along the
// topology's links (RingOrder) unless RankOrderRings.
func (cfg Config) CollectiveOptions(opt enc.Options) enc.Options {
	if opt.RingOrder == nil && !cfg.RankOrderRings {
		opt.RingOrder = cfg.RingOrder().Ranks
	}
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

// RankKeys name the settings a system's rank count is made of, for
// CheckRanks's refusal: the command line's flags (--nodes,
// --ranks-per-device, --devices) or a scenario's keys (system.nodes,
// system.ranks_per_device, system.devices).
type RankKeys struct {
	Nodes, RanksPerDevice, Devices string
}

// CheckRanks refuses a system of more ranks than a collective runs on
// (enc.MaxRanks): nodes × perNode devices × ranksPerDevice. The
// *units.Error names the setting that made the count — keys.Nodes when
// there are several nodes (and how many such nodes fit), else
// keys.RanksPerDevice when above 1, else keys.Devices — with its value
// and the bound.
func CheckRanks(nodes, perNode, ranksPerDevice int, keys RankKeys) error {
	devices := nodes * perNode
	ranks := devices * ranksPerDevice
	if ranks <= enc.MaxRanks {
		return nil
	}
	perDevice := "1 rank"
	if ranksPerDevice > 1 {
		perDevice = strconv.Itoa(ranksPerDevice) + " ranks"
	}
	e := &units.Error{Field: keys.Devices, Value: strconv.Itoa(devices), Err: units.ErrRange,
		Reason: fmt.Sprintf("%d devices × %s per device is %d ranks; a collective runs on at most %d", devices, perDevice, ranks, enc.MaxRanks)}
	switch {
	case nodes > 1:
		e.Field, e.Value = keys.Nodes, strconv.Itoa(nodes)
		e.Reason = fmt.Sprintf("%d nodes of %d devices × %s per device are %d ranks; a collective runs on at most %d (at most %d such nodes)",
			nodes, perNode, perDevice, ranks, enc.MaxRanks, enc.MaxRanks/(perNode*ranksPerDevice))
	case ranksPerDevice > 1:
		e.Field, e.Value = keys.RanksPerDevice, strconv.Itoa(ranksPerDevice)
	}
	return e
}
