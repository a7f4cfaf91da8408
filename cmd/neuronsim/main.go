// Command neuronsim is the command line of the neuronsim simulator: it runs
// scenarios on simulated Neuron devices and reports on the runtime's arch
// tables.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

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
	root.AddCommand(newArchCommand(), newRunCommand(), newLsCommand(), newCSRCommand(), newServeCommand(), newDVECommand(), newDMACommand(), newAsmCommand(), newDisasmCommand(), newValidateCommand(), newExecCommand(), newFabricCommand(), newSnapshotCommand())
	return root
}
