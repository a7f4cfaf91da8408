package enc

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Algo is a collective algorithm.
type Algo uint8

// The algorithms, named as nccom-test's --show-algorithm labels them.
const (
	// Auto lets Policy choose by op, size and rank count.
	Auto Algo = iota
	// Ring passes one block per step to the next rank in a ring: r−1 steps
	// per phase, bandwidth-optimal.
	Ring
	// Mesh writes directly from every rank to every other: a constant number
	// of steps, every link busy at once.
	Mesh
	// RDH is recursive halving (reduce-scatter) and recursive doubling
	// (all-gather): log2(r) steps per phase, for power-of-two rank counts.
	RDH
	// KangaRing runs two rings at once, half the data in each direction, so
	// that both directions of every ring link carry data; even rank counts.
	KangaRing
	// Hier is hierarchical over groups of Options.GroupSize ranks (the
	// ranks of one node): ring phases inside the groups and between ranks of
	// the same position in different groups.
	Hier
)

var algoNames = [...]string{
	Auto:      "auto",
	Ring:      "ring",
	Mesh:      "mesh",
	RDH:       "rdh",
	KangaRing: "kangaring",
	Hier:      "hier",
}

// ParseAlgo reads an algorithm name: auto, ring, mesh, rdh, kangaring or
// hier (case and surrounding space ignored). An unknown word gives an error
// that wraps ErrUnknownAlgo and lists the accepted words.
func ParseAlgo(s string) (Algo, error) {
	w := units.Word(s)
	for a, name := range algoNames {
		if w == name {
			return Algo(a), nil
		}
	}
	return 0, fmt.Errorf("enc: %w %q (accepted: %s)", ErrUnknownAlgo, s, strings.Join(algoNames[:], ", "))
}

func (a Algo) valid() bool { return a <= Hier }

// String returns the algorithm's name ("auto", "ring", "mesh", "rdh",
// "kangaring", "hier"); "Algo(n)" for other values.
func (a Algo) String() string {
	if a.valid() {
		return algoNames[a]
	}
	return fmt.Sprintf("Algo(%d)", uint8(a))
}

// Policy is the automatic choice of algorithm by message size, after the
// Neuron runtime's empirical sweet spots (trainium-facts §5.1): Mesh below
// MeshMax bytes, RDH from MeshMax up to and including RDHMax bytes, and Ring
// above RDHMax (KangaRing instead when DualRing is set and the rank count is
// even). RDH needs a power-of-two rank count: for other counts the RDH range
// falls to Ring. These thresholds apply to AllReduce, AllGather and
// ReduceScatter; AllToAll always uses Mesh and Permute Ring. Over ranks in
// several nodes (ChooseIn with the ranks per node, Options.GroupSize) those
// three ops use Hier when a node holds more than one rank — or, with
// FlatRing, a flat Ring over every rank from FlatRingMin bytes on.
type Policy struct {
	// MeshMax: messages of fewer bytes use Mesh. The runtime's "1 MB",
	// read as 1 MiB (1<<20) by DefaultPolicy.
	MeshMax int64
	// RDHMax: messages of at least MeshMax and at most RDHMax bytes use RDH
	// (power-of-two rank counts). The runtime's "56 MB", read as 56 MiB
	// (56<<20) by DefaultPolicy.
	RDHMax int64
	// DualRing: above RDHMax use KangaRing rather than Ring when the rank
	// count is even (the runtime does when all ranks of each chip are in the
	// group).
	DualRing bool
	// FlatRing: over several nodes, messages of at least FlatRingMin bytes
	// take a flat Ring over every rank (one channel per EFA NIC) rather
	// than Hier — the runtime's flat ring, "Trn1 large messages only"
	// (trainium-facts §5.1; FlatRingPolicy).
	FlatRing    bool
	FlatRingMin int64
}

// DefaultPolicy returns the runtime's thresholds: MeshMax 1 MiB, RDHMax
// 56 MiB, DualRing off, FlatRing off.
func DefaultPolicy() Policy {
	return Policy{MeshMax: 1 << 20, RDHMax: 56 << 20}
}

// DefaultFlatRingMin is where FlatRingPolicy's flat ring starts: 64 MiB.
// The runtime says only "large messages" (trainium-facts §5.1): chosen as
// the first power of two past RDHMax, where one node's policy has also
// gone to Ring.
const DefaultFlatRingMin = 64 << 20

// FlatRingPolicy is DefaultPolicy with the flat ring of Trn1 across nodes:
// FlatRing from DefaultFlatRingMin bytes.
func FlatRingPolicy() Policy {
	p := DefaultPolicy()
	p.FlatRing, p.FlatRingMin = true, DefaultFlatRingMin
	return p
}

// ChooseIn returns the algorithm Auto resolves to for op over ranks ranks
// in nodes of group ranks each (Options.GroupSize; ranks g·n … g·n+g−1
// are node n). When group divides ranks and 1 < group < ranks — ranks in
// several nodes, more than one in each — AllReduce, AllGather and
// ReduceScatter use Hier (the runtime's hierarchical algorithm for
// multi-rank-per-node groups, trainium-facts §5.1), or with FlatRing a
// flat Ring from FlatRingMin bytes on; otherwise (one node, one rank per
// node, a group that does not divide the ranks, the other ops) it is
// Choose. It never returns Auto.
func (p Policy) ChooseIn(op Op, size int64, ranks, group int) Algo {
	spans := group > 1 && group < ranks && ranks%group == 0
	if spans && (op == AllReduce || op == AllGather || op == ReduceScatter) {
		if p.FlatRing && size >= p.FlatRingMin {
			return Ring
		}
		return Hier
	}
	return p.Choose(op, size, ranks)
}

// Choose returns the algorithm Auto resolves to for op over ranks ranks of
// one node with a message of size bytes (nccom-test's size(B)). It never
// returns Auto or Hier (ChooseIn does, over several nodes).
func (p Policy) Choose(op Op, size int64, ranks int) Algo {
	switch op {
	case AllToAll:
		return Mesh
	case AllReduce, AllGather, ReduceScatter:
	default:
		return Ring
	}
	switch {
	case size < p.MeshMax:
		return Mesh
	case size <= p.RDHMax && isPow2(ranks):
		return RDH
	case size <= p.RDHMax:
		return Ring
	case p.DualRing && ranks%2 == 0:
		return KangaRing
	}
	return Ring
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

func log2(n int) int { return bits.Len(uint(n)) - 1 }

// ceilLog2 is the number of levels of a binary tree over n leaves.
func ceilLog2(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// GroupDivides reports whether group, Options.GroupSize (the ranks of a
// node), splits ranks into whole groups: what Hier and the channels of a
// ring need. The command line checks --group-size with it, naming the flag.
func GroupDivides(group, ranks int) bool { return group >= 1 && group <= ranks && ranks%group == 0 }

// check reports why algo a cannot run op over ranks ranks with the given
// group size (nil when it can).
func (a Algo) check(op Op, ranks, group int) error {
	switch a {
	case Ring:
		if op == AllToAll {
			return fmt.Errorf("ring does not implement alltoall (use mesh)")
		}
	case Mesh:
	case RDH:
		if op == AllToAll || op == Permute {
			return fmt.Errorf("rdh implements only all_reduce, all_gather and reduce_scatter")
		}
		if !isPow2(ranks) {
			return fmt.Errorf("rdh needs a power-of-two rank count, not %d", ranks)
		}
	case KangaRing:
		if op == AllToAll || op == Permute {
			return fmt.Errorf("kangaring implements only all_reduce, all_gather and reduce_scatter")
		}
		if ranks%2 != 0 {
			return fmt.Errorf("kangaring pairs the ranks and needs an even rank count, not %d", ranks)
		}
	case Hier:
		if op == AllToAll || op == Permute {
			return fmt.Errorf("hier implements only all_reduce, all_gather and reduce_scatter")
		}
		if group < 1 {
			return fmt.Errorf("hier needs Options.GroupSize (ranks per node) ≥ 1, got %d", group)
		}
		if !GroupDivides(group, ranks) {
			return fmt.Errorf("hier group size %d does not divide %d ranks", group, ranks)
		}
	default:
		return fmt.Errorf("%w: %v", ErrUnknownAlgo, a)
	}
	return nil
}

// ChannelsApply reports whether Options.Channels can change a schedule of
// op with algo: the channels are Ring's rings side by side (the flat
// ring's across nodes), so algo is Ring, or Auto, which may choose it,
// and op is AllReduce, AllGather or ReduceScatter. Permute's ring is one
// shift to its peers, which the channels leave as it is, and AllToAll runs
// on Mesh only. Every surface that takes a channel count refuses it where
// this is false, and no report notes channels for such a run.
func ChannelsApply(op Op, algo Algo) bool {
	return (algo == Ring || algo == Auto) && (op == AllReduce || op == AllGather || op == ReduceScatter)
}
