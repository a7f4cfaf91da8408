package enc

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/program"
)

// Running a schedule on devices (docs/collectives.md §On devices). Every
// rank is a NeuronCore; its SP engine runs a program the executor builds,
// which releases the rank's DMA queues step by step with dma_trigger and
// waits on semaphores between steps:
//
//   - each transfer is split over the rank's DMA engines; on each engine, its
//     slice's descriptors (with the reduce word for a reducing transfer) are
//     followed by a 4-byte write that increments the destination rank's
//     arrivals semaphore — on the same queue, so on the same path, after
//     the data (a remote destination is reached through the writer's B0
//     window when it is a neighbour in the driver's table, else through the
//     fabric window);
//   - after its last slice of a step, each engine increments the rank's own
//     done semaphore (its sources have been read);
//   - a rank starts step k+1 when its arrivals and done counts cover step k
//     and it has a credit from every rank it writes to in step k+1; it
//     grants those credits to the ranks that will write into it as soon as
//     it has finished step k;
//   - rank 0 releases everyone with a go write and finishes last, once every
//     rank has told it they are done; the time measured is rank 0's, on the
//     device's clock (ndl.Clock) when it has one.

// Semaphores the collectives use on every rank's NeuronCore (the model's
// choice; docs/collectives.md).
const (
	SemGo       = 248 // rank 0 releases the others: 1
	SemArrivals = 249 // slices landed in this rank (cumulative)
	SemDone     = 250 // this rank's engines done with a step's sends (cumulative)
	SemCredits  = 251 // credits from the ranks this rank writes to (cumulative)
	SemFinished = 252 // rank 0: ranks that finished
)

// CollectiveQueue is the DMA queue of each engine that carries a
// collective's data (issue: queue 15 of each engine is the collectives
// queue); ControlQueue on the rank's first engine carries go, credit and
// finish writes.
const (
	CollectiveQueue = 15
	ControlQueue    = 14
)

// Rank is where one rank of a collective runs: a NeuronCore of a
// brought-up device.
type Rank struct {
	// Device is the device's index in the system: the fabric window's
	// device number (hw/arch.FabricAddress).
	Device int
	// Runner loads programs onto the rank's NeuronCore; its DMA layer is the
	// device's.
	Runner *program.Runner
	// Base is the device address of the rank's buffers (4 KiB aligned, in
	// HBM): a control word, then Input, Output and Scratch, each 4 KiB
	// aligned.
	Base uint64
}

// Layout is where a rank's buffers are.
type Layout struct {
	Ones, Input, Output, Scratch uint64 // device addresses
	End                          uint64 // first byte past the scratch buffer
}

// LayoutOf returns the buffers of a rank whose area starts at base.
func LayoutOf(s *Schedule, base uint64) Layout {
	const align = 4096
	up := func(a uint64) uint64 { return (a + align - 1) &^ (align - 1) }
	l := Layout{Ones: base, Input: up(base + 64)}
	l.Output = up(l.Input + uint64(s.InputBytes))
	l.Scratch = up(l.Output + uint64(s.OutputBytes))
	l.End = l.Scratch + uint64(s.ScratchBytes)
	return l
}

// Executor runs schedules on the ranks.
type Executor struct {
	Ranks []Rank
	// Engines is how many of each rank's DMA engines carry data (0: all of
	// its NeuronCore's).
	Engines int
	// Timeout bounds the wait for a run to finish, in the devices' time;
	// 0: DefaultTimeout. A run that does not finish in it (a link down, a
	// device reset) is an error naming what failed.
	Timeout time.Duration
	// InterRDH are the DMA engines (indices within the rank's NeuronCore)
	// that carry an RDH schedule's transfers between reduction
	// half-domains — <arch>_get_inter_rdh_dma_id 0 and 1: {4, 5} on
	// cayman and mariana, {0, 1} on sunda — and InterRDHFolds the folds
	// between those domains (<arch>_get_inter_rdh_fold_n: 2). Empty: the
	// rank's engines as for any transfer.
	InterRDH      []int
	InterRDHFolds int
	// LaunchCost is the runtime's fixed cost of starting a collective and
	// learning it is done (kick-off, completion to the host), spent on the
	// devices' clock before rank 0 starts and counted in the time
	// (docs/timing-model.md §Calibration).
	LaunchCost time.Duration
	// Neighbours is each device's neighbour table as the driver reports it
	// (its connected devices, column = SENG index; -1: none), by device
	// index. A rank writes to a device in its table through its B0 window
	// of that column (V3/V4: one link, the way the runtime addresses a
	// neighbour), and to any other device through the fabric window; nil,
	// or a generation without B0 windows, sends everything through the
	// fabric window.
	Neighbours [][]int

	queues   map[[2]int]*dma.Queue // (rank, engine<<8 | queue) → the open queue
	capacity map[[2]int]int        // its ring's descriptors
}

// Result is what a run did.
type Result struct {
	TimePS      uint64 // rank 0's time from release to the last rank's finish
	Steps       int
	Descriptors int   // descriptor pairs across every rank and queue
	Bytes       int64 // bytes moved between ranks
}

// ErrRun marks a collective that could not run to completion.
var ErrRun = errors.New("collective failed")

// ErrSemaphoreRange marks a schedule whose cumulative semaphore counts pass
// what a record's wait value holds (65535).
var ErrSemaphoreRange = errors.New("schedule too long for the collectives' semaphores")

// rankPlan is what one rank runs.
type rankPlan struct {
	vr       []*dma.Vring // per engine: the collectives queue's descriptors
	rdh      []*dma.Vring // the inter-RDH engines' vrings (members of vr)
	ctl      *dma.Vring   // control queue
	prog     []isa.Record // the SP program
	arrivals []int        // per step: slices landing in the rank during it
}

// Run executes s with data type d on the ranks and returns its time. The
// ranks' buffers must already hold the inputs; the outputs are in place
// when it returns. A queue that halts or a rank that does not finish
// within MaxPolls is an error wrapping ErrRun naming the rank.
func (x *Executor) Run(s *Schedule, d Dtype) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	if len(x.Ranks) != s.Ranks {
		return Result{}, fmt.Errorf("enc: %s of %d ranks on %d ranks: %w", s.Op, s.Ranks, len(x.Ranks), ErrRun)
	}
	for _, rel := range x.InterRDH {
		for r := range x.Ranks {
			if rel < 0 || rel >= x.Ranks[r].Runner.Dev.Geometry.DMAEnginesPerNC {
				return Result{}, fmt.Errorf("enc: inter-RDH DMA engine %d: a NeuronCore has engines 0..%d: %w",
					rel, x.Ranks[r].Runner.Dev.Geometry.DMAEnginesPerNC-1, ErrRun)
			}
		}
	}
	if d.Size() != s.Elem {
		return Result{}, fmt.Errorf("enc: %s elements are %d bytes, the schedule's %d: %w", d, d.Size(), s.Elem, ErrRun)
	}
	plans, err := x.plan(s, d)
	if err != nil {
		return Result{}, err
	}
	res := Result{Steps: len(s.Steps)}
	res.Bytes, _ = s.Traffic()
	// Stage: semaphores to 0, descriptors into the rings, programs loaded.
	blocks := make([][]program.Block, s.Ranks)
	for r := range x.Ranks {
		n, err := x.stage(r, plans[r])
		if err != nil {
			if down := x.silentDevice(s); down != nil {
				return res, down
			}
			return res, fmt.Errorf("%w: %w", err, ErrRun)
		}
		res.Descriptors += n
		prog := make([]byte, 0, len(plans[r].prog)*isa.RecordSize)
		for i := range plans[r].prog {
			b := plans[r].prog[i].Bytes()
			prog = append(prog, b[:]...)
		}
		if blocks[r], err = x.Ranks[r].Runner.Load(prog); err != nil {
			if down := x.silentDevice(s); down != nil {
				return res, down
			}
			return res, fmt.Errorf("enc: rank %d: %w: %w", r, err, ErrRun)
		}
	}
	// Start every rank but 0 (they wait for go), then rank 0.
	for r := s.Ranks - 1; r >= 1; r-- {
		if err := x.Ranks[r].Runner.Start(blocks[r]); err != nil {
			return res, fmt.Errorf("enc: rank %d: %w", r, err)
		}
	}
	r0 := x.Ranks[0].Runner
	elapsed, err := ndl.ElapsedPS(r0.Dev.Dev)
	if err != nil {
		return res, fmt.Errorf("enc: rank 0 clock: %w", err)
	}
	if x.LaunchCost > 0 {
		if err := ndl.Sleep(r0.Dev.Dev, x.LaunchCost); err != nil {
			return res, err
		}
	}
	if err := r0.Start(blocks[0]); err != nil {
		return res, fmt.Errorf("enc: rank 0: %w", err)
	}
	// Rank 0 finishes last: the time is taken when it is seen done.
	if err := x.poll(r0, blocks[0]); err != nil {
		return res, x.diagnose(s, err)
	}
	if res.TimePS, err = elapsed(); err != nil {
		return res, fmt.Errorf("enc: rank 0 clock: %w", err)
	}
	if err := x.wait(s, blocks); err != nil {
		return res, err
	}
	return res, nil
}

// DefaultTimeout is the longest a run may take when Executor.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// Polling rank 0: first every minPoll of device time, then every 1/1000 of
// the time already spent, at most maxPoll — the time measured is then
// within 0.1 % (or minPoll) of when rank 0 finished.
const (
	minPoll = 100 * time.Nanosecond
	maxPoll = 10 * time.Microsecond
)

// poll waits until rank 0's program is done, for at most Timeout of
// device time.
func (x *Executor) poll(r0 *program.Runner, blocks []program.Block) error {
	timeout := x.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	since, err := ndl.ElapsedPS(r0.Dev.Dev)
	if err != nil {
		return fmt.Errorf("rank 0 clock: %w", err)
	}
	for {
		done, err := r0.Done(blocks)
		if err != nil || done {
			return err
		}
		ps, err := since()
		if err != nil {
			return fmt.Errorf("rank 0 clock: %w", err)
		}
		waited := time.Duration(ps / 1000)
		if waited >= timeout {
			return fmt.Errorf("rank 0 not done after %v of device time: %w", timeout, program.ErrTimeout)
		}
		if err := ndl.Sleep(r0.Dev.Dev, min(max(minPoll, waited/1000), maxPoll)); err != nil {
			return err
		}
	}
}

// wait collects every rank's result once rank 0 is done: an engine that
// stopped on an error is ErrRun naming the rank.
func (x *Executor) wait(s *Schedule, blocks [][]program.Block) error {
	for r := range s.Ranks {
		run := *x.Ranks[r].Runner
		run.MaxPolls = 1000
		if _, err := run.Wait(blocks[r]); err != nil {
			return fmt.Errorf("enc: rank %d (device %d): %w: %w", r, x.Ranks[r].Device, err, ErrRun)
		}
	}
	return nil
}

// diagnose says why a run did not finish: a device that does not answer
// (in reset), or the first DMA queue that halted (a link down, a bad
// address); without either, the timeout itself.
func (x *Executor) diagnose(s *Schedule, err error) error {
	if err := x.silentDevice(s); err != nil {
		return err
	}
	keys := make([][2]int, 0, len(x.queues))
	for k := range x.queues {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, key := range keys {
		r, q := key[0], x.queues[key]
		if st, e := q.Status(); e == nil && st&udma.StatusHalted != 0 {
			why := ""
			if st&udma.ErrNeighbour != 0 {
				why = " (a write to another device found no path: a link down or no device behind the window)"
			}
			return fmt.Errorf("enc: %s: rank %d (device %d) DMA engine %d queue %d halted with status %#x%s: %w",
				s.Op, r, x.Ranks[r].Device, q.Engine, q.Index, st, why, ErrRun)
		}
	}
	return fmt.Errorf("enc: %s did not finish: %w: %w", s.Op, err, ErrRun)
}

// silentDevice names the first rank whose device does not answer (reads
// 0xDEADBEEF: in reset or not ready), or returns nil.
func (x *Executor) silentDevice(s *Schedule) error {
	for r := range s.Ranks {
		run := x.Ranks[r].Runner
		b := run.Dev.Geometry.BAR0
		if v, e := run.Dev.CSR.Read(run.Dev.VA(b.TPBWindow(run.NC) + b.SemReadOffset + 4*SemGo)); e == nil && v == hwarch.NotReady {
			return fmt.Errorf("enc: %s: rank %d: device %d does not answer (%#x: in reset or not ready): %w",
				s.Op, r, x.Ranks[r].Device, v, ErrRun)
		}
	}
	return nil
}

// Release gives back every queue the executor opened (a queue of a device
// that was reset is forgotten as it is). The next Run opens them afresh;
// call it after a device reset, once the ranks' runners are up again.
func (x *Executor) Release() {
	for key, q := range x.queues {
		_ = q.Close() // the queue may belong to a device that no longer knows it
		delete(x.queues, key)
		delete(x.capacity, key)
	}
}

// crossesRDHDomains reports whether a transfer of an RDH schedule goes
// from one reduction half-domain to another (InterRDHFolds domains of
// consecutive ranks).
func (x *Executor) crossesRDHDomains(s *Schedule, xf Xfer) bool {
	if s.Algo != RDH || len(x.InterRDH) == 0 || x.InterRDHFolds < 2 || s.Ranks%x.InterRDHFolds != 0 {
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

// addr returns the device address rank `from` writes to for rank `to`'s
// buffer b at off: local, through a neighbour window, or through the fabric
// window (reach).
func (x *Executor) addr(s *Schedule, from, to int, b Buffer, off int64) (uint64, error) {
	l := LayoutOf(s, x.Ranks[to].Base)
	a := [...]uint64{Input: l.Input, Output: l.Output, Scratch: l.Scratch}[b] + uint64(off)
	return x.reach(from, to, a)
}

// reach returns the address through which rank `from` reaches device
// address a of rank `to`'s device: a itself on the same device, the B0
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

// reduceOf is the DMA reduce word of a reducing transfer in d.
func reduceOf(d Dtype) udma.Reduce {
	dt := [...]isa.Dtype{Float32: isa.FP32, BFloat16: isa.BF16, Float16: isa.FP16, Int32: isa.Int32, Uint32: isa.Uint32,
		Int8: isa.Int8, Uint8: isa.Uint8, Uint16: isa.Uint16, Int16: isa.Int16}[d]
	return udma.Reduce{Op: udma.ReduceAdd, Dtype: dt}
}

// waitRec is an SP nop that waits until semaphore sem ≥ v.
func waitRec(sem, v int) isa.Record {
	return isa.Record{Opcode: isa.OpNop, Engine: isa.SP, Wait: isa.Sync{Mode: isa.WaitSemGE, Index: uint8(sem), Value: uint16(v)}}
}

// triggerRec is an SP dma_trigger of n descriptor pairs on queue q of DMA
// engine eng.
func triggerRec(eng, q, n int) isa.Record {
	return isa.Record{Opcode: isa.OpDMATrigger, Engine: isa.SP, Aux: uint16(eng), Imm0: uint32(q), Imm1: uint32(n)}
}

// maxSemValue is the largest value a record's wait slot holds.
const maxSemValue = 1<<16 - 1

// plan builds every rank's descriptors and SP program.
func (x *Executor) plan(s *Schedule, d Dtype) ([]rankPlan, error) {
	n := s.Ranks
	plans := make([]rankPlan, n)
	engs := make([][]int, n)
	ones := make([]uint64, n)
	for r := range plans {
		engs[r] = x.engines(r)
		plans[r].vr = make([]*dma.Vring, len(engs[r]))
		for j, e := range engs[r] {
			plans[r].vr[j] = dma.NewVring(fmt.Sprintf("cc.r%d.e%d", r, e))
		}
		plans[r].ctl = dma.NewVring(fmt.Sprintf("cc.r%d.ctl", r))
		for _, rel := range x.InterRDH {
			plans[r].rdh = append(plans[r].rdh, plans[r].vr[rel])
		}
		ones[r] = LayoutOf(s, x.Ranks[r].Base).Ones
	}
	sp := func(r int, rec isa.Record) { plans[r].prog = append(plans[r].prog, rec) }
	var err error
	signal := func(v *dma.Vring, from, to, sem int) {
		if err != nil {
			return
		}
		var a uint64
		if a, err = x.semAddr(from, to, sem); err == nil {
			err = v.AddEventAccel(ones[from], a)
		}
	}
	// Go: rank 0 releases the others.
	for r := 1; r < n; r++ {
		signal(plans[0].ctl, 0, r, SemGo)
		sp(r, waitRec(SemGo, 1))
	}
	if n > 1 {
		sp(0, triggerRec(engs[0][0], ControlQueue, n-1))
	}
	arrivals, done, credits := make([]int, n), make([]int, n), make([]int, n)
	red := reduceOf(d)
	for k, st := range s.Steps {
		writers, targets := make([][]int, n), make([][]int, n)
		seen := map[[2]int]bool{}
		for _, xf := range st.Xfers {
			if xf.Src != xf.Dst && !seen[[2]int{xf.Src, xf.Dst}] {
				seen[[2]int{xf.Src, xf.Dst}] = true
				writers[xf.Dst] = append(writers[xf.Dst], xf.Src)
				targets[xf.Src] = append(targets[xf.Src], xf.Dst)
			}
		}
		// Before step k: step k-1 finished here, credits granted to this
		// step's writers, credits from this step's targets received.
		for r := range n {
			if k == 0 {
				continue
			}
			if arrivals[r] > 0 {
				sp(r, waitRec(SemArrivals, arrivals[r]))
			}
			if done[r] > 0 {
				sp(r, waitRec(SemDone, done[r]))
			}
			for _, w := range writers[r] {
				signal(plans[r].ctl, r, w, SemCredits)
			}
			if len(writers[r]) > 0 {
				sp(r, triggerRec(engs[r][0], ControlQueue, len(writers[r])))
			}
			if len(targets[r]) > 0 {
				credits[r] += len(targets[r])
				sp(r, waitRec(SemCredits, credits[r]))
			}
		}
		// The sends: each transfer split over its source's engines.
		before := make([][]int, n)
		for r := range n {
			before[r] = make([]int, len(engs[r]))
			for j, v := range plans[r].vr {
				before[r][j] = v.Descriptors()
			}
		}
		for i, xf := range st.Xfers {
			r := xf.Src
			use := plans[r].vr[:x.dataEngines(r)]
			if x.crossesRDHDomains(s, xf) {
				use = plans[r].rdh
			}
			ne := len(use)
			src0 := [...]uint64{Input: LayoutOf(s, x.Ranks[r].Base).Input, Output: LayoutOf(s, x.Ranks[r].Base).Output,
				Scratch: LayoutOf(s, x.Ranks[r].Base).Scratch}[xf.SrcBuf] + uint64(xf.SrcOff)
			cut := splitEven(xf.Len, s.Elem, ne)
			for j, off := 0, int64(0); j < len(cut) && err == nil; j, off = j+1, off+cut[j] {
				size := cut[j]
				v := use[(i+j)%ne]
				var dst uint64
				if dst, err = x.addr(s, r, xf.Dst, xf.DstBuf, xf.DstOff+off); err != nil {
					break
				}
				if xf.Reduce {
					err = v.AddReduce(src0+uint64(off), dst, uint64(size), red)
				} else {
					err = v.AddTransfer(src0+uint64(off), dst, uint64(size))
				}
				signal(v, r, xf.Dst, SemArrivals)
				arrivals[xf.Dst]++
			}
		}
		for r := range n {
			for j, v := range plans[r].vr {
				if v.Descriptors() == before[r][j] {
					continue
				}
				signal(v, r, r, SemDone)
				done[r]++
				sp(r, triggerRec(engs[r][j], CollectiveQueue, v.Descriptors()-before[r][j]))
			}
		}
		if err != nil {
			return nil, fmt.Errorf("enc: step %d: %w", k, err)
		}
	}
	// The end: every rank waits for its last arrivals and sends, then
	// tells rank 0, which finishes once all have.
	for r := range n {
		for _, c := range [...]struct{ sem, v int }{{SemArrivals, arrivals[r]}, {SemDone, done[r]}, {SemCredits, credits[r]}} {
			if c.v > maxSemValue {
				return nil, fmt.Errorf("enc: rank %d needs semaphore %d to reach %d: %w", r, c.sem, c.v, ErrSemaphoreRange)
			}
		}
		if arrivals[r] > 0 {
			sp(r, waitRec(SemArrivals, arrivals[r]))
		}
		if done[r] > 0 {
			sp(r, waitRec(SemDone, done[r]))
		}
		if r > 0 {
			signal(plans[r].ctl, r, 0, SemFinished)
			sp(r, triggerRec(engs[r][0], ControlQueue, 1))
		}
	}
	if n > 1 {
		sp(0, waitRec(SemFinished, n-1))
	}
	for r := range n {
		if len(plans[r].prog) == 0 {
			sp(r, isa.Record{Opcode: isa.OpNop, Engine: isa.SP})
		}
		plans[r].prog[len(plans[r].prog)-1].Flags |= isa.FlagLast // the engine stops after it
	}
	if err != nil {
		return nil, fmt.Errorf("enc: %w", err)
	}
	return plans, nil
}

// splitEven cuts a transfer of n bytes (whole elements of elem bytes) into
// min(ways, elements) slices of whole elements whose sizes differ by at
// most one element, the larger first. A larger transfer never has fewer
// slices, nor any slice smaller: cutting into slices of ⌈elements/ways⌉
// (the rest in the last) gave 27 elements over 7 engines 7 slices but 30
// elements 6, so a larger message could take less time (issue 13).
func splitEven(n int64, elem, ways int) []int64 {
	elems := n / int64(elem)
	k := min(int64(ways), elems)
	if k < 1 {
		return nil
	}
	base, extra := elems/k, elems%k
	out := make([]int64, k)
	for j := range out {
		out[j] = base * int64(elem)
		if int64(j) < extra {
			out[j] += int64(elem)
		}
	}
	return out
}

// ringSize returns a ring length that holds n descriptors: a multiple of
// 16, at least udma.MinRing.
func ringSize(n int) uint32 {
	c := uint32(udma.MinRing)
	for int(c) < n+1 {
		c *= 2
	}
	return c
}

// stage zeroes a rank's collective semaphores, writes its control word and
// dumps its descriptors into its queues (reopening a queue whose ring is too
// small). It returns the descriptor pairs dumped.
func (x *Executor) stage(r int, p rankPlan) (int, error) {
	run := x.Ranks[r].Runner
	up, m := run.Dev, run.DMA
	b := up.Geometry.BAR0
	for _, sem := range []int{SemGo, SemArrivals, SemDone, SemCredits, SemFinished} {
		if err := up.CSR.Write(up.VA(b.TPBWindow(run.NC)+b.SemSetOffset+4*uint64(sem)), 0); err != nil {
			return 0, fmt.Errorf("enc: rank %d semaphore %d: %w", r, sem, err)
		}
	}
	if x.queues == nil {
		x.queues, x.capacity = map[[2]int]*dma.Queue{}, map[[2]int]int{}
	}
	engs := x.engines(r)
	total := 0
	dump := func(eng, q int, v *dma.Vring) error {
		key := [2]int{r, eng<<8 | q}
		need := ringSize(v.Descriptors())
		qu := x.queues[key]
		if qu != nil {
			// A queue left halted (or holding descriptors) by a failed run,
			// or too small, is given back and opened afresh.
			st, err := qu.Status()
			if err != nil {
				return err
			}
			if st&(udma.StatusHalted|udma.StatusBusy) != 0 {
				x.capacity[key] = 0
			}
		}
		if qu != nil && x.capacity[key] < int(need) {
			if err := qu.Close(); err != nil {
				return err
			}
			qu = nil
		}
		if qu == nil {
			var err error
			if qu, err = m.OpenQueue(fmt.Sprintf("cc.r%d.e%d.q%d", r, eng, q), eng, q, need); err != nil {
				return err
			}
			x.queues[key], x.capacity[key] = qu, int(need)
		}
		n, err := qu.Dump(v)
		total += n
		return err
	}
	if p.ctl.Descriptors() > 0 {
		if err := dump(engs[0], ControlQueue, p.ctl); err != nil {
			return 0, fmt.Errorf("enc: rank %d: %w", r, err)
		}
	}
	for j, v := range p.vr {
		if v.Descriptors() == 0 {
			continue
		}
		if err := dump(engs[j], CollectiveQueue, v); err != nil {
			return 0, fmt.Errorf("enc: rank %d: %w", r, err)
		}
	}
	one := []byte{1, 0, 0, 0}
	if err := m.WriteDevice(LayoutOf(&Schedule{}, x.Ranks[r].Base).Ones, one); err != nil {
		return 0, fmt.Errorf("enc: rank %d control word: %w", r, err)
	}
	return total, nil
}
