package enc

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Buffers are the CPU buffers of every rank, indexed by rank.
type Buffers struct {
	Input, Output, Scratch [][]byte
}

// NewBuffers allocates zeroed buffers of the schedule's lengths for each of
// its ranks. A nil or malformed schedule gives empty Buffers.
func NewBuffers(s *Schedule) *Buffers {
	b := &Buffers{}
	if s == nil || s.checkHeader() != nil {
		return b
	}
	alloc := func(n int64) [][]byte {
		out := make([][]byte, s.Ranks)
		for i := range out {
			out[i] = make([]byte, n)
		}
		return out
	}
	b.Input, b.Output, b.Scratch = alloc(s.InputBytes), alloc(s.OutputBytes), alloc(s.ScratchBytes)
	return b
}

func (b *Buffers) get(rank int, k Buffer) []byte {
	switch k {
	case Input:
		return b.Input[rank]
	case Output:
		return b.Output[rank]
	}
	return b.Scratch[rank]
}

// fits reports why b does not hold buffers of s's shape.
func (b *Buffers) fits(s *Schedule) error {
	for _, k := range []Buffer{Input, Output, Scratch} {
		var set [][]byte
		switch k {
		case Input:
			set = b.Input
		case Output:
			set = b.Output
		default:
			set = b.Scratch
		}
		if len(set) != s.Ranks {
			return fmt.Errorf("%d %v buffers for %d ranks", len(set), k, s.Ranks)
		}
		for r, buf := range set {
			if int64(len(buf)) != s.bufLen(k) {
				return fmt.Errorf("rank %d's %v buffer is %d B, the schedule's is %d B", r, k, len(buf), s.bufLen(k))
			}
		}
	}
	return nil
}

// Apply carries the schedule out on CPU buffers, reducing in d (whose size
// must be s.Elem): the reference execution every device run is checked
// against (runtime/collective runs schedules on devices). Steps run in
// order; within a step every transfer's source is read first, then every
// write is applied in transfer order, so a schedule that breaks the step
// rule (see Schedule.Validate, which Apply does not call) computes
// something other than its concurrent execution would. Apply checks
// the schedule's header, every transfer's bounds and the buffers' shape
// (NewBuffers makes them), and fails before any write if one is wrong.
func Apply(s *Schedule, d Dtype, b *Buffers) error {
	if s == nil || b == nil {
		return fmt.Errorf("enc: apply: nil schedule or buffers: %w", ErrBadBuffers)
	}
	if err := s.checkHeader(); err != nil {
		return err
	}
	if !d.valid() {
		return fmt.Errorf("enc: apply: %w: %v", ErrUnknownDtype, d)
	}
	if d.Size() != s.Elem {
		return fmt.Errorf("enc: apply: %v elements are %d B, the schedule's are %d B: %w", d, d.Size(), s.Elem, ErrBadBuffers)
	}
	if err := b.fits(s); err != nil {
		return fmt.Errorf("enc: apply: %v: %w", err, ErrBadBuffers)
	}
	var total int64
	for si, st := range s.Steps {
		for xi, x := range st.Xfers {
			if err := s.checkXfer(x); err != nil {
				return fmt.Errorf("enc: apply: step %d, xfer %d (%v): %v: %w", si, xi, x, err, ErrInvalidSchedule)
			}
		}
	}
	var stage []byte
	for _, st := range s.Steps {
		total = 0
		for _, x := range st.Xfers {
			total += x.Len
		}
		if int64(cap(stage)) < total {
			stage = make([]byte, total)
		}
		stage = stage[:total]
		off := 0
		for _, x := range st.Xfers {
			off += copy(stage[off:], b.get(x.Src, x.SrcBuf)[x.SrcOff:x.SrcOff+x.Len])
		}
		off = 0
		for _, x := range st.Xfers {
			dst := b.get(x.Dst, x.DstBuf)[x.DstOff : x.DstOff+x.Len]
			src := stage[off : off+int(x.Len)]
			off += int(x.Len)
			if !x.Reduce {
				copy(dst, src)
			} else if err := Reduce(d, dst, src); err != nil {
				return err // unreachable: lengths are checked multiples of the element size
			}
		}
	}
	return nil
}

// Expected computes the reference result of op in d for the given per-rank
// inputs (len(inputs) ranks, each input InputBytes long): what each rank's
// output must hold. Floating sums (AllReduce, ReduceScatter) add the inputs
// in rank order 0, 1, …, r−1 in float32 and round to the 16-bit types at the
// end; integer sums wrap. opt.Peers gives Permute's targets (nil: the ring
// shift along opt.RingOrder). Errors wrap ErrBadCollective.
func Expected(op Op, d Dtype, inputs [][]byte, opt Options) ([][]byte, error) {
	r := len(inputs)
	if err := checkInputs(op, d, inputs); err != nil {
		return nil, err
	}
	n := len(inputs[0])
	out := make([][]byte, r)
	switch op {
	case AllReduce:
		sum := sumInOrder(d, inputs, 0, n)
		for i := range out {
			out[i] = clone(sum)
		}
	case AllGather:
		for i := range out {
			out[i] = make([]byte, 0, n*r)
			for _, in := range inputs {
				out[i] = append(out[i], in...)
			}
		}
	case ReduceScatter:
		blk := n / r
		for j := range out {
			out[j] = sumInOrder(d, inputs, j*blk, blk)
		}
	case AllToAll:
		blk := n / r
		for j := range out {
			out[j] = make([]byte, 0, n)
			for _, in := range inputs {
				out[j] = append(out[j], in[j*blk:(j+1)*blk]...)
			}
		}
	case Permute:
		peers, err := ringOrder(opt.RingOrder, r)
		if err == nil {
			peers, err = permutePeers(opt.Peers, peers)
		}
		if err != nil {
			return nil, fmt.Errorf("enc: expected permute of %d ranks: %v: %w", r, err, ErrBadCollective)
		}
		for i, in := range inputs {
			out[peers[i]] = clone(in)
		}
	}
	return out, nil
}

// checkInputs reports why inputs are not valid per-rank inputs of op in d.
func checkInputs(op Op, d Dtype, inputs [][]byte) error {
	r := len(inputs)
	switch {
	case !op.valid():
		return fmt.Errorf("enc: expected: %w: %w", ErrUnknownOp, ErrBadCollective)
	case !d.valid():
		return fmt.Errorf("enc: expected %v: %w: %w", op, ErrUnknownDtype, ErrBadCollective)
	case r < 1 || r > MaxRanks:
		return fmt.Errorf("enc: expected %v: %d ranks, want 1..%d: %w", op, r, MaxRanks, ErrBadCollective)
	}
	n := len(inputs[0])
	for i, in := range inputs {
		if len(in) != n {
			return fmt.Errorf("enc: expected %v: rank %d's input is %d B, rank 0's %d B: %w", op, i, len(in), n, ErrBadCollective)
		}
	}
	unit := d.Size()
	if (op == ReduceScatter || op == AllToAll) && r > 1 {
		unit *= r
	}
	if n%unit != 0 {
		return fmt.Errorf("enc: expected %v of %d ranks: input of %d B is not a multiple of %d B: %w", op, r, n, unit, ErrBadCollective)
	}
	return nil
}

// sumInOrder returns the elementwise sum of bytes [off, off+n) of every input,
// added in rank order.
func sumInOrder(d Dtype, inputs [][]byte, off, n int) []byte {
	out := clone(inputs[0][off : off+n])
	if !d.float() {
		for _, in := range inputs[1:] {
			_ = Reduce(d, out, in[off:off+n]) // lengths equal by construction
		}
		return out
	}
	for i := range n / d.Size() {
		acc := toFloat32(d, inputs[0][off:], i)
		for _, in := range inputs[1:] {
			acc += toFloat32(d, in[off:], i)
		}
		putFloat32(d, out, i, acc)
	}
	return out
}

// clone copies b into a new non-nil slice.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

// Verify checks per-rank outputs against Expected for the given inputs.
// Copies (AllGather, AllToAll, Permute) and integer sums must match bit for
// bit. A floating sum may differ from the rank-order reference by
// d.Tolerance(r) times the sum of the magnitudes of the summed inputs (plus
// r times the type's smallest subnormal); NaN must meet NaN and an infinity
// the same infinity. The error wraps ErrMismatch (or ErrBadCollective for
// malformed inputs) and names the first bad rank and element.
func Verify(op Op, d Dtype, inputs, outputs [][]byte, opt Options) error {
	want, err := Expected(op, d, inputs, opt)
	if err != nil {
		return err
	}
	r := len(inputs)
	if len(outputs) != r {
		return fmt.Errorf("enc: verify %v: %d outputs for %d ranks: %w", op, len(outputs), r, ErrBadCollective)
	}
	es := d.Size()
	for j := range r {
		got := outputs[j]
		if len(got) != len(want[j]) {
			return fmt.Errorf("enc: verify %v: rank %d's output is %d B, want %d B: %w", op, j, len(got), len(want[j]), ErrMismatch)
		}
		if !op.reduces() || !d.float() {
			for i := range got {
				if got[i] != want[j][i] {
					e := i / es
					return fmt.Errorf("enc: verify %v %v of %d ranks: rank %d, element %d: got %s, want %s: %w",
						op, d, r, j, e, hexElem(got, e, es), hexElem(want[j], e, es), ErrMismatch)
				}
			}
			continue
		}
		base := 0 // byte offset of rank j's output in the summed inputs
		if op == ReduceScatter {
			base = j * len(want[j])
		}
		for e := range len(got) / es {
			g, w := toFloat64(d, got, e), toFloat64(d, want[j], e)
			var mag float64
			for _, in := range inputs {
				mag += math.Abs(toFloat64(d, in[base:], e))
			}
			bound := d.Tolerance(r)*mag + float64(r)*smallestSubnormal(d)
			if !closeEnough(g, w, bound) {
				return fmt.Errorf("enc: verify %v %v of %d ranks: rank %d, element %d: got %g, want %g (allowed ±%g): %w",
					op, d, r, j, e, g, w, bound, ErrMismatch)
			}
		}
	}
	return nil
}

func closeEnough(got, want, bound float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want
	}
	return math.Abs(got-want) <= bound
}

func smallestSubnormal(d Dtype) float64 {
	switch d {
	case Float32:
		return math.Ldexp(1, -149)
	case BFloat16:
		return math.Ldexp(1, -133)
	case Float16:
		return math.Ldexp(1, -24)
	}
	return 0
}

// hexElem formats element e (es bytes, little-endian) as hex.
func hexElem(b []byte, e, es int) string {
	var v uint64
	switch es {
	case 1:
		v = uint64(b[e])
	case 2:
		v = uint64(binary.LittleEndian.Uint16(b[2*e:]))
	case 4:
		v = uint64(binary.LittleEndian.Uint32(b[4*e:]))
	}
	return fmt.Sprintf("0x%0*x", 2*es, v)
}
