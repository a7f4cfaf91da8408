package enc

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Buffer names one of a rank's three buffers.
type Buffer uint8

// The buffers of a rank.
const (
	// Input is the rank's input buffer, Schedule.InputBytes long. Built
	// schedules only read it.
	Input Buffer = iota
	// Output is the rank's output buffer, Schedule.OutputBytes long.
	Output
	// Scratch is the rank's scratch buffer, Schedule.ScratchBytes long.
	Scratch
)

var bufNames = [...]string{Input: "input", Output: "output", Scratch: "scratch"}
var bufShort = [...]string{Input: "in", Output: "out", Scratch: "scr"}

func (b Buffer) valid() bool { return b <= Scratch }

// String returns "input", "output" or "scratch"; "Buffer(n)" otherwise.
func (b Buffer) String() string {
	if b.valid() {
		return bufNames[b]
	}
	return fmt.Sprintf("Buffer(%d)", uint8(b))
}

func (b Buffer) short() string {
	if b.valid() {
		return bufShort[b]
	}
	return b.String()
}

// Xfer moves Len bytes from rank Src's buffer SrcBuf at SrcOff to rank Dst's
// buffer DstBuf at DstOff. With Reduce the destination becomes the
// elementwise sum of itself and the source in the collective's data type;
// otherwise the source is copied. Src == Dst is allowed: a local copy or a
// local reduction.
type Xfer struct {
	Src, Dst       int    // source and destination rank
	SrcBuf, DstBuf Buffer // source and destination buffer
	SrcOff, DstOff int64  // byte offsets in those buffers
	Len            int64  // bytes moved, > 0
	Reduce         bool   // sum into the destination rather than copy
}

// String writes the transfer as an assignment, destination first:
// "1.out[0,4)=0.in[0,4)" for a copy, "1.scr[0,4)+=0.out[4,8)" for a
// reduction.
func (x Xfer) String() string {
	op := "="
	if x.Reduce {
		op = "+="
	}
	return fmt.Sprintf("%d.%s[%d,%d)%s%d.%s[%d,%d)", x.Dst, x.DstBuf.short(), x.DstOff, x.DstOff+x.Len,
		op, x.Src, x.SrcBuf.short(), x.SrcOff, x.SrcOff+x.Len)
}

// Step is a set of transfers that run concurrently. Rank r starts step k+1
// only when every transfer of step k into r has landed, r's own step-k
// transfers have completed, and every rank that writes into r in step k+1
// has been told that r finished step k. A step is therefore valid when, on
// each rank's buffers, the byte ranges its transfers write are disjoint from
// one another and from the ranges its transfers read (reads may overlap).
type Step struct {
	Xfers []Xfer // the step's transfers, in no particular order
}

// Schedule is a collective written out as steps of transfers.
type Schedule struct {
	Op    Op    // the collective
	Algo  Algo  // the algorithm used (never Auto)
	Ranks int   // ranks taking part, numbered 0..Ranks-1
	Size  int64 // the message size in bytes, nccom-test's size(B)
	Elem  int   // element size in bytes (1, 2, 4 or 8); every offset and length is a multiple of it

	InputBytes   int64 // per-rank input buffer length, Op.InputBytes(Size, Ranks)
	OutputBytes  int64 // per-rank output buffer length, Op.OutputBytes(Size, Ranks)
	ScratchBytes int64 // per-rank scratch buffer length

	Steps []Step // run one after another
}

// String summarises the schedule on one line, e.g.
// "ring all_gather: 4 ranks, 16 B, elem 4, 3 steps, 12 xfers".
func (s *Schedule) String() string {
	if s == nil {
		return "<nil schedule>"
	}
	n := 0
	for _, st := range s.Steps {
		n += len(st.Xfers)
	}
	return fmt.Sprintf("%v %v: %s, %d B, elem %d, %s, %s", s.Algo, s.Op, units.Plural(int64(s.Ranks), "rank", "ranks"), s.Size, s.Elem,
		units.Plural(int64(len(s.Steps)), "step", "steps"), units.Plural(int64(n), "xfer", "xfers"))
}

// Dump writes one line per step listing its transfers (see Xfer.String).
func (s *Schedule) Dump() string {
	var sb strings.Builder
	for i, st := range s.Steps {
		fmt.Fprintf(&sb, "step %d:", i)
		for _, x := range st.Xfers {
			sb.WriteByte(' ')
			sb.WriteString(x.String())
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// Traffic returns the bytes moved between different ranks (Src != Dst) over
// the whole schedule and the number of such transfers. Local copies and
// reductions are not counted.
func (s *Schedule) Traffic() (bytes int64, xfers int) {
	if s == nil {
		return 0, 0
	}
	for _, st := range s.Steps {
		for _, x := range st.Xfers {
			if x.Src != x.Dst {
				bytes += x.Len
				xfers++
			}
		}
	}
	return bytes, xfers
}

func validElem(e int) bool { return e == 1 || e == 2 || e == 4 || e == 8 }

// checkSize reports why size is not a valid message size for op over ranks
// ranks with elements of elem bytes (ranks and elem already checked).
func checkSize(op Op, ranks int, size int64, elem int) error {
	if size < 0 {
		return fmt.Errorf("size %d B is negative", size)
	}
	if size%int64(elem) != 0 {
		return fmt.Errorf("size %d B is not a multiple of the element size %d B", size, elem)
	}
	if op.splits() {
		if unit := op.SizeAlign(elem, ranks); size%unit != 0 {
			return fmt.Errorf("%v cuts the message into one block per rank: size %d B is not a multiple of elem×ranks = %d×%d = %d B",
				op, size, elem, ranks, unit)
		}
	}
	return nil
}

// checkHeader checks the schedule's fields other than Steps.
func (s *Schedule) checkHeader() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("enc: schedule: "+format+": %w", append(a, ErrInvalidSchedule)...)
	}
	switch {
	case !s.Op.valid():
		return bad("op %v: %w", s.Op, ErrUnknownOp)
	case !s.Algo.valid():
		return bad("algorithm %v: %w", s.Algo, ErrUnknownAlgo)
	case s.Algo == Auto:
		return bad("algorithm auto: a schedule names the algorithm actually used")
	case s.Ranks < 1 || s.Ranks > MaxRanks:
		return bad("%d ranks: want 1..%d", s.Ranks, MaxRanks)
	case !validElem(s.Elem):
		return bad("element size %d: want 1, 2, 4 or 8", s.Elem)
	}
	if err := checkSize(s.Op, s.Ranks, s.Size, s.Elem); err != nil {
		return bad("%v", err)
	}
	if want := s.Op.InputBytes(s.Size, s.Ranks); s.InputBytes != want {
		return bad("InputBytes %d, want %d for %v of %d B over %d ranks", s.InputBytes, want, s.Op, s.Size, s.Ranks)
	}
	if want := s.Op.OutputBytes(s.Size, s.Ranks); s.OutputBytes != want {
		return bad("OutputBytes %d, want %d for %v of %d B over %d ranks", s.OutputBytes, want, s.Op, s.Size, s.Ranks)
	}
	if s.ScratchBytes < 0 || s.ScratchBytes%int64(s.Elem) != 0 {
		return bad("ScratchBytes %d: want a non-negative multiple of %d", s.ScratchBytes, s.Elem)
	}
	return nil
}

func (s *Schedule) bufLen(b Buffer) int64 {
	switch b {
	case Input:
		return s.InputBytes
	case Output:
		return s.OutputBytes
	case Scratch:
		return s.ScratchBytes
	}
	return 0
}

// checkRange reports why [off, off+n) is not a valid range of rank's buffer b.
func (s *Schedule) checkRange(what string, rank int, b Buffer, off, n int64) error {
	e := int64(s.Elem)
	switch {
	case rank < 0 || rank >= s.Ranks:
		return fmt.Errorf("%s rank %d out of 0..%d", what, rank, s.Ranks-1)
	case !b.valid():
		return fmt.Errorf("%s buffer %v", what, b)
	case off < 0 || off%e != 0:
		return fmt.Errorf("%s offset %d is negative or not a multiple of the element size %d", what, off, e)
	case off > s.bufLen(b)-n:
		return fmt.Errorf("%s range [%d,%d) passes the end of rank %d's %v (%d B)", what, off, off+n, rank, b, s.bufLen(b))
	}
	return nil
}

// checkXfer checks one transfer's ranks, buffers, alignment and bounds.
func (s *Schedule) checkXfer(x Xfer) error {
	if x.Len <= 0 || x.Len%int64(s.Elem) != 0 {
		return fmt.Errorf("length %d is not a positive multiple of the element size %d", x.Len, s.Elem)
	}
	if err := s.checkRange("source", x.Src, x.SrcBuf, x.SrcOff, x.Len); err != nil {
		return err
	}
	return s.checkRange("destination", x.Dst, x.DstBuf, x.DstOff, x.Len)
}

// span is a byte range of one rank's buffer touched by one transfer of a step.
type span struct {
	key    int // rank*3 + buffer
	lo, hi int64
	idx    int // transfer index in the step
	write  bool
}

func (sp span) describe() string {
	verb := "read"
	if sp.write {
		verb = "written"
	}
	return fmt.Sprintf("rank %d %v [%d,%d) %s by xfer %d", sp.key/3, Buffer(sp.key%3), sp.lo, sp.hi, verb, sp.idx)
}

// Validate checks the schedule: its header (op, algorithm, ranks, element
// size, buffer lengths consistent with the op and size), every transfer
// (ranks in range, valid buffers, Len > 0, offsets and lengths multiples of
// Elem, ranges inside the buffers) and the step rule: within a step, on each
// rank's buffer, written ranges are disjoint from one another and from the
// ranges read. An error wraps ErrInvalidSchedule and names the step, the
// transfer index and the rank, buffer and range.
func (s *Schedule) Validate() error {
	if s == nil {
		return fmt.Errorf("enc: nil schedule: %w", ErrInvalidSchedule)
	}
	if err := s.checkHeader(); err != nil {
		return err
	}
	var spans []span
	for si, st := range s.Steps {
		spans = spans[:0]
		for xi, x := range st.Xfers {
			if err := s.checkXfer(x); err != nil {
				return fmt.Errorf("enc: schedule: step %d, xfer %d (%v): %v: %w", si, xi, x, err, ErrInvalidSchedule)
			}
			spans = append(spans,
				span{key: x.Dst*3 + int(x.DstBuf), lo: x.DstOff, hi: x.DstOff + x.Len, idx: xi, write: true},
				span{key: x.Src*3 + int(x.SrcBuf), lo: x.SrcOff, hi: x.SrcOff + x.Len, idx: xi})
		}
		if a, b, ok := overlap(spans); ok {
			return fmt.Errorf("enc: schedule: step %d, xfer %d: %s overlaps %s: %w", si, b.idx, b.describe(), a.describe(), ErrInvalidSchedule)
		}
	}
	return nil
}

// overlap finds two spans of the same rank buffer that overlap where at least
// one of them is a write. It sorts spans.
func overlap(spans []span) (first, second span, found bool) {
	slices.SortFunc(spans, func(a, b span) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.lo, b.lo), cmp.Compare(a.idx, b.idx))
	})
	var lastW, lastR span // the write and the read reaching furthest so far on this key
	haveW, haveR := false, false
	for i, sp := range spans {
		if i == 0 || sp.key != spans[i-1].key {
			haveW, haveR = false, false
		}
		if haveW && lastW.hi > sp.lo {
			return lastW, sp, true
		}
		if sp.write && haveR && lastR.hi > sp.lo {
			return lastR, sp, true
		}
		if sp.write {
			if !haveW || sp.hi > lastW.hi {
				lastW, haveW = sp, true
			}
		} else if !haveR || sp.hi > lastR.hi {
			lastR, haveR = sp, true
		}
	}
	return span{}, span{}, false
}
