// Command neuronsim is the command line of the neuronsim simulator: it runs
// scenarios on simulated Neuron devices and reports on the runtime's arch
// tables.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

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
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagError)
	root.SetOut(out)
	root.SetErr(errOut)
	root.AddCommand(newArchCommand(), newRunCommand(), newLsCommand(), newCSRCommand(), newServeCommand(), newDVECommand(), newDMACommand(), newAsmCommand(), newDisasmCommand(), newValidateCommand(), newExecCommand(), newFabricCommand(), newSnapshotCommand())
	return root
}
