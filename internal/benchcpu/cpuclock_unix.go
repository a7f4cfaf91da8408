//go:build unix

package benchcpu

import "syscall"

// ProcessCPU returns the CPU time the process has used, in nanoseconds, or 0
// where it cannot be read.
func ProcessCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
