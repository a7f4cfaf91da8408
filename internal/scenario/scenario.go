// Package scenario reads and runs neuronsim scenario files
// (docs/scenarios.md): a YAML description of a system, the steps to run on
// it — bring-up, CSR accesses with expected values, DVE table loads,
// programs validated and executed on a core, DMA copies, collectives and
// sweeps, injected faults — and the outputs to write. Decoding is strict:
// an unknown key, a wrong type or an impossible value fails with
// file:line:column and what was expected.
package scenario

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/plot"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/internal/units"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// Scenario is one scenario file.
type Scenario struct {
	Name        string  `yaml:"name,required"`
	Description string  `yaml:"description"`
	System      System  `yaml:"system"` // required, except when a snapshot restore gives the system (Base)
	Steps       []Step  `yaml:"steps"`
	Outputs     Outputs `yaml:"outputs"`

	file string // where it was read from (for relative program paths)
}

// System is the simulated system a scenario runs on.
type System struct {
	// Name is a system AWS sells (fabric.Systems: trn1-32xl, trn2-48xl,
	// trn2-ultraserver, trn3-gen1, trn3-gen2), setting arch, devices,
	// topology and switch (system_name.go); `system: NAME` alone says the same.
	Name string `yaml:"name"`
	Arch string `yaml:"arch"` // sunda|cayman|mariana (or v2|v3|v4, trn1|inf2|trn2|trn3); required unless a restore or name gives the system
	// Devices is every node's device count: 1..get_max_devs, or with
	// what_if 1..rtarch.MaxWhatIfDevices (16,384); default 1. It and the
	// other counts of the system are strictyaml.Int, so that a count past
	// int64 is refused naming the setting's range, not int's.
	Devices *strictyaml.Int `yaml:"devices"`
	// Nodes joins that many copies of the system the other keys give (its
	// devices and topology) over the EFA scale-out network, as the command
	// line's --nodes: nodes × devices in all, device index = node × devices
	// + local index (docs/fabric.md §EFA). Default 1.
	Nodes *strictyaml.Int `yaml:"nodes"`
	// EFA overrides the EFA network's parameters; it needs nodes ≥ 2.
	EFA            *EFA            `yaml:"efa"`
	Switch         string          `yaml:"switch"`   // v1|none; default v1 on mariana
	Revision       string          `yaml:"revision"` // silicon|emu|qemu|0xNN
	Topology       string          `yaml:"topology"` // auto|torus2d|ultraserver|ring|chain|switch|fully-connected|star|trn3-gen1|trn3-gen2
	Model          string          `yaml:"model"`    // aware|free
	Mode           string          `yaml:"mode"`     // timing|functional (DMA payloads)
	Seed           uint64          `yaml:"seed"`     // random inputs
	WhatIf         bool            `yaml:"what_if"`  // device counts past get_max_devs, up to rtarch.MaxWhatIfDevices
	RanksPerDevice *strictyaml.Int `yaml:"ranks_per_device"`
	Boot           *bool           `yaml:"boot"`  // devices boot their firmware first (default true)
	Reset          *bool           `yaml:"reset"` // bring-up resets each device as the driver does (default true)
	Timing         Timing          `yaml:"timing"`
	BufferBytes    *Size           `yaml:"buffer_bytes"` // per-rank collective buffers, 1 byte..an HBM channel; default 64M
}

// Timing overrides timing parameters (docs/timing-model.md, docs/fabric.md).
// An absent field keeps the generation's value; a given one is checked
// (internal/units) and refused, with its position, when out of range.
type Timing struct {
	LinkLatencyNS *float64        `yaml:"link_latency_ns"`   // 0..MaxLatencyPS
	LinkBandwidth *float64        `yaml:"link_bw_gbs"`       // above 0, at most 1e6 GB/s
	EndpointNS    *float64        `yaml:"endpoint_delay_ns"` // 0..MaxLatencyPS
	SwitchNS      *float64        `yaml:"switch_latency_ns"` // 0..MaxLatencyPS
	ChunkBytes    *Size           `yaml:"chunk_bytes"`       // 64..1G, aware model only
	Engines       *strictyaml.Int `yaml:"engines"`           // 1..a NeuronCore's DMA engines
	LaunchCostNS  *float64        `yaml:"launch_cost_ns"`    // 0..MaxLatencyPS
	ServerSize    *strictyaml.Int `yaml:"server_size"`       // 1..64, switch topology only
}

// Outputs are the files a scenario writes, under Dir.
type Outputs struct {
	Dir    string `yaml:"dir"`    // default neuronsim-out
	Report string `yaml:"report"` // default report.txt
	JSON   string `yaml:"json"`   // the last sweep's nccom-test JSON; default sweep.json when there is a sweep
	Plot   string `yaml:"plot"`   // busbw vs size of the sweeps; default none
	Pcap   string `yaml:"pcap"`   // the fabric's packets; default none
	Trace  string `yaml:"trace"`  // Chrome/Perfetto trace of every device's engines and DMA queues; default none
	// PcapMax and TraceMax bound the pcap and trace files; the capture or
	// trace stops cleanly there, with a note in the report. Absent (nil):
	// 64M each (capture.DefaultMaxBytes, trace.DefaultMaxBytes); a value
	// given is checked against its range, 0 included (it is no default).
	// Each needs its output (pcap, trace).
	PcapMax  *Size `yaml:"pcap_max"`
	TraceMax *Size `yaml:"trace_max"`
}

// Base is a system a scenario runs on instead of building the one its
// system section describes: a snapshot being restored (neuronsim snapshot
// restore). The scenario need not describe the system; what it does
// describe must agree with the snapshot.
// A Base's system is run on, so a Parsed with a base runs once.
type Base struct {
	From   string         // the snapshot file, for messages
	System *fabric.System // the restored system

	used bool // a run has taken the system
}

// ErrStrict is wrapped by every error of Parse about the file itself (its
// syntax, a key, a value): it is strictyaml.ErrStrict, the decoder's.
var ErrStrict = strictyaml.ErrStrict

// Size is a byte count written as nccom-test does: 4096, 64K, 1M, 1G.
type Size int64

// UnmarshalStrict reads a size from an integer or a string with a unit K,
// M, G or T (powers of 1024), by units.ParseBytes: the grammar and the
// messages of every size flag. The error wraps the *units.Error.
func (s *Size) UnmarshalStrict(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.ScalarNode {
		return d.Errorf(n, path, "expected a size: %s", units.SizeGrammar)
	}
	v, err := units.ParseBytes(path, n.Value)
	if err != nil {
		var ue *units.Error
		if !errors.As(err, &ue) {
			return d.Errorf(n, path, "%w", err)
		}
		// The *Error names the path; its message is the value and the reason,
		// as a flag's error after the flag's name.
		return d.ErrorWith(n, path, ue.Shown()+": "+ue.Reason, err)
	}
	*s = Size(v)
	return nil
}

// resolved is a system with every word parsed and every default taken.
type resolved struct {
	system   string // the system's name (system.name), or ""
	gen      hwarch.Generation
	deviceID uint16 // the PCI device id when arch names a product (inf2: 0x7264); 0: the generation's first
	devices  int    // every node's
	nodes    int    // joined by EFA (1: one node)
	efa      fabric.EFASettings
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
	// collectives counts, as the steps are checked, the collectives the
	// scenario runs (MaxCollectives).
	collectives int
	// The fabric parameters with the timing overrides; engines (0: the
	// calibrated count) and launchCost (nil: the calibrated one) of the
	// collective executor.
	params     fabric.Params
	engines    int
	launchCost *time.Duration
	// held are the keys given whose values a restored snapshot must hold
	// (givenKeys, resolvedKeys), checked at a restore with d, the file's decoder.
	held []heldKey
	d    *strictyaml.Decoder

	// topo is the system's nodes and links (fabric.Graph), made when a
	// fault step first needs them (graph).
	topo    *fabric.Topology
	topoErr error
}

// nodeKind is the topology of each node of the system: the one given, or
// what auto resolves to for a node's devices (fabric.AutoKind), as the
// fabric builds it. r.devices counts every node's once resolveEFA has run
// and a node's before; r.nodes is 1 until then.
func (r *resolved) nodeKind() fabric.Kind {
	if r.kind == fabric.KindAuto {
		return fabric.AutoKind(r.gen, r.devices/r.nodes)
	}
	return r.kind
}

// graph is fabric.Graph of the whole system, every node's devices and
// switches and the EFA network between them, made once.
func (r *resolved) graph() (*fabric.Topology, error) {
	if r.topo == nil && r.topoErr == nil {
		r.topo, r.topoErr = fabric.Graph(r.kind, r.gen, r.devices, r.nodes, r.params)
	}
	return r.topo, r.topoErr
}

// systemShape names the system's shape in messages: "switch topology", or
// "system of 2 nodes of 16 devices (torus2d topology) over EFA".
func (r *resolved) systemShape() string {
	if r.nodes == 1 {
		return fmt.Sprintf("%s topology", r.nodeKind())
	}
	return fmt.Sprintf("system of %d nodes of %d devices (%s topology) over EFA", r.nodes, r.devices/r.nodes, r.nodeKind())
}

// check resolves the system and checks every step against it: words,
// ranges, device and core indices. Errors carry the file position.
func (sc *Scenario) check(d *strictyaml.Decoder, root *yaml.Node, base *Base) (*resolved, error) {
	sys := &sc.System
	at := func(path string) *yaml.Node { return find(root, path) }
	if err := refuseNulls(d, root); err != nil {
		return nil, err
	}
	if strings.TrimSpace(sc.Name) == "" {
		return nil, d.Errorf(at("name"), "name", "expected the scenario's name, got an empty one")
	}
	if err := refuseEmptyStrings(d, root); err != nil {
		return nil, err
	}
	words, err := readWords(d, at, sys)
	if err != nil {
		return nil, err
	}
	given, err := givenKeys(d, at, root, sys, words)
	if err != nil {
		return nil, err
	}
	if base != nil {
		// The keys given are the snapshot's, or refused, before the keys
		// left out are filled from it and the section is resolved.
		if err := agreeKeys(d, given, base.System, base.From); err != nil {
			return nil, err
		}
		if err := sc.takeSystem(d, at, base); err != nil {
			return nil, err
		}
	} else if child(docRoot(root), "system") == nil {
		return nil, d.Errorf(docRoot(root), "", "missing key %q", "system")
	} else if sys.Arch == "" && sys.Name == "" {
		return nil, d.Errorf(at("system"), "system", "missing key %q (or %q, a system by name)", "arch", "name")
	}
	r, err := resolveSystem(d, at, sys)
	if err != nil {
		return nil, err
	}
	if err := r.refuseSeed(d, root, base); err != nil {
		return nil, err
	}
	if err := r.resolveRanks(d, at, sys); err != nil {
		return nil, err
	}
	if err := r.timingOverrides(d, at, &sys.Timing); err != nil {
		return nil, err
	}
	if err := r.resolveEFA(d, at, sys); err != nil {
		return nil, err
	}
	resolvedKeys := r.resolvedKeys(root)
	r.held, r.d = append(given, resolvedKeys...), d
	if base != nil {
		r.params.EFA = base.System.Params().EFA // the system run on is the snapshot's
		if err := agreeKeys(d, resolvedKeys, base.System, base.From); err != nil {
			return nil, err
		}
	}
	outs := child(find(root, ""), "outputs")
	for _, o := range []struct{ key, v string }{{"dir", sc.Outputs.Dir}, {"report", sc.Outputs.Report}, {"json", sc.Outputs.JSON},
		{"plot", sc.Outputs.Plot}, {"pcap", sc.Outputs.Pcap}, {"trace", sc.Outputs.Trace}} {
		if n := child(outs, o.key); n != nil && o.v == "" { // given empty: not the default, which is the key left out
			return nil, d.Errorf(n, "outputs."+o.key, "empty: name a file (or leave the key out for its default)")
		}
		if o.key != "dir" && output.CheckName(o.v) != nil {
			return nil, d.Errorf(child(outs, o.key), "outputs."+o.key, "%s: %s", o.v, output.DirNameReason)
		}
	}
	for _, o := range []struct{ key, v string }{{"json", sc.Outputs.JSON}, {"plot", sc.Outputs.Plot}} {
		if o.v != "" && !hasSweep(sc.Steps) {
			return nil, d.Errorf(child(outs, o.key), "outputs."+o.key, "%s: no sweep step makes it (it is the sweeps' %s)", o.v, map[string]string{"json": "nccom-test JSON", "plot": "busbw plot"}[o.key])
		}
	}
	if n := sweepSteps(sc.Steps); sc.Outputs.Plot != "" && n > plot.MaxSeries {
		return nil, d.Errorf(child(outs, "plot"), "outputs.plot", "%s: %d sweep steps, a line each; a plot draws at most %d (its legend holds no more)", sc.Outputs.Plot, n, plot.MaxSeries)
	}
	for _, o := range []struct {
		key, out, least string
		v               *Size
		min             Size
		file            string
	}{
		{"pcap_max", "pcap", "24 bytes (the pcap file header)", sc.Outputs.PcapMax, 24, sc.Outputs.Pcap},
		{"trace_max", "trace", "1K", sc.Outputs.TraceMax, 1024, sc.Outputs.Trace},
	} {
		if o.v == nil {
			continue
		}
		n, path := at("outputs."+o.key), "outputs."+o.key
		if *o.v < o.min {
			return nil, d.Errorf(n, path, "%s: at least %s (leave the key out for the default, 64M), not %d", n.Value, o.least, *o.v)
		}
		if o.file == "" {
			return nil, d.Errorf(n, path, "%s: no outputs.%s to bound (it bounds that file)", n.Value, o.out)
		}
	}
	if err := r.checkRanks(d, at, sc.Steps); err != nil {
		return nil, err
	}
	for i := range sc.Steps {
		path := fmt.Sprintf("steps[%d]", i)
		if err := sc.Steps[i].check(d, at(path), path, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// resolveSystem resolves the system's words and device count: generation,
// switch family (and the runtime's tables for them), devices within
// get_max_devs (or what_if's limit), revision, topology, model, mode.
func resolveSystem(d *strictyaml.Decoder, at func(string) *yaml.Node, sys *System) (*resolved, error) {
	r := &resolved{devices: 1, nodes: 1, ranksPer: 1, boot: true, reset: true, buffers: 64 << 20}
	named, err := namedSystem(d, at, sys)
	if err != nil {
		return nil, err
	}
	w, err := readWords(d, at, sys)
	if err != nil {
		return nil, err
	}
	if w.gen == nil {
		return nil, d.Errorf(at("system.arch"), "system.arch", "expected sunda|cayman|mariana (or v2|v3|v4, trn1|inf2|trn2|trn3), got %q", sys.Arch)
	}
	r.gen, r.deviceID = *w.gen, w.deviceID
	r.family = hwarch.DefaultSwitchFamily(r.gen)
	if w.family != nil {
		// A family that changes nothing on the generation is refused, as
		// --switch and a grid's switch are (rtarch.CheckSwitch).
		if err := rtarch.CheckSwitch(r.gen, *w.family); err != nil {
			return nil, d.Errorf(at("system.switch"), "system.switch", "%s: %w", sys.Switch, err)
		}
		r.family = *w.family
	}
	if r.tables, err = rtarch.For(r.gen, rtarch.Options{Switch: r.family}); err != nil {
		return nil, d.Errorf(at("system.arch"), "system.arch", "%v", err)
	}
	if named != nil {
		// The hardware's device count, not bounded by get_max_devs.
		r.devices = named.Devices // switch: the generation's default, which is the system's (namedSystem)
	} else if n := sys.Devices; n != nil {
		if err := r.tables.Soc.CheckDevicesField("system.devices", n.String(), n.Int(), sys.WhatIf, "what_if: true"); err != nil {
			return nil, d.ValueError(at("system.devices"), "system.devices", err)
		}
		r.devices = n.Int()
		// what_if given in the file (find returns the nearest node found:
		// the system section when the key is left out, as a restore's
		// takeSystem leaves it, setting WhatIf for the snapshot's count).
		if wi := at("system.what_if"); sys.WhatIf && wi != at("system") && r.devices <= r.tables.Soc.MaxDevs() {
			return nil, d.Errorf(wi, "system.what_if", "true: system.devices %d is within get_max_devs (%d for %s with switch %s), so it would change nothing; it allows counts beyond that: leave it out",
				r.devices, r.tables.Soc.MaxDevs(), r.gen, r.family)
		}
	}
	if w.revision != nil {
		r.revision = *w.revision
	}
	if w.kind != nil {
		if refusal := w.kind.GenerationRefusal(r.gen); refusal != "" {
			return nil, d.Errorf(at("system.topology"), "system.topology", "%s: %s", sys.Topology, refusal)
		}
		r.kind = *w.kind
		// A shape that fixes the count (once refused when the fabric was
		// built, "x.yaml: system: cluster: fabric torus2d: …", at no line).
		if refusal := r.kind.DevicesRefusal(r.devices); refusal != "" && named == nil {
			return nil, d.Errorf(at("system.topology"), "system.topology", "%s: %d devices (system.devices): %s", sys.Topology, r.devices, refusal)
		}
	}
	if named != nil {
		r.kind, r.system = named.Kind, named.Name
	}
	if w.model != nil {
		r.model = *w.model
	}
	r.timing = w.timing == nil || *w.timing
	return r, nil
}

// rankKeys are the scenario's keys that make its rank count
// (cluster.CheckRanks).
var rankKeys = cluster.RankKeys{Nodes: "system.nodes", RanksPerDevice: "system.ranks_per_device", Devices: "system.devices"}

// checkRanks refuses, when a step runs a collective (a collective or a
// sweep step), a system of more ranks than a collective runs on
// (cluster.CheckRanks), at the key that made the count — system.nodes
// when there are several nodes — as fabric sweep refuses --nodes. A
// system with no collective step may be larger: it is brought up only.
func (r *resolved) checkRanks(d *strictyaml.Decoder, at func(string) *yaml.Node, steps []Step) error {
	i := slices.IndexFunc(steps, func(s Step) bool {
		switch s.Action.(type) {
		case *CollectiveStep, *SweepStep:
			return true
		}
		return false
	})
	if i < 0 {
		return nil
	}
	err := cluster.CheckRanks(r.nodes, r.devices/r.nodes, r.ranksPer, rankKeys)
	var ue *units.Error
	if !errors.As(err, &ue) {
		return err
	}
	ue.Reason += fmt.Sprintf("; steps[%d] runs one", i)
	return d.ValueError(at(ue.Field), ue.Field, err)
}

// refuseSeed refuses a seed given to a system in timing mode: the seed is
// the random inputs' of functional collectives, and a timing-only system
// moves no data (as `fabric sweep --seed` in timing mode and a grid's seed).
func (r *resolved) refuseSeed(d *strictyaml.Decoder, root *yaml.Node, base *Base) error {
	sysNode := child(docRoot(root), "system")
	n := child(sysNode, "seed")
	if n == nil || !r.timing {
		return nil
	}
	mode := "mode timing"
	switch {
	case base != nil && child(sysNode, "mode") == nil:
		mode += " (the snapshot " + base.From + "'s)"
	case child(sysNode, "mode") == nil:
		mode += " (the default)"
	}
	return d.Errorf(n, "system.seed", "%s: %s moves no data, so it has no inputs to seed; seed applies to mode: functional", n.Value, mode)
}

// resolveRanks resolves the ranks per device, boot and reset, and the
// per-rank buffers (within one HBM channel).
func (r *resolved) resolveRanks(d *strictyaml.Decoder, at func(string) *yaml.Node, sys *System) error {
	geo := hwarch.MustGeometry(r.gen)
	if n := sys.RanksPerDevice; n != nil {
		if !n.In(1, int64(geo.NeuronCores)) {
			return d.Errorf(at("system.ranks_per_device"), "system.ranks_per_device", "1..%d: a %s device has %d NeuronCores (num_tpb), not %s",
				geo.NeuronCores, r.gen, geo.NeuronCores, n)
		}
		r.ranksPer = n.Int()
	}
	if sys.Boot != nil {
		r.boot = *sys.Boot
	}
	if sys.Reset != nil {
		r.reset = *sys.Reset
	}
	if b := sys.BufferBytes; b != nil {
		// A rank's buffers are one allocation in one HBM channel, less the
		// firmware carve-out and the small pool, shared by the ranks of a
		// channel (cluster.BufferCapacity). The bound was a channel's whole
		// size (36 GiB on Trn3), which no rank can have: 36G passed here
		// and the allocator refused it after bring-up, naming no key.
		most, err := cluster.BufferCapacity(r.gen, r.revision, r.ranksPer)
		if err != nil {
			return err
		}
		if *b < 1 || uint64(*b) > most {
			return d.Errorf(at("system.buffer_bytes"), "system.buffer_bytes", "1 byte..%s (what a %s device of %s holds for each: its HBM channels less the firmware carve-out and the small pool, the ranks of a channel sharing it), not %d",
				units.FormatBytes(int64(most)), r.gen, units.Plural(int64(r.ranksPer), "rank", "ranks"), *b)
		}
		r.buffers = uint64(*b)
	}
	return nil
}

// timingOverrides resolves the fabric parameters and the executor's
// parameters with the timing overrides, each converted through
// internal/units and checked against its range, and refuses an override
// that does not apply to the system (a server size without switches,
// chunks in the free model).
func (r *resolved) timingOverrides(d *strictyaml.Decoder, at func(string) *yaml.Node, t *Timing) error {
	field := func(name string) (*yaml.Node, string) { return at("system.timing." + name), "system.timing." + name }
	ns := func(name string, v *float64) (uint64, bool, error) {
		if v == nil {
			return 0, false, nil
		}
		n, path := field(name)
		ps, err := units.LatencyToPS(path, *v)
		if err != nil {
			return 0, false, d.ValueError(n, path, err)
		}
		return ps, true, nil
	}
	lat, hasLat, err := ns("link_latency_ns", t.LinkLatencyNS)
	if err != nil {
		return err
	}
	var bw uint64
	if t.LinkBandwidth != nil {
		// The number as written, read exactly (not the float64 decoded),
		// but for YAML's .inf and .nan, which only the decoder reads.
		n, path := field("link_bw_gbs")
		text := n.Value
		if v := *t.LinkBandwidth; math.IsInf(v, 0) || math.IsNaN(v) {
			text = strconv.FormatFloat(v, 'g', -1, 64)
		}
		if bw, err = units.GBpsToBps(path, text); err != nil {
			return d.ValueError(n, path, err)
		}
	}
	if r.params, err = cluster.RunParams(r.gen, r.deviceID, r.tables, r.model, fabric.EndpointsReal,
		cluster.LinkTiming{Latency: lat, SetLatency: hasLat, Bandwidth: bw, SetBandwidth: bw != 0}); err != nil {
		return err
	}
	p := &r.params
	if ps, ok, err := ns("endpoint_delay_ns", t.EndpointNS); err != nil {
		return err
	} else if ok {
		p.Endpoint = ps
	}
	if ps, ok, err := ns("switch_latency_ns", t.SwitchNS); err != nil {
		return err
	} else if ok {
		p.Switch = ps
	}
	if ps, ok, err := ns("launch_cost_ns", t.LaunchCostNS); err != nil {
		return err
	} else if ok {
		if ps%1000 != 0 {
			// The executor keeps its launch cost as a time.Duration.
			n, path := field("launch_cost_ns")
			return d.Errorf(n, path, "%s: not a whole number of nanoseconds: the collective executor's launch cost is kept to 1 ns", n.Value)
		}
		c := time.Duration(ps / 1000) // ps ≤ MaxLatencyPS fits
		r.launchCost = &c
	}
	return r.timingCounts(d, field, t)
}

// overrides returns the report keys of the parameters sys's timing and efa
// keys give and, in functional mode, its seed, exactly (bandwidths in B/s,
// latencies in ps), under the names fabric sweep's report gives its flags
// (cmd/neuronsim noteOverrides) and a sweep grid's merged report its axes:
// a sweep's JSON output, read apart from the scenario file, says what
// system its numbers are of. A key left out adds nothing.
func (r *resolved) overrides(sys *System) map[string]any {
	t, p, e := &sys.Timing, &r.params, &r.efa
	out := map[string]any{}
	for _, o := range []struct {
		key string
		set bool
		v   func() any
	}{
		{"link_bw_Bps", t.LinkBandwidth != nil, func() any { return p.Link.Bandwidth }},
		{"link_latency_ps", t.LinkLatencyNS != nil, func() any { return p.Link.Latency }},
		{"endpoint_delay_ps", t.EndpointNS != nil, func() any { return p.Endpoint }},
		{"switch_latency_ps", t.SwitchNS != nil, func() any { return p.Switch }},
		{"chunk_bytes", t.ChunkBytes != nil, func() any { return p.ChunkBytes }},
		{"server_size", t.ServerSize != nil, func() any { return p.ServerSize }},
		{"engines", t.Engines != nil, func() any { return r.engines }},
		{"launch_cost_ps", r.launchCost != nil, func() any { return uint64(*r.launchCost/time.Nanosecond) * 1000 }},
		{"efa_bandwidth_Bps", e.Bandwidth != nil, func() any { return *e.Bandwidth }},
		{"efa_latency_ps", e.Latency != nil, func() any { return *e.Latency }},
		{"efa_oversubscription", e.Oversubscription != nil, func() any { return *e.Oversubscription }},
		{"efa_leaf_ports", e.LeafPorts != nil, func() any { return *e.LeafPorts }},
		{"efa_spines", e.Spines != nil, func() any { return *e.Spines }},
		{"efa_devices_per_nic", e.DevicesPerNIC != nil, func() any { return *e.DevicesPerNIC }},
		{"seed", !r.timing, func() any { return sys.Seed }},
	} {
		if o.set {
			out[o.key] = o.v()
		}
	}
	return out
}

// timingCounts resolves the timing overrides that are counts — the chunk
// size, the executor's engines, the server size — each checked against
// its range and against the system it applies to.
func (r *resolved) timingCounts(d *strictyaml.Decoder, field func(string) (*yaml.Node, string), t *Timing) error {
	p := &r.params
	if c := t.ChunkBytes; c != nil {
		n, path := field("chunk_bytes")
		if *c < minChunkBytes || *c > maxChunkBytes {
			return d.Errorf(n, path, "%s..%s, not %d", units.FormatBytes(minChunkBytes), units.FormatBytes(maxChunkBytes), *c)
		}
		if r.model == fabric.Free {
			return d.Errorf(n, path, "the free model moves no chunks; chunk_bytes applies to model: aware")
		}
		p.ChunkBytes = int(*c)
	}
	geo := hwarch.MustGeometry(r.gen)
	if e := t.Engines; e != nil {
		n, path := field("engines")
		if !e.In(1, int64(geo.DMAEnginesPerNC)) {
			return d.Errorf(n, path, "1..%d (a %s NeuronCore's DMA engines), not %s", geo.DMAEnginesPerNC, r.gen, e)
		}
		r.engines = e.Int()
	}
	if s := t.ServerSize; s != nil {
		n, path := field("server_size")
		if !s.In(1, hwarch.MaxNeuronDevices) {
			return d.Errorf(n, path, "1..%d devices per server, not %s", hwarch.MaxNeuronDevices, s)
		}
		if kind := r.nodeKind(); kind != fabric.KindSwitch {
			return d.Errorf(n, path, "%s; server_size applies to the switch topology", kind.ServerSizeRefusal())
		}
		if r := fabric.ServerSizeFit(s.Int(), r.devices); r != "" {
			return d.Errorf(n, path, "%s: %s", s, r)
		}
		p.ServerSize = s.Int()
	}
	return nil
}

// The store-and-forward chunk sizes fabric.Params.Validate accepts.
const (
	minChunkBytes = 64
	maxChunkBytes = 1 << 30
)

// docRoot is the top mapping of a parsed document.
func docRoot(root *yaml.Node) *yaml.Node {
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		return root.Content[0]
	}
	return root
}

// takeSystem fills the system's keys — arch (the snapshot's product),
// devices, nodes, revision, topology, model, mode and, left out, switch —
// from the base system, whose values the keys the scenario gives have
// been held to already (givenKeys, agreeKeys): a key given is replaced by
// the same value as the snapshot has it (topology auto by its topology, a
// generation word by its product). Its device count is bounded as a
// what-if one's (unless a name gives it).
func (sc *Scenario) takeSystem(d *strictyaml.Decoder, at func(string) *yaml.Node, base *Base) error {
	sys := &sc.System
	bs := base.System
	cfg := bs.Device(0).Config()
	sys.Arch = cfg.Generation.String()
	if p := hwarch.ProductOfDevice(cfg.DeviceID); p != "" {
		sys.Arch = strings.ToLower(p) // the snapshot's product: inf2 keeps its device id
	}
	perNode, nodes := heldShape(bs)
	n, devs := strictyaml.IntOf(int64(nodes)), strictyaml.IntOf(int64(perNode))
	sys.Nodes, sys.Devices = &n, &devs
	if sys.Name == "" {
		// The snapshot's device count is the system's, whatever
		// get_max_devs says (as a named system's is): a what-if system
		// saved, up to rtarch.MaxWhatIfDevices, restores without the
		// scenario saying what_if.
		sys.WhatIf = true
	}
	sys.Revision = fmt.Sprintf("%#02x", cfg.Revision)
	sys.Topology = bs.Topology().Kind.String()
	sys.Model = bs.Params().Model.String()
	sys.Mode = "functional"
	if cfg.TimingOnly {
		sys.Mode = "timing"
	}
	if sys.Switch == "" {
		// The runtime keeps its switch family across the restore: the one
		// the snapshot's fabric was built for (a switch given must be it,
		// givenKeys).
		fams, folds, recorded := heldSwitch(bs)
		switch {
		case !recorded:
		case len(fams) == 0:
			return d.Errorf(at("system"), "system", "the snapshot %s holds a system with get_mesh_max_folds %d, which no switch family of %s gives (v1 or none): it was not built by this runtime",
				base.From, folds, cfg.Generation)
		case !slices.Contains(fams, hwarch.DefaultSwitchFamily(cfg.Generation)):
			sys.Switch = fams[0].String()
		}
	}
	return nil
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
