package cluster

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// LinkUsageKey is the key of a sweep report's Extra that holds its
// LinkUsage: in the JSON report "neuronsim_link_usage", one entry per
// result, in the results' order.
const LinkUsageKey = "link_usage"

// LinkClass is the use of one class of links (the directed links of one
// fabric Link.Group, named by fabric.ClassLabel) during one collective
// (docs/fabric.md §Link utilisation).
type LinkClass struct {
	Class string `json:"class"`
	Links int    `json:"links"` // directed links of the class
	Bytes uint64 `json:"bytes"` // bytes all of them carried
	// BusiestLink names the class's busiest link and BusiestBusyPS is the
	// time it was busy, ps.
	BusiestLink   string `json:"busiest_link"`
	BusiestBusyPS uint64 `json:"busiest_busy_ps"`
	// Utilisation is the busiest link's busy time over the collective's
	// elapsed virtual time; Mean the class's mean over all its links.
	// Above 1 only in the free model (the load offered, not carried).
	Utilisation float64 `json:"utilisation"`
	Mean        float64 `json:"mean_utilisation"`
}

// SizeLinks is the link use of one size of a sweep: every class of link,
// the busiest first, and the bottleneck (the busiest class, "" when no
// link carried anything).
type SizeLinks struct {
	Size       int64       `json:"size"`
	ElapsedPS  uint64      `json:"elapsed_ps"`
	Bottleneck string      `json:"bottleneck"`
	Classes    []LinkClass `json:"classes"`
	// FoldedLinks counts the directed links whose queue of chunks on
	// their way was folded during the size (fabric.LinkCounter.Folds):
	// the control writes through them waited longer than their FIFO wait,
	// so the size's time is not the model's exact one (FoldsNote).
	FoldedLinks int `json:"folded_links,omitempty"`
}

// LinkUsage is a sweep's link use, one entry per size.
type LinkUsage []SizeLinks

// linkUse is the link use of one collective: the counters c over it
// (fabric.Counters.Since), elapsed ps long, on topology t.
func linkUse(t *fabric.Topology, c fabric.Counters, size int64, elapsed uint64) (SizeLinks, error) {
	classes, err := t.Classes(c)
	if err != nil {
		return SizeLinks{}, err
	}
	out := SizeLinks{Size: size, ElapsedPS: elapsed}
	for _, l := range c {
		if l.Folds > 0 {
			out.FoldedLinks++
		}
	}
	for _, u := range classes {
		out.Classes = append(out.Classes, LinkClass{Class: fabric.ClassLabel(u.Group), Links: u.Links, Bytes: u.Bytes,
			BusiestLink: t.LinkName(u.Busiest), BusiestBusyPS: u.MaxBusy,
			Utilisation: u.Utilisation(elapsed), Mean: u.MeanUtilisation(elapsed)})
	}
	// The busiest first; on a tie, the class whose links come first.
	slices.SortStableFunc(out.Classes, func(a, b LinkClass) int { return cmp.Compare(b.BusiestBusyPS, a.BusiestBusyPS) })
	if len(out.Classes) > 0 && out.Classes[0].BusiestBusyPS > 0 {
		out.Bottleneck = out.Classes[0].Class
	}
	return out, nil
}

// SpinesKey is the report's Extra key of the note that the EFA network's
// spines carried no traffic (SpinesNote): in the JSON report
// "neuronsim_spines".
const SpinesKey = "spines"

// SpinesNote says why the spines of so, the EFA network of a system of
// nodes, carried nothing over a sweep whose link use is u, so that no
// one reads leaf-spine's 0 % (or its absence) as spines to spare: the
// network has none (its NICs fit one leaf), or it is rail-optimised with
// every rail on one leaf (writes between nodes never leave their rail's
// leaf), or the collective's writes between nodes all stayed within a
// leaf. It returns "" when so is nil (one node) or some size sent bytes
// over a spine (docs/fabric.md §EFA, "Idle spines").
func SpinesNote(so *fabric.ScaleOut, u LinkUsage) string {
	if so == nil {
		return ""
	}
	e := so.Params()
	if so.Spines == 0 {
		return fmt.Sprintf("none: one leaf of %d ports holds all %d NICs (%d nodes × %d), so no write between nodes crosses a spine; the link table has no leaf-spine class (docs/fabric.md §EFA)",
			e.LeafPorts, so.Nodes*so.NICs, so.Nodes, so.NICs)
	}
	for _, s := range u {
		for _, c := range s.Classes {
			if c.Class == fabric.ClassLabel("efa-spine") && c.Bytes > 0 {
				return ""
			}
		}
	}
	if so.Network == fabric.RailOptimised && so.Nodes <= e.LeafPorts {
		return fmt.Sprintf("they carry no traffic in this shape: rail-optimised, each rail's %d nodes fit one leaf of %d ports and a write between nodes leaves through the NIC of its destination's rail, so it never leaves that rail's leaf; leaf-spine's 0 %% says nothing of the %d spines' capacity (docs/fabric.md §EFA)",
			so.Nodes, e.LeafPorts, so.Spines)
	}
	return fmt.Sprintf("they carried no traffic: every write between nodes stayed within one leaf of %d ports; leaf-spine's 0 %% says nothing of the %d spines' capacity (docs/fabric.md §EFA)", e.LeafPorts, so.Spines)
}

// OvercommitKey is the report's Extra key of OvercommitNote: in the JSON
// report "neuronsim_overcommitted".
const OvercommitKey = "overcommitted"

// OvercommitNote says, for a sweep in the contention-free model whose link
// use is u, where a link was offered more than its bandwidth — the free
// model lets the writes of different devices overlap on a link (docs/
// fabric.md §Models, "Contention-free"), so such a size's time is below
// what its links can carry — naming the most offered link class, its
// load and its size; "" when no link was (and in the aware model, whose
// links carry at most their bandwidth).
func OvercommitNote(m fabric.Model, u LinkUsage) string {
	if m != fabric.Free {
		return ""
	}
	var worst LinkClass
	var size int64
	var sizes []string
	for _, s := range u {
		over := false
		for _, c := range s.Classes {
			if c.Utilisation > 1 {
				over = true
				if c.Utilisation > worst.Utilisation {
					worst, size = c, s.Size
				}
			}
		}
		if over {
			sizes = append(sizes, strconv.FormatInt(s.Size, 10))
		}
	}
	if len(sizes) == 0 {
		return ""
	}
	return fmt.Sprintf("the times of size(s) %s are below what the links can carry: the contention-free model lets the writes of different devices overlap on a link, and up to %.1f %% of a link's bandwidth was offered (%s, size %d); the aware model shares the links (--model aware; docs/fabric.md §Models)",
		strings.Join(sizes, ", "), 100*worst.Utilisation, worst.BusiestLink, size)
}

// FoldsKey is the report's Extra key of FoldsNote: in the JSON report
// "neuronsim_folds".
const FoldsKey = "folds"

// FoldsNote says which sizes of a sweep whose link use is u are not the
// model's exact times because a link's queue of chunks on their way
// passed fabric.MaxArrivals runs and was folded (the control writes
// behind it waited for every chunk booked before them, longer than their
// FIFO wait, and so did what waited for them), or "" when none was
// (docs/fabric.md §Models, "Control writes").
func FoldsNote(u LinkUsage) string {
	var sizes []string
	links := 0
	for _, s := range u {
		if s.FoldedLinks > 0 {
			sizes = append(sizes, strconv.FormatInt(s.Size, 10))
			links = max(links, s.FoldedLinks)
		}
	}
	if len(sizes) == 0 {
		return ""
	}
	return fmt.Sprintf("the times of size(s) %s are approximate: on up to %d link(s) more than %d runs of chunks were on their way at once and were folded into one, so the control writes behind them waited for every chunk booked before them, longer than the links' FIFO order would have them wait (docs/fabric.md §Models, \"Control writes\")",
		strings.Join(sizes, ", "), links, fabric.MaxArrivals)
}

// LinkUsageOf returns the link use a sweep report holds (Cluster.Sweep
// records it), or false.
func LinkUsageOf(rep *nccom.Report) (LinkUsage, bool) {
	if rep == nil {
		return nil, false
	}
	u, ok := rep.Extra[LinkUsageKey].(LinkUsage)
	return u, ok
}

// WithoutLinkUsage returns the report without its link use: what
// nccom-test's table prints (the link use is the table WriteLinkTable
// prints after it; WriteJSON writes it whole). The rows are shared.
func WithoutLinkUsage(rep *nccom.Report) *nccom.Report {
	if _, ok := rep.Extra[LinkUsageKey]; !ok {
		return rep
	}
	cp := *rep
	cp.Extra = maps.Clone(rep.Extra)
	delete(cp.Extra, LinkUsageKey)
	return &cp
}

// WriteTable prints the link use as a compact table, one line per size:
// the bottleneck class with its busiest link's utilisation and the class's
// mean, then the next busiest class with its busiest link's utilisation
// ("-" where there is none). model names the network model (the free
// model's utilisation is the load offered, and may pass 100 %).
func (u LinkUsage) WriteTable(w io.Writer, model string) error {
	head := [...]string{"size(B)", "bottleneck", "util(%)", "mean(%)", "next", "util(%)"}
	cells := [][]string{head[:]}
	pct := func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) }
	for _, s := range u {
		line := []string{strconv.FormatInt(s.Size, 10), "-", "-", "-", "-", "-"}
		if s.Bottleneck != "" {
			c := s.Classes[0]
			line[1], line[2], line[3] = c.Class, pct(c.Utilisation), pct(c.Mean)
			if len(s.Classes) > 1 {
				line[4], line[5] = s.Classes[1].Class, pct(s.Classes[1].Utilisation)
			}
		}
		cells = append(cells, line)
	}
	bw := bufio.NewWriter(w)
	note := ""
	if model == fabric.Free.String() {
		note = " (the load offered: may pass 100)"
	}
	fmt.Fprintf(bw, "# link utilisation (%s model): bottleneck = the busiest class of link; util = its busiest link's busy time / the collective's time%s; mean = over the class's links; next = the next busiest class\n", model, note)
	nccom.WriteColumns(bw, cells)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cluster: writing the link table: %w", err)
	}
	return nil
}

// WriteTables prints a sweep report as nccom-test's table and, when it
// holds its link use, the link table after it.
func WriteTables(w io.Writer, rep *nccom.Report) error {
	if err := WithoutLinkUsage(rep).WriteTable(w); err != nil {
		return err
	}
	u, ok := LinkUsageOf(rep)
	if !ok {
		return nil
	}
	model, _ := rep.Extra["model"].(string)
	return u.WriteTable(w, model)
}
