package nccom

import (
	"fmt"
	"math"
	"strings"
	"unicode"
)

// The collective names BusFactor and Report.Op accept.
const (
	OpAllReduce     = "all_reduce"
	OpAllGather     = "all_gather"
	OpReduceScatter = "reduce_scatter"
	OpAllToAll      = "alltoall"
	OpPermute       = "permute"
)

// Ops lists the collective names this package knows, in a fixed order.
func Ops() []string {
	return []string{OpAllReduce, OpAllGather, OpReduceScatter, OpAllToAll, OpPermute}
}

// BusFactor returns the factor that turns algorithm bandwidth into bus
// bandwidth for the collective op on ranks ranks, as in nccl-tests and
// nccom-test:
//
//	all_reduce                            2(r−1)/r
//	all_gather, reduce_scatter, alltoall  (r−1)/r
//	permute                               1
//
// With a single rank the (r−1) factors are 0, so busbw is 0: no byte crosses
// the fabric. nccl-tests prints exactly that for one rank; nccom-test's
// behaviour on one rank is not documented (it is normally run with two or
// more), and we follow nccl-tests rather than refuse. A permute on one rank
// keeps factor 1.
//
// op must be one of the names above, spelled exactly (lower case, with the
// underscores); anything else wraps [ErrUnknownOp]. ranks < 1 wraps
// [ErrBadRanks].
func BusFactor(op string, ranks int) (float64, error) {
	if ranks < 1 {
		return 0, fmt.Errorf("%w: %d ranks for %s (need at least 1)", ErrBadRanks, ranks, op)
	}
	r := float64(ranks)
	switch op {
	case OpAllReduce:
		return 2 * (r - 1) / r, nil
	case OpAllGather, OpReduceScatter, OpAllToAll:
		return (r - 1) / r, nil
	case OpPermute:
		return 1, nil
	}
	return 0, fmt.Errorf("%w: %q (want one of %s)", ErrUnknownOp, op, strings.Join(Ops(), ", "))
}

// Row is one size's result: one line of the nccom-test table and one entry
// of the JSON report's "results".
type Row struct {
	Size      int64   // bytes, the "size(B)" column
	Count     int64   // elements, the "count(elems)" column: Size / element size
	Type      string  // dtype name such as "fp32" or "bf16", the "type" column
	TimeUS    float64 // average time in microseconds, the "time:avg(us)" column
	AlgBW     float64 // algorithm bandwidth in GB/s (1e9 bytes/s): Size / time
	BusBW     float64 // bus bandwidth in GB/s (1e9 bytes/s): AlgBW × BusFactor
	Algorithm string  // collective algorithm: "ring", "mesh", "rdh", "kangaring", "hier", …
}

// NewRow builds the row for a collective op on ranks ranks that moved size
// bytes of elements of elemSize bytes named typ (fp32, bf16, fp16, int32,
// uint32, int8, uint8, int16, uint16, or whatever the caller names) in
// timePS picoseconds with algorithm algo.
//
// Count is size / elemSize; TimeUS is timePS / 1e6; AlgBW is size / time in
// GB/s (1e9 bytes/s) and BusBW is AlgBW × [BusFactor](op, ranks), computed
// from the same AlgBW value so that BusBW == factor × AlgBW exactly. A zero
// time gives zero bandwidths rather than Inf or NaN.
//
// Errors: an unknown op or a bad rank count (from BusFactor), a negative
// size, an element size below 1, a size that is not a whole number of
// elements, an empty type or algorithm name or one containing spaces or
// control characters (they would break the table's columns); all but the
// first two wrap [ErrBadReport].
func NewRow(op string, ranks int, size int64, elemSize int, typ string, timePS uint64, algo string) (Row, error) {
	factor, err := BusFactor(op, ranks)
	if err != nil {
		return Row{}, err
	}
	switch {
	case size < 0:
		return Row{}, fmt.Errorf("%w: negative size %d", ErrBadReport, size)
	case elemSize < 1:
		return Row{}, fmt.Errorf("%w: element size %d of type %q is not positive", ErrBadReport, elemSize, typ)
	case size%int64(elemSize) != 0:
		return Row{}, fmt.Errorf("%w: size %d is not a whole number of %d-byte %s elements", ErrBadReport, size, elemSize, typ)
	}
	if err := checkName("type", typ); err != nil {
		return Row{}, err
	}
	if err := checkName("algorithm", algo); err != nil {
		return Row{}, err
	}
	row := Row{
		Size:      size,
		Count:     size / int64(elemSize),
		Type:      typ,
		TimeUS:    float64(timePS) / 1e6,
		Algorithm: algo,
	}
	if timePS != 0 {
		// bytes per microsecond is MB/s; divide by 1e3 for GB/s (1e9 B/s).
		row.AlgBW = float64(size) / row.TimeUS / 1e3
	}
	row.BusBW = row.AlgBW * factor
	return row, nil
}

// Validate reports whether the row can be printed and written: sizes and
// counts not negative, times and bandwidths finite and not negative, type and
// algorithm non-empty single words. The error wraps [ErrBadReport].
func (r Row) Validate() error {
	switch {
	case r.Size < 0:
		return fmt.Errorf("%w: negative size(B) %d", ErrBadReport, r.Size)
	case r.Count < 0:
		return fmt.Errorf("%w: negative count(elems) %d", ErrBadReport, r.Count)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"time:avg(us)", r.TimeUS}, {"algbw(GB/s)", r.AlgBW}, {"busbw(GB/s)", r.BusBW}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("%w: %s is %v (want a finite number ≥ 0)", ErrBadReport, f.name, f.v)
		}
	}
	if err := checkName("type", r.Type); err != nil {
		return err
	}
	return checkName("algorithm", r.Algorithm)
}

// checkName accepts a non-empty token without spaces or control characters.
func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s name", ErrBadReport, what)
	}
	if i := strings.IndexFunc(s, func(c rune) bool {
		return unicode.IsSpace(c) || unicode.IsControl(c) || c == unicode.ReplacementChar
	}); i >= 0 {
		return fmt.Errorf("%w: %s name %q contains a space, control or invalid character", ErrBadReport, what, s)
	}
	return nil
}
