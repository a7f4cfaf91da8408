package tpb

import (
	"math"

	"github.com/neuronsim/neuronsim/hw/isa"
)

// The functional effect of each executed opcode (docs/isa.md "What each
// executed opcode computes"), applied at the record's completion time.
// Every value is read before anything is written. A failure here (which the
// record check should have prevented) is ErrRange; a doorbell that fails is
// ErrDoorbell.

// execute applies record r and returns an Err* code.
func (c *Core) execute(r *isa.Record) uint32 {
	switch r.Opcode {
	case isa.OpNop, isa.OpBarrier, isa.OpSem, isa.OpCtrlPollSem:
		return ErrNone
	case isa.OpDMATrigger:
		if c.env.Doorbell(int(r.Aux), int(r.Imm0), r.Imm1) != nil {
			return ErrDoorbell
		}
		return ErrNone
	}
	defer c.scratch.trim()
	return c.compute(r)
}

// compute applies a record of a compute opcode (one that works on the
// on-chip memories through the scratch buffers) and returns an Err* code.
func (c *Core) compute(r *isa.Record) uint32 {
	switch r.Opcode {
	case isa.OpLoadStationary:
		return c.loadStationary(r)
	case isa.OpMultiplyMoving:
		return c.multiplyMoving(r)
	case isa.OpActivation:
		return c.activation(r)
	case isa.OpTensorTensor:
		return c.tensorTensor(r)
	case isa.OpTensorScalar:
		return c.tensorScalar(r)
	case isa.OpTensorCopy, isa.OpCopyCast:
		return c.copyOp(r, false)
	case isa.OpTranspose:
		return c.copyOp(r, true)
	case isa.OpMemset, isa.OpIota:
		return c.fill(r)
	case isa.OpReciprocal, isa.OpActReciprocal:
		return c.reciprocal(r)
	case isa.OpTensorReduce:
		return c.reduce(r)
	}
	return ErrUnsupported
}

func (c *Core) fbuf(i, n int) []float32 {
	c.scratch.f[i] = grow(c.scratch.f[i], n)
	return c.scratch.f[i]
}

func (c *Core) ibuf(i, n int) []int64 {
	c.scratch.i[i] = grow(c.scratch.i[i], n)
	return c.scratch.i[i]
}

func (c *Core) rbuf(i, n int) []byte {
	c.scratch.raw[i] = grow(c.scratch.raw[i], n)
	return c.scratch.raw[i]
}

// operands resolves dst and src0 (slots 1 and 0).
func (c *Core) operands(r *isa.Record) (d, s operand, ok bool) {
	s, ok1 := c.operand(0, r.Src0, r.Src0.Addr, r.Src0.Dtype)
	d, ok2 := c.operand(1, r.Dst, r.Dst.Addr, r.Dst.Dtype)
	return d, s, ok1 && ok2 && d.parts*d.elems() == s.parts*s.elems()
}

// code turns an access error into ErrRange.
func code(err error) uint32 {
	if err != nil {
		return ErrRange
	}
	return ErrNone
}

// immInt reads an immediate as an integer of dtype d: sign-extended for
// signed dtypes, zero-extended for unsigned ones.
func immInt(d isa.Dtype, v uint32) int64 {
	if isUnsigned(d) {
		return int64(v)
	}
	return int64(int32(v))
}

// actFn applies an activation function.
func actFn(f uint8, x float32) float32 {
	switch f {
	case isa.ActRelu:
		if x > 0 || x != x {
			return x
		}
		return 0
	case isa.ActExp:
		return float32(math.Exp(float64(x)))
	case isa.ActTanh:
		return float32(math.Tanh(float64(x)))
	case isa.ActSigmoid:
		return float32(1 / (1 + math.Exp(-float64(x))))
	case isa.ActSquare:
		return float32(x * x)
	case isa.ActSqrt:
		return float32(math.Sqrt(float64(x)))
	}
	return x // identity
}

// aluF32 applies an ALU op in fp32. max and min propagate NaN and order
// −0 below +0 (math.Max/Min).
func aluF32(op uint8, a, b float32) float32 {
	switch op {
	case isa.ALUAdd:
		return a + b
	case isa.ALUSubtract:
		return a - b
	case isa.ALUMultiply:
		return float32(a * b)
	case isa.ALUMax:
		return float32(math.Max(float64(a), float64(b)))
	case isa.ALUMin:
		return float32(math.Min(float64(a), float64(b)))
	case isa.ALUDivide:
		return a / b
	}
	return a // bypass
}

// aluVec sets x[i] = x[i] op y[i] (y nil: op with the scalar s), with the
// op chosen once per call rather than per element.
func aluVec(op uint8, x, y []float32, s float32) {
	if y == nil {
		switch op {
		case isa.ALUAdd:
			for i := range x {
				x[i] += s
			}
		case isa.ALUSubtract:
			for i := range x {
				x[i] -= s
			}
		case isa.ALUMultiply:
			for i := range x {
				x[i] = float32(x[i] * s)
			}
		case isa.ALUBypass:
		default:
			for i := range x {
				x[i] = aluF32(op, x[i], s)
			}
		}
		return
	}
	y = y[:len(x)]
	switch op {
	case isa.ALUAdd:
		for i := range x {
			x[i] += y[i]
		}
	case isa.ALUSubtract:
		for i := range x {
			x[i] -= y[i]
		}
	case isa.ALUMultiply:
		for i := range x {
			x[i] = float32(x[i] * y[i])
		}
	case isa.ALUBypass:
	default:
		for i := range x {
			x[i] = aluF32(op, x[i], y[i])
		}
	}
}

// aluInt applies an ALU op (not divide) in integer dtype d, wrapping.
func aluInt(op uint8, d isa.Dtype, a, b int64) int64 {
	less := a < b
	if isUnsigned(d) {
		less = uint64(a) < uint64(b)
	}
	switch op {
	case isa.ALUAdd:
		return wrapInt(d, uint64(a)+uint64(b))
	case isa.ALUSubtract:
		return wrapInt(d, uint64(a)-uint64(b))
	case isa.ALUMultiply:
		return wrapInt(d, uint64(a)*uint64(b))
	case isa.ALUMax:
		if less {
			return b
		}
	case isa.ALUMin:
		if !less {
			return b
		}
	}
	return a
}

func (c *Core) activation(r *isa.Record) uint32 {
	d, s, ok := c.operands(r)
	if !ok {
		return ErrRange
	}
	n := s.parts * s.elems()
	x := c.fbuf(0, n)
	if err := c.readF32(&s, x); err != nil {
		return ErrRange
	}
	scale, bias := math.Float32frombits(r.Imm0), math.Float32frombits(r.Imm1)
	for i, v := range x {
		x[i] = float32(v*scale) + bias
	}
	switch r.Op {
	case isa.ActIdentity:
	case isa.ActSquare:
		for i, v := range x {
			x[i] = float32(v * v)
		}
	default:
		for i, v := range x {
			x[i] = actFn(r.Op, v)
		}
	}
	if r.Flags&isa.FlagAccumulate != 0 {
		old := c.fbuf(1, n)
		if err := c.readF32(&d, old); err != nil {
			return ErrRange
		}
		for i := range x {
			x[i] = old[i] + x[i]
		}
	}
	return code(c.writeF32(&d, x))
}

func (c *Core) tensorTensor(r *isa.Record) uint32 {
	d, a, ok := c.operands(r)
	b, ok1 := c.operand(2, r.Src0, r.Src1.Addr, r.Src1.Dtype)
	if !ok || !ok1 {
		return ErrRange
	}
	n := a.parts * a.elems()
	if isInt(a.dt) && a.dt == b.dt && r.Op != isa.ALUDivide {
		x, y := c.ibuf(0, n), c.ibuf(1, n)
		if c.readInt(&a, x) != nil || c.readInt(&b, y) != nil {
			return ErrRange
		}
		for i := range x {
			x[i] = aluInt(r.Op, a.dt, x[i], y[i])
		}
		return code(c.writeInt(&d, x, a.dt))
	}
	x, y := c.fbuf(0, n), c.fbuf(1, n)
	if c.readF32(&a, x) != nil || c.readF32(&b, y) != nil {
		return ErrRange
	}
	aluVec(r.Op, x, y, 0)
	return code(c.writeF32(&d, x))
}

func (c *Core) tensorScalar(r *isa.Record) uint32 {
	d, a, ok := c.operands(r)
	if !ok {
		return ErrRange
	}
	n := a.parts * a.elems()
	if isInt(a.dt) && r.Op != isa.ALUDivide {
		x := c.ibuf(0, n)
		if c.readInt(&a, x) != nil {
			return ErrRange
		}
		imm := wrapInt(a.dt, uint64(immInt(a.dt, r.Imm0)))
		for i := range x {
			x[i] = aluInt(r.Op, a.dt, x[i], imm)
		}
		return code(c.writeInt(&d, x, a.dt))
	}
	imm := math.Float32frombits(r.Imm0)
	if isInt(a.dt) {
		imm = intToF32(immInt(a.dt, r.Imm0), false)
	}
	x := c.fbuf(0, n)
	if c.readF32(&a, x) != nil {
		return ErrRange
	}
	aluVec(r.Op, x, nil, imm)
	return code(c.writeF32(&d, x))
}

func (c *Core) reciprocal(r *isa.Record) uint32 {
	d, s, ok := c.operands(r)
	if !ok {
		return ErrRange
	}
	x := c.fbuf(0, s.parts*s.elems())
	if c.readF32(&s, x) != nil {
		return ErrRange
	}
	for i, v := range x {
		x[i] = 1 / v
	}
	return code(c.writeF32(&d, x))
}

// fill runs memset and iota.
func (c *Core) fill(r *isa.Record) uint32 {
	d, ok := c.operand(1, r.Dst, r.Dst.Addr, r.Dst.Dtype)
	if !ok {
		return ErrRange
	}
	ne := d.elems()
	n := d.parts * ne
	if r.Opcode == isa.OpMemset && !isInt(d.dt) {
		x := c.fbuf(0, n)
		v := math.Float32frombits(r.Imm0)
		for i := range x {
			x[i] = v
		}
		return code(c.writeF32(&d, x))
	}
	x := c.ibuf(0, n)
	if r.Opcode == isa.OpMemset {
		v := immInt(d.dt, r.Imm0)
		for i := range x {
			x[i] = v
		}
	} else {
		base, step := int64(int32(r.Imm0)), int64(int32(r.Imm1))
		for p := range d.parts {
			for i := range ne {
				x[p*ne+i] = base + int64(i) + int64(p)*step
			}
		}
	}
	return code(c.writeInt(&d, x, isa.Int64))
}

func (c *Core) reduce(r *isa.Record) uint32 {
	s, ok1 := c.operand(0, r.Src0, r.Src0.Addr, r.Src0.Dtype)
	d, ok2 := c.operand(1, r.Dst, r.Dst.Addr, r.Dst.Dtype)
	if !ok1 || !ok2 || d.parts != s.parts || d.elems() != 1 {
		return ErrRange
	}
	ne := s.elems()
	if isInt(s.dt) {
		x, out := c.ibuf(0, s.parts*ne), c.ibuf(1, s.parts)
		if c.readInt(&s, x) != nil {
			return ErrRange
		}
		for p := range s.parts {
			row := x[p*ne : (p+1)*ne]
			acc := row[0]
			for _, v := range row[1:] {
				acc = aluInt(r.Op, s.dt, acc, v)
			}
			out[p] = acc
		}
		return code(c.writeInt(&d, out, s.dt))
	}
	x, out := c.fbuf(0, s.parts*ne), c.fbuf(1, s.parts)
	if c.readF32(&s, x) != nil {
		return ErrRange
	}
	for p := range s.parts {
		row := x[p*ne : (p+1)*ne]
		acc := row[0]
		for _, v := range row[1:] {
			acc = aluF32(r.Op, acc, v)
		}
		out[p] = acc
	}
	return code(c.writeF32(&d, out))
}

// copyOp runs tensor_copy, copy_cast and transpose: the same dtype copies
// bytes unchanged, integer to integer saturates exactly, anything else goes
// through fp32. transpose moves src0 [P × F] to dst [F × P].
func (c *Core) copyOp(r *isa.Record, transpose bool) uint32 {
	d, s, ok := c.operands(r)
	if !ok || (transpose && (d.parts != s.elems() || d.elems() != s.parts)) {
		return ErrRange
	}
	P, F := s.parts, s.elems()
	n := P * F
	switch {
	case s.dt == d.dt:
		x, y := c.rbuf(0, n*s.size), c.rbuf(1, n*s.size)
		if c.readRaw(&s, x) != nil {
			return ErrRange
		}
		if transpose {
			sz := s.size
			for p := range P {
				for f := range F {
					copy(y[(f*P+p)*sz:(f*P+p+1)*sz], x[(p*F+f)*sz:])
				}
			}
			x = y
		}
		return code(c.writeRaw(&d, x))
	case isInt(s.dt) && isInt(d.dt):
		x := c.ibuf(0, n)
		if c.readInt(&s, x) != nil {
			return ErrRange
		}
		if transpose {
			x = transposed(x, c.ibuf(1, n), P, F)
		}
		return code(c.writeInt(&d, x, s.dt))
	}
	x := c.fbuf(0, n)
	if c.readF32(&s, x) != nil {
		return ErrRange
	}
	if transpose {
		x = transposed(x, c.fbuf(1, n), P, F)
	}
	return code(c.writeF32(&d, x))
}

// transposed writes the P×F matrix src as F×P into dst and returns dst.
func transposed[T any](src, dst []T, P, F int) []T {
	for p := range P {
		for f := range F {
			dst[f*P+p] = src[p*F+f]
		}
	}
	return dst
}
