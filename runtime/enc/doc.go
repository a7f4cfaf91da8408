// Package enc builds collective-communication schedules: all-reduce,
// all-gather, reduce-scatter, all-to-all and permute over a group of ranks,
// written out as data.
//
// A Schedule is a list of Steps; each Step is a set of Xfers (transfers) that
// run concurrently, each moving a byte range from one rank's buffer to another
// rank's buffer (or to the same rank), either as a copy or as an elementwise
// sum into the destination. The algorithms of the Neuron runtime's collective
// library are encoded here as such schedules: Ring, Mesh, RDH (recursive
// halving and doubling), KangaRing (two rings in opposite directions) and Hier
// (hierarchical: intra-group, then inter-group, then intra-group). Policy
// picks one by message size the way the runtime does (Auto).
//
// The package does not simulate anything and knows no device: it is the
// schedules' algebra, and imports no device, DMA or program package.
// runtime/collective executes the schedules on devices'
// DMA engines; this package only proves them: Schedule.Validate checks the
// concurrency rule of a step (no two transfers write the same bytes, and
// no transfer writes bytes another one reads), Apply carries a schedule
// out on CPU buffers, and Expected and Verify compute and check the result
// a collective must produce, exactly for integer data and within a
// documented tolerance for floating-point data (whose sums depend on the
// order of addition).
//
// Sizes follow nccom-test's size(B) column; see Op.InputBytes. The step
// semantics, the algorithms with their step counts and bytes per rank, the
// automatic policy and the tolerances are described in docs/collectives.md.
package enc

import "errors"

// Sentinel errors. Every error the package returns wraps one of them.
var (
	// ErrUnknownOp: a collective name ParseOp does not know, or an Op value
	// outside the defined constants.
	ErrUnknownOp = errors.New("unknown collective op")
	// ErrUnknownAlgo: an algorithm name ParseAlgo does not know, or an Algo
	// value outside the defined constants.
	ErrUnknownAlgo = errors.New("unknown collective algorithm")
	// ErrUnknownDtype: a data type name ParseDtype does not know, or a Dtype
	// value outside the defined constants.
	ErrUnknownDtype = errors.New("unknown data type")
	// ErrBadCollective: Build (or Expected) cannot describe the collective
	// asked for: bad rank count, size, element size, options, or an
	// algorithm that cannot do this op or rank count.
	ErrBadCollective = errors.New("bad collective")
	// ErrInvalidSchedule: a Schedule breaks a rule of the model (a transfer
	// out of range, or overlapping ranges within a step).
	ErrInvalidSchedule = errors.New("invalid schedule")
	// ErrBadBuffers: buffers whose number or lengths do not fit the schedule
	// or the data type.
	ErrBadBuffers = errors.New("buffers do not fit")
	// ErrMismatch: Verify found an output that differs from the reference
	// result by more than the tolerance.
	ErrMismatch = errors.New("collective result mismatch")
)

// Limits of Build.
const (
	// MaxRanks is the largest rank count Build accepts.
	MaxRanks = 4096
	// MaxSize is the largest message size in bytes Build accepts (1 EiB),
	// which keeps every offset it computes far from int64 overflow.
	MaxSize = 1 << 60
	// MaxChunks is the largest Options.Chunks Build accepts.
	MaxChunks = 1 << 16
	// MaxChannels is the largest Options.Channels Build accepts: more
	// than any node has EFA NICs (a Trn3 Gen2 UltraServer's 144 chips).
	MaxChannels = 256
	// MaxXfers is the most transfers a built schedule may hold (56 bytes
	// each: at most 3.5 GiB); Build refuses larger schedules (ring and mesh
	// schedules grow with the square of the rank count, a flat ring's also
	// with its channels) rather than exhaust memory, counting them in a
	// first pass that holds one transfer a step, so a refused schedule is
	// never allocated. Below it, what a run may hold is the host-memory
	// estimates' to refuse (internal/cluster's TimingMemory counts a
	// schedule with Count, never building it).
	MaxXfers = 1 << 26
)
