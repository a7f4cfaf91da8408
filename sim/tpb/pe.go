package tpb

import "github.com/neuronsim/neuronsim/hw/isa"

// The PE array: load_stationary holds a [K × M] tile in fp32;
// multiply_moving streams a [K × N] tile through it into PSUM:
// dst[m][n] = Σ_k stat[k][m] · mov[k][n], k ascending, each product rounded
// to fp32 before it is added to the fp32 accumulator; with ACCUMULATE the
// sum is added to dst's old value.

func (c *Core) loadStationary(r *isa.Record) uint32 {
	s, ok := c.operand(0, r.Src0, r.Src0.Addr, r.Src0.Dtype)
	if !ok {
		return ErrRange
	}
	K, M := s.parts, s.elems()
	x := c.fbuf(0, K*M)
	if c.readF32(&s, x) != nil {
		return ErrRange
	}
	pe := &c.st.PE
	pe.Stationary = append(grow(pe.Stationary, 0), x...)
	pe.Loaded, pe.K, pe.M, pe.Fresh = true, K, M, true
	return ErrNone
}

func (c *Core) multiplyMoving(r *isa.Record) uint32 {
	pe := &c.st.PE
	mv, ok1 := c.operand(0, r.Src0, r.Src0.Addr, r.Src0.Dtype)
	d, ok2 := c.operand(1, r.Dst, r.Dst.Addr, r.Dst.Dtype)
	if !pe.Loaded || !ok1 || !ok2 || mv.parts != pe.K || d.parts != pe.M || d.elems() != mv.elems() {
		return ErrRange
	}
	K, M, N := pe.K, pe.M, mv.elems()
	mov := c.fbuf(0, K*N)
	if c.readF32(&mv, mov) != nil {
		return ErrRange
	}
	out := c.fbuf(1, M*N)
	clear(out)
	matmul(out, pe.Stationary, mov, K, M, N)
	if r.Flags&isa.FlagAccumulate != 0 {
		old := c.fbuf(2, M*N)
		if c.readF32(&d, old) != nil {
			return ErrRange
		}
		for i := range out {
			out[i] = old[i] + out[i]
		}
	}
	pe.Fresh = false
	return code(c.writeF32(&d, out))
}

// matmul adds stat[K×M]ᵀ · mov[K×N] into out[M×N], k in ascending order for
// every output element.
func matmul(out, stat, mov []float32, K, M, N int) {
	for k := range K {
		mrow := mov[k*N : (k+1)*N]
		for m, s := range stat[k*M : (k+1)*M] {
			o := out[m*N : (m+1)*N]
			o = o[:len(mrow)]
			for n, x := range mrow {
				o[n] += float32(s * x)
			}
		}
	}
}
