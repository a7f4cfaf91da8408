// Package fabricdraw draws a multi-device system's topology (sim/fabric) as
// text, in the spirit of neuron-ls --topology, for neuronsim fabric topo.
// It only reads a fabric.Topology; it is the command line's, kept out of
// the model.
package fabricdraw

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/neuronsim/neuronsim/sim/fabric"
)

// drawWidth is the column at which Draw wraps a long line of devices.
const drawWidth = 100

// Draw writes the topology as text, in the spirit of neuron-ls --topology: a
// header line, then a drawing of the kind —
//
//   - torus2d: a 4×4 grid per group of 16, horizontal links ◄––► between
//     columns with the wrap-around drawn as *––► and ◄––* at the row ends,
//     vertical links ▲ over ▼ between rows and * above the first and below
//     the last row, then the xy link parameters and the B0_s legend;
//   - ultraserver: the four instances' grids (trn2u, trainium-facts §4) as
//     torus2d, then the Z rings;
//   - ring, chain: the devices on one line (wrapped near 100 columns), a
//     ring with * wrap markers at both ends;
//   - switch, trn3-gen2: a block per server with its in-server switch and
//     devices, and the inter-server switch when there are several servers;
//   - trn3-gen1: as switch, then the direct inter-rack links between
//     devices, as runs ("0..31 ◄––► 32..63");
//   - fully-connected: a summary line and, up to 16 devices, an adjacency
//     matrix (row → column) with · on the diagonal and ● for a link;
//   - star: the switch and its devices;
//   - a system of several nodes (fabric.BuildNodes): node 0 drawn as its
//     kind, the other nodes named as its copies, then the EFA network —
//     each node's NICs and their devices, the leaves and their NICs, the
//     spines, and the parameters of the NIC, leaf and spine links.
//
// A topology whose devices are not all joined says so after the header,
// naming its groups. Every arrow is drawn from the links the topology holds (► or ▼ for a
// link towards the right or down, ◄ or ▲ for one towards the left or up),
// so a missing direction shows as a gap. The output is deterministic. Draw
// returns the writer's error; a nil or malformed topology or an unknown
// kind is an error.
func Draw(w io.Writer, t *fabric.Topology) error {
	if t == nil {
		return errors.New("fabric draw: nil topology")
	}
	if err := drawCheck(t); err != nil {
		return err
	}
	d := &drawer{t: t}
	d.width = max(2, len(strconv.Itoa(max(t.Devices-1, 0))))
	switches, nics := 0, 0
	for _, n := range t.Nodes {
		switch n.Kind {
		case fabric.NodeSwitch:
			switches++
		case fabric.NodeNIC:
			nics++
		}
	}
	nicText := ""
	if nics > 0 {
		nicText = ", " + plural(nics, "NIC", "NICs")
	}
	d.printf("topology: %s, %s, %s%s, %s\n", t.Kind,
		plural(t.Devices, "device", "devices"), plural(switches, "switch", "switches"), nicText,
		plural(len(t.Links), "directed link", "directed links"))
	if groups := t.Groups(); len(groups) > 1 {
		d.printf("not connected: %d groups with no link between them (%s); a system of it is refused\n",
			len(groups), t.DescribeGroups(groups))
	}
	if t.Scale != nil {
		d.scaleOut()
	} else {
		d.body()
	}
	n, err := io.WriteString(w, d.b.String())
	if err == nil && n < d.b.Len() {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("fabric draw: %w", err)
	}
	return nil
}

// body draws the topology by its kind.
func (d *drawer) body() {
	t := d.t
	switch t.Kind {
	case fabric.KindTorus2D:
		d.torus("group")
	case fabric.KindUltraServer:
		d.torus("instance") // trn2u instances: "node" is a system's copy (--nodes)
		d.zRings()
	case fabric.KindRing, fabric.KindChain:
		d.ring()
	case fabric.KindSwitch, fabric.KindTrn3Gen2:
		d.switched()
	case fabric.KindTrn3Gen1:
		d.switched()
		d.interRack()
	case fabric.KindFullyConnected:
		d.fullyConnected()
	case fabric.KindStar:
		d.star()
	}
}

// drawCheck rejects what Draw cannot draw: an unknown kind, a device count
// the kind cannot have, links to nodes that do not exist.
func drawCheck(t *fabric.Topology) error {
	if t.Scale != nil {
		if t.Scale.Base == nil || t.Scale.Base.Scale != nil {
			return fmt.Errorf("fabric draw: a system of nodes without a node topology: %w", fabric.ErrTopology)
		}
		if err := drawCheck(t.Scale.Base); err != nil { // the kind is a node's
			return err
		}
		return drawLinks(t)
	}
	switch t.Kind {
	case fabric.KindTorus2D, fabric.KindRing, fabric.KindChain, fabric.KindSwitch, fabric.KindFullyConnected, fabric.KindStar,
		fabric.KindTrn3Gen1, fabric.KindTrn3Gen2:
	case fabric.KindUltraServer:
		if t.Devices != 64 {
			return fmt.Errorf("fabric draw: ultraserver of %d devices (64): %w", t.Devices, fabric.ErrTopology)
		}
	default:
		return fmt.Errorf("fabric draw: topology %s: %w", t.Kind, fabric.ErrUnknownKind)
	}
	if t.Devices < 0 || t.Devices > len(t.Nodes) {
		return fmt.Errorf("fabric draw: %d devices but %d nodes: %w", t.Devices, len(t.Nodes), fabric.ErrTopology)
	}
	if t.Kind == fabric.KindTorus2D && t.Devices%16 != 0 {
		return fmt.Errorf("fabric draw: torus2d of %d devices (a multiple of 16): %w", t.Devices, fabric.ErrTopology)
	}
	return drawLinks(t)
}

// drawLinks rejects links to nodes that do not exist.
func drawLinks(t *fabric.Topology) error {
	for id, l := range t.Links {
		if l.From < 0 || l.From >= len(t.Nodes) || l.To < 0 || l.To >= len(t.Nodes) {
			return fmt.Errorf("fabric draw: link %d joins nodes %d and %d of %d: %w", id, l.From, l.To, len(t.Nodes), fabric.ErrTopology)
		}
	}
	return nil
}

// drawer accumulates a drawing; Draw writes it at once.
type drawer struct {
	t      *fabric.Topology
	b      strings.Builder
	links  map[[2]int]bool   // directed links present, by (from, to) node; built by has
	width  int               // of a device number
	params map[string]string // groupParams, by group
}

func (d *drawer) printf(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

// line writes s without trailing blanks and a newline.
func (d *drawer) line(s string) {
	d.b.WriteString(strings.TrimRight(s, " "))
	d.b.WriteByte('\n')
}

// has reports whether the topology holds the directed link a→b.
func (d *drawer) has(a, b int) bool {
	if d.links == nil {
		d.links = make(map[[2]int]bool, len(d.t.Links))
		for _, l := range d.t.Links {
			d.links[[2]int{l.From, l.To}] = true
		}
	}
	return d.links[[2]int{a, b}]
}

func (d *drawer) cell(dev int) string { return fmt.Sprintf("%*d", d.width, dev) }

// link draws the link between a (left) and b (right): ◄ for b→a, ► for
// a→b.
func (d *drawer) link(a, b int) string {
	l, r := d.has(b, a), d.has(a, b)
	return pick(l, "◄", " ") + pick(l || r, "––", "  ") + pick(r, "►", " ")
}

// wraps draws the wrap-around markers of a row or ring from first to last:
// *––► for last→first, ◄––* for first→last. Two devices have no wrap-around
// distinct from their link.
func (d *drawer) wraps(first, last, n int) (left, right string) {
	left, right = "    ", "    "
	if n > 2 && d.has(last, first) {
		left = "*––►"
	}
	if n > 2 && d.has(first, last) {
		right = "◄––*"
	}
	return left, right
}

// torus draws the 4×4 grid of every group of 16 devices, titled
// "<title> g", then the xy links and the B0_s legend.
func (d *drawer) torus(title string) {
	const indent = "  "
	// The last digit of column c's device number sits at rune col(c) of a
	// row: the left marker and a blank, then per column the number, a blank,
	// the link and a blank.
	col := func(c int) int { return len(indent) + 5 + c*(d.width+6) + d.width - 1 }
	vertical := func(mark func(c int) bool, r rune) {
		line := []rune(strings.Repeat(" ", col(3)+1))
		for c := range 4 {
			if mark(c) {
				line[col(c)] = r
			}
		}
		d.line(string(line))
	}
	for g := range d.t.Devices / 16 {
		at := func(r, c int) int { return 16*g + 4*r + c }
		d.printf("%s %d: devices %d..%d\n", title, g, at(0, 0), at(3, 3))
		vertical(func(c int) bool { return d.has(at(3, c), at(0, c)) }, '*')
		vertical(func(c int) bool { return d.has(at(3, c), at(0, c)) }, '▼')
		for r := range 4 {
			left, right := d.wraps(at(r, 0), at(r, 3), 4)
			row := indent + left
			for c := range 4 {
				if c > 0 {
					row += " " + d.link(at(r, c-1), at(r, c))
				}
				row += " " + d.cell(at(r, c))
			}
			d.line(row + " " + right)
			up := func(c int) bool { return d.has(at((r+1)%4, c), at(r, c)) }
			vertical(up, '▲')
			if r < 3 {
				vertical(func(c int) bool { return d.has(at(r, c), at(r+1, c)) }, '▼')
			} else {
				vertical(up, '*')
			}
		}
		d.line("")
	}
	d.line(d.groupLine("xy"))
	if len(d.t.Neighbours) > 0 {
		d.line("B0_s column = SENG s: up, left, down, right")
	}
}

// zRings draws the UltraServer's Z rings: compactly when every position's
// ring of four is complete, else each ring.
func (d *drawer) zRings() {
	ring := func(p int) []int { return []int{p, p + 16, p + 32, p + 48} }
	complete := true
	for p := range 16 {
		m := ring(p)
		for i := range m {
			a, b := m[i], m[(i+1)%4]
			complete = complete && d.has(a, b) && d.has(b, a)
		}
	}
	d.line("")
	if complete {
		d.line("z rings: device p of each instance joins p, p+16, p+32, p+48 in a ring (16 rings), e.g.")
		d.chain(ring(0), true, "  ")
	} else {
		d.line("z rings, one per position:")
		for p := range 16 {
			d.chain(ring(p), true, "  ")
		}
	}
	d.line(d.groupLine("z"))
}

// chain draws the devices in order, after indent, with the wrap-around
// markers of a ring; when the line would pass drawWidth columns it is
// broken into lines of as even a length as fit, each but the last ending in
// a link and the next starting under the first device.
func (d *drawer) chain(devs []int, ring bool, indent string) {
	n := len(devs)
	if n == 0 {
		return
	}
	ring = ring && n > 2 // two devices have no wrap-around apart from their link
	var left, right string
	if ring {
		left, right = d.wraps(devs[0], devs[n-1], n)
	}
	// A device is " " + its number + " " + the link or marker after it;
	// a ring's line starts with a marker (or blanks under it), a chain's
	// without the first blank.
	per, room := d.width+6, drawWidth-len(indent)
	if ring {
		room -= 4
	} else {
		room++
	}
	fit := max(1, room/per)
	lines := (n + fit - 1) / fit
	fit = (n + lines - 1) / lines
	for start := 0; start < n; start += fit {
		var parts []string
		switch {
		case ring && start == 0:
			parts = append(parts, left)
		case ring:
			parts = append(parts, "    ")
		}
		for i := start; i < min(start+fit, n); i++ {
			parts = append(parts, d.cell(devs[i]))
			if i+1 < n {
				parts = append(parts, d.link(devs[i], devs[i+1]))
			} else if ring {
				parts = append(parts, right)
			}
		}
		d.line(indent + strings.Join(parts, " "))
	}
}

// ring draws a ring or a chain of all the devices.
func (d *drawer) ring() {
	devs := make([]int, d.t.Devices)
	for i := range devs {
		devs[i] = i
	}
	d.chain(devs, d.t.Kind == fabric.KindRing, "")
	d.line(d.groupLine("ring"))
}

// attached returns, per switch node, the devices linked to it (either
// way) by links of the group, sorted.
func (d *drawer) attached(group string) map[int][]int {
	seen := make(map[[2]int]bool)
	out := make(map[int][]int)
	for _, l := range d.t.Links {
		if l.Group != group {
			continue
		}
		for _, e := range [][2]int{{l.From, l.To}, {l.To, l.From}} {
			if d.t.Nodes[e[0]].Kind == fabric.NodeSwitch && e[1] < d.t.Devices && !seen[e] {
				seen[e] = true
				out[e[0]] = append(out[e[0]], e[1])
			}
		}
	}
	for _, devs := range out {
		slices.Sort(devs)
	}
	return out
}

// switched draws a block per in-server switch (one per server): its
// devices and the inter-server switches they also link to.
func (d *drawer) switched() {
	in, inter := d.attached("in-server"), d.attached("inter-server")
	onInter := make(map[int]map[int]bool, len(inter))
	for sw, devs := range inter {
		onInter[sw] = make(map[int]bool, len(devs))
		for _, dev := range devs {
			onInter[sw][dev] = true
		}
	}
	server := 0
	onServer := make(map[int]bool)
	for i, n := range d.t.Nodes {
		devs := in[i]
		if len(devs) == 0 {
			continue
		}
		d.printf("server %d — in-server switch %s (in-server links: %s)\n", server, n.Name, d.groupParams("in-server"))
		d.printf("  devices %s\n", ranges(devs))
		for _, dev := range devs {
			onServer[dev] = true
		}
		for sw := range d.t.Nodes {
			if onInter[sw] == nil {
				continue
			}
			var also []int
			for _, dev := range devs {
				if onInter[sw][dev] {
					also = append(also, dev)
				}
			}
			switch {
			case len(also) == len(devs):
				d.printf("  every device also links to %s (inter-server links: %s)\n", d.t.Nodes[sw].Name, d.groupParams("inter-server"))
			case len(also) > 0:
				d.printf("  devices %s also link to %s (inter-server links: %s)\n", ranges(also), d.t.Nodes[sw].Name, d.groupParams("inter-server"))
			}
		}
		server++
	}
	var alone []int
	for dev := range d.t.Devices {
		if !onServer[dev] {
			alone = append(alone, dev)
		}
	}
	if len(alone) > 0 {
		d.printf("devices on no in-server switch: %s\n", ranges(alone))
	}
}

// interRack lists the direct links between devices of the inter-rack
// group, each pair once, as runs of the same offset: "0..31 ◄––► 32..63".
func (d *drawer) interRack() {
	type run struct{ a0, a1, b0 int }
	var runs []run
	seen := make(map[[2]int]bool)
	for _, l := range d.t.Links {
		a, b := min(l.From, l.To), max(l.From, l.To)
		if l.Group != "inter-rack" || b >= d.t.Devices || seen[[2]int{a, b}] {
			continue
		}
		seen[[2]int{a, b}] = true
		if k := len(runs) - 1; k >= 0 && runs[k].a1+1 == a && runs[k].b0+(a-runs[k].a0) == b {
			runs[k].a1 = a
			continue
		}
		runs = append(runs, run{a, a, b})
	}
	if len(runs) == 0 {
		d.line("no inter-rack links")
		return
	}
	d.printf("direct inter-rack links (%s per direction), device ◄––► device:\n", d.groupParams("inter-rack"))
	for _, r := range runs {
		if r.a0 == r.a1 {
			d.printf("  %d ◄––► %d\n", r.a0, r.b0)
		} else {
			d.printf("  %d..%d ◄––► %d..%d, in order\n", r.a0, r.a1, r.b0, r.b0+r.a1-r.a0)
		}
	}
}

// fullyConnected summarises the links and, up to 16 devices, draws the
// adjacency matrix.
func (d *drawer) fullyConnected() {
	n := d.t.Devices
	if n < 2 {
		d.printf("a single device, no links\n")
		return
	}
	linked := make([]bool, n*n)
	pairs := 0
	for _, l := range d.t.Links {
		if a, b := l.From, l.To; a < n && b < n && a != b && !linked[a*n+b] {
			linked[a*n+b] = true
			pairs++
		}
	}
	if missing := n*(n-1) - pairs; missing == 0 {
		d.printf("every pair of the %d devices linked directly (%d·(%d−1) = %d directed links, %s)\n",
			n, n, n, n*(n-1), d.groupParams("link"))
	} else {
		d.printf("the %d devices are linked directly except for %d of the %d·(%d−1) = %d directed pairs (%s)\n",
			n, missing, n, n, n*(n-1), d.groupParams("link"))
	}
	if n > 16 {
		return
	}
	d.line("")
	row := "  " + strings.Repeat(" ", d.width) + " →"
	for b := range n {
		row += " " + d.cell(b)
	}
	d.line(row)
	for a := range n {
		row := "  " + d.cell(a) + "  "
		for b := range n {
			mark := pick(linked[a*n+b], "●", " ")
			if a == b {
				mark = "·"
			}
			row += " " + strings.Repeat(" ", d.width-1) + mark
		}
		d.line(row)
	}
	d.line("(row → column: ● a direct link)")
}

// star draws every switch with its devices.
func (d *drawer) star() {
	link := d.attached("link")
	for i, n := range d.t.Nodes {
		if n.Kind != fabric.NodeSwitch {
			continue
		}
		devs := link[i]
		d.printf("switch %s ◄––► devices %s (%d)\n", n.Name, ranges(devs), len(devs))
	}
	d.line(d.groupLine("link"))
}

// groupLine is "<group> links: <params> per direction" ("links: …" for
// the α-β group "link").
func (d *drawer) groupLine(group string) string {
	name := fabric.ClassLabel(group) + " links"
	if group == "link" {
		name = "links"
	}
	if p := d.groupParams(group); p != "none" {
		return fmt.Sprintf("%s: %s per direction", name, p)
	}
	return "no " + name
}

// groupParams formats the distinct parameters of a link group, in link
// order: "256 GB/s, 500 ns"; several are joined by "; ".
func (d *drawer) groupParams(group string) string {
	if s, ok := d.params[group]; ok {
		return s
	}
	if d.params == nil {
		d.params = make(map[string]string)
	}
	var seen []fabric.LinkParams
	for _, l := range d.t.Links {
		if l.Group != group {
			continue
		}
		dup := false
		for _, p := range seen {
			dup = dup || p == l.Params
		}
		if !dup {
			seen = append(seen, l.Params)
		}
	}
	parts := make([]string, len(seen))
	for i, p := range seen {
		parts[i] = fmt.Sprintf("%s, %s", formatBandwidth(p.Bandwidth), formatLatency(p.Latency))
	}
	s := strings.Join(parts, "; ")
	if len(seen) == 0 {
		s = "none"
	}
	d.params[group] = s
	return s
}

// formatBandwidth writes bytes/s in GB/s (1e9 B/s) exactly: a bandwidth is
// a whole number of bytes per second, so its GB/s takes at most nine
// decimals, each written, trailing zeros dropped (as formatLatency writes a
// latency to the picosecond); and the GiB/s when that is whole and the GB/s
// is not: "103.079215104 GB/s (96 GiB/s)". Rounded to two decimals, 0.015
// GB/s (--link-bw 0.015GB/s) once read "0.01 GB/s" and 99.999 GB/s "100 GB/s".
func formatBandwidth(bw uint64) string {
	s := strconv.FormatUint(bw/1e9, 10)
	if frac := bw % 1e9; frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%09d", frac), "0")
		if bw%(1<<30) == 0 {
			return fmt.Sprintf("%s GB/s (%d GiB/s)", s, bw>>30)
		}
	}
	return s + " GB/s"
}

// formatLatency writes picoseconds in ns, up to picosecond precision.
func formatLatency(ps uint64) string {
	if ps%1000 == 0 {
		return fmt.Sprintf("%d ns", ps/1000)
	}
	return trimZeros(strconv.FormatFloat(float64(ps)/1000, 'f', 3, 64)) + " ns"
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// ranges writes sorted device numbers as runs: "0..15", "0..3, 5, 7..9".
func ranges(devs []int) string {
	var parts []string
	for i := 0; i < len(devs); {
		j := i
		for j+1 < len(devs) && devs[j+1] == devs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d..%d", devs[i], devs[j]))
		} else {
			parts = append(parts, strconv.Itoa(devs[i]))
		}
		i = j + 1
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func pick(c bool, yes, no string) string {
	if c {
		return yes
	}
	return no
}
