package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/units"
	rtisa "github.com/neuronsim/neuronsim/runtime/isa"
	"github.com/neuronsim/neuronsim/runtime/program"
	"github.com/neuronsim/neuronsim/sim/trace"
)

// tileSpec is an --input/--output location: SPACE[START:COUNT,OFFSET] with,
// for outputs, :BYTES per partition.
type tileSpec struct {
	psum          bool
	start, count  int
	offset, bytes uint64
	file          string
}

var tileRE = regexp.MustCompile(`^(sbuf|psum)\[(\d+):(\d+),((?:0x)?[0-9a-fA-F]+)\](?::([^=]*))?=(.+)$`)

func parseTile(s string, output bool) (tileSpec, error) {
	m := tileRE.FindStringSubmatch(s)
	if m == nil {
		return tileSpec{}, fmt.Errorf("%q: want SPACE[START:COUNT,OFFSET]%s=FILE, e.g. sbuf[0:128,0x100]%s=x.bin",
			s, map[bool]string{true: ":BYTES"}[output], map[bool]string{true: ":2048"}[output])
	}
	t := tileSpec{psum: m[1] == "psum", file: m[6]}
	var err error
	if t.start, err = strconv.Atoi(m[2]); err != nil || t.start > 127 {
		return t, fmt.Errorf("%q: start partition %s out of 0..127", s, m[2])
	}
	if t.count, err = strconv.Atoi(m[3]); err != nil || t.count < 1 || t.start+t.count > 128 {
		return t, fmt.Errorf("%q: %s partitions from %d pass partition 127", s, m[3], t.start)
	}
	if t.offset, err = strconv.ParseUint(m[4], 0, 32); err != nil {
		return t, fmt.Errorf("%q: offset %s", s, m[4])
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
		t.bytes = uint64(n)
	}
	return t, nil
}

func newExecCommand() *cobra.Command {
	var core int
	var inputs, outputs []string
	var tracePath, traceMax string
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
	tf := addDMATargetFlags(cmd)
	cmd.Flags().IntVar(&core, "core", 0, "NeuronCore to run on")
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "SPACE[START:COUNT,OFFSET]=FILE written before the run (repeatable)")
	cmd.Flags().StringArrayVar(&outputs, "output", nil, "SPACE[START:COUNT,OFFSET]:BYTES=FILE read after the run (repeatable)")
	cmd.Flags().StringVar(&tracePath, "trace", "", "write a Chrome/Perfetto trace-event JSON file")
	cmd.Flags().StringVar(&traceMax, "trace-max", "64M", "largest --trace file: recording stops there, with a note in the trace's metadata")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		prog, err := readProgram(args[0])
		if err != nil {
			return err
		}
		// Everything that can be checked is checked before the device is
		// brought up: the tiles, the input files, the output paths.
		var ins, outs []tileSpec
		var inData [][]byte
		for _, s := range inputs {
			t, err := parseTile(s, false)
			if err != nil {
				return fmt.Errorf("--input %w", err)
			}
			data, err := os.ReadFile(t.file)
			if err != nil {
				return fmt.Errorf("--input %s: %w", s, err)
			}
			if len(data) == 0 || len(data)%t.count != 0 {
				return fmt.Errorf("--input %s: %d bytes do not split into %d partitions", s, len(data), t.count)
			}
			t.bytes = uint64(len(data) / t.count)
			ins = append(ins, t)
			inData = append(inData, data)
		}
		paths := [][2]string{{"--trace", tracePath}}
		for _, s := range outputs {
			t, err := parseTile(s, true)
			if err != nil {
				return fmt.Errorf("--output %w", err)
			}
			outs = append(outs, t)
			paths = append(paths, [2]string{"--output " + s, t.file})
		}
		if err := checkOutputPaths(paths...); err != nil {
			return err
		}
		traceBytes, err := units.ParseBytesIn("--trace-max", traceMax, 1024, math.MaxInt64)
		if err != nil {
			return err
		}
		if tf.remote == "" {
			spec, err := tf.sys.spec()
			if err != nil {
				return err
			}
			geo := hwarch.MustGeometry(spec.Gen)
			for _, group := range []struct {
				flag  string
				tiles []tileSpec
				specs []string
			}{{"--input", ins, inputs}, {"--output", outs, outputs}} {
				for i, t := range group.tiles {
					if err := program.CheckTile(geo, t.psum, t.start, t.count, t.offset, t.bytes); err != nil {
						return fmt.Errorf("%s %s: %w", group.flag, group.specs[i], err)
					}
				}
			}
		}
		defer removeOutputsOnSignal(cmd.ErrOrStderr())()
		sys, err := openDMASystem(tf, false)
		if err != nil {
			return err
		}
		defer sys.close()
		if core < 0 || core >= sys.up.Geometry.NeuronCores {
			return fmt.Errorf("--core %d: the %s has cores 0..%d", core, sys.tables.Generation, sys.up.Geometry.NeuronCores-1)
		}
		var rec *trace.Recorder
		if tracePath != "" {
			if sys.sim == nil {
				return fmt.Errorf("--trace records the engines of a local simulated device; not with --remote")
			}
			rec = trace.New(0)
			rec.SetMaxBytes(uint64(traceBytes))
			sys.sim.SetTrace(rec)
		}
		r := &program.Runner{Dev: sys.up, DMA: sys.dma, Mem: sys.mem, Tables: sys.tables, Validator: rtisa.New(sys.tables), NC: core}
		for i, t := range ins {
			if err := r.WriteTile(t.psum, t.start, t.count, t.offset, inData[i]); err != nil {
				return fmt.Errorf("--input %s: %w", t.file, err)
			}
		}
		since, err := sys.clock()
		if err != nil {
			return err
		}
		res, runErr := r.Run(prog)
		took, err := since()
		if err != nil {
			return errors.Join(runErr, err)
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "%s core %d: %v of device time\n", sys.tables.Generation, core, took)
		for _, e := range res.Engines {
			state := "done"
			if e.Status&hwisa.StatusError != 0 {
				state = fmt.Sprintf("ERROR %d at record offset %d", e.Error, e.FaultOffset)
			}
			fmt.Fprintf(out, "  %-4s %-13s %4d retired, busy %v, %s\n", e.Engine, units.Plural(int64(e.Records), "record", "records")+",", e.Retired, e.Busy, state)
		}
		if runErr != nil {
			return runErr
		}
		sems, err := r.Semaphores()
		if err != nil {
			return err
		}
		for i, v := range sems {
			if v != 0 {
				fmt.Fprintf(out, "  semaphore %d = %d\n", i, v)
			}
		}
		// The outputs are written under temporary names and take their
		// own only when every one is complete.
		var files []*output.File
		defer func() {
			for _, f := range files {
				f.Abort()
			}
		}()
		for _, t := range outs {
			buf := make([]byte, uint64(t.count)*t.bytes)
			if err := r.ReadTile(t.psum, t.start, t.count, t.offset, buf); err != nil {
				return fmt.Errorf("--output %s: %w", t.file, err)
			}
			f, err := output.Create(t.file)
			if err != nil {
				return fmt.Errorf("--output: %w", err)
			}
			files = append(files, f)
			if _, err := f.Write(buf); err != nil {
				return fmt.Errorf("--output: %w", err)
			}
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
			fmt.Fprintf(out, "  wrote %d bytes to %s\n", uint64(t.count)*t.bytes, t.file)
		}
		if rec != nil {
			kept, dropped := rec.Len()
			fmt.Fprintf(out, "  trace: %s to %s\n", units.Plural(int64(kept), "slice", "slices"), tracePath)
			if rec.Full() {
				fmt.Fprintf(out, "  trace: stopped at --trace-max (%s); %s not recorded\n", memlimit.Human(rec.MaxBytes()), units.Plural(int64(dropped), "slice", "slices"))
			}
		}
		return nil
	}
	return cmd
}
