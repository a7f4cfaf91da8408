package main

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/scenario"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

func newSnapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save a whole simulated system to a file, or go on from one",
		Long: `A snapshot is a whole system — virtual time and pending events, every device's
memory, registers, DMA queues and NeuronCore engines, the fabric's links and
writes in flight — in one versioned, checksummed, zstd-compressed file.
Restoring it and going on gives exactly what the uninterrupted run gives
(docs/scenarios.md §Snapshots). A truncated, corrupted or wrong-version file
is refused.`,
	}
	cmd.AddCommand(newSnapshotSaveCommand(), newSnapshotRestoreCommand())
	return cmd
}

func newSnapshotSaveCommand() *cobra.Command {
	var outDir, memLimit string
	cmd := &cobra.Command{
		Use:   "save SCENARIO FILE",
		Short: "Run a scenario and save the system it ends with",
		Long: `save runs SCENARIO and saves the system it ends with to FILE, written atomically.
FILE, like every output of the scenario, may not be the same file as one the run
reads (the scenario, a program it names), by its path or through a link: that is
refused before anything runs. A save whose copy of the system's state and
compressor buffers would pass --mem-limit is refused before anything is copied,
with the estimate and the limit (at an idle device's state before anything is
built, at the system's own when the save comes).`,
		Example: "  neuronsim snapshot save trn2-torus-collectives /tmp/torus.snap",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWithSnapshots(cmd, args[0], "", args[1], outDir, memLimit, fabric.LoadOptions{})
		},
	}
	cmd.Flags().StringVar(&outDir, "out", "", "output directory of the scenario's own outputs")
	addMemLimitFlag(cmd, &memLimit)
	return cmd
}

func newSnapshotRestoreCommand() *cobra.Command {
	var outDir, memLimit string
	maxSize := newSize("--max-size", 1, math.MaxInt64)
	cmd := &cobra.Command{
		Use:   "restore FILE SCENARIO",
		Short: "Restore a saved system and run a scenario's steps on it",
		Long: `restore reads the snapshot FILE (a damaged one is refused, naming it) and runs
SCENARIO's steps on the system it holds. The system is the snapshot's: the
scenario need not have a system section, and the keys it gives (arch,
devices, nodes, efa, revision, topology, model, mode, and the fabric's timing
keys: link_latency_ns, link_bw_gbs, endpoint_delay_ns, switch_latency_ns,
chunk_bytes, server_size) must agree with the snapshot. No
output of the scenario may be the same file as FILE, SCENARIO or a program it
names (by its path or through a link): that is refused before anything runs.`,
		Example: "  neuronsim snapshot restore /tmp/torus.snap my-steps.yaml",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			load := fabric.LoadOptions{MaxBytes: fabric.DefaultMaxSnapshotBytes}
			if maxSize.set {
				load.MaxBytes = maxSize.v
			}
			return runWithSnapshots(cmd, args[1], args[0], "", outDir, memLimit, load)
		},
	}
	cmd.Flags().StringVar(&outDir, "out", "", "output directory of the scenario's own outputs")
	cmd.Flags().Var(maxSize, "max-size", fmt.Sprintf("the most the file's decoded state and the system built from it may take in memory, and at most --mem-limit less the buffers; the file is streamed, never held, and loading takes at most %s of buffers besides (default %s; %s)",
		units.FormatBytes(fabric.LoadBuffers), units.FormatBytes(fabric.DefaultMaxSnapshotBytes), units.SizeGrammar))
	addMemLimitFlag(cmd, &memLimit)
	return cmd
}

// runWithSnapshots runs a scenario, restoring before it (the system taken
// from the snapshot, loaded within load) and saving after it as asked.
func runWithSnapshots(cmd *cobra.Command, name, restore, save, outDir, memLimit string, load fabric.LoadOptions) error {
	limit, err := memLimitOf(cmd, memLimit)
	if err != nil {
		return err
	}
	if err := refuseEmpty(cmd, "out", "--out", outDir, "name a directory, or leave --out out for the scenario's"); err != nil {
		return err
	}
	abs := func(path string) (string, error) {
		if path == "" {
			return "", nil
		}
		return filepath.Abs(path)
	}
	if restore, err = abs(restore); err != nil {
		return err
	}
	if err := output.CheckName(save); err != nil {
		return err
	}
	if save, err = abs(save); err != nil {
		return err
	}
	var base *scenario.Base
	if restore != "" {
		// The snapshot first: its faults are its own, and its system is
		// the one the scenario runs on.
		if base, err = scenario.LoadSnapshotWithin(restore, load, limit); err != nil {
			return err
		}
	}
	p, err := openScenarioOn([]string{name}, base)
	if err != nil {
		return err
	}
	p.AddSnapshotSteps("", save)
	defer removeOutputsOnSignal(cmd.ErrOrStderr())()
	sum, err := p.Run(scenario.Options{OutDir: outDir, MemLimit: limit, Snapshot: load})
	if sum != nil {
		writeSummary(cmd, sum, err != nil)
	}
	if err == nil && save != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "saved %s\n", save)
	}
	return err
}
