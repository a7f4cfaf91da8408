package enc

// ring is one ring of a ring phase: members in ring order, the block each
// member ends with (a block is a list of segments of the message), and the
// direction data travels: +1 from members[k] to members[k+1], −1 the other
// way.
type ring struct {
	members []int
	blocks  [][]seg
	dir     int
}

// ringRS adds a ring reduce-scatter starting at step base and returns the
// number of steps it spans. Member k ends with the sum of block k in its acc
// location. raw locates each member's own contribution. In ring step t
// (0..m−2) member k sends its partial sum of block k − dir·(t+1) to the next
// member, which adds it into its acc — so a member receives block
// k − dir·(t+2) in step t, and every block but the one it sends first.
//
// With init, each member's own contribution to a block it will receive must
// be in acc first (the DMA reduce adds into what the destination holds):
// the block received in step 0 is copied in a first step of its own, and
// the block received in step t+1 during ring step t, beside the step's
// transfers, so the copies overlap the ring instead of preceding it. (With
// m = 2 the first step is the only copy.) Without init the contributions
// are already in acc (raw must be acc).
func (b *builder) ringRS(base int, g ring, raw, acc loc, init bool) int {
	m := len(g.members)
	steps := 0
	copyIn := func(st, k, blk int) {
		for _, s := range g.blocks[mod(blk, m)] {
			b.move(st, g.members[k], raw, g.members[k], acc, s, false)
		}
	}
	if init {
		for k := range g.members {
			if m == 1 {
				copyIn(base, k, k)
			} else {
				copyIn(base, k, k-2*g.dir)
			}
		}
		steps = 1
	}
	for t := 0; t < m-1 && b.err == nil; t++ {
		st := base + steps + t
		src := acc
		if t == 0 {
			src = raw
		}
		for k, rank := range g.members {
			next := g.members[mod(k+g.dir, m)]
			for _, s := range g.blocks[mod(k-g.dir*(t+1), m)] {
				b.move(st, rank, src, next, acc, s, true)
			}
			if init && t+1 < m-1 {
				copyIn(st, k, k-g.dir*(t+3))
			}
		}
	}
	return steps + max(m-1, 0)
}

// ringAG adds a ring all-gather starting at step base and returns the number
// of steps it spans: m−1 steps, in step t member k copying block k − dir·t to
// the next member's out location. Member k's own block is at own; with
// copyOwn the first step also copies it to the member's out location
// (without, own must be out).
func (b *builder) ringAG(base int, g ring, own, out loc, copyOwn bool) int {
	m := len(g.members)
	if m == 1 {
		if !copyOwn {
			return 0
		}
		for _, s := range g.blocks[0] {
			b.move(base, g.members[0], own, g.members[0], out, s, false)
		}
		return 1
	}
	for t := 0; t < m-1 && b.err == nil; t++ {
		st := base + t
		src := out
		if t == 0 {
			src = own
		}
		for k, rank := range g.members {
			if t == 0 && copyOwn {
				for _, s := range g.blocks[k] {
					b.move(st, rank, own, rank, out, s, false)
				}
			}
			next := g.members[mod(k+g.dir, m)]
			for _, s := range g.blocks[mod(k-g.dir*t, m)] {
				b.move(st, rank, src, next, out, s, false)
			}
		}
	}
	return m - 1
}

// allRanks is 0..r−1.
func allRanks(r int) []int {
	m := make([]int, r)
	for i := range m {
		m[i] = i
	}
	return m
}

// single makes each segment a one-segment block.
func single(blk []seg) [][]seg {
	out := make([][]seg, len(blk))
	for i := range blk {
		out[i] = blk[i : i+1 : i+1]
	}
	return out
}

// rings returns the ring of all ranks, in b.order, over blk (blk[i]: rank
// i's block); with dual, two rings: the first halves of the blocks
// travelling up (+1) and the second halves down (−1), as KangaRing runs
// them; with channels, the channel rings (channelRings).
func (b *builder) rings(blk []seg, dual bool) []ring {
	if b.channels > 1 && !dual {
		return b.channelRings(blk)
	}
	if !dual {
		return []ring{{b.order, pick(single(blk), b.order), +1}}
	}
	up := make([][]seg, len(blk))
	down := make([][]seg, len(blk))
	for i, s := range blk {
		h := split(s, 2, b.elem)
		up[i], down[i] = h[:1], h[1:]
	}
	return []ring{{b.order, pick(up, b.order), +1}, {b.order, pick(down, b.order), -1}}
}

// pick returns the blocks of members: blocks[k] for each rank k of
// members, in their order (blocks: one per rank).
func pick[T any](blocks []T, members []int) []T {
	out := make([]T, len(members))
	for i, k := range members {
		out[i] = blocks[k]
	}
	return out
}

// groupCycle returns the ranks of group n (ranks g·n … g·n+g−1, g =
// b.group) in the order b.order visits them: the group's ring, along the
// ring order's links when the order keeps a group's ranks together.
func (b *builder) groupCycle(n int) []int {
	if b.cycles == nil {
		b.cycles = make([][]int, b.r/b.group)
		for _, rank := range b.order {
			g := rank / b.group
			b.cycles[g] = append(b.cycles[g], rank)
		}
	}
	return b.cycles[n]
}

// channelRings returns the b.channels rings of a channelled Ring
// (Options.Channels): channel c carries part c of every block of blk (cut
// by element) up every rank, visiting each group of b.group ranks in its
// ring (groupCycle) from position c·b.group/b.channels round to the one
// before it, so it crosses to the next group between its own pair of
// positions. A member's block in channel c is part c of its rank's block,
// as the reduce-scatter and all-gather need (member k ends with block k).
func (b *builder) channelRings(blk []seg) []ring {
	k := b.channels
	parts := make([][]seg, len(blk))
	for i, s := range blk {
		parts[i] = split(s, k, b.elem)
	}
	out := make([]ring, k)
	for c := range k {
		first := c * b.group / k
		members := make([]int, 0, b.r)
		for node := range b.r / b.group {
			cycle := b.groupCycle(node)
			for x := range b.group {
				members = append(members, cycle[(first+x)%b.group])
			}
		}
		blocks := make([][]seg, len(members))
		for pos, rank := range members {
			blocks[pos] = parts[rank][c : c+1 : c+1]
		}
		out[c] = ring{members, blocks, +1}
	}
	return out
}

// rsAcc locates, for a ring reduce-scatter of piece p, where each rank
// accumulates block c: its own block (c == rank) in the output, the block
// c ≠ rank in scratch slot (c − rank − 1) mod r, slots p.len long.
func (b *builder) rsAcc(p seg) loc {
	return func(rank int, off int64) (Buffer, int64) {
		c := off / b.stride
		within := off - c*b.stride - p.off
		if int(c) == rank {
			return Output, p.off + within
		}
		return Scratch, int64(mod(int(c)-rank-1, b.r))*p.len + within
	}
}

// ringPiece adds the ring (dual: KangaRing) schedule of one piece.
//
//   - AllReduce: the piece is cut into r blocks; a reduce-scatter in the
//     output buffer (one step of local copies, r−1 ring steps), then an
//     all-gather (r−1 steps).
//   - AllGather: r−1 steps; the first also copies the rank's input to its
//     output.
//   - ReduceScatter: one step of local copies into the accumulators (the
//     output for the rank's own block, scratch slots for the others), then
//     r−1 ring steps.
func (b *builder) ringPiece(base int, p seg, dual bool) {
	switch b.op {
	case AllReduce:
		rs := b.rings(split(p, b.r, b.elem), dual)
		n := 0
		for _, g := range rs {
			n = b.ringRS(base, g, inAt, outAt, true)
		}
		for _, g := range rs {
			b.ringAG(base+n, g, outAt, outAt, false)
		}
	case AllGather:
		for _, g := range b.rings(b.blocks(p), dual) {
			b.ringAG(base, g, b.agOwn, outAt, true)
		}
	case ReduceScatter:
		acc := b.rsAcc(p)
		for _, g := range b.rings(b.blocks(p), dual) {
			b.ringRS(base, g, inAt, acc, true)
		}
	}
}
