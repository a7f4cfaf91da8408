package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/neuronsim/neuronsim/internal/units"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/dve"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/sim"
)

// dmaTargetFlags choose the device the dve, dma and exec commands work on:
// a fresh simulated device of the system flags (the default), or a device
// a `neuronsim serve` exports (--remote), whose host memory and clock the
// remote protocol carries.
type dmaTargetFlags struct {
	sys    *systemFlags
	remote string
	device int
}

func addDMATargetFlags(cmd *cobra.Command) *dmaTargetFlags {
	t := &dmaTargetFlags{sys: addSystemFlags(cmd)}
	cmd.Flags().Lookup("devices").Usage = "number of devices of the system; this command works on a system of one device, so only 1 (default 1)"
	cmd.Flags().StringVar(&t.remote, "remote", "", "use a device that neuronsim serve exports at `ADDR` (unix:PATH or tcp:HOST:PORT) instead of a fresh one")
	cmd.Flags().IntVar(&t.device, "device", 0, "with --remote: the served device's index")
	return t
}

// dmaSystem is one device brought up with its DMA layer and device-memory
// allocator: what the dve, dma and exec commands work on.
type dmaSystem struct {
	sim    *sim.Device // the local simulated device; nil with --remote
	up     *bringup.Device
	dma    *dma.DMA
	mem    *dmem.Allocator
	tables *rtarch.Tables
	close  func()
}

// openDMASystem brings the target up: a fresh simulated device is reset as
// the driver would, a served one is not (other clients may use it).
// timingOnly makes a fresh device move no payload; a served device is as
// its server made it.
func openDMASystem(t *dmaTargetFlags, timingOnly bool) (*dmaSystem, error) {
	sys := &dmaSystem{close: func() {}}
	var dev ndl.Device
	opts := bringup.Options{}
	if t.remote != "" {
		if timingOnly {
			return nil, fmt.Errorf("--timing-only: a served device moves payloads as its server configured it; not with --remote")
		}
		if err := t.sys.notWith("--remote"); err != nil {
			return nil, err
		}
		r, err := openRemoteSystem(t.remote)
		if err != nil {
			return nil, err
		}
		if t.device < 0 || t.device >= len(r.devs) {
			r.close()
			return nil, fmt.Errorf("--device %d: %s exports %s", t.device, t.remote, units.Plural(int64(len(r.devs)), "device", "devices"))
		}
		dev, sys.close, opts.NoReset = r.devs[t.device], r.close, true
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
		dev, sys.sim, opts.Switch = d, d, s.Switch
	}
	err := func() (err error) {
		if sys.up, err = bringup.BringUp(dev, opts); err != nil {
			return err
		}
		if sys.dma, err = dma.New(sys.up); err != nil {
			return err
		}
		sys.mem, err = dmem.New(sys.up.Geometry, dmem.Options{ChannelBytes: sys.up.HBMChannelBytes})
		return err
	}()
	if err != nil {
		sys.close()
		return nil, err
	}
	sys.tables = sys.up.Tables
	return sys, nil
}

// clock reads the device's clock now and returns a function that gives the
// device time passed since: the simulated device's, local or served.
func (s *dmaSystem) clock() (func() (sim.Time, error), error) {
	since, err := ndl.ElapsedPS(s.up.Dev)
	if err != nil {
		return nil, err
	}
	return func() (sim.Time, error) {
		ps, err := since()
		return sim.Time(ps), err
	}, nil
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
	var core int
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
	cmd.Flags().IntVar(&core, "core", 0, "NeuronCore to load")
	cmd.Flags().StringVar(&dir, "tables", "", "directory of opcode.bin, control_fast.bin, [control_slow.bin,] datapath.bin, [param_ram.bin] (default: the built-in tables)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		sys, err := openDMASystem(tf, false)
		if err != nil {
			return err
		}
		defer sys.close()
		g := sys.tables.Generation
		if core < 0 || core >= sys.up.Geometry.NeuronCores {
			return fmt.Errorf("--core %d: the %s has cores 0..%d", core, g, sys.up.Geometry.NeuronCores-1)
		}
		var tables *dve.Tables
		if dir != "" {
			t, err := dve.LoadBins(dir, g)
			if err != nil {
				return err
			}
			tables = &t
		} else {
			t, err := dve.DefaultBins(g)
			if err != nil {
				return err
			}
			tables = &t
		}
		l := dve.NewLoader(sys.dma, sys.mem, sys.tables)
		since, err := sys.clock()
		if err != nil {
			return err
		}
		rep, err := l.Load(core, tables)
		if err != nil {
			return err
		}
		took, err := since()
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "DVE load on %s core %d (%s)\n", g, core, units.Plural(int64(len(rep.Staged)), "buffer", "buffers"))
		fmt.Fprintf(out, "  fingerprint (dve_tbl_hash): %s\n", hex.EncodeToString(rep.State.DVETblHash[:]))
		for _, d := range rep.Staged {
			fmt.Fprintf(out, "  %-13s -> %#014x  (TPB +%#09x)  %6d bytes\n", d.Name, d.Addr, d.Offset, d.Size)
		}
		if rep.State.ControlSlowTable.Empty() {
			fmt.Fprintf(out, "  %-13s    none (control_slow_table empty on %s)\n", dve.TableControlSlow, g)
		}
		fmt.Fprintf(out, "  moved %s in %s on queue %s, %v of device time\n",
			units.Plural(int64(rep.Bytes), "byte", "bytes"), units.Plural(int64(rep.Descriptors), "descriptor pair", "descriptor pairs"), dve.QueueName, took)
		ok, err := verifyDVE(sys.up, core, rep, tables)
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
			return fmt.Errorf("the device does not hold the loaded tables")
		}
		return nil
	}
	return cmd
}

// verifyDVE reads every staged destination back through csr_read.
func verifyDVE(up *bringup.Device, core int, rep dve.Report, t *dve.Tables) (bool, error) {
	tpb := up.VA(up.Geometry.BAR0.TPBWindow(core))
	for _, d := range rep.Staged {
		words := make([]uint32, d.Size/4)
		if err := up.CSR.MemReadBuf(tpb+d.Offset, words); err != nil {
			return false, err
		}
		got := make([]byte, d.Size)
		for i, w := range words {
			binary.LittleEndian.PutUint32(got[4*i:], w)
		}
		if !bytes.Equal(got, t.Get(d.Name)) {
			return false, nil
		}
	}
	return true, nil
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

// bandwidth formats bytes over device time.
func bandwidth(w io.Writer, n uint64, t sim.Time) {
	if t == 0 {
		fmt.Fprintf(w, "n/a")
		return
	}
	fmt.Fprintf(w, "%.2f GB/s", float64(n)/float64(t)*1e3)
}
