package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/calibrate"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/fabricdraw"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/plot"
	"github.com/neuronsim/neuronsim/internal/progress"
	"github.com/neuronsim/neuronsim/internal/sweep"
	"github.com/neuronsim/neuronsim/internal/units"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

func newFabricCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fabric",
		Short: "Multi-device systems: collective sweeps over the simulated fabric, and its topology",
	}
	cmd.AddCommand(newFabricSweepCommand(), newFabricTopoCommand(), newFabricCalibrateCommand())
	return cmd
}

// fabricFlags are the system and fabric flags of the fabric commands. The
// timing overrides are unset unless given; unset, a parameter keeps the
// generation's value (fabric.DefaultParams, docs/fabric.md).
type fabricFlags struct {
	gen      hwarch.Generation
	device   uint16 // the PCI device id when --arch named a product (inf2: 0x7264); 0: the generation's first
	family   hwarch.SwitchFamily
	devices  devicesValue
	kind     fabric.Kind
	model    fabric.Model
	whatIf   bool
	linkLat  *scaledValue
	linkBW   *scaledValue
	endpoint *scaledValue
	swLat    *scaledValue
	chunkB   *sizeValue
	server   *intValue
	ends     fabric.Endpoints
	named    systemFlag // --system NAME (fabric_system.go)
	efa      *efaFlags  // --nodes and the EFA network (fabric_efa.go)
	cmd      *cobra.Command
}

// The bounds of the fabric flags: a store-and-forward chunk (as
// fabric.Params.Validate accepts it) and the devices of one Trn3 server.
const (
	minChunkBytes = 64
	maxChunkBytes = 1 << 30
)

func addFabricFlags(cmd *cobra.Command) *fabricFlags {
	def := fabric.DefaultParams(hwarch.Mariana)
	f := &fabricFlags{gen: defaultArch, devices: devicesValue{list: true}, cmd: cmd,
		linkLat: newLatency("--link-latency"), linkBW: newBandwidth("--link-bw"), endpoint: newLatency("--endpoint-delay"),
		swLat: newLatency("--switch-latency"), chunkB: newSize("--chunk-bytes", minChunkBytes, maxChunkBytes),
		server: newInt("--server-size", 1, hwarch.MaxNeuronDevices)}
	fl := cmd.Flags()
	fl.Var(archValue{&f.gen, &f.device, new(string)}, "arch", "generation: sunda|cayman|mariana, v2|v3|v4, trn1|inf2|trn2|trn3 or 2|3|4 (a product word also sets the PCI device id: inf2 is 0x7264)")
	addSwitchFlag(cmd, &f.family)
	fl.Var(&f.devices, "devices", fmt.Sprintf("number of devices of the system, or a list of at most %d counts to run each (2,4,8,16,32); each 1..get_max_devs of the generation and switch (32 for mariana with switch v1, 16 otherwise), up to %d with --what-if (sweep: at most %d ranks, and the host memory --mem-limit allows) (default get_max_devs)", sweep.MaxAxisValues, rtarch.MaxWhatIfDevices, enc.MaxRanks))
	fl.Var(&f.kind, "topology", fabric.KindWords()+" (auto: what a real system of that shape has; trn3-gen1 is the 64-chip and trn3-gen2 the 144-chip Trn3 UltraServer, docs/fabric.md §Systems; switch, trn3-gen1 and trn3-gen2 are mariana's only)")
	fl.Var(&f.model, "model", "network model: aware (contention-aware, store-and-forward) or free (contention-free, cut-through)")
	fl.BoolVar(&f.whatIf, "what-if", false, fmt.Sprintf("allow device counts beyond get_max_devs, up to %d (the fabric window's device index); past the driver's %d (MAX_NEURON_DEVICE_COUNT) the devices are brought up by their index (docs/fabric.md §Thousands of devices)", rtarch.MaxWhatIfDevices, hwarch.MaxNeuronDevices))
	fl.Var(f.linkLat, "link-latency", fmt.Sprintf("α: every link's latency in ns, 0..%d (default: the generation's, %d ns)", units.MaxLatencyPS/1000, def.XY.Latency/1000))
	fl.Var(f.linkBW, "link-bw", fmt.Sprintf("B: every link's bandwidth with its unit, which must be given (50GiB/s is 50·2^30 B/s, 53.7GB/s, 400Gbps; a bare number is refused), read exactly: a whole number of bytes per second, 1B/s to %dTB/s (default: the generation's, per link kind; docs/fabric.md)", units.MaxBandwidthBps/1e12))
	fl.Var(&f.ends, "endpoints", "real, or ideal: the α-β parity mode — DMA engines take no time, no launch cost, one engine per rank, one chunk per message, no endpoint or switch delay; needs --link-bw and --link-latency, the model's B and α (docs/fabric.md §Parity mode)")
	fl.Var(f.endpoint, "endpoint-delay", fmt.Sprintf("δ: the delay a write takes to land after its last byte, ns (default %d)", def.Endpoint/1000))
	fl.Var(f.swLat, "switch-latency", fmt.Sprintf("a switch's forwarding delay, ns (default %d)", def.Switch/1000))
	fl.Var(f.chunkB, "chunk-bytes", fmt.Sprintf("store-and-forward chunk of the aware model in bytes, %s..%s%s (default %s)",
		units.FormatBytes(minChunkBytes), units.FormatBytes(maxChunkBytes), sizeUnits, units.FormatBytes(int64(def.ChunkBytes))))
	fl.Var(f.server, "server-size", fmt.Sprintf("switch topology (Trn3): devices per server, i.e. on one in-server switch, 1..%d, at most --devices and dividing it (default %d)", hwarch.MaxNeuronDevices, def.ServerSize))
	f.named.add(cmd)
	f.efa = addEFAFlags(cmd)
	return f
}

// system resolves the switch family and the device counts: each bounded
// by get_max_devs, or by rtarch.MaxWhatIfDevices with --what-if; unset,
// get_max_devs. With --system, the named system's (its device count the
// hardware's, not bounded by get_max_devs).
func (f *fabricFlags) system() (hwarch.SwitchFamily, *rtarch.Tables, []int, error) {
	if err := f.named.apply(f); err != nil {
		return 0, nil, nil, err
	}
	family := hwarch.DefaultSwitchFamily(f.gen)
	if f.named.spec != nil {
		family = f.named.spec.Switch() // --switch given agrees (apply)
	} else if fam, err := switchFor(f.cmd, "", f.family, f.gen); err != nil {
		return 0, nil, nil, err
	} else {
		family = fam
	}
	t, err := rtarch.For(f.gen, rtarch.Options{Switch: family})
	if err != nil {
		return 0, nil, nil, fmt.Errorf("--arch: %w", err)
	}
	if f.named.spec != nil {
		return family, t, f.named.counts(), nil
	}
	counts, err := f.devices.resolve(t.Soc.MaxDevs(), t.Soc, f.whatIf, true)
	if err != nil {
		return 0, nil, nil, err
	}
	if f.whatIf && slices.Max(counts) <= t.Soc.MaxDevs() {
		return 0, nil, nil, fmt.Errorf("--what-if: every device count here (%s) is within get_max_devs (%d for %s with switch %s), so it would change nothing; it allows counts beyond that: leave it out",
			strings.Trim(strings.ReplaceAll(fmt.Sprint(counts), " ", ","), "[]"), t.Soc.MaxDevs(), f.gen, family)
	}
	return family, t, counts, nil
}

// params returns the fabric parameters with the flags' overrides; with
// --endpoints ideal, the parity mode's (cluster.IdealParams), refusing the
// flags that mode has no use for.
func (f *fabricFlags) params(t *rtarch.Tables, perNode []int) (fabric.Params, error) {
	if f.ends == fabric.EndpointsIdeal {
		if !f.linkBW.set || !f.linkLat.set {
			return fabric.Params{}, fmt.Errorf("--endpoints ideal: give --link-bw and --link-latency, the B and α of the α-β model")
		}
		for _, o := range []struct {
			flag string
			set  bool
		}{{"--endpoint-delay", f.endpoint.set}, {"--switch-latency", f.swLat.set}, {"--chunk-bytes", f.chunkB.set}} {
			if o.set {
				return fabric.Params{}, fmt.Errorf("%s: --endpoints ideal has none (one chunk per message, no endpoint or switch delay)", o.flag)
			}
		}
	}
	p, err := cluster.RunParams(f.gen, f.device, t, f.model, f.ends,
		cluster.LinkTiming{Latency: f.linkLat.v, SetLatency: f.linkLat.set, Bandwidth: f.linkBW.v, SetBandwidth: f.linkBW.set})
	if err != nil {
		return p, err
	}
	if f.endpoint.set {
		p.Endpoint = f.endpoint.v
	}
	if f.swLat.set {
		p.Switch = f.swLat.v
	}
	if f.chunkB.set {
		p.ChunkBytes = int(f.chunkB.v)
	}
	if f.server.set {
		p.ServerSize = f.server.int()
	}
	return p, f.efa.apply(&p, perNode)
}

// kindOf is the topology of a system of n devices, refusing the overrides
// that do not apply to it.
func (f *fabricFlags) kindOf(n int) (fabric.Kind, error) {
	kind := f.kind
	if kind == fabric.KindAuto {
		kind = fabric.AutoKind(f.gen, n)
	}
	if r := kind.GenerationRefusal(f.gen); r != "" {
		return kind, fmt.Errorf("--topology %s: %s", kind, r)
	}
	if r := kind.DevicesRefusal(n); r != "" {
		// Once "cluster: fabric torus2d: 6 devices; …: topology cannot be
		// built", naming neither flag.
		return kind, fmt.Errorf("--topology %s: %d devices (--devices): %s", kind, n, r)
	}
	if f.server.set && kind != fabric.KindSwitch {
		if kind == fabric.KindTrn3Gen1 || kind == fabric.KindTrn3Gen2 {
			return kind, fmt.Errorf("--server-size: %s; it applies to the switch topology", kind.ServerSizeRefusal())
		}
		return kind, fmt.Errorf("--server-size: %s (of %d %s devices); it applies to the switch topology", kind.ServerSizeRefusal(), n, f.gen)
	}
	if f.server.set {
		if r := fabric.ServerSizeFit(f.server.int(), n); r != "" {
			return kind, fmt.Errorf("--server-size %d: %s", f.server.int(), r)
		}
	}
	if f.chunkB.set && f.model == fabric.Free {
		return kind, fmt.Errorf("--chunk-bytes: the free model moves no chunks; it applies to --model aware")
	}
	if f.swLat.set && !kind.HasSwitches() && f.efa.count() == 1 {
		return kind, fmt.Errorf("--switch-latency: a %s topology of %d %s devices has no switches, nor one node an EFA network; it applies to switched topologies and to --nodes 2 or more", kind, n, f.gen)
	}
	return kind, nil
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
		if err := f.efa.check(counts); err != nil {
			return err
		}
		p, err := f.params(t, counts)
		if err != nil {
			return err
		}
		if err := f.refuseUndrawn(); err != nil {
			return err
		}
		for i, n := range counts {
			if i > 0 {
				fmt.Fprintln(cmd.OutOrStdout())
			}
			kind, err := f.kindOf(n)
			if err != nil {
				return err
			}
			if err := p.Validate(kind); err != nil {
				return err
			}
			topo, err := fabric.BuildNodes(kind, f.gen, n*f.efa.count(), f.efa.count(), p)
			if err != nil {
				return err
			}
			if err := fabricdraw.Draw(cmd.OutOrStdout(), topo); err != nil {
				return err
			}
			// The order the collectives' rings take through the devices,
			// where it is not rank order or rank order is no cycle.
			ring := cluster.Config{Generation: f.gen, Devices: topo.Devices, Nodes: f.efa.count(), Kind: kind, Params: &p}.RingOrder()
			if ring.Note != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "ring order: %s\n", ring.Note)
			}
		}
		return nil
	}
	return cmd
}

// refuseUndrawn refuses, for fabric topo, the flags that change nothing it
// draws: the network model and its chunk, which are how writes cross the
// links, not the links; the endpoint delay and the switch forwarding delay,
// which it shows only as their share of --efa-latency (the NIC links'
// latency is what is left of it), so with --nodes and --efa-latency alone;
// and for the same reason --endpoints ideal, which takes those delays away.
func (f *fabricFlags) refuseUndrawn() error {
	fl := f.cmd.Flags()
	for _, name := range []string{"model", "chunk-bytes"} {
		if fl.Changed(name) {
			return fmt.Errorf("--%s: fabric topo draws the links, which the network model and its chunks do not change; it applies to fabric sweep", name)
		}
	}
	nicShare := f.efa.count() > 1 && fl.Changed("efa-latency")
	for _, name := range []string{"endpoint-delay", "switch-latency"} {
		if fl.Changed(name) && !nicShare {
			return fmt.Errorf("--%s: fabric topo draws links, not this delay; it changes the drawing only with --nodes 2 or more and --efa-latency (the NIC links take what the delays leave of it); it applies to fabric sweep", name)
		}
	}
	if f.ends == fabric.EndpointsIdeal && !nicShare {
		return fmt.Errorf("--endpoints: fabric topo draws links, not the endpoints' delays, which the parity mode takes away; it changes the drawing only with --nodes 2 or more and --efa-latency (the NIC links take what the switch and endpoint delays leave of it, all of it in this mode); it applies to fabric sweep")
	}
	return nil
}

// sweepFlags are the nccom-test-like flags of fabric sweep.
type sweepFlags struct {
	op, algo, mode     string
	dtype              dtypeValue
	minB, maxB         string
	factor             *intValue
	step               *sizeValue
	chunks, groupSize  *intValue
	channels           *intValue
	ranksPerDevice     *intValue
	engines            *intValue
	jsonFile, plotFile string
	pcapFile           string
	pcapMax            string
	memLimit           string
	ringOrder          string
	seed               *seedValue
	devPlot            devicesPlot // --plot-devices, --plot-sizes (fabric_plotdevices.go)
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
list sweeps each count (a table per count; with --json a report per count);
--plot draws busbw against size per count.`,
		Example: `  neuronsim fabric sweep --arch mariana --switch v1 --devices 32 --op all_reduce -b 1K -e 1G -f 2
  neuronsim fabric sweep --arch cayman --devices 16 --op all_gather -b 64K -e 64M -f 4 --algo ring --mode functional
  neuronsim fabric sweep --devices 2,4,8,16,32 --op all_reduce -b 1K -e 256M -f 4 --plot busbw.png`,
		Args: cobra.NoArgs,
	}
	f := addFabricFlags(cmd)
	s := sweepFlags{dtype: dtypeValue{d: enc.Float32}, seed: newSeed(),
		factor:    newInt("-f/--stepfactor", 2, math.MaxInt64),
		step:      newSize("-i/--stepbytes", 1, math.MaxInt64),
		chunks:    newIntDefault("--chunks", 1, enc.MaxChunks, 1),
		groupSize: newInt("--group-size", 1, enc.MaxRanks),
		channels:  newInt("--channels", 1, enc.MaxChannels),
		ranksPerDevice: newIntDefault("--ranks-per-device", 1, maxOfGenerations(func(g *hwarch.Geometry) int { return g.NeuronCores }), 1).
			bounded("the most NeuronCores a device of any generation has; the --arch given may have fewer"),
		engines: newInt("--engines", 1, maxOfGenerations(func(g *hwarch.Geometry) int { return g.DMAEnginesPerNC }))}
	fl := cmd.Flags()
	fl.StringVar(&s.op, "op", "all_reduce", "all_reduce|allr, all_gather|allg, reduce_scatter|redsct, alltoall, permute")
	fl.StringVarP(&s.minB, "minbytes", "b", "32M", "smallest size in bytes"+sizeUnits)
	fl.StringVarP(&s.maxB, "maxbytes", "e", "32M", "largest size in bytes"+sizeUnits)
	fl.VarP(s.factor, "stepfactor", "f", "multiply the size by this (at least 2) each step")
	fl.VarP(s.step, "stepbytes", "i", "add this size (at least 1 byte) each step"+sizeUnits+" (default: without -f, (max-min)/10)")
	fl.StringVar(&s.algo, "algo", "auto", "auto|ring|mesh|rdh|kangaring|hier (auto across --nodes: hier, or on trn1 a flat ring from 64 MiB)")
	fl.VarP(s.dtype.setter("-d/--datatype"), "datatype", "d", "fp32, bf16, fp16, int32, uint32, int8, uint8, int16, uint16")
	fl.Var(s.dtype.setter("--dtype"), "dtype", "the same as -d/--datatype (giving both with different types is an error)")
	fl.StringVar(&s.mode, "mode", "timing", "timing (no payloads) or functional (real data, checked against the CPU reference)")
	fl.Var(s.chunks, "chunks", fmt.Sprintf("k: split each collective into k pieces run one after another, 1..%d", enc.MaxChunks))
	fl.Var(s.channels, "channels", fmt.Sprintf("with --nodes: the flat ring's channels, rings side by side each crossing between nodes through its own pair of ranks; must divide a node's ranks, 1..%d (default: one per EFA NIC of a node, as the runtime runs them: 8 on trn1.32xlarge, 16 on trn2.48xlarge; docs/fabric.md §EFA)", enc.MaxChannels))
	fl.Var(s.groupSize, "group-size", "ranks per node for --algo hier (required with it without --nodes, whose nodes give it: with --nodes only a node's ranks are taken; it must divide the ranks)")
	fl.StringVar(&s.ringOrder, "ring-order", "links", "the order the rings visit the ranks (ring, kangaring, hier's rings in a node, permute's peers): links, a cycle along the topology's links (the 4×4 torus: 0-3 7-4 8-11 15-12; rank order on switched fabrics); ranks, rank order 0, 1, …; or the ranks in order, runs first-last allowed (\"0-3 7-4 8-11 15-12\" or 0,1,2,3,…) (docs/fabric.md §Ring order)")
	fl.Var(s.ranksPerDevice, "ranks-per-device", "NeuronCores of each device taking part, 1..the generation's NeuronCores (rank r is NC r mod k of device r/k)")
	fl.Var(s.engines, "engines", "DMA engines each rank spreads its transfers over, 1..a NeuronCore's DMA engines (16) (default: the generation's calibrated count, 5 on each; docs/timing-model.md §Calibration)")
	fl.StringVar(&s.jsonFile, "json", "", "write nccom-test's JSON report to this file; with several --devices counts, one report per count, to NAME-<N>devices.EXT (with --nodes, NAME-<nodes>x<N>devices.EXT, N a node's devices)")
	fl.StringVar(&s.plotFile, "plot", "", "draw busbw against size, one line per device count, to this PNG")
	s.devPlot.add(fl)
	fl.StringVar(&s.pcapFile, "pcap", "", "write the fabric's packets to this pcap file (contrib/wireshark/neuronsim.lua dissects them)")
	fl.StringVar(&s.pcapMax, "pcap-max", "64M", "largest --pcap file: the capture stops cleanly there, with a note (the file stays valid)")
	fl.StringVar(&s.memLimit, "mem-limit", "", "host memory a functional sweep may plan to use (default 3/4 of physical memory, /proc/meminfo MemTotal)")
	fl.Var(s.seed, "seed", "seed of the random inputs (functional mode), 0..2^64−1")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runSweep(cmd, f, &s)
	}
	return cmd
}

// checkOutputPaths checks that every output path given can be written and
// that no two are the same file — by their paths, through a symbolic link
// (of the file or of a directory on its path) or a hard link
// (output.FindSame) — before any work starts.
func checkOutputPaths(flags ...[2]string) error {
	paths := make([]string, len(flags))
	for i, fl := range flags {
		paths[i] = fl[1]
	}
	if j, i, file, ok := output.FindSame(paths); ok {
		return errors.New(output.Same(flags[j][0], flags[j][1], flags[i][0], flags[i][1], file))
	}
	for _, fl := range flags {
		if fl[1] == "" {
			continue
		}
		if err := output.Check(fl[1]); err != nil {
			return fmt.Errorf("%s: %w", fl[0], err)
		}
	}
	return nil
}

// checkNotInputs refuses an output (flag name, path) that is one of the
// files the command reads (inputs: name, path pairs): the same path, or
// an existing file that is the same one (a link, a hard link). Writing it
// would replace what the command was given.
func checkNotInputs(out [2]string, inputs ...[2]string) error {
	for _, in := range inputs {
		if output.SameFile(out[1], in[1]) {
			return fmt.Errorf("%s %s: the same file as %s, which it would replace", out[0], out[1], in[0])
		}
	}
	return nil
}

// sweepPlan is a fabric sweep with every flag checked: the systems to
// build and sweep, and the outputs to write.
type sweepPlan struct {
	set     cluster.SweepSet
	counts  []int // every node's devices
	nodes   int   // --nodes
	pcapMax uint64
	title   string // the plots', naming the system and the nodes (sweepTitle)
	// devSizes are the sizes --plot-devices draws (nil without it), and
	// devNote names the sizes it leaves out.
	devSizes []int64
	devNote  string
}

func runSweep(cmd *cobra.Command, f *fabricFlags, s *sweepFlags) error {
	plan, err := s.plan(f)
	if err != nil {
		return err
	}
	defer removeOutputsOnSignal(cmd.ErrOrStderr())()
	var files []*output.File
	defer func() {
		for _, o := range files {
			o.Abort() // nothing of a failed sweep is left; after Commit, nothing happens
		}
	}()
	if s.pcapFile != "" {
		plan.set.Capture = &cluster.Capture{MaxBytes: plan.pcapMax, Open: func() (io.Writer, error) {
			o, err := output.Create(s.pcapFile)
			if err != nil {
				return nil, fmt.Errorf("--pcap: %w", err)
			}
			files = append(files, o)
			return o, nil
		}}
	}
	if isTTY(cmd.ErrOrStderr()) {
		plan.set.Progress = func(sys cluster.SweepSystem) *progress.Bar {
			return progress.New(cmd.ErrOrStderr(), len(sys.Sizes), true, fmt.Sprintf("%s on %s", plan.set.Sweep.Op, units.Plural(int64(sys.Devices), "device", "devices")))
		}
	}
	res, err := cluster.RunSweeps(plan.set)
	var ce *cluster.CaptureError
	if errors.As(err, &ce) {
		return fmt.Errorf("--pcap: %w", ce.Err)
	}
	if err != nil && (len(res.Reports) == 0 || !cluster.Incomplete(res.Reports[len(res.Reports)-1])) {
		return err
	}
	f.named.annotate(res.Reports)
	s.noteOverrides(f, res.Reports, plan.set.Config.TimingOnly)
	if err != nil {
		return s.writeIncomplete(cmd, plan, res.Reports, err)
	}
	if c := res.Capture; c.Full {
		fmt.Fprintf(cmd.ErrOrStderr(), "neuronsim: --pcap: the capture stopped at --pcap-max (%s) after %s; %d not recorded\n",
			units.FormatBytes(int64(c.MaxBytes)), units.Plural(int64(c.Packets), "packet", "packets"), c.NotRecorded)
	}
	files, err = writeSweep(cmd, s, plan, res.Reports, files, true)
	if err != nil {
		return err
	}
	return commitOutputs(cmd, files)
}

// commitOutputs gives the outputs, every one complete, their names
// together, and says what it wrote.
func commitOutputs(cmd *cobra.Command, files []*output.File) error {
	for _, o := range files {
		if err := o.Commit(); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%d bytes)\n", o.Path(), o.Size())
	}
	return nil
}

// writeIncomplete ends a sweep stopped by a size that failed with err: the
// reports hold the systems swept and, last, the sizes the failing system
// ran before it (cluster.Incomplete; cluster.IncompleteKey says where it
// stopped). Their tables are printed and the --json reports written — the
// last marked "neuronsim_incomplete" — so that what finished is not lost;
// --plot, --plot-devices and --pcap are not written (a picture or a
// capture cannot say it is incomplete), and earlier files of those names
// are left as they were. The error names the size and adds what was kept.
func (s *sweepFlags) writeIncomplete(cmd *cobra.Command, plan *sweepPlan, reports []*nccom.Report, err error) error {
	files, werr := writeSweep(cmd, s, plan, reports, nil, false)
	if werr == nil {
		werr = commitOutputs(cmd, files)
	}
	for _, o := range files {
		o.Abort() // after Commit, nothing happens
	}
	kept := "the rows of the sizes before it are printed above"
	if s.jsonFile != "" {
		kept += " and written to --json, marked incomplete (neuronsim_incomplete)"
	}
	var dropped []string
	for _, o := range [][2]string{{"--plot", s.plotFile}, {"--plot-devices", s.devPlot.file}, {"--pcap", s.pcapFile}} {
		if o[1] != "" {
			dropped = append(dropped, o[0])
		}
	}
	if len(dropped) > 0 {
		kept += "; " + strings.Join(dropped, ", ") + " not written"
	}
	if werr != nil {
		return fmt.Errorf("%w (%s; writing them: %v)", err, kept, werr)
	}
	return fmt.Errorf("%w (%s)", err, kept)
}

// overrideParam is a parameter a fabric sweep's flags may change from the
// generation's defaults: its report key — a sweep grid's merged report's
// name where it has one (link_bw_Bps, link_latency_ps, endpoints, efa_*,
// seed), otherwise the parameter with its unit — and its value, when the
// report names it (noteOverrides). The flat ring's channels have their
// note already (cluster.ChannelsKey).
type overrideParam struct {
	key string
	get func(f *fabricFlags, s *sweepFlags, timingOnly bool) (v any, set bool)
}

// overrideParams are the parameters noteOverrides names, in this order.
var overrideParams = []overrideParam{
	{"endpoints", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) {
		return f.ends.String(), f.cmd.Flags().Changed("endpoints")
	}},
	{"link_bw_Bps", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.linkBW.v, f.linkBW.set }},
	{"link_latency_ps", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.linkLat.v, f.linkLat.set }},
	{"endpoint_delay_ps", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.endpoint.v, f.endpoint.set }},
	{"switch_latency_ps", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.swLat.v, f.swLat.set }},
	{"chunk_bytes", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.chunkB.v, f.chunkB.set }},
	{"server_size", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.server.v, f.server.set }},
	{"engines", func(_ *fabricFlags, s *sweepFlags, _ bool) (any, bool) { return s.engines.v, s.engines.set }},
	{"chunks", func(f *fabricFlags, s *sweepFlags, _ bool) (any, bool) {
		return s.chunks.v, f.cmd.Flags().Changed("chunks")
	}},
	{"group_size", func(_ *fabricFlags, s *sweepFlags, _ bool) (any, bool) { return s.groupSize.v, s.groupSize.set }},
	{"efa_bandwidth_Bps", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.efa.bw.v, f.efa.bw.set }},
	{"efa_latency_ps", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.efa.latency.v, f.efa.latency.set }},
	{"efa_oversubscription", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.efa.ratio.v, f.efa.ratio.set }},
	{"efa_leaf_ports", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.efa.leafPorts.v, f.efa.leafPorts.set }},
	{"efa_spines", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.efa.spines.v, f.efa.spines.set }},
	{"efa_devices_per_nic", func(f *fabricFlags, _ *sweepFlags, _ bool) (any, bool) { return f.efa.perNIC.v, f.efa.perNIC.set }},
	// The inputs' seed, given or the default, in functional mode (where
	// --seed is taken).
	{"seed", func(_ *fabricFlags, s *sweepFlags, timingOnly bool) (any, bool) { return s.seed.v, !timingOnly }},
}

// noteOverrides adds to every report's Extra the parameters the flags
// given set (overrideParams), exactly (bandwidths in B/s, latencies in ps,
// the EFA latency the whole minimal message's): with only the system's
// words in the report, a sweep of 10 GB/s links or of the parity mode read
// as one of the defaults. A flag left out adds nothing, so a report of the
// defaults is as before — but for the seed, named in functional mode
// whether given or not, as a scenario's report names it (the inputs are
// the seed's).
func (s *sweepFlags) noteOverrides(f *fabricFlags, reports []*nccom.Report, timingOnly bool) {
	add := map[string]any{}
	for _, o := range overrideParams {
		if v, set := o.get(f, s, timingOnly); set {
			add[o.key] = v
		}
	}
	for _, rep := range reports {
		maps.Copy(rep.Extra, add)
	}
}

// writeSweep prints the reports' tables and writes the --json reports and,
// when the sweep is complete, the --plot and --plot-devices, adding their
// files to files.
func writeSweep(cmd *cobra.Command, s *sweepFlags, plan *sweepPlan, reports []*nccom.Report, files []*output.File, complete bool) ([]*output.File, error) {
	var series []plot.Series
	for i, rep := range reports {
		if i > 0 {
			fmt.Fprintln(cmd.OutOrStdout())
		}
		if err := cluster.WriteTables(cmd.OutOrStdout(), rep); err != nil {
			return files, err
		}
		n := plan.counts[i]
		ranks := n * max(plan.set.Config.RanksPerDevice, 1)
		series = append(series, plot.Series{Label: devicesLabel(n, plan.nodes) + ", " + units.Plural(int64(ranks), "rank", "ranks"), Report: rep})
	}
	if s.jsonFile != "" {
		for i, rep := range reports {
			o, err := output.Create(jsonPath(s.jsonFile, plan.counts, plan.nodes, i))
			if err != nil {
				return files, fmt.Errorf("--json: %w", err)
			}
			files = append(files, o)
			if err := rep.WriteJSON(o); err != nil {
				return files, fmt.Errorf("--json: %w", err)
			}
		}
	}
	if !complete {
		return files, nil
	}
	if s.plotFile != "" {
		png, err := plot.PNG(plan.title, series)
		if err != nil {
			return files, fmt.Errorf("--plot: %w", err)
		}
		o, err := output.Create(s.plotFile)
		if err != nil {
			return files, fmt.Errorf("--plot: %w", err)
		}
		files = append(files, o)
		if _, err := o.Write(png); err != nil {
			return files, fmt.Errorf("--plot: %w", err)
		}
	}
	return s.devPlot.write(cmd.ErrOrStderr(), plan, reports, files)
}

// plan checks every flag of a sweep, in the order a user reads them back:
// the system, the output paths, the limits, the collective, the sizes;
// every device count's sizes, buffers and memory are checked before the
// first system is built.
func (s *sweepFlags) plan(f *fabricFlags) (*sweepPlan, error) {
	family, t, perNode, err := f.system()
	if err != nil {
		return nil, err
	}
	if err := f.efa.check(perNode); err != nil {
		return nil, err
	}
	counts := f.efa.total(perNode) // every node's devices
	if err := s.checkOutputs(f, counts); err != nil {
		return nil, err
	}
	pcapMax, err := units.ParseBytesIn("--pcap-max", s.pcapMax, 24, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	limit, err := memLimitOf(f.cmd, s.memLimit)
	if err != nil {
		return nil, err
	}
	sw, timingOnly, err := s.collective(f.gen, f.efa.count())
	if err != nil {
		return nil, err
	}
	if err := s.refuseFlagsWithoutEffect(f, sw, timingOnly); err != nil {
		return nil, err
	}
	sizes, err := s.sizeRange()
	if err != nil {
		return nil, err
	}
	p, err := s.fabricParams(f, t, perNode)
	if err != nil {
		return nil, err
	}
	plan := s.newPlan(f, family, p, sw, timingOnly, counts, pcapMax)
	if err := plan.addSystems(f, perNode); err != nil {
		return nil, err
	}
	for i := range plan.set.Systems {
		if err := s.sizeSystem(f, plan, &plan.set.Systems[i], perNode[i], sizes, limit); err != nil {
			return nil, err
		}
	}
	if err := s.checkAutoRingOrder(f, plan); err != nil {
		return nil, err
	}
	if plan.devSizes, plan.devNote, err = s.devPlot.plan(plan.set.Systems); err != nil {
		return nil, err
	}
	plan.title = sweepTitle(f.named.label(), plan.nodes, plan.title)
	return plan, nil
}

// checkOutputs checks the output flags before any work starts: none given
// empty, every --json report (one per device count), --plot,
// --plot-devices and --pcap can be written and no two are the same file,
// and --pcap comes with a single device count.
func (s *sweepFlags) checkOutputs(f *fabricFlags, counts []int) error {
	// A path given as "" is refused, not taken as the flag left out (no
	// output written, and --pcap-max then asking for the --pcap it was
	// given with).
	for _, name := range []string{"json", "plot", "plot-devices", "pcap"} {
		if fl := f.cmd.Flags(); fl.Changed(name) && fl.Lookup(name).Value.String() == "" {
			return fmt.Errorf("--%s: empty: name a file, or leave --%s out", name, name)
		}
	}
	var paths [][2]string
	if s.jsonFile != "" {
		for i := range counts {
			paths = append(paths, [2]string{"--json", jsonPath(s.jsonFile, counts, f.efa.count(), i)})
		}
	}
	paths = append(paths, [2]string{"--plot", s.plotFile}, [2]string{"--plot-devices", s.devPlot.file}, [2]string{"--pcap", s.pcapFile})
	if err := checkOutputPaths(paths...); err != nil {
		return err
	}
	if s.plotFile != "" && len(counts) > plot.MaxSeries {
		return fmt.Errorf("--plot with %d device counts: a plot draws at most %d lines (its legend holds no more); give fewer counts", len(counts), plot.MaxSeries)
	}
	if s.pcapFile != "" && len(counts) > 1 {
		return fmt.Errorf("--pcap with --devices %s: a pcap holds one system's packets (each system's clock starts at 0); give one device count", f.devices.String())
	}
	return nil
}

// refuseFlagsWithoutEffect refuses the flags given where they would do
// nothing: --pcap-max without --pcap, --seed in timing mode, and
// --ring-order with a collective that runs no ring (mesh, rdh, alltoall).
func (s *sweepFlags) refuseFlagsWithoutEffect(f *fabricFlags, sw cluster.Sweep, timingOnly bool) error {
	switch fl := f.cmd.Flags(); {
	case fl.Changed("pcap-max") && s.pcapFile == "":
		return fmt.Errorf("--pcap-max: it bounds the --pcap file; give --pcap too")
	case fl.Changed("seed") && timingOnly:
		return fmt.Errorf("--seed: timing mode moves no data, so it has no inputs to seed; it applies to --mode functional")
	case fl.Changed("ring-order") && !enc.RingOrderApplies(sw.Op, sw.Algo):
		return fmt.Errorf("--ring-order: %s %s runs no ring; it applies to ring, kangaring, hier and auto, and to every permute", sw.Algo, sw.Op)
	}
	return nil
}

// sweepSizeRange is what the size flags ask for: the smallest and largest
// size, and the step factor or step bytes (0 when not given).
type sweepSizeRange struct {
	minB, maxB   int64
	factor, step int64
}

// sizeRange reads the size flags: -b, -e, and -f or -i.
func (s *sweepFlags) sizeRange() (sweepSizeRange, error) {
	minB, err := units.ParseBytes("-b/--minbytes", s.minB)
	if err != nil {
		return sweepSizeRange{}, err
	}
	maxB, err := units.ParseBytes("-e/--maxbytes", s.maxB)
	if err != nil {
		return sweepSizeRange{}, err
	}
	r := sweepSizeRange{minB: minB, maxB: maxB}
	if s.factor.set {
		r.factor = s.factor.v
	}
	if s.step.set {
		r.step = s.step.v
	}
	// The rule a scenario's sweep keeps too (-b 0 with a step: one granule
	// first; with -f: refused), its errors naming the flags.
	if err := nccom.CheckRange(r.minB, r.maxB, r.factor, nccom.Flags); err != nil {
		return sweepSizeRange{}, err
	}
	if err := nccom.CheckMaxSize(r.maxB, nccom.Flags); err != nil {
		return sweepSizeRange{}, err
	}
	return r, nil
}

// fabricParams returns the fabric parameters the flags give
// (fabricFlags.params), refusing --engines with --endpoints ideal.
func (s *sweepFlags) fabricParams(f *fabricFlags, t *rtarch.Tables, perNode []int) (fabric.Params, error) {
	p, err := f.params(t, perNode)
	if err != nil {
		return p, err
	}
	if s.engines.set && p.Endpoints == fabric.EndpointsIdeal {
		return p, fmt.Errorf("--engines: --endpoints ideal uses one engine per rank")
	}
	return p, nil
}

// newPlan returns the plan of a sweep of sw over the fabric p, without its
// systems yet: the configuration every system shares and the plot's title.
func (s *sweepFlags) newPlan(f *fabricFlags, family hwarch.SwitchFamily, p fabric.Params, sw cluster.Sweep, timingOnly bool, counts []int, pcapMax int64) *sweepPlan {
	plan := &sweepPlan{counts: counts, nodes: f.efa.count(), pcapMax: uint64(pcapMax),
		title: fmt.Sprintf("%s %s, %s (%s model)", f.product(), sw.Op, sw.Dtype, p.Model),
		set: cluster.SweepSet{Sweep: sw, Config: cluster.Config{Generation: f.gen, DeviceID: f.device, Nodes: f.efa.count(), Switch: family, Params: &p,
			TimingOnly: timingOnly, RanksPerDevice: s.ranksPerDevice.int(), WhatIf: f.bringUpWhatIf(), RankOrderRings: units.Word(s.ringOrder) == "ranks"}}}
	if s.engines.set {
		plan.set.Engines = s.engines.int()
	}
	return plan
}

// addSystems adds the plan's systems, one per device count: counts[i]
// devices, perNode[i] of them on each node, of the topology that takes.
func (plan *sweepPlan) addSystems(f *fabricFlags, perNode []int) error {
	for i, n := range perNode {
		kind, err := f.kindOf(n)
		if err != nil {
			return err
		}
		plan.set.Systems = append(plan.set.Systems, cluster.SweepSystem{Devices: plan.counts[i], Kind: kind})
	}
	return nil
}

// sizeSystem checks one of the plan's systems (perNode devices on each
// node) against the ranks and channel flags and sets its sizes, checking
// the memory they need against limit.
func (s *sweepFlags) sizeSystem(f *fabricFlags, plan *sweepPlan, sys *cluster.SweepSystem, perNode int, r sweepSizeRange, limit memlimit.Limit) error {
	if err := checkSweepRanks(f.efa.count(), perNode, s.ranksPerDevice.int()); err != nil {
		return err
	}
	cfg := plan.set.Config
	cfg.Devices = sys.Devices
	sw := plan.set.Sweep
	// Across nodes hier's group is a node (cluster.Config.CollectiveOptions);
	// a group of other ranks would label a flat ring (1, or every rank) or
	// groups that split or span nodes "hier".
	if nr := cfg.NodeRanks(); s.groupSize.set && nr > 0 && s.groupSize.int() != nr {
		return fmt.Errorf("--group-size %d: with --nodes %d hier's group is a node's ranks, %d (%d devices × %s per device); give that or leave --group-size out (without --nodes it sets the groups of one system)",
			s.groupSize.v, plan.nodes, nr, perNode, units.Plural(int64(s.ranksPerDevice.int()), "rank", "ranks"))
	}
	if s.channels.set {
		if err := cfg.CheckChannels(s.channels.int(), sw.Op, sw.Algo); err != nil {
			return fmt.Errorf("--channels %d: %w", s.channels.int(), err)
		}
	}
	sw.Options = cfg.CollectiveOptions(sw.Options) // over nodes: the group size of a node
	ranks := sys.Devices * s.ranksPerDevice.int()
	// hier's groups split the ranks; once refused by the schedule's builder
	// naming no flag ("enc: hier … group size 3 does not divide 16 ranks").
	if g := s.groupSize.int(); s.groupSize.set && sw.Algo == enc.Hier && !enc.GroupDivides(g, ranks) {
		return fmt.Errorf("--group-size %d: does not divide the %d ranks (%d devices × %s per device): hier's groups split the ranks", g, ranks, sys.Devices, units.Plural(int64(s.ranksPerDevice.int()), "rank", "ranks"))
	}
	if err := enc.CheckRingOrder(sw.Options.RingOrder, ranks); err != nil {
		return fmt.Errorf("--ring-order %q on %d ranks: %w", s.ringOrder, ranks, err)
	}
	var err error
	if sys.Sizes, err = s.sizes(sw, ranks, r.minB, r.maxB, r.factor, r.step, cfg.TimingOnly, limit); err != nil {
		return err
	}
	if s.channels.set && sw.Algo == enc.Auto {
		if err := cfg.CheckAutoChannels(sw.Op, sys.Sizes, sw.Options); err != nil {
			return fmt.Errorf("--channels %d: %w", s.channels.int(), err)
		}
	}
	// The memory first: it counts a few schedules (the algorithms' largest
	// sizes, stopping at one over the limit), the buffers every size's —
	// seconds each on thousands of ranks, an hour for a thousand sizes
	// before a sweep the memory refuses.
	if cfg.TimingOnly {
		engines := sweepEngines(f.gen, *cfg.Params, plan.set.Engines)
		if err := checkTimingMemory(sw, sys.Devices, ranks, engines, sys.Sizes, limit); err != nil {
			return err
		}
	}
	return s.checkBuffers(f.gen, cfg.Revision, sw, ranks, sys.Sizes)
}

// checkBuffers refuses sizes whose largest needs more buffers a rank
// (cluster.BufferNeed) than a device of gen holds for each of its ranks
// (cluster.BufferCapacity), naming -e/--maxbytes, before any device is
// brought up: the allocator's refusal came after bring-up, in its own
// terms ("dmem: alloc \"collective.nc0\" … out of device memory"), naming
// no flag. Only each algorithm's largest size is counted (cluster.Largest,
// as a scenario's sweep is checked): the buffers grow with the size, and
// counting every size's schedule took seconds a size on thousands of
// ranks. The run counts every size again before it brings up a system.
func (s *sweepFlags) checkBuffers(gen hwarch.Generation, revision uint8, sw cluster.Sweep, ranks int, sizes []int64) error {
	var need uint64
	var at int64
	for _, rep := range cluster.Largest(sw.Op, sw.Algo, ranks, sizes, sw.Options) {
		n, err := bufferNeed(sw.Op, rep.Algo, ranks, sw.Dtype, []int64{rep.Size}, sw.Options)
		if err != nil {
			return err
		}
		if n > need {
			need, at = n, rep.Size
		}
	}
	rpd := s.ranksPerDevice.int()
	most, err := cluster.BufferCapacity(gen, revision, rpd)
	if err != nil || need <= most {
		return err
	}
	return fmt.Errorf("-e/--maxbytes %s: %s of %d bytes on %d ranks needs %d bytes (%s) of buffers a rank; a %s device of %s holds at most %d (%s) for each (its HBM channels less the firmware carve-out and the small pool, the ranks of a channel sharing it)",
		s.maxB, sw.Op, at, ranks, need, memlimit.Human(need), gen, units.Plural(int64(rpd), "rank", "ranks"), most, units.FormatBytes(int64(most)))
}

// bufferNeed is cluster.BufferNeed; a test replaces it to count the
// schedules a sweep's checks count.
var bufferNeed = cluster.BufferNeed

// checkAutoRingOrder refuses --ring-order with --algo auto when auto runs
// no ring (ring, kangaring, hier) at any size of the sweep on any of its
// device counts (cluster.Config.CheckAutoRingOrder): the order would be
// used nowhere, and the report would not say so. The error is the first
// count's.
func (s *sweepFlags) checkAutoRingOrder(f *fabricFlags, plan *sweepPlan) error {
	sw := plan.set.Sweep
	if !f.cmd.Flags().Changed("ring-order") || sw.Algo != enc.Auto {
		return nil
	}
	var first error
	for _, sys := range plan.set.Systems {
		cfg := plan.set.Config
		cfg.Devices, cfg.Kind = sys.Devices, sys.Kind
		err := cfg.CheckAutoRingOrder(sw.Op, sys.Sizes, cfg.CollectiveOptions(sw.Options))
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("--ring-order: %w", first)
}

// collective checks the collective's flags: the op, the algorithm, the
// ranks and engines against the generation, the group size, the mode.
func (s *sweepFlags) collective(gen hwarch.Generation, nodes int) (sw cluster.Sweep, timingOnly bool, err error) {
	if sw.Op, err = enc.ParseOp(s.op); err != nil {
		return sw, false, fmt.Errorf("--op: %w", err)
	}
	if sw.Algo, err = enc.ParseAlgo(s.algo); err != nil {
		return sw, false, fmt.Errorf("--algo: %w", err)
	}
	sw.Dtype, sw.Seed = s.dtype.d, s.seed.v
	geo := hwarch.MustGeometry(gen)
	if err := s.ranksPerDevice.within(int64(geo.NeuronCores), fmt.Sprintf("a %s device has %d NeuronCores", gen, geo.NeuronCores)); err != nil {
		return sw, false, err
	}
	if err := s.engines.within(int64(geo.DMAEnginesPerNC), fmt.Sprintf("a %s NeuronCore has %d DMA engines", gen, geo.DMAEnginesPerNC)); err != nil {
		return sw, false, err
	}
	switch {
	case sw.Algo == enc.Hier && !s.groupSize.set && nodes == 1:
		return sw, false, fmt.Errorf("--algo hier needs --group-size (ranks per node), or --nodes")
	case sw.Algo != enc.Hier && s.groupSize.set:
		return sw, false, fmt.Errorf("--group-size %d: it applies to --algo hier only, not %s", s.groupSize.v, sw.Algo)
	}
	switch units.Word(s.mode) {
	case "timing":
		timingOnly = true
	case "functional":
	default:
		return sw, false, fmt.Errorf("--mode %q: accepted words are timing|functional", s.mode)
	}
	sw.Options = enc.Options{Chunks: s.chunks.int(), GroupSize: s.groupSize.int(), Channels: s.channels.int()}
	switch units.Word(s.ringOrder) {
	case "links", "ranks":
	default:
		if sw.Options.RingOrder, err = cluster.ParseOrder(s.ringOrder); err != nil {
			return sw, false, fmt.Errorf("--ring-order %q: links, ranks or the ranks in order: %w", s.ringOrder, err)
		}
	}
	return sw, timingOnly, nil
}

// sizes returns the sizes of a sweep on ranks ranks and, in functional
// mode, checks the memory the largest needs against the limit.
func (s *sweepFlags) sizes(sw cluster.Sweep, ranks int, minB, maxB, factor, step int64, timingOnly bool, limit memlimit.Limit) ([]int64, error) {
	sizes, err := nccom.SizesIn(minB, maxB, factor, step, sw.Op.SizeAlign(sw.Dtype.Size(), ranks), nccom.Flags)
	if err != nil || timingOnly {
		return sizes, err
	}
	need, err := cluster.FunctionalMemory(sw.Op, sw.Algo, ranks, sw.Dtype, sizes, sw.Options)
	if err != nil {
		return nil, err
	}
	largest := sizes[len(sizes)-1]
	what := fmt.Sprintf("--mode functional: %s of %s on %d ranks", sw.Op, memlimit.Human(uint64(largest)), ranks)
	if err := limit.Check(what, need); err != nil {
		return nil, fmt.Errorf("%w; use --mode timing, smaller sizes or fewer devices, or raise --mem-limit", err)
	}
	return sizes, nil
}

// jsonPath is where --json writes the report of counts[i] (every node's
// devices) on nodes nodes: the path given when there is one count; with
// several, one file per count, the count inserted before the extension
// (report.json → report-2devices.json), and over several nodes the nodes
// and a node's devices (2 nodes of 4: report-2x4devices.json), so the
// files of runs of other node counts are not confused with them.
func jsonPath(path string, counts []int, nodes, i int) string {
	if len(counts) == 1 {
		return path
	}
	ext := filepath.Ext(path)
	if nodes > 1 {
		return fmt.Sprintf("%s-%dx%ddevices%s", strings.TrimSuffix(path, ext), nodes, counts[i]/nodes, ext)
	}
	return fmt.Sprintf("%s-%ddevices%s", strings.TrimSuffix(path, ext), counts[i], ext)
}

// devicesLabel names n devices (every node's) on nodes nodes: "8
// devices", over several nodes "8 devices (2 nodes × 4)".
func devicesLabel(n, nodes int) string {
	l := units.Plural(int64(n), "device", "devices")
	if nodes > 1 {
		l += fmt.Sprintf(" (%d nodes × %d)", nodes, n/nodes)
	}
	return l
}

// sweepTitle is a sweep's plot title: what base (product, collective,
// data type, model) ran on — the named system (label, "" without
// --system) and, over several nodes, how many, joined by EFA — so the
// plots of two runs on other systems or node counts cannot be confused:
// "trn2-48xl (16 devices) × 2 nodes over EFA: Trn2 all_reduce, fp32
// (aware model)".
func sweepTitle(label string, nodes int, base string) string {
	switch {
	case nodes > 1 && label != "":
		return fmt.Sprintf("%s × %d nodes over EFA: %s", label, nodes, base)
	case nodes > 1:
		return fmt.Sprintf("%d nodes over EFA: %s", nodes, base)
	case label != "":
		return label + ": " + base
	}
	return base
}

// isTTY reports whether w is a terminal.
func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && progress.IsTerminal(f)
}

func newFabricCalibrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "calibrate",
		Short: "Fit the collectives' parameters to the published nccom-test tables and print the error per size",
		Long: `calibrate runs the two published tables the project fits to (trainium-facts
§5.3 (a), a 2-rank AllReduce, and (d), an 8-rank AllGather) on the model with
every DMA engine count 1..16, each with its best launch cost, and prints the
best fit with the published and modelled time of every size and the
algorithm the model ran. The result is what collective.Calibrated returns; a
test keeps the two equal. A table whose fit fixes the algorithm (ring for
(a)) is also run, with the fitted parameters, under the runtime's policy —
what fabric sweep runs by default on that system — and its error is printed
beside the fit's.`,
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
				fmt.Fprintf(out, "%s — %s, %s: %s × %s, %s\n", tg.Name, tg.Source, tg.Generation.Product(), units.Plural(int64(tg.Devices), "device", "devices"), units.Plural(int64(tg.RanksPer), "rank", "ranks"), tg.Op)
				fmt.Fprintf(out, "fit (algorithm %s): %d DMA engines per rank, launch cost %v, RMS error %.1f%%\n", tg.Algo, f.Engines, f.LaunchCost, 100*f.RMS)
				printCalibrationRows(out, f.Rows)
				if f.Default != nil {
					fmt.Fprintf(out, "the same parameters with the runtime's policy (--algo auto, what `fabric sweep` runs on this system): RMS error %.1f%%\n", 100*f.DefaultRMS)
					printCalibrationRows(out, f.Default)
				}
			}
			return nil
		},
	}
}

// printCalibrationRows prints a fit's rows: size, published and modelled
// time, error, and the algorithm the model ran.
func printCalibrationRows(out io.Writer, rows []calibrate.Row) {
	fmt.Fprintf(out, "%12s %14s %14s %8s %10s\n", "size(B)", "published(us)", "model(us)", "error", "algorithm")
	for _, r := range rows {
		fmt.Fprintf(out, "%12d %14.2f %14.2f %+7.1f%% %10s\n", r.Size, us(r.Published), us(r.Model), 100*r.Error, r.Algo)
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
