// Package scenario reads and runs neuronsim scenario files
// (docs/scenarios.md): a YAML description of a system, the steps to run on
// it — bring-up, CSR accesses with expected values, DVE table loads,
// programs validated and executed on a core, DMA copies, collectives and
// sweeps, injected faults — and the outputs to write. Decoding is strict:
// an unknown key, a wrong type or an impossible value fails with
// file:line:column and what was expected.
package scenario

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// Scenario is one scenario file.
type Scenario struct {
	Name        string  `yaml:"name,required"`
	Description string  `yaml:"description"`
	System      System  `yaml:"system,required"`
	Steps       []Step  `yaml:"steps"`
	Outputs     Outputs `yaml:"outputs"`

	file string // where it was read from (for relative program paths)
}

// System is the simulated system a scenario runs on.
type System struct {
	Arch           string `yaml:"arch,required"` // sunda|cayman|mariana (or v2|v3|v4, trn1|inf2|trn2|trn3)
	Devices        int    `yaml:"devices"`       // default 1
	Switch         string `yaml:"switch"`        // v1|none; default v1 on mariana
	Revision       string `yaml:"revision"`      // silicon|emu|qemu|0xNN
	Topology       string `yaml:"topology"`      // auto|torus2d|ultraserver|ring|chain|switch|fully-connected|star
	Model          string `yaml:"model"`         // aware|free
	Mode           string `yaml:"mode"`          // timing|functional (DMA payloads)
	Seed           uint64 `yaml:"seed"`          // random inputs
	WhatIf         bool   `yaml:"what_if"`       // device counts past get_max_devs (up to 64)
	RanksPerDevice int    `yaml:"ranks_per_device"`
	Boot           *bool  `yaml:"boot"`  // devices boot their firmware first (default true)
	Reset          *bool  `yaml:"reset"` // bring-up resets each device as the driver does (default true)
	Timing         Timing `yaml:"timing"`
	BufferBytes    Size   `yaml:"buffer_bytes"` // per-rank collective buffers; default 64M
}

// Timing overrides timing parameters (docs/timing-model.md, docs/fabric.md).
type Timing struct {
	LinkLatencyNS *float64 `yaml:"link_latency_ns"`
	LinkBandwidth *float64 `yaml:"link_bw_gbs"`
	EndpointNS    *float64 `yaml:"endpoint_delay_ns"`
	SwitchNS      *float64 `yaml:"switch_latency_ns"`
	ChunkBytes    *int     `yaml:"chunk_bytes"`
	Engines       *int     `yaml:"engines"`
	LaunchCostNS  *float64 `yaml:"launch_cost_ns"`
	ServerSize    *int     `yaml:"server_size"`
}

// Outputs are the files a scenario writes, under Dir.
type Outputs struct {
	Dir    string `yaml:"dir"`    // default neuronsim-out
	Report string `yaml:"report"` // default report.txt
	JSON   string `yaml:"json"`   // the last sweep's nccom-test JSON; default sweep.json when there is a sweep
	Plot   string `yaml:"plot"`   // busbw vs size of the sweeps; default none
	Pcap   string `yaml:"pcap"`   // the fabric's packets; default none
	Trace  string `yaml:"trace"`  // Chrome/Perfetto trace of every device's engines and DMA queues; default none
}

// Size is a byte count written as nccom-test does: 4096, 64K, 1M, 1G.
type Size int64

// UnmarshalStrict reads a size from an integer or a string with a K, M or G
// suffix (powers of 1024).
func (s *Size) UnmarshalStrict(d *Decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.ScalarNode {
		return d.Errorf(n, path, "expected a size (4096, 64K, 1M, 1G)")
	}
	v, err := nccom.ParseSize(n.Value)
	if err != nil {
		return d.Errorf(n, path, "expected a size (4096, 64K, 1M, 1G), got %q", n.Value)
	}
	*s = Size(v)
	return nil
}

// resolved is a system with every word parsed and every default taken.
type resolved struct {
	gen      hwarch.Generation
	devices  int
	family   hwarch.SwitchFamily
	revision uint8
	kind     fabric.Kind
	model    fabric.Model
	timing   bool
	tables   *rtarch.Tables
	ranksPer int
	boot     bool
	reset    bool
	buffers  uint64
}

// check resolves the system and checks every step against it: words,
// ranges, device and core indices. Errors carry the file position.
func (sc *Scenario) check(d *Decoder, root *yaml.Node) (*resolved, error) {
	sys := &sc.System
	at := func(path string) *yaml.Node { return find(root, path) }
	r := &resolved{devices: max(sys.Devices, 1), ranksPer: max(sys.RanksPerDevice, 1), boot: true, reset: true, buffers: 64 << 20}
	var err error
	if r.gen, err = hwarch.ParseGeneration(sys.Arch); err != nil {
		return nil, d.Errorf(at("system.arch"), "system.arch", "expected sunda|cayman|mariana (or v2|v3|v4, trn1|inf2|trn2|trn3), got %q", sys.Arch)
	}
	r.family = hwarch.SwitchNone
	if r.gen == hwarch.Mariana {
		r.family = hwarch.SwitchV1
	}
	if sys.Switch != "" {
		if r.family, err = hwarch.ParseSwitchFamily(sys.Switch); err != nil {
			return nil, d.Errorf(at("system.switch"), "system.switch", "expected v1 or none, got %q", sys.Switch)
		}
	}
	if r.tables, err = rtarch.For(r.gen, rtarch.Options{Switch: r.family}); err != nil {
		return nil, d.Errorf(at("system.arch"), "system.arch", "%v", err)
	}
	limit := r.tables.Soc.MaxDevs()
	if sys.WhatIf {
		limit = hwarch.MaxNeuronDevices
	}
	if sys.Devices < 0 || r.devices > limit {
		hint := ""
		if !sys.WhatIf {
			hint = fmt.Sprintf("; what_if: true allows up to %d", hwarch.MaxNeuronDevices)
		}
		return nil, d.Errorf(at("system.devices"), "system.devices", "a %s system with switch %s holds 1..%d devices (get_max_devs), not %d%s",
			r.gen, r.family, limit, sys.Devices, hint)
	}
	if sys.Revision != "" {
		if r.revision, err = hwarch.ParseRevision(sys.Revision); err != nil {
			return nil, d.Errorf(at("system.revision"), "system.revision", "expected silicon, emu, qemu or 0xNN, got %q", sys.Revision)
		}
	}
	if sys.Topology != "" {
		if r.kind, err = fabric.ParseKind(sys.Topology); err != nil {
			return nil, d.Errorf(at("system.topology"), "system.topology", "%v", err)
		}
	}
	if sys.Model != "" {
		if r.model, err = fabric.ParseModel(sys.Model); err != nil {
			return nil, d.Errorf(at("system.model"), "system.model", "expected aware or free, got %q", sys.Model)
		}
	}
	switch sys.Mode {
	case "", "timing":
		r.timing = true
	case "functional":
	default:
		return nil, d.Errorf(at("system.mode"), "system.mode", "expected timing or functional, got %q", sys.Mode)
	}
	ncs := hwarch.MustGeometry(r.gen).NeuronCores
	if sys.RanksPerDevice < 0 || r.ranksPer > ncs {
		return nil, d.Errorf(at("system.ranks_per_device"), "system.ranks_per_device", "a %s device has %d NeuronCores (num_tpb), not %d", r.gen, ncs, sys.RanksPerDevice)
	}
	if sys.Boot != nil {
		r.boot = *sys.Boot
	}
	if sys.Reset != nil {
		r.reset = *sys.Reset
	}
	if sys.BufferBytes > 0 {
		r.buffers = uint64(sys.BufferBytes)
	}
	for i := range sc.Steps {
		path := fmt.Sprintf("steps[%d]", i)
		if err := sc.Steps[i].check(d, at(path), path, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// find returns the node at a dotted path ("system.devices",
// "steps[2].collective.size") of a document, or the closest ancestor found.
func find(root *yaml.Node, path string) *yaml.Node {
	n := root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, part := range strings.Split(path, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			name = part[:i]
			fmt.Sscanf(part[i:], "[%d]", &idx)
		}
		next := child(n, name)
		if next == nil {
			return n
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return n
			}
			n = n.Content[idx]
		}
	}
	return n
}

// child is the value of key name in mapping n.
func child(n *yaml.Node, name string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i+1]
		}
	}
	return nil
}

// parseOp and friends turn step words into their types.
func parseOp(d *Decoder, n *yaml.Node, path, s string) (enc.Op, error) {
	op, err := enc.ParseOp(s)
	if err != nil {
		return 0, d.Errorf(n, path, "expected all_reduce, all_gather, reduce_scatter, alltoall or permute, got %q", s)
	}
	return op, nil
}
