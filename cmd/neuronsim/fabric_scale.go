package main

import (
	"fmt"
	"strings"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// checkSweepRanks refuses, before anything is built, a sweep of more
// ranks than a collective has (cluster.CheckRanks), naming the flag that
// made the count: --nodes when there are several, else
// --ranks-per-device when above 1, else --devices.
func checkSweepRanks(nodes, perNode, ranksPerDevice int) error {
	return cluster.CheckRanks(nodes, perNode, ranksPerDevice, cluster.RankKeys{Nodes: "--nodes", RanksPerDevice: "--ranks-per-device", Devices: "--devices"})
}

// checkTimingMemory refuses, before anything is built, a timing-only
// sweep whose system or one of whose runs would hold more host memory than
// the limit: first the system alone (cluster.FixedTimingMemory, nothing
// counted), then the runs, largest size first, stopping at the first over
// the limit (cluster.TimingMemoryOver: the SP programs, n² records for a
// ring on n ranks, and the descriptors streamed to the rings; counting one
// schedule of thousands of ranks takes seconds, so a sweep of a thousand
// sizes is refused after one, not after all). Functional mode's memory is
// checked with its payloads (sweepFlags.sizes).
func checkTimingMemory(sw cluster.Sweep, devices, ranks, engines int, sizes []int64, limit memlimit.Limit) error {
	fixed := cluster.FixedTimingMemory(devices)
	what := fmt.Sprintf("--mode timing: the system of %d devices (%s each and %s once, %d bytes, before any collective)",
		devices, memlimit.Human(cluster.DeviceHostBytes), memlimit.Human(cluster.RunHostBytes), fixed)
	if err := limit.Check(what, fixed); err != nil {
		return fmt.Errorf("%w; use fewer devices, or raise --mem-limit", err)
	}
	need, size, err := timingMemoryOver(sw.Op, sw.Algo, devices, ranks, engines, sw.Dtype, sizes, sw.Options, limit.Bytes)
	if err != nil {
		return err
	}
	what = fmt.Sprintf("--mode timing: %s of %s on %d ranks", sw.Op, memlimit.Human(uint64(size)), ranks)
	if err := limit.Check(what, need); err != nil {
		return fmt.Errorf("%w; use %s, or raise --mem-limit", err, timingMemoryAdvice(sw.Options.Chunks, devices, ranks, engines))
	}
	return nil
}

// timingMemoryOver is cluster.TimingMemoryOver; a test replaces it to
// count the estimates a sweep's checks make.
var timingMemoryOver = cluster.TimingMemoryOver

// timingMemoryAdvice names what drives cluster.TimingMemory in a run —
// the schedule's transfers and each rank's records per step: --chunks
// above 1 first (each chunk a run of the schedule's steps: 65536 chunks
// make a 4 MiB all-reduce on 16 ranks 11 GiB, 1 chunk 16 MiB), the ranks
// (devices, and --ranks-per-device above 1), the size, and the engines
// each rank uses per step (--engines 1 unless it is 1 already).
func timingMemoryAdvice(chunks, devices, ranks, engines int) string {
	var ways []string
	if chunks > 1 {
		ways = append(ways, fmt.Sprintf("fewer --chunks than %d", chunks))
	}
	ways = append(ways, "fewer devices")
	if ranks > devices {
		ways = append(ways, "fewer --ranks-per-device")
	}
	ways = append(ways, "a smaller size")
	if engines != 1 {
		ways = append(ways, "--engines 1")
	}
	last := len(ways) - 1
	return strings.Join(ways[:last], ", ") + " or " + ways[last]
}

// sweepEngines is the DMA engines each rank of a sweep spreads its
// transfers over: --engines, else one in the parity mode, else the
// generation's calibrated count (as cluster.New sets them).
func sweepEngines(g hwarch.Generation, p fabric.Params, flag int) int {
	switch {
	case flag > 0:
		return flag
	case p.Endpoints == fabric.EndpointsIdeal:
		return collective.Ideal().Engines
	}
	return collective.Calibrated(g).Engines
}

// bringUpWhatIf reports whether a sweep's devices are brought up as
// what-if ones (cluster.Config.WhatIf): with --what-if, or for a named
// system larger than the driver's 64 devices (--system trn3-gen2's 144,
// built as the hardware is, past what one driver addresses).
func (f *fabricFlags) bringUpWhatIf() bool {
	return f.whatIf || f.named.spec != nil && f.named.spec.Devices > hwarch.MaxNeuronDevices
}
