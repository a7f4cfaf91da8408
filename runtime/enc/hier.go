package enc

// Hier: ranks g·n … g·n+g−1 form node n (g = GroupSize, N = r/g nodes); the
// rank at position l of node n is g·n + l. A "group" ring runs inside one
// node, a "lane" ring through the ranks of the same position l in every
// node.

// groupRing returns node n's group ring: its ranks in the ring order
// (groupCycle), each member with blocks[l] for its position l in the node,
// so that the member at position l ends a reduce-scatter with block l
// whatever the order.
func (b *builder) groupRing(n int, blocks [][]seg) ring {
	members := b.groupCycle(n)
	own := make([][]seg, len(members))
	for k, rank := range members {
		own[k] = blocks[rank-n*b.group]
	}
	return ring{members, own, +1}
}

// laneRanks returns the ranks at position l of every node.
func (b *builder) laneRanks(l int) []int {
	m := make([]int, b.r/b.group)
	for n := range m {
		m[n] = n*b.group + l
	}
	return m
}

// hierPiece adds the hierarchical schedule of one piece; its rings are
// plain rings (Ring's phases), a node's in the ring order (groupRing), a
// lane's in node order.
//
//   - AllReduce: group reduce-scatter of the piece cut into g parts (one
//     step of local copies, g−1 ring steps), then a lane all-reduce of part l
//     cut into N blocks (2(N−1) steps), then a group all-gather (g−1 steps).
//   - AllGather: lane all-gather first (N−1 steps: each rank gathers the
//     blocks of its lane), then group all-gather of those sets (g−1 steps).
//   - ReduceScatter: group reduce-scatter first (one step of local copies,
//     g−1 ring steps: position l sums the blocks of its lane over the node),
//     then a lane reduce-scatter (N−1 steps).
func (b *builder) hierPiece(base int, p seg) {
	g, nodes := b.group, b.r/b.group
	switch b.op {
	case AllReduce:
		parts := split(p, g, b.elem)
		n := 0
		for node := range nodes {
			n = b.ringRS(base, b.groupRing(node, single(parts)), inAt, outAt, true)
		}
		base += n
		lanes := make([]ring, g)
		for l := range g {
			lanes[l] = ring{b.laneRanks(l), single(split(parts[l], nodes, b.elem)), +1}
			n = b.ringRS(base, lanes[l], outAt, outAt, false)
		}
		base += n
		for l := range g {
			n = b.ringAG(base, lanes[l], outAt, outAt, false)
		}
		base += n
		for node := range nodes {
			b.ringAG(base, b.groupRing(node, single(parts)), outAt, outAt, false)
		}
	case AllGather:
		blk := b.blocks(p)
		if nodes == 1 {
			b.ringAG(base, b.groupRing(0, single(blk)), b.agOwn, outAt, true)
			return
		}
		n := 0
		for l := range g {
			lane := b.laneRanks(l)
			n = b.ringAG(base, ring{lane, pick(single(blk), lane), +1}, b.agOwn, outAt, true)
		}
		base += n
		for node := range nodes {
			b.ringAG(base, b.groupRing(node, b.laneSets(blk)), outAt, outAt, false)
		}
	case ReduceScatter:
		blk := b.blocks(p)
		acc := b.rsAcc(p)
		n := 0
		for node := range nodes {
			n = b.ringRS(base, b.groupRing(node, b.laneSets(blk)), inAt, acc, true)
		}
		base += n
		for l := range g {
			lane := b.laneRanks(l)
			b.ringRS(base, ring{lane, pick(single(blk), lane), +1}, acc, acc, false)
		}
	}
}

// laneSets returns, for each position l, the blocks of lane l's ranks.
func (b *builder) laneSets(blk []seg) [][]seg {
	out := make([][]seg, b.group)
	for l := range out {
		for _, k := range b.laneRanks(l) {
			out[l] = append(out[l], blk[k])
		}
	}
	return out
}
