// Package program loads and runs a NeuronCore program through the runtime:
// the 64-byte records are split into one instruction block per engine (by
// each record's engine byte, order kept), every block goes through the
// runtime's validators (ib_final_inst_validity_check) before anything is
// staged, the blocks are staged in device memory by DMA, the semaphores and
// events the records use are zeroed (ClearSync), and the engines are
// pointed at them and started over CSR. Run then polls the engines' status
// registers until each is done or has stopped on an error, and gives the
// blocks' device memory back (Unload).
package program

import (
	"errors"
	"fmt"
	"math"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// Errors of loading and running a program.
var (
	ErrBadProgram  = errors.New("bad program")
	ErrEngineFault = errors.New("an engine stopped on an error")
	ErrTimeout     = errors.New("the program did not finish in time")
	// ErrRunning is Unload's refusal of blocks an engine is still running.
	ErrRunning = errors.New("an engine is still running the block")
)

// Validator is the runtime's block check (runtime/isa's
// FinalInstValidityCheck): nil if every record of block is valid for HAL
// engine hal.
type Validator interface {
	FinalInstValidityCheck(block []byte, hal uint32) error
}

// Block is one engine's instruction block.
type Block struct {
	Engine isa.Engine
	Bytes  []byte
	Addr   uint64      // device address once staged
	Handle dmem.Handle // the device memory it is staged in (0: not staged, or unloaded)
	// run is what the runner knows of the block's engine, so that Unload
	// need not read its status again.
	run blockRun
}

// blockRun is what a runner knows of whether an engine runs from a block.
type blockRun uint8

const (
	// runMaybe: started (or not made by Load), not seen at rest since — an
	// engine may be running it.
	runMaybe blockRun = iota
	// runLoaded: loaded and not started: nothing runs from it.
	runLoaded
	// runEnded: started, then its engine seen at rest by Wait or Done.
	runEnded
)

// idle reports whether no engine runs from b (loaded and not started, or
// run to its end).
func (b *Block) idle() bool { return b.run != runMaybe }

// Split cuts a program into per-engine blocks by each record's engine byte,
// keeping the records' order. A program whose records are all one
// engine's is that engine's block as it is: its Bytes is prog (capacity
// cut to its length), not a copy — a collective's SP program is tens of
// megabytes on a thousand ranks. A size that is not a multiple of 64, or
// an engine byte past SP, is ErrBadProgram.
func Split(prog []byte) ([]Block, error) {
	if err := CheckSize(prog); err != nil {
		return nil, err
	}
	// Count each engine's bytes first, so that every block is allocated
	// once at its size rather than grown record by record (a collective's
	// SP program on 144 ranks is half a million records).
	var size [isa.TopSP]int
	for off := 0; off < len(prog); off += isa.RecordSize {
		e := isa.Engine(prog[off+1])
		if e >= isa.TopSP {
			return nil, fmt.Errorf("%w: record at offset %d names engine %d (want 0..4)", ErrBadProgram, off, e)
		}
		size[e] += isa.RecordSize
	}
	if e := isa.Engine(prog[1]); size[e] == len(prog) {
		return []Block{{Engine: e, Bytes: prog[:len(prog):len(prog)]}}, nil
	}
	var by [isa.TopSP][]byte
	for e, n := range size {
		if n > 0 {
			by[e] = make([]byte, 0, n)
		}
	}
	for off := 0; off < len(prog); off += isa.RecordSize {
		e := isa.Engine(prog[off+1])
		by[e] = append(by[e], prog[off:off+isa.RecordSize]...)
	}
	var out []Block
	for e, b := range by {
		if len(b) > 0 {
			out = append(out, Block{Engine: isa.Engine(e), Bytes: b})
		}
	}
	return out, nil
}

// CheckEnds refuses, as ErrBadProgram, a program one of whose engine
// blocks (Split) has no record with the last flag — its engine would run on
// past the program's end, fetching whatever the memory after it holds,
// until a fetch fails a gigabyte later — or has records after its first
// one with it, which its engine, stopping there, never runs.
func CheckEnds(prog []byte) error {
	blocks, err := Split(prog)
	if err != nil {
		return err
	}
	for _, b := range blocks {
		n := len(b.Bytes) / isa.RecordSize
		first := -1
		for i := 0; i < n && first < 0; i++ {
			if b.Bytes[i*isa.RecordSize+2]&isa.FlagLast != 0 {
				first = i
			}
		}
		switch {
		case first < 0:
			return fmt.Errorf("%w: the %s engine's block (%s) has no record with the last flag: it would run past the program's end (end it with \"last\")",
				ErrBadProgram, b.Engine, units.Plural(int64(n), "record", "records"))
		case first < n-1:
			return fmt.Errorf("%w: the %s engine's block has %s after its record %d, the first with the last flag: the engine stops there and would never run them (the last flag goes on the block's last record only)",
				ErrBadProgram, b.Engine, units.Plural(int64(n-1-first), "record", "records"), first)
		}
	}
	return nil
}

// CheckSize refuses, as ErrBadProgram, a program of no records or whose
// size is not a whole number of records: Split's first check, for callers
// that take a program as one block without splitting it.
func CheckSize(prog []byte) error {
	if len(prog) == 0 {
		return fmt.Errorf("%w: empty: a program holds at least one %d-byte record", ErrBadProgram, isa.RecordSize)
	}
	if len(prog)%isa.RecordSize != 0 {
		return fmt.Errorf("%w: %d bytes is not a whole number of %d-byte records", ErrBadProgram, len(prog), isa.RecordSize)
	}
	return nil
}

// ValidateBlocks runs v over blocks in order, each as issued on its engine,
// and stops at the first block v refuses. It returns how many blocks
// passed — the index of the refused block — and v's error as v returned
// it; len(blocks) and nil when every block is valid.
func ValidateBlocks(blocks []Block, v Validator) (int, error) {
	for i, b := range blocks {
		if err := v.FinalInstValidityCheck(b.Bytes, uint32(b.Engine)); err != nil {
			return i, err
		}
	}
	return len(blocks), nil
}

// Validate is the runtime's check of a program before anything is staged:
// Split, then ValidateBlocks. It returns the blocks, how many passed and
// the error as is: Split's (no blocks, ErrBadProgram) or v's for
// blocks[valid]. Runner.Load, neuronsim validate and the scenarios'
// validate step all check programs with it.
func Validate(prog []byte, v Validator) (blocks []Block, valid int, err error) {
	if blocks, err = Split(prog); err != nil {
		return nil, 0, err
	}
	valid, err = ValidateBlocks(blocks, v)
	return blocks, valid, err
}

// Runner loads programs onto one NeuronCore of a brought-up device.
type Runner struct {
	Dev       *bringup.Device
	DMA       *dma.DMA
	Mem       *dmem.Allocator
	Tables    *arch.Tables
	Validator Validator
	NC        int
	// MaxPolls bounds Run's status polls (each a status read, then a sleep
	// of PollInterval); 0: 10 million, or no bound when MaxTimePS is set.
	MaxPolls     int
	PollInterval time.Duration // 0: DefaultPollInterval
	// MaxTimePS, when not 0, bounds a run by device time: Wait gives up
	// (ErrTimeout) once more than MaxTimePS picoseconds of device time
	// (ndl.ElapsedPS) have passed since it began, at once after Start,
	// with an engine still running; MaxPolls then bounds the polls only
	// when set.
	MaxTimePS uint64
	// MaxHostTime, when not 0, bounds a run by the host's own time: Wait
	// gives up (ErrTimeout) once more than it has passed since Wait began,
	// with an engine still running. Device time does not bound it: a
	// program of heavy records (tensor operations of millions of elements,
	// each computed on the host) takes hours of host time within seconds
	// of device time.
	MaxHostTime time.Duration
}

// DefaultPollInterval is how often Wait polls the engines' status when the
// Runner's PollInterval is 0.
const DefaultPollInterval = time.Microsecond

// EngineResult is what one engine did.
type EngineResult struct {
	Engine      isa.Engine
	Records     int    // records in its block
	Retired     uint32 // records completed
	Status      uint32
	Error       uint32
	FaultOffset uint32
	Busy        time.Duration
}

// Result is a finished run.
type Result struct {
	Engines []EngineResult
}

// engineVA returns the runtime virtual address of an engine control register.
func (r *Runner) engineVA(e isa.Engine, off uint64) (uint64, error) {
	p, err := r.Tables.Khal.SeqParams(hwarch.Engine(e), true)
	if err != nil {
		return 0, err
	}
	return r.Dev.VA(r.Dev.Geometry.BAR0.TPBWindow(r.NC) + p.Seq + off), nil
}

// Load validates and stages a program and returns its blocks (with their
// device addresses and the handles of the device memory they hold until
// Unload). Nothing is staged unless every block validates, and a block
// that cannot be staged gives back the memory of those staged before it.
func (r *Runner) Load(prog []byte) ([]Block, error) {
	blocks, valid, err := Validate(prog, r.Validator)
	if err != nil {
		if valid < len(blocks) {
			return nil, fmt.Errorf("program: %s block: %w", blocks[valid].Engine, err)
		}
		return nil, err
	}
	for i := range blocks {
		if err := r.stage(&blocks[i]); err != nil {
			_ = r.free(blocks[:i]) // not started: nothing runs from them
			return nil, err
		}
	}
	return blocks, nil
}

// stage allocates device memory for b and copies its bytes there by DMA
// from a host buffer, setting b.Addr and b.Handle; a failure after the
// allocation gives it back.
func (r *Runner) stage(b *Block) error {
	h, err := r.Mem.Alloc(dmem.Request{Size: uint64(len(b.Bytes)), Align: 64, Channel: dmem.Any, NC: r.NC, Name: "program." + b.Engine.String()})
	if err != nil {
		return err
	}
	blk, err := r.Mem.Info(h)
	if err == nil {
		err = r.copyIn(blk.Addr, b.Bytes)
	}
	if err != nil {
		_ = r.Mem.Free(h)
		return fmt.Errorf("program: staging the %s block: %w", b.Engine, err)
	}
	b.Addr, b.Handle, b.run = blk.Addr, h, runLoaded
	return nil
}

// copyIn copies p to device address addr by DMA from a host buffer
// allocated for it and freed after.
func (r *Runner) copyIn(addr uint64, p []byte) error {
	host := r.DMA.Host()
	pa, err := host.HostAlloc(uint64(len(p)), 64)
	if err != nil {
		return err
	}
	defer func() { _ = host.HostFree(pa) }()
	if err := host.HostWrite(pa, p); err != nil {
		return err
	}
	_, err = r.DMA.Copy(r.NC, addr, r.Dev.Geometry.HostAddress(pa), uint64(len(p)))
	return err
}

// Unload gives back the device memory of loaded blocks once none of
// their engines is running (a program done, stopped on an error, or never
// started): a run's blocks held it until now, and a run after run on the
// same core would otherwise take ever more of it. An engine still running
// (its status RUNNING bit) is ErrRunning and nothing is freed: it may still
// fetch records from its block. The status is read only of blocks started
// and not seen at rest since by Wait or Done (which know it already), so
// unloading a finished run costs no register access. Blocks unloaded
// already (Handle 0) are passed over; each freed block's Handle becomes 0.
// The blocks must be those Load returned (not a copy taken before an
// earlier Unload): a handle freed once is reissued by the allocator, and a
// stale copy of it names another block.
func (r *Runner) Unload(blocks []Block) error {
	for _, b := range blocks {
		if b.Handle == 0 || b.idle() {
			continue
		}
		st, err := r.read(b.Engine, isa.EngineRegStatus)
		if err != nil {
			return fmt.Errorf("program: unloading the %s block: %w", b.Engine, err)
		}
		if st&isa.StatusRunning != 0 {
			return fmt.Errorf("program: unloading the %s block (status %#x): %w", b.Engine, st, ErrRunning)
		}
	}
	return r.free(blocks)
}

// UnloadIdle is Unload of only the blocks known to be at rest — loaded and
// not started, or seen at rest by Wait or Done since Start — without
// reading any register (so without spending device time): the others keep
// their device memory. It is the way out of a failed run whose engines
// may still be running.
func (r *Runner) UnloadIdle(blocks []Block) error {
	for i := range blocks {
		if blocks[i].idle() {
			if err := r.free(blocks[i : i+1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// UnloadSuperseded is Unload of the blocks of old whose engine has since
// run a block of by to its end (started, then seen at rest by Wait or
// Done): an engine runs one block at a time, so an earlier block on it is
// no longer fetched. It reads no register; the other blocks of old keep
// their memory. It is how a run that succeeded gives back the blocks a
// failed run before it left on the same engines (their engines were still
// running then, or waiting on a semaphore that would never come).
func (r *Runner) UnloadSuperseded(old, by []Block) error {
	for i := range old {
		if old[i].Handle == 0 {
			continue
		}
		for _, b := range by {
			if b.Engine == old[i].Engine && b.run == runEnded {
				if err := r.free(old[i : i+1]); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// free gives back the device memory of blocks, setting their handles to 0.
func (r *Runner) free(blocks []Block) error {
	for i := range blocks {
		b := &blocks[i]
		if b.Handle == 0 {
			continue
		}
		if err := r.Mem.Free(b.Handle); err != nil {
			return fmt.Errorf("program: unloading the %s block: %w", b.Engine, err)
		}
		b.Handle = 0
	}
	return nil
}

func (r *Runner) write(e isa.Engine, off uint64, v uint32) error {
	va, err := r.engineVA(e, off)
	if err != nil {
		return err
	}
	return r.Dev.CSR.Write(va, v)
}

func (r *Runner) read(e isa.Engine, off uint64) (uint32, error) {
	va, err := r.engineVA(e, off)
	if err != nil {
		return 0, err
	}
	return r.Dev.CSR.Read(va)
}

// Start points every block's engine at it and starts it: PC, then
// release_run_stall, then START_CTRL.
func (r *Runner) Start(blocks []Block) error {
	for i, b := range blocks {
		blocks[i].run = runMaybe
		for _, w := range []struct {
			off uint64
			v   uint32
		}{
			{isa.EngineRegPCLo, uint32(b.Addr)}, {isa.EngineRegPCHi, uint32(b.Addr >> 32)},
			{arch.NXRunStallOffset, 1}, {arch.NXStartCtrlOffset, isa.StartRun},
		} {
			if err := r.write(b.Engine, w.off, w.v); err != nil {
				return fmt.Errorf("program: starting %s: %w", b.Engine, err)
			}
		}
	}
	return nil
}

// Halt asks the engines of the blocks to stop (START_CTRL = halt): each
// stops once the record it has in flight, if any, completes — at once
// when it is waiting on a semaphore. An engine at rest is left as it is.
func (r *Runner) Halt(blocks []Block) error {
	for _, b := range blocks {
		if err := r.write(b.Engine, arch.NXStartCtrlOffset, isa.StartHalt); err != nil {
			return fmt.Errorf("program: halting %s: %w", b.Engine, err)
		}
	}
	return nil
}

// psText writes a device time in picoseconds as a duration ("1.0016ms"),
// or in ps where it is not a whole number of nanoseconds.
func psText(ps uint64) string {
	if ps%1000 != 0 {
		return fmt.Sprintf("%d ps", ps)
	}
	return time.Duration(ps / 1000).String()
}

// Wait polls the engines of the blocks until each is done or stopped on an
// error, and returns what each did. An engine error is ErrEngineFault (the
// result is still returned).
func (r *Runner) Wait(blocks []Block) (Result, error) {
	maxPolls, every := r.MaxPolls, r.PollInterval
	if maxPolls <= 0 {
		maxPolls = 10_000_000
		if r.MaxTimePS > 0 {
			maxPolls = math.MaxInt // device time bounds the wait: every poll sleeps
		}
	}
	if every <= 0 {
		every = DefaultPollInterval
	}
	var since func() (uint64, error)
	if r.MaxTimePS > 0 {
		var err error
		if since, err = ndl.ElapsedPS(r.Dev.Dev); err != nil {
			return Result{}, err
		}
	}
	hostStart := time.Now()
	for i := 0; ; i++ {
		finished := true
		for _, b := range blocks {
			st, err := r.read(b.Engine, isa.EngineRegStatus)
			if err != nil {
				return Result{}, err
			}
			if st&(isa.StatusDone|isa.StatusError) == 0 {
				finished = false
				break
			}
		}
		if finished {
			setIdle(blocks)
			break
		}
		if since != nil {
			took, err := since()
			if err != nil {
				return Result{}, err
			}
			if took > r.MaxTimePS {
				res, _ := r.collect(blocks)
				return res, fmt.Errorf("program: not done %v after its engines were started (the limit is %v; its staging before and its unloading after are not counted): %w",
					psText(took), psText(r.MaxTimePS), ErrTimeout)
			}
		}
		if host := time.Since(hostStart); r.MaxHostTime > 0 && host > r.MaxHostTime {
			res, _ := r.collect(blocks)
			return res, fmt.Errorf("program: not done after %v of the host's time (the limit is %v): %w", hostTimeText(host, r.MaxHostTime), r.MaxHostTime, ErrTimeout)
		}
		if i >= maxPolls {
			res, _ := r.collect(blocks)
			return res, fmt.Errorf("program: not done after %d polls (each a status read, then a sleep of %v): %w", maxPolls, every, ErrTimeout)
		}
		if err := ndl.Sleep(r.Dev.Dev, every); err != nil {
			return Result{}, err
		}
	}
	return r.collect(blocks)
}

// hostTimeText is host, a run's host time past limit, rounded up to a
// unit a thousandth of the limit or finer (1 ms, 1 µs or 1 ns): it keeps
// the digits that say how far past the limit the run went, and never reads
// as the limit or less (rounded to the millisecond, 1.2 µs past a 1 µs
// limit read "0s").
func hostTimeText(host, limit time.Duration) time.Duration {
	unit := time.Millisecond
	for unit > time.Nanosecond && unit*1000 > limit {
		unit /= 1000
	}
	if r := host % unit; r != 0 {
		host += unit - r
	}
	return host
}

// Done reports whether every engine of the blocks is done or stopped on an
// error: one status read per engine, for callers that time a run and poll
// it themselves.
func (r *Runner) Done(blocks []Block) (bool, error) {
	for _, b := range blocks {
		st, err := r.read(b.Engine, isa.EngineRegStatus)
		if err != nil {
			return false, err
		}
		if st&(isa.StatusDone|isa.StatusError) == 0 {
			return false, nil
		}
	}
	setIdle(blocks)
	return true, nil
}

// setIdle notes that the blocks' engines, started on them, have been seen
// at rest: none runs from them any more.
func setIdle(blocks []Block) {
	for i := range blocks {
		blocks[i].run = runEnded
	}
}

// collect reads every engine's counters.
func (r *Runner) collect(blocks []Block) (Result, error) {
	var res Result
	var fault error
	for _, b := range blocks {
		er := EngineResult{Engine: b.Engine, Records: len(b.Bytes) / isa.RecordSize}
		regs := []*uint32{&er.Status, &er.Error, &er.FaultOffset, &er.Retired}
		for i, off := range []uint64{isa.EngineRegStatus, isa.EngineRegError, isa.EngineRegFaultOffset, isa.EngineRegRetired} {
			v, err := r.read(b.Engine, off)
			if err != nil {
				return res, err
			}
			*regs[i] = v
		}
		lo, err := r.read(b.Engine, isa.EngineRegBusyLo)
		if err != nil {
			return res, err
		}
		hi, err := r.read(b.Engine, isa.EngineRegBusyHi)
		if err != nil {
			return res, err
		}
		er.Busy = time.Duration(uint64(hi)<<32 | uint64(lo))
		if er.Status&isa.StatusError != 0 && fault == nil {
			fault = fmt.Errorf("program: %s stopped with error %d (%s) at record offset %d: %w", b.Engine, er.Error, isa.ErrorText(er.Error), er.FaultOffset, ErrEngineFault)
		}
		res.Engines = append(res.Engines, er)
	}
	return res, fault
}

// Run loads, starts and waits for a program, then unloads it. A program
// that did not finish in time (ErrTimeout) keeps its device memory: its
// engines may still be fetching from it.
func (r *Runner) Run(prog []byte) (Result, error) {
	res, _, err := r.RunStarted(prog)
	return res, err
}

// RunStarted is Run that also says whether the program was started: one
// refused by the validators, or that could not be staged, never ran.
func (r *Runner) RunStarted(prog []byte) (res Result, started bool, err error) {
	blocks, err := r.Load(prog)
	if err != nil {
		return Result{}, false, err
	}
	if err := r.ClearSync(blocks); err != nil {
		_ = r.Unload(blocks)
		return Result{}, false, err
	}
	if err := r.Start(blocks); err != nil {
		_ = r.Unload(blocks)
		return Result{}, false, err
	}
	res, err = r.Wait(blocks)
	if errors.Is(err, ErrTimeout) {
		return res, true, err
	}
	if uerr := r.Unload(blocks); uerr != nil && err == nil {
		err = uerr
	}
	return res, true, err
}

// ClearSync sets to 0, through the NC's semaphore SET bank and its event
// bank, every semaphore and event a record of blocks waits on or signals,
// each once, so that the run starts from them as a device fresh from its
// reset has them. A device that ran a program before — one served to
// several clients, or run twice — keeps what that run left: a wait
// already true at the start let a record read results part-way through
// another engine's work, and the run still ended done. The others are left
// as they are.
func (r *Runner) ClearSync(blocks []Block) error {
	var sems, events [256]bool
	EachRecord(blocks, func(rec isa.Record) {
		for _, y := range []isa.Sync{rec.Wait, rec.Signal} {
			switch y.Mode {
			case isa.WaitSemGE, isa.WaitSemEQ, isa.WaitSemGT, isa.SignalSemSet, isa.SignalSemIncr, isa.SignalSemDecr:
				sems[y.Index] = true
			case isa.WaitEvent, isa.SignalEventSet, isa.SignalEventClr:
				events[y.Index] = true
			}
		}
	})
	bar := r.Dev.Geometry.BAR0
	win := bar.TPBWindow(r.NC)
	zero := func(what string, bank uint64, i int) error {
		if err := r.Dev.CSR.Write(r.Dev.VA(win+bank+4*uint64(i)), 0); err != nil {
			return fmt.Errorf("program: clearing the NC's %s %d: %w", what, i, err)
		}
		return nil
	}
	for i := range sems {
		if sems[i] {
			if err := zero("semaphore", bar.SemSetOffset, i); err != nil {
				return err
			}
		}
		if events[i] {
			if err := zero("event", bar.EventsOffset, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// EachRecord calls f with every record of blocks, decoded, block by
// block in order.
func EachRecord(blocks []Block, f func(isa.Record)) {
	for _, b := range blocks {
		for off := 0; off+isa.RecordSize <= len(b.Bytes); off += isa.RecordSize {
			rec, _ := isa.Decode(b.Bytes[off:]) // a whole record: Decode cannot fail
			f(rec)
		}
	}
}

// Semaphores reads the NC's 256 semaphores through csr_read.
func (r *Runner) Semaphores() ([]int32, error) {
	b := r.Dev.Geometry.BAR0
	words := make([]uint32, 256)
	if err := r.Dev.CSR.MemReadBuf(r.Dev.VA(b.TPBWindow(r.NC)+b.SemReadOffset), words); err != nil {
		return nil, err
	}
	out := make([]int32, len(words))
	for i, w := range words {
		out[i] = int32(w)
	}
	return out, nil
}

// SBUFAddr returns the device address of byte offset off of SBUF partition p.
func (r *Runner) SBUFAddr(p int, off uint64) (uint64, error) {
	base, err := r.Tables.Khal.TPBBase(r.NC)
	if err != nil {
		return 0, err
	}
	return base + uint64(p)*r.Dev.Geometry.SBUFPartitionSize + off, nil
}

// PSUMAddr returns the device address of byte offset off of PSUM partition p.
func (r *Runner) PSUMAddr(p int, off uint64) (uint64, error) {
	base, err := r.Tables.Khal.PSUMBase(r.NC)
	if err != nil {
		return 0, err
	}
	return base + uint64(p)*r.Dev.Geometry.PSUMPartitionSize() + off, nil
}

// WriteTile writes data into P consecutive partitions from partition start
// (len(data)/P bytes each, at byte offset off) of SBUF or PSUM by one DMA job.
func (r *Runner) WriteTile(psum bool, start, partitions int, off uint64, data []byte) error {
	return r.tile(psum, start, partitions, off, data, true)
}

// ReadTile reads len(buf)/P bytes of each of P partitions back by DMA.
func (r *Runner) ReadTile(psum bool, start, partitions int, off uint64, buf []byte) error {
	return r.tile(psum, start, partitions, off, buf, false)
}

// ErrTileBounds is wrapped by the error of a tile that does not fit in
// SBUF or PSUM: partitions past the last, or bytes past a partition's end.
var ErrTileBounds = errors.New("tile out of bounds")

// CheckTile reports whether a tile of P partitions from partition start,
// per bytes each at byte offset off, fits in SBUF (or PSUM) of a geometry:
// the error names the bound it passes (the partition count, or the
// partition size, get_valid_sbuf_partition_size for SBUF).
func CheckTile(geo *hwarch.Geometry, psum bool, start, partitions int, off, per uint64) error {
	space, size := "SBUF", geo.SBUFPartitionSize
	if psum {
		space, size = "PSUM", geo.PSUMPartitionSize()
	}
	n := geo.SBUFPartitions
	switch {
	case partitions <= 0 || start < 0 || start >= n || partitions > n-start:
		return fmt.Errorf("program: %s partitions %d..%d: a %s core has partitions 0..%d: %w",
			space, start, start+partitions-1, geo.Generation, n-1, ErrTileBounds)
	case per == 0:
		return fmt.Errorf("program: %s tile of 0 bytes per partition: %w", space, ErrTileBounds)
	case off >= size || per > size-off:
		return fmt.Errorf("program: %s bytes [%#x, %#x) of each partition pass its end: a %s %s partition holds %#x bytes (%d): %w",
			space, off, off+per, geo.Generation, space, size, size, ErrTileBounds)
	}
	return nil
}

func (r *Runner) tile(psum bool, start, partitions int, off uint64, data []byte, write bool) error {
	if partitions <= 0 || len(data)%partitions != 0 || len(data) == 0 {
		return fmt.Errorf("program: %d bytes do not split into %d partitions", len(data), partitions)
	}
	per := uint64(len(data) / partitions)
	if err := CheckTile(r.Dev.Geometry, psum, start, partitions, off, per); err != nil {
		return err
	}
	host := r.DMA.Host()
	pa, err := host.HostAlloc(uint64(len(data)), 64)
	if err != nil {
		return err
	}
	defer host.HostFree(pa)
	if write {
		if err := host.HostWrite(pa, data); err != nil {
			return err
		}
	}
	geo := r.Dev.Geometry
	var ts []dma.Transfer
	for p := 0; p < partitions; p++ {
		var dev uint64
		if psum {
			dev, err = r.PSUMAddr(start+p, off)
		} else {
			dev, err = r.SBUFAddr(start+p, off)
		}
		if err != nil {
			return err
		}
		h := geo.HostAddress(pa + uint64(p)*per)
		if write {
			ts = append(ts, dma.Transfer{Src: h, Dst: dev, Len: per})
		} else {
			ts = append(ts, dma.Transfer{Src: dev, Dst: h, Len: per})
		}
	}
	if _, err := r.DMA.CopyMany(r.NC, ts); err != nil {
		return err
	}
	if !write {
		return host.HostRead(pa, data)
	}
	return nil
}
