package fabricdraw

import (
	"fmt"
	"strings"

	"github.com/neuronsim/neuronsim/sim/fabric"
)

// maxLeafLines is how many leaves the drawing of an EFA network lists one
// by one; the rest are counted.
const maxLeafLines = 16

// scaleOut draws a system of several nodes: node 0 as its kind, the other
// nodes as its copies, then the EFA network.
func (d *drawer) scaleOut() {
	so := d.t.Scale
	e := so.Params()
	nd := so.NodeDevices
	d.printf("%s of %s (%s) joined by EFA: %s network, %s per node (%s a NIC), %s of %s, %s, oversubscription %s:1\n",
		plural(so.Nodes, "node", "nodes"), plural(nd, "device", "devices"), d.t.Kind, networkName(so.Network),
		plural(so.NICs, "NIC", "NICs"), plural(e.DevicesPerNIC, "device", "devices"), plural(so.Leaves, "leaf", "leaves"), plural(e.LeafPorts, "port", "ports"),
		plural(so.Spines, "spine", "spines"), trimZeros(fmt.Sprintf("%.3f", e.Oversubscription)))
	d.line("")
	d.printf("node 0: devices 0..%d\n", nd-1)
	sub := &drawer{t: so.Base, width: d.width}
	sub.body()
	d.b.WriteString(sub.b.String())
	if so.Nodes == 2 {
		d.printf("node 1: a copy of node 0 (devices %d..%d; its switches are named n1-…)\n", nd, 2*nd-1)
	} else {
		d.printf("nodes 1..%d: copies of node 0 (node m holds devices m·%d .. m·%d+%d; its switches are named n<m>-…)\n", so.Nodes-1, nd, nd, nd-1)
	}
	d.line("")
	// Each node's NICs: the local devices on each (the same in every node).
	per := e.DevicesPerNIC
	if per == 1 {
		d.printf("NICs of each node m: n<m>-nic<k> ◄––► its local device k (k = 0..%d), e.g. n0-nic0 ◄––► neuron0\n", so.NICs-1)
	} else {
		d.printf("NICs of each node m: n<m>-nic<k> ◄––► its local devices %d·k .. %d·k+%d (k = 0..%d), e.g. n0-nic0 ◄––► neuron0..neuron%d\n", per, per, per-1, so.NICs-1, per-1)
	}
	d.line(d.groupLine("efa-nic"))
	d.line("")
	// Leaves and their NICs.
	byLeaf := make([][]string, so.Leaves)
	for m := range so.Nodes {
		for k := range so.NICs {
			leaf := so.LeafOf(m, k)
			byLeaf[leaf] = append(byLeaf[leaf], fmt.Sprintf("n%d-nic%d", m, k))
		}
	}
	d.printf("leaves:\n")
	for i, nics := range byLeaf {
		if i == maxLeafLines {
			d.printf("  … and %d more leaves\n", so.Leaves-i)
			break
		}
		d.printf("  %s ◄––► %s (%s)\n", d.t.Nodes[so.Leaf(i)].Name, summarise(nics), plural(len(nics), "NIC", "NICs"))
	}
	d.line(d.groupLine("efa-leaf"))
	if so.Spines == 0 {
		d.line("no spines (one leaf)")
		return
	}
	d.line("")
	names := make([]string, so.Spines)
	for i := range names {
		names[i] = d.t.Nodes[so.Spine(i)].Name
	}
	switch {
	case so.Spines == 1:
		d.printf("spines: %s ◄––► every leaf\n", summarise(names))
	case so.Params().Routing == fabric.RouteFixed:
		d.printf("spines: %s ◄––► every leaf; fixed routing: a leaf sends a write up to spine p mod %d, p the destination NIC's port on its leaf\n", summarise(names), so.Spines)
	case so.Params().Routing == fabric.RouteAdaptive:
		d.printf("spines: %s ◄––► every leaf; adaptive routing: a leaf sends a write up to the spine whose link from it is booked until the earliest time, the NIC's turn among equals, from its port on its leaf mod %d\n", summarise(names), so.Spines)
	default:
		d.printf("spines: %s ◄––► every leaf; sprayed: each NIC sends its writes across the spines to them in turn, from its port on its leaf mod %d\n", summarise(names), so.Spines)
	}
	d.line(d.groupLine("efa-spine"))
	d.spineLinksByLeaf(byLeaf)
}

// spineLinksByLeaf says, when the leaves' links to the spines differ (a
// leaf's carry its NICs' bandwidth / oversubscription / spines, and the
// last leaf may hold fewer NICs), which leaves have which.
func (d *drawer) spineLinksByLeaf(byLeaf [][]string) {
	so := d.t.Scale
	type kind struct {
		nics int
		p    fabric.LinkParams
	}
	var kinds []kind
	leaves := map[kind][]string{}
	for i, nics := range byLeaf {
		leaf := so.Leaf(i)
		for _, l := range d.t.Links {
			if l.From == leaf && l.Group == "efa-spine" {
				k := kind{len(nics), l.Params}
				if _, ok := leaves[k]; !ok {
					kinds = append(kinds, k)
				}
				leaves[k] = append(leaves[k], d.t.Nodes[leaf].Name)
				break
			}
		}
	}
	if len(kinds) < 2 {
		return
	}
	for _, k := range kinds {
		d.printf("  %s up from %s (%s each)\n", formatBandwidth(k.p.Bandwidth), summarise(leaves[k]), plural(k.nics, "NIC", "NICs"))
	}
}

// networkName is the EFA network's name in prose.
func networkName(n fabric.EFANetwork) string {
	if n == fabric.RailOptimised {
		return "rail-optimised"
	}
	return n.String()
}

// summarise joins names, the first 8 and the last when there are more.
func summarise(names []string) string {
	if len(names) <= 9 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:8], ", ") + fmt.Sprintf(", … (%d more), ", len(names)-9) + names[len(names)-1]
}
