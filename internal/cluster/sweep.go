package cluster

import (
	"fmt"
	"slices"
	"strconv"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"

	"github.com/neuronsim/neuronsim/internal/progress"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// Sweep is a collective run over sizes, nccom-test's -b/-e/-f.
type Sweep struct {
	Op       enc.Op
	Algo     enc.Algo
	Dtype    enc.Dtype
	Sizes    []int64
	Options  enc.Options
	Seed     uint64        // functional mode: the first size's input seed (then +1 per size)
	Progress *progress.Bar // nil: none; it moves within a size as the size's descriptors are fetched
}

// Sweep runs one collective per size on every rank and returns nccom-test's
// report; in functional mode each result is checked against the CPU
// reference. The report's Extra names the system and holds, under
// LinkUsageKey, the link use of every size (LinkUsage): the fabric's link
// counters over each collective, by class; and under RingOrderKey, where
// its rings ran in an order worth telling, that order (NoteRingOrder); and
// under SpinesKey, on a system of nodes whose spines carried nothing, why
// (SpinesNote); under FoldsKey, the sizes whose times are upper bounds
// (FoldsNote); and under OvercommitKey, in the free model, the sizes whose
// links were offered more than their bandwidth (OvercommitNote).
//
// A size that fails (a collective that does not finish in the device time
// it may take, a link down) stops the sweep: the error names the size, and
// the report of the sizes done before it, its notes made of them, comes
// with it, saying under IncompleteKey where and why it stopped (the
// sizes after it are not run). A failure outside a size (the link
// counters) returns no report.
func (c *Cluster) Sweep(sw Sweep) (*nccom.Report, error) {
	ranks := c.Ranks()
	given := sw.Options.RingOrder
	sw.Options = c.cfg.CollectiveOptions(sw.Options)
	rep := &nccom.Report{Op: sw.Op.String(), Ranks: ranks, Extra: map[string]any{
		"arch": c.cfg.Generation.String(), "product": hwarch.ProductOfDevice(c.System.Device(0).Config().DeviceID), "devices": c.cfg.Devices, "topology": c.System.Topology().Kind.String(),
		"model": c.System.Params().Model.String(), "mode": c.Mode(), "switch": c.cfg.Switch.String(),
	}}
	nodes, nics := 1, 0
	if so := c.System.Topology().Scale; so != nil {
		nodes, nics = so.Nodes, so.NICs
		rep.Extra["nodes"], rep.Extra["efa_network"] = so.Nodes, so.Network.String()
		if e := so.Params(); so.Spines > 1 && e.SpinesIdle(so.Nodes, so.NodeDevices) == "" {
			rep.Extra["efa_routing"] = e.Routing.String() // which spine a write takes
		}
	}
	usage := make(LinkUsage, 0, len(sw.Sizes))
	var resolution uint64 // the largest of the rows' Result.ResolutionPS
	if sw.Progress != nil {
		// A size's bar moves as its descriptors are fetched: a 1 GiB
		// collective on thousands of devices takes minutes.
		prev := c.Exec.Progress
		c.Exec.Progress = func(fetched, total int) { sw.Progress.Within(float64(fetched) / float64(total)) }
		defer func() { c.Exec.Progress = prev }()
	}
	for i, size := range sw.Sizes {
		before := c.System.Counters()
		row, res, err := c.Collective(sw.Op, sw.Algo, sw.Dtype, size, sw.Seed+uint64(i), sw.Options)
		if err != nil {
			rep.Extra[IncompleteKey] = IncompleteNote(size, len(sw.Sizes)-i-1, err)
			c.noteSweep(rep, sw, given, usage, resolution, nodes, nics)
			return rep, err
		}
		rep.Rows = append(rep.Rows, row)
		links, err := c.System.Counters().Since(before)
		if err != nil {
			return nil, err
		}
		use, err := linkUse(c.System.Topology(), links, size, res.TimePS)
		if err != nil {
			return nil, err
		}
		usage = append(usage, use)
		resolution = max(resolution, res.ResolutionPS)
		sw.Progress.Step()
	}
	c.noteSweep(rep, sw, given, usage, resolution, nodes, nics)
	sw.Progress.Done()
	return rep, nil
}

// IncompleteKey is the report's Extra key of IncompleteNote: in the JSON
// "neuronsim_incomplete", in the text "# incomplete: …" above the table.
// A report without it ran every size asked for.
const IncompleteKey = "incomplete"

// Incomplete reports whether rep is the report of a sweep stopped by a
// size that failed: it holds the sizes before it (IncompleteKey).
func Incomplete(rep *nccom.Report) bool {
	if rep == nil {
		return false
	}
	_, ok := rep.Extra[IncompleteKey]
	return ok
}

// IncompleteNote says where and why a sweep stopped: at size, which
// failed with err, with more sizes after it not run.
func IncompleteNote(size int64, more int, err error) string {
	after := ""
	if more > 0 {
		after = fmt.Sprintf(" (%s after it not run)", units.Plural(int64(more), "size", "sizes"))
	}
	return fmt.Sprintf("the sweep stopped at %d bytes%s, which failed: %v; the rows are the sizes before it", size, after, err)
}

// noteSweep adds to a sweep's report the notes made of its rows: the link
// usage of each, the spines', folds' and overcommitted links' notes, the
// time resolution, the flat ring's and ring order's and auto's notes.
func (c *Cluster) noteSweep(rep *nccom.Report, sw Sweep, given []int, usage LinkUsage, resolution uint64, nodes, nics int) {
	ranks := c.Ranks()
	rep.Extra[LinkUsageKey] = usage
	if n := SpinesNote(c.System.Topology().Scale, usage); n != "" {
		rep.Extra[SpinesKey] = n
	}
	if n := FoldsNote(usage); n != "" {
		rep.Extra[FoldsKey] = n
	}
	if n := OvercommitNote(c.System.Params().Model, usage); n != "" {
		rep.Extra[OvercommitKey] = n
	}
	if t := c.System.Topology(); t.Scale != nil {
		rep.Extra[LinkClassesKey] = t.ClassLegend()
	}
	rep.Extra[TimeResolutionKey] = TimeResolutionNote(resolution)
	NoteFlatRing(rep, nodes, sw.Options.Channels, nics)
	NoteRingOrder(rep, c.cfg.RingOrder(), given, c.cfg.RankOrderRings)
	if policy := PolicyFor(c.cfg.Generation); sw.Algo == enc.Auto {
		if policy.FlatRing {
			NoteAutoFlatRing(rep, nodes)
		}
		NoteAutoRingNotPow2(rep, ranks, policy)
		NoteAutoRDHTwoRanks(rep, ranks)
	}
}

// LinkClassesKey is the report's Extra key of what each class of link of
// the link table is on the system swept (fabric.Topology.ClassLegend),
// set for a system of several nodes, whose EFA classes are named by their
// ends (fabric.ClassLabel).
const LinkClassesKey = "link_classes"

// TimeResolutionKey is the report's Extra key of TimeResolutionNote.
const TimeResolutionKey = "time_resolution"

// TimeResolutionNote says how late a report's times may be: a row's time
// is when the host saw rank 0 done, and rank 0 finished at most ps before
// (collective.Result.ResolutionPS, the largest of the rows'): the last
// poll that found it running, its status reads crossing PCIe, and the
// sleep after it. A time step smaller than this between two rows is not
// resolved.
func TimeResolutionNote(ps uint64) string {
	return fmt.Sprintf("%s µs: each time is when the host saw rank 0 done, which it was at most this much earlier (the host polls its status over PCIe)", strconv.FormatFloat(float64(ps)/1e6, 'f', -1, 64))
}

// FlatRingKey is the report's Extra key of FlatRingNote, set when a ring
// ran over several nodes (NoteFlatRing).
const FlatRingKey = "flat_ring"

// NoteFlatRing notes in the Extra of rep, a report of a collective over
// nodes nodes of nics EFA NICs each with channels channels
// (enc.Options.Channels), how its rings across nodes ran, when it ran over
// several nodes and one of its rows is a ring: the channel count under
// ChannelsKey, and FlatRingNote too when they were fewer than the NICs
// (the runtime runs one per NIC). fabric sweep's reports and sweep merge's
// grouped ones take it.
func NoteFlatRing(rep *nccom.Report, nodes, channels, nics int) {
	if !ringAcrossNodes(rep, nodes) {
		return
	}
	channels = max(channels, 1)
	note(rep, ChannelsKey, channels)
	if channels < nics {
		note(rep, FlatRingKey, FlatRingNote)
	}
}

// ChannelsKey is the report's Extra key of a flat ring's channel count
// across nodes (NoteFlatRing).
const ChannelsKey = "channels"

// FlatRingNote says what a flat ring's row across nodes is worth when it
// ran fewer channels than a node has EFA NICs (--channels below the
// default): the Neuron runtime runs one per NIC (trainium-facts §5.1), so
// where the NICs are the bottleneck its time is up to NICs/channels above
// the runtime's (docs/fabric.md §EFA).
const FlatRingNote = "fewer ring channels across the nodes than a node has EFA NICs, where the runtime runs one per NIC: where the NICs are the bottleneck, this time is up to NICs/channels above the runtime's (the default --channels runs one per NIC; docs/fabric.md §EFA)"

// AutoFlatRingKey is the report's Extra key of AutoFlatRingNote.
const AutoFlatRingKey = "auto_flat_ring"

// AutoFlatRingNote says where auto's flat ring across nodes on Trn1 starts
// and that the size is the model's choice: the runtime documents a flat
// ring for "large messages only" (trainium-facts §5.1) and no size.
var AutoFlatRingNote = fmt.Sprintf("auto ran the rows of algorithm ring as a flat ring across the nodes, as the Neuron runtime does on Trn1 for large messages; it says no size, and the %d MiB where auto starts it (enc.DefaultFlatRingMin) is this model's choice (docs/fabric.md §EFA): --algo hier runs the hierarchical all-reduce to compare", enc.DefaultFlatRingMin>>20)

// NoteAutoFlatRing notes AutoFlatRingNote in the Extra of rep, a report of
// a collective whose algorithm auto chose under a policy with the flat
// ring (PolicyFor), when it ran over several nodes and one of its rows is
// a ring.
func NoteAutoFlatRing(rep *nccom.Report, nodes int) {
	if ringAcrossNodes(rep, nodes) {
		note(rep, AutoFlatRingKey, AutoFlatRingNote)
	}
}

// AutoRingKey is the report's Extra key of NoteAutoRingNotPow2's note.
const AutoRingKey = "auto_ring"

// NoteAutoRingNotPow2 notes in the Extra of rep, a report of a collective
// whose algorithm auto chose with policy p on ranks ranks, that its ring
// rows below p.RDHMax are the runtime's choice for a rank count that is
// not a power of two (enc.Policy.Choose: RDH needs one), where auto goes
// from mesh straight to ring: on the 144 ranks of a Trn3 Gen2 UltraServer
// the 1 MiB row is then many times the 256 KiB one.
func NoteAutoRingNotPow2(rep *nccom.Report, ranks int, p enc.Policy) {
	if ranks <= 0 || ranks&(ranks-1) == 0 {
		return
	}
	if !slices.ContainsFunc(rep.Rows, func(r nccom.Row) bool { return r.Algorithm == enc.Ring.String() && r.Size <= p.RDHMax }) {
		return
	}
	note(rep, AutoRingKey, fmt.Sprintf("from %s auto ran ring, not rdh: the runtime's recursive halving-doubling needs a power-of-two rank count and %d ranks are not one, so auto goes from mesh (below %s) straight to ring; --algo mesh runs mesh on to compare",
		nccom.FormatSize(p.MeshMax), ranks, nccom.FormatSize(p.MeshMax)))
}

// AutoRDHKey is the report's Extra key of NoteAutoRDHTwoRanks's note.
const AutoRDHKey = "auto_rdh"

// NoteAutoRDHTwoRanks notes in the Extra of rep, a report of a collective
// whose algorithm auto chose on ranks ranks, that its rdh rows on two
// ranks are doubtful: every transfer then crosses the two reduction
// half-domains and takes only the two inter-RDH DMA engines, and the
// published 2-rank Trn1 table the calibration fits (trainium-facts §5.3
// (a)) is up to twice as fast there (docs/timing-model.md §Calibration).
func NoteAutoRDHTwoRanks(rep *nccom.Report, ranks int) {
	if ranks != 2 || !slices.ContainsFunc(rep.Rows, func(r nccom.Row) bool { return r.Algorithm == enc.RDH.String() }) {
		return
	}
	const why = "auto ran rdh on 2 ranks, where every transfer crosses the two reduction half-domains and takes only the two inter-RDH DMA engines: "
	if rep.Op != enc.AllReduce.String() {
		// The published table is of the all-reduce: say so rather than
		// hold this op to it.
		note(rep, AutoRDHKey, why+"the published 2-rank Trn1 figures the calibration fits are of the all-reduce only (trainium-facts §5.3 (a)), which they show up to twice as fast as rdh runs it at these sizes (docs/timing-model.md §Calibration); this "+rep.Op+" runs rdh the same way; --algo ring runs the ring")
		return
	}
	note(rep, AutoRDHKey, why+"the published 2-rank Trn1 all-reduce (trainium-facts §5.3 (a)) is up to twice as fast at these sizes (docs/timing-model.md §Calibration); --algo ring runs the ring the calibration fits")
}

// ringAcrossNodes reports whether rep, a report of a collective over nodes
// nodes, ran a flat ring across several nodes: one of its rows is a ring
// and its op one whose ring is a flat ring (enc.ChannelsApply; not a
// permute, whose ring is one shift to its peers).
func ringAcrossNodes(rep *nccom.Report, nodes int) bool {
	if op, err := enc.ParseOp(rep.Op); err == nil && !enc.ChannelsApply(op, enc.Ring) {
		return false // a permute's ring is no flat ring: it runs no channels, and auto did not choose it
	}
	return nodes > 1 && slices.ContainsFunc(rep.Rows, func(r nccom.Row) bool { return r.Algorithm == enc.Ring.String() })
}

// note sets key to v in rep's Extra, making the Extra if it has none.
func note(rep *nccom.Report, key string, v any) {
	if rep.Extra == nil {
		rep.Extra = map[string]any{}
	}
	rep.Extra[key] = v
}

// Collective runs one collective of size bytes on every rank — timing
// only, or functionally with the random inputs of seed checked against the
// CPU reference (Check), as the cluster's mode says — and returns
// nccom-test's row of it and the run's result. opt are the schedule's
// options as they are (Sweep gives it CollectiveOptions'); a failed run's
// error names the devices, ranks and size.
func (c *Cluster) Collective(op enc.Op, algo enc.Algo, d enc.Dtype, size int64, seed uint64, opt enc.Options) (nccom.Row, collective.Result, error) {
	ranks := c.Ranks()
	sch, err := enc.Build(op, algo, ranks, size, d.Size(), opt)
	if err != nil {
		return nccom.Row{}, collective.Result{}, err
	}
	var res collective.Result
	if c.cfg.TimingOnly {
		res, err = c.Run(sch, d)
	} else {
		res, err = c.Check(sch, d, seed, opt)
	}
	if err != nil {
		return nccom.Row{}, res, fmt.Errorf("%d devices, %d ranks, %d bytes: %w", c.cfg.Devices, ranks, size, err)
	}
	row, err := nccom.NewRow(op.String(), ranks, size, d.Size(), d.String(), res.TimePS, sch.Algo.String())
	return row, res, err
}

// Mode is "timing" or "functional".
func (c *Cluster) Mode() string {
	if c.cfg.TimingOnly {
		return "timing"
	}
	return "functional"
}

// BufferNeed returns the per-rank buffer bytes the largest of the sizes
// needs (collective.LayoutOf's End), checking that every size builds
// (enc.Count: Build's checks, the schedule not built).
func BufferNeed(op enc.Op, algo enc.Algo, ranks int, d enc.Dtype, sizes []int64, opt enc.Options) (uint64, error) {
	var need uint64
	for _, size := range sizes {
		sch, _, err := enc.Count(op, algo, ranks, size, d.Size(), opt, nil) // the schedule's sizes, not its steps
		if err != nil {
			return 0, err
		}
		need = max(need, collective.LayoutOf(sch, 0).End)
	}
	return need, nil
}

// FunctionalMemory estimates the host memory, in bytes, that running the
// largest of the sizes functionally (real payloads, checked against the CPU
// reference, as Check does) holds at its peak, so that a run can be refused
// before it starts rather than die of it. Per rank it counts the device
// memory pages the buffers touch (collective.LayoutOf's End: input, output,
// scratch), the host's copy of the random input, the output read back and
// the reference output; once, the staging of one buffer's 32-bit words on
// its way through BAR4 and the writes in flight on the fabric (at most one
// input per rank). The sum is doubled for the Go collector's headroom
// (GOGC=100 lets the heap grow to twice what is live).
//
// Only the largest size of each algorithm the sweep uses is counted (see
// Largest; enc.Count, never building the schedule): what a schedule holds
// grows with its size.
func FunctionalMemory(op enc.Op, algo enc.Algo, ranks int, d enc.Dtype, sizes []int64, opt enc.Options) (uint64, error) {
	var peak uint64
	for _, rep := range Largest(op, algo, ranks, sizes, opt) {
		sch, _, err := enc.Count(op, rep.Algo, ranks, rep.Size, d.Size(), opt, nil) // the schedule's sizes, not its steps
		if err != nil {
			return 0, err
		}
		r := uint64(ranks)
		in, out := uint64(sch.InputBytes), uint64(sch.OutputBytes)
		live := r*collective.LayoutOf(sch, 0).End + r*(in+2*out) + max(in, out) + r*in
		peak = max(peak, 2*live)
	}
	return peak, nil
}

// AlgoSize is an algorithm and a size.
type AlgoSize struct {
	Algo enc.Algo
	Size int64
}

// Largest returns, for each algorithm a sweep of the sizes runs (algo, or
// for enc.Auto what the options' policy chooses per size), its largest
// size, in the order the algorithms first appear. For one algorithm the
// buffers and memory a schedule needs grow with its size, so these few
// schedules bound what the whole sweep needs without building every one
// (a sweep may have 10000 points).
func Largest(op enc.Op, algo enc.Algo, ranks int, sizes []int64, opt enc.Options) []AlgoSize {
	pol := opt.Policy
	if pol == (enc.Policy{}) {
		pol = enc.DefaultPolicy()
	}
	var out []AlgoSize
	at := map[enc.Algo]int{}
	for _, size := range sizes {
		a := algo
		if a == enc.Auto {
			a = pol.ChooseIn(op, size, ranks, opt.GroupSize)
		}
		i, ok := at[a]
		if !ok {
			at[a] = len(out)
			out = append(out, AlgoSize{a, size})
			continue
		}
		out[i].Size = max(out[i].Size, size)
	}
	return out
}
