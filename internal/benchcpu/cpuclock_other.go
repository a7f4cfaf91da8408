//go:build !unix

package benchcpu

// ProcessCPU is not measured on this platform: it returns 0.
func ProcessCPU() int64 { return 0 }
