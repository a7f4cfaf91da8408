//go:build !unix

package sweep

import "time"

var start = time.Now()

// cpuTime returns the wall time since the process started: this system
// has no getrusage, so the host time of a point is its wall time.
func cpuTime() time.Duration { return time.Since(start) }

// cpuTimeWorks reports whether cpuTime measures CPU time here.
const cpuTimeWorks = false
