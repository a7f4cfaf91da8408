package fabric

import (
	"fmt"
	"strings"
)

// ClassLabel returns the name reports give the links of group g (Link.Group)
// — the link utilisation table's classes, fabric topo's link lines: the
// group itself, but for the EFA network's, named by the two ends they
// join: "dev-nic" (a device's link to its EFA NIC), "nic-leaf" (a NIC's
// port to its leaf switch, which carries the NIC's own bandwidth: where a
// NIC is the limit, as the two devices of a Trn1 NIC are, it is this
// class that is busiest) and "leaf-spine" (a leaf's uplink to a spine).
// Once the report called them "efa-nic", "efa-leaf" and "efa-spine", and a
// Trn1 node's busy NICs read as a busy leaf switch.
func ClassLabel(g string) string {
	switch g {
	case "efa-nic":
		return "dev-nic"
	case "efa-leaf":
		return "nic-leaf"
	case "efa-spine":
		return "leaf-spine"
	}
	return g
}

// ClassLegend returns what each class of link of the topology is, in
// link order, each once, as "label = what it is" joined by "; " (for a
// report's note): on the system the topology is — the torus's XY links,
// an UltraServer's Z ring, a Trn3 server's switch links (a Gen2
// UltraServer's inter-server links each to one of its two second-level
// switches), and over several nodes the EFA network's, with how many
// devices share a NIC.
func (t *Topology) ClassLegend() string {
	seen := map[string]bool{}
	var out []string
	for _, l := range t.Links {
		if seen[l.Group] {
			continue
		}
		seen[l.Group] = true
		out = append(out, ClassLabel(l.Group)+" = "+t.classWhat(l.Group))
	}
	return strings.Join(out, "; ")
}

// classWhat says what the links of group g of the topology join.
func (t *Topology) classWhat(g string) string {
	kind := t.Kind
	perNIC := 0
	if t.Scale != nil {
		kind = t.Scale.Base.Kind
		perNIC = t.Scale.p.DevicesPerNIC
	}
	shared, per := "one device a NIC", "one device a NIC"
	if perNIC > 1 {
		shared = fmt.Sprintf("shared by the NIC's %d devices", perNIC)
		per = fmt.Sprintf("%d devices a NIC, each with a link of its own", perNIC)
	}
	switch g {
	case "xy":
		return "a torus link between neighbour devices of a node (NeuronLink)"
	case "z":
		return "an UltraServer Z-ring link between the same-position devices of its instances"
	case "ring":
		if kind == KindChain {
			return "a chain link between neighbour devices"
		}
		return "a ring link between neighbour devices"
	case "in-server":
		if kind == KindTrn3Gen2 {
			return "a device's link to its server's first-level switch"
		}
		return "a device's link to its server's in-server switch"
	case "inter-server":
		if kind == KindTrn3Gen2 {
			return "a device's link to one of the two second-level switches"
		}
		return "a device's link to the inter-server switch"
	case "inter-rack":
		return "a direct link to the same-position device of the other rack"
	case "link":
		return "an α-β link"
	case "efa-nic":
		return "a device's link to its EFA NIC (" + per + ")"
	case "efa-leaf":
		return "an EFA NIC's port to its leaf switch: the NIC's own bandwidth, " + shared
	case "efa-spine":
		return "a leaf switch's uplink to a spine switch"
	}
	return "links of group " + g
}
