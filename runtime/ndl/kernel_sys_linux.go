//go:build linux && (amd64 || arm64)

package ndl

import (
	"errors"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// linuxKernelSys is the real KernelSys: open(2), ioctl(2) and close(2) through
// the standard syscall package.
type linuxKernelSys struct{}

func hostKernelSys() KernelSys { return linuxKernelSys{} }

// ReadSysfs reads at most maxSysfsFile+1 bytes of a sysfs attribute
// (SysfsReader).
func (linuxKernelSys) ReadSysfs(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxSysfsFile+1)
	n, err := io.ReadFull(f, b)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	return b[:n], err
}

// Open opens path read-write (a normal open attaches the process to the
// device, which BAR_WRITE requires) and close-on-exec, retrying on EINTR:
// the driver's open may sleep while the device is in reset.
func (linuxKernelSys) Open(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		return fd, err
	}
}

// Ioctl issues ioctl(fd, cmd, &arg[0]). The conversion of &arg[0] happens in
// the syscall.Syscall argument list, so arg is kept alive and in place for the
// call (unsafe.Pointer rule 4); memory that arg points to must be pinned by
// the caller. A negative driver result comes back as the errno. A positive
// one is a *DriverReturnError: mostly the byte count copy_to_user or
// copy_from_user could not copy (the Neuron ioctls return it unchanged), so
// it matches syscall.EFAULT.
func (linuxKernelSys) Ioctl(fd int, cmd uint32, arg []byte) error {
	if len(arg) == 0 {
		return syscall.EINVAL
	}
	r, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(cmd), uintptr(unsafe.Pointer(&arg[0])))
	if errno != 0 {
		return errno
	}
	if r != 0 {
		return &DriverReturnError{Value: uint64(r)}
	}
	return nil
}

// Close closes fd. It is not retried on EINTR: on Linux the descriptor is
// released even then.
func (linuxKernelSys) Close(fd int) error { return syscall.Close(fd) }
