package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/dve"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/stack"
	"github.com/neuronsim/neuronsim/sim"
)

// dmaTargetFlags choose the device the dve, dma and exec commands work on:
// a fresh simulated device of the system flags (the default), or a device
// a `neuronsim serve` exports (--remote), whose host memory and clock the
// remote protocol carries.
type dmaTargetFlags struct {
	sys    *systemFlags
	remote string
	device *deviceIndex
}

func addDMATargetFlags(cmd *cobra.Command) *dmaTargetFlags {
	t := &dmaTargetFlags{sys: addSystemFlags(cmd), device: newDeviceIndex()}
	cmd.Flags().Lookup("devices").Usage = "number of devices of the system; this command works on a system of one device, so only 1 (default 1)"
	cmd.Flags().StringVar(&t.remote, "remote", "", "use a device that neuronsim serve exports at `ADDR` (unix:PATH or tcp:HOST:PORT) instead of a fresh one")
	cmd.Flags().Var(t.device, "device", "with --remote: the served device's index")
	return t
}

// dmaSystem is one device opened with the runtime's stack (bring-up, its
// DMA layer and device-memory allocator): what the dve, dma and exec
// commands work on.
type dmaSystem struct {
	sim   *sim.Device // the local simulated device; nil with --remote
	st    *stack.Stack
	close func()
	where string // with --remote, " served at ADDR" (errors name the device)
}

// openDMASystem opens the runtime's stack on the target: a fresh simulated
// device is reset as the driver would, a served one is not (other clients
// may use it). timingOnly makes a fresh device move no payload; a served
// device is as its server made it.
func openDMASystem(t *dmaTargetFlags, timingOnly bool) (*dmaSystem, error) {
	sys := &dmaSystem{close: func() {}}
	var dev ndl.Device
	var opts stack.Options
	if t.remote != "" {
		if timingOnly {
			return nil, fmt.Errorf("--timing-only: a served device moves payloads as its server configured it; not with --remote")
		}
		if err := t.sys.notWith("--remote"); err != nil {
			return nil, err
		}
		d, done, err := openServedDevice(t.remote, t.device)
		if err != nil {
			return nil, err
		}
		dev, sys.close, opts.BringUp.NoReset = d, done, true
		sys.where = " served at " + t.remote
	} else {
		if t.sys.cmd.Flags().Changed("device") {
			return nil, fmt.Errorf("--device picks a served device; it needs --remote")
		}
		s, err := t.sys.spec()
		if err != nil {
			return nil, err
		}
		if s.Devices != 1 {
			return nil, fmt.Errorf("--devices %d: this command works on one device", s.Devices)
		}
		d, err := sim.NewDevice(sim.DeviceConfig{Generation: s.Gen, Revision: s.Revision, TimingOnly: timingOnly})
		if err != nil {
			return nil, err
		}
		dev, sys.sim, opts.BringUp.Switch = d, d, s.Switch
	}
	st, err := stack.Open(dev, opts)
	if err != nil {
		sys.close()
		return nil, err
	}
	sys.st = st
	return sys, nil
}

// core returns --core checked against the NeuronCores of the device opened
// (a served device's generation is known only now).
func (s *dmaSystem) core(c *coreIndex) (int, error) {
	return c.index(s.st.Up.Geometry, s.where)
}

// checkCore checks --core, before anything is built, against the NeuronCores
// of the generation the system flags choose; a served device's is checked
// once it is open (dmaSystem.core).
func (t *dmaTargetFlags) checkCore(c *coreIndex) error {
	if t.remote != "" {
		return nil
	}
	s, err := t.sys.spec()
	if err != nil {
		return err
	}
	_, err = c.index(hwarch.MustGeometry(s.Gen), "")
	return err
}

func newDVECommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dve load|defaults",
		Short: "Run the DVE dynamic-config table loader (seed 001 §4) on a simulated device",
	}
	cmd.AddCommand(newDVELoadCommand(), newDVEDefaultsCommand())
	return cmd
}

func newDVELoadCommand() *cobra.Command {
	core := newCoreIndex()
	var dir string
	cmd := &cobra.Command{
		Use:   "load [--arch A] [--core N] [--tables DIR]",
		Short: "Load DVE tables on a core through the runtime, then read the device back",
		Long: "load brings a simulated device up, runs dve_dynamic_config_init on one core — the tables\n" +
			"staged in HBM, one qDveTbl vring to their destinations closed by an event-accel\n" +
			"descriptor — and prints the fingerprint, every destination, the bytes moved and the\n" +
			"device time it took; then it reads the destinations back through csr_read and says\n" +
			"whether they match. A second identical load is shown to be a cache hit.",
		Example: "  neuronsim dve load --arch cayman --core 3\n" +
			"  neuronsim dve defaults /tmp/dve && neuronsim dve load --arch cayman --tables /tmp/dve",
		Args: cobra.NoArgs,
	}
	tf := addDMATargetFlags(cmd)
	cmd.Flags().Var(core, "core", "NeuronCore to load")
	cmd.Flags().StringVar(&dir, "tables", "", "directory of opcode.bin, control_fast.bin, [control_slow.bin,] datapath.bin, [param_ram.bin] (default: the built-in tables)")
	refuseEmptyFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := tf.checkCore(core); err != nil {
			return err
		}
		sys, err := openDMASystem(tf, false)
		if err != nil {
			return err
		}
		defer sys.close()
		nc, err := sys.core(core)
		if err != nil {
			return err
		}
		return dveLoad(cmd.OutOrStdout(), sys.st, nc, dir)
	}
	return cmd
}

// dveLoad is dve load on an open stack: the tables of dir (or the
// built-in ones) loaded on core, read back, and loaded a second time.
func dveLoad(out io.Writer, st *stack.Stack, core int, dir string) error {
	g := st.Tables().Generation
	var t dve.Tables
	var err error
	if dir != "" {
		t, err = dve.LoadBins(dir, g)
	} else {
		t, err = dve.DefaultBins(g)
	}
	if err != nil {
		return err
	}
	tables := &t
	l := st.DVELoader()
	load, err := st.LoadDVE(l, core, tables)
	if err != nil {
		return err
	}
	rep := load.Report
	fmt.Fprintf(out, "DVE load on %s core %d (%s)\n", g, core, units.Plural(int64(len(rep.Staged)), "buffer", "buffers"))
	fmt.Fprintf(out, "  fingerprint (dve_tbl_hash): %s\n", hex.EncodeToString(rep.State.DVETblHash[:]))
	for _, d := range rep.Staged {
		fmt.Fprintf(out, "  %-13s -> %#014x  (TPB +%#09x)  %6d bytes\n", d.Name, d.Addr, d.Offset, d.Size)
	}
	if rep.State.ControlSlowTable.Empty() {
		fmt.Fprintf(out, "  %-13s    none (control_slow_table empty on %s)\n", dve.TableControlSlow, g)
	}
	fmt.Fprintf(out, "  moved %s of tables (and the %d-byte event-accel word) in %s on queue %s\n",
		units.Plural(int64(rep.TableBytes), "byte", "bytes"), rep.Bytes-rep.TableBytes,
		units.Plural(int64(rep.Descriptors), "descriptor pair", "descriptor pairs"), dve.QueueName)
	printDVETime(out, load)
	ok, err := st.VerifyDVE(core, rep, tables)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  read back through csr_read: %s\n", map[bool]string{true: "match", false: "MISMATCH"}[ok])
	again, err := l.Load(core, tables)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  second load: cache hit %v, %d bytes moved\n", again.CacheHit, again.Bytes)
	if !ok {
		return stack.ErrDVEMismatch
	}
	return nil
}

// printDVETime prints a load's device time and its parts, one a line: the
// staging of the tables through BAR4, the start of the queue, and the wait
// for the completion semaphore (the DMA itself, to within the polling
// interval); what the three leave of the whole (the fingerprint, the
// frees: nothing on a simulated device) is printed only when there is some.
func printDVETime(out io.Writer, load stack.DVELoad) {
	rep := load.Report
	fmt.Fprintf(out, "  %v of device time, in parts:\n", sim.Time(load.TimePS))
	poll := sim.Time(uint64(dma.PollInterval.Nanoseconds()) * 1000)
	for _, p := range []struct {
		ps   uint64
		what string
	}{
		{rep.StagePS, "staging the tables in HBM through BAR4 (dmem_buf_copyin)"},
		{rep.StartPS, "starting the queue (descriptors and doorbell over MMIO)"},
		{rep.WaitPS, fmt.Sprintf("DMA until the completion semaphore's increment is read (polled every %v)", poll)},
	} {
		fmt.Fprintf(out, "    %-9v %s\n", sim.Time(p.ps), p.what)
	}
	if parts := rep.StagePS + rep.StartPS + rep.WaitPS; load.TimePS > parts {
		fmt.Fprintf(out, "    %-9v other (fingerprint, frees)\n", sim.Time(load.TimePS-parts))
	}
}

func newDVEDefaultsCommand() *cobra.Command {
	gen := defaultArch
	cmd := &cobra.Command{
		Use:     "defaults DIR [--arch A]",
		Short:   "Write the built-in DVE tables of a generation as .bin files (get_dve_default_bins)",
		Example: "  neuronsim dve defaults /tmp/dve --arch sunda",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := dve.DefaultBins(gen)
			if err != nil {
				return err
			}
			if err := dve.WriteBins(args[0], t); err != nil {
				return err
			}
			fp := dve.Fingerprint(gen, t)
			fmt.Fprintf(cmd.OutOrStdout(), "wrote the %s default DVE tables to %s (fingerprint %s)\n", gen, args[0], hex.EncodeToString(fp[:]))
			return nil
		},
	}
	cmd.Flags().Var(&gen, "arch", "generation: sunda|cayman|mariana, v2|v3|v4, trn1|inf2|trn2|trn3 or 2|3|4")
	return cmd
}

// rateDigits is the most significant digits a bandwidth is printed with:
// the model's own rates (dma.Timing: 17, 23, 33 GB/s; 820 GiB/s) are given
// to two or three, so a figure derived from them has no more.
const rateDigits = 3

// bandwidth writes n bytes over t of device time as GB/s (1e9 B/s), to the
// significant digits t justifies when it is known to within res
// (justifiedDigits).
func bandwidth(w io.Writer, n uint64, t, res sim.Time) {
	if t == 0 {
		fmt.Fprintf(w, "n/a")
		return
	}
	v := float64(n) / float64(t) * 1e3
	fmt.Fprintf(w, "%s GB/s", sigDigits(v, justifiedDigits(v, t, res)))
}

// justifiedDigits is how many significant digits a rate v over a time t
// measured to within res is printed with: the fewest, at least 1, whose
// rounding — half a unit in the last digit — is no more than the rate's
// uncertainty v·res/t, and at most rateDigits (a res of 0, an exact time,
// takes rateDigits). So a rate gets no digit the time does not justify,
// and none is dropped that the time does: 14.9 GB/s known to ±1.7 prints
// "15", where counting the digits of t/res (one, for 8.8 µs known to 1 µs)
// printed "10", a third off.
func justifiedDigits(v float64, t, res sim.Time) int {
	if res == 0 || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return rateDigits
	}
	u := v * float64(res) / float64(t)
	e := math.Floor(math.Log10(v))
	for d := 1; d < rateDigits; d++ {
		if 0.5*math.Pow(10, e-float64(d-1)) <= u {
			return d
		}
	}
	return rateDigits
}

// sigDigits formats v (> 0) rounded to digits significant digits, in plain
// decimal notation: 32.12 to 3 is "32.1", 20.52 to 2 is "21", 1234 to 3 is
// "1230", 0.803 to 1 is "0.8".
func sigDigits(v float64, digits int) string {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'e', digits-1, 64), 64) // rounded once
	exp := int(math.Floor(math.Log10(r)))
	if dec := digits - 1 - exp; dec > 0 {
		return strconv.FormatFloat(r, 'f', dec, 64)
	}
	return strconv.FormatFloat(r, 'f', 0, 64)
}
