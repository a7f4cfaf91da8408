package enc

import (
	"fmt"
	"slices"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Options tune Build.
type Options struct {
	// Policy resolves Auto. The zero Policy means DefaultPolicy().
	Policy Policy
	// Chunks splits the message into this many pieces run one after
	// another, each piece a complete collective on its slice of the buffers;
	// the schedule is the pieces' steps concatenated. 0 means 1. Pieces that
	// would hold no element are left out, so a message of fewer elements
	// (per rank block, for the ops that split by rank) than Chunks is cut
	// into fewer pieces.
	Chunks int
	// GroupSize is the number of ranks per node for Hier: ranks
	// g·n … g·n+g−1 form node n. It must divide the rank count. Auto
	// chooses by it too (Policy.ChooseIn: Hier, or a flat Ring, over
	// several nodes); the other algorithms ignore it.
	GroupSize int
	// Channels is how many rings a Ring all-reduce, all-gather or
	// reduce-scatter runs side by side — the runtime's flat ring across
	// nodes runs one channel per EFA NIC (trainium-facts §5.1). Every
	// channel goes round every rank carrying 1/Channels of each block (cut
	// by element), all in the ring's steps; channel c enters each group of
	// GroupSize ranks at its local rank c·GroupSize/Channels and leaves it
	// from the one before, so each channel crosses from group to group
	// between its own pair of local ranks (docs/collectives.md §Ring). 0
	// means 1, today's single ring. More than one needs GroupSize ≥ 1
	// dividing the ranks, and Channels dividing GroupSize; at most
	// MaxChannels. The other algorithms and ops ignore it.
	Channels int
	// Peers is Permute's target of each rank: rank i's input goes to rank
	// Peers[i]'s output. It must be one cycle through all ranks (a circular
	// permutation). Nil means the ring shift along RingOrder: RingOrder[k]
	// → RingOrder[k+1], the last to the first (with RingOrder nil, i →
	// (i+1) mod r). Other ops ignore it.
	Peers []int
	// RingOrder is the order in which the rings visit the ranks: the rank
	// at position k sends to the one at position k+1, the last to the
	// first — the runtime lays its rings along physical links, so a
	// caller that knows the topology passes a cycle of linked devices
	// (internal/cluster does; docs/collectives.md §Ring). It must hold
	// every rank once. Nil means rank order 0, 1, …, r−1. Ring and
	// KangaRing run their rings in it; a channelled Ring and Hier run each
	// group's ring through the group's ranks in the order RingOrder visits
	// them; Permute's default Peers are its ring shift. Block bookkeeping
	// follows the ranks, not the positions: every rank ends with what the
	// collective gives it, whatever the order. Mesh and RDH ignore it.
	RingOrder []int
}

// Build returns the schedule of op over ranks ranks for a message of size
// bytes (nccom-test's size(B); see Op.InputBytes) with elements of elem bytes,
// using algo (Auto: resolved through opt.Policy). Errors wrap ErrBadCollective
// and say what is wrong: ranks outside 1..MaxRanks; a size that is negative,
// above MaxSize or not a multiple of elem (for AllGather, ReduceScatter and
// AllToAll: of elem×ranks); an element size other than 1, 2, 4 or 8; bad
// Chunks or Peers; an algorithm that cannot do this op or rank count (RDH
// needs a power of two, KangaRing an even count, Hier a GroupSize dividing
// the count; AllToAll runs on Mesh only, Permute on Ring or Mesh); or a
// schedule of more than MaxXfers transfers.
//
// One rank: every op is a local copy of the input to the output, one step
// per chunk. Size 0: no steps.
func Build(op Op, algo Algo, ranks int, size int64, elem int, opt Options) (*Schedule, error) {
	b, s, pieces, name, err := prepare(op, algo, ranks, size, elem, opt)
	if err != nil {
		return nil, err
	}
	// Count first, holding only each step's last transfer, so that a
	// schedule past MaxXfers is refused before its transfers are
	// allocated; then build into one array of exactly the transfers.
	if err := b.count(pieces); err != nil {
		return nil, buildError(name, "%v", err)
	}
	b.presize()
	if err := b.pieces(pieces); err != nil {
		return nil, buildError(name, "%v", err)
	}
	if b.n != b.counted {
		return nil, buildError(name, "internal error: %d transfers built, %d counted", b.n, b.counted)
	}
	s.Steps = slices.DeleteFunc(b.steps, func(st Step) bool { return len(st.Xfers) == 0 })
	s.ScratchBytes = scratchUsed(s.Steps)
	return s, nil
}

// Count is Build's first pass alone: it checks the request as Build does,
// and instead of the schedule it returns the schedule without its steps
// (Steps nil, every other field — ScratchBytes too — as Build's) and the
// number of its transfers, calling visit (if not nil) with each of them
// and its step's index, holding one transfer a step. Transfers come in no
// particular order, and an index only tells steps apart: Build's steps are
// the indices with transfers, in increasing order. Its errors are Build's
// for the same request, a schedule past MaxXfers too. A caller can so
// measure what a schedule holds (a host-memory estimate, the buffers it
// needs) without allocating it.
func Count(op Op, algo Algo, ranks int, size int64, elem int, opt Options, visit func(step int, x Xfer)) (*Schedule, int, error) {
	b, s, pieces, name, err := prepare(op, algo, ranks, size, elem, opt)
	if err != nil {
		return nil, 0, err
	}
	b.visit = func(st int, x Xfer) {
		s.ScratchBytes = max(s.ScratchBytes, scratchOf(x))
		if visit != nil {
			visit(st, x)
		}
	}
	if err := b.count(pieces); err != nil {
		return nil, 0, buildError(name, "%v", err)
	}
	return s, b.n, nil
}

// buildError is an error of Build or Count about the collective name.
func buildError(name string, format string, a ...any) error {
	return fmt.Errorf("enc: %s: "+format+": %w", append([]any{name}, append(a, ErrBadCollective)...)...)
}

// prepare checks a request of Build or Count and returns the builder for
// it, the schedule with everything but its steps, the pieces to build and
// the collective's name for errors.
func prepare(op Op, algo Algo, ranks int, size int64, elem int, opt Options) (*builder, *Schedule, []seg, string, error) {
	fail := func(name string, format string, a ...any) (*builder, *Schedule, []seg, string, error) {
		return nil, nil, nil, "", buildError(name, format, a...)
	}
	if !op.valid() {
		return fail("build", "op %v: %w", op, ErrUnknownOp)
	}
	if !algo.valid() {
		return fail("build "+op.String(), "algorithm %v: %w", algo, ErrUnknownAlgo)
	}
	name := fmt.Sprintf("%v %v of %s", algo, op, units.Plural(int64(ranks), "rank", "ranks"))
	if ranks < 1 || ranks > MaxRanks {
		return fail(name, "rank count %d outside 1..%d", ranks, MaxRanks)
	}
	if !validElem(elem) {
		return fail(name, "element size %d B: want 1, 2, 4 or 8", elem)
	}
	if err := checkSize(op, ranks, size, elem); err != nil {
		return fail(name, "%v", err)
	}
	if size > MaxSize {
		return fail(name, "size %d B exceeds MaxSize (%d B)", size, int64(MaxSize))
	}
	chunks := opt.Chunks
	if chunks == 0 {
		chunks = 1
	}
	if chunks < 1 || chunks > MaxChunks {
		return fail(name, "Chunks %d outside 1..%d", opt.Chunks, MaxChunks)
	}
	if algo == Auto {
		pol := opt.Policy
		if pol == (Policy{}) {
			pol = DefaultPolicy()
		}
		algo = pol.ChooseIn(op, size, ranks, opt.GroupSize)
		name = fmt.Sprintf("%v (auto) %v of %s", algo, op, units.Plural(int64(ranks), "rank", "ranks"))
	}
	if err := algo.check(op, ranks, opt.GroupSize); err != nil {
		return fail(name, "%v", err)
	}
	channels := max(opt.Channels, 1)
	if opt.Channels < 0 || opt.Channels > MaxChannels {
		return fail(name, "Channels %d outside 1..%d", opt.Channels, MaxChannels)
	}
	if channels > 1 && ChannelsApply(op, algo) && ranks > 1 {
		switch g := opt.GroupSize; {
		case !GroupDivides(g, ranks):
			return fail(name, "%d channels need Options.GroupSize, the ranks of a node, dividing the %d ranks (GroupSize %d)", channels, ranks, g)
		case g%channels != 0:
			return fail(name, "%d channels do not divide a node's %d ranks (GroupSize): each channel enters a node at its own local rank", channels, g)
		}
		name += fmt.Sprintf(" in %d channels", channels)
	} else {
		channels = 1
	}
	order, err := ringOrder(opt.RingOrder, ranks)
	if err != nil {
		return fail(name, "%v", err)
	}
	var peers []int
	if op == Permute {
		if peers, err = permutePeers(opt.Peers, order); err != nil {
			return fail(name, "%v", err)
		}
	}

	s := &Schedule{
		Op: op, Algo: algo, Ranks: ranks, Size: size, Elem: elem,
		InputBytes:  op.InputBytes(size, ranks),
		OutputBytes: op.OutputBytes(size, ranks),
	}
	b := &builder{op: op, algo: algo, r: ranks, elem: int64(elem), group: opt.GroupSize, channels: channels, peers: peers, order: order}
	// The unit a piece is cut from: the whole message, or each rank block
	// for the ops that split by rank.
	unit := size
	if ranks > 1 && op.splits() {
		unit = size / int64(ranks)
		b.stride = unit
	}
	pieces := split(seg{0, unit}, chunks, b.elem)
	return b, s, pieces, name, nil
}

// pieces adds the steps of every non-empty piece, in order.
func (b *builder) pieces(ps []seg) error {
	for _, p := range ps {
		if p.len == 0 {
			continue
		}
		b.piece(p)
		if b.err != nil {
			return b.err
		}
	}
	return nil
}

// count is the counting pass over the pieces: each step holds only its
// last transfer (b.visit, if set, sees every transfer once no later one
// can extend it, those still held at the end too), counts says how many
// it would hold, and a schedule past MaxXfers is an error.
func (b *builder) count(ps []seg) error {
	b.counting = true
	if err := b.pieces(ps); err != nil {
		return err
	}
	if b.visit != nil {
		for st, step := range b.steps {
			if len(step.Xfers) > 0 {
				b.visit(st, step.Xfers[0])
			}
		}
	}
	return nil
}

// presize ends the counting pass: it gives every step a slice of one
// array of the counted transfers, with room for exactly its own, and
// starts the builder over to add them.
func (b *builder) presize() {
	all := make([]Xfer, b.n)
	off := 0
	for i, c := range b.counts {
		b.steps[i].Xfers = all[off : off : off+c]
		off += c
	}
	b.counting, b.counted, b.n, b.used, b.counts = false, b.n, 0, 0, nil
}

// RingOrderApplies reports whether a collective of op with algo may run in
// Options.RingOrder: a Permute (its default peers are the ring shift), a
// Ring, KangaRing or Hier, and Auto for the ops whose choice can be one of
// them (all but AllToAll). Mesh and RDH ignore the order.
func RingOrderApplies(op Op, algo Algo) bool {
	switch {
	case op == Permute:
		return true
	case op == AllToAll:
		return false
	}
	return algo == Ring || algo == KangaRing || algo == Hier || algo == Auto
}

// CheckRingOrder reports why order is not a ring order of ranks ranks
// (Options.RingOrder): not one entry per rank, an entry that is not a
// rank, or a rank twice. Nil is rank order, always valid. The error wraps
// ErrBadCollective.
func CheckRingOrder(order []int, ranks int) error {
	if _, err := ringOrder(order, ranks); err != nil {
		return fmt.Errorf("enc: %w: %w", err, ErrBadCollective)
	}
	return nil
}

// ringOrder checks Options.RingOrder over ranks ranks, or makes rank
// order 0, 1, …, r−1 when it is nil.
func ringOrder(order []int, ranks int) ([]int, error) {
	if order == nil {
		return allRanks(ranks), nil
	}
	if len(order) != ranks {
		return nil, fmt.Errorf("RingOrder has %d entries for %d ranks", len(order), ranks)
	}
	at := make([]int, ranks) // at[rank]: its position + 1, 0 until seen
	for k, rank := range order {
		if rank < 0 || rank >= ranks {
			return nil, fmt.Errorf("RingOrder[%d] = %d is not a rank (0..%d)", k, rank, ranks-1)
		}
		if at[rank] != 0 {
			return nil, fmt.Errorf("RingOrder is not a permutation: rank %d is at positions %d and %d", rank, at[rank]-1, k)
		}
		at[rank] = k + 1
	}
	return slices.Clone(order), nil
}

// permutePeers checks Permute's targets, or makes the default: the ring
// shift along order (a checked RingOrder), order[k] → order[k+1].
func permutePeers(peers []int, order []int) ([]int, error) {
	ranks := len(order)
	if peers == nil {
		p := make([]int, ranks)
		for k, rank := range order {
			p[rank] = order[(k+1)%ranks]
		}
		return p, nil
	}
	if len(peers) != ranks {
		return nil, fmt.Errorf("Peers has %d entries for %d ranks", len(peers), ranks)
	}
	seen := make([]bool, ranks)
	for i, p := range peers {
		if p < 0 || p >= ranks {
			return nil, fmt.Errorf("Peers[%d] = %d is not a rank (0..%d)", i, p, ranks-1)
		}
		if seen[p] {
			return nil, fmt.Errorf("Peers is not a permutation: rank %d is the target of two ranks", p)
		}
		seen[p] = true
	}
	n, i := 1, peers[0]
	for ; i != 0; i = peers[i] {
		n++
	}
	if n != ranks {
		return nil, fmt.Errorf("Peers is not one cycle through all %d ranks (only circular permutes are supported): the cycle from rank 0 closes after %d ranks", ranks, n)
	}
	return slices.Clone(peers), nil
}

// scratchUsed is the scratch length the steps touch.
func scratchUsed(steps []Step) int64 {
	var n int64
	for _, st := range steps {
		for _, x := range st.Xfers {
			n = max(n, scratchOf(x))
		}
	}
	return n
}

// scratchOf is the scratch length transfer x touches.
func scratchOf(x Xfer) int64 {
	var n int64
	if x.DstBuf == Scratch {
		n = x.DstOff + x.Len
	}
	if x.SrcBuf == Scratch {
		n = max(n, x.SrcOff+x.Len)
	}
	return n
}

// seg is a byte range [off, off+len).
type seg struct{ off, len int64 }

// split cuts s into n consecutive parts on element boundaries, the first
// parts one element longer when the elements do not divide evenly. Parts may
// be empty.
func split(s seg, n int, elem int64) []seg {
	out := make([]seg, n)
	count := s.len / elem
	base, rem := count/int64(n), count%int64(n)
	off := s.off
	for i := range out {
		l := base
		if int64(i) < rem {
			l++
		}
		out[i] = seg{off, l * elem}
		off += l * elem
	}
	return out
}

// loc maps a byte offset of the message, as it lies in the input buffer of
// an op that does not split by rank (or in the S-long buffer of one that
// does), to the buffer and offset where rank keeps it in some role.
type loc func(rank int, off int64) (Buffer, int64)

func inAt(_ int, off int64) (Buffer, int64)  { return Input, off }
func outAt(_ int, off int64) (Buffer, int64) { return Output, off }

// builder accumulates the steps of a schedule.
type builder struct {
	op       Op
	algo     Algo
	r        int
	elem     int64
	stride   int64 // rank block length for the ops that split by rank
	group    int
	channels int // Ring's channels (Options.Channels), 1 for every other algorithm
	peers    []int
	order    []int   // the rings' order of the ranks (Options.RingOrder, checked; rank order when not given)
	cycles   [][]int // per group of b.group ranks: its ranks in b.order's order (groupCycle), made at first use

	steps []Step
	used  int // steps a transfer has been added to so far: the next piece's first step
	n     int // transfers so far
	err   error

	// counting is the first pass of Build: each step holds only its last
	// transfer (what add needs to extend it) and counts says how many it
	// would hold; counted is that pass's total, which the second must
	// reach exactly.
	counting bool
	counts   []int
	counted  int
	visit    func(step int, x Xfer) // Count's: each transfer of the counting pass once it is whole
}

// add appends x to step st (creating steps as needed). Zero-length transfers
// are dropped, and a transfer that continues the step's last one (same ranks,
// buffers and kind, both ranges adjacent) extends it.
func (b *builder) add(st int, x Xfer) {
	if x.Len <= 0 || b.err != nil {
		return
	}
	for len(b.steps) <= st {
		b.steps = append(b.steps, Step{Xfers: make([]Xfer, 0, 1)})
		b.counts = append(b.counts, 0)
	}
	b.used = max(b.used, st+1)
	xs := b.steps[st].Xfers
	if n := len(xs); n > 0 {
		l := &xs[n-1]
		if l.Src == x.Src && l.Dst == x.Dst && l.SrcBuf == x.SrcBuf && l.DstBuf == x.DstBuf && l.Reduce == x.Reduce &&
			l.SrcOff+l.Len == x.SrcOff && l.DstOff+l.Len == x.DstOff {
			l.Len += x.Len
			return
		}
	}
	switch {
	case b.counting && b.n >= MaxXfers:
		b.err = fmt.Errorf("the schedule would hold more than %d transfers (use fewer ranks, chunks or channels)", MaxXfers)
		return
	case b.counting:
		b.counts[st]++
		if len(xs) > 0 && b.visit != nil {
			b.visit(st, xs[0]) // no later transfer can extend it now
		}
		b.steps[st].Xfers = append(xs[:0], x)
	case len(xs) == cap(xs) || b.n >= b.counted:
		b.err = fmt.Errorf("internal error: step %d takes more transfers than the counting pass gave it", st)
		return
	default:
		b.steps[st].Xfers = append(xs, x)
	}
	b.n++
}

// move adds a transfer of segment s from rank src (located by from) to rank
// dst (located by to).
func (b *builder) move(st, src int, from loc, dst int, to loc, s seg, reduce bool) {
	sb, so := from(src, s.off)
	db, do := to(dst, s.off)
	b.add(st, Xfer{Src: src, Dst: dst, SrcBuf: sb, DstBuf: db, SrcOff: so, DstOff: do, Len: s.len, Reduce: reduce})
}

// blocks returns the r rank blocks of piece p for an op that splits by rank:
// block c is bytes [c·stride + p.off, +p.len) of the S-long buffer.
func (b *builder) blocks(p seg) []seg {
	out := make([]seg, b.r)
	for c := range out {
		out[c] = seg{int64(c)*b.stride + p.off, p.len}
	}
	return out
}

// agOwn locates a rank's own block of an all-gather in its input buffer.
func (b *builder) agOwn(rank int, off int64) (Buffer, int64) {
	return Input, off - int64(rank)*b.stride
}

// piece appends the steps of one piece of the message.
func (b *builder) piece(p seg) {
	base := b.used
	if b.r == 1 {
		b.move(base, 0, inAt, 0, outAt, p, false)
		return
	}
	if b.op == Permute {
		for i := range b.r {
			b.move(base, i, inAt, b.peers[i], outAt, p, false)
		}
		return
	}
	switch b.algo {
	case Ring:
		b.ringPiece(base, p, false)
	case KangaRing:
		b.ringPiece(base, p, true)
	case Mesh:
		b.meshPiece(base, p)
	case RDH:
		b.rdhPiece(base, p)
	case Hier:
		b.hierPiece(base, p)
	}
}

func mod(a, m int) int {
	a %= m
	if a < 0 {
		a += m
	}
	return a
}
