package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/scenario"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/scenarios"
)

// defaultArch is the generation of commands that build a system when --arch
// is not given: Trn3, whose default switch family is NeuronSwitch-v1
// (hwarch.DefaultSwitchFamily).
const defaultArch = hwarch.Mariana

func newRunCommand() *cobra.Command {
	var outDir, memLimit string
	var list bool
	cmd := &cobra.Command{
		Use:   "run [SCENARIO]",
		Short: "Run a scenario (default: a 32-device Trn3 system, DVE tables, a program, an AllReduce sweep)",
		Long: `run runs a scenario file (docs/scenarios.md): it builds the system it describes,
brings every device up through the runtime and runs its steps, then writes its
outputs (report, sweep JSON, plots, pcap) under its output directory. Without an
argument it runs the embedded default: a 32-device Trn3 system on NeuronSwitch-v1
brought up, the DVE tables loaded on every core, a program validated and
executed on one core, and an AllReduce sweep over the switch. SCENARIO is a file
(a regular file of at most 1 MiB), or the name of a shipped scenario (--list
names them); a bare name that is both (a file default beside you) is
refused: ./default runs the file. An output that is the same file as one the run reads (the
scenario, a program it names, a snapshot it restores), by its path or through
a link, is refused before anything runs.`,
		Example: `  neuronsim run
  neuronsim run emu-mariana
  neuronsim run my-scenario.yaml --out /tmp/out`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				// --list runs nothing: what only a run uses is refused, not ignored.
				if len(args) > 0 {
					return fmt.Errorf("--list runs nothing: it lists the shipped scenarios; give %s without --list to run it", args[0])
				}
				for _, f := range []string{"out", "mem-limit"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--list runs nothing: it lists the shipped scenarios; --%s applies to a run", f)
					}
				}
				return listScenarios(cmd)
			}
			limit, err := memLimitOf(cmd, memLimit)
			if err != nil {
				return err
			}
			if err := refuseEmpty(cmd, "out", "--out", outDir, "name a directory, or leave --out out for the scenario's"); err != nil {
				return err
			}
			p, err := openScenario(args)
			if err != nil {
				return err
			}
			defer removeOutputsOnSignal(cmd.ErrOrStderr())()
			opt := scenario.Options{OutDir: outDir, MemLimit: limit}
			if isTTY(cmd.ErrOrStderr()) {
				opt.Progress = cmd.ErrOrStderr()
			}
			sum, err := p.Run(opt)
			if sum != nil {
				writeSummary(cmd, sum, err != nil)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&outDir, "out", "", "output directory (default: the scenario's, neuronsim-out)")
	cmd.Flags().BoolVar(&list, "list", false, "list the shipped scenarios and run none (a scenario, --out or --mem-limit with it is refused)")
	addMemLimitFlag(cmd, &memLimit)
	return cmd
}

// memLimitOf is the limit --mem-limit (text v) gives: the default when it
// is not given; a value given, even empty, must be a positive size.
func memLimitOf(cmd *cobra.Command, v string) (memlimit.Limit, error) {
	if !cmd.Flags().Changed("mem-limit") {
		return memlimit.Default(), nil
	}
	return memlimit.Parse("--mem-limit", v)
}

// addMemLimitFlag adds --mem-limit, the host memory a run may plan to use.
func addMemLimitFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "mem-limit", "", "host memory the run's system, collectives and sweeps (functional or timing-only), DVE loads, copies and snapshot saves and loads may plan to use; refused before bring-up (a save: before it copies; a load: from the file's header) above it (default 3/4 of physical memory, /proc/meminfo MemTotal)")
}

// openScenario loads a scenario file, a shipped scenario by name, or the
// default.
func openScenario(args []string) (*scenario.Parsed, error) { return openScenarioOn(args, nil) }

// openScenarioOn is openScenario for a scenario run on a restored system
// (base; nil for none).
func openScenarioOn(args []string, base *scenario.Base) (*scenario.Parsed, error) {
	if len(args) == 0 {
		return scenario.LoadFSWith(scenarios.FS, scenarios.Default, base)
	}
	name := strings.TrimSuffix(args[0], ".yaml") + ".yaml"
	_, shippedErr := fs.Stat(scenarios.FS, name)
	if _, err := os.Stat(args[0]); err == nil {
		if shippedErr == nil && !strings.ContainsRune(args[0], filepath.Separator) && !strings.ContainsRune(args[0], '/') {
			return nil, fmt.Errorf("scenario %q names both a file here and the shipped scenario %s: give ./%s to run the file, or run the shipped one from a folder without that file", args[0], strings.TrimSuffix(name, ".yaml"), args[0])
		}
		return scenario.LoadWith(args[0], base)
	}
	if shippedErr == nil {
		return scenario.LoadFSWith(scenarios.FS, name, base)
	}
	return nil, fmt.Errorf("scenario %q: no such file, and no shipped scenario of that name (neuronsim run --list): %w", args[0], os.ErrNotExist)
}

func listScenarios(cmd *cobra.Command) error {
	names, err := fs.Glob(scenarios.FS, "*.yaml")
	if err != nil {
		return err
	}
	for _, n := range names {
		p, err := scenario.LoadFS(scenarios.FS, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%-26s %s\n", strings.TrimSuffix(n, ".yaml"), p.Description)
	}
	return nil
}

// writeSummary prints what a run did; one that failed says so, and how
// far it got, first (its error follows on stderr).
func writeSummary(cmd *cobra.Command, s *scenario.Summary, failed bool) {
	out := cmd.OutOrStdout()
	devices, rest := units.Plural(int64(s.Devices), "device", "devices"),
		fmt.Sprintf("virtual time %v, %s over the fabric", s.VirtualTime, units.Plural(int64(s.FabricBytes), "byte", "bytes"))
	if s.InFlightUntil != 0 {
		// The bytes are counted when booked on the links: some have not
		// landed by the run's end.
		rest = fmt.Sprintf("virtual time %v, %s sent over the fabric, writes in flight until %v",
			s.VirtualTime, units.Plural(int64(s.FabricBytes), "byte", "bytes"), s.InFlightUntil)
	}
	if failed {
		fmt.Fprintf(out, "scenario %s FAILED after %d of %s: %s, %s\n", s.Name, s.Steps, units.Plural(int64(s.Total), "step", "steps"), devices, rest)
	} else {
		fmt.Fprintf(out, "scenario %s: %s, %s, %s\n", s.Name, devices, units.Plural(int64(s.Steps), "step", "steps"), rest)
	}
	for _, rep := range s.Sweeps {
		fmt.Fprintln(out)
		if err := cluster.WriteTables(out, rep); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "neuronsim:", err)
		}
	}
	if len(s.Outputs) > 0 {
		fmt.Fprintf(out, "\noutputs: %s\n", strings.Join(s.Outputs, ", "))
	}
}
