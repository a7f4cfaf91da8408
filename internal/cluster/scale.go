package cluster

import (
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
// 441,506 bytes per device at 1,024 devices, 446,219 at 4,096
// (docs/fabric.md §Thousands of devices); rounded up to 1 MiB, which also
// covers the next-hop table's growth with the device count (4 bytes per
// node and device: 64 KiB per device at 16,384).
const DeviceHostBytes = 1 << 20

// A descriptor pair and an SP record as the run holds them: the pair in
// the plan (runtime/dma.Vring, 32 bytes) and twice in the queue's ring in
// host memory (two 16-byte descriptors, the ring rounded up to a power of
// two); the record in the plan, in its bytes on their way to the device
// and in device memory.
const (
	pairHostBytes   = 32 + 2*2*udma.DescriptorSize
	recordHostBytes = 3 * isa.RecordSize
)

// TimingMemory estimates the host memory, in bytes, that running the
// largest of the sizes timing-only on a cluster of devices devices (ranks
// ranks, each spreading its transfers over engines DMA engines; 0: the
// calibrated 7) holds at its peak, so that a run that would exhaust the
// host is refused before it starts (the command line's --mem-limit). No
// payload is held in timing-only mode, but the executor plans every
// descriptor of a run before it starts (runtime/collective): a ring
// all-reduce on n ranks has 2(n−1) steps of n transfers, so its
// descriptors grow as n², whatever the size below 64 KiB × engines per
// transfer. Per run it counts the schedule's transfers, every descriptor
// pair (each slice of a transfer in 64 KiB pieces, its arrival signal, an
// engine's done signal per step, the control queue's go, credit and finish
// writes) and every SP record, as pairHostBytes and recordHostBytes; per
// device DeviceHostBytes. The sum is doubled for the Go collector's
// headroom, as FunctionalMemory's.
func TimingMemory(op enc.Op, algo enc.Algo, devices, ranks, engines int, d enc.Dtype, sizes []int64, opt enc.Options) (uint64, error) {
	if engines <= 0 {
		engines = collective.Calibrated(hwarch.Mariana).Engines
	}
	var peak uint64
	for _, rep := range Largest(op, algo, ranks, sizes, opt) {
		sch, err := enc.Build(op, rep.Algo, ranks, rep.Size, d.Size(), opt)
		if err != nil {
			return 0, err
		}
		pairs, records, xfers := runCounts(sch, engines)
		live := xfers*uint64(unsafe.Sizeof(enc.Xfer{})) + pairs*pairHostBytes + records*recordHostBytes
		peak = max(peak, 2*live)
	}
	return peak + uint64(devices)*DeviceHostBytes, nil
}

// runCounts counts what the executor plans for schedule s with engines
// data engines per rank (runtime/collective's planner): descriptor pairs —
// each slice of a transfer in 64 KiB pieces and its arrival signal, per
// rank and step a done signal of every engine it used and a credit per
// transfer into it from another rank, the go and finish writes — SP
// records — per rank and step at most three waits and a trigger per engine
// used and of the control queue, and the release and finish — and the
// schedule's transfers.
func runCounts(s *enc.Schedule, engines int) (pairs, records, xfers uint64) {
	elem := int64(s.Elem)
	slices := make([]int64, s.Ranks) // this step's slices by source rank
	for _, st := range s.Steps {
		clear(slices)
		for _, xf := range st.Xfers {
			xfers++
			ways := min(int64(engines), xf.Len/elem)
			if ways < 1 {
				continue
			}
			slice := (xf.Len/elem + ways - 1) / ways * elem // the largest slice
			pairs += uint64(ways) * (uint64((slice+udma.MaxTransfer-1)/udma.MaxTransfer) + 1)
			slices[xf.Src] += ways
			if xf.Src != xf.Dst {
				pairs++ // the credit its destination grants
			}
		}
		for _, n := range slices {
			used := uint64(min(n, int64(engines)))
			pairs += used
			records += 3 + used + 1
		}
	}
	ranks := uint64(s.Ranks)
	pairs += 2 * ranks // go and finish
	records += 4 * ranks
	return pairs, records, xfers
}
