package enc

import (
	"fmt"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Op is a collective operation.
type Op uint8

// The collective operations, named as nccom-test names them.
const (
	// AllReduce: every rank ends with the elementwise sum of all inputs.
	AllReduce Op = iota + 1
	// AllGather: every rank ends with the concatenation of all inputs, in
	// rank order.
	AllGather
	// ReduceScatter: the inputs are summed elementwise and rank j ends with
	// block j (of r equal blocks) of the sum.
	ReduceScatter
	// AllToAll: rank i's input block j (of r equal blocks) becomes rank j's
	// output block i.
	AllToAll
	// Permute: rank i's input becomes rank Peers[i]'s output.
	Permute
)

// opNames are the String forms, indexed by Op.
var opNames = [...]string{
	AllReduce:     "all_reduce",
	AllGather:     "all_gather",
	ReduceScatter: "reduce_scatter",
	AllToAll:      "alltoall",
	Permute:       "permute",
}

// opWords are the words ParseOp accepts (nccom-test's op names and aliases).
var opWords = map[string]Op{
	"all_reduce":     AllReduce,
	"allr":           AllReduce,
	"all_gather":     AllGather,
	"allg":           AllGather,
	"reduce_scatter": ReduceScatter,
	"redsct":         ReduceScatter,
	"alltoall":       AllToAll,
	"all_to_all":     AllToAll,
	"permute":        Permute,
}

const opAccepted = "all_reduce|allr, all_gather|allg, reduce_scatter|redsct, alltoall|all_to_all, permute"

// ParseOp reads an nccom-test op name: all_reduce|allr, all_gather|allg,
// reduce_scatter|redsct, alltoall|all_to_all or permute (case and surrounding
// space ignored). An unknown word gives an error that wraps ErrUnknownOp and
// lists the accepted words.
func ParseOp(s string) (Op, error) {
	if op, ok := opWords[units.Word(s)]; ok {
		return op, nil
	}
	return 0, fmt.Errorf("enc: %w %q (accepted: %s)", ErrUnknownOp, s, opAccepted)
}

func (o Op) valid() bool { return o >= AllReduce && o <= Permute }

// String returns the op's nccom-test name: "all_reduce", "all_gather",
// "reduce_scatter", "alltoall" or "permute"; "Op(n)" for other values.
func (o Op) String() string {
	if o.valid() {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// splits reports whether the op cuts its message into one block per rank, so
// that the size must be a multiple of elem×ranks.
func (o Op) splits() bool {
	return o == AllGather || o == ReduceScatter || o == AllToAll
}

// SizeAlign is the granularity of the op's message sizes with elements of
// elem bytes over ranks ranks: a valid size is a multiple of it. It is elem,
// times ranks for the ops that cut their message into one block per rank
// (AllGather, ReduceScatter, AllToAll). Sweeps (nccom.Sizes) round their
// sizes to it; Build refuses sizes that are not multiples of it.
func (o Op) SizeAlign(elem, ranks int) int64 {
	if o.splits() {
		return int64(elem) * int64(ranks)
	}
	return int64(elem)
}

// reduces reports whether the op sums its inputs.
func (o Op) reduces() bool { return o == AllReduce || o == ReduceScatter }

// BusFactor is nccom-test's factor from algorithm bandwidth (size / time) to
// bus bandwidth: 2(r−1)/r for AllReduce; (r−1)/r for AllGather,
// ReduceScatter and AllToAll; 1 for Permute. It is 0 for ranks < 1 and for
// unknown ops.
func (o Op) BusFactor(ranks int) float64 {
	if ranks < 1 {
		return 0
	}
	r := float64(ranks)
	switch o {
	case AllReduce:
		return 2 * (r - 1) / r
	case AllGather, ReduceScatter, AllToAll:
		return (r - 1) / r
	case Permute:
		return 1
	}
	return 0
}

// InputBytes is the length of each rank's input buffer for a message of size
// bytes (nccom-test's size(B)) over ranks ranks: size/ranks for AllGather
// (size is the gathered output), size for every other op. It is 0 for
// ranks < 1, size < 0 and unknown ops.
func (o Op) InputBytes(size int64, ranks int) int64 {
	if ranks < 1 || size < 0 || !o.valid() {
		return 0
	}
	if o == AllGather {
		return size / int64(ranks)
	}
	return size
}

// OutputBytes is the length of each rank's output buffer for a message of
// size bytes over ranks ranks: size/ranks for ReduceScatter (size is the
// input being reduced), size for every other op. It is 0 for ranks < 1,
// size < 0 and unknown ops.
func (o Op) OutputBytes(size int64, ranks int) int64 {
	if ranks < 1 || size < 0 || !o.valid() {
		return 0
	}
	if o == ReduceScatter {
		return size / int64(ranks)
	}
	return size
}
