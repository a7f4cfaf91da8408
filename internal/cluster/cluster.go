// Package cluster wires a simulated multi-device system (sim/fabric) to the
// runtime: every device brought up by runtime/bringup with one arch
// selection, its DMA layer, its device-memory allocator and a program
// runner per rank, and a collective executor (runtime/collective) over the ranks.
// It is where the simulator and the runtime meet for every multi-device
// run; the command line, the scenarios (internal/scenario, which also
// reads the simulated devices directly for its fault, snapshot and trace
// steps), the sweep grids (internal/sweep) and the system tests use it.
package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/csr"
	"github.com/neuronsim/neuronsim/runtime/enc"
	rtisa "github.com/neuronsim/neuronsim/runtime/isa"
	"github.com/neuronsim/neuronsim/runtime/program"
	"github.com/neuronsim/neuronsim/runtime/stack"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// Config describes a cluster: the system and the ranks on it.
type Config struct {
	Generation hwarch.Generation
	// DeviceID is every device's PCI device id (Inf2 is 0x7264); 0: the
	// generation's first (fabric.Config.DeviceID).
	DeviceID uint16
	Devices  int // every device, all nodes'
	// Nodes is how many copies of a system of Devices/Nodes devices (of
	// Kind) the EFA network joins (fabric.Config.Nodes, docs/fabric.md
	// §EFA); 0 is 1. Collectives over several nodes take the node's ranks
	// as their group size (CollectiveOptions).
	Nodes  int
	Switch hwarch.SwitchFamily
	Kind   fabric.Kind
	// Params are the fabric's parameters; nil: the generation's defaults
	// with the runtime's fabric constants (DefaultParams). Their Endpoints
	// set the α-β parity mode for the whole cluster (IdealParams).
	Params     *fabric.Params
	TimingOnly bool
	// RanksPerDevice is how many NeuronCores of each device take part
	// (1 by default): rank r is NC r mod RanksPerDevice of device
	// r / RanksPerDevice.
	RanksPerDevice int
	// BufferBytes is the area each rank's buffers take (collective.LayoutOf's
	// End for the largest schedule to run), allocated in its NC's HBM.
	BufferBytes uint64
	// Revision is every device's PCI revision (silicon, EMU 0xF0, QEMU 0xFF).
	Revision uint8
	// Boot powers the devices on with their firmware booting (0xDEADBEEF
	// until it is up), and Reset has bring-up reset each device as the
	// driver does; without them the devices start ready and unreset.
	Boot, Reset bool
	// RankOrderRings runs the collectives' rings in rank order rather
	// than along the topology's links (RingOrder): what the model did
	// before it laid them along the links, to compare.
	RankOrderRings bool
	// WhatIf allows a system larger than the driver's 64 devices
	// (hwarch.MaxNeuronDevices, its routing ids 0..63), up to
	// hwarch.MaxFabricDevices: every device is brought up as a what-if one
	// (bringup.Options.WhatIf), a device past the 64th with its
	// fabric-window index as routing id, and the ranks address it by that
	// index (docs/fabric.md §Thousands of devices). Without it a system of
	// more than 64 devices per node is refused (ErrConfig), as the driver's
	// limit on a real system says. Nodes joined over EFA each have a driver
	// of their own, so a system of several nodes of at most 64 devices each
	// needs no WhatIf: its devices past the 64th are brought up the what-if
	// way all the same, named by their index in the whole system.
	WhatIf bool
}

// Device is one device of the cluster as the runtime holds it: the
// runtime's stack on it (brought up, its DMA layer, its device-memory
// allocator).
type Device = stack.Stack

// Cluster is a brought-up system and the collective executor over its
// ranks.
type Cluster struct {
	System *fabric.System
	Exec   *collective.Executor
	Tables *arch.Tables

	// Devices are the devices' runtime sides, by device index.
	Devices []Device

	cfg       Config
	dispatch  *arch.Dispatch
	validator *rtisa.Validator
}

// ErrConfig marks a cluster that cannot be built as asked.
var ErrConfig = errors.New("invalid cluster configuration")

// New builds the system, brings every device up through the runtime (no
// reset: the devices start ready) and prepares a rank per NC taking part.
// The executor starts with the generation's calibrated parameters
// (collective.Calibrated) — with ideal endpoints (Params.Endpoints, the
// α-β parity mode) collective.Ideal: one engine per rank, no launch cost,
// and rank 0 polled every 1 ns — and the runtime's inter-RDH DMA engines and folds.
func New(cfg Config) (*Cluster, error) {
	if cfg.RanksPerDevice == 0 {
		cfg.RanksPerDevice = 1
	}
	tables, err := arch.For(cfg.Generation, arch.Options{Switch: cfg.Switch})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if perNode := cfg.Devices / max(cfg.Nodes, 1); perNode > hwarch.MaxNeuronDevices && !cfg.WhatIf {
		what := fmt.Sprintf("%d devices", cfg.Devices)
		if cfg.Nodes > 1 {
			what = fmt.Sprintf("%d devices per node", perNode)
		}
		return nil, fmt.Errorf("cluster: %s: the driver brings up %d (routing ids 0..%d); a larger system is a what-if one (Config.WhatIf, up to %d): %w",
			what, hwarch.MaxNeuronDevices, hwarch.MaxNeuronDevices-1, hwarch.MaxFabricDevices, ErrConfig)
	}
	geo := hwarch.MustGeometry(cfg.Generation)
	if cfg.RanksPerDevice < 1 || cfg.RanksPerDevice > geo.NeuronCores {
		return nil, fmt.Errorf("cluster: %d ranks per device; a %s device has %d NeuronCores: %w", cfg.RanksPerDevice, cfg.Generation, geo.NeuronCores, ErrConfig)
	}
	p := cfg.Params
	if p == nil {
		d := DefaultParamsOf(cfg.Generation, cfg.DeviceID, tables)
		p = &d
	}
	sys, err := fabric.New(fabric.Config{Generation: cfg.Generation, DeviceID: cfg.DeviceID, Devices: cfg.Devices, Nodes: cfg.Nodes, Kind: cfg.Kind, Params: p,
		TimingOnly: cfg.TimingOnly, Ready: !cfg.Boot, Revision: cfg.Revision})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cal := collective.Calibrated(cfg.Generation)
	if p.Endpoints == fabric.EndpointsIdeal {
		cal = collective.Ideal() // the parity mode: one engine per rank, no launch cost
	}
	x := &collective.Executor{Engines: cal.Engines, LaunchCost: cal.LaunchCost, InterRDHFolds: tables.Soc.InterRDHFoldN(),
		Neighbours: neighbourTables(sys.Topology())}
	if p.Endpoints == fabric.EndpointsIdeal {
		x.PollResolution = time.Nanosecond // the parity mode measures to the ns, not 100 ns
	}
	for idx := uint32(0); idx < 2; idx++ { // <arch>_get_inter_rdh_dma_id 0 and 1
		x.InterRDH = append(x.InterRDH, int(tables.Soc.InterRDHDMAID(idx)))
	}
	c := &Cluster{System: sys, Exec: x, Tables: tables, cfg: cfg, dispatch: new(arch.Dispatch), validator: rtisa.New(tables)}
	if err := c.attach(); err != nil {
		return nil, err
	}
	return c, nil
}

// attach brings every device of c.System up through the runtime and
// prepares the ranks: a device-memory allocator per device, each rank's
// buffers allocated afresh (so at the same addresses every time).
func (c *Cluster) attach() error {
	c.Devices, c.Exec.Ranks = nil, nil
	for i := range c.System.Devices() {
		st, err := stack.Open(c.System.Device(i), stack.Options{BringUp: c.bringUpOptions(), WaitReset: true, Validator: c.validator})
		if err != nil {
			return deviceError(i, err)
		}
		if err := c.checkIndex(i, st); err != nil {
			return err
		}
		c.Devices = append(c.Devices, *st)
		mem := st.Mem
		for nc := range c.cfg.RanksPerDevice {
			h, err := mem.Alloc(bufferRequest(c.cfg.BufferBytes, nc))
			if err != nil {
				return fmt.Errorf("cluster: device %d NC %d buffers of %d bytes: %w", i, nc, c.cfg.BufferBytes, err)
			}
			blk, err := mem.Info(h)
			if err != nil {
				return err
			}
			c.Exec.Ranks = append(c.Exec.Ranks, collective.Rank{Device: i, Base: blk.Addr, Runner: st.Runner(nc)})
		}
	}
	return nil
}

// Reattach drops the runtime's side of the cluster — its queues, device
// memory allocations and brought-up devices — and brings sys up afresh in
// its place (the same system, or one restored from a snapshot), without a
// reset. Taking a snapshot between Reattach's two halves, or restoring one,
// leaves the runtime in the same state either way, so a run that saves and
// continues and a run that restores and continues do the same. The
// collectives address the neighbours of sys's topology, which a restored
// system carries (it need not be the one the cluster was built with). The
// executor's queues are given back (Release), then it forgets what failed
// collectives left on engines still running (collective.Executor.Forget):
// their device memory was the allocators' being dropped.
func (c *Cluster) Reattach(sys *fabric.System) error {
	c.LetGo()
	c.System = sys
	c.Exec.Neighbours = neighbourTables(sys.Topology()) // a restored system's links are its own
	reset := c.cfg.Reset
	c.cfg.Reset = false
	defer func() { c.cfg.Reset = reset }()
	return c.attach()
}

// LetGo gives back what the collective executor holds on the system — its
// queues, and the device memory of failed collectives' programs whose
// engines have stopped (collective.Executor.Release, which reads their
// status) — and forgets the rest (collective.Executor.Forget): programs
// of a failed collective on engines still running, whose device memory is
// the runtime's allocators', which Reattach drops. Called before a
// snapshot of the system is saved, it leaves the executor holding nothing,
// as a cluster that restores the snapshot starts; Reattach calls it.
func (c *Cluster) LetGo() {
	c.Exec.Release()
	c.Exec.Forget()
}

// bringUpOptions are the options every device is brought up with: a reset
// of its own only when the configuration asks for one, the cluster's arch
// selection, a region table of its own, what-if routing ids when the
// configuration is a what-if or has several nodes (Config.WhatIf).
func (c *Cluster) bringUpOptions() bringup.Options {
	return bringup.Options{NoReset: !c.cfg.Reset, Switch: c.cfg.Switch, Dispatch: c.dispatch, Table: csr.NewTable(0), WhatIf: c.cfg.WhatIf || c.cfg.Nodes > 1}
}

// checkIndex checks that the device the system has at index i is the one
// the runtime names i: the device index its routing id maps to, as the
// driver maps it (hwarch.DeviceIndexOfRoutingID), or past the 64th device
// of a what-if system the routing id itself (hwarch.WhatIfDeviceIndex).
// The ranks write to device i through the fabric window's index i, so a
// device whose routing id names another index would take another's writes.
func (c *Cluster) checkIndex(i int, st *stack.Stack) error {
	rid := int(st.Up.RoutingID)
	idx, err := hwarch.WhatIfDeviceIndex(st.Up.Identity.Device, rid)
	if err != nil {
		return deviceError(i, err)
	}
	if idx != i {
		return deviceError(i, fmt.Errorf("routing id %d is device index %d, not %d: %w", rid, idx, i, ErrConfig))
	}
	return nil
}

// deviceError names device i in err.
func deviceError(i int, err error) error { return fmt.Errorf("cluster: device %d: %w", i, err) }

// Run runs schedule s in d on the ranks (their buffers as they are). A
// failure carries what the fabric knows of it (the link that is down, the
// write it lost).
func (c *Cluster) Run(s *enc.Schedule, d enc.Dtype) (collective.Result, error) {
	res, err := c.Exec.Run(s, d)
	if err != nil {
		if why := c.System.Describe(); why != "" {
			err = fmt.Errorf("%w (fabric: %s)", err, why)
		}
	}
	return res, err
}

// Recover makes the cluster usable after a failed run: every device that
// was reset — as the runtime learns it through BAR reads (lostState), not
// from the simulator — is brought up again through the runtime (waiting
// until it is ready), its ranks get its new DMA layer, and the executor's
// queues are given back so the next run opens them afresh.
func (c *Cluster) Recover() error {
	for i := range c.Devices {
		lost, err := c.lostState(i)
		if err != nil {
			return fmt.Errorf("cluster: recovering: %w", deviceError(i, err))
		}
		if !lost {
			continue
		}
		st := &c.Devices[i]
		if err := st.Reopen(c.bringUpOptions()); err != nil {
			return fmt.Errorf("cluster: recovering: %w", deviceError(i, err))
		}
		for r := range c.Exec.Ranks {
			if rk := &c.Exec.Ranks[r]; rk.Device == i {
				run := *rk.Runner
				run.Dev, run.DMA = st.Up, st.DMA
				rk.Runner = &run
			}
		}
	}
	c.Exec.Release()
	return nil
}

// lostState reports whether device i must be brought up again, learnt
// through BAR reads as a runtime on hardware learns it: its firmware says a
// reset is in progress (FW status bit 3), or the queues the runtime had
// programmed on it are gone (dma.QueuesIntact: a device reset returned
// their registers to power-on values).
func (c *Cluster) lostState(i int) (bool, error) {
	st := &c.Devices[i]
	if busy, err := st.Up.Resetting(); err != nil || busy {
		return busy, err
	}
	intact, err := st.DMA.QueuesIntact()
	return !intact, err
}

// IdealParams returns DefaultParams in the α-β parity mode
// (fabric.Params.WithIdealEndpoints, docs/fabric.md §Parity mode) with
// model m and every link of bandwidth bw bytes/s and latency alpha ps: a
// cluster built on them has ideal DMA engines, one engine per rank and no
// launch cost, so its collectives take the time of the analytical α-β
// models.
func IdealParams(g hwarch.Generation, t *arch.Tables, m fabric.Model, bw, alpha uint64) fabric.Params {
	p := DefaultParams(g, t).WithIdealEndpoints()
	p.Model = m
	LinkTiming{Latency: alpha, SetLatency: true, Bandwidth: bw, SetBandwidth: true}.Apply(&p) // every link kind, inter-rack and second-level too
	return p
}

// Runner returns a program runner on NeuronCore nc of device i, with the
// cluster's validators.
func (c *Cluster) Runner(i, nc int) (*program.Runner, error) {
	if i < 0 || i >= len(c.Devices) {
		return nil, fmt.Errorf("cluster: device %d of %d: %w", i, len(c.Devices), ErrConfig)
	}
	d := &c.Devices[i]
	if nc < 0 || nc >= d.Up.Geometry.NeuronCores {
		return nil, fmt.Errorf("cluster: device %d has NeuronCores 0..%d, not %d: %w", i, d.Up.Geometry.NeuronCores-1, nc, ErrConfig)
	}
	return d.Runner(nc), nil
}

// Ranks returns the number of ranks.
func (c *Cluster) Ranks() int { return len(c.Exec.Ranks) }

// WriteInputs writes each rank's input buffer for schedule s (of any
// length: a tail short of a word is written by a read, change and write).
func (c *Cluster) WriteInputs(s *enc.Schedule, inputs [][]byte) error {
	for r, in := range inputs {
		rk := c.Exec.Ranks[r]
		if err := rk.Runner.DMA.WriteDeviceBytes(collective.LayoutOf(s, rk.Base).Input, in); err != nil {
			return fmt.Errorf("cluster: rank %d input: %w", r, err)
		}
	}
	return nil
}

// ReadOutputs reads each rank's output buffer for schedule s (of any
// length).
func (c *Cluster) ReadOutputs(s *enc.Schedule) ([][]byte, error) {
	out := make([][]byte, c.Ranks())
	for r := range out {
		rk := c.Exec.Ranks[r]
		out[r] = make([]byte, s.OutputBytes)
		if err := rk.Runner.DMA.ReadDeviceBytes(collective.LayoutOf(s, rk.Base).Output, out[r]); err != nil {
			return nil, fmt.Errorf("cluster: rank %d output: %w", r, err)
		}
	}
	return out, nil
}

// RandomInputs returns deterministic random inputs for schedule s in d: small
// values for the floating types (so sums stay exact enough to compare),
// any bits for the integers.
func RandomInputs(s *enc.Schedule, d enc.Dtype, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, uint64(s.Ranks)))
	out := make([][]byte, s.Ranks)
	for r := range out {
		b := make([]byte, s.InputBytes)
		es := d.Size()
		for i := 0; i+es <= len(b); i += es {
			switch d {
			case enc.Float32, enc.BFloat16, enc.Float16:
				enc.PutFloat(d, b, i/es, float32(rng.IntN(2001)-1000)/64)
			default:
				for k := range es {
					b[i+k] = byte(rng.Uint32())
				}
			}
		}
		out[r] = b
	}
	return out
}

// Check runs schedule s functionally: random inputs in, the outputs checked
// against the CPU reference (enc.Verify). It returns the run's result.
func (c *Cluster) Check(s *enc.Schedule, d enc.Dtype, seed uint64, opt enc.Options) (collective.Result, error) {
	inputs := RandomInputs(s, d, seed)
	if err := c.WriteInputs(s, inputs); err != nil {
		return collective.Result{}, err
	}
	res, err := c.Run(s, d)
	if err != nil {
		return res, err
	}
	outputs, err := c.ReadOutputs(s)
	if err != nil {
		return res, err
	}
	if err := enc.Verify(s.Op, d, inputs, outputs, opt); err != nil {
		return res, fmt.Errorf("cluster: %s %s of %d bytes on %d ranks: %w", s.Algo, s.Op, s.Size, s.Ranks, err)
	}
	return res, nil
}

// neighbourTables is what the runtime reads from the driver for each
// device: its connected devices by SENG column (a copy of the topology's
// table; none for a topology without B0 windows).
func neighbourTables(t *fabric.Topology) [][]int {
	out := make([][]int, len(t.Neighbours))
	for d, row := range t.Neighbours {
		out[d] = append([]int(nil), row...)
	}
	return out
}
