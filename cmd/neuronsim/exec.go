package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"

	"github.com/spf13/cobra"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
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
	var tracePath string
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
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		prog, err := readProgram(args[0])
		if err != nil {
			return err
		}
		var ins, outs []tileSpec
		for _, s := range inputs {
			t, err := parseTile(s, false)
			if err != nil {
				return fmt.Errorf("--input %w", err)
			}
			ins = append(ins, t)
		}
		for _, s := range outputs {
			t, err := parseTile(s, true)
			if err != nil {
				return fmt.Errorf("--output %w", err)
			}
			outs = append(outs, t)
		}
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
			sys.sim.SetTrace(rec)
		}
		r := &program.Runner{Dev: sys.up, DMA: sys.dma, Mem: sys.mem, Tables: sys.tables, Validator: rtisa.New(sys.tables), NC: core}
		for _, t := range ins {
			data, err := os.ReadFile(t.file)
			if err != nil {
				return err
			}
			if err := r.WriteTile(t.psum, t.start, t.count, t.offset, data); err != nil {
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
		for _, t := range outs {
			buf := make([]byte, uint64(t.count)*t.bytes)
			if err := r.ReadTile(t.psum, t.start, t.count, t.offset, buf); err != nil {
				return fmt.Errorf("--output %s: %w", t.file, err)
			}
			if err := os.WriteFile(t.file, buf, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(out, "  wrote %d bytes to %s\n", len(buf), t.file)
		}
		if rec != nil {
			f, err := os.Create(tracePath)
			if err != nil {
				return err
			}
			if err := rec.WriteJSON(f); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			kept, _ := rec.Len()
			fmt.Fprintf(out, "  trace: %s to %s\n", units.Plural(int64(kept), "slice", "slices"), tracePath)
		}
		return nil
	}
	return cmd
}
