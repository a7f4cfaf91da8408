package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// The ring order: the runtime lays its rings along physical links ("Ring:
// multiple disjoint rings in parallel to fill links", "Permute must form a
// ring over physically adjacent ranks", trainium-facts §5.1), so the
// cluster, which knows the topology and where each rank sits, gives the
// collectives (enc.Options.RingOrder) a cycle through the devices along
// their direct links wherever one exists: on a 4×4 torus the boustrophedon
// 0-3 7-4 8-11 15-12, where rank order's 3→4, 7→8, 11→12 and 15→0 are two
// hops each and share links with the ring's other edges (docs/fabric.md
// §Ring order).

// RingOrder is the order a cluster's collectives run their rings through
// the ranks (enc.Options.RingOrder), and what a report says of it.
type RingOrder struct {
	// Ranks is the order; nil is rank order 0, 1, …, r−1.
	Ranks []int
	// Devices is a node's devices in the order the ring visits them (nil
	// in index order).
	Devices []int
	// Note says what the order is and how it was found, or why a topology
	// of direct links runs its rings in rank order; "" when rank order is
	// itself a cycle along the links (a ring, every pair linked) or the
	// devices meet through switches (every pair one switch path apart).
	Note string
}

// maxCycleSearch bounds the search for a cycle through the devices
// (deviceCycle): on the systems' topologies (a torus, the UltraServer, a
// ring) the first path tried closes; a graph that holds none and is not
// refused by the quick checks falls back to rank order.
const maxCycleSearch = 1 << 18

// RingOrder returns the order of the cluster's rings (RingOrder): a
// cycle through a node's devices along their direct links
// (fabric.DeviceLinks; over several nodes turned the way that keeps the
// flat ring's crossings on one NIC, orient), each device's ranks one
// after another (rank r is NC r mod RanksPerDevice of device r /
// RanksPerDevice), the nodes one after another (their devices are
// numbered node by node); rank order on switched topologies, where every
// pair of devices is one switch path apart, and where no such cycle is
// found (Note says why).
func (cfg Config) RingOrder() RingOrder {
	nodes := max(cfg.Nodes, 1)
	if cfg.Devices < 1 || cfg.Devices%nodes != 0 {
		return RingOrder{}
	}
	nd := cfg.Devices / nodes
	kind := cfg.Kind
	if kind == fabric.KindAuto {
		kind = fabric.AutoKind(cfg.Generation, nd)
	}
	if kind.HasSwitches() || kind == fabric.KindFullyConnected {
		return RingOrder{} // rank order is as good as any: one switch path apart, or one link
	}
	p := fabric.DefaultParamsOf(cfg.Generation, cfg.DeviceID)
	if cfg.Params != nil {
		p = *cfg.Params
	}
	links, err := fabric.DeviceLinks(kind, cfg.Generation, nd, p)
	var cycle []int
	if err == nil {
		cycle, err = deviceCycle(links)
	}
	if err != nil {
		return RingOrder{Note: fmt.Sprintf("rank order: no cycle through the %d devices of the %s along their links (%v), so the ring closes through other devices",
			nd, kind, err)}
	}
	rpd := max(cfg.RanksPerDevice, 1)
	turned := cfg.orient(cycle, rpd)
	if isRankOrder(turned) {
		return RingOrder{}
	}
	ranks := make([]int, 0, cfg.Devices*rpd)
	for m := range nodes {
		for _, d := range turned {
			for nc := range rpd {
				ranks = append(ranks, (m*nd+d)*rpd+nc)
			}
		}
	}
	how := fmt.Sprintf("a cycle through the %d devices along the %s's links", nd, kind)
	if !slices.Equal(turned, cycle) {
		how += ", the way round that keeps the flat ring's crossings between nodes on one NIC"
	}
	if rpd > 1 {
		how += ", each device's ranks one after another"
	}
	if nodes > 1 {
		how += ", node after node"
	}
	return RingOrder{Ranks: ranks, Devices: turned, Note: FormatOrder(ranks) + ": " + how}
}

// orient returns a node's device cycle, or the same cycle the other way
// round from its first device, whichever puts more of the flat ring's
// crossings between nodes on one NIC: with one channel per NIC
// (NodeNICs, CollectiveOptions' default), channel c leaves a node from
// the rank at position c·G/K − 1 for the one at c·G/K of the next (G a
// node's ranks, K its NICs; enc.Options.Channels), and in a rail-optimised
// network a write leaves through a NIC on the destination's rail — with
// two devices a NIC (Trn1), the writer's own when the two share one,
// without a hop inside the node first. On the torus the boustrophedon
// 0-3 7-4 … crosses between NICs at every channel, its reverse 0 12-15
// 11-8 … within one (1–3 % off a 2- or 4-node trn1.32xlarge flat ring,
// 5 % against the boustrophedon). One device a NIC, or one node: cycle.
func (cfg Config) orient(cycle []int, rpd int) []int {
	nics := cfg.NodeNICs()
	if nics < 1 || len(cycle) < 3 || len(cycle)/nics < 2 {
		return cycle
	}
	perNIC := len(cycle) / nics
	shared := func(c []int) int {
		g, n := len(c)*rpd, 0
		for ch := range nics {
			first := ch * g / nics
			if c[(first+g-1)%g/rpd]/perNIC == c[first/rpd]/perNIC {
				n++
			}
		}
		return n
	}
	back := append([]int{cycle[0]}, cycle[1:]...)
	slices.Reverse(back[1:])
	if shared(back) > shared(cycle) {
		return back
	}
	return cycle
}

// isRankOrder reports whether order is 0, 1, …, n−1.
func isRankOrder(order []int) bool {
	for k, v := range order {
		if v != k {
			return false
		}
	}
	return true
}

// deviceCycle returns a cycle through every device of a graph of direct
// links (links[d]: the devices d has a link to), from device 0: each
// device linked to the next and the last to device 0. It searches depth
// first, trying first the neighbour nearest in index (then the lower),
// which on a ring gives rank order and on the 4×4 torus, row by row, the
// boustrophedon 0-3 7-4 8-11 15-12 without backing up once; it gives up
// after maxCycleSearch steps. The error says why there is none: a device
// with fewer than two links, devices with no path between them, or none
// found.
func deviceCycle(links [][]int) ([]int, error) {
	n := len(links)
	if n == 1 {
		return []int{0}, nil
	}
	for d, nb := range links {
		if len(nb) < min(2, n-1) {
			return nil, fmt.Errorf("device %d has %s", d, units.Plural(int64(len(nb)), "link", "links"))
		}
	}
	if reached := reach(links); reached < n {
		return nil, fmt.Errorf("device 0 reaches %d of the %d devices", reached, n)
	}
	on := make([]bool, n)
	path, next := []int{0}, [][]int{nil}
	on[0] = true
	next[0] = candidates(links, 0, on)
	for range maxCycleSearch {
		k := len(path) - 1
		if len(path) == n && slices.Contains(links[path[k]], 0) {
			return path, nil
		}
		if len(path) < n && len(next[k]) > 0 {
			v := next[k][0]
			next[k] = next[k][1:]
			on[v] = true
			path, next = append(path, v), append(next, candidates(links, v, on))
			continue
		}
		on[path[k]] = false // a dead end: back up
		path, next = path[:k], next[:k]
		if k == 0 {
			return nil, errors.New("no path through every device closes on device 0")
		}
	}
	return nil, fmt.Errorf("none found in %d steps of search", maxCycleSearch)
}

// candidates returns the devices linked from d not on the path (on), the
// nearest in index first, then the lower.
func candidates(links [][]int, d int, on []bool) []int {
	var out []int
	for _, v := range links[d] {
		if !on[v] {
			out = append(out, v)
		}
	}
	dist := func(v int) int { return max(v-d, d-v) }
	slices.SortFunc(out, func(a, b int) int {
		if da, db := dist(a), dist(b); da != db {
			return da - db
		}
		return a - b
	})
	return out
}

// reach returns how many devices device 0 reaches along the links.
func reach(links [][]int) int {
	seen := make([]bool, len(links))
	seen[0] = true
	queue, n := []int{0}, 1
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, v := range links[d] {
			if !seen[v] {
				seen[v] = true
				queue = append(queue, v)
				n++
			}
		}
	}
	return n
}

// FormatOrder writes a ring order compactly: runs of three or more ranks
// counting up or down by one as "first-last" ("0-3 7-4 8-11 15-12" is
// 0 1 2 3 7 6 5 4 8 …), other ranks one by one, space-separated.
func FormatOrder(order []int) string {
	var sb strings.Builder
	for i := 0; i < len(order); {
		j := i + 1
		if j < len(order) {
			if step := order[j] - order[i]; step == 1 || step == -1 {
				for j+1 < len(order) && order[j+1]-order[j] == step {
					j++
				}
				j++
			}
		}
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		switch n := j - i; {
		case n >= 3:
			fmt.Fprintf(&sb, "%d-%d", order[i], order[j-1])
		case n == 2:
			fmt.Fprintf(&sb, "%d %d", order[i], order[i+1])
		default:
			sb.WriteString(strconv.Itoa(order[i]))
		}
		i = j
	}
	return sb.String()
}

// ParseOrder reads a ring order as FormatOrder writes it, or as a list:
// ranks and runs "first-last" (counting up or down), separated by spaces
// or commas ("0-3 7-4 8-11 15-12", "0,1,2,3,7,6,5,4"). An element between
// commas that is empty ("0,,1", ",0,1", "0,1,") is refused by its
// position, as a --devices list's is. It checks the syntax only;
// enc.CheckRingOrder checks the order against the ranks.
func ParseOrder(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("an empty ring order: give ranks, e.g. 0-3 7-4 8-11 15-12")
	}
	elements := strings.Split(s, ",")
	var words []string
	for i, e := range elements {
		f := strings.Fields(e)
		if len(f) == 0 {
			return nil, fmt.Errorf("element %d of %d (between commas) is empty: give a rank or a run of ranks first-last", i+1, len(elements))
		}
		words = append(words, f...)
	}
	var out []int
	for _, w := range words {
		lo, hi, run := strings.Cut(w, "-")
		a, err := parseRank(lo)
		b := a
		if err == nil && run {
			b, err = parseRank(hi)
		}
		if err != nil || b >= enc.MaxRanks || a >= enc.MaxRanks {
			return nil, fmt.Errorf("%q is not a rank (0..%d) or a run of ranks first-last", w, enc.MaxRanks-1)
		}
		step := 1
		if b < a {
			step = -1
		}
		for v := a; ; v += step {
			out = append(out, v)
			if v == b {
				break
			}
		}
		if len(out) > enc.MaxRanks {
			return nil, fmt.Errorf("more than %d ranks", enc.MaxRanks)
		}
	}
	return out, nil
}

// parseRank reads one rank of a ring order: decimal digits only (no sign,
// which strconv.Atoi would take), at most five of them.
func parseRank(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a rank", s)
	}
	return strconv.Atoi(s)
}

// RingOrderKey is the report's Extra key of the ring order's note
// (NoteRingOrder).
const RingOrderKey = "ring_order"

// NoteRingOrder notes under RingOrderKey in the Extra of rep what ring
// order its collectives ran in, when one of its rows ran a ring (ring,
// kangaring or hier; every permute, whose default peers are the ring
// shift) and there is something to say: given, the order the caller gave
// (enc.Options.RingOrder), when it is not the cluster's own; rankOrder,
// that the caller asked for rank order (Config.RankOrderRings); else the
// cluster's own (RingOrder.Note, "" when rank order goes along the links
// or through switches).
func NoteRingOrder(rep *nccom.Report, o RingOrder, given []int, rankOrder bool) {
	if !usesRingOrder(rep) {
		return
	}
	switch {
	case given != nil && !slices.Equal(given, o.Ranks):
		note(rep, RingOrderKey, FormatOrder(given)+": as given")
	case rankOrder && o.Ranks != nil:
		note(rep, RingOrderKey, "rank order, as asked; along the links it would be "+FormatOrder(o.Ranks))
	case rankOrder:
		note(rep, RingOrderKey, "rank order, as asked")
	case o.Note != "":
		note(rep, RingOrderKey, o.Note)
	}
}

// usesRingOrder reports whether a row of rep ran in the ring order
// (enc.RingOrderApplies: a permute, or a ring, kangaring or hier row).
func usesRingOrder(rep *nccom.Report) bool {
	op, err := enc.ParseOp(rep.Op)
	return err == nil && slices.ContainsFunc(rep.Rows, func(r nccom.Row) bool {
		a, err := enc.ParseAlgo(r.Algorithm)
		return err == nil && a != enc.Auto && enc.RingOrderApplies(op, a)
	})
}

// CheckAutoRingOrder says why a ring order given to a collective of op with
// algo auto over sizes on the cluster would change nothing: auto resolves
// per size (opt's policy and group size, as CollectiveOptions sets them),
// and where it runs no algorithm that visits the ranks in the ring order
// (enc.RingOrderApplies: ring, kangaring, hier; every permute) at any of
// the sizes — mesh below 1 MiB and RDH up to 56 MiB on a power-of-two rank
// count — the order is never used; nil when auto runs one at some size.
// The caller wraps the error in where the order came from, as
// CheckAutoChannels' caller does.
func (cfg Config) CheckAutoRingOrder(op enc.Op, sizes []int64, opt enc.Options) error {
	ranks, runs, none := cfg.autoRunsNone(op, sizes, opt, func(a enc.Algo) bool { return enc.RingOrderApplies(op, a) })
	if !none {
		return nil
	}
	return fmt.Errorf("algo auto runs no ring at any size here (%s on %d ranks: auto runs %s), so the ring order would change nothing; give algo ring, or sizes where auto takes a ring",
		op, ranks, runs)
}
