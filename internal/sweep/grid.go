// Package sweep runs experiment grids: a grid file (YAML, strictly decoded)
// names the axes of a sizing study — device counts or systems, sizes,
// collectives, algorithms, data types, network models, link parameters,
// topologies, ranks per device — and the package expands it into an
// ordered, stable list of points, each named by a content hash of its
// inputs ([LoadGrid], [Grid.Points]); estimates each point's host time and
// memory ([Grid.Plan]); partitions the points into shards balanced by those
// estimates ([Grid.Shard]), so that a Slurm job array or a Kubernetes
// Indexed Job runs them side by side ([ShardFromEnv]); runs a shard into a
// results folder, one result file per point written atomically, skipping
// the points already done so that a killed task simply reruns ([Run]); and
// merges a results folder into nccom-test's JSON reports, a CSV, plots and
// a SQLite database ([Merge]).
//
// Everything a results folder holds is a deterministic function of the
// grid: the same grid gives byte-identical merged outputs whether it ran in
// one shard, in N, with a task killed and rerun, or locally with several
// workers. Host times, which are not, go to a folder merge never reads.
// docs/sweeps.md describes the grid file and the folder.
package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/inputfile"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/strictyaml"
	"github.com/neuronsim/neuronsim/internal/units"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// HashFormat is the version of the canonical encoding of a point's inputs
// and of the grid's hash. A change to the encoding of an existing point
// changes it (and every hash). A point of one node encodes as it did
// before the nodes axis; the nodes and EFA lines are added only for a
// point of several nodes, so the grids of one node keep their hashes. The
// product line is added only for a point of devices other than their
// generation's default (Inf2, Point.Product), so every other point keeps
// its hash and HashFormat stays 1 (TestGridProductHashes).
const HashFormat = 1

// Format is the version of the manifest and of the result files (their
// JSON). A change to either changes it, so that a folder of an older
// format is refused rather than misread. Format 2 added the points'
// nodes and efa fields. The points' product field, written only for a
// point of Inf2 devices (omitempty), left it at 2: the files of every
// other point are byte for byte what they were, and an older neuronsim
// refuses the field (it decodes with unknown fields disallowed) rather
// than read an Inf2 point as a Trn1 one.
const Format = 2

// Bounds of a grid.
const (
	// MaxPoints is the most points a grid may expand to.
	MaxPoints = 100000
	// MaxAxisValues is the most values one axis may list.
	MaxAxisValues = 1024
	// MaxGridBytes is the largest grid file read.
	MaxGridBytes = 1 << 20
	// MaxPlanTransfers bounds the transfers of the schedules a grid's
	// plan counts (enc.Count, holding none of them), one per distinct
	// collective (op, algorithm, ranks, size, data type) and engine count,
	// to check every point and estimate it: about 10 s of planning at most.
	MaxPlanTransfers = 1 << 27
	// MaxPlots is the most plots (groups of points sharing every axis but
	// the size) a grid with outputs.plots may draw.
	MaxPlots = 1024
)

// Sentinel errors; every error of the package wraps one of them.
var (
	// ErrGrid marks a grid file that cannot be used: its syntax, an
	// unknown or empty axis, a value out of range, an impossible point.
	ErrGrid = errors.New("bad sweep grid")
	// ErrShard marks a bad shard: --shard, --count or the workload
	// manager's environment.
	ErrShard = errors.New("bad shard")
	// ErrFolder marks a results folder that cannot be used: written by
	// another grid, or its manifest unreadable.
	ErrFolder = errors.New("bad results folder")
	// ErrIncomplete marks a merge of a folder with missing or failed
	// points (the outputs hold the others), or a run with failed points.
	ErrIncomplete = errors.New("sweep incomplete")
)

// Point is one simulation of a grid: one collective of one size on one
// system. Every field but Index and Hash is an input; Hash is the first 16
// hex digits of the SHA-256 of their canonical encoding (with HashFormat), so
// two points of any grids with the same inputs have the same hash.
type Point struct {
	Index int    `json:"index"` // position in the grid's order, from 0
	Hash  string `json:"hash"`

	Arch string `json:"arch"` // generation: sunda, cayman, mariana
	// Product is the devices' product (hwarch.ProductOfDevice) where it is
	// not their generation's default device's: "Inf2", from the grid's
	// arch inf2 (PCI device id 0x7264, a sunda device with its own
	// links); "" for every other point (Trn1, Trn2, Trn3: productOf).
	Product string `json:"product,omitempty"`
	Switch  string `json:"switch"`  // switch family: v1, none
	System  string `json:"system"`  // the systems axis' name, "" for a devices point
	Devices int    `json:"devices"` // per node
	// Nodes is how many copies of the system of Devices devices the EFA
	// network joins (1: one node, no EFA network).
	Nodes     int    `json:"nodes"`
	Topology  string `json:"topology"` // resolved (never auto)
	Ranks     int    `json:"ranks"`    // Devices × Nodes × RanksPerDevice
	RanksPer  int    `json:"ranks_per_device"`
	Model     string `json:"model"`     // aware, free
	Endpoints string `json:"endpoints"` // real, ideal
	// LinkBW is every link's bandwidth in B/s; nil keeps each link
	// kind's default.
	LinkBW *uint64 `json:"link_bw"`
	// LinkLatency is every link's latency in ps; nil keeps each link
	// kind's default.
	LinkLatency *uint64 `json:"link_latency"`
	Op          string  `json:"op"`
	Algo        string  `json:"algo"` // as asked: auto stays auto
	Dtype       string  `json:"dtype"`
	Size        int64   `json:"size"` // bytes, nccom-test's size(B)
	Mode        string  `json:"mode"` // timing, functional
	Seed        uint64  `json:"seed"` // functional mode's input seed
	// EFA are the grid's efa overrides, for a point of several nodes
	// only (nil for one node, which has no EFA network).
	EFA *EFA `json:"efa,omitempty"`
	// Channels are the flat ring's channels of a point of several nodes
	// with algo ring or auto: the channels axis' value, by default one per
	// EFA NIC of a node (cluster.Config.NodeNICs, as the runtime runs
	// them); 0 for the points they do not apply to.
	Channels int `json:"channels,omitempty"`
	// RingOrder is the order the point's rings take through its ranks
	// where it is not rank order (cluster.FormatOrder of the topology's,
	// cluster.Config.RingOrder: a torus's boustrophedon), for the points
	// that may run in it (enc.RingOrderApplies); "" for the others.
	RingOrder string `json:"ring_order,omitempty"`
}

// EFA are the overrides of the EFA network's parameters a grid's efa block
// gives (fabric.EFASettings); nil keeps the generation's value.
type EFA struct {
	Network          *string  `json:"network,omitempty"` // rail, fat-tree
	Oversubscription *float64 `json:"oversubscription,omitempty"`
	Bandwidth        *uint64  `json:"bandwidth_Bps,omitempty"` // each NIC's, B/s per direction
	LatencyPS        *uint64  `json:"latency_ps,omitempty"`    // a minimal message between two nodes on one leaf
	LeafPorts        *int     `json:"leaf_ports,omitempty"`
	Spines           *int     `json:"spines,omitempty"`
	DevicesPerNIC    *int     `json:"devices_per_nic,omitempty"`
	Routing          *string  `json:"routing,omitempty"` // spray, fixed, adaptive
}

// nodeNICs is the EFA NICs of one node of a point of several nodes, as
// its cluster has them (cluster.Config.NodeNICs: the generation's devices
// per NIC or the efa block's), 0 for a point of one node.
func (p *Point) nodeNICs() int {
	g, err := hwarch.ParseGeneration(p.Arch)
	if err != nil || p.Nodes <= 1 {
		return 0
	}
	params := fabric.Params{EFA: fabric.DefaultEFA(g)}
	if p.EFA != nil && p.EFA.DevicesPerNIC != nil {
		params.EFA.DevicesPerNIC = *p.EFA.DevicesPerNIC
	}
	return cluster.Config{Generation: g, DeviceID: p.deviceID(), Devices: p.Devices * p.Nodes, Nodes: p.Nodes, Params: &params}.NodeNICs()
}

// deviceID is the PCI device id of the point's devices where it is not
// the generation's default (Inf2's 0x7264), 0 (the generation's default,
// cluster.Config.DeviceID) otherwise.
func (p *Point) deviceID() uint16 {
	if p.Product == "" {
		return 0
	}
	id, _ := hwarch.DeviceOfProduct(p.Product)
	return id
}

// productOf is the product of the point's devices (Trn1, Inf2, Trn2,
// Trn3): Product where it is set, else the generation's default device's,
// as fabric sweep's report names it (its Extra's product).
func (p *Point) productOf() string {
	if p.Product != "" {
		return p.Product
	}
	g, err := hwarch.ParseGeneration(p.Arch)
	if err != nil {
		return ""
	}
	return hwarch.DefaultProduct(g)
}

// devicesWord names the point's devices in a title or a table
// (devicesWord).
func (p *Point) devicesWord() string { return devicesWord(p.Product, p.Arch) }

// devicesWord names devices in a message, a title or a table: their
// product where it is not the generation's default (Inf2), else the
// generation (sunda, cayman, mariana).
func devicesWord(product, generation string) string {
	if product != "" {
		return product
	}
	return generation
}

// efaOf is the settings' overrides as a point's EFA.
func efaOf(s fabric.EFASettings) *EFA {
	e := &EFA{Oversubscription: s.Oversubscription, Bandwidth: s.Bandwidth, LatencyPS: s.Latency,
		LeafPorts: s.LeafPorts, Spines: s.Spines, DevicesPerNIC: s.DevicesPerNIC}
	if s.Network != nil {
		n := s.Network.String()
		e.Network = &n
	}
	if s.Routing != nil {
		r := s.Routing.String()
		e.Routing = &r
	}
	return e
}

// lines are the EFA overrides as the canonical encoding's key-value pairs
// ("default" for an unset one). The routing's line is there only when it
// is given, after the others, so that a point without it keeps the hash
// it had before the routing could be set.
func (e *EFA) lines() [][2]string {
	var z EFA
	if e == nil {
		e = &z
	}
	u := func(v *uint64) string {
		if v == nil {
			return "default"
		}
		return strconv.FormatUint(*v, 10)
	}
	i := func(v *int) string {
		if v == nil {
			return "default"
		}
		return strconv.Itoa(*v)
	}
	nw, ov := "default", "default"
	if e.Network != nil {
		nw = *e.Network
	}
	if e.Oversubscription != nil {
		ov = strconv.FormatFloat(*e.Oversubscription, 'g', -1, 64)
	}
	kvs := [][2]string{{"efa.network", nw}, {"efa.oversubscription", ov}, {"efa.bandwidth", u(e.Bandwidth)},
		{"efa.latency", u(e.LatencyPS)}, {"efa.leaf_ports", i(e.LeafPorts)}, {"efa.spines", i(e.Spines)},
		{"efa.devices_per_nic", i(e.DevicesPerNIC)}}
	if e.Routing != nil {
		kvs = append(kvs, [2]string{"efa.routing", *e.Routing})
	}
	return kvs
}

// canonical is the encoding of the point's inputs that its hash covers.
func (p *Point) canonical() string {
	opt := func(v *uint64) string {
		if v == nil {
			return "default"
		}
		return strconv.FormatUint(*v, 10)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "neuronsim sweep point\nformat=%d\n", HashFormat)
	kvs := [][2]string{
		{"arch", p.Arch}, {"switch", p.Switch}, {"system", p.System}, {"devices", strconv.Itoa(p.Devices)},
		{"topology", p.Topology}, {"ranks_per_device", strconv.Itoa(p.RanksPer)}, {"model", p.Model},
		{"endpoints", p.Endpoints}, {"link_bw", opt(p.LinkBW)}, {"link_latency", opt(p.LinkLatency)},
		{"op", p.Op}, {"algo", p.Algo}, {"dtype", p.Dtype}, {"size", strconv.FormatInt(p.Size, 10)},
		{"mode", p.Mode}, {"seed", strconv.FormatUint(p.Seed, 10)},
	}
	// Several nodes: the node count and the EFA network's overrides, after
	// the lines of a point of one node, whose encoding (and hash) is the
	// one it had before the nodes axis.
	if p.Nodes != 1 {
		kvs = append(kvs, [2]string{"nodes", strconv.Itoa(p.Nodes)})
		kvs = append(kvs, p.EFA.lines()...)
		kvs = append(kvs, [2]string{"channels", strconv.Itoa(p.Channels)})
	}
	// Rings along the links: the points that run in another order than
	// rank order, after every other line, so that the others keep the
	// hashes they had when every ring ran in rank order.
	if p.RingOrder != "" {
		kvs = append(kvs, [2]string{"ring_order", p.RingOrder})
	}
	// Devices of another product than the generation's default (Inf2 on
	// sunda, which the grid's arch inf2 names): the product, after every
	// other line, so that the other points keep the hashes they had when
	// arch inf2 ran Trn1 devices, and an Inf2 point has another hash than
	// the Trn1 one it was run as (a results folder of those is refused as
	// another grid's, not resumed with Trn1 numbers).
	if p.Product != "" {
		kvs = append(kvs, [2]string{"product", p.Product})
	}
	for _, kv := range kvs {
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(strconv.Quote(kv[1]))
		b.WriteByte('\n')
	}
	return b.String()
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

// Outputs are what merge writes besides the CSV and the JSON reports.
type Outputs struct {
	// Plots draws busbw against size per group of points (every axis
	// but the size the same), one PNG each.
	Plots bool `json:"plots"`
}

// spec is a point resolved: what running it takes.
type spec struct {
	gen     hwarch.Generation
	device  uint16 // PCI device id where not the generation's default (Inf2), else 0 (system.device)
	family  hwarch.SwitchFamily
	tables  *rtarch.Tables
	kind    fabric.Kind
	params  fabric.Params
	op      enc.Op
	algo    enc.Algo
	dtype   enc.Dtype
	timing  bool
	feat    features // what the estimates are made from
	memNeed uint64   // functional mode: cluster.FunctionalMemory
	// opts are the collective's options the cluster's shape decides
	// (cluster.Config.CollectiveOptions: a node's ranks as the group size).
	opts enc.Options

	sysNode *yaml.Node // where the point's system was given, for errors
	sysPath string
	size    sizeVal // where the point's size was given, for errors
	// whatIf brings the devices up as what-if ones (cluster.Config.WhatIf):
	// with the grid's what_if, or for a named system larger than the
	// driver's 64 devices (trn3-gen2's 144), as fabric sweep --system does.
	whatIf bool
}

// Grid is a grid file expanded into its points.
type Grid struct {
	// File is the grid file's name, for messages.
	File string
	// Outputs are the grid's outputs section.
	Outputs Outputs

	points []Point
	specs  []spec
	groups []int // groups[i]: the group of point i (points sharing every axis but the size)
	hash   string

	// fail, when not nil, makes runPoint fail point i with its error
	// (tests: a point failing at run time, which no valid grid does).
	fail func(i int) error
}

// Points returns the grid's points in order (a copy).
func (g *Grid) Points() []Point { return append([]Point(nil), g.points...) }

// Len returns the number of points.
func (g *Grid) Len() int { return len(g.points) }

// Hash returns the grid's hash: the first 16 hex digits of the SHA-256 of
// Format, the outputs and every point's hash in order. Two grid files that
// expand to the same points with the same outputs have the same hash,
// whatever their layout and comments.
func (g *Grid) Hash() string { return g.hash }

// LoadGrid reads and expands the grid file at path ([ReadGrid],
// [ParseGrid]).
func LoadGrid(path string) (*Grid, error) {
	data, err := ReadGrid(path)
	if err != nil {
		return nil, err
	}
	return ParseGrid(path, data)
}

// ReadGrid reads the grid file at path: a regular file of at most
// MaxGridBytes (internal/inputfile). The error wraps ErrGrid.
func ReadGrid(path string) ([]byte, error) {
	data, err := inputfile.Read(path, MaxGridBytes, "a grid file is at most 1 MiB")
	if err != nil {
		return nil, fmt.Errorf("sweep: grid: %w: %w", err, ErrGrid)
	}
	return data, nil
}

// rawGrid is the grid file as decoded, before any value is checked.
type rawGrid struct {
	Arch      word       `yaml:"arch"`
	Mode      word       `yaml:"mode"`
	Switch    word       `yaml:"switch"`
	Seed      word       `yaml:"seed"`
	Endpoints word       `yaml:"endpoints"`
	WhatIf    flag       `yaml:"what_if"`
	EFA       *rawEFA    `yaml:"efa"`
	Axes      rawAxes    `yaml:"axes,required"`
	Outputs   rawOutputs `yaml:"outputs"`
}

// rawEFA is the efa block: the EFA network's overrides for the points of
// several nodes, the keys of a scenario's system.efa (docs/scenarios.md)
// and the command line's --efa-network, --oversubscription, --efa-bw,
// --efa-latency, --leaf-ports, --spines, --devices-per-nic and
// --efa-routing.
type rawEFA struct {
	Network          word `yaml:"network"`
	Oversubscription word `yaml:"oversubscription"`
	Bandwidth        word `yaml:"bandwidth"`
	LatencyNS        word `yaml:"latency_ns"`
	LeafPorts        word `yaml:"leaf_ports"`
	Spines           word `yaml:"spines"`
	DevicesPerNIC    word `yaml:"devices_per_nic"`
	Routing          word `yaml:"routing"`
}

type rawOutputs struct {
	Plots *bool `yaml:"plots"`
}

// flag is a boolean with its place in the file.
type flag struct {
	v bool
	n *yaml.Node
}

// UnmarshalStrict reads true or false.
func (f *flag) UnmarshalStrict(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	f.n = n
	return d.Node(n, path, &f.v)
}

// integer refuses w, given where an integer is expected, unless it is a
// plain decimal integer: not quoted ("2"), not 0x10, +16 or 1_6 — as a
// scenario's integer keys refuse them (strictyaml's integer syntax, the
// command line's).
func (e *expander) integer(w word, path string) error {
	if w.n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 &&
		(w.s == "" || !strings.ContainsRune("0123456789+-", rune(w.s[0]))) {
		return nil // a word, no number: its reader's parse refuses it
	}
	if _, err := e.d.IntegerText(w.n, path, false); err != nil {
		return gridError{err}
	}
	return nil
}

// number refuses w, given where a number is expected, if it is quoted, as
// a scenario's number keys do.
func (e *expander) number(w word, path string) error {
	if _, err := e.d.NumberText(w.n, path); err != nil {
		return gridError{err}
	}
	return nil
}

// word is a scalar with its place in the file.
type word struct {
	s string
	n *yaml.Node
}

// UnmarshalStrict reads a non-null scalar.
func (w *word) UnmarshalStrict(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return d.Errorf(n, path, "expected a single value, got a %s", kindWord(n))
	}
	w.s, w.n = n.Value, n
	return nil
}

func kindWord(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "mapping"
	case n.Kind == yaml.SequenceNode:
		return "sequence"
	case n.Tag == "!!null":
		return "null"
	}
	return "scalar"
}

// list is an axis' values, each with its place in the file.
type list struct {
	items []word
	n     *yaml.Node
	set   bool
}

// UnmarshalStrict reads a sequence of scalars: at least one, at most
// MaxAxisValues.
func (l *list) UnmarshalStrict(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	l.n, l.set = n, true
	if n.Kind != yaml.SequenceNode {
		return d.Errorf(n, path, "expected a sequence of values ([a, b, …]), got a %s", kindWord(n))
	}
	if len(n.Content) == 0 {
		return d.ErrorWith(n, path, "empty axis: give at least one value, or leave the axis out", ErrGrid)
	}
	if len(n.Content) > MaxAxisValues {
		return d.ErrorWith(n, path, fmt.Sprintf("%d values; an axis has at most %d", len(n.Content), MaxAxisValues), ErrGrid)
	}
	for i, c := range n.Content {
		var w word
		if err := w.UnmarshalStrict(d, c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
		l.items = append(l.items, w)
	}
	return nil
}

// sizeAxis is the sizes axis: a list of sizes or a range.
type sizeAxis struct {
	list
	rng *sizeRange
}

type sizeRange struct {
	Min    word `yaml:"min,required"`
	Max    word `yaml:"max,required"`
	Factor word `yaml:"factor"`
	Step   word `yaml:"step"`
}

// UnmarshalStrict reads a sequence of sizes or a mapping {min, max,
// factor|step}.
func (s *sizeAxis) UnmarshalStrict(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	if n.Kind == yaml.MappingNode {
		s.n, s.set, s.rng = n, true, new(sizeRange)
		return d.Node(n, path, s.rng)
	}
	return s.list.UnmarshalStrict(d, n, path)
}

// Axis names, in the order they nest (the first outermost; the size
// innermost, so that a group of points sharing every other axis is a run).
const (
	AxisSystems        = "systems"
	AxisDevices        = "devices"
	AxisTopologies     = "topologies"
	AxisNodes          = "nodes"
	AxisRanksPerDevice = "ranks_per_device"
	AxisModels         = "models"
	AxisLinkBW         = "link_bw"
	AxisLinkLatency    = "link_latency"
	AxisOps            = "ops"
	AxisAlgos          = "algos"
	AxisChannels       = "channels"
	AxisDtypes         = "dtypes"
	AxisSizes          = "sizes"
)

// Axes are the names of the axes a grid may have, in nesting order.
var Axes = []string{AxisSystems, AxisDevices, AxisTopologies, AxisNodes, AxisRanksPerDevice, AxisModels,
	AxisLinkBW, AxisLinkLatency, AxisOps, AxisAlgos, AxisChannels, AxisDtypes, AxisSizes}

type rawAxes struct {
	lists map[string]*list
	sizes sizeAxis
	n     *yaml.Node
}

// UnmarshalStrict reads the axes mapping, refusing an unknown axis by name.
func (a *rawAxes) UnmarshalStrict(d *strictyaml.Decoder, n *yaml.Node, path string) error {
	a.n = n
	if n.Kind != yaml.MappingNode {
		return d.Errorf(n, path, "expected a mapping of axes (%s), got a %s", strings.Join(Axes, ", "), kindWord(n))
	}
	a.lists = map[string]*list{}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		sub := path + "." + name
		if k.Kind != yaml.ScalarNode || !known(name) {
			return d.ErrorWith(k, sub, fmt.Sprintf("unknown axis %q; the axes are %s", name, strings.Join(Axes, ", ")), ErrGrid)
		}
		if first := seen[name]; first != nil {
			return d.ErrorWith(k, sub, fmt.Sprintf("axis %q given twice (first at line %d)", name, first.Line), ErrGrid)
		}
		seen[name] = k
		if name == AxisSizes {
			if err := d.Node(v, sub, &a.sizes); err != nil {
				return err
			}
			continue
		}
		l := new(list)
		if err := d.Node(v, sub, l); err != nil {
			return err
		}
		a.lists[name] = l
	}
	return nil
}

func known(axis string) bool {
	for _, a := range Axes {
		if a == axis {
			return true
		}
	}
	return false
}

// ParseGrid decodes and expands a grid file's contents; file names it in
// errors. Every error wraps ErrGrid and names the file, the line, the
// field and the value.
func ParseGrid(file string, data []byte) (*Grid, error) {
	return parseGrid(file, data, MaxPlanTransfers)
}

// parseGrid is ParseGrid with a bound on the transfers built.
func parseGrid(file string, data []byte, maxBuild int64) (*Grid, error) {
	if len(data) > MaxGridBytes {
		return nil, fmt.Errorf("sweep: grid %s: larger than %d bytes: %w", file, MaxGridBytes, ErrGrid)
	}
	var raw rawGrid
	if err := strictyaml.DecodeAs(file, "a sweep grid file", data, &raw); err != nil {
		if !errors.Is(err, ErrGrid) {
			err = gridError{err}
		}
		return nil, err
	}
	d := &strictyaml.Decoder{File: file}
	// A null (efa:, outputs: or outputs.plots: ~) would decode as the key
	// left out, its default; no null of a grid means anything else.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("sweep: grid %s: %v: %w", file, err, ErrGrid)
	}
	if err := d.RefuseNulls(&root); err != nil {
		return nil, gridError{err}
	}
	e := &expander{d: d, raw: &raw, budget: maxBuild, maxBuild: maxBuild}
	g, err := e.expand()
	if err != nil {
		return nil, err
	}
	g.File = file
	return g, nil
}

// expander turns a rawGrid into a Grid.
type expander struct {
	d   *strictyaml.Decoder
	raw *rawGrid
	// budget is the transfers the schedules built to check the points may
	// still hold (maxBuild at the start).
	budget, maxBuild int64
}

// fail is a positioned error at node n wrapping ErrGrid (and cause, whose
// message follows format's, or stands alone when format is "").
func (e *expander) fail(n *yaml.Node, path string, cause error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if cause == nil {
		return e.d.ErrorWith(n, path, msg, ErrGrid)
	}
	var ue *units.Error
	switch {
	case errors.As(cause, &ue):
		msg = ue.Shown() + ": " + ue.Reason
	case msg == "":
		msg = cause.Error()
	default:
		msg += ": " + cause.Error()
	}
	return e.d.ErrorWith(n, path, msg, errors.Join(cause, ErrGrid))
}

// gridError is a decoder's error that also wraps ErrGrid, its message
// unchanged.
type gridError struct{ error }

func (e gridError) Unwrap() []error { return []error{e.error, ErrGrid} }

// system is one value of the system dimension: a named system or a device
// count on the grid's arch with a topology.
type system struct {
	name string
	gen  hwarch.Generation
	// device is the PCI device id of the devices where the grid's arch
	// names a product other than the generation's default device's (inf2:
	// 0x7264, a sunda device with its own links), else 0: the generation's
	// default (cluster.Config.DeviceID, as fabric sweep --arch and a
	// scenario's arch have it).
	device  uint16
	family  hwarch.SwitchFamily
	tables  *rtarch.Tables
	devices int // per node
	kind    fabric.Kind
	n       *yaml.Node // where it was given, for errors
	path    string
	nodes   int // in the points' loop: the nodes axis' value
}

// product is the system's devices' product where it is not the
// generation's default (Inf2: Point.Product), else "".
func (s system) product() string {
	if s.device == 0 {
		return ""
	}
	return hwarch.ProductOfDevice(s.device)
}

// devicesWord names the system's devices in a message (devicesWord).
func (s system) devicesWord() string { return devicesWord(s.product(), s.gen.String()) }

// archDevice is the PCI device id the grid's arch word names where it is
// a product other than its generation g's default device's — inf2, 0x7264,
// a sunda device with its own links — read as fabric sweep --arch and a
// scenario's arch read it (hwarch.DeviceOfProduct); 0 (the generation's
// default) for a generation word (sunda, v2, 2) and for trn1, trn2, trn3.
func archDevice(word string, g hwarch.Generation) uint16 {
	id, ok := hwarch.DeviceOfProduct(word)
	if !ok {
		return 0
	}
	if hwarch.ProductOfDevice(id) == hwarch.DefaultProduct(g) {
		return 0
	}
	return id
}

type optPS struct {
	v   *uint64
	n   *yaml.Node
	p   string
	txt string
}

// fixedFields are a grid's fixed (non-axis) settings, read and checked.
type fixedFields struct {
	mode   string // timing or functional
	ends   fabric.Endpoints
	seed   uint64
	family *hwarch.SwitchFamily // nil: each system's own
}

// axisValues are a grid's axes, read and checked, each with its default
// when absent (sizes are read per op, dtype and rank count: expander.sizes).
type axisValues struct {
	systems            []system
	nodes              []intVal
	efa                *efaBlock
	rpds               []intVal
	models             []strVal
	bws, lats          []optPS
	ops, algos, dtypes []strVal
	channels           []intVal // 0: one per EFA NIC of a node (nics)
}

// expand turns the decoded grid into its points, in the axes' nesting
// order, refusing a grid of too many points or any impossible point before
// anything runs; then brings every distinct system up once (bringUp).
func (e *expander) expand() (*Grid, error) {
	g := &Grid{Outputs: Outputs{Plots: true}}
	if e.raw.Outputs.Plots != nil {
		g.Outputs.Plots = *e.raw.Outputs.Plots
	}
	fx, err := e.fixed()
	if err != nil {
		return nil, err
	}
	av, err := e.axes(fx)
	if err != nil {
		return nil, err
	}
	if err := e.checkCount(g, av); err != nil {
		return nil, err
	}
	b := &pointBuilder{e: e, g: g, fx: fx, av: av, memLimit: memLimit(), fabricOK: map[string]error{}, scheds: map[[8]int64]sched{}}
	for _, sys := range av.systems {
		for _, nv := range av.nodes {
			sys := sys
			sys.nodes = nv.v
			for _, rpd := range av.rpds {
				if err := b.shape(sys, nv, rpd); err != nil {
					return nil, err
				}
			}
		}
	}
	// An auto point takes the channels only at the sizes where auto runs
	// the flat ring (autoSplit), so auto alone on Trn2 or Trn3, or below
	// 64 MiB on Trn1, leaves the axis applying to no point.
	if l := e.raw.Axes.lists[AxisChannels]; l != nil && !slices.ContainsFunc(g.points, func(p Point) bool { return p.Channels > 0 }) {
		return nil, e.fail(l.n, "axes."+AxisChannels, nil, "no point runs a flat ring across nodes (2 nodes or more, algo ring, or auto at a size where it takes the ring: across nodes auto runs hier on Trn2 and Trn3, and on Trn1 below %d MiB): the channels apply to none", enc.DefaultFlatRingMin>>20)
	}
	// Auto's points split by size (autoSplit) can make more groups than
	// checkCount's product of the axes.
	if n := len(g.groups); g.Outputs.Plots && n > 0 && g.groups[n-1]+1 > MaxPlots {
		k := g.groups[n-1] + 1
		return nil, e.fail(e.raw.Axes.n, "outputs.plots", nil, "%d groups of points (every combination of the axes but the size, auto's sizes with and without the flat ring apart) would draw %d plots; at most %d (set outputs.plots: false)", k, k, MaxPlots)
	}
	seen := make(map[string]int, len(g.points))
	for i, p := range g.points {
		if j, dup := seen[p.Hash]; dup {
			return nil, e.fail(e.raw.Axes.n, "axes", nil, "points %d and %d are the same simulation (a value listed twice?)", j, i)
		}
		seen[p.Hash] = i
	}
	if err := e.bringUp(g); err != nil {
		return nil, err
	}
	g.hash = g.computeHash()
	return g, nil
}

// fixed reads the grid's fixed fields: mode, endpoints, seed, switch.
func (e *expander) fixed() (fixedFields, error) {
	raw := e.raw
	fx := fixedFields{mode: "timing", ends: fabric.EndpointsReal, seed: 1}
	if raw.Mode.n != nil {
		switch m := units.Word(raw.Mode.s); m {
		case "timing", "functional":
			fx.mode = m
		default:
			return fx, e.fail(raw.Mode.n, "mode", nil, "%q: accepted words are timing|functional", raw.Mode.s)
		}
	}
	if raw.Endpoints.n != nil {
		v, err := fabric.ParseEndpoints(raw.Endpoints.s)
		if err != nil {
			return fx, e.fail(raw.Endpoints.n, "endpoints", err, "%q", raw.Endpoints.s)
		}
		fx.ends = v
	}
	if raw.Seed.n != nil {
		// Decimal or 0x hex, as a scenario's seed and --seed; at most
		// 2^63 − 1, not 2^64 − 1 as theirs: merge writes the seed to
		// SQLite's INTEGER, which is signed (sqliteValues), and a grid of
		// a larger seed would plan and run and then fail to merge.
		if _, err := e.d.IntegerText(raw.Seed.n, "seed", true); err != nil {
			return fx, gridError{err}
		}
		v, err := units.ParseUint("seed", raw.Seed.s, math.MaxInt64)
		if ue := (*units.Error)(nil); errors.As(err, &ue) && errors.Is(err, units.ErrRange) {
			ue.Reason = "a grid's seed is 0..2^63−1 (9223372036854775807): sweep merge writes it to SQLite's INTEGER, which is signed"
		}
		if err != nil {
			return fx, e.fail(raw.Seed.n, "seed", err, "")
		}
		fx.seed = v
	}
	if fx.mode == "timing" && raw.Seed.n != nil {
		return fx, e.fail(raw.Seed.n, "seed", nil, "mode timing moves no data; seed applies to mode functional")
	}
	if raw.Switch.n != nil {
		v, err := hwarch.ParseSwitchFamily(raw.Switch.s)
		if err != nil {
			return fx, e.fail(raw.Switch.n, "switch", err, "%q", raw.Switch.s)
		}
		fx.family = &v
	}
	return fx, nil
}

// axes reads every axis, in the order of the grid's nesting.
func (e *expander) axes(fx fixedFields) (av axisValues, err error) {
	if av.systems, err = e.systems(fx.family); err != nil {
		return av, err
	}
	if av.nodes, av.efa, err = e.nodes(av.systems); err != nil {
		return av, err
	}
	if av.rpds, err = e.ints(AxisRanksPerDevice, 1, int64(hwarch.MaxNeuronDevices), []int{1}); err != nil {
		return av, err
	}
	if av.models, err = e.words(AxisModels, []string{"aware"}, func(s string) (string, error) {
		m, err := fabric.ParseModel(s)
		return m.String(), err
	}); err != nil {
		return av, err
	}
	if av.bws, err = e.bandwidths(); err != nil {
		return av, err
	}
	if av.lats, err = e.latencies(); err != nil {
		return av, err
	}
	if fx.ends == fabric.EndpointsIdeal && (av.bws[0].v == nil || av.lats[0].v == nil) {
		return av, e.fail(e.raw.Endpoints.n, "endpoints", nil, "ideal (the α-β parity mode) needs the axes %s and %s, the model's B and α", AxisLinkBW, AxisLinkLatency)
	}
	if av.ops, err = e.words(AxisOps, nil, func(s string) (string, error) {
		o, err := enc.ParseOp(s)
		return o.String(), err
	}); err != nil {
		return av, err
	}
	if av.algos, err = e.words(AxisAlgos, []string{"auto"}, func(s string) (string, error) {
		a, err := enc.ParseAlgo(s)
		return a.String(), err
	}); err != nil {
		return av, err
	}
	if av.channels, err = e.channels(); err != nil {
		return av, err
	}
	if av.dtypes, err = e.words(AxisDtypes, []string{"fp32"}, func(s string) (string, error) {
		t, err := enc.ParseDtype(s)
		return t.String(), err
	}); err != nil {
		return av, err
	}
	if !e.raw.Axes.sizes.set {
		return av, e.fail(e.raw.Axes.n, "axes", nil, "missing axis %q (a list of sizes, or {min, max, factor|step})", AxisSizes)
	}
	return av, nil
}

// checkCount refuses a grid of too many points or plots before expanding
// it: the product of the axes, the sizes per combination at most their
// list's length or nccom's bound.
func (e *expander) checkCount(g *Grid, av axisValues) error {
	ax := e.raw.Axes
	count := uint64(1)
	for _, k := range []int{len(av.systems), len(av.nodes), len(av.rpds), len(av.models), len(av.bws), len(av.lats), len(av.ops), len(av.algos), len(av.channels), len(av.dtypes)} {
		count *= uint64(k)
		if count > MaxPoints {
			return e.fail(ax.n, "axes", nil, "more than %d points (the product of the axes); split the grid", MaxPoints)
		}
	}
	// Every combination of the axes but the size is a group, and a plot.
	if g.Outputs.Plots && count > MaxPlots {
		return e.fail(ax.n, "outputs.plots", nil, "%d groups of points (every combination of the axes but the size) would draw %d plots; at most %d (set outputs.plots: false)", count, count, MaxPlots)
	}
	// The sizes of a group: the list's, or the range's before its rounding
	// to each op's granule (which can only merge sizes).
	if perGroup := e.sizeCount(); count*uint64(perGroup) > MaxPoints {
		return e.fail(ax.n, "axes", nil, "%d groups × %d sizes: more than %d points; split the grid", count, perGroup, MaxPoints)
	}
	return nil
}

// timingMemory is cluster.TimingMemory of a timing-mode point — what the
// command line's timing sweeps are checked against — from the part of its
// schedule for its engines per rank (sched.timing), which the schedule's
// first point computed when it counted the schedule; a point of another
// engine count counts it again, within the grid's budget.
func (b *pointBuilder) timingMemory(sc sched, engines, devices int, count func(engines int) (features, uint64, error)) (uint64, error) {
	part, ok := sc.timing[engines]
	if !ok {
		_, p, err := count(engines)
		if err != nil {
			return 0, err
		}
		part = p
		sc.timing[engines] = part
	}
	return part + cluster.FixedTimingMemory(devices), nil
}

// sched is what planning keeps of one distinct schedule: its features for
// the estimates and, in functional mode, the memory it needs; in timing
// mode, the part of its memory the schedule holds, by engines per rank
// (cluster.CountTimingMemory).
type sched struct {
	feat    features
	memNeed uint64
	timing  map[int]uint64
}

// pointBuilder appends a grid's points, one level of the axes' nesting per
// method: the cluster's shape (system, nodes, ranks per device), its fabric
// (model, link bandwidth, link latency), the collective (op, algo, dtype)
// and its sizes.
type pointBuilder struct {
	e        *expander
	g        *Grid
	fx       fixedFields
	av       axisValues
	memLimit memlimit.Limit
	fabricOK map[string]error
	// scheds by op, algo, ranks, size, dtype, and the options: the group
	// size (a node's ranks), the generation's policy and the channels
	scheds map[[8]int64]sched
}

// shapeOf is one cluster shape of the grid: a system on some nodes with
// some ranks per device.
type shapeOf struct {
	sys   system
	rpd   int
	ranks int
	flat  int64 // 1: the policy's flat ring (part of a schedule's key)
}

// config is the shape's cluster as its collectives see it, with fabric
// parameters p (nil: the generation's): its CollectiveOptions are a
// point's options, as fabric sweep --nodes and a scenario's system.nodes
// have them — over several nodes a node's ranks the group size of hier
// and of auto's choice, and the flat ring's channels; on the system's own
// topology and switch family, the ring order along its links.
func (sh shapeOf) config(p *fabric.Params) cluster.Config {
	return cluster.Config{Generation: sh.sys.gen, DeviceID: sh.sys.device, Devices: sh.sys.devices * sh.sys.nodes, Nodes: sh.sys.nodes, Switch: sh.sys.family, Kind: sh.sys.kind,
		RanksPerDevice: sh.rpd, Params: p}
}

// shape adds the points of one system, node count (nv, sys.nodes) and
// ranks per device. A shape of more ranks than a collective runs on is
// refused at the value that made it so (cluster.CheckRanks: the nodes, else
// the ranks per device, else the system), as fabric sweep names --nodes.
func (b *pointBuilder) shape(sys system, nv, rpd intVal) error {
	geo := hwarch.MustGeometry(sys.gen)
	if rpd.v > geo.NeuronCores {
		return b.e.fail(rpd.n, rpd.p, nil, "%d ranks per device: a %s device has %d NeuronCores", rpd.v, sys.devicesWord(), geo.NeuronCores)
	}
	if err := cluster.CheckRanks(sys.nodes, sys.devices, rpd.v, cluster.RankKeys{Nodes: nv.p, RanksPerDevice: rpd.p, Devices: sys.path}); err != nil {
		// CheckRanks chose the key (its units.Error's Field): the error
		// goes where that value was given.
		at := map[string]*yaml.Node{nv.p: nv.n, rpd.p: rpd.n, sys.path: sys.n}
		var ue *units.Error
		if !errors.As(err, &ue) {
			return b.e.fail(sys.n, sys.path, err, "")
		}
		return b.e.fail(at[ue.Field], ue.Field, err, "")
	}
	sh := shapeOf{sys: sys, rpd: rpd.v, ranks: sys.devices * sys.nodes * rpd.v}
	if cluster.PolicyFor(sys.gen).FlatRing {
		sh.flat = 1
	}
	for _, model := range b.av.models {
		for _, bw := range b.av.bws {
			for _, lat := range b.av.lats {
				p, err := b.params(sys, model.v, bw, lat)
				if err != nil {
					return err
				}
				if err := b.collectives(sh, model.v, p, bw, lat); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// params returns the fabric parameters of a system in model m with the
// link timing of bw and lat (the parity mode's, with ideal endpoints) and,
// over several nodes, the grid's EFA settings, checked once per system
// and parameters.
func (b *pointBuilder) params(sys system, model string, bw, lat optPS) (fabric.Params, error) {
	m, _ := fabric.ParseModel(model)
	lt := cluster.LinkTiming{}
	if bw.v != nil {
		lt.Bandwidth, lt.SetBandwidth = *bw.v, true
	}
	if lat.v != nil {
		lt.Latency, lt.SetLatency = *lat.v, true
	}
	// axes checked that ideal endpoints have both the link_bw and
	// link_latency axes, so RunParams cannot refuse.
	p, err := cluster.RunParams(sys.gen, sys.device, sys.tables, m, b.fx.ends, lt)
	if err != nil {
		return p, err
	}
	if sys.nodes > 1 {
		if err := b.av.efa.s.Apply(&p, []int{sys.devices}, b.av.efa.name); err != nil {
			return p, b.e.efaError(b.av.efa, err)
		}
	}
	return p, b.e.checkFabric(b.fabricOK, sys, sys.nodes, p)
}

// collectives adds the points of every op, algorithm and dtype on one
// shape and fabric: a group (a plot) each, a point per size. Each value of
// the channels axis that applies (channelsOf) nests inside the algorithm,
// outside the data type. Auto's points with channels are split by size
// (autoSplit): first, for each data type, the group of the sizes where
// auto runs no flat ring (hier across nodes), once, with no channels;
// then, for each channel count and data type, the group of the sizes
// where it runs the ring.
func (b *pointBuilder) collectives(sh shapeOf, model string, p fabric.Params, bw, lat optPS) error {
	for _, op := range b.av.ops {
		o, _ := enc.ParseOp(op.v)
		for _, algo := range b.av.algos {
			if algo.v == enc.Hier.String() && sh.sys.nodes < 2 {
				return b.e.fail(algo.n, algo.p, nil, "hier runs across nodes (a node's ranks are its groups), and %s is one node: give it 2 nodes or more (axes.nodes), or leave hier out of this grid", sh.sys.describe())
			}
			chs, err := b.channelsOf(sh, p, op.v, algo.v)
			if err != nil {
				return err
			}
			sizes := make([][]sizeVal, len(b.av.dtypes))
			for i, dt := range b.av.dtypes {
				t, _ := enc.ParseDtype(dt.v)
				if sizes[i], err = b.e.sizes(o, t, sh.ranks); err != nil {
					return err
				}
			}
			ring := sizes
			if algo.v == enc.Auto.String() && chs[0] != 0 {
				var other [][]sizeVal
				ring, other = b.autoSplit(sh, p, o, sizes)
				for i, dt := range b.av.dtypes {
					if err := b.group(sh, model, p, bw, lat, op.v, algo.v, 0, dt.v, other[i]); err != nil {
						return err
					}
				}
			}
			for _, ch := range chs {
				for i, dt := range b.av.dtypes {
					if err := b.group(sh, model, p, bw, lat, op.v, algo.v, ch, dt.v, ring[i]); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// group adds the points of one group — op, algorithm, channels ch and
// data type dt on one shape and fabric — one per size of sizes (none: no
// group).
func (b *pointBuilder) group(sh shapeOf, model string, p fabric.Params, bw, lat optPS, op, algo string, ch int, dt string, sizes []sizeVal) error {
	g := b.g
	group := len(g.groups)
	if len(g.points) > 0 {
		group = g.groups[len(g.groups)-1] + 1
	}
	for _, sz := range sizes {
		pt := Point{Index: len(g.points), Arch: sh.sys.gen.String(), Product: sh.sys.product(), Switch: sh.sys.family.String(), System: sh.sys.name,
			Devices: sh.sys.devices, Nodes: sh.sys.nodes, Topology: sh.sys.kind.String(), Ranks: sh.ranks, RanksPer: sh.rpd, Model: model,
			Endpoints: b.fx.ends.String(), LinkBW: bw.v, LinkLatency: lat.v, Op: op, Algo: algo, Dtype: dt,
			Size: sz.v, Mode: b.fx.mode, Seed: b.fx.seed, Channels: ch}
		if err := b.add(sh, pt, p, sz, group); err != nil {
			return err
		}
	}
	return nil
}

// autoSplit splits the sizes of auto's points of op on shape sh with
// fabric parameters p (sizes[i]: data type i's) into those where auto
// runs a ring — the flat ring across nodes, which the channels axis'
// values apply to — and the others, where it runs hier (or mesh or rdh),
// which take no channels: auto resolved per size as the point runs it,
// with its options (options; cluster.Largest, the runtime's
// enc.Policy.ChooseIn, as cluster.Config.CheckAutoChannels resolves it
// for fabric sweep --channels). Such a point once ran once per channel
// count, all alike, each claiming channels it did not run; it now runs
// once with none (Channels 0), and so has another hash than it had.
func (b *pointBuilder) autoSplit(sh shapeOf, p fabric.Params, op enc.Op, sizes [][]sizeVal) (ring, other [][]sizeVal) {
	opts := b.options(sh, p, 0) // the policy and group size: the channels do not choose
	ring, other = make([][]sizeVal, len(sizes)), make([][]sizeVal, len(sizes))
	for i, szs := range sizes {
		for _, sz := range szs {
			if cluster.Largest(op, enc.Auto, sh.ranks, []int64{sz.v}, opts)[0].Algo == enc.Ring {
				ring[i] = append(ring[i], sz)
			} else {
				other[i] = append(other[i], sz)
			}
		}
	}
	return ring, other
}

// options are the collective options of a point of channels ch (0: none
// given) on shape sh with fabric parameters p: its cluster's
// (cluster.Config.CollectiveOptions), those it runs with.
func (b *pointBuilder) options(sh shapeOf, p fabric.Params, ch int) enc.Options {
	return sh.config(&p).CollectiveOptions(enc.Options{Channels: ch})
}

// channelsOf returns the flat-ring channels of the points of op and
// algorithm algo on shape sh with fabric parameters p, one per value of
// the channels axis, nics resolved to a node's EFA NICs
// (cluster.Config.NodeNICs): over several nodes with algo ring or auto
// and op all_reduce, all_gather or reduce_scatter. Points the channels do
// not apply to — of one node, of another algorithm, a permute or an
// alltoall (cluster.Config.ChannelsApply) — run once, with none (0); so
// do auto's points at the sizes where auto runs no flat ring (collectives
// splits them: autoSplit). A count that does not divide a node's ranks,
// or two values that come to the same count, are refused naming the
// value, whatever auto runs at the grid's sizes.
func (b *pointBuilder) channelsOf(sh shapeOf, p fabric.Params, opS, algoS string) ([]int, error) {
	cfg := sh.config(&p)
	op, _ := enc.ParseOp(opS)
	algo, _ := enc.ParseAlgo(algoS)
	if !cfg.ChannelsApply(op, algo) {
		return []int{0}, nil
	}
	nics := cfg.NodeNICs()
	var out []int
	seen := map[int]string{}
	for _, c := range b.av.channels {
		k := c.v
		if k == 0 {
			k = nics
		}
		if err := cfg.CheckChannels(k, op, algo); err != nil {
			return nil, b.e.fail(c.n, c.p, nil, "%v (%s)", err, sh.sys.describe())
		}
		if prev, dup := seen[k]; dup {
			return nil, b.e.fail(c.n, c.p, nil, "%d channels twice on %s (%s and %s: a node has %d EFA NICs)", k, sh.sys.describe(), prev, c.p, nics)
		}
		seen[k] = c.p
		out = append(out, k)
	}
	return out, nil
}

// add completes point pt (size sz of group group on shape sh with fabric
// parameters p) — its seed, EFA settings, schedule features, memory check
// and hash — and appends it with its spec.
func (b *pointBuilder) add(sh shapeOf, pt Point, p fabric.Params, sz sizeVal, group int) error {
	e, g, sys := b.e, b.g, sh.sys
	if len(g.points) >= MaxPoints {
		return e.fail(e.raw.Axes.n, "axes", nil, "more than %d points; split the grid", MaxPoints)
	}
	if pt.Mode == "timing" {
		pt.Seed = 0
	}
	if sys.nodes > 1 {
		pt.EFA = efaOf(b.av.efa.s)
	}
	opts := b.options(sh, p, pt.Channels)
	o, _ := enc.ParseOp(pt.Op)
	a, _ := enc.ParseAlgo(pt.Algo)
	if opts.RingOrder != nil && enc.RingOrderApplies(o, a) {
		pt.RingOrder = cluster.FormatOrder(opts.RingOrder)
	}
	t, _ := enc.ParseDtype(pt.Dtype)
	m, _ := fabric.ParseModel(pt.Model)
	functional := pt.Mode == "functional"
	engines := collective.Calibrated(sys.gen).Engines
	if b.fx.ends == fabric.EndpointsIdeal {
		engines = collective.Ideal().Engines
	}
	// count counts the point's schedule (never building it), within the
	// grid's budget: its features and, for engines data engines per rank,
	// the part of a timing run's memory it holds.
	count := func(engines int) (features, uint64, error) {
		fc := newFeatureCounter(sh.ranks)
		head, part, err := cluster.CountTimingMemory(o, a, sh.ranks, pt.Size, t.Size(), opts, engines, fc.add)
		if err != nil {
			return features{}, 0, e.impossible(sz, sys, sh.rpd, pt.Op, pt.Algo, pt.Dtype, pt.Size, err)
		}
		f := fc.features(head)
		if e.budget -= f.xfers; e.budget < 0 {
			return features{}, 0, e.fail(e.raw.Axes.n, "axes", nil, "planning the grid counts more than %d transfers (the schedules of its distinct collectives); split the grid", e.maxBuild)
		}
		return f, part, nil
	}
	fk := [8]int64{int64(o), int64(a), int64(sh.ranks), pt.Size, int64(t), int64(opts.GroupSize), sh.flat, int64(opts.Channels)}
	sc, ok := b.scheds[fk]
	if !ok {
		feat, part, err := count(engines)
		if err != nil {
			return err
		}
		sc.feat, sc.timing = feat, map[int]uint64{}
		if functional {
			if sc.memNeed, err = cluster.FunctionalMemory(o, a, sh.ranks, t, []int64{pt.Size}, opts); err != nil {
				return e.impossible(sz, sys, sh.rpd, pt.Op, pt.Algo, pt.Dtype, pt.Size, err)
			}
		} else {
			sc.timing[engines] = part
		}
		b.scheds[fk] = sc
	}
	f := sc.feat
	f.gen, f.devices, f.functional, f.model, f.dtype = sys.gen, sys.devices*sys.nodes, functional, m, t
	f.engines = engines
	sp := spec{gen: sys.gen, device: sys.device, family: sys.family, tables: sys.tables, kind: sys.kind, params: p,
		op: o, algo: a, dtype: t, timing: !functional, feat: f, sysNode: sys.n, sysPath: sys.path, size: sz, opts: opts,
		whatIf: e.raw.WhatIf.v || sys.name != "" && sys.devices > hwarch.MaxNeuronDevices}
	sp.memNeed = sc.memNeed
	mode := "functional"
	if !functional {
		mode = "timing"
		var err error
		if sp.memNeed, err = b.timingMemory(sc, engines, f.devices, count); err != nil {
			return err
		}
	}
	if err := b.memLimit.Check(fmt.Sprintf("mode %s: %s of %d B on %d ranks", mode, pt.Op, pt.Size, sh.ranks), sp.memNeed); err != nil {
		return e.fail(sz.n, sz.p, err, "")
	}
	pt.Hash = hashHex(pt.canonical())
	g.points = append(g.points, pt)
	g.specs = append(g.specs, sp)
	g.groups = append(g.groups, group)
	return nil
}

// bringUp brings every distinct system of the grid up once, through the
// runtime as a point does (cluster.New), with the largest buffers any of
// its points needs, so that a system the runtime refuses (buffers past a
// rank's HBM, say) is refused before anything runs. The link timing and the model do not change a
// bring-up: one per generation, switch, devices, topology, ranks per
// device, endpoints and mode.
func (e *expander) bringUp(g *Grid) error {
	type key struct {
		gen     hwarch.Generation
		device  uint16
		family  hwarch.SwitchFamily
		devices int
		nodes   int
		kind    fabric.Kind
		rpd     int
		ends    fabric.Endpoints
		timing  bool
	}
	first := map[key]int{}
	need := map[key]uint64{}
	largest := map[key]int{} // the point whose buffers are need
	var order []key
	for i := range g.points {
		p, s := &g.points[i], &g.specs[i]
		k := key{s.gen, s.device, s.family, p.Devices, p.Nodes, s.kind, p.RanksPer, s.params.Endpoints, s.timing}
		if _, ok := first[k]; !ok {
			first[k] = i
			order = append(order, k)
		}
		if s.feat.buffers >= need[k] {
			need[k], largest[k] = s.feat.buffers, i
		}
	}
	for _, k := range order {
		i := first[k]
		p, s := &g.points[i], &g.specs[i]
		_, err := cluster.New(s.config(p, need[k]))
		if err != nil {
			where := fmt.Sprintf("%d %s devices on %s", p.Devices, p.devicesWord(), p.Topology)
			if p.System != "" {
				where = p.System
			}
			if p.Nodes > 1 {
				where = fmt.Sprintf("%d nodes of %s", p.Nodes, where)
			}
			if errors.Is(err, dmem.ErrNoMemory) { // the size asks too much, not the system
				j := largest[k]
				q, sz := &g.points[j], g.specs[j].size
				return e.fail(sz.n, sz.p, err, "%d B: the %s %s of it needs %d B of buffers per rank, more than the device memory of %s holds (point %d)", q.Size, q.Algo, q.Op, need[k], where, j)
			}
			return e.fail(s.sysNode, s.sysPath, err, "impossible system: %s with %d ranks per device and %d B of buffers per rank (point %d and the others of that system) cannot be brought up", where, p.RanksPer, need[k], i)
		}
	}
	return nil
}

// config is the cluster point p runs on, with buffers of need bytes per
// rank: p.Nodes copies of its system of p.Devices devices.
func (s *spec) config(p *Point, need uint64) cluster.Config {
	params := s.params
	return cluster.Config{Generation: s.gen, DeviceID: s.device, Devices: p.Devices * p.Nodes, Nodes: p.Nodes, Switch: s.family, Kind: s.kind, Params: &params,
		TimingOnly: s.timing, RanksPerDevice: p.RanksPer, BufferBytes: need, WhatIf: s.whatIf}
}

// impossible is the error of a point enc.Build or the memory estimate refuses.
func (e *expander) impossible(sz sizeVal, sys system, rpd int, op, algo, dtype string, size int64, err error) error {
	return e.fail(sz.n, sz.p, err, "impossible point: %s %s (%s) of %d B on %s × %d ranks per device", algo, op, dtype, size, sys.describe(), rpd)
}

// describe names the system in an error: its name or its devices, and
// its nodes.
func (s system) describe() string {
	where := fmt.Sprintf("%d %s devices", s.devices, s.devicesWord())
	if s.name != "" {
		where = s.name
	}
	if s.nodes > 1 {
		where = fmt.Sprintf("%d nodes of %s", s.nodes, where)
	}
	return where
}

// checkFabric builds the topology of sys once with p's parameters checked
// (p.Validate), so that a topology the device count cannot have (a 2D torus
// of 6 devices) is refused before anything runs.
func (e *expander) checkFabric(cache map[string]error, sys system, nodes int, p fabric.Params) error {
	what := fmt.Sprintf("%s of %d %s devices", sys.kind, sys.devices, sys.devicesWord())
	if nodes > 1 {
		what = fmt.Sprintf("%d nodes of %s", nodes, what)
	}
	if err := p.Validate(sys.kind); err != nil {
		return e.fail(sys.n, sys.path, err, "impossible system: %s", what)
	}
	// The topology's shape does not depend on the link timing or model
	// (nor on the EFA network's timing; its shape is the grid's one efa
	// block on the generation's defaults).
	key := fmt.Sprintf("%v/%#04x/%d/%v/%d", sys.gen, sys.device, sys.devices, sys.kind, nodes)
	err, done := cache[key]
	if !done {
		_, err = fabric.BuildNodes(sys.kind, sys.gen, sys.devices*nodes, nodes, p)
		cache[key] = err
	}
	if err != nil {
		return e.fail(sys.n, sys.path, err, "impossible system: %s", what)
	}
	return nil
}

// systems returns the system dimension: the systems axis' named systems,
// then the devices axis' counts on the grid's arch with each topology,
// none twice.
func (e *expander) systems(family *hwarch.SwitchFamily) ([]system, error) {
	if err := e.checkSwitch(family); err != nil {
		return nil, err
	}
	famOf := func(g hwarch.Generation) hwarch.SwitchFamily {
		if family != nil && rtarch.CheckSwitch(g, *family) == nil {
			return *family
		}
		return hwarch.DefaultSwitchFamily(g) // the grid's switch changes nothing on g (checkSwitch)
	}
	out, err := e.namedSystems(famOf)
	if err != nil {
		return nil, err
	}
	ax := e.raw.Axes
	devs, topos := ax.lists[AxisDevices], ax.lists[AxisTopologies]
	if devs == nil {
		if topos != nil {
			return nil, e.fail(topos.n, "axes."+AxisTopologies, nil, "topologies apply to the devices axis, which is missing (a named system has its topology)")
		}
		if len(out) == 0 {
			return nil, e.fail(ax.n, "axes", nil, "no systems: give the axis %q (with arch) or %q", AxisDevices, AxisSystems)
		}
		if e.raw.WhatIf.v {
			// As fabric sweep --what-if with --system and a scenario's
			// what_if with system.name: a named system is built at its own
			// device count, past get_max_devs the what-if way without it.
			return nil, e.fail(e.raw.WhatIf.n, "what_if", nil, "true: the grid has no devices axis, and a named system (%s) is built at its own device count without it, so it would change nothing; it allows counts of the devices axis beyond get_max_devs: leave it out", out[0].name)
		}
		return out, nil
	}
	counted, err := e.countedSystems(famOf, devs, topos)
	if err != nil {
		return nil, err
	}
	if err := e.checkWhatIf(devs, counted); err != nil {
		return nil, err
	}
	out = append(out, counted...)
	seen := map[string]int{}
	for i, s := range out {
		key := fmt.Sprintf("%s/%v/%#04x/%d/%v", s.name, s.gen, s.device, s.devices, s.kind)
		if j, dup := seen[key]; dup {
			return nil, e.fail(s.n, s.path, nil, "%d %s devices on %s twice (systems %d and %d; topology auto resolves to %s)", s.devices, s.devicesWord(), s.kind, j, i, s.kind)
		}
		seen[key] = i
	}
	return out, nil
}

// checkWhatIf refuses what_if: true when every count of the devices axis
// is within get_max_devs of the grid's arch and switch: it allows counts
// beyond that and would change nothing (a named system past the driver's
// devices is brought up the what-if way without it), as fabric sweep
// --what-if is refused there.
func (e *expander) checkWhatIf(devs *list, counted []system) error {
	if !e.raw.WhatIf.v || len(counted) == 0 {
		return nil
	}
	most := 0
	for _, s := range counted {
		if s.devices > s.tables.Soc.MaxDevs() {
			return nil
		}
		most = max(most, s.devices)
	}
	s := counted[0]
	return e.fail(devs.n, "axes."+AxisDevices, nil, "every count (at most %d) is within get_max_devs (%d for %s with switch %s), so what_if: true would change nothing; it allows counts beyond that: leave it out",
		most, s.tables.Soc.MaxDevs(), s.gen, s.family)
}

// checkSwitch refuses the grid's switch family (given: family not nil)
// when it changes nothing on any generation of the grid's systems — its
// arch's and its named systems' (rtarch.CheckSwitch, the check of --switch
// and a scenario's system.switch). A grid of generations it changes
// something on and others takes it on the first, each other's default on
// the others (a point's switch says which). Words that do not parse are
// left to the systems' own errors.
func (e *expander) checkSwitch(family *hwarch.SwitchFamily) error {
	if family == nil {
		return nil
	}
	var gens []hwarch.Generation
	if e.raw.Arch.n != nil {
		if g, err := hwarch.ParseGeneration(e.raw.Arch.s); err == nil {
			gens = append(gens, g)
		}
	}
	if l := e.raw.Axes.lists[AxisSystems]; l != nil {
		for _, w := range l.items {
			if s, err := fabric.LookupSystem(w.s); err == nil {
				gens = append(gens, s.Generation)
			}
		}
	}
	var first error
	for _, g := range gens {
		err := rtarch.CheckSwitch(g, *family)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return e.fail(e.raw.Switch.n, "switch", first, "%q", e.raw.Switch.s)
	}
	return nil
}

// namedSystems returns the systems axis' systems of the catalogue
// (fabric.LookupSystem), each of the grid's arch if it has one, with its
// switch family's runtime tables.
func (e *expander) namedSystems(famOf func(hwarch.Generation) hwarch.SwitchFamily) ([]system, error) {
	raw := e.raw
	l := raw.Axes.lists[AxisSystems]
	if l == nil {
		return nil, nil
	}
	var out []system
	for i, w := range l.items {
		path := fmt.Sprintf("axes.%s[%d]", AxisSystems, i)
		s, err := fabric.LookupSystem(w.s)
		if err != nil {
			return nil, e.fail(w.n, path, err, "%q", w.s)
		}
		if j := slices.IndexFunc(out, func(o system) bool { return o.name == s.Name }); j >= 0 {
			return nil, e.fail(w.n, path, nil, "%s listed twice (axes.%s[%d])", s.Name, AxisSystems, j)
		}
		if raw.Arch.n != nil {
			g, err := hwarch.ParseGeneration(raw.Arch.s)
			if err == nil && g != s.Generation {
				return nil, e.fail(w.n, path, nil, "%s is a %s system; the grid's arch is %s (leave arch out for a grid of systems only)", s.Name, s.Generation, g)
			}
			// A named system is of its generation's default devices (the
			// catalogue has no Inf2 system): arch inf2 contradicts
			// trn1-32xl's Trn1 devices, as --arch inf2 --system trn1-32xl
			// does on the command line.
			if dev := archDevice(raw.Arch.s, s.Generation); err == nil && dev != 0 {
				return nil, e.fail(w.n, path, nil, "%s is a system of %s devices; the grid's arch %s names %s devices (PCI device id %#04x): leave arch out for a grid of systems only, or make it agree",
					s.Name, hwarch.DefaultProduct(s.Generation), strings.TrimSpace(raw.Arch.s), hwarch.ProductOfDevice(dev), dev)
			}
		}
		fam := famOf(s.Generation)
		t, err := rtarch.For(s.Generation, rtarch.Options{Switch: fam})
		if err != nil {
			return nil, e.fail(w.n, path, err, "%s", s.Name)
		}
		out = append(out, system{name: s.Name, gen: s.Generation, family: fam, tables: t, devices: s.Devices, kind: s.Kind, n: w.n, path: path})
	}
	return out, nil
}

// countedSystems returns the devices axis' counts on the grid's arch, each
// with every topology of the topologies axis (auto, resolved, without
// one): each count within get_max_devs of the arch and switch, or with
// what_if 1..rtarch.MaxWhatIfDevices (rtarch.Soc.CheckDevicesField, the
// check of fabric sweep --devices and a scenario's system.devices), none
// twice.
func (e *expander) countedSystems(famOf func(hwarch.Generation) hwarch.SwitchFamily, devs, topos *list) ([]system, error) {
	raw := e.raw
	if raw.Arch.n == nil {
		return nil, e.fail(devs.n, "axes."+AxisDevices, nil, "device counts need the grid's arch (sunda|cayman|mariana)")
	}
	gen, err := hwarch.ParseGeneration(raw.Arch.s)
	if err != nil {
		return nil, e.fail(raw.Arch.n, "arch", err, "%q", raw.Arch.s)
	}
	dev := archDevice(raw.Arch.s, gen) // inf2: Inf2 devices, as fabric sweep --arch inf2 runs
	fam := famOf(gen)
	t, err := rtarch.For(gen, rtarch.Options{Switch: fam})
	if err != nil {
		return nil, e.fail(raw.Arch.n, "arch", err, "%q", raw.Arch.s)
	}
	kinds := []word{{s: "auto", n: devs.n}}
	if topos != nil {
		kinds = topos.items
	}
	var parsedKinds []fabric.Kind
	for i, w := range kinds {
		k, err := fabric.ParseKind(w.s)
		if err != nil {
			return nil, e.fail(w.n, fmt.Sprintf("axes.%s[%d]", AxisTopologies, i), err, "%q", w.s)
		}
		if r := k.GenerationRefusal(gen); r != "" {
			return nil, e.fail(w.n, fmt.Sprintf("axes.%s[%d]", AxisTopologies, i), nil, "%s: %s", w.s, r)
		}
		if slices.Contains(parsedKinds, k) {
			return nil, e.fail(w.n, fmt.Sprintf("axes.%s[%d]", AxisTopologies, i), nil, "%q listed twice", w.s)
		}
		parsedKinds = append(parsedKinds, k)
	}
	var out []system
	counts := map[int]bool{}
	for i, w := range devs.items {
		path := fmt.Sprintf("axes.%s[%d]", AxisDevices, i)
		if err := e.integer(w, path); err != nil {
			return nil, err
		}
		n, err := units.ParseCount(path, w.s) // past int: saturated, for the check to name the range
		if err != nil {
			return nil, e.fail(w.n, path, err, "")
		}
		if err := t.Soc.CheckDevicesField(path, strings.TrimSpace(w.s), n, raw.WhatIf.v, "what_if: true"); err != nil {
			return nil, e.fail(w.n, path, err, "")
		}
		if counts[n] {
			return nil, e.fail(w.n, path, nil, "%d listed twice", n)
		}
		counts[n] = true
		for j, k := range parsedKinds {
			kp := fmt.Sprintf("axes.%s[%d]", AxisTopologies, j)
			if topos == nil {
				kp = path
			}
			kind := k
			if kind == fabric.KindAuto {
				kind = fabric.AutoKind(gen, n)
			}
			out = append(out, system{gen: gen, device: dev, family: fam, tables: t, devices: n, kind: kind, n: kinds[j].n, path: kp})
		}
	}
	return out, nil
}

// efaBlock is the grid's efa block read into the EFA settings (without
// the node count), with where each key was given.
type efaBlock struct {
	s     fabric.EFASettings
	at    map[fabric.EFASetting]*yaml.Node
	nodes *yaml.Node // the nodes value being checked
	path  string     // its path: axes.nodes[i], or axes with the axis left out
}

// efaKeys spells the EFA settings as the grid's keys (a node count as the
// nodes value being checked).
func (b *efaBlock) name(s fabric.EFASetting) string {
	if s == fabric.SettingNodes {
		return b.path
	}
	return "efa." + [...]string{fabric.SettingNetwork: "network",
		fabric.SettingOversubscription: "oversubscription", fabric.SettingBandwidth: "bandwidth",
		fabric.SettingLatency: "latency_ns", fabric.SettingLeafPorts: "leaf_ports",
		fabric.SettingSpines: "spines", fabric.SettingDevicesPerNIC: "devices_per_nic", fabric.SettingRouting: "routing"}[s]
}

// efaError positions an error of fabric.EFASettings at the key it names.
func (e *expander) efaError(b *efaBlock, err error) error {
	var se *fabric.EFASettingError
	if !errors.As(err, &se) {
		return e.fail(e.raw.Axes.n, "axes", err, "")
	}
	path := b.name(se.Setting)
	n := b.at[se.Setting]
	if se.Setting == fabric.SettingNodes {
		n = b.nodes
	}
	var ue *units.Error
	if errors.As(err, &ue) {
		return e.fail(n, path, err, "")
	}
	msg := strings.TrimLeft(strings.TrimPrefix(err.Error(), path), " :")
	return e.d.ErrorWith(n, path, msg, errors.Join(err, ErrGrid))
}

// efaSettings reads the efa block: each word parsed (and a time
// converted) by internal/units; the ranges are fabric.EFASettings.Check's.
func (e *expander) efaSettings() (*efaBlock, error) {
	b := &efaBlock{at: map[fabric.EFASetting]*yaml.Node{}}
	r := e.raw.EFA
	if r == nil {
		return b, nil
	}
	for _, k := range []struct {
		set fabric.EFASetting
		w   word
	}{{fabric.SettingNetwork, r.Network}, {fabric.SettingOversubscription, r.Oversubscription}, {fabric.SettingBandwidth, r.Bandwidth},
		{fabric.SettingLatency, r.LatencyNS}, {fabric.SettingLeafPorts, r.LeafPorts}, {fabric.SettingSpines, r.Spines},
		{fabric.SettingDevicesPerNIC, r.DevicesPerNIC}, {fabric.SettingRouting, r.Routing}} {
		if k.w.n == nil {
			continue
		}
		b.at[k.set] = k.w.n
		path := b.name(k.set)
		bad := func(err error) error { return e.fail(k.w.n, path, err, "") }
		switch k.set {
		case fabric.SettingNetwork:
			nw, err := fabric.ParseEFANetwork(k.w.s)
			if err != nil {
				return nil, e.fail(k.w.n, path, err, "%q", k.w.s)
			}
			b.s.Network = &nw
		case fabric.SettingRouting:
			rt, err := fabric.ParseEFARouting(k.w.s)
			if err != nil {
				return nil, e.fail(k.w.n, path, err, "%q", k.w.s)
			}
			b.s.Routing = &rt
		case fabric.SettingOversubscription:
			if err := e.number(k.w, path); err != nil {
				return nil, err
			}
			v, err := units.ParseFloat(path, k.w.s)
			if err != nil {
				return nil, bad(err)
			}
			b.s.Oversubscription = &v
		case fabric.SettingBandwidth:
			v, err := units.ParseBandwidth(path, k.w.s)
			if err != nil {
				return nil, bad(err)
			}
			b.s.Bandwidth = &v
		case fabric.SettingLatency:
			if err := e.number(k.w, path); err != nil {
				return nil, err
			}
			f, err := units.ParseFloat(path, k.w.s)
			if err != nil {
				return nil, bad(err)
			}
			ps, err := units.LatencyToPS(path, f)
			if err != nil {
				return nil, bad(err)
			}
			b.s.Latency = &ps
		default:
			if err := e.integer(k.w, path); err != nil {
				return nil, err
			}
			v, err := units.ParseInt(path, k.w.s, math.MinInt32, math.MaxInt32)
			if err != nil {
				return nil, bad(err)
			}
			n := int(v)
			switch k.set {
			case fabric.SettingLeafPorts:
				b.s.LeafPorts = &n
			case fabric.SettingSpines:
				b.s.Spines = &n
			default:
				b.s.DevicesPerNIC = &n
			}
		}
	}
	return b, nil
}

// nodes reads the nodes axis (default 1) and the efa block, and checks
// both for every system's devices per node through
// fabric.EFASettings.Check, as fabric sweep --nodes and a scenario's
// system.nodes and system.efa are: each count 1..the fabric's devices, the
// efa keys each in range and refused when every point has one node (one
// node has no EFA network).
func (e *expander) nodes(systems []system) ([]intVal, *efaBlock, error) {
	vals, err := e.ints(AxisNodes, math.MinInt32, math.MaxInt32, []int{1})
	if err != nil {
		return nil, nil, err
	}
	b, err := e.efaSettings()
	if err != nil {
		return nil, nil, err
	}
	var perNode []int
	seen := map[int]bool{}
	for _, s := range systems {
		if !seen[s.devices] {
			seen[s.devices] = true
			perNode = append(perNode, s.devices)
		}
	}
	several := false
	for _, v := range vals {
		several = several || v.v > 1
	}
	for _, v := range vals {
		b.nodes, b.path = v.n, v.p
		if e.raw.Axes.lists[AxisNodes] == nil {
			b.path = "axes." + AxisNodes
		}
		s := b.s
		s.Nodes = v.v
		if v.v == 1 && several {
			// The overrides apply to the other counts' points.
			s = fabric.EFASettings{Nodes: 1}
		}
		if err := s.Check(perNode, b.name); err != nil {
			if v.v == 1 && !several {
				var se *fabric.EFASettingError
				if errors.As(err, &se) && se.Setting != fabric.SettingNodes {
					// Name where the node count comes from.
					where := fmt.Sprintf("axes.%s is [1]", AxisNodes)
					if e.raw.Axes.lists[AxisNodes] == nil {
						where = fmt.Sprintf("axes.%s is left out (1)", AxisNodes)
					}
					n := b.at[se.Setting]
					return nil, nil, e.d.ErrorWith(n, b.name(se.Setting), fmt.Sprintf("every point has one node (%s), which has no EFA network; the efa block applies to points of 2 or more nodes", where), errors.Join(err, ErrGrid))
				}
			}
			return nil, nil, e.efaError(b, err)
		}
	}
	if err := e.checkSpinesUsed(b, systems, vals); err != nil {
		return nil, nil, err
	}
	return vals, b, nil
}

// checkSpinesUsed refuses the efa block's spines or oversubscription
// (which act on the spine links alone) when no point of the grid — no
// system at any node count of 2 or more — has a spine a write could cross
// (fabric.EFAParams.SpinesIdle under the block's overrides), as fabric
// sweep --spines and a scenario's system.efa.spines are refused there.
func (e *expander) checkSpinesUsed(b *efaBlock, systems []system, vals []intVal) error {
	var first error
	for _, v := range vals {
		if v.v < 2 {
			continue
		}
		for _, sys := range systems {
			s := b.s
			s.Nodes = v.v
			err := s.CheckSpinesUsed(s.WithOverrides(fabric.DefaultEFA(sys.gen)), []int{sys.devices}, b.name)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
	}
	if first == nil {
		return nil // every point has one node: Check refused the block already
	}
	return e.efaError(b, fmt.Errorf("%w; no other point of the grid has a spine either", first))
}

type intVal struct {
	v int
	n *yaml.Node
	p string
}

// ints reads an integer axis, each value in [lo, hi]; def when absent.
func (e *expander) ints(axis string, lo, hi int64, def []int) ([]intVal, error) {
	l := e.raw.Axes.lists[axis]
	if l == nil {
		var out []intVal
		for _, v := range def {
			out = append(out, intVal{v: v, n: e.raw.Axes.n, p: "axes"})
		}
		return out, nil
	}
	var out []intVal
	seen := map[int64]bool{}
	for i, w := range l.items {
		path := fmt.Sprintf("axes.%s[%d]", axis, i)
		if err := e.integer(w, path); err != nil {
			return nil, err
		}
		v, err := units.ParseInt(path, w.s, lo, hi)
		if err != nil {
			return nil, e.fail(w.n, path, err, "")
		}
		if seen[v] {
			return nil, e.fail(w.n, path, nil, "%d listed twice", v)
		}
		seen[v] = true
		out = append(out, intVal{v: int(v), n: w.n, p: path})
	}
	return out, nil
}

// channelsNICs is the channels axis' word for one flat-ring channel per
// EFA NIC of a node, the default.
const channelsNICs = "nics"

// channels reads the channels axis: nics (0), or 1..enc.MaxChannels rings.
func (e *expander) channels() ([]intVal, error) {
	if l := e.raw.Axes.lists[AxisChannels]; l != nil {
		for i, w := range l.items {
			// A count is written as the integer keys' are ("4", 0x4 and +4
			// refused); a word other than nics is words' to refuse.
			if units.Word(w.s) != channelsNICs {
				if err := e.integer(w, fmt.Sprintf("axes.%s[%d]", AxisChannels, i)); err != nil {
					return nil, err
				}
			}
		}
	}
	words, err := e.words(AxisChannels, []string{channelsNICs}, func(s string) (string, error) {
		if units.Word(s) == channelsNICs {
			return channelsNICs, nil
		}
		n, err := units.ParseInt("", s, 1, enc.MaxChannels)
		if ue := (*units.Error)(nil); errors.As(err, &ue) {
			ue.Reason += fmt.Sprintf(" (or %s, one per EFA NIC of a node)", channelsNICs)
		}
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(n, 10), nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]intVal, len(words))
	for i, w := range words {
		out[i] = intVal{n: w.n, p: w.p}
		if w.v != channelsNICs {
			out[i].v, _ = strconv.Atoi(w.v)
		}
	}
	return out, nil
}

type strVal struct {
	v string
	n *yaml.Node
	p string
}

// words reads a word axis through parse (which returns the canonical
// spelling); def when absent, and the axis is required when def is nil.
func (e *expander) words(axis string, def []string, parse func(string) (string, error)) ([]strVal, error) {
	l := e.raw.Axes.lists[axis]
	if l == nil {
		if def == nil {
			return nil, e.fail(e.raw.Axes.n, "axes", nil, "missing axis %q", axis)
		}
		var out []strVal
		for _, v := range def {
			out = append(out, strVal{v: v, n: e.raw.Axes.n, p: "axes"})
		}
		return out, nil
	}
	var out []strVal
	seen := map[string]bool{}
	for i, w := range l.items {
		path := fmt.Sprintf("axes.%s[%d]", axis, i)
		v, err := parse(w.s)
		if err != nil {
			return nil, e.fail(w.n, path, err, "%q", w.s)
		}
		if seen[v] {
			return nil, e.fail(w.n, path, nil, "%q listed twice (as %s)", w.s, v)
		}
		seen[v] = true
		out = append(out, strVal{v: v, n: w.n, p: path})
	}
	return out, nil
}

// bandwidths reads link_bw: explicit units (units.ParseBandwidth).
func (e *expander) bandwidths() ([]optPS, error) {
	l := e.raw.Axes.lists[AxisLinkBW]
	if l == nil {
		return []optPS{{}}, nil
	}
	var out []optPS
	seen := map[uint64]bool{}
	for i, w := range l.items {
		path := fmt.Sprintf("axes.%s[%d]", AxisLinkBW, i)
		v, err := units.ParseBandwidth(path, w.s)
		if err != nil {
			return nil, e.fail(w.n, path, err, "")
		}
		if seen[v] {
			return nil, e.fail(w.n, path, nil, "%q is %d B/s, listed twice", w.s, v)
		}
		seen[v] = true
		out = append(out, optPS{v: &v, n: w.n, p: path, txt: w.s})
	}
	return out, nil
}

// latencies reads link_latency: a number of ns, or a duration with its
// unit ("500ns", "1.5us"), a whole number of ps (units.ParseLatency).
func (e *expander) latencies() ([]optPS, error) {
	l := e.raw.Axes.lists[AxisLinkLatency]
	if l == nil {
		return []optPS{{}}, nil
	}
	var out []optPS
	seen := map[uint64]bool{}
	for i, w := range l.items {
		path := fmt.Sprintf("axes.%s[%d]", AxisLinkLatency, i)
		v, err := units.ParseLatency(path, w.s)
		if err != nil {
			return nil, e.fail(w.n, path, err, "")
		}
		if seen[v] {
			return nil, e.fail(w.n, path, nil, "%q is %d ps, listed twice", w.s, v)
		}
		seen[v] = true
		out = append(out, optPS{v: &v, n: w.n, p: path, txt: w.s})
	}
	return out, nil
}

// sizeCount is the number of sizes of a group before the rounding of a
// range to the op's granule: the most any group has (0 for a range in
// error, which its expansion reports).
func (e *expander) sizeCount() int {
	ax := e.raw.Axes.sizes
	if ax.rng == nil {
		return len(ax.items)
	}
	sizes, err := e.sizes(enc.AllReduce, enc.Uint8, 1) // granule 1: nothing rounded
	if err != nil {
		return 0 // the range's error is reported with the op it is expanded for
	}
	return len(sizes)
}

// gridRangeKeys name a size range's bounds in errors (nccom.SizesIn).
var gridRangeKeys = nccom.RangeNames{Min: "axes.sizes.min", Max: "axes.sizes.max", Factor: "axes.sizes.factor", Step: "axes.sizes.step"}

type sizeVal struct {
	v int64
	n *yaml.Node
	p string
}

// sizes returns the sizes of op in t over ranks ranks, each with its place:
// the list as given (each size a multiple of the op's granule), or the
// range expanded as nccom-test does (rounded to the granule).
func (e *expander) sizes(op enc.Op, t enc.Dtype, ranks int) ([]sizeVal, error) {
	ax := e.raw.Axes.sizes
	align := op.SizeAlign(t.Size(), ranks)
	if r := ax.rng; r != nil {
		lo, err := units.ParseBytes("axes.sizes.min", r.Min.s)
		if err != nil {
			return nil, e.fail(r.Min.n, "axes.sizes.min", err, "")
		}
		hi, err := units.ParseBytes("axes.sizes.max", r.Max.s)
		if err != nil {
			return nil, e.fail(r.Max.n, "axes.sizes.max", err, "")
		}
		var factor, step int64
		if r.Factor.n != nil {
			if err := e.integer(r.Factor, "axes.sizes.factor"); err != nil {
				return nil, err
			}
			if factor, err = units.ParseInt("axes.sizes.factor", r.Factor.s, 2, 1<<20); err != nil {
				return nil, e.fail(r.Factor.n, "axes.sizes.factor", err, "")
			}
		}
		if r.Step.n != nil {
			if step, err = units.ParseBytesIn("axes.sizes.step", r.Step.s, 1, enc.MaxSize); err != nil {
				return nil, e.fail(r.Step.n, "axes.sizes.step", err, "")
			}
		}
		if r.Factor.n == nil && r.Step.n == nil {
			return nil, e.fail(ax.n, "axes.sizes", nil, "a range needs factor or step")
		}
		if r.Factor.n != nil && r.Step.n != nil {
			return nil, e.fail(r.Step.n, "axes.sizes.step", nil, "give factor or step, not both")
		}
		// The range's rule and wording are the command line's -b/-e/-f/-i
		// and a scenario's sweep's (nccom.SizesIn), each error at the key
		// it names (once all at axes.sizes, "nccom: bad sweep: …").
		sizes, err := nccom.SizesIn(lo, hi, factor, step, align, gridRangeKeys)
		if re := (*nccom.RangeError)(nil); errors.As(err, &re) {
			at := map[string]*yaml.Node{gridRangeKeys.Min: r.Min.n, gridRangeKeys.Max: r.Max.n, gridRangeKeys.Factor: r.Factor.n, gridRangeKeys.Step: r.Step.n}[re.Name]
			if at == nil {
				at = ax.n
			}
			msg := re.Value + ": " + re.Reason
			if strings.Contains(msg, "alignment") || strings.Contains(msg, "points") { // the granule's
				msg += fmt.Sprintf(" (%s in %s over %d ranks)", op, t, ranks)
			}
			return nil, e.d.ErrorWith(at, re.Name, msg, errors.Join(err, ErrGrid))
		}
		if err != nil {
			return nil, e.fail(ax.n, "axes.sizes", err, "%s in %s over %d ranks", op, t, ranks)
		}
		if len(sizes) > MaxAxisValues {
			return nil, e.fail(ax.n, "axes.sizes", nil, "%d sizes; an axis has at most %d", len(sizes), MaxAxisValues)
		}
		out := make([]sizeVal, len(sizes))
		for i, v := range sizes {
			out[i] = sizeVal{v: v, n: ax.n, p: "axes.sizes"}
		}
		return out, nil
	}
	var out []sizeVal
	seen := map[int64]bool{}
	for i, w := range ax.items {
		path := fmt.Sprintf("axes.sizes[%d]", i)
		v, err := units.ParseBytesIn(path, w.s, 0, enc.MaxSize)
		if err != nil {
			return nil, e.fail(w.n, path, err, "")
		}
		if v < align {
			// As fabric sweep -b 0 -e 0 and a scenario's sweep of max 0
			// (nccom.Sizes): a collective of 0 bytes moves nothing.
			return nil, e.fail(w.n, path, nil, "%s (%d B): below the alignment %s (the element size, times the ranks for an op that splits its buffer: %s in %s over %d ranks)", w.s, v, nccom.FormatSize(align), op, t, ranks)
		}
		if v%align != 0 {
			return nil, e.fail(w.n, path, nil, "%s (%d B) is not a multiple of %d B, the granule of %s in %s over %d ranks (a range {min, max, factor} rounds to it)", w.s, v, align, op, t, ranks)
		}
		if seen[v] {
			return nil, e.fail(w.n, path, nil, "%s (%d B) listed twice", w.s, v)
		}
		seen[v] = true
		out = append(out, sizeVal{v: v, n: w.n, p: path})
	}
	return out, nil
}
