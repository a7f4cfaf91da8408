//go:build !(linux && (amd64 || arm64))

package ndl

import (
	"fmt"
	"runtime"
)

// unsupportedKernelSys stands in for the kernel on hosts the Neuron driver
// does not run on: every call fails with ErrKernelUnsupported.
type unsupportedKernelSys struct{}

func hostKernelSys() KernelSys { return unsupportedKernelSys{} }

func (unsupportedKernelSys) err() error {
	return fmt.Errorf("%w (%s/%s)", ErrKernelUnsupported, runtime.GOOS, runtime.GOARCH)
}

func (s unsupportedKernelSys) Open(string) (int, error)        { return -1, s.err() }
func (s unsupportedKernelSys) Ioctl(int, uint32, []byte) error { return s.err() }
func (s unsupportedKernelSys) Close(int) error                 { return s.err() }
