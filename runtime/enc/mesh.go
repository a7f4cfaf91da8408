package enc

// meshOrder: in a mesh step, rank i lists its transfers to ranks i, i+1,
// …, i+r−1 (mod r), its own first, so that at each moment the ranks write
// to different ranks, as an all-to-all staggers its peers. The step's
// transfers are in no particular order as a schedule (Step), but a rank's
// DMA queues carry them in the order listed: listed to ranks 0, 1, … by
// every rank, until 2026-12-07, every rank wrote to rank 0 first, then to
// rank 1, …, and each rank's link in was fed by one writer at a time — a
// 16 MiB all-to-all on 16 Trn3 devices behind a switch took 321.08 µs,
// twice the 157 µs its links need; it takes 204.24 µs (docs/collectives.md
// §Mesh, "Order").

// meshRS adds a mesh reduce-scatter over the r blocks blk starting at step
// base and returns the number of steps it spans. Step 1: every rank i copies
// block j from raw to rank j's scratch slot (i − j − 1) mod r (slots slot
// bytes long), and its own block i to own. Then ⌈log2 r⌉ steps of local
// reductions, a binary tree over rank j's r operands (operand 0 at own,
// operand k ≥ 1 in slot k−1): at level L operand k += operand k+L for every
// k that is a multiple of 2L.
func (b *builder) meshRS(base int, blk []seg, raw, own loc, slot int64) int {
	r := b.r
	for i := 0; i < r && b.err == nil; i++ {
		for d := range r {
			j := (i + d) % r // its own block first, then ranks i+1, i+2, … (meshOrder)
			if j == i {
				b.move(base, i, raw, i, own, blk[i], false)
				continue
			}
			sb, so := raw(i, blk[j].off)
			b.add(base, Xfer{Src: i, Dst: j, SrcBuf: sb, SrcOff: so, DstBuf: Scratch,
				DstOff: int64(mod(i-j-1, r)) * slot, Len: blk[j].len})
		}
	}
	operand := func(j, k int) (Buffer, int64) {
		if k == 0 {
			return own(j, blk[j].off)
		}
		return Scratch, int64(k-1) * slot
	}
	steps := 1
	for l := 1; l < r; l *= 2 {
		st := base + steps
		for j := range r {
			for k := 0; k+l < r; k += 2 * l {
				db, do := operand(j, k)
				sb, so := operand(j, k+l)
				b.add(st, Xfer{Src: j, Dst: j, SrcBuf: sb, SrcOff: so, DstBuf: db, DstOff: do, Len: blk[j].len, Reduce: true})
			}
		}
		steps++
	}
	return steps
}

// meshAG adds a one-step mesh all-gather: every rank i copies its block i
// from own to every other rank's out location (and, with copyOwn, to its
// own). It returns 1.
func (b *builder) meshAG(base int, blk []seg, own, out loc, copyOwn bool) int {
	for i := 0; i < b.r && b.err == nil; i++ {
		for d := range b.r {
			j := (i + d) % b.r // meshOrder
			if j != i || copyOwn {
				b.move(base, i, own, j, out, blk[i], false)
			}
		}
	}
	return 1
}

// meshPiece adds the mesh schedule of one piece.
//
//   - AllReduce: mesh reduce-scatter of the piece cut into r blocks (1 +
//     ⌈log2 r⌉ steps), then a mesh all-gather (1 step).
//   - AllGather: 1 step.
//   - ReduceScatter: 1 + ⌈log2 r⌉ steps, the rank's own block reduced in
//     its output.
//   - AllToAll: 1 step, rank i's input block j to rank j's output block i.
func (b *builder) meshPiece(base int, p seg) {
	switch b.op {
	case AllReduce:
		blk := split(p, b.r, b.elem)
		n := b.meshRS(base, blk, inAt, outAt, blk[0].len)
		b.meshAG(base+n, blk, outAt, outAt, false)
	case AllGather:
		b.meshAG(base, b.blocks(p), b.agOwn, outAt, true)
	case ReduceScatter:
		own := func(rank int, off int64) (Buffer, int64) { return Output, off - int64(rank)*b.stride }
		b.meshRS(base, b.blocks(p), inAt, own, p.len)
	case AllToAll:
		blk := b.blocks(p)
		for i := 0; i < b.r && b.err == nil; i++ {
			for d := range b.r {
				j := (i + d) % b.r // meshOrder
				b.add(base, Xfer{Src: i, Dst: j, SrcBuf: Input, SrcOff: blk[j].off, DstBuf: Output, DstOff: blk[i].off, Len: p.len})
			}
		}
	}
}
