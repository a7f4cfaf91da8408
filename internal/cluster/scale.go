package cluster

import (
	"cmp"
	"math"
	"slices"
	"unsafe"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// DeviceHostBytes is the host memory one device of a timing-only cluster
// holds before any collective runs: the simulated device (its DMA engines'
// state, its cores, its register atlas), its share of the fabric (links,
// the next-hop table's row, cached paths) and the runtime's stack on it
// (bring-up, DMA layer, allocator). Measured by BenchmarkClusterBuild:
// 103,279 bytes per device at 1,024 devices, 90,621 at 4,096 (126 KB at 2,
// 76–79 KB at 16 to 256), since the DMA engines' state is made only for the
// engines a run writes (441,506 and 446,219 bytes before, when this was
// 1 MiB; docs/fabric.md §Thousands of devices); rounded up to 256 KiB,
// which leaves room for the engines a run makes (2.3 KiB each, 8 a device
// for a ring) and the cores' and fabric's state it touches.
// TestDeviceHostBytes holds it above what a device holds.
const DeviceHostBytes = 256 << 10

// A descriptor pair and an SP record as a staged run holds them: the pair
// in the plan (runtime/dma.Vring, 24 bytes; 32 counted) and twice in the queue's ring
// in host memory (two 16-byte descriptors, the ring rounded up to a power
// of two); the record in the plan, in its bytes on their way to the device
// and in device memory.
const (
	pairHostBytes   = 32 + 2*2*udma.DescriptorSize
	recordHostBytes = 3 * isa.RecordSize
)

// RunHostBytes is what a timing-only run holds whatever its devices and
// schedule: the fabric system, the host-memory model and its buffer cache,
// the executor's tables. Measured: a 1 GiB ring all-reduce on 2 devices,
// a sweep grid's point (internal/sweep TestMemoryEstimates), grows the heap
// by 3.4 MiB at its peak, of which TimingMemory's other terms count 3.0;
// rounded up to 4 MiB.
const RunHostBytes = 4 << 20

// fedQueueHostBytes bounds what one fed queue of a streamed run holds: the
// descriptor pairs planned and not yet read, and the last ones read
// (runtime/dma keeps 64), in a vring of 24 bytes a pair (32 are counted)
// whose array is compacted once half of it is let go. Measured: at most
// 138 pairs on any queue of a 1 GiB ring all-reduce on 144 devices
// (110,626 on all 1,152 queues together, of its 8.1 million); 1,024 pairs
// are counted.
const fedQueueHostBytes = 1024 * 32

// creditKeyBytes bounds what the planner keeps per transfer to tell a
// rank's sets of targets apart (runtime/collective's credit semaphores by
// target set): each target of a set in at most two bytes, in each of a
// streamed run's two planners (a mesh rank's set of 4,095 targets, 8 KiB).
const creditKeyBytes = 2 * 2

// TimingMemory estimates the host memory, in bytes, that running the
// largest of the sizes timing-only on a cluster of devices devices (ranks
// ranks, each spreading its transfers over engines DMA engines; 0: the
// calibrated 5 on Trn2 and Trn3) holds at its peak, so that a run that would exhaust the
// host is refused before it starts (the command line's --mem-limit). No
// payload is held in timing-only mode. The executor streams the run on the
// simulated devices (runtime/collective, docs/collectives.md §On devices):
// it holds the schedule, every rank's SP program (records of 64 bytes: in
// the plan until the rank is loaded, then in device memory, which the
// simulator keeps in host memory; one rank's twice more on its way there)
// and, while the devices run, only the descriptors planned and not yet
// read (fedQueueHostBytes per queue of every rank: its data engines' and
// its control queue). A ring all-reduce on n ranks has 2(n−1) steps of n
// transfers, so its SP records grow as n² — a 1 GiB ring all-reduce on
// 1,024 devices has 23 million, 1.4 GiB — but its descriptors (70 million
// there) are no longer all held. The sum is doubled for the Go collector's
// headroom, as FunctionalMemory's; per device DeviceHostBytes, and
// RunHostBytes once.
// StagedTimingMemory is the estimate of a staged run.
func TimingMemory(op enc.Op, algo enc.Algo, devices, ranks, engines int, d enc.Dtype, sizes []int64, opt enc.Options) (uint64, error) {
	need, _, err := timingMemory(op, algo, devices, ranks, engines, d, sizes, opt, false, math.MaxUint64)
	return need, err
}

// TimingMemoryOver is TimingMemory for a caller that only needs to know
// whether the sweep fits in limit bytes: it counts the schedules of the
// algorithms' largest sizes (Largest) largest size first and stops at the
// first whose estimate (FixedTimingMemory included) is over limit,
// returning that estimate and its size — a lower bound on TimingMemory,
// and the size that alone is too large; within the limit, TimingMemory
// and the size that needs it. Counting a schedule of thousands of ranks
// takes seconds (a 1 GiB ring all-reduce on 4,096 ranks, 33 million
// transfers, about 4 s), so a refusal counts one schedule where it can,
// not one per algorithm the sweep runs.
func TimingMemoryOver(op enc.Op, algo enc.Algo, devices, ranks, engines int, d enc.Dtype, sizes []int64, opt enc.Options, limit uint64) (need uint64, size int64, err error) {
	return timingMemory(op, algo, devices, ranks, engines, d, sizes, opt, false, limit)
}

// StagedTimingMemory is TimingMemory for an executor that runs staged
// (collective.Executor.Staged, or devices without lazy host memory): every
// descriptor of a run planned and written into the rings before it
// starts. Per run it counts the schedule's transfers, every descriptor
// pair (each slice of a transfer in 64 KiB pieces, its arrival signal, an
// engine's done signal per step, the control queue's go, credit and
// finish writes) and every SP record, as pairHostBytes and
// recordHostBytes, doubled for the collector; per device DeviceHostBytes.
// A 1 GiB ring all-reduce on 1,024 devices needs about 27.6 GiB so (3.9 GiB
// streamed).
func StagedTimingMemory(op enc.Op, algo enc.Algo, devices, ranks, engines int, d enc.Dtype, sizes []int64, opt enc.Options) (uint64, error) {
	need, _, err := timingMemory(op, algo, devices, ranks, engines, d, sizes, opt, true, math.MaxUint64)
	return need, err
}

// timingMemory is TimingMemory (staged false, no limit),
// StagedTimingMemory and TimingMemoryOver: the peak estimate and the size
// that needs it, or the first estimate over limit and its size. It counts
// each largest schedule with enc.Count (estimateCount), never building
// it: a schedule too large for the host is refused by the estimate
// without first being allocated for it. The largest sizes come first, so
// that the first over limit is found early.
func timingMemory(op enc.Op, algo enc.Algo, devices, ranks, engines int, d enc.Dtype, sizes []int64, opt enc.Options, staged bool, limit uint64) (uint64, int64, error) {
	fixed := FixedTimingMemory(devices)
	reps := Largest(op, algo, ranks, sizes, opt)
	slices.SortStableFunc(reps, func(a, b AlgoSize) int { return cmp.Compare(b.Size, a.Size) })
	var peak uint64
	var at int64
	for _, rep := range reps {
		_, ct, err := estimateCount(op, rep.Algo, ranks, rep.Size, d.Size(), opt, engines, nil)
		if err != nil {
			return 0, 0, err
		}
		if m := ct.memory(staged) + fixed; m > peak {
			peak, at = m, rep.Size
		}
		if peak > limit {
			break
		}
	}
	if len(reps) == 0 {
		peak = fixed
	}
	return peak, at, nil
}

// estimateCount is countRun for timingMemory; a test replaces it to count
// the schedules an estimate counts.
var estimateCount = countRun

// CountTimingMemory is the part of TimingMemory that running the
// collective's schedule timing-only holds (engines per rank; 0: the
// calibrated 5 on Trn2 and Trn3) — its transfers (with the planner's credit sets, creditKeyBytes), SP programs and fed queues, doubled for
// the collector; TimingMemory of one size is it plus FixedTimingMemory —
// found by counting the schedule (enc.Count), never building it, for a
// caller that measures the schedule itself too (a sweep grid's point). It
// returns the schedule without its steps; visit, if not nil, sees each
// transfer as enc.Count gives it (a caller's own measures of the
// schedule, from the same pass). Errors are enc.Count's.
func CountTimingMemory(op enc.Op, algo enc.Algo, ranks int, size int64, elem int, opt enc.Options, engines int, visit func(step int, x enc.Xfer)) (*enc.Schedule, uint64, error) {
	head, ct, err := countRun(op, algo, ranks, size, elem, opt, engines, visit)
	if err != nil {
		return nil, 0, err
	}
	return head, ct.memory(false), nil
}

// countRun counts the collective's schedule with enc.Count into a counter
// (engines per rank), visit (if not nil) seeing every transfer too; it
// returns the schedule without its steps and the counter.
func countRun(op enc.Op, algo enc.Algo, ranks int, size int64, elem int, opt enc.Options, engines int, visit func(step int, x enc.Xfer)) (*enc.Schedule, *counter, error) {
	ct := newCounter(ranks, elem, engines)
	add := ct.add
	if visit != nil {
		add = func(st int, x enc.Xfer) {
			ct.add(st, x)
			visit(st, x)
		}
	}
	head, _, err := enc.Count(op, algo, ranks, size, elem, opt, add)
	if err != nil {
		return nil, nil, err
	}
	return head, ct, nil
}

// FixedTimingMemory is the part of TimingMemory that does not depend on
// the schedule: DeviceHostBytes per device and RunHostBytes once.
func FixedTimingMemory(devices int) uint64 {
	return uint64(devices)*DeviceHostBytes + RunHostBytes
}

// memory is what running the schedule counted holds, streamed or staged,
// doubled for the collector.
func (ct *counter) memory(staged bool) uint64 {
	c := ct.counts()
	live := c.xfers * (uint64(unsafe.Sizeof(enc.Xfer{})) + creditKeyBytes)
	if staged {
		live += c.pairs*pairHostBytes + c.records*recordHostBytes
	} else {
		live += (c.records+2*c.rankRecords)*isa.RecordSize + uint64(ct.ranks)*uint64(ct.engines+1)*fedQueueHostBytes
	}
	return 2 * live
}

// counts is what the executor plans for a run (runCounts).
type counts struct {
	pairs, records, xfers uint64
	rankRecords           uint64 // the most records of one rank
}

// counter counts what the executor plans for a schedule with engines
// data engines per rank (runtime/collective's planner), from its transfers
// given one at a time in any order with their step's index (add): descriptor
// pairs — each slice of a transfer in 64 KiB pieces and its arrival signal,
// per rank and step a done signal of every engine it used and a credit per
// transfer into it from another rank, the go and finish writes — SP
// records — per rank and step at most three waits and a trigger per engine
// used and of the control queue, and the release and finish — and the
// schedule's transfers, and the most records of one rank.
type counter struct {
	ranks, engines int
	elem           int64
	c              counts
	// used[step][rank] is the engines rank's transfers of the step use
	// (their slices, at most engines); nil for a step with no transfer.
	used [][]uint8
}

// newCounter is a counter for a schedule of ranks ranks and elements of
// elem bytes; engines ≤ 0 is the calibrated count (5 on Trn2 and Trn3), and more than 255 count as
// 255 (used's width: a NeuronCore has at most 16 DMA engines, and the
// executor spreads a transfer over no more than its core has).
func newCounter(ranks, elem, engines int) *counter {
	if engines <= 0 {
		engines = collective.Calibrated(hwarch.Mariana).Engines
	}
	engines = min(engines, math.MaxUint8)
	return &counter{ranks: ranks, engines: engines, elem: int64(elem)}
}

// add counts transfer xf of step st.
func (ct *counter) add(st int, xf enc.Xfer) {
	for len(ct.used) <= st {
		ct.used = append(ct.used, nil)
	}
	if ct.used[st] == nil {
		ct.used[st] = make([]uint8, ct.ranks)
	}
	ct.c.xfers++
	ways := min(int64(ct.engines), xf.Len/ct.elem)
	if ways < 1 {
		return
	}
	slice := (xf.Len/ct.elem + ways - 1) / ways * ct.elem // the largest slice
	ct.c.pairs += uint64(ways) * (uint64((slice+udma.MaxTransfer-1)/udma.MaxTransfer) + 1)
	u := &ct.used[st][xf.Src]
	*u = uint8(min(int64(*u)+ways, int64(ct.engines)))
	if xf.Src != xf.Dst {
		ct.c.pairs++ // the credit its destination grants
	}
}

// counts returns what the transfers added so far make.
func (ct *counter) counts() counts {
	c := ct.c
	recs := make([]uint64, ct.ranks) // records by rank
	for _, used := range ct.used {
		if used == nil {
			continue
		}
		for r, n := range used {
			c.pairs += uint64(n)
			recs[r] += 3 + uint64(n) + 1
		}
	}
	for _, n := range recs {
		c.records += n + 4
		c.rankRecords = max(c.rankRecords, n+4)
	}
	c.pairs += 2 * uint64(ct.ranks) // go and finish
	return c
}
