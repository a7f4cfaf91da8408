package enc

// rdhRS adds a reduce-scatter by recursive halving over the r blocks blk (r
// a power of two) starting at step base and returns the number of steps it
// spans, 1 + log2 r. The first step copies the half of the blocks that holds
// the rank's own block from raw to acc. Then in step s (distance
// d = r >> (s+1)) rank j, whose current range is the aligned run of 2d blocks
// around j, sends to partner j XOR d the half of the range not holding j
// (from raw in the first halving step, from acc later); the partner adds it
// into its acc and keeps that half. Rank j ends with block j.
func (b *builder) rdhRS(base int, blk []seg, raw, acc loc) int {
	r, half := b.r, b.r/2
	for j := range r {
		lo := j & half
		for c := lo; c < lo+half; c++ {
			b.move(base, j, raw, j, acc, blk[c], false)
		}
	}
	s := 0
	for d := half; d >= 1 && b.err == nil; d /= 2 {
		st := base + 1 + s
		src := acc
		if s == 0 {
			src = raw
		}
		for j := range r {
			lo := j &^ (2*d - 1)
			send := lo
			if j&d == 0 {
				send = lo + d
			}
			for c := send; c < send+d; c++ {
				b.move(st, j, src, j^d, acc, blk[c], true)
			}
		}
		s++
	}
	return 1 + s
}

// rdhAG adds an all-gather by recursive doubling over the r blocks blk
// starting at step base and returns the number of steps, log2 r. In step s
// (distance d = 1 << s) rank j copies the aligned run of d blocks around j to
// partner j XOR d's out location. Rank j's own block is at own; with copyOwn
// the first step also copies it to j's out location (without, own must be
// out).
func (b *builder) rdhAG(base int, blk []seg, own, out loc, copyOwn bool) int {
	r := b.r
	s := 0
	for d := 1; d < r && b.err == nil; d *= 2 {
		st := base + s
		for j := range r {
			if s == 0 {
				if copyOwn {
					b.move(st, j, own, j, out, blk[j], false)
				}
				b.move(st, j, own, j^d, out, blk[j], false)
				continue
			}
			lo := j &^ (d - 1)
			for c := lo; c < lo+d; c++ {
				b.move(st, j, out, j^d, out, blk[c], false)
			}
		}
		s++
	}
	return s
}

// rdhAcc locates, for a recursive-halving reduce-scatter of piece p, where
// each rank accumulates block c: its own block in the output, the other
// blocks of its half in scratch slot c − (start of the half), slots p.len
// long.
func (b *builder) rdhAcc(p seg) loc {
	half := b.r / 2
	return func(rank int, off int64) (Buffer, int64) {
		c := off / b.stride
		within := off - c*b.stride - p.off
		if int(c) == rank {
			return Output, p.off + within
		}
		return Scratch, int64(int(c)-(rank&half))*p.len + within
	}
}

// rdhPiece adds the RDH schedule of one piece.
//
//   - AllReduce: recursive halving in the output buffer (1 + log2 r steps),
//     then recursive doubling (log2 r steps).
//   - AllGather: recursive doubling (log2 r steps).
//   - ReduceScatter: recursive halving (1 + log2 r steps).
func (b *builder) rdhPiece(base int, p seg) {
	switch b.op {
	case AllReduce:
		blk := split(p, b.r, b.elem)
		n := b.rdhRS(base, blk, inAt, outAt)
		b.rdhAG(base+n, blk, outAt, outAt, false)
	case AllGather:
		b.rdhAG(base, b.blocks(p), b.agOwn, outAt, true)
	case ReduceScatter:
		b.rdhRS(base, b.blocks(p), inAt, b.rdhAcc(p))
	}
}
