package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/internal/inputfile"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/program"
	"github.com/neuronsim/neuronsim/runtime/stack"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/tpb"
	"github.com/neuronsim/neuronsim/sim/trace"
)

// tileSpec is an --input/--output location: SPACE[START:COUNT,OFFSET] with,
// for outputs, :BYTES per partition; for inputs, the file's bytes.
type tileSpec struct {
	stack.Tile
	file string
	data []byte // an input's file
}

var tileRE = regexp.MustCompile(`^((?i:sbuf|psum))\[(\d+):(\d+),((?:0x)?[0-9a-fA-F]+)\](?::([^=]*))?=(.+)$`)

func parseTile(s string, output bool) (tileSpec, error) {
	m := tileRE.FindStringSubmatch(s)
	if m == nil {
		return tileSpec{}, fmt.Errorf("%q: want SPACE[START:COUNT,OFFSET]%s=FILE, e.g. sbuf[0:128,0x100]%s=x.bin",
			s, map[bool]string{true: ":BYTES"}[output], map[bool]string{true: ":2048"}[output])
	}
	t := tileSpec{Tile: stack.Tile{PSUM: units.Word(m[1]) == "psum"}, file: m[6]}
	// START and COUNT are each bounded by the partitions of the largest
	// core before they are added: START+COUNT cannot overflow.
	parts := maxOfGenerations(func(g *hwarch.Geometry) int { return g.SBUFPartitions })
	start, err := units.ParseInt("start partition", m[2], 0, parts-1)
	if err != nil {
		return t, fmt.Errorf("%q: %w", s, err)
	}
	count, err := units.ParseInt("partition count", m[3], 1, parts)
	if err != nil {
		return t, fmt.Errorf("%q: %w", s, err)
	}
	if start+count > parts {
		return t, fmt.Errorf("%q: %d partitions from %d pass partition %d", s, count, start, parts-1)
	}
	t.Start, t.Count = int(start), int(count)
	if t.Offset, err = units.ParseUint("offset", m[4], math.MaxUint32); err != nil {
		return t, fmt.Errorf("%q: %w", s, err)
	}
	if !output && m[5] != "" {
		return t, fmt.Errorf("%q: an input takes no :BYTES (it writes the whole file)", s)
	}
	if output {
		if m[5] == "" {
			return t, fmt.Errorf("%q: an output needs :BYTES per partition", s)
		}
		// BYTES is a size, in the grammar of every size (units.ParseBytes).
		n, err := units.ParseBytesIn("bytes per partition", m[5], 4, math.MaxUint32)
		if err != nil {
			return t, fmt.Errorf("%q: %w", s, err)
		}
		if n%4 != 0 {
			return t, fmt.Errorf("%q: bytes per partition %s: not a multiple of 4", s, m[5])
		}
		t.Bytes = uint64(n)
	}
	return t, nil
}

// execFlags are exec's flags.
type execFlags struct {
	tf                  *dmaTargetFlags
	core                *coreIndex
	inputs, outputs     []string
	tracePath, traceMax string
	maxTime             time.Duration
	maxHostTime         time.Duration
}

func newExecCommand() *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "exec PROG [--arch A] [--core N] [--input SPEC=FILE] [--output SPEC=FILE] [--trace FILE]",
		Short: "Run a program on one core of a simulated device, through the runtime",
		Long: "exec brings a simulated device up, writes the inputs into SBUF/PSUM by DMA, validates the\n" +
			"program (a .s file is assembled first) with the runtime's validators, stages each engine's\n" +
			"block by DMA, starts the engines over CSR and waits for them. It prints per-engine records,\n" +
			"busy time and status, the device time and the non-zero semaphores, then reads the outputs.\n" +
			"SPEC is SPACE[START:COUNT,OFFSET] (SPACE sbuf or psum); outputs add :BYTES per partition,\n" +
			"a size (2048, 2K: K, M, G, T are powers of 1024).",
		Example: "  neuronsim exec matmul.s --arch cayman --input sbuf[0:128,0]=w.bin --input sbuf[0:128,0x100]=x.bin \\\n" +
			"      --output sbuf[0:128,0x900]:2048=y.bin --trace trace.json",
		Args: cobra.ExactArgs(1),
	}
	f.tf = addDMATargetFlags(cmd)
	f.core = newCoreIndex()
	cmd.Flags().Var(f.core, "core", "NeuronCore to run on")
	cmd.Flags().StringArrayVar(&f.inputs, "input", nil, "SPACE[START:COUNT,OFFSET]=FILE written before the run (repeatable)")
	cmd.Flags().StringArrayVar(&f.outputs, "output", nil, "SPACE[START:COUNT,OFFSET]:BYTES=FILE read after the run (repeatable)")
	cmd.Flags().StringVar(&f.tracePath, "trace", "", "write a Chrome/Perfetto trace-event JSON file")
	cmd.Flags().StringVar(&f.traceMax, "trace-max", "64M", "largest --trace file: recording stops there, with a note in the trace's metadata")
	durationVar(cmd.Flags(), &f.maxTime, "max-time", 10*time.Second, "most device time the program may take: a run past it is stopped, a program that must take longer is refused before it starts")
	durationVar(cmd.Flags(), &f.maxHostTime, "max-host-time", 10*time.Minute, "most host time the run may take (heavy records take far more host time than device time): a run past it is stopped")
	refuseEmptyFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("trace-max") && f.tracePath == "" {
			return fmt.Errorf("--trace-max: it bounds the --trace file; give --trace too")
		}
		prog, err := readProgram(args[0])
		if err != nil {
			return err
		}
		if err := checkEnds(args[0], prog); err != nil {
			return err
		}
		ins, outs, traceBytes, err := f.check(args[0])
		if err != nil {
			return err
		}
		if err := f.tf.checkCore(f.core); err != nil {
			return err
		}
		maxPS, err := units.DurationToPS("--max-time", f.maxTime)
		if err == nil && maxPS == 0 {
			err = fmt.Errorf("--max-time %v: must be more than 0", f.maxTime)
		}
		if err != nil {
			return err
		}
		if f.maxHostTime <= 0 {
			return fmt.Errorf("--max-host-time %v: must be more than 0", f.maxHostTime)
		}
		defer removeOutputsOnSignal(cmd.ErrOrStderr())()
		sys, err := openDMASystem(f.tf, false)
		if err != nil {
			return err
		}
		defer sys.close()
		nc, err := sys.core(f.core)
		if err != nil {
			return err
		}
		if err := checkMinTime(args[0], prog, sys.st.Tables().Generation, nc, maxPS); err != nil {
			return err
		}
		var rec *trace.Recorder
		if f.tracePath != "" {
			if sys.sim == nil {
				return fmt.Errorf("--trace records the engines of a local simulated device; not with --remote")
			}
			rec = trace.New(0)
			rec.SetMaxBytes(traceBytes)
			sys.sim.SetTrace(rec)
		}
		req := stack.ExecRequest{NC: nc, Program: prog, MaxTimePS: maxPS, MaxHostTime: f.maxHostTime, Inputs: make([]stack.Input, len(ins)), Outputs: make([]stack.Tile, len(outs))}
		for i, t := range ins {
			req.Inputs[i] = stack.Input{Tile: t.Tile, Data: t.data}
		}
		for i, t := range outs {
			req.Outputs[i] = t.Tile
		}
		return execRun(cmd.OutOrStdout(), sys.st, req, ins, outs, rec, f.tracePath)
	}
	return cmd
}

// checkMinTime refuses, before it starts, a program on core nc of a gen
// device that must take more than maxPS of device time (tpb.MinProgramPS, a
// lower bound from its records' costs): it could only be stopped at the
// limit, after as many status polls as the limit has microseconds.
func checkMinTime(path string, prog []byte, gen hwarch.Generation, nc int, maxPS uint64) error {
	least, err := tpb.MinProgramPS(gen, nc, prog)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if least > maxPS {
		return fmt.Errorf("%s: the program takes at least %v of device time on %s (its records' costs), more than --max-time %v: it cannot finish; not run",
			path, sim.Time(least), gen, sim.Time(maxPS))
	}
	return nil
}

// check checks everything that can be checked before the device is brought
// up: the tiles (against the generation's SBUF and PSUM for a fresh
// device), the input files, the output paths and --trace-max.
func (f *execFlags) check(progPath string) (ins, outs []tileSpec, traceBytes uint64, err error) {
	read := [][2]string{{"the program", progPath}}
	for _, s := range f.inputs {
		t, err := parseTile(s, false)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("--input %w", err)
		}
		// At most the tile's partitions of the largest SBUF partition.
		limit := int64(t.Count) * maxOfGenerations(func(g *hwarch.Geometry) int { return int(g.SBUFPartitionSize) })
		if t.data, err = inputfile.Read(t.file, limit, fmt.Sprintf("a tile of %s holds at most that", units.Plural(int64(t.Count), "partition", "partitions"))); err != nil {
			return nil, nil, 0, fmt.Errorf("--input %s: %w", s, err)
		}
		read = append(read, [2]string{"--input " + s, t.file})
		if len(t.data) == 0 || len(t.data)%t.Count != 0 {
			return nil, nil, 0, fmt.Errorf("--input %s: %d bytes do not split into %d partitions", s, len(t.data), t.Count)
		}
		t.Bytes = uint64(len(t.data) / t.Count)
		for i, u := range ins {
			if err := tilesOverlap(t.Tile, u.Tile); err != nil {
				return nil, nil, 0, fmt.Errorf("--input %s: overlaps --input %s: %w", s, f.inputs[i], err)
			}
		}
		ins = append(ins, t)
	}
	paths := [][2]string{{"--trace", f.tracePath}}
	for _, s := range f.outputs {
		t, err := parseTile(s, true)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("--output %w", err)
		}
		outs = append(outs, t)
		paths = append(paths, [2]string{"--output " + s, t.file})
	}
	if err := checkOutputPaths(paths...); err != nil {
		return nil, nil, 0, err
	}
	for _, p := range paths {
		if err := checkNotInputs(p, read...); err != nil {
			return nil, nil, 0, err
		}
	}
	n, err := units.ParseBytesIn("--trace-max", f.traceMax, 1024, math.MaxInt64)
	if err != nil {
		return nil, nil, 0, err
	}
	if f.tf.remote == "" {
		spec, err := f.tf.sys.spec()
		if err != nil {
			return nil, nil, 0, err
		}
		geo := hwarch.MustGeometry(spec.Gen)
		for _, group := range []struct {
			flag  string
			tiles []tileSpec
			specs []string
		}{{"--input", ins, f.inputs}, {"--output", outs, f.outputs}} {
			for i, t := range group.tiles {
				if err := program.CheckTile(geo, t.PSUM, t.Start, t.Count, t.Offset, t.Bytes); err != nil {
					return nil, nil, 0, fmt.Errorf("%s %s: %w", group.flag, group.specs[i], err)
				}
			}
		}
	}
	return ins, outs, uint64(n), nil
}

// tilesOverlap says where tiles a and b share bytes — a partition both
// hold, of one space, and a byte range both take in it — or nil when they
// share none. Inputs are written one after another, so a later one would
// overwrite what an earlier one wrote there.
func tilesOverlap(a, b stack.Tile) error {
	p0, p1 := max(a.Start, b.Start), min(a.Start+a.Count, b.Start+b.Count)
	o0, o1 := max(a.Offset, b.Offset), min(a.Offset+a.Bytes, b.Offset+b.Bytes)
	if a.PSUM != b.PSUM || p0 >= p1 || o0 >= o1 {
		return nil
	}
	space := "SBUF"
	if a.PSUM {
		space = "PSUM"
	}
	return fmt.Errorf("%s partitions %d..%d, bytes [%#x, %#x) of each: give tiles that do not share a byte", space, p0, p1-1, o0, o1)
}

// execRun runs req on an open stack, prints what the engines did, and
// writes the outputs and the trace (rec, when not nil) under temporary
// names that take their own only when every one is complete.
func execRun(out io.Writer, st *stack.Stack, req stack.ExecRequest, ins, outs []tileSpec, rec *trace.Recorder, tracePath string) error {
	var files []*output.File
	defer func() {
		for _, f := range files {
			f.Abort()
		}
	}()
	req.Output = func(i int, data []byte) error {
		f, err := output.Create(outs[i].file)
		if err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		files = append(files, f)
		if _, err := f.Write(data); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		return nil
	}
	res, err := st.Exec(req)
	if res.Ran {
		printExec(out, st.Tables().Generation, req.NC, res)
	}
	var te *stack.TileError
	if errors.As(err, &te) {
		if te.Output {
			return fmt.Errorf("--output %s: %w", outs[te.Index].file, te.Err)
		}
		return fmt.Errorf("--input %s: %w", ins[te.Index].file, te.Err)
	}
	if err != nil {
		return err
	}
	if rec != nil {
		f, err := output.Create(tracePath)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		files = append(files, f)
		if err := rec.WriteJSON(f); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
	}
	for _, f := range files {
		if err := f.Commit(); err != nil {
			return err
		}
	}
	for _, t := range outs {
		fmt.Fprintf(out, "  wrote %d bytes to %s\n", uint64(t.Count)*t.Bytes, t.file)
	}
	if rec != nil {
		kept, dropped := rec.Len()
		fmt.Fprintf(out, "  trace: %s to %s\n", units.Plural(int64(kept), "slice", "slices"), tracePath)
		if rec.Full() {
			fmt.Fprintf(out, "  trace: stopped at --trace-max (%s); %s not recorded\n", units.FormatBytes(int64(rec.MaxBytes())), units.Plural(int64(dropped), "slice", "slices"))
		} else if dropped > 0 {
			fmt.Fprintf(out, "  trace: stopped (%s); %s not recorded\n", rec.Stopped(), units.Plural(int64(dropped), "slice", "slices"))
		}
	}
	return nil
}

// printExec prints a run: the device time, each engine's records and state
// and, after a run without error, the non-zero semaphores.
// engineState words an engine's status register for exec's table: "done"
// only when its done bit is set; an engine the run left unfinished (the
// program timed out) shows NOT DONE and the bits it holds — running,
// stalled, waiting — or idle when none.
func engineState(status uint32) string {
	if status&hwisa.StatusDone != 0 {
		return "done"
	}
	var bits []string
	for _, b := range []struct {
		bit  uint32
		name string
	}{{hwisa.StatusRunning, "running"}, {hwisa.StatusStalled, "stalled"}, {hwisa.StatusWaiting, "waiting"}} {
		if status&b.bit != 0 {
			bits = append(bits, b.name)
		}
	}
	if len(bits) == 0 {
		bits = []string{"idle"}
	}
	return "NOT DONE (" + strings.Join(bits, ", ") + ")"
}

// printExec prints a run's report: the device time of the run (from the
// program's staging to its unloading, the inputs' writes before it and the
// outputs' reads after it not counted), each engine's records, busy time
// and state, the non-zero semaphores, and the status of every DMA queue
// the program's dma_trigger records rang.
func printExec(out io.Writer, g hwarch.Generation, core int, res stack.ExecResult) {
	fmt.Fprintf(out, "%s core %d: %v of device time to stage the program by DMA, clear the semaphores and events it uses, start its engines over CSR, poll them every %v until they end and unload it (inputs and outputs not counted)\n",
		g, core, sim.Time(res.TimePS), sim.Time(program.DefaultPollInterval.Nanoseconds())*sim.Nanosecond)
	for _, e := range res.Result.Engines {
		state := engineState(e.Status)
		if e.Status&hwisa.StatusError != 0 {
			state = fmt.Sprintf("ERROR %d (%s) at record offset %d", e.Error, hwisa.ErrorText(e.Error), e.FaultOffset)
		}
		fmt.Fprintf(out, "  %-4s %-13s %4d retired, busy %v, %s\n", e.Engine, units.Plural(int64(e.Records), "record", "records")+",", e.Retired, e.Busy, state)
	}
	for i, v := range res.Semaphores {
		if v != 0 {
			fmt.Fprintf(out, "  semaphore %d = %d\n", i, v)
		}
	}
	for _, d := range res.Doorbells {
		state := "idle"
		switch {
		case d.Status&udma.StatusHalted != 0:
			state = "HALTED: " + udma.StatusText(d.Status)
		case d.Status&udma.StatusBusy != 0:
			state = "busy (descriptors not yet done)"
		}
		fmt.Fprintf(out, "  dma engine %d queue %d (rung by dma_trigger): status %#x, %s\n", d.Engine, d.Queue, d.Status, state)
	}
}
