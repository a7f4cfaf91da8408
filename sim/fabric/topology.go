package fabric

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
)

// Kind is a topology family.
type Kind uint8

// The topology families.
const (
	KindAuto           Kind = iota // chosen from the generation, switch family and device count (AutoKind)
	KindTorus2D                    // 4×4 2D torus groups of 16 with the driver's neighbour table (Trn1, Trn2, Trn3 without a switch)
	KindUltraServer                // Trn2 UltraServer: 4 × 16, the 4×4 torus of each node plus a Z ring joining same-position devices
	KindRing                       // a bidirectional ring (Inf2 48xl)
	KindChain                      // a chain (Inf2 24xl)
	KindSwitch                     // Trn3 NeuronSwitch-v1: devices all-to-all through an in-server and an inter-server switch level
	KindFullyConnected             // α-β: a direct link between every pair
	KindStar                       // α-β: every device on one switch
	KindTrn3Gen1                   // Trn3 Gen1 UltraServer: 4 servers × 16 on NeuronSwitch-v1, plus direct inter-rack links (systems.go)
	KindTrn3Gen2                   // Trn3 Gen2 UltraServer: 36 servers × 4, a first-level switch per server, two second-level switches (systems.go)
	numKinds
)

// KindWords returns the accepted topology words, "auto" first, joined by
// "|" (for help texts: one list, from the kinds themselves).
func KindWords() string { return strings.Join(kindNames[:], "|") }

var kindNames = [...]string{"auto", "torus2d", "ultraserver", "ring", "chain", "switch", "fully-connected", "star", "trn3-gen1", "trn3-gen2"}

// String returns the kind's name as the CLI spells it.
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ErrUnknownKind is returned (wrapped) by ParseKind.
var ErrUnknownKind = errors.New("unknown topology")

// ParseKind reads a topology name: auto, torus2d, ultraserver, ring, chain,
// switch, fully-connected, star, trn3-gen1, trn3-gen2.
func ParseKind(s string) (Kind, error) {
	for k, n := range kindNames {
		if units.Word(s) == n {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("%w %q: accepted words are %s", ErrUnknownKind, s, strings.Join(kindNames[:], "|"))
}

// Set implements pflag.Value.
func (k *Kind) Set(s string) error {
	v, err := ParseKind(s)
	if err == nil {
		*k = v
	}
	return err
}

// Type implements pflag.Value.
func (k *Kind) Type() string { return "topology" }

// AutoKind is the topology a real system of this shape has
// (trainium-facts §4, driver-facts §6): Trn3 is switched; a multiple of 16
// Trn1/Trn2 devices is the 4×4 torus (64 Trn2 devices an UltraServer); 6
// Inf2 devices a chain; other counts a ring.
func AutoKind(g hwarch.Generation, devices int) Kind {
	switch {
	case g == hwarch.Mariana:
		return KindSwitch
	case g == hwarch.Cayman && devices == 64:
		return KindUltraServer
	case devices%16 == 0:
		return KindTorus2D
	case hwarch.ChainTable(devices):
		return KindChain
	}
	return KindRing
}

// NodeKind says whether a node of the topology is a device or a switch.
type NodeKind uint8

// The node kinds.
const (
	NodeDevice NodeKind = iota
	NodeSwitch
	// NodeNIC is an EFA NIC of a system of several nodes (ScaleOut): it
	// forwards between its devices and its leaf without a switch's delay.
	NodeNIC
)

// Node is a device or a switch.
type Node struct {
	Kind NodeKind
	Name string // "neuron3", "l1-sw0", "l2-sw"
	// Ports are the directed links leaving the node, in port order.
	Ports []int
}

// Link is one direction of a physical link: From's port FromPort to To's
// port ToPort.
type Link struct {
	From, To         int // node indices
	FromPort, ToPort int
	Group            string // the link group its parameters come from ("xy", "z", "in-server", "inter-server", "ring", "link")
	Params           LinkParams
}

// Topology is the graph of a system: nodes 0..Devices-1 are the devices (by
// device index), switches follow; links are directed.
type Topology struct {
	Kind    Kind
	Devices int
	Nodes   []Node
	Links   []Link
	// Neighbours[d][s] is the device the driver's table puts behind device
	// d's B0_s window (column = SENG index), or -1; empty when the topology
	// has no neighbour windows.
	Neighbours [][]int
	// Scale is the EFA network of a system of several nodes (BuildNodes),
	// or nil for one node.
	Scale *ScaleOut
	// next is the next-hop table (route); empty with Scale, whose rules
	// give the next hop (ScaleOut.hop).
	next routes
}

// hop is the link a packet at node x takes towards device dst (-1: none).
func (t *Topology) hop(x, dst int) int32 {
	if t.Scale != nil {
		return t.Scale.hop(x, dst)
	}
	return t.next.hop(x, dst)
}

// ErrTopology marks a topology that cannot be built as asked.
var ErrTopology = errors.New("topology cannot be built")

// Build returns the topology of kind k over n devices with parameters p.
func Build(k Kind, g hwarch.Generation, n int, p Params) (*Topology, error) {
	t, err := graph(k, g, n, p)
	if err != nil {
		return nil, err
	}
	var adjust func(lo int, col [][]int32)
	if t.Kind == KindTrn3Gen2 {
		adjust = t.spreadGen2()
	}
	t.route(adjust)
	return t, nil
}

// DeviceLinks returns the direct links between the devices of the
// topology of kind k over n devices (one node, as Build builds it):
// out[d] lists, in port order, each device d has a link to, once. A path
// through a switch is no direct link: a switched topology's devices have
// none but the links that join two devices (Trn3 Gen1's inter-rack ones).
// It builds no routes, so it is cheap at any device count. The runtime
// lays its rings along these links (internal/cluster's ring order).
func DeviceLinks(k Kind, g hwarch.Generation, n int, p Params) ([][]int, error) {
	t, err := graph(k, g, n, p)
	if err != nil {
		return nil, err
	}
	out := make([][]int, n)
	seen := make([]int, n) // seen[e] = d+1 once out[d] holds e
	for d := range out {
		for _, id := range t.Nodes[d].Ports {
			if to := t.Links[id].To; to < n && seen[to] != d+1 {
				seen[to] = d + 1
				out[d] = append(out[d], to)
			}
		}
	}
	return out, nil
}

// Graph returns the nodes and links of the system of devices devices of
// kind k in nodes nodes (BuildNodes's shape; 1: one node), without the
// routes of a node of more than one: what a check of a link's ends needs,
// cheap at any device count.
func Graph(k Kind, g hwarch.Generation, devices, nodes int, p Params) (*Topology, error) {
	if nodes == 1 {
		return graph(k, g, devices, p)
	}
	return BuildNodes(k, g, devices, nodes, p)
}

// NodeNamed finds a node by name ("neuron3", "l1-sw0", "n1-nic0").
func (t *Topology) NodeNamed(name string) (int, bool) {
	for i, n := range t.Nodes {
		if n.Name == name {
			return i, true
		}
	}
	return 0, false
}

// LinkBetween returns the directed link from node a to node b.
func (t *Topology) LinkBetween(a, b int) (int, bool) {
	if a < 0 || a >= len(t.Nodes) {
		return 0, false
	}
	for _, id := range t.Nodes[a].Ports {
		if t.Links[id].To == b {
			return int(id), true
		}
	}
	return 0, false
}

// graph returns the topology of kind k over n devices, its nodes and links
// without the routes.
func graph(k Kind, g hwarch.Generation, n int, p Params) (*Topology, error) {
	if n < 1 || n > hwarch.MaxFabricDevices {
		return nil, fmt.Errorf("fabric %s: %d devices (1..%d): %w", k, n, hwarch.MaxFabricDevices, ErrTopology)
	}
	if k == KindAuto {
		k = AutoKind(g, n)
	}
	if r := k.DevicesRefusal(n); r != "" {
		return nil, fmt.Errorf("fabric %s: %d devices; %s: %w", k, n, r, ErrTopology)
	}
	t := &Topology{Kind: k, Devices: n}
	for i := range n {
		t.Nodes = append(t.Nodes, Node{Kind: NodeDevice, Name: fmt.Sprintf("neuron%d", i)})
	}
	var err error
	switch k {
	case KindTorus2D:
		err = t.torus(n, p.XY)
	case KindUltraServer:
		err = t.ultraServer(n, p)
	case KindRing:
		err = t.ring(n, p.Ring, false)
	case KindChain:
		err = t.ring(n, p.Ring, true)
	case KindSwitch:
		err = t.switched(n, p)
	case KindFullyConnected:
		if n > 1024 {
			err = fmt.Errorf("fabric fully-connected: %d devices would need %d links; at most 1024 devices: %w", n, n*(n-1), ErrTopology)
			break
		}
		for a := range n {
			for b := range n {
				if a != b {
					t.link(a, b, "link", p.Link)
				}
			}
		}
	case KindTrn3Gen1:
		err = t.trn3Gen1(n, p)
	case KindTrn3Gen2:
		err = t.trn3Gen2(n, p)
	case KindStar:
		sw := t.addSwitch("sw")
		for d := range n {
			t.duplex(d, sw, "link", p.Link)
		}
	default:
		err = fmt.Errorf("fabric: topology %s: %w", k, ErrUnknownKind)
	}
	if err != nil {
		return nil, err
	}
	if len(t.Neighbours) == 0 && g != hwarch.Sunda && (k == KindTorus2D || k == KindUltraServer) {
		return nil, fmt.Errorf("fabric %s: no neighbour table: %w", k, ErrTopology)
	}
	return t, nil
}

func (t *Topology) addSwitch(name string) int {
	t.Nodes = append(t.Nodes, Node{Kind: NodeSwitch, Name: name})
	return len(t.Nodes) - 1
}

// link adds the directed link a→b and returns its index.
func (t *Topology) link(a, b int, group string, p LinkParams) int {
	id := len(t.Links)
	t.Links = append(t.Links, Link{From: a, To: b, FromPort: len(t.Nodes[a].Ports), Group: group, Params: p})
	t.Nodes[a].Ports = append(t.Nodes[a].Ports, id)
	return id
}

// duplex adds both directions of a link between a and b.
func (t *Topology) duplex(a, b int, group string, p LinkParams) {
	ab, ba := t.link(a, b, group, p), t.link(b, a, group, p)
	t.Links[ab].ToPort, t.Links[ba].ToPort = t.Links[ba].FromPort, t.Links[ab].FromPort
}

// torus builds the 4×4 torus of every group of 16 with the driver's table
// (hwarch.ConnectedDevices: up, left, down, right = SENG columns 0..3);
// n is a multiple of 16 (graph refuses any other count: DevicesRefusal).
func (t *Topology) torus(n int, p LinkParams) error {
	t.Neighbours = make([][]int, n)
	for d := range n {
		nb, err := hwarch.ConnectedDevices(n, d, false)
		if err != nil {
			return err
		}
		t.Neighbours[d] = nb
		for _, x := range nb {
			t.link(d, x, "xy", p)
		}
	}
	t.pairPorts()
	return nil
}

// pairPorts sets each link's ToPort to the port of its reverse link.
func (t *Topology) pairPorts() {
	for i := range t.Links {
		l := &t.Links[i]
		for _, r := range t.Nodes[l.To].Ports {
			if t.Links[r].To == l.From {
				l.ToPort = t.Links[r].FromPort
				break
			}
		}
	}
}

// ultraServer builds 4 nodes of a 16-device torus and joins the devices of
// the same position into a ring of 4 (the Z links).
func (t *Topology) ultraServer(n int, p Params) error {
	if err := t.torus(n, p.XY); err != nil {
		return err
	}
	for d := range n {
		node, pos := d/16, d%16
		for _, nn := range []int{(node + 3) % 4, (node + 1) % 4} {
			t.link(d, nn*16+pos, "z", p.Z)
		}
	}
	t.pairPorts()
	return nil
}

// ring builds a bidirectional ring (or a chain) of any length: each device
// joined to the previous and the next (hwarch.RingNeighbours) — not the
// driver's table for that count, which is the torus's on a multiple of 16.
func (t *Topology) ring(n int, p LinkParams, chain bool) error {
	for d := range n {
		nb, err := hwarch.RingNeighbours(n, d, chain)
		if err != nil {
			return fmt.Errorf("fabric %s: %w: %w", t.Kind, err, ErrTopology)
		}
		for _, x := range nb {
			t.link(d, x, "ring", p)
		}
	}
	t.pairPorts()
	return nil
}

// switched builds the Trn3 NeuronSwitch-v1 fabric (trainium-facts §4): the
// devices of a server on an in-server switch, every device also on the
// inter-server switch; a path between two devices crosses one switch — the
// in-server one inside a server, the inter-server one across servers.
func (t *Topology) switched(n int, p Params) error {
	if p.ServerSize < 1 {
		return fmt.Errorf("fabric switch: server size %d: %w", p.ServerSize, ErrTopology)
	}
	servers := (n + p.ServerSize - 1) / p.ServerSize
	l1 := t.serverSwitches(servers)
	var l2 int
	if servers > 1 {
		l2 = t.addSwitch("l2-sw")
	}
	for d := range n {
		t.duplex(d, l1[d/p.ServerSize], "in-server", p.InServer)
		if servers > 1 {
			t.duplex(d, l2, "inter-server", p.InterServer)
		}
	}
	return nil
}

// route fills the next-hop table by breadth-first search from every device
// backwards, taking ports in order: deterministic shortest paths. Inside a
// server the in-server switch is preferred (it is reached first). adjust,
// if not nil, may then change each block of columns routed: col[x][i] is
// node x's link towards device lo+i (entries at and past the device count
// are unused), before a table of runs (routes) compresses them.
func (t *Topology) route(adjust func(lo int, col [][]int32)) {
	if t.Devices <= denseRoutes {
		t.routeIn(adjust, t.Devices, false)
	} else {
		t.routeIn(adjust, routeBlock, true)
	}
}

// routeIn is route into a table of runs, block destinations at a time,
// or into a dense one (one block of every device).
func (t *Topology) routeIn(adjust func(lo int, col [][]int32), block int, runs bool) {
	nn := len(t.Nodes)
	t.next = routes{}
	if runs {
		t.next.runs = make([][]hopRun, nn)
	} else {
		block = t.Devices
	}
	col := make([][]int32, nn)
	for i := range col {
		col[i] = make([]int32, block)
	}
	// in[x] lists the links into node x, in link order.
	in := make([][]int, nn)
	for id, l := range t.Links {
		in[l.To] = append(in[l.To], id)
	}
	// The searches of the destinations of a block are independent and
	// write distinct columns: they are shared out over the processors,
	// each worker with its own search state and a contiguous share of the
	// block's destinations (so that two workers seldom write one cache
	// line); the table is the same whatever the count.
	workers := max(1, min(runtime.GOMAXPROCS(0), block, t.Devices/routeBlock))
	search := make([]bfsState, workers)
	for w := range search {
		search[w] = bfsState{dist: make([]int, nn), queue: make([]int, 0, nn)}
	}
	for lo := 0; lo < t.Devices; lo += block {
		k := min(block, t.Devices-lo)
		for i := range col {
			for j := range col[i][:k] {
				col[i][j] = -1
			}
		}
		var wg sync.WaitGroup
		for w := range search {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for dst := lo + w*k/workers; dst < lo+(w+1)*k/workers; dst++ {
					search[w].route(t, in, col, dst, lo)
				}
			}()
		}
		wg.Wait()
		if adjust != nil {
			adjust(lo, col)
		}
		if t.next.runs == nil {
			t.next.dense = col // one block: the whole table
			return
		}
		for x := range col {
			t.next.runs[x] = appendRuns(t.next.runs[x], lo, col[x][:k])
		}
	}
	for x := range t.next.runs {
		t.next.runs[x] = slices.Clip(t.next.runs[x])
	}
}

// bfsState is one worker's breadth-first search state, reused from one
// destination to the next (each node enters the queue once per
// destination).
type bfsState struct {
	dist, queue []int
}

// route fills column dst-lo of col: every node's link towards device dst,
// the first link by which the search backwards from dst, taking each
// node's links in (in[x], in link order), reaches it.
func (b *bfsState) route(t *Topology, in [][]int, col [][]int32, dst, lo int) {
	dist := b.dist
	for i := range dist {
		dist[i] = -1
	}
	dist[dst] = 0
	queue := append(b.queue[:0], dst)
	for head := 0; head < len(queue); head++ {
		x := queue[head]
		for _, id := range in[x] {
			from := t.Links[id].From
			if dist[from] >= 0 {
				continue
			}
			dist[from] = dist[x] + 1
			col[from][dst-lo] = int32(id)
			queue = append(queue, from)
		}
	}
	b.queue = queue
}

// ErrDisconnected marks a topology whose devices are not all joined: some
// pair has no path between them. A system of it is refused when it is
// built (New), naming its groups.
var ErrDisconnected = errors.New("devices not all connected")

// Groups returns the topology's devices in groups that its links join
// (through switches or other devices, either direction): every device in
// exactly one group, groups in order of their lowest device, each in
// ascending order. A connected topology is one group.
func (t *Topology) Groups() [][]int {
	nn := len(t.Nodes)
	adj := make([][]int, nn)
	for _, l := range t.Links {
		if l.From >= 0 && l.From < nn && l.To >= 0 && l.To < nn {
			adj[l.From] = append(adj[l.From], l.To)
			adj[l.To] = append(adj[l.To], l.From)
		}
	}
	seen := make([]bool, nn)
	var groups [][]int
	for d := 0; d < t.Devices && d < nn; d++ {
		if seen[d] {
			continue
		}
		var g []int
		seen[d] = true
		queue := []int{d}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			if x < t.Devices {
				g = append(g, x)
			}
			for _, y := range adj[x] {
				if !seen[y] {
					seen[y] = true
					queue = append(queue, y)
				}
			}
		}
		slices.Sort(g)
		groups = append(groups, g)
	}
	return groups
}

// Connected returns nil when every device has a path to every other, else
// an error wrapping ErrDisconnected that names the groups no link joins
// (or the first pair a one-way link leaves without a path back).
func (t *Topology) Connected() error {
	if groups := t.Groups(); len(groups) > 1 {
		why := ""
		if t.Kind == KindTorus2D {
			why = " (the driver's torus table joins the 16 devices of each group, no group to another)"
		}
		return fmt.Errorf("fabric %s: %d devices fall into %d groups with no link between them: %s%s: %w",
			t.Kind, t.Devices, len(groups), t.DescribeGroups(groups), why, ErrDisconnected)
	}
	if !t.next.built() {
		return nil
	}
	for a := range t.Devices {
		missing := -1 // the first device a has no path to
		t.next.each(a, t.Devices, func(lo, hi int, id int32) {
			switch {
			case id >= 0 || missing >= 0:
			case lo != a: // a run of no link: a needs none to itself only
				missing = lo
			case hi > a+1:
				missing = a + 1
			}
		})
		if missing >= 0 {
			return fmt.Errorf("fabric %s: no path from %s to %s: %w", t.Kind, t.Nodes[a].Name, t.Nodes[missing].Name, ErrDisconnected)
		}
	}
	return nil
}

// maxNamedGroups is how many groups Connected's error names.
const maxNamedGroups = 8

// DescribeGroups names groups of devices (as Groups returns them), "; "
// between them, the first maxNamedGroups of them: "neuron0–neuron15;
// neuron16–neuron31". Connected's error and the topology drawing use it.
func (t *Topology) DescribeGroups(groups [][]int) string {
	names := make([]string, 0, min(len(groups), maxNamedGroups)+1)
	for i, g := range groups {
		if i == maxNamedGroups {
			names = append(names, fmt.Sprintf("and %d more", len(groups)-i))
			break
		}
		names = append(names, t.describeGroup(g))
	}
	return strings.Join(names, "; ")
}

// describeGroup names a group of devices by runs: "neuron0–neuron15",
// "neuron3", "neuron0–neuron3, neuron8".
func (t *Topology) describeGroup(g []int) string {
	var parts []string
	for i := 0; i < len(g); {
		j := i
		for j+1 < len(g) && g[j+1] == g[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, t.Nodes[g[i]].Name)
		} else {
			parts = append(parts, t.Nodes[g[i]].Name+"–"+t.Nodes[g[j]].Name)
		}
		i = j + 1
		if len(parts) == maxNamedGroups && i < len(g) {
			parts = append(parts, fmt.Sprintf("and %d more devices", len(g)-i))
			break
		}
	}
	return strings.Join(parts, ", ")
}

// ErrNoPath marks a pair of devices with no path between them.
var ErrNoPath = errors.New("no path between the devices")

// Path returns the links from device src to device dst in order (none when
// src == dst).
func (t *Topology) Path(src, dst int) ([]int, error) {
	if src < 0 || src >= t.Devices || dst < 0 || dst >= t.Devices {
		return nil, fmt.Errorf("fabric path %d → %d: devices are 0..%d: %w", src, dst, t.Devices-1, ErrNoPath)
	}
	var p []int
	for x := src; x != dst; {
		id := t.hop(x, dst)
		if id < 0 || len(p) > len(t.Nodes) {
			return nil, fmt.Errorf("fabric path %s → %s: %w", t.Nodes[src].Name, t.Nodes[dst].Name, ErrNoPath)
		}
		p = append(p, int(id))
		x = t.Links[id].To
	}
	return p, nil
}

// LinkName names a link "neuron0:2→neuron4:0 (xy)", its class as reports
// name it (ClassLabel: "n0-nic0:0→neuron0:4 (dev-nic)").
func (t *Topology) LinkName(id int) string {
	if id < 0 || id >= len(t.Links) {
		return fmt.Sprintf("link %d", id)
	}
	l := t.Links[id]
	return fmt.Sprintf("%s:%d→%s:%d (%s)", t.Nodes[l.From].Name, l.FromPort, t.Nodes[l.To].Name, l.ToPort, ClassLabel(l.Group))
}

// Neighbour returns the device behind device d's B0_s window.
func (t *Topology) Neighbour(d, s int) (int, bool) {
	if d < 0 || d >= len(t.Neighbours) || s < 0 || s >= len(t.Neighbours[d]) {
		return 0, false
	}
	return t.Neighbours[d][s], true
}

// serverSwitches adds one in-server (first-level) switch per server,
// l1-sw0 … l1-sw<servers-1>, and returns their node ids by server.
func (t *Topology) serverSwitches(servers int) []int {
	l1 := make([]int, servers)
	for s := range l1 {
		l1[s] = t.addSwitch(fmt.Sprintf("l1-sw%d", s))
	}
	return l1
}
