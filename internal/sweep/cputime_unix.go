//go:build unix

package sweep

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used.
// Timed around a point, it is the point's host time as an idle core would
// take it: other processes on a busy machine stretch the wall time, not
// this.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuTimeWorks reports whether cpuTime measures anything here.
const cpuTimeWorks = true
