package output

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// names lists a directory's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestCommitAndAbort: until Commit the output's path holds what it held
// before (the bytes are in a hidden temporary file); Commit replaces it,
// Abort leaves it and removes the temporary file.
func TestCommitAndAbort(t *testing.T) {
	for _, tc := range []struct {
		name   string
		commit bool
		want   string
	}{
		{"commit", true, "new"},
		{"abort", false, "old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.json")
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
			f, err := Create(path)
			require.NoError(t, err)
			_, err = f.Write([]byte("new"))
			require.NoError(t, err)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, "old", string(got), "the output is untouched while it is written")
			assert.Len(t, names(t, dir), 2)
			assert.True(t, IsTemp(filepath.Base(f.Temp())), f.Temp())
			if tc.commit {
				require.NoError(t, f.Commit())
			} else {
				require.NoError(t, f.Abort())
			}
			require.NoError(t, f.Abort(), "Abort after either does nothing")
			got, err = os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
			assert.Equal(t, []string{"out.json"}, names(t, dir), "no temporary file is left")
			_, err = f.Write([]byte("x"))
			assert.ErrorIs(t, err, ErrDone)
			assert.ErrorIs(t, f.Commit(), ErrDone)
		})
	}
}

// TestWriteWithFailure: a writer that fails leaves the previous file as it
// was and no temporary file.
func TestWriteWithFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sweep.json")
	require.NoError(t, os.WriteFile(path, []byte("previous run"), 0o644))
	boom := errors.New("boom")
	_, err := WriteWith(path, func(w io.Writer) error {
		w.Write(bytes.Repeat([]byte("x"), 100))
		return boom
	})
	require.ErrorIs(t, err, boom)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "previous run", string(got))
	assert.Equal(t, []string{"sweep.json"}, names(t, dir))

	n, err := WriteWith(path, func(w io.Writer) error { _, err := w.Write([]byte("12345")); return err })
	require.NoError(t, err)
	assert.EqualValues(t, 5, n)
}

// TestRemovePending: the temporary files of outputs in progress are removed
// (what an interrupted command does); committed outputs stay.
func TestRemovePending(t *testing.T) {
	dir := t.TempDir()
	done, err := Create(filepath.Join(dir, "done"))
	require.NoError(t, err)
	require.NoError(t, done.Commit())
	for _, n := range []string{"a.pcap", "b.json"} {
		_, err := Create(filepath.Join(dir, n))
		require.NoError(t, err)
	}
	assert.Len(t, names(t, dir), 3)
	assert.Equal(t, 2, RemovePending())
	assert.Equal(t, []string{"done"}, names(t, dir))
}

// TestCheck: paths that cannot be written are found without writing
// anything.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		name, path string
		ok         bool
	}{
		{"new file", filepath.Join(dir, "new.json"), true},
		{"existing file", file, true},
		{"a directory", dir, false},
		{"missing directory", filepath.Join(dir, "nope", "x.json"), false},
		{"under a file", filepath.Join(file, "x.json"), false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.path)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrNotWritable)
			}
			assert.ElementsMatch(t, []string{"file"}, names(t, dir), "Check leaves nothing behind")
		})
	}
	require.NoError(t, CheckDir(filepath.Join(dir, "a", "b")))
	require.ErrorIs(t, CheckDir(filepath.Join(file, "a")), ErrNotWritable)
}

func TestReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only directories")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o555))
	defer os.Chmod(dir, 0o755)
	require.ErrorIs(t, Check(filepath.Join(dir, "x")), ErrNotWritable)
}

func TestManifest(t *testing.T) {
	var m Manifest
	m.Add("/o/z.pcap", 24)
	m.Add("/o/report.txt", 100)
	m.Add("/elsewhere/s.snap", 7)
	var b bytes.Buffer
	_, err := m.WriteTo(&b, "/o")
	require.NoError(t, err)
	assert.Equal(t, "  /elsewhere/s.snap  7 bytes\n  report.txt  100 bytes\n  z.pcap  24 bytes\n", b.String())
	assert.Equal(t, []string{"/o/z.pcap", "/o/report.txt", "/elsewhere/s.snap"}, m.Paths())
}

// TestLinksAndSpecialFiles: an output path that is a symbolic link (a
// chain of them, or one that dangles) is written where it leads and stays
// a link; one that is, or leads to, a FIFO or a device is refused before
// anything is written — renaming onto it would replace it (a run as root
// once replaced /dev/stdout, and would have replaced /dev/null, with a
// regular file).
func TestLinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.json")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink("target.json", link))
	chain := filepath.Join(dir, "chain.json")
	require.NoError(t, os.Symlink(link, chain))
	dangling := filepath.Join(dir, "dangling.json")
	require.NoError(t, os.Symlink("new.json", dangling))
	for path, want := range map[string]string{link: target, chain: target, dangling: filepath.Join(dir, "new.json")} {
		require.NoError(t, Check(path))
		require.NoError(t, WriteFile(path, []byte("new "+path)))
		got, err := os.ReadFile(want)
		require.NoError(t, err)
		assert.Equal(t, "new "+path, string(got), "written where %s leads", path)
		fi, err := os.Lstat(path)
		require.NoError(t, err)
		assert.NotZero(t, fi.Mode()&os.ModeSymlink, "%s stays a link", path)
	}
	loop := filepath.Join(dir, "loop")
	require.NoError(t, os.Symlink("loop", loop))
	assert.ErrorIs(t, WriteFile(loop, nil), ErrNotWritable)

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, mkfifo(fifo))
	toFifo := filepath.Join(dir, "to-fifo")
	require.NoError(t, os.Symlink(fifo, toFifo))
	special := []string{fifo, toFifo}
	if fi, err := os.Stat(os.DevNull); err == nil && fi.Mode()&os.ModeDevice != 0 {
		special = append(special, os.DevNull) // refused without writing: safe to try
	}
	for _, path := range special {
		err := Check(path)
		require.ErrorIs(t, err, ErrNotWritable, path)
		assert.Contains(t, err.Error(), "is not a regular file")
		require.ErrorIs(t, WriteFile(path, []byte("x")), ErrNotWritable, path)
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.False(t, fi.Mode().IsRegular(), "%s is left as it was", path)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, IsTemp(e.Name()), "temporary file %s left", e.Name())
	}
}

// TestSameFile: two paths are the same file by their absolute paths, or
// through a symbolic link (the file's own, even dangling, a chain of them,
// an absolute one, or a linked directory on the way, with .. taken after
// the link as the file system takes it) or a hard link; different files, a
// missing one and an empty path are not.
func TestSameFile(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	a := filepath.Join(dir, "a")
	b := filepath.Join(dir, "b")
	require.NoError(t, os.WriteFile(a, []byte("a"), 0o644))
	require.NoError(t, os.WriteFile(b, []byte("a"), 0o644))
	hard := filepath.Join(dir, "hard")
	require.NoError(t, os.Link(a, hard))
	soft := filepath.Join(dir, "soft")
	require.NoError(t, os.Symlink("a", soft))
	require.NoError(t, os.Symlink("later", filepath.Join(dir, "dangling")))
	require.NoError(t, os.Symlink("soft", filepath.Join(dir, "chain")))
	require.NoError(t, os.Symlink(a, filepath.Join(dir, "abslink")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub", "deep"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join("sub", "deep"), filepath.Join(dir, "subl")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "a"), []byte("a"), 0o644))
	require.NoError(t, os.Symlink("loop", filepath.Join(dir, "loop")))
	t.Chdir(dir)
	for _, tc := range []struct {
		x, y string
		same bool
	}{
		{a, a, true},
		{"a", a, true},
		{"./sub/../a", a, true},
		{hard, a, true},
		{soft, "a", true},
		{a, b, false},
		{"missing", a, false},
		{"missing", "missing", true}, // one path: an output there would be the input
		{"", a, false},
		{a, "", false},
		{"dangling", "later", true}, // an output at the link is written where it leads
		{"dangling", "missing", false},
		{"chain", "a", true},
		{"abslink", "a", true},
		{"subl/x", "sub/deep/x", true}, // x not there yet
		{"subl/../a", "sub/a", true},   // .. of sub/deep, not of subl
		{"subl/../a", "a", false},
		{"loop", "a", false}, // Resolve fails: compared as written
		{"loop", "loop", true},
	} {
		assert.Equal(t, tc.same, SameFile(tc.x, tc.y), "%s, %s", tc.x, tc.y)
		assert.Equal(t, tc.same, SameFile(tc.y, tc.x), "%s, %s", tc.y, tc.x)
	}
}

// TestResolve: a path resolves to the absolute path with every link
// followed, the part from the first missing component kept as written; a
// loop of links is refused.
func TestResolve(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Symlink("sub", filepath.Join(dir, "subl")))
	require.NoError(t, os.Symlink("../t.json", filepath.Join(dir, "sub", "up")))
	require.NoError(t, os.Symlink("loop", filepath.Join(dir, "loop")))
	t.Chdir(dir)
	for _, tc := range []struct{ path, want, err string }{
		{"x.json", filepath.Join(dir, "x.json"), ""},
		{"subl/x.json", filepath.Join(dir, "sub", "x.json"), ""},
		{"subl/up", filepath.Join(dir, "t.json"), ""},
		{dir + "//subl/./no/../x", filepath.Join(dir, "sub", "x"), ""},
		{"loop", "", "more than 40 symbolic links"},
		{"", "", "empty path"},
	} {
		got, err := Resolve(tc.path)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.path)
			continue
		}
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.want, got, tc.path)
	}
}

// TestFindSame: the first two paths of a list that are one file are
// found, in order, with the file they name; a list with none has none.
func TestFindSame(t *testing.T) {
	dir := linkedFiles(t)
	for _, tc := range []struct {
		paths []string
		j, i  int
		file  string
		ok    bool
	}{
		{[]string{"a.json", "p.png", "l.png"}, 0, 2, filepath.Join(dir, "a.json"), true},
		{[]string{"l.png", "", "a.json"}, 0, 2, filepath.Join(dir, "a.json"), true},
		{[]string{"x", "h1", "y", "h2"}, 1, 3, filepath.Join(dir, "h2"), true},
		{[]string{"x", "y", "x", "y"}, 0, 2, filepath.Join(dir, "x"), true},
		{[]string{"a.json", "p.png", "", ""}, 0, 0, "", false},
		{nil, 0, 0, "", false},
	} {
		j, i, file, ok := FindSame(tc.paths)
		assert.Equal(t, tc.ok, ok, "%v", tc.paths)
		if tc.ok {
			assert.Equal(t, [2]int{tc.j, tc.i}, [2]int{j, i}, "%v", tc.paths)
			assert.Equal(t, tc.file, file, "%v", tc.paths)
		}
	}
}

// linkedFiles makes the files of the same-file tests in a directory it
// makes the working one, and returns it: l.png a link to a.json (not
// there), h2 a hard link to h1.
func linkedFiles(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.Symlink("a.json", filepath.Join(dir, "l.png")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "h1"), nil, 0o644))
	require.NoError(t, os.Link(filepath.Join(dir, "h1"), filepath.Join(dir, "h2")))
	t.Chdir(dir)
	return dir
}

// TestFindSameAs: the first of the others that is the same file as the
// path — by its path, through a symbolic link (a dangling one too) or a
// hard link — or -1; an empty path is none, and empty others are skipped.
func TestFindSameAs(t *testing.T) {
	dir := linkedFiles(t)
	for _, tc := range []struct {
		path   string
		others []string
		want   int
	}{
		{"a.json", []string{"p.png", "", "l.png", "a.json"}, 2},
		{"l.png", []string{filepath.Join(dir, "a.json")}, 0},
		{"h2", []string{"x", "h1"}, 1},
		{"a.json", []string{"p.png", ""}, -1},
		{"", []string{"", "a.json"}, -1},
		{"a.json", nil, -1},
	} {
		assert.Equal(t, tc.want, FindSameAs(tc.path, tc.others), "%s in %v", tc.path, tc.others)
	}
}

// TestWriteNew: a new output is made whole; over anything already at its
// path it is refused with fs.ErrExist, the path left as it was and no
// temporary file behind.
func TestWriteNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	require.NoError(t, WriteNew(path, []byte("first")))
	err := WriteNew(path, []byte("second"))
	require.ErrorIs(t, err, fs.ErrExist)
	got, rerr := os.ReadFile(path)
	require.NoError(t, rerr)
	assert.Equal(t, "first", string(got))
	entries, rerr := os.ReadDir(dir)
	require.NoError(t, rerr)
	assert.Len(t, entries, 1, "only the output: %v", entries)
}

// TestWriteAtReadAt: a header written last in place lands over the bytes
// written first, the bytes read back are those written, Size counts only
// what Write wrote in order, and after Commit both are refused.
func TestWriteAtReadAt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	f, err := Create(path)
	require.NoError(t, err)
	_, err = f.Write([]byte("0000payload"))
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("HEAD"), 0)
	require.NoError(t, err)
	assert.Equal(t, int64(11), f.Size())
	back := make([]byte, 7)
	n, err := f.ReadAt(back, 4)
	require.NoError(t, err)
	assert.Equal(t, "payload", string(back[:n]))
	n, err = f.ReadAt(make([]byte, 4), 9)
	assert.ErrorIs(t, err, io.EOF, "reading past the end says so")
	assert.Equal(t, 2, n)
	require.NoError(t, f.Commit())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "HEADpayload", string(got))
	_, err = f.WriteAt([]byte("x"), 0)
	assert.ErrorIs(t, err, ErrDone)
	_, err = f.ReadAt(back, 0)
	assert.ErrorIs(t, err, ErrDone)
}

// TestTempOf: TempOf names the output a temporary file is for, from the
// name TempName gives it, and nothing for a name that is not one.
func TestTempOf(t *testing.T) {
	of, ok := TempOf(filepath.Base(TempName("/some/dir/a.b.json", "0badf00d")))
	assert.True(t, ok)
	assert.Equal(t, "a.b.json", of)
	for _, name := range []string{"a.json", ".a.json", ".tmp-x", "x.tmp-1"} {
		_, ok := TempOf(name)
		assert.False(t, ok, name)
	}
}
