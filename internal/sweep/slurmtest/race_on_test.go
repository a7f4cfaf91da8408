//go:build race

package slurmtest

// raceEnabled: under -race the Slurm test skips (its work runs in other
// processes, under Slurm); the plain test run covers it.
const raceEnabled = true
