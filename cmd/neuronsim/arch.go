package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
)

func newArchCommand() *cobra.Command {
	gen := defaultArch
	var family hwarch.SwitchFamily
	var asJSON, diff bool
	cmd := &cobra.Command{
		Use:   "arch [--arch A] [--switch v1|none] [--json] | arch --diff A B",
		Short: "Print the runtime's arch tables (tdrv, soc, khal) and the geometry of a generation",
		Example: "  neuronsim arch --arch cayman\n" +
			"  neuronsim arch --arch mariana --switch v1 --json\n" +
			"  neuronsim arch --diff cayman mariana",
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if diff {
				if len(args) != 2 {
					return fmt.Errorf("arch --diff takes two generations, got %s", units.Plural(int64(len(args)), "argument", "arguments"))
				}
				if cmd.Flags().Changed("arch") {
					return fmt.Errorf("arch --diff compares the two generations it is given (%s, %s); --arch %s would be a third: leave it out", args[0], args[1], gen.String())
				}
				a, b, err := diffTablesFor(cmd, args[0], args[1], family)
				if err != nil {
					return err
				}
				if asJSON {
					return writeArchDiffJSON(out, a, b)
				}
				return writeArchDiff(out, a, b)
			}
			if len(args) != 0 {
				return fmt.Errorf("arch takes no arguments without --diff (use --arch); got %q", args)
			}
			sw, err := switchFor(cmd, "", family, gen)
			if err != nil {
				return err
			}
			t, err := rtarch.For(gen, rtarch.Options{Switch: sw})
			if err != nil {
				return err
			}
			if asJSON {
				return writeArchJSON(out, t)
			}
			return writeArchTable(out, t)
		},
	}
	cmd.Flags().Var(&gen, "arch", "generation: sunda|cayman|mariana, v2|v3|v4, trn1|inf2|trn2|trn3 or 2|3|4")
	addSwitchFlag(cmd, &family)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (keys are the seed leaf names; an absent feature is null; with --diff, {key: {A: value, B: value}} after \"switch\", each side's switch family)")
	cmd.Flags().BoolVar(&diff, "diff", false, "print only the properties that differ between two generations")
	return cmd
}

// diffTablesFor returns the tables of the two generations words a and b
// name, each with the switch family --switch gives where it changes
// something (rtarch.CheckSwitch) and the generation's default otherwise
// (--switch none diffs mariana without the switch against cayman, as
// cayman is). --switch that changes nothing on either is refused, as
// switchFor refuses it for one generation.
func diffTablesFor(cmd *cobra.Command, a, b string, family hwarch.SwitchFamily) (ta, tb *rtarch.Tables, err error) {
	var gens [2]hwarch.Generation
	var errs [2]error
	for i, word := range []string{a, b} {
		if gens[i], err = hwarch.ParseGeneration(word); err != nil {
			return nil, nil, err
		}
		_, errs[i] = switchFor(cmd, "", family, gens[i])
	}
	if errs[0] != nil && errs[1] != nil {
		if gens[0] == gens[1] {
			return nil, nil, errs[0]
		}
		return nil, nil, fmt.Errorf("%w; and %w", errs[0], errors.Unwrap(errs[1]))
	}
	var ts [2]*rtarch.Tables
	for i, g := range gens {
		sw := family
		if !cmd.Flags().Changed("switch") || errs[i] != nil {
			sw = hwarch.DefaultSwitchFamily(g)
		}
		if ts[i], err = rtarch.For(g, rtarch.Options{Switch: sw}); err != nil {
			return nil, nil, err
		}
	}
	return ts[0], ts[1], nil
}

var groupTitles = map[string]string{
	"geometry": "geometry (hw/arch)",
	"tdrv":     "tdrv_arch_ops: device-driver geometry (seed 003)",
	"soc":      "soc_struct_t: fabric geometry (seed 000)",
	"khal":     "kaena_khal: register offsets (seed 001)",
}

func symbolColumn(p rtarch.Property) string {
	if p.Slot >= 0 {
		return fmt.Sprintf("%s @+%d", p.Symbol, p.Slot)
	}
	return p.Symbol
}

// writeArchTable prints every property grouped by table.
func writeArchTable(w io.Writer, t *rtarch.Tables) error {
	fmt.Fprintf(w, "arch %s (%d, %s, %s), switch %s\n", t.Generation, uint8(t.Generation),
		t.Generation.KernelName(), t.Generation.Product(), t.Options.Switch)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	group := ""
	for _, p := range rtarch.Properties() {
		if p.Group != group {
			group = p.Group
			fmt.Fprintf(tw, "\n[%s]\n", groupTitles[group])
		}
		lines := valueLines(p.Get(t), p.Hex)
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Key, symbolColumn(p), lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(tw, "  \t\t%s\n", l)
		}
	}
	return tw.Flush()
}

// maxValueWidth is the widest value printed on one line; a longer list is
// printed one element per line.
const maxValueWidth = 64

func valueLines(v any, hex bool) []string {
	s := rtarch.FormatValue(v, hex)
	elems, isList := v.([]any)
	if !isList || len(s) <= maxValueWidth {
		return []string{s}
	}
	lines := make([]string, len(elems))
	for i, e := range elems {
		lines[i] = fmt.Sprintf("[%d] %s", i, rtarch.FormatValue(e, hex))
	}
	return lines
}

// writeArchJSON prints one JSON object: arch, switch, then every property by key.
func writeArchJSON(w io.Writer, t *rtarch.Tables) error {
	r := rtarch.Record{{Name: "arch", Value: t.Generation.String()}, {Name: "switch", Value: t.Options.Switch.String()}}
	for _, p := range rtarch.Properties() {
		r = append(r, rtarch.Field{Name: p.Key, Value: p.Get(t)})
	}
	return writeJSON(w, r)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

type propertyDiff struct {
	p    rtarch.Property
	a, b any
}

func diffTables(a, b *rtarch.Tables) []propertyDiff {
	var out []propertyDiff
	for _, p := range rtarch.Properties() {
		va, vb := p.Get(a), p.Get(b)
		if rtarch.FormatValue(va, true) != rtarch.FormatValue(vb, true) {
			out = append(out, propertyDiff{p, va, vb})
		}
	}
	return out
}

// writeArchDiff prints only the properties whose values differ.
func writeArchDiff(w io.Writer, a, b *rtarch.Tables) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "property\t%s (switch %s)\t%s (switch %s)\n", a.Generation, a.Options.Switch, b.Generation, b.Options.Switch)
	diffs := diffTables(a, b)
	for _, d := range diffs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.p.Key, rtarch.FormatValue(d.a, d.p.Hex), rtarch.FormatValue(d.b, d.p.Hex))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verb := "differ"
	if len(diffs) == 1 {
		verb = "differs"
	}
	_, err := fmt.Fprintf(w, "%d of %s %s\n", len(diffs), units.Plural(int64(len(rtarch.Properties())), "property", "properties"), verb)
	return err
}

// writeArchDiffJSON prints {key: {A: value, B: value}} for the differing
// properties, after "switch": {A: family, B: family} — the family each
// side's tables are of, as the text's header gives it, which the values
// depend on (get_max_devs) — when the two generations differ (the same
// generation twice has one family, and nothing differs: {}).
func writeArchDiffJSON(w io.Writer, a, b *rtarch.Tables) error {
	var r rtarch.Record
	if a.Generation != b.Generation {
		r = append(r, rtarch.Field{Name: "switch", Value: rtarch.Record{
			{Name: a.Generation.String(), Value: a.Options.Switch.String()}, {Name: b.Generation.String(), Value: b.Options.Switch.String()}}})
	}
	for _, d := range diffTables(a, b) {
		r = append(r, rtarch.Field{Name: d.p.Key, Value: rtarch.Record{
			{Name: a.Generation.String(), Value: d.a}, {Name: b.Generation.String(), Value: d.b}}})
	}
	if r == nil {
		r = rtarch.Record{}
	}
	return writeJSON(w, r)
}
