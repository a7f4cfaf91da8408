package stack

import (
	"errors"
	"fmt"
	"time"

	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/program"
)

// Tile is a range of SBUF or PSUM partitions at one offset, Bytes of each
// (program.CheckTile's terms).
type Tile struct {
	PSUM         bool
	Start, Count int
	Offset       uint64
	Bytes        uint64 // per partition
}

// Input is a tile written before a program runs: Data is the partitions'
// bytes one after another.
type Input struct {
	Tile
	Data []byte
}

// ExecRequest is a program run on one NC with its inputs and outputs.
type ExecRequest struct {
	NC      int
	Program []byte // the assembled records
	Inputs  []Input
	Outputs []Tile
	// Output receives output i's bytes as soon as they are read, in
	// order; its error ends the run as it is.
	Output func(i int, data []byte) error
	// MaxTimePS, when not 0, is the most device time the run may take
	// (program.Runner.MaxTimePS).
	MaxTimePS uint64
	// MaxHostTime, when not 0, is the most host time the run may take
	// (program.Runner.MaxHostTime).
	MaxHostTime time.Duration
}

// ExecResult is what a run did. Ran says the program ran to an end
// (TimePS and Result are valid), even when it stopped on an error;
// Semaphores are read after a run without error.
type ExecResult struct {
	Ran        bool   // the program was started (not refused by the validators or staging)
	TimePS     uint64 // device time from the program's staging to its end
	Result     program.Result
	Semaphores []int32
	// Doorbells are the DMA queues the program's dma_trigger records rang,
	// each once in the order of its first record, with its status after
	// the run.
	Doorbells []QueueStatus
}

// QueueStatus is a DMA queue and its status register (udma.Status*).
type QueueStatus struct {
	Engine, Queue int
	Status        uint32
}

// ErrProgramDMA marks a run that ended with a queue its program rang
// halted on an error: its engines are done, but a transfer it started
// failed, and its outputs are not read.
var ErrProgramDMA = errors.New("a DMA queue the program rang halted on an error")

// TileError is the failure to write input Index (or, with Output, to read
// output Index) of an ExecRequest.
type TileError struct {
	Output bool
	Index  int
	Err    error
}

func (e *TileError) Error() string {
	what := "input"
	if e.Output {
		what = "output"
	}
	return fmt.Sprintf("%s %d: %v", what, e.Index, e.Err)
}

// Unwrap returns the access's error.
func (e *TileError) Unwrap() error { return e.Err }

// checkTiles refuses, before anything is written or run, an input or
// output that does not fit the device's SBUF or PSUM (program.CheckTile)
// or an input whose bytes do not split into its partitions: an output's
// buffer, Count × Bytes, is allocated only once its tile is known to fit.
func (s *Stack) checkTiles(req ExecRequest) error {
	geo := s.Up.Geometry
	for i, in := range req.Inputs {
		if in.Count <= 0 || len(in.Data) == 0 || len(in.Data)%in.Count != 0 {
			return &TileError{Index: i, Err: fmt.Errorf("program: %d bytes do not split into %d partitions", len(in.Data), in.Count)}
		}
		if err := program.CheckTile(geo, in.PSUM, in.Start, in.Count, in.Offset, uint64(len(in.Data)/in.Count)); err != nil {
			return &TileError{Index: i, Err: err}
		}
	}
	for i, t := range req.Outputs {
		if err := program.CheckTile(geo, t.PSUM, t.Start, t.Count, t.Offset, t.Bytes); err != nil {
			return &TileError{Output: true, Index: i, Err: err}
		}
	}
	return nil
}

// Exec writes the inputs by DMA, runs the program on the NC through a
// runner of the stack (validated, staged by DMA, started over CSR, waited
// for), timed on the device's clock, reads the semaphores and then each
// output, handing it to req.Output. Every input and output tile is checked
// against the device's SBUF and PSUM first: one that does not fit is a
// TileError before anything is written.
func (s *Stack) Exec(req ExecRequest) (ExecResult, error) {
	var res ExecResult
	if err := s.CheckCore(req.NC); err != nil {
		return res, err
	}
	if err := s.checkTiles(req); err != nil {
		return res, err
	}
	r := s.Runner(req.NC)
	r.MaxTimePS, r.MaxHostTime = req.MaxTimePS, req.MaxHostTime
	for i, in := range req.Inputs {
		if err := r.WriteTile(in.PSUM, in.Start, in.Count, in.Offset, in.Data); err != nil {
			return res, &TileError{Index: i, Err: err}
		}
	}
	since, err := s.Clock()
	if err != nil {
		return res, err
	}
	out, started, runErr := r.RunStarted(req.Program)
	took, err := since()
	if err != nil {
		return res, errors.Join(runErr, err)
	}
	res.Ran, res.TimePS, res.Result = started, took, out
	if runErr != nil {
		return res, runErr
	}
	if res.Semaphores, err = r.Semaphores(); err != nil {
		return res, err
	}
	if res.Doorbells, err = s.Doorbells(req.Program); err != nil {
		return res, err
	}
	for i, t := range req.Outputs {
		buf := make([]byte, uint64(t.Count)*t.Bytes)
		if err := r.ReadTile(t.PSUM, t.Start, t.Count, t.Offset, buf); err != nil {
			return res, &TileError{Output: true, Index: i, Err: err}
		}
		if err := req.Output(i, buf); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Doorbells reads, after a run of prog, the status of every DMA queue a
// dma_trigger record of prog rings (its aux the engine, its imm0 the
// queue), each once; a queue halted on an error is an error wrapping
// ErrProgramDMA, with every status read.
func (s *Stack) Doorbells(prog []byte) ([]QueueStatus, error) {
	blocks, err := program.Split(prog)
	if err != nil {
		return nil, err
	}
	var out []QueueStatus
	seen := map[[2]int]bool{}
	program.EachRecord(blocks, func(rec isa.Record) {
		if k := [2]int{int(rec.Aux), int(rec.Imm0)}; rec.Opcode == isa.OpDMATrigger && !seen[k] {
			seen[k] = true
			out = append(out, QueueStatus{Engine: k[0], Queue: k[1]})
		}
	})
	for i := range out {
		if out[i].Status, err = s.DMA.QueueStatus(out[i].Engine, out[i].Queue); err != nil {
			return nil, err
		}
	}
	for _, d := range out {
		if d.Status&udma.StatusHalted != 0 {
			return out, fmt.Errorf("exec: DMA engine %d queue %d, rung by the program's dma_trigger: status %#x (%s): %w",
				d.Engine, d.Queue, d.Status, udma.StatusText(d.Status), ErrProgramDMA)
		}
	}
	return out, nil
}
