package collective

import (
	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/program"
)

// crossesRDHDomains reports whether a transfer of an RDH schedule goes
// from one reduction half-domain to another (InterRDHFolds domains of
// consecutive ranks).
func (x *Executor) crossesRDHDomains(s *enc.Schedule, xf enc.Xfer) bool {
	if s.Algo != enc.RDH || len(x.InterRDH) == 0 || x.InterRDHFolds < 2 || s.Ranks%x.InterRDHFolds != 0 {
		return false
	}
	per := s.Ranks / x.InterRDHFolds
	return xf.Src/per != xf.Dst/per
}

// dataEngines is how many of a rank's NeuronCore's DMA engines carry its
// transfers: Engines, or all of them.
func (x *Executor) dataEngines(r int) int {
	n := x.Ranks[r].Runner.Dev.Geometry.DMAEnginesPerNC
	if x.Engines > 0 && x.Engines < n {
		n = x.Engines
	}
	return n
}

// engines returns the DMA engine ids of a rank's NeuronCore the executor
// uses: the data engines, and the inter-RDH ones if they lie beyond.
func (x *Executor) engines(r int) []int {
	run := x.Ranks[r].Runner
	geo := run.Dev.Geometry
	n := x.dataEngines(r)
	for _, rel := range x.InterRDH {
		n = max(n, rel+1)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = run.NC*geo.DMAEnginesPerNC + i
	}
	return out
}

// controlEngine returns the DMA engine of rank r's ControlQueue, engs its
// engines (engines(r), which the planner and the stager hold already): the
// last engine of its NeuronCore when its transfers leave that one free, so
// that its go, credit and finish writes wait behind none of its data; else
// its first engine.
func (x *Executor) controlEngine(r int, engs []int) int {
	run := x.Ranks[r].Runner
	per := run.Dev.Geometry.DMAEnginesPerNC
	if len(engs) < per {
		return run.NC*per + per - 1
	}
	return engs[0]
}

// reach returns the address through which rank `from` reaches device
// address a of rank `to`'s device (a buffer of `to`'s, or a register): a itself on the same device, the B0
// window of the neighbour table's column when `to`'s device is a
// neighbour, else the fabric window.
func (x *Executor) reach(from, to int, a uint64) (uint64, error) {
	src, dst := x.Ranks[from].Device, x.Ranks[to].Device
	if src == dst {
		return a, nil
	}
	if windows := x.Ranks[from].Runner.Dev.Geometry.NeighbourWindows; src >= 0 && src < len(x.Neighbours) && a < hwarch.NeighbourWindowSize {
		for s, nb := range x.Neighbours[src] {
			if nb == dst && s < len(windows) {
				return windows[s] + a, nil
			}
		}
	}
	return hwarch.FabricAddress(dst, a)
}

// semAddr returns the device address, as rank `from` reaches it, of the
// INCR register of semaphore sem of rank `to`'s NeuronCore.
func (x *Executor) semAddr(from, to, sem int) (uint64, error) {
	run := x.Ranks[to].Runner
	geo, b := run.Dev.Geometry, run.Dev.Geometry.BAR0
	a := geo.TPBDeviceBases[run.NC] + geo.PSUMDeviceDelta - b.PSUMOffset + b.SemIncrOffset + 4*uint64(sem)
	return x.reach(from, to, a)
}

// semVA is the BAR virtual address of semaphore sem of a rank's NeuronCore
// in the register bank at bank (the geometry's SemReadOffset,
// SemSetOffset or SemIncrOffset) of its TPB window.
func semVA(run *program.Runner, bank uint64, sem int) uint64 {
	return run.Dev.VA(run.Dev.Geometry.BAR0.TPBWindow(run.NC) + bank + 4*uint64(sem))
}
