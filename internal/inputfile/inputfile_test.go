package inputfile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRead: a regular file within the limit is read whole; one past it,
// a sparse one far past it, a directory, a FIFO with no writer, a device
// and a socket are refused, naming the path (and for size, the limit and
// what it is for), without blocking.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, make([]byte, n), 0o644))
		return path
	}
	exact := write("exact", 16)
	over := write("over", 17)
	empty := write("empty", 0)
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(10<<30)) // 10 GiB of hole: must not be read
	require.NoError(t, f.Close())
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(exact, link))
	linkToFifo := filepath.Join(dir, "link-to-fifo")
	require.NoError(t, os.Symlink(fifo, linkToFifo))
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()

	const why = "tests read up to 16 bytes"
	for _, tc := range []struct {
		name, path string
		want       int    // bytes read, when ok
		err        error  // wrapped by the refusal
		msg        string // the refusal's text (a missing file's: part of it)
	}{
		{"at the limit", exact, 16, nil, ""},
		{"empty", empty, 0, nil, ""},
		{"through a link", link, 16, nil, ""},
		{"one past the limit", over, 0, ErrTooLarge, over + ": more than 16 bytes; tests read up to 16 bytes"},
		{"sparse, 10 GiB", sparse, 0, ErrTooLarge, sparse + ": more than 16 bytes; tests read up to 16 bytes"},
		{"directory", dir, 0, ErrNotRegular, dir + ": is a directory, not a regular file"},
		{"fifo without a writer", fifo, 0, ErrNotRegular, fifo + ": is a FIFO (named pipe), not a regular file"},
		{"link to a fifo", linkToFifo, 0, ErrNotRegular, linkToFifo + ": is a FIFO (named pipe), not a regular file"},
		{"socket", sock, 0, ErrNotRegular, sock + ": is a socket, not a regular file"},
		{"device", os.DevNull, 0, ErrNotRegular, os.DevNull + ": is a character device, not a regular file"},
		{"missing", filepath.Join(dir, "none"), 0, fs.ErrNotExist, filepath.Join(dir, "none")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var b []byte
			var err error
			go func() {
				defer close(done)
				b, err = Read(tc.path, 16, why)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Read(%s) blocked", tc.path)
			}
			if tc.err == nil {
				require.NoError(t, err)
				assert.Len(t, b, tc.want)
				return
			}
			require.ErrorIs(t, err, tc.err)
			assert.Nil(t, b)
			if tc.err == fs.ErrNotExist {
				assert.Contains(t, err.Error(), tc.msg)
			} else {
				assert.Equal(t, tc.msg, err.Error())
			}
		})
	}
}

// TestReadGrowing: the read stops one byte past the limit whatever the
// size the stat gave (files of /proc report 0).
func TestReadGrowing(t *testing.T) {
	b, err := Read("/proc/self/status", 1<<20, "why")
	require.NoError(t, err)
	assert.NotEmpty(t, b)
	_, err = Read("/proc/self/status", 8, "status is small")
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Equal(t, "/proc/self/status: more than 8 bytes; status is small", err.Error())
}

// TestReadFS: ReadFS bounds a file of an fs.FS and refuses a directory.
func TestReadFS(t *testing.T) {
	fsys := fstest.MapFS{
		"a.yaml":   {Data: []byte("12345678")},
		"big.yaml": {Data: make([]byte, 9)},
		"dir/x":    {Data: []byte("x")},
	}
	b, err := ReadFS(fsys, "a.yaml", 8, "why")
	require.NoError(t, err)
	assert.Equal(t, "12345678", string(b))
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"big.yaml", ErrTooLarge},
		{"dir", ErrNotRegular},
		{"none", fs.ErrNotExist},
	} {
		_, err := ReadFS(fsys, tc.name, 8, "why")
		assert.True(t, errors.Is(err, tc.err), "%s: %v", tc.name, err)
		assert.Contains(t, err.Error(), tc.name)
	}
}

// TestOpen: Open opens a regular file of any size and refuses a FIFO
// without blocking, and a directory.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(path, []byte("abc"), 0o644))
	f, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	done := make(chan error, 1)
	go func() {
		f, err := Open(fifo)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrNotRegular)
		assert.Equal(t, fifo+": is a FIFO (named pipe), not a regular file", err.Error())
	case <-time.After(10 * time.Second):
		t.Fatal("Open of a FIFO blocked")
	}
	_, err = Open(dir)
	require.ErrorIs(t, err, ErrNotRegular)
}
