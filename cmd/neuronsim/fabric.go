package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/calibrate"
	"github.com/neuronsim/neuronsim/internal/cluster"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/fabric"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

func newFabricCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fabric",
		Short: "Multi-device systems: collective sweeps over the simulated fabric, and its topology",
	}
	cmd.AddCommand(newFabricSweepCommand(), newFabricTopoCommand(), newFabricCalibrateCommand())
	return cmd
}

// fabricFlags are the system and fabric flags of the fabric commands.
type fabricFlags struct {
	gen      hwarch.Generation
	family   hwarch.SwitchFamily
	devices  string
	kind     fabric.Kind
	model    fabric.Model
	whatIf   bool
	linkLat  float64 // ns; <0: default
	linkBW   float64 // GB/s; <=0: default
	endpoint float64 // ns; <0: default
	swLat    float64 // ns; <0: default
	chunkB   int
	server   int
	cmd      *cobra.Command
}

func addFabricFlags(cmd *cobra.Command) *fabricFlags {
	f := &fabricFlags{gen: defaultArch, devices: "", linkLat: -1, endpoint: -1, swLat: -1, cmd: cmd}
	fl := cmd.Flags()
	fl.Var(&f.gen, "arch", "generation: sunda|cayman|mariana, v2|v3|v4, trn1|inf2|trn2|trn3 or 2|3|4")
	fl.Var(&f.family, "switch", "NeuronSwitch family: v1|none (default v1 for mariana, none otherwise)")
	fl.StringVar(&f.devices, "devices", "", "device count, or a list to sweep (2,4,8,16,32); default get_max_devs")
	fl.Var(&f.kind, "topology", "auto|torus2d|ultraserver|ring|chain|switch|fully-connected|star (auto: what a real system of that shape has)")
	fl.Var(&f.model, "model", "network model: aware (contention-aware, store-and-forward) or free (contention-free, cut-through)")
	fl.BoolVar(&f.whatIf, "what-if", false, "allow device counts beyond get_max_devs (up to 64, the driver's MAX_NEURON_DEVICE_COUNT)")
	fl.Float64Var(&f.linkLat, "link-latency", -1, "α: every link's latency in ns (default: the generation's)")
	fl.Float64Var(&f.linkBW, "link-bw", 0, "B: every link's bandwidth in GB/s, 1e9 B/s (default: the generation's)")
	fl.Float64Var(&f.endpoint, "endpoint-delay", -1, "δ: the delay a write takes to land after its last byte, ns")
	fl.Float64Var(&f.swLat, "switch-latency", -1, "a switch's forwarding delay, ns")
	fl.IntVar(&f.chunkB, "chunk-bytes", 0, "store-and-forward chunk of the aware model (default 4096)")
	fl.IntVar(&f.server, "server-size", 0, "Trn3 switch: devices per server, i.e. on one in-server switch (default 16)")
	return f
}

// system resolves the switch family and the device counts.
func (f *fabricFlags) system() (hwarch.SwitchFamily, *rtarch.Tables, []int, error) {
	family := f.family
	if !f.cmd.Flags().Changed("switch") && f.gen == hwarch.Mariana {
		family = hwarch.SwitchV1
	}
	t, err := rtarch.For(f.gen, rtarch.Options{Switch: family})
	if err != nil {
		return 0, nil, nil, fmt.Errorf("--arch: %w", err)
	}
	limit := t.Soc.MaxDevs()
	if f.whatIf {
		limit = hwarch.MaxNeuronDevices
	}
	var counts []int
	if f.devices == "" {
		counts = []int{t.Soc.MaxDevs()}
	}
	for _, s := range strings.Split(f.devices, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, nil, nil, fmt.Errorf("--devices %q: %q is not a device count", f.devices, s)
		}
		if n > limit {
			return 0, nil, nil, fmt.Errorf("--devices %d: a %s system with switch %s holds 1..%d devices (get_max_devs); --what-if allows up to %d",
				n, f.gen, family, t.Soc.MaxDevs(), hwarch.MaxNeuronDevices)
		}
		counts = append(counts, n)
	}
	return family, t, counts, nil
}

// params returns the fabric parameters with the flags' overrides.
func (f *fabricFlags) params(t *rtarch.Tables) fabric.Params {
	p := cluster.DefaultParams(f.gen, t)
	p.Model = f.model
	links := []*fabric.LinkParams{&p.XY, &p.Z, &p.Ring, &p.InServer, &p.InterServer, &p.Link}
	for _, l := range links {
		if f.linkLat >= 0 {
			l.Latency = uint64(f.linkLat * 1000)
		}
		if f.linkBW > 0 {
			l.Bandwidth = uint64(f.linkBW * 1e9)
		}
	}
	if f.endpoint >= 0 {
		p.Endpoint = uint64(f.endpoint * 1000)
	}
	if f.swLat >= 0 {
		p.Switch = uint64(f.swLat * 1000)
	}
	if f.chunkB > 0 {
		p.ChunkBytes = f.chunkB
	}
	if f.server > 0 {
		p.ServerSize = f.server
	}
	return p
}

func newFabricTopoCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topo",
		Short: "Draw a system's topology, as neuron-ls --topology does",
		Example: `  neuronsim fabric topo --arch cayman --devices 16
  neuronsim fabric topo --arch mariana --devices 32`,
		Args: cobra.NoArgs,
	}
	f := addFabricFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		_, t, counts, err := f.system()
		if err != nil {
			return err
		}
		p := f.params(t)
		for i, n := range counts {
			if i > 0 {
				fmt.Fprintln(cmd.OutOrStdout())
			}
			kind := f.kind
			if kind == fabric.KindAuto {
				kind = fabric.AutoKind(f.gen, n)
			}
			if err := p.Validate(kind); err != nil {
				return err
			}
			topo, err := fabric.Build(kind, f.gen, n, p)
			if err != nil {
				return err
			}
			if err := fabric.Draw(cmd.OutOrStdout(), topo); err != nil {
				return err
			}
		}
		return nil
	}
	return cmd
}

// sweepFlags are the nccom-test-like flags of fabric sweep.
type sweepFlags struct {
	op, algo, dtype, mode string
	minB, maxB            string
	factor, step          string
	chunks, groupSize     int
	ranksPerDevice        int
	engines               int
	jsonFile, plotFile    string
	pcapFile              string
	seed                  uint64
}

func newFabricSweepCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run a collective over a range of sizes and print the nccom-test table",
		Long: `sweep builds a simulated system, brings every device up through the runtime,
and runs one collective per size on the devices' DMA engines over the fabric,
timed on the devices' virtual clock. The table is nccom-test's: size(B),
count(elems), type, time:avg(us), algbw(GB/s), busbw(GB/s), algorithm, then
"Avg bus bandwidth". Bandwidths are in GB/s of 1e9 bytes. --devices with a
list sweeps each count; --plot draws busbw against size per count.`,
		Example: `  neuronsim fabric sweep --arch mariana --switch v1 --devices 32 --op all_reduce -b 1K -e 1G -f 2
  neuronsim fabric sweep --arch cayman --devices 16 --op all_gather -b 64K -e 64M -f 4 --algo ring --mode functional
  neuronsim fabric sweep --devices 2,4,8,16,32 --op all_reduce -b 1K -e 256M -f 4 --plot busbw.png`,
		Args: cobra.NoArgs,
	}
	f := addFabricFlags(cmd)
	var s sweepFlags
	fl := cmd.Flags()
	fl.StringVar(&s.op, "op", "all_reduce", "all_reduce|allr, all_gather|allg, reduce_scatter|redsct, alltoall, permute")
	fl.StringVarP(&s.minB, "minbytes", "b", "32M", "smallest size (K, M, G are powers of 1024)")
	fl.StringVarP(&s.maxB, "maxbytes", "e", "32M", "largest size")
	fl.StringVarP(&s.factor, "stepfactor", "f", "", "multiply the size by this each step")
	fl.StringVarP(&s.step, "stepbytes", "i", "", "add this to the size each step (default (max-min)/10)")
	fl.StringVar(&s.algo, "algo", "auto", "auto|ring|mesh|rdh|kangaring|hier")
	fl.StringVarP(&s.dtype, "datatype", "d", "fp32", "fp32, bf16, fp16, int32, uint32, int8, uint8, int16, uint16")
	fl.StringVar(&s.dtype, "dtype", "fp32", "the same as --datatype")
	fl.StringVar(&s.mode, "mode", "timing", "timing (no payloads) or functional (real data, checked against the CPU reference)")
	fl.IntVar(&s.chunks, "chunks", 1, "k: split each collective into k pieces run one after another")
	fl.IntVar(&s.groupSize, "group-size", 0, "ranks per node for --algo hier")
	fl.IntVar(&s.ranksPerDevice, "ranks-per-device", 1, "NeuronCores of each device taking part (rank r is NC r mod k of device r/k)")
	fl.IntVar(&s.engines, "engines", 0, "DMA engines each rank spreads its transfers over (default: the generation's calibrated count)")
	fl.StringVar(&s.jsonFile, "json", "", "write nccom-test's JSON report to this file")
	fl.StringVar(&s.plotFile, "plot", "", "draw busbw against size, one line per device count, to this PNG")
	fl.StringVar(&s.pcapFile, "pcap", "", "write the fabric's packets to this pcap file (contrib/wireshark/neuronsim.lua dissects them)")
	fl.Uint64Var(&s.seed, "seed", 1, "seed of the random inputs (functional mode)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runSweep(cmd, f, &s)
	}
	return cmd
}

// maxFunctionalBytes bounds the device memory a functional sweep touches
// (every rank's input, output and scratch): the payloads are real bytes.
const maxFunctionalBytes = 8 << 30

func runSweep(cmd *cobra.Command, f *fabricFlags, s *sweepFlags) error {
	family, t, counts, err := f.system()
	if err != nil {
		return err
	}
	op, err := enc.ParseOp(s.op)
	if err != nil {
		return fmt.Errorf("--op: %w", err)
	}
	algo, err := enc.ParseAlgo(s.algo)
	if err != nil {
		return fmt.Errorf("--algo: %w", err)
	}
	d, err := enc.ParseDtype(s.dtype)
	if err != nil {
		return fmt.Errorf("--datatype: %w", err)
	}
	var timingOnly bool
	switch s.mode {
	case "timing":
		timingOnly = true
	case "functional":
	default:
		return fmt.Errorf("--mode %q: accepted words are timing|functional", s.mode)
	}
	minB, err := nccom.ParseSize(s.minB)
	if err != nil {
		return fmt.Errorf("-b: %w", err)
	}
	maxB, err := nccom.ParseSize(s.maxB)
	if err != nil {
		return fmt.Errorf("-e: %w", err)
	}
	var factor, step int64
	if s.factor != "" {
		if factor, err = strconv.ParseInt(s.factor, 10, 64); err != nil {
			return fmt.Errorf("-f %q: not an integer factor", s.factor)
		}
	}
	if s.step != "" {
		if step, err = nccom.ParseSize(s.step); err != nil {
			return fmt.Errorf("-i: %w", err)
		}
	}
	p := f.params(t)
	opt := enc.Options{Chunks: s.chunks, GroupSize: s.groupSize}
	var series []nccom.Series
	var reports []*nccom.Report
	for _, n := range counts {
		ranks := n * max(s.ranksPerDevice, 1)
		align := int64(d.Size())
		if op == enc.AllGather || op == enc.ReduceScatter || op == enc.AllToAll {
			align *= int64(ranks)
		}
		sizes, err := nccom.Sizes(minB, maxB, factor, step, align)
		if err != nil {
			return err
		}
		rep, err := sweepOne(cmd, f, s, family, &p, n, op, algo, d, sizes, timingOnly, opt)
		if err != nil {
			return err
		}
		reports = append(reports, rep)
		series = append(series, nccom.Series{Label: fmt.Sprintf("%d devices, %d ranks", n, ranks), Report: rep})
	}
	for i, rep := range reports {
		if i > 0 {
			fmt.Fprintln(cmd.OutOrStdout())
		}
		if err := rep.WriteTable(cmd.OutOrStdout()); err != nil {
			return err
		}
	}
	if s.jsonFile != "" {
		if err := writeFileWith(s.jsonFile, reports[len(reports)-1].WriteJSON); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if s.plotFile != "" {
		title := fmt.Sprintf("%s %s, %s (%s model)", f.gen.Product(), op, d, p.Model)
		if err := nccom.Plot(s.plotFile, title, series); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	return nil
}

// sweepOne runs every size on a system of n devices.
func sweepOne(cmd *cobra.Command, f *fabricFlags, s *sweepFlags, family hwarch.SwitchFamily, p *fabric.Params, n int,
	op enc.Op, algo enc.Algo, d enc.Dtype, sizes []int64, timingOnly bool, opt enc.Options) (*nccom.Report, error) {
	ranks := n * max(s.ranksPerDevice, 1)
	need, err := cluster.BufferNeed(op, algo, ranks, d, sizes, opt)
	if err != nil {
		return nil, err
	}
	if !timingOnly && need*uint64(ranks) > maxFunctionalBytes {
		return nil, fmt.Errorf("--mode functional: %d ranks × %d bytes of buffers is more than the %d bytes a functional sweep may touch; use --mode timing or smaller sizes",
			ranks, need, uint64(maxFunctionalBytes))
	}
	c, err := cluster.New(cluster.Config{Generation: f.gen, Devices: n, Switch: family, Kind: f.kind, Params: p,
		TimingOnly: timingOnly, BufferBytes: need, RanksPerDevice: s.ranksPerDevice})
	if err != nil {
		return nil, err
	}
	if s.engines > 0 {
		c.Exec.Engines = s.engines
	}
	var pcapOut *os.File
	var w *capture.Writer
	if s.pcapFile != "" {
		if pcapOut, err = os.Create(s.pcapFile); err != nil {
			return nil, fmt.Errorf("--pcap: %w", err)
		}
		defer pcapOut.Close()
		if w, err = capture.NewWriter(pcapOut, capture.Options{}); err != nil {
			return nil, fmt.Errorf("--pcap: %w", err)
		}
		c.System.SetCapture(w, 0)
	}
	var prog *nccom.Progress
	if isTTY(cmd.ErrOrStderr()) {
		prog = nccom.NewProgress(cmd.ErrOrStderr(), len(sizes), true, fmt.Sprintf("%s on %d devices", op, n))
	}
	rep, err := c.Sweep(cluster.Sweep{Op: op, Algo: algo, Dtype: d, Sizes: sizes, Options: opt, Seed: s.seed, Progress: prog})
	if err != nil {
		return nil, err
	}
	if w != nil {
		if err := c.System.FlushCapture(); err != nil {
			return nil, fmt.Errorf("--pcap: %w", err)
		}
		written, lost := c.System.CaptureStats()
		rep.Extra["pcap_packets"] = written
		if lost > 0 {
			rep.Extra["pcap_packets_not_recorded"] = lost
		}
	}
	return rep, nil
}

// isTTY reports whether w is a terminal.
func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && nccom.IsTerminal(f)
}

// writeFileWith creates path and writes it with write.
func writeFileWith(path string, write func(io.Writer) error) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func newFabricCalibrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "calibrate",
		Short: "Fit the collectives' parameters to the published nccom-test tables and print the error per size",
		Long: `calibrate runs the two published tables the project fits to (trainium-facts
§5.3 (a), a 2-rank AllReduce, and (d), an 8-rank AllGather) on the model with
every DMA engine count 1..16, each with its best launch cost, and prints the
best fit with the published and modelled time of every size. The result is
what enc.Calibrated returns; a test keeps the two equal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			for i, tg := range calibrate.Targets {
				f, err := calibrate.FitTarget(tg)
				if err != nil {
					return err
				}
				if i > 0 {
					fmt.Fprintln(out)
				}
				fmt.Fprintf(out, "%s — %s, %s: %d devices × %d ranks, %s\n", tg.Name, tg.Source, tg.Generation.Product(), tg.Devices, tg.RanksPer, tg.Op)
				fmt.Fprintf(out, "fit: %d DMA engines per rank, launch cost %v, RMS error %.1f%%\n", f.Engines, f.LaunchCost, 100*f.RMS)
				fmt.Fprintf(out, "%12s %14s %14s %8s\n", "size(B)", "published(us)", "model(us)", "error")
				for _, r := range f.Rows {
					fmt.Fprintf(out, "%12d %14.2f %14.2f %+7.1f%%\n", r.Size, us(r.Published), us(r.Model), 100*r.Error)
				}
			}
			return nil
		},
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
