// Command neuronsim is the command line of the neuronsim simulator: it runs
// scenarios, collective sweeps and sweep grids on simulated Neuron devices,
// drives a device — simulated, served or real (/dev/neuronN) — through the
// runtime (ls, csr, dve, dma copy, exec), assembles and validates programs,
// saves and restores whole systems, serves simulated devices over the
// remote protocol or vfio-user, and reports on the runtime's arch tables.
// cmd/neuronsim/README.md maps each command to its file and its docs.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/units"
)

// sizeUnits ends the help of every size flag: the units of
// [units.ParseBytes], the one size grammar of flags and scenario files.
const sizeUnits = " (K, M, G, T, also written KB/KiB, …, are powers of 1024)"

// unitsHelp is the root command's statement of the units every command uses.
const unitsHelp = "Units: a size is " + units.SizeGrammar + ".\n" +
	"Bandwidths are in GB/s of 1e9 bytes per second (decimal, as nccom-test prints them); durations in ns."

func main() {
	if err := newRootCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "neuronsim:", err)
		os.Exit(1)
	}
}

// newRootCommand builds the command tree writing to out and errOut, so tests
// can run it in-process.
func newRootCommand(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "neuronsim",
		Short:         "A full-system simulator of AWS Neuron accelerators (Trn1/Inf2, Trn2, Trn3)",
		Long:          "A full-system simulator of AWS Neuron accelerators (Trn1/Inf2, Trn2, Trn3).\n\n" + unitsHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
	}
	root.SetFlagErrorFunc(flagError)
	root.SetVersionTemplate("{{.Version}}")
	root.SetOut(out)
	root.SetErr(errOut)
	root.AddCommand(newArchCommand(), newRunCommand(), newLsCommand(), newCSRCommand(), newServeCommand(), newDVECommand(), newDMACommand(), newAsmCommand(), newDisasmCommand(), newValidateCommand(), newExecCommand(), newFabricCommand(), newSnapshotCommand(), newSweepCmd())
	onceFlags(root)
	return root
}

// removeOutputsOnSignal makes SIGINT and SIGTERM, until stop is called,
// remove the temporary files of the outputs being written (so an
// interrupted run leaves nothing of itself) and end the process with the
// status a shell gives a process the signal ended (130, 143). Commands that write outputs call it; serve handles the signals
// itself.
func removeOutputsOnSignal(errOut io.Writer) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			if n := output.RemovePending(); n > 0 {
				fmt.Fprintf(errOut, "neuronsim: %v: removed %d unfinished output file(s); nothing of this run was kept\n", sig, n)
			}
			code := 130 // 128 + SIGINT, as a shell reports it
			if sig == syscall.SIGTERM {
				code = 143
			}
			os.Exit(code)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}
