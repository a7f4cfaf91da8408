package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// EFA overrides the parameters of the EFA scale-out network that joins
// system.nodes nodes (docs/fabric.md §EFA); an absent field keeps the
// generation's value. The fields are the command line's --efa-network,
// --oversubscription, --efa-bw, --efa-latency, --leaf-ports, --spines,
// --devices-per-nic and --efa-routing, checked by the same code
// (fabric.EFASettings).
type EFA struct {
	Network          string     `yaml:"network"`          // rail|fat-tree
	Oversubscription *float64   `yaml:"oversubscription"` // 1..1024
	Bandwidth        *Bandwidth `yaml:"bandwidth"`        // each NIC's, with its unit: 400Gbps, 50GB/s
	LatencyNS        *float64   `yaml:"latency_ns"`       // a minimal message between two nodes on one leaf, HBM to HBM
	LeafPorts        *int       `yaml:"leaf_ports"`       // 1..4096
	Spines           *int       `yaml:"spines"`           // 1..256
	DevicesPerNIC    *int       `yaml:"devices_per_nic"`  // dividing a node's devices
	Routing          string     `yaml:"routing"`          // spray|fixed|adaptive
}

// Bandwidth is a bandwidth in bytes per second, written with its unit
// (units.BandwidthGrammar: 400Gbps, 50GiB/s, 53.7GB/s); a bare number is
// refused, since whether it meant bytes or bits, 10^9 or 2^30, is what the
// unit says.
type Bandwidth uint64

// UnmarshalStrict reads a bandwidth by units.ParseBandwidth. The error
// wraps the *units.Error.
func (b *Bandwidth) UnmarshalStrict(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.ScalarNode {
		return d.Errorf(n, path, "expected a bandwidth: %s", units.BandwidthGrammar)
	}
	v, err := units.ParseBandwidth(path, n.Value)
	if err != nil {
		return d.ValueError(n, path, err)
	}
	*b = Bandwidth(v)
	return nil
}

// efaKeys spells the EFA settings as the scenario's keys.
func efaKeys(s fabric.EFASetting) string {
	return [...]string{fabric.SettingNodes: "system.nodes", fabric.SettingNetwork: "system.efa.network",
		fabric.SettingOversubscription: "system.efa.oversubscription", fabric.SettingBandwidth: "system.efa.bandwidth",
		fabric.SettingLatency: "system.efa.latency_ns", fabric.SettingLeafPorts: "system.efa.leaf_ports",
		fabric.SettingSpines: "system.efa.spines", fabric.SettingDevicesPerNIC: "system.efa.devices_per_nic",
		fabric.SettingRouting: "system.efa.routing"}[s]
}

// efaSettings reads system.nodes and system.efa into the EFA settings,
// each word parsed and each time converted (internal/units); the ranges
// are fabric.EFASettings.Check's.
func efaSettings(d *strictyaml.Decoder, at func(string) *yaml.Node, sys *System) (fabric.EFASettings, error) {
	s := fabric.EFASettings{Nodes: 1}
	if n := sys.Nodes; n != nil {
		// fabric.EFASettings.Check's range, with the value as written (one
		// past int64 too).
		path := efaKeys(fabric.SettingNodes)
		v, err := n.Check(path, 1, fabric.EFACountMax(fabric.SettingNodes))
		if err != nil {
			return s, d.ValueError(at(path), path, err)
		}
		s.Nodes = v
	}
	e := sys.EFA
	if e == nil {
		return s, nil
	}
	if e.Network != "" {
		nw, err := fabric.ParseEFANetwork(e.Network)
		if err != nil {
			return s, d.Errorf(at("system.efa.network"), "system.efa.network", "%v", err)
		}
		s.Network = &nw
	}
	if e.Routing != "" {
		path := efaKeys(fabric.SettingRouting)
		r, err := fabric.ParseEFARouting(e.Routing)
		if err != nil {
			return s, d.Errorf(at(path), path, "%v", err)
		}
		s.Routing = &r
	}
	s.Oversubscription = e.Oversubscription
	if e.Bandwidth != nil {
		bw := uint64(*e.Bandwidth)
		s.Bandwidth = &bw
	}
	if e.LatencyNS != nil {
		path := "system.efa.latency_ns"
		ps, err := units.LatencyToPS(path, *e.LatencyNS)
		if err != nil {
			return s, d.ValueError(at(path), path, err)
		}
		s.Latency = &ps
	}
	s.LeafPorts, s.Spines, s.DevicesPerNIC = e.LeafPorts, e.Spines, e.DevicesPerNIC
	return s, nil
}

// settingError positions an error of fabric.EFASettings at its key. Its
// message names the key first (efaKeys); the positioned error names it
// once.
func settingError(d *strictyaml.Decoder, at func(string) *yaml.Node, err error) error {
	var se *fabric.EFASettingError
	if !errors.As(err, &se) {
		return d.Errorf(at("system"), "system", "%v", err)
	}
	path := efaKeys(se.Setting)
	msg := strings.TrimLeft(strings.TrimPrefix(err.Error(), path), " :")
	return d.ErrorWith(at(path), path, msg, err)
}

// resolveEFA resolves system.nodes and system.efa for a system of
// r.devices devices per node (every check of fabric.EFASettings, the
// command line's), sets the EFA parameters on r.params and makes r.devices
// every node's devices.
func (r *resolved) resolveEFA(d *strictyaml.Decoder, at func(string) *yaml.Node, sys *System) error {
	s, err := efaSettings(d, at, sys)
	if err != nil {
		return err
	}
	if err := s.Check([]int{r.devices}, efaKeys); err != nil {
		return settingError(d, at, err)
	}
	if err := s.Apply(&r.params, []int{r.devices}, efaKeys); err != nil {
		return settingError(d, at, err)
	}
	if err := s.CheckSpinesUsed(r.params.EFA, []int{r.devices}, efaKeys); err != nil {
		return settingError(d, at, err)
	}
	r.nodes, r.efa = s.Nodes, s
	r.devices *= s.Nodes
	return nil
}

// clusterConfig is the cluster the scenario runs on, with its fabric
// parameters, as its collectives see it too (the ranks and EFA NICs of a
// node, the generation's policy: CollectiveOptions).
func (r *resolved) clusterConfig() cluster.Config {
	params := r.params
	return cluster.Config{Generation: r.gen, Devices: r.devices, Nodes: r.nodes, Switch: r.family, Kind: r.kind, Params: &params,
		TimingOnly: r.timing, RanksPerDevice: r.ranksPer, BufferBytes: r.buffers, Revision: r.revision, Boot: r.boot, Reset: r.reset,
		DeviceID: r.deviceID,
		// Past the driver's 64 devices a node only by system.name
		// (trn3-gen2): brought up the what-if way.
		WhatIf: r.devices/r.nodes > hwarch.MaxNeuronDevices}
}

// options are a collective's build options with what the system's shape
// decides (cluster.Config.CollectiveOptions): across nodes, a node's ranks
// as the group size of the hierarchical algorithm and of Auto's choice, and
// one flat-ring channel per EFA NIC of a node unless the step gives its
// channels.
func (r *resolved) options(opt enc.Options) enc.Options {
	return r.clusterConfig().CollectiveOptions(opt)
}

// describeEFA names an EFA network's parameters as the efa keys do.
func describeEFA(e fabric.EFAParams) string {
	return fmt.Sprintf("network %s, oversubscription %g, bandwidth %d B/s, NIC latency %s ns, leaf_ports %d, spines %d, devices_per_nic %d, routing %s",
		e.Network, e.Oversubscription, e.NICBandwidth, strconv.FormatFloat(float64(e.NICLatency)/1000, 'f', -1, 64), e.LeafPorts, e.Spines, e.DevicesPerNIC, e.Routing)
}
