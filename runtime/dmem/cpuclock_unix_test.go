//go:build unix

package dmem

import "syscall"

// processCPU returns the CPU time the process has used, in nanoseconds:
// benchmarks report it beside the wall time, which other processes on a
// shared machine inflate.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
