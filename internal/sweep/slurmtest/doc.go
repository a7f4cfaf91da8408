// Package slurmtest runs sweeps on a real Slurm cluster: its test builds
// neuronsim, writes the sbatch script of a grid with `neuronsim sweep
// slurm`, submits it as a 4-way job array with sbatch --wait, merges, and
// checks the merged outputs are byte for byte those of a local run; then it
// cancels one array task mid-run, submits the array again, and checks that
// no point was computed twice and none was lost.
//
// It needs a Slurm cluster with a node up (.ci/slurm-up starts a one-node
// cluster on this machine); on a cluster of several nodes,
// NEURONSIM_SLURM_DIR names a folder every node sees to work in. Outside CI it skips when there is none, saying
// so; in CI (CI set) it fails. It skips under -race: the work runs in
// processes the race detector does not see, and the plain test run covers it.
// The package holds no code besides its test.
package slurmtest
