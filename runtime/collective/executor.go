package collective

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/program"
)

// Semaphores the collectives use on every rank's NeuronCore (the model's
// choice; docs/collectives.md).
const (
	SemGo       = 248 // rank 0 releases the others: 1
	SemArrivals = 249 // slices landed in this rank since its last wait on them
	SemDone     = 250 // this rank's engines done with their sends since its last wait on them
	SemCredits  = 251 // credits from the ranks this rank writes to, since its last wait on them
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

// Buffer returns the device address of buffer b, one of a validated
// schedule's three.
func (l Layout) Buffer(b enc.Buffer) uint64 {
	switch b {
	case enc.Input:
		return l.Input
	case enc.Output:
		return l.Output
	}
	return l.Scratch
}

// LayoutOf returns the buffers of a rank whose area starts at base.
func LayoutOf(s *enc.Schedule, base uint64) Layout {
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
	// PollResolution is the finest interval of device time at which rank
	// 0 is polled to learn it is done (0: 100 ns): the time measured is
	// within 0.1 % or this of when rank 0 finished, plus the status reads
	// of a poll (Result.ResolutionPS says how much in all). The parity mode
	// (internal/cluster with ideal endpoints) polls every 1 ns, so that a
	// 10 µs collective is measured to 0.01 %, not 1 %.
	PollResolution time.Duration
	// Staged makes Run plan every descriptor and write it into the rings
	// before the devices start even when every rank's backend has lazy
	// host memory, where Run would stream them (docs/collectives.md §On
	// devices): for tests and comparisons. The results are the same.
	// Devices without lazy host memory (remote, kernel) are always run
	// staged.
	Staged bool
	// Progress, when not nil, is called while a streamed run's devices run,
	// at most once every ProgressEvery of host time (0: 250 ms), with the
	// descriptor pairs the engines have fetched (to within a prefetch burst
	// of each queue, dma.Queue.Fetched) and the run's total (its
	// Result.Descriptors). It reads those host-side counts alone,
	// never a device, so it changes no result and no device time. A staged
	// run, whose rings the devices read without the host, does not call it.
	Progress      func(fetched, total int)
	ProgressEvery time.Duration

	queues map[[2]int]*dma.Queue // (rank, engine<<8 | queue) → the open queue
	// streaming is the total descriptor pairs of the streamed run under
	// way (0: none), for Progress.
	streaming int
	// left holds, by rank, the program blocks of failed runs that may still
	// have been running when the run gave up: Release unloads those at rest.
	left map[int][]program.Block
	// credits is, per rank, how many credit semaphores the last run's
	// plan counted in (rankPlan.credits), for Settled.
	credits []int
}

// Result is what a run did.
type Result struct {
	TimePS uint64 // rank 0's time from release to the last rank's finish, as the host saw it
	// ResolutionPS bounds how late TimePS is: rank 0 finished after the
	// last poll that found it running began, so at most ResolutionPS
	// before TimePS — that poll's status reads (a register read crosses
	// PCIe: about 1 µs), the sleep after it and the reads that found it
	// done.
	ResolutionPS uint64
	Steps        int
	Descriptors  int   // descriptor pairs across every rank and queue
	Bytes        int64 // bytes moved between ranks
}

// ErrRun marks a collective that could not run to completion.
var ErrRun = errors.New("collective failed")

// ErrSemaphoreRange marks a schedule with a wait for more counts of one
// semaphore at once (a step's arrivals into one rank, say) than a
// record's wait value holds (65535).
var ErrSemaphoreRange = errors.New("schedule too long for the collectives' semaphores")

// Run executes s with data type d on the ranks and returns its time. The
// ranks' buffers must already hold the inputs; the outputs are in place
// when it returns. A queue that halts or a rank that does not finish
// within Timeout is an error wrapping ErrRun naming the rank.
//
// When every rank's backend has lazy host memory (and Staged is not set)
// the run is streamed: the SP programs and each queue's descriptor count
// are planned first, then the descriptors are planned again, a step at a
// time, as the devices read their rings (runStreamed). Otherwise every
// descriptor is planned and written into the rings before the devices
// start. Both give the same result.
func (x *Executor) Run(s *enc.Schedule, d enc.Dtype) (Result, error) {
	if err := x.check(s, d); err != nil {
		return Result{}, err
	}
	if !x.Staged && x.lazy() {
		return x.runStreamed(s, d)
	}
	plans, err := x.plan(s, d, planAll)
	if err != nil {
		return Result{}, err
	}
	res := x.result(s)
	blocks, err := x.load(s, plans, &res, x.stageDumped)
	if err != nil {
		return res, err
	}
	return x.execute(s, blocks, res)
}

// runStreamed runs s with the descriptors fed to the queues as the devices
// read them. The first pass plans the SP programs and counts every queue's
// descriptors (counting vrings); the queues are opened fed by a second
// planner in planDescriptors mode, which plans the next stage whenever a
// queue reads past what it has planned; each rank's program is loaded and
// let go. When the run has succeeded the fed queues let go of their feeds
// (and so of the planner: every pair was read); after a failure those still
// holding pairs are written out (materialise), so that an engine still
// fetching from them, and a snapshot of the system, see what a staged ring
// holds. Their lazy rings stay for the next streamed run, as a staged run's rings
// do, so that both take the same register accesses and start at the same
// device time; a staged run that finds them opens its queues afresh, and
// Release frees them.
func (x *Executor) runStreamed(s *enc.Schedule, d enc.Dtype) (Result, error) {
	plans, err := x.plan(s, d, planPrograms)
	if err != nil {
		return Result{}, err
	}
	feed := x.newPlanner(s, d, planDescriptors)
	var mu sync.Mutex
	more := func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return feed.next()
	}
	res := x.result(s)
	blocks, err := x.load(s, plans, &res, func(r int, p rankPlan) (int, error) {
		return x.stageFed(r, p, feed.plans[r], more)
	})
	if err != nil {
		return res, err
	}
	x.streaming = res.Descriptors
	res, err = x.execute(s, blocks, res)
	x.streaming = 0
	if err != nil {
		return res, x.materialise(err)
	}
	x.unfeed()
	return res, nil
}

// fetched is how many descriptor pairs of the streamed run under way the
// engines have fetched, to within a burst of each queue (dma.Queue.Fetched).
func (x *Executor) fetched() int {
	n := 0
	for _, qu := range x.queues {
		n += qu.Fetched()
	}
	return min(n, x.streaming)
}

// MaxMaterialise bounds the descriptor pairs a failed streamed run writes
// out (materialise): 4 Mi pairs, 256 MiB of rings.
const MaxMaterialise = 4 << 20

// materialise is what a streamed run that failed does before it returns
// err: the engines may still fetch from its queues (a collective left
// running past the timeout goes on), and a snapshot of the system does not
// hold a lazy ring's bytes, so every fed queue still holding pairs is
// turned into a written one (dma.Queue.Materialise: the rest planned and
// written into plain rings) — at most MaxMaterialise pairs in all; past
// that the queues stay fed (the engines read on from the planner, but a
// snapshot taken now would not continue the run), and the error says so.
func (x *Executor) materialise(err error) error {
	keys := x.sortedQueues()
	left := 0
	for _, key := range keys {
		left += x.queues[key].Unread()
	}
	if left > MaxMaterialise {
		return fmt.Errorf("%w (its %d descriptor pairs not yet read stay fed, past the %d written out for a snapshot)", err, left, MaxMaterialise)
	}
	for _, key := range keys {
		if qu := x.queues[key]; qu.Unread() > 0 {
			if e := qu.Materialise(); e != nil {
				return fmt.Errorf("%w (and its queue %q could not be written out: %v)", err, qu.Name, e)
			}
		}
	}
	return err
}

// sortedQueues returns the keys of the executor's queues in order.
func (x *Executor) sortedQueues() [][2]int {
	keys := make([][2]int, 0, len(x.queues))
	for k := range x.queues {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	return keys
}

// lazy reports whether every rank's backend has lazy host memory.
func (x *Executor) lazy() bool {
	for _, rk := range x.Ranks {
		if !rk.Runner.DMA.Lazy() {
			return false
		}
	}
	return len(x.Ranks) > 0
}

// result is a run's result before it runs: its steps and traffic.
func (x *Executor) result(s *enc.Schedule) Result {
	res := Result{Steps: len(s.Steps)}
	res.Bytes, _ = s.Traffic()
	return res
}

// execute starts the loaded ranks, times rank 0 and collects every rank,
// then gives back the device memory of the programs (program.Runner.Unload):
// all of it once the run has succeeded; after a failure, that of the
// blocks known to be at rest (the others may still fetch from theirs).
func (x *Executor) execute(s *enc.Schedule, blocks [][]program.Block, res Result) (Result, error) {
	res, err := x.executeLoaded(s, blocks, res)
	if err != nil {
		x.unload(blocks)
		return res, err
	}
	for r := range blocks {
		if err := x.Ranks[r].Runner.Unload(blocks[r]); err != nil {
			return res, fmt.Errorf("enc: rank %d (device %d): %w: %w", r, x.Ranks[r].Device, err, ErrRun)
		}
	}
	for r, old := range x.left { // a failed run's blocks on the engines this one ran are no longer fetched
		if r < len(blocks) {
			_ = x.Ranks[r].Runner.UnloadSuperseded(old, blocks[r])
		}
		x.keepLeft(r)
	}
	return res, nil
}

// executeLoaded is execute but for unloading the programs.
func (x *Executor) executeLoaded(s *enc.Schedule, blocks [][]program.Block, res Result) (Result, error) {
	elapsed, err := x.launch(blocks)
	if err != nil {
		return res, err
	}
	// Rank 0 finishes last: the time is taken when it is seen done.
	running, err := x.poll(x.Ranks[0].Runner, blocks[0], elapsed)
	if err != nil {
		return res, x.diagnose(s, err)
	}
	if res.TimePS, err = elapsed(); err != nil {
		return res, fmt.Errorf("enc: rank 0 clock: %w", err)
	}
	res.ResolutionPS = res.TimePS - running
	if err := x.wait(s, blocks); err != nil {
		return res, err
	}
	return res, nil
}

// unload gives back the device memory of each rank's blocks known to be
// at rest (program.Runner.UnloadIdle: not started, or seen done), on the
// way out of a failed run (its error is the one returned), reading no
// register: a failed run leaves the devices' time where it failed. The
// blocks still holding memory are kept for Release.
func (x *Executor) unload(blocks [][]program.Block) {
	for r := range blocks {
		_ = x.Ranks[r].Runner.UnloadIdle(blocks[r])
		for _, b := range blocks[r] {
			if b.Handle != 0 {
				if x.left == nil {
					x.left = map[int][]program.Block{}
				}
				x.left[r] = append(x.left[r], b)
			}
		}
	}
}

// check refuses a schedule the ranks cannot run: an invalid one, one of
// another rank count or element size, inter-RDH engines a NeuronCore does
// not have.
func (x *Executor) check(s *enc.Schedule, d enc.Dtype) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if len(x.Ranks) != s.Ranks {
		return fmt.Errorf("enc: %s of %d ranks on %d ranks: %w", s.Op, s.Ranks, len(x.Ranks), ErrRun)
	}
	for _, rel := range x.InterRDH {
		for r := range x.Ranks {
			if rel < 0 || rel >= x.Ranks[r].Runner.Dev.Geometry.DMAEnginesPerNC {
				return fmt.Errorf("enc: inter-RDH DMA engine %d: a NeuronCore has engines 0..%d: %w",
					rel, x.Ranks[r].Runner.Dev.Geometry.DMAEnginesPerNC-1, ErrRun)
			}
		}
	}
	if d.Size() != s.Elem {
		return fmt.Errorf("enc: %s elements are %d bytes, the schedule's %d: %w", d, d.Size(), s.Elem, ErrRun)
	}
	return nil
}

// load stages every rank's plan with stage (semaphores to 0, its queues
// ready with its descriptors, counted in res.Descriptors) and loads its SP
// program, and returns the programs' blocks by rank. Each rank's plan and
// its program's bytes are let go once loaded (the blocks keep their
// engines and device addresses). A device that does not answer is named
// as such.
func (x *Executor) load(s *enc.Schedule, plans []rankPlan, res *Result, stage func(r int, p rankPlan) (int, error)) ([][]program.Block, error) {
	blocks := make([][]program.Block, s.Ranks)
	x.credits = make([]int, len(x.Ranks))
	for r := range x.Ranks {
		n, err := stage(r, plans[r])
		if err != nil {
			x.unload(blocks[:r])
			if down := x.silentDevice(s); down != nil {
				return nil, down
			}
			return nil, fmt.Errorf("%w: %w", err, ErrRun)
		}
		res.Descriptors += n
		x.credits[r] = plans[r].credits
		if blocks[r], err = x.Ranks[r].Runner.Load(plans[r].prog); err != nil {
			x.unload(blocks[:r]) // loaded, not started
			if down := x.silentDevice(s); down != nil {
				return nil, down
			}
			return nil, fmt.Errorf("enc: rank %d: %w: %w", r, err, ErrRun)
		}
		plans[r] = rankPlan{}
		for i := range blocks[r] {
			blocks[r][i].Bytes = nil
		}
	}
	return blocks, nil
}

// launch starts every rank but 0 (they wait for go), then spends the
// launch cost and starts rank 0, and returns rank 0's clock, started
// before the launch cost.
func (x *Executor) launch(blocks [][]program.Block) (func() (uint64, error), error) {
	for r := len(blocks) - 1; r >= 1; r-- {
		if err := x.Ranks[r].Runner.Start(blocks[r]); err != nil {
			return nil, fmt.Errorf("enc: rank %d: %w", r, err)
		}
	}
	r0 := x.Ranks[0].Runner
	elapsed, err := ndl.ElapsedPS(r0.Dev.Dev)
	if err != nil {
		return nil, fmt.Errorf("enc: rank 0 clock: %w", err)
	}
	if x.LaunchCost > 0 {
		if err := ndl.Sleep(r0.Dev.Dev, x.LaunchCost); err != nil {
			return nil, err
		}
	}
	if err := r0.Start(blocks[0]); err != nil {
		return nil, fmt.Errorf("enc: rank 0: %w", err)
	}
	return elapsed, nil
}

// DefaultTimeout is the longest a run may take when Executor.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// DefaultProgressEvery is how often, in host time, a streamed run reports
// its progress when Executor.ProgressEvery is 0.
const DefaultProgressEvery = 250 * time.Millisecond

// Polling rank 0: first every minPoll (or Executor.PollResolution) of
// device time, then every 1/1000 of the time already spent, at most
// maxPoll — the time measured is then within 0.1 % (or that floor) of when
// rank 0 finished.
const (
	minPoll = 100 * time.Nanosecond
	maxPoll = 10 * time.Microsecond
)

// poll waits until rank 0's program is done, for at most Timeout of
// device time, and returns when (on the launch's clock, elapsed) the last
// poll that found it running began: it finished after that.
func (x *Executor) poll(r0 *program.Runner, blocks []program.Block, elapsed func() (uint64, error)) (running uint64, err error) {
	timeout := x.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	since, err := ndl.ElapsedPS(r0.Dev.Dev)
	if err != nil {
		return 0, fmt.Errorf("rank 0 clock: %w", err)
	}
	floor := minPoll
	if x.PollResolution > 0 {
		floor = min(x.PollResolution, maxPoll)
	}
	report, every := x.Progress != nil && x.streaming > 0, x.ProgressEvery
	if every <= 0 {
		every = DefaultProgressEvery
	}
	last, reported := time.Now(), 0
	for {
		if report && time.Since(last) >= every {
			last, reported = time.Now(), max(reported, x.fetched()) // an engine re-reading its last burst does not go back
			x.Progress(reported, x.streaming)
		}
		before, err := elapsed()
		if err != nil {
			return 0, fmt.Errorf("rank 0 clock: %w", err)
		}
		done, err := r0.Done(blocks)
		if err != nil || done {
			return running, err
		}
		running = before
		ps, err := since()
		if err != nil {
			return 0, fmt.Errorf("rank 0 clock: %w", err)
		}
		waited := time.Duration(ps / 1000)
		if waited >= timeout {
			return 0, fmt.Errorf("rank 0 not done after %v of device time: %w", timeout, program.ErrTimeout)
		}
		if err := ndl.Sleep(r0.Dev.Dev, min(max(floor, waited/1000), maxPoll)); err != nil {
			return 0, err
		}
	}
}

// wait collects every rank's result once rank 0 is done: an engine that
// stopped on an error is ErrRun naming the rank, and so is a rank whose
// collective semaphores are not all back at zero (Settled).
func (x *Executor) wait(s *enc.Schedule, blocks [][]program.Block) error {
	for r := range s.Ranks {
		run := *x.Ranks[r].Runner
		run.MaxPolls = 1000
		if _, err := run.Wait(blocks[r]); err != nil {
			return fmt.Errorf("enc: rank %d (device %d): %w: %w", r, x.Ranks[r].Device, err, ErrRun)
		}
	}
	return x.Settled(s)
}

// collectiveSems is every semaphore a run counts on but the credit
// semaphores past the first (CreditSem).
var collectiveSems = [...]int{SemGo, SemArrivals, SemDone, SemCredits, SemFinished}

// rankSems is every semaphore a rank whose plan counts its credits in
// credits semaphores counts on: collectiveSems and CreditSem(1 …
// credits−1).
func rankSems(credits int) []int {
	sems := slices.Clone(collectiveSems[:])
	for i := 1; i < credits; i++ {
		sems = append(sems, CreditSem(i))
	}
	return sems
}

// Settled checks that the collective semaphores of every rank of s are
// zero (with the credit semaphores the last run's plan counted in), as a
// run that succeeded leaves them: each wait of a rank's program
// takes what it waited for, so once the programs have ended every count
// sent has been taken, and one left over is a write the plan did not count
// (a duplicate, or one of another run). Run checks it after every run; a
// count left over is ErrRun naming the rank, the semaphore and its value.
func (x *Executor) Settled(s *enc.Schedule) error {
	if s.Ranks > len(x.Ranks) {
		return fmt.Errorf("enc: %d ranks, the executor has %d: %w", s.Ranks, len(x.Ranks), ErrRun)
	}
	for r := range s.Ranks {
		run := x.Ranks[r].Runner
		credits := 1
		if r < len(x.credits) {
			credits = x.credits[r]
		}
		for _, sem := range rankSems(credits) {
			v, err := run.Dev.CSR.Read(semVA(run, run.Dev.Geometry.BAR0.SemReadOffset, sem))
			if err != nil {
				return fmt.Errorf("enc: %s: rank %d (device %d) semaphore %d: %w: %w", s.Op, r, x.Ranks[r].Device, sem, err, ErrRun)
			}
			if v != 0 {
				return fmt.Errorf("enc: %s: rank %d (device %d): semaphore %d is %d after the run, not 0: writes landed that no wait took: %w",
					s.Op, r, x.Ranks[r].Device, sem, int32(v), ErrRun)
			}
		}
	}
	return nil
}

// diagnose says why a run did not finish: a device that does not answer
// (in reset), or the first DMA queue that halted (a link down, a bad
// address); without either, the timeout itself.
func (x *Executor) diagnose(s *enc.Schedule, err error) error {
	if err := x.silentDevice(s); err != nil {
		return err
	}
	for _, key := range x.sortedQueues() {
		r, q := key[0], x.queues[key]
		if st, e := q.Status(); e == nil && st&udma.StatusHalted != 0 {
			return fmt.Errorf("enc: %s: rank %d (device %d) DMA engine %d queue %d halted with status %#x (%s): %w",
				s.Op, r, x.Ranks[r].Device, q.Engine, q.Index, st, udma.StatusText(st), ErrRun)
		}
	}
	return fmt.Errorf("enc: %s did not finish: %w: %w", s.Op, err, ErrRun)
}

// silentDevice names the first rank whose device does not answer (reads
// 0xDEADBEEF: in reset or not ready), or returns nil.
func (x *Executor) silentDevice(s *enc.Schedule) error {
	for r := range s.Ranks {
		run := x.Ranks[r].Runner
		if v, e := run.Dev.CSR.Read(semVA(run, run.Dev.Geometry.BAR0.SemReadOffset, SemGo)); e == nil && v == hwarch.NotReady {
			return fmt.Errorf("enc: %s: rank %d: device %d does not answer (%#x: in reset or not ready): %w",
				s.Op, r, x.Ranks[r].Device, v, ErrRun)
		}
	}
	return nil
}

// Release gives back every queue the executor opened (a queue of a device
// that was reset is forgotten as it is), and the device memory of failed
// runs' programs whose engines have stopped since (program.Runner.Unload,
// reading the status of each; those still running are kept for the next
// Release). The next Run opens the queues afresh; call it after a device
// reset, once the ranks' runners are up again.
func (x *Executor) Release() {
	for key, q := range x.queues {
		_ = q.Close() // the queue may belong to a device that no longer knows it
		delete(x.queues, key)
	}
	for r, blocks := range x.left {
		if r < len(x.Ranks) {
			for i := range blocks {
				_ = x.Ranks[r].Runner.Unload(blocks[i : i+1]) // still running, or a device that does not answer: kept
			}
		}
		x.keepLeft(r)
	}
}

// Forget drops, without touching any device, what the executor still
// holds of the system: the queues it has open (Release closes them first
// when it is called before) and the program blocks that failed runs left
// on engines that were still running (Release keeps those, to unload them
// once they stop). It is for when the runtime lets go of the system — its
// device-memory allocators go with it (internal/cluster's Reattach), so
// the handles those blocks hold mean nothing any more, and unloading them
// later would read registers (spending device time) and free handles of
// allocators that have since issued them again. A snapshot saved after a
// failed run, restored, then gives the same as going on from the save: the
// restored executor holds nothing either.
func (x *Executor) Forget() {
	clear(x.queues)
	x.left = nil
	x.streaming = 0
}

// keepLeft keeps of rank r's left blocks those still holding device
// memory.
func (x *Executor) keepLeft(r int) {
	kept := slices.DeleteFunc(x.left[r], func(b program.Block) bool { return b.Handle == 0 })
	if len(kept) == 0 || r >= len(x.Ranks) {
		delete(x.left, r)
		return
	}
	x.left[r] = kept
}
