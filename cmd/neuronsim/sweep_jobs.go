package main

import "github.com/spf13/cobra"

// sweepJobCommands returns the subcommands of `neuronsim sweep` that turn a
// grid into jobs for a workload manager (`slurm`, `k8s`). newSweepCmd adds
// whatever it returns after plan, run and merge.
func sweepJobCommands() []*cobra.Command { return nil }
