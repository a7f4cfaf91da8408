package tpb

import (
	"encoding/binary"
	"math"

	"github.com/neuronsim/neuronsim/hw/isa"
)

// Element access (docs/isa.md): element (p, i, j, k) of a tensor lies in
// partition start+p at byte offset + (i·s1 + j·s2 + k·s3)·size. The linear
// free index runs row-major: the last dimension in use is the fastest.
// Values are read whole before anything is written, so a record whose
// output overlaps its inputs sees the old inputs.

// operand is a tensor resolved against its memory for one record.
type operand struct {
	mem   Mem
	pb    uint64 // bytes per partition of the memory
	part0 int    // first partition
	parts int    // partitions
	base  uint64 // byte offset inside each partition where the span starts
	span  int    // bytes covered by one partition's elements
	dt    isa.Dtype
	size  int     // bytes per element
	rel   []int32 // element offsets inside the span, in linear order
	dense bool    // the elements are exactly the span, in order
}

// elems returns the elements per partition.
func (o *operand) elems() int { return len(o.rel) }

// addr returns the window offset of partition p's span.
func (o *operand) addr(p int) uint64 { return uint64(o.part0+p)*o.pb + o.base }

// scratch holds buffers reused across records, so execution does not
// allocate per element or per record.
type scratch struct {
	rel  [3][]int32
	f    [4][]float32
	i    [3][]int64
	raw  [2][]byte
	span []byte
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// bigScratch is the buffer size (elements) above which buffers are dropped
// after the record, so a rare huge record does not pin memory.
const bigScratch = 1 << 20

// trim drops oversized buffers.
func (s *scratch) trim() {
	for i := range s.f {
		if cap(s.f[i]) > bigScratch {
			s.f[i] = nil
		}
	}
	for i := range s.i {
		if cap(s.i[i]) > bigScratch {
			s.i[i] = nil
		}
	}
	for i := range s.raw {
		if cap(s.raw[i]) > 4*bigScratch {
			s.raw[i] = nil
		}
	}
}

// operand resolves tensor t (with dtype dt at address addr) into slot's
// offset buffer. ok is false when any element falls outside its partition.
func (c *Core) operand(slot int, t isa.Tensor, addr uint32, dt isa.Dtype) (o operand, ok bool) {
	psum, p0, off := isa.Location(addr)
	size := int64(dt.Size())
	if size == 0 || t.Partitions < 1 || p0+int(t.Partitions) > 128 {
		return o, false
	}
	t.Dtype = dt
	lo, hi, n := extent(t, size)
	pb := c.partBytes(psum)
	if n > MaxFreeElements || int64(off)%size != 0 || int64(off)+lo < 0 || int64(off)+hi > pb {
		return o, false
	}
	o = operand{mem: c.sbuf, pb: uint64(pb), part0: p0, parts: int(t.Partitions), base: uint64(int64(off) + lo),
		span: int(hi - lo), dt: dt, size: int(size)}
	if psum {
		o.mem = c.psum
	}
	// Up to three dimensions; unused ones are size 1, stride 0.
	sz, st := [3]int{1, 1, 1}, [3]int64{}
	for i := range t.Rank() - 1 {
		sz[i], st[i] = int(t.Dims[i].Size), int64(t.Dims[i].Stride)*size
	}
	rel := grow(c.scratch.rel[slot], n)
	c.scratch.rel[slot] = rel
	idx, dense := 0, true
	for i := range sz[0] {
		oi := int64(i)*st[0] - lo
		for j := range sz[1] {
			oj := oi + int64(j)*st[1]
			for k := range sz[2] {
				r := oj + int64(k)*st[2]
				rel[idx] = int32(r)
				dense = dense && r == int64(idx)*size
				idx++
			}
		}
	}
	o.rel, o.dense = rel, dense && o.span == n*int(size)
	return o, true
}

// spanBuf returns the span buffer for one partition of o.
func (c *Core) spanBuf(o *operand) []byte {
	c.scratch.span = grow(c.scratch.span, o.span)
	return c.scratch.span
}

// readF32 reads o's elements, converted to fp32, partition-major into out.
func (c *Core) readF32(o *operand, out []float32) error {
	buf, n := c.spanBuf(o), o.elems()
	for p := range o.parts {
		if err := o.mem.Read(o.addr(p), buf); err != nil {
			return err
		}
		if o.dense && decodeDense(o.dt, buf, out[p*n:(p+1)*n]) {
			continue
		}
		decodeF32(o.dt, buf, o.rel, out[p*n:(p+1)*n])
	}
	return nil
}

// decodeF32 converts the elements at rel in buf to fp32.
func decodeF32(dt isa.Dtype, buf []byte, rel []int32, out []float32) {
	out = out[:len(rel)]
	le := binary.LittleEndian
	switch dt {
	case isa.FP32, isa.TF32:
		for i, r := range rel {
			out[i] = math.Float32frombits(le.Uint32(buf[r:]))
		}
	case isa.BF16:
		for i, r := range rel {
			out[i] = math.Float32frombits(uint32(le.Uint16(buf[r:])) << 16)
		}
	default:
		for i, r := range rel {
			out[i] = loadF32(dt, buf[r:])
		}
	}
}

// writeF32 converts in (partition-major) to o's dtype and writes it.
func (c *Core) writeF32(o *operand, in []float32) error {
	buf, n := c.spanBuf(o), o.elems()
	le := binary.LittleEndian
	for p := range o.parts {
		if !o.dense {
			if err := o.mem.Read(o.addr(p), buf); err != nil {
				return err
			}
		}
		vals := in[p*n : (p+1)*n]
		switch {
		case o.dense && encodeDense(o.dt, vals, buf):
		case o.dt == isa.FP32:
			for i, r := range o.rel {
				le.PutUint32(buf[r:], math.Float32bits(vals[i]))
			}
		case o.dt == isa.BF16:
			for i, r := range o.rel {
				le.PutUint16(buf[r:], ToBF16(vals[i]))
			}
		default:
			for i, r := range o.rel {
				storeF32(o.dt, vals[i], buf[r:])
			}
		}
		if err := o.mem.Write(o.addr(p), buf); err != nil {
			return err
		}
	}
	return nil
}

// readInt reads o's integer elements, sign- or zero-extended.
func (c *Core) readInt(o *operand, out []int64) error {
	buf, n := c.spanBuf(o), o.elems()
	for p := range o.parts {
		if err := o.mem.Read(o.addr(p), buf); err != nil {
			return err
		}
		for i, r := range o.rel {
			out[p*n+i] = loadInt(o.dt, buf[r:])
		}
	}
	return nil
}

// writeInt writes integer values of dtype src to o: saturated into an
// integer dtype, rounded into a float one.
func (c *Core) writeInt(o *operand, in []int64, src isa.Dtype) error {
	u64 := src == isa.Uint64
	if !isInt(o.dt) {
		f := grow(c.scratch.f[3], len(in))
		c.scratch.f[3] = f
		for i, v := range in {
			f[i] = intToF32(v, u64)
		}
		return c.writeF32(o, f)
	}
	buf, n := c.spanBuf(o), o.elems()
	for p := range o.parts {
		if !o.dense {
			if err := o.mem.Read(o.addr(p), buf); err != nil {
				return err
			}
		}
		for i, r := range o.rel {
			putInt(o.dt, intToInt(o.dt, in[p*n+i], u64), buf[r:])
		}
		if err := o.mem.Write(o.addr(p), buf); err != nil {
			return err
		}
	}
	return nil
}

// readRaw reads o's elements as bytes, size bytes each, partition-major.
func (c *Core) readRaw(o *operand, out []byte) error {
	buf, n := c.spanBuf(o), o.elems()
	for p := range o.parts {
		if err := o.mem.Read(o.addr(p), buf); err != nil {
			return err
		}
		for i, r := range o.rel {
			at := (p*n + i) * o.size
			copy(out[at:at+o.size], buf[r:])
		}
	}
	return nil
}

// writeRaw writes elements given as bytes (o's dtype).
func (c *Core) writeRaw(o *operand, in []byte) error {
	buf, n := c.spanBuf(o), o.elems()
	for p := range o.parts {
		if !o.dense {
			if err := o.mem.Read(o.addr(p), buf); err != nil {
				return err
			}
		}
		for i, r := range o.rel {
			at := (p*n + i) * o.size
			copy(buf[r:int(r)+o.size], in[at:at+o.size])
		}
		if err := o.mem.Write(o.addr(p), buf); err != nil {
			return err
		}
	}
	return nil
}

// decodeDense converts contiguous bf16 or fp32 elements; false for other
// dtypes.
func decodeDense(dt isa.Dtype, buf []byte, out []float32) bool {
	switch dt {
	case isa.BF16:
		b := buf[:2*len(out)]
		for i := range out {
			out[i] = math.Float32frombits(uint32(b[2*i])<<16 | uint32(b[2*i+1])<<24)
		}
	case isa.FP32, isa.TF32:
		b := buf[:4*len(out)]
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	default:
		return false
	}
	return true
}

// encodeDense converts to contiguous bf16 or fp32 elements; false for other
// dtypes.
func encodeDense(dt isa.Dtype, vals []float32, buf []byte) bool {
	switch dt {
	case isa.BF16:
		b := buf[:2*len(vals)]
		for i, v := range vals {
			h := ToBF16(v)
			b[2*i], b[2*i+1] = byte(h), byte(h>>8)
		}
	case isa.FP32:
		b := buf[:4*len(vals)]
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
	default:
		return false
	}
	return true
}
