// Package inputfile reads the files a user names — scenarios, program
// sources and binaries, grid files, tiles — whole, within a bound (or opens
// one, such as a snapshot, for a reader that bounds itself), so that
// a hostile or mistaken path costs neither unbounded memory nor a hang:
//
//   - a path that is not a regular file (a directory, a FIFO, a device such
//     as /dev/zero, a socket) is refused after a stat, before it is opened,
//     so a FIFO with no writer never blocks the read and a device is never
//     read from (it is then opened without blocking and checked again, in
//     case it was replaced in between);
//   - a file larger than the limit is refused by its size before a byte is
//     read, and the read itself stops one byte past the limit (a file that
//     grows, or one whose size the file system does not report, such as
//     those of /proc), so no more than limit+1 bytes are ever held.
//
// Every refusal names the path, the limit and what the limit is for.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by the error of a path that is not a regular
// file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error of a file larger than the limit.
var ErrTooLarge = errors.New("file too large")

// Error is a refusal of a file: its path, what is wrong with it, and
// ErrNotRegular or ErrTooLarge (which its text does not repeat).
type Error struct {
	Path, Msg string
	Err       error
}

func (e *Error) Error() string { return e.Path + ": " + e.Msg }

// Unwrap returns ErrNotRegular or ErrTooLarge.
func (e *Error) Unwrap() error { return e.Err }

// Read returns the contents of the regular file at path, of at most limit
// bytes; why says what the limit is for, in the refusal of a larger file
// ("PATH: more than N bytes; WHY"), e.g. "a program holds at most 1048576 records".
// A missing or unreadable file's error is the *fs.PathError of os.Stat or
// os.Open (errors.Is(err, fs.ErrNotExist) holds for a missing one).
func Read(path string, limit int64, why string) ([]byte, error) {
	f, err := open(path, limit, why)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(path, f, limit, why)
}

// Open opens the regular file at path for a reader that bounds what it
// reads itself (a snapshot's decoder): a path that is not a regular file is
// refused as Read refuses it, before it is opened.
func Open(path string) (*os.File, error) {
	return open(path, math.MaxInt64, "")
}

// open opens the regular file at path, of at most limit bytes by its
// size.
func open(path string, limit int64, why string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, fi, limit, why); err != nil {
		return nil, err
	}
	// O_NONBLOCK: a path replaced by a FIFO since the stat does not block
	// the open; the check of the open file refuses it. A regular file's
	// reads ignore the flag.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err == nil {
		err = check(path, fi, limit, why)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFS is Read of file name of fsys (such as the shipped scenarios
// embedded in the binary).
func ReadFS(fsys fs.FS, name string, limit int64, why string) ([]byte, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := check(name, fi, limit, why); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(name, f, limit, why)
}

// check refuses a file that is not a regular one, or whose size is above
// limit.
func check(path string, fi fs.FileInfo, limit int64, why string) error {
	if !fi.Mode().IsRegular() {
		return &Error{Path: path, Msg: "is " + kind(fi.Mode()) + ", not a regular file", Err: ErrNotRegular}
	}
	if fi.Size() > limit {
		return tooLarge(path, limit, why)
	}
	return nil
}

// readAll reads r to its end, refusing more than limit bytes.
func readAll(path string, r io.Reader, limit int64, why string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, limit, why)
	}
	return b, nil
}

// tooLarge is the refusal of a file of more than limit bytes.
func tooLarge(path string, limit int64, why string) error {
	return &Error{Path: path, Msg: fmt.Sprintf("more than %d bytes; %s", limit, why), Err: ErrTooLarge}
}

// kind names the kind of file a mode is, for a message: "a directory",
// "a FIFO (named pipe)", "a character device", and so on.
func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return fmt.Sprintf("an irregular file (mode %v)", m.Type())
	}
}
