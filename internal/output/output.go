// Package output writes the files a run produces so that a reader never
// sees a half-written one: every file is written under a temporary name in
// its own directory and renamed onto its name only when it is complete
// ([File.Commit]). A run that fails or is killed leaves, at most, temporary
// files named ".NAME.tmp-XXXXXXXX" — hidden, and not looking like the output
// — and never an output that mixes this run and an earlier one. A failed
// run removes its temporary files ([File.Abort]); a run stopped by a signal
// removes them through [RemovePending].
//
// An output path that is a symbolic link is written where the link leads,
// the link kept; one that is a device (/dev/null), a FIFO or a socket is
// refused, since renaming onto it would replace it.
//
// It also checks, before a run starts, that each output can be written
// ([Check]), and keeps the list of files a run wrote with their sizes
// ([Manifest]).
package output

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// ErrNotWritable is wrapped by the error of an output path that cannot be
// written: its directory is missing or not writable, or the path is a
// directory.
var ErrNotWritable = errors.New("output cannot be written")

// ErrDone is wrapped by the error of a write, Commit or Abort on a File
// already committed or aborted.
var ErrDone = errors.New("output already committed or aborted")

// tempMarker is the part of a temporary file's name after the output's
// base name: ".NAME.tmp-XXXXXXXX".
const tempMarker = ".tmp-"

// pending holds the temporary files neither committed nor aborted, for
// RemovePending.
var pending = struct {
	sync.Mutex
	files map[string]*os.File
}{files: map[string]*os.File{}}

// File is an output being written. Writes go to a temporary file in the
// output's directory; Commit renames it onto the output's path, Abort
// removes it. Exactly one of them should be called (Abort after Commit does
// nothing, so "defer f.Abort()" is the idiom). A File is not safe for
// concurrent use.
type File struct {
	path, tmp string
	target    string // where Commit renames to when path is a link ("": path)
	f         *os.File
	n         int64
	done      bool
}

// TempName returns the name a temporary file for path takes, with the given
// random suffix: ".BASE.tmp-SUFFIX" in path's directory.
func TempName(path, suffix string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+tempMarker+suffix)
}

// IsTemp reports whether name (a base name) is a temporary file of this
// package.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempMarker)
}

// TempOf returns the base name of the output a temporary file of this
// package named name (a base name, TempName's) is for, and false when
// name is no such file.
func TempOf(name string) (string, bool) {
	j := strings.LastIndex(name, tempMarker)
	if !strings.HasPrefix(name, ".") || j < 1 {
		return "", false
	}
	return name[1:j], true
}

// maxLinks bounds the symbolic links an output path may go through.
const maxLinks = 40

// Create starts writing the output path: it creates a fresh temporary file
// in the directory of the file path names (mode 0644 before the umask).
// Nothing at path changes until Commit. A path that is a symbolic link
// (or a chain of them) is written where it leads, the link kept. A path
// that is, or leads to, a directory or anything but a regular file — a
// device such as /dev/null, a FIFO, a socket — is refused: renaming the
// temporary file onto it would replace it.
func Create(path string) (*File, error) {
	if path == "" {
		return nil, fmt.Errorf("output: empty path: %w", ErrNotWritable)
	}
	if err := CheckName(path); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("output %s: is a directory: %w", path, ErrNotWritable)
	} else if err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("output %s: is not a regular file (%v): an output is renamed onto its path, which would replace it; name a file: %w", path, fi.Mode().Type(), ErrNotWritable)
	}
	target, err := followLinks(path)
	if err != nil {
		return nil, err
	}
	f, err := createTemp(target)
	if err != nil {
		return nil, err
	}
	if target != path {
		f.path = path // errors name what the user gave; the rename goes to target
		f.target = target
	}
	return f, nil
}

// followLinks returns the file path names once every symbolic link on
// its last element is followed (the file may not exist yet: a link that
// dangles names the file it will be).
func followLinks(path string) (string, error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil // not there yet, or not a link: written here
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("output %s: %w: %w", path, err, ErrNotWritable)
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	return "", fmt.Errorf("output %s: more than %d symbolic links: %w", path, maxLinks, ErrNotWritable)
}

// createTemp is Create of a path that is not a link.
func createTemp(path string) (*File, error) {
	for range 16 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("output %s: %w", path, err)
		}
		tmp := TempName(path, hex.EncodeToString(b[:]))
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("output %s: %w: %w", path, err, ErrNotWritable)
		}
		pending.Lock()
		pending.files[tmp] = f
		pending.Unlock()
		return &File{path: path, tmp: tmp, f: f}, nil
	}
	return nil, fmt.Errorf("output %s: no free temporary name", path)
}

// Path returns the output's path (where Commit puts it).
func (f *File) Path() string { return f.path }

// Temp returns the temporary file's path, where the bytes are until Commit.
func (f *File) Temp() string { return f.tmp }

// Size returns the bytes written so far.
func (f *File) Size() int64 { return f.n }

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	if f.done {
		return 0, fmt.Errorf("output %s: write: %w", f.path, ErrDone)
	}
	n, err := f.f.Write(p)
	f.n += int64(n)
	if err != nil {
		return n, fmt.Errorf("output %s: %w", f.path, err)
	}
	return n, nil
}

// WriteAt writes p at offset off of the temporary file, for a format
// whose header is known only once what follows it is written (a snapshot's
// length and checksum). It does not change Size, which counts the bytes
// written in order by Write.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if f.done {
		return 0, fmt.Errorf("output %s: write: %w", f.path, ErrDone)
	}
	n, err := f.f.WriteAt(p, off)
	if err != nil {
		return n, fmt.Errorf("output %s: %w", f.path, err)
	}
	return n, nil
}

// ReadAt reads the temporary file back at offset off: what was written so
// far, to checksum it without having held it.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if f.done {
		return 0, fmt.Errorf("output %s: read: %w", f.path, ErrDone)
	}
	n, err := f.f.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, fmt.Errorf("output %s: %w", f.path, err)
	}
	return n, err
}

// Commit makes the output complete: the temporary file is synced, closed and
// renamed onto the output's path, replacing what was there. On an error the
// temporary file is removed and the path is as it was.
func (f *File) Commit() error { return f.commit(os.Rename) }

// CommitNew is Commit for an output that must not replace one: the
// temporary file is linked to the output's path, which fails, wrapping
// fs.ErrExist, when something is there already — so of writers racing to
// make the same path exactly one succeeds, and a reader never sees it
// incomplete. The temporary file is removed either way.
func (f *File) CommitNew() error {
	return f.commit(func(tmp, to string) error {
		err := os.Link(tmp, to)
		if err == nil {
			err = os.Remove(tmp)
		}
		return err
	})
}

// commit syncs and closes the temporary file and puts it at the output's
// path with place(tmp, path); on an error the temporary file is removed.
func (f *File) commit(place func(tmp, to string) error) error {
	if f.done {
		return fmt.Errorf("output %s: commit: %w", f.path, ErrDone)
	}
	f.done = true
	forget(f.tmp)
	err := f.f.Sync()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		to := f.path
		if f.target != "" {
			to = f.target
		}
		err = place(f.tmp, to)
	}
	if err != nil {
		os.Remove(f.tmp)
		return fmt.Errorf("output %s: %w", f.path, err)
	}
	return nil
}

// Abort drops the output: the temporary file is closed and removed, and
// the path is left as it was. After Commit or Abort it does nothing.
func (f *File) Abort() error {
	if f.done {
		return nil
	}
	f.done = true
	forget(f.tmp)
	f.f.Close()
	if err := os.Remove(f.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("output %s: removing %s: %w", f.path, f.tmp, err)
	}
	return nil
}

func forget(tmp string) {
	pending.Lock()
	delete(pending.files, tmp)
	pending.Unlock()
}

// RemovePending closes and removes every temporary file not yet committed
// or aborted, and returns how many it removed. A command calls it when it
// is interrupted, so that nothing of the stopped run is left.
func RemovePending() int {
	pending.Lock()
	defer pending.Unlock()
	n := 0
	for tmp, f := range pending.files {
		f.Close()
		if os.Remove(tmp) == nil {
			n++
		}
		delete(pending.files, tmp)
	}
	return n
}

// WriteWith writes the output path with write, atomically: on an error from
// write nothing at path changes. It returns the bytes written.
func WriteWith(path string, write func(io.Writer) error) (int64, error) {
	f, err := Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Abort()
	if err := write(f); err != nil {
		return 0, err
	}
	if err := f.Commit(); err != nil {
		return 0, err
	}
	return f.Size(), nil
}

// WriteFile writes data to the output path atomically.
func WriteFile(path string, data []byte) error {
	_, err := WriteWith(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// WriteNew writes data to path as a new output (File.CommitNew): an error
// wrapping fs.ErrExist when something is at path already, which is left
// as it was.
func WriteNew(path string, data []byte) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.CommitNew()
}

// CheckName refuses an output name that names a directory whatever the
// file system holds: one that ends in a path separator, or whose last
// element is . or .. — joining or cleaning the path would drop the slash
// and write a file of the directory's name. Call it on the name as given,
// before it is joined to a directory or made absolute. The error wraps
// ErrNotWritable.
func CheckName(name string) error {
	base := name[strings.LastIndexByte(name, filepath.Separator)+1:]
	if name != "" && (base == "" || base == "." || base == "..") {
		return fmt.Errorf("output %s: %s: %w", name, DirNameReason, ErrNotWritable)
	}
	return nil
}

// DirNameReason says why CheckName refuses a name, for callers that name
// the setting themselves.
const DirNameReason = "names a directory (a trailing slash, . or ..); name a file"

// Check reports whether path can be written as an output, without changing
// anything a reader would see: path is not a directory, its directory
// exists, and a file can be created in it (one is created and removed).
// The error wraps ErrNotWritable and names the path.
func Check(path string) error {
	if path == "" {
		return fmt.Errorf("output: empty path: %w", ErrNotWritable)
	}
	if err := CheckName(path); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("output %s: is a directory: %w", path, ErrNotWritable)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("output %s: directory %s does not exist: %w", path, dir, ErrNotWritable)
	}
	if err != nil {
		return fmt.Errorf("output %s: %w: %w", path, err, ErrNotWritable)
	}
	if !fi.IsDir() {
		return fmt.Errorf("output %s: %s is not a directory: %w", path, dir, ErrNotWritable)
	}
	f, err := Create(path)
	if err != nil {
		return err
	}
	return f.Abort()
}

// SameFile reports whether paths a and b name the same file: the same
// path once symbolic links are followed (Resolve: a link anywhere in the
// path, an output's last element that is a link — even one whose target
// does not exist yet, where an output would be written — or a linked
// directory), or existing files that are one file (a hard link). An output
// at a that is the same file as an input at b would replace it; two
// outputs that are would be written one over the other.
func SameFile(a, b string) bool {
	return b != "" && FindSameAs(a, []string{b}) == 0
}

// FindSameAs returns the index of the first of others that is the same
// file as path (SameFile), or -1 when none is (or path is empty). Each
// path is examined once.
func FindSameAs(path string, others []string) int {
	if path == "" {
		return -1
	}
	p := probe(path)
	for i, o := range others {
		if o != "" && sameFile(p, probe(o)) {
			return i
		}
	}
	return -1
}

// Resolve returns the file path names: absolute, every symbolic link on
// the way followed — those of the directories it goes through and of its
// last element, as Create follows it, even where the link's target does
// not exist yet — and . and .. taken where they are (after a link, not
// lexically). The components from the first one that does not exist are
// kept as written. It fails on a path through more than 40 links, or a
// component it cannot examine (a directory it may not search).
func Resolve(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("output: empty path: %w", ErrNotWritable)
	}
	sep := string(filepath.Separator)
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("output %s: %w", path, err)
		}
		path = wd + sep + path
	}
	todo := strings.Split(path, sep)
	resolved := sep
	links := 0
	missing := false // a component did not exist: the rest is taken as written
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		if missing {
			resolved = next
			continue
		}
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			missing = true
			resolved = next
			continue
		}
		if err != nil {
			return "", fmt.Errorf("output %s: %w", path, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("output %s: more than %d symbolic links: %w", path, maxLinks, ErrNotWritable)
		}
		t, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("output %s: %w", path, err)
		}
		if filepath.IsAbs(t) {
			resolved = sep
		}
		todo = append(strings.Split(t, sep), todo...)
	}
	return resolved, nil
}

// probed is what SameFile and FindSame compare of a path: where it
// resolves to (the cleaned absolute path where Resolve fails) and the file
// there, if one exists.
type probed struct {
	path string
	fi   fs.FileInfo
}

func probe(path string) probed {
	r, err := Resolve(path)
	if err != nil {
		if r, err = filepath.Abs(path); err != nil {
			r = filepath.Clean(path)
		}
	}
	pr := probed{path: r}
	if fi, err := os.Stat(path); err == nil {
		pr.fi = fi
	}
	return pr
}

func sameFile(a, b probed) bool {
	return a.path == b.path || (a.fi != nil && b.fi != nil && os.SameFile(a.fi, b.fi))
}

// FindSame returns the first two of paths that are the same file
// (SameFile), j < i, and the file they both name (the path they resolve
// to); ok is false when no two are. Empty paths are skipped. Each path is
// examined once, so a command's outputs are checked in one pass of the
// file system; only existing files are compared pairwise (for hard links).
func FindSame(paths []string) (j, i int, file string, ok bool) {
	at := map[string]int{}
	var existing []int
	pr := make([]probed, len(paths))
	for i, p := range paths {
		if p == "" {
			continue
		}
		pr[i] = probe(p)
		if j, ok := at[pr[i].path]; ok {
			return j, i, pr[i].path, true
		}
		if pr[i].fi != nil {
			for _, j := range existing {
				if os.SameFile(pr[j].fi, pr[i].fi) {
					return j, i, pr[i].path, true
				}
			}
			existing = append(existing, i)
		}
		at[pr[i].path] = i
	}
	return 0, 0, "", false
}

// Same says that the output at path b (named whereB: a flag or a key)
// is the same file as the one at a (whereA), which FindSame found both
// to be, naming that file where neither path is it as written: "WHEREB
// B: the same file as WHEREA A (both are FILE); one would be written
// over the other".
func Same(whereA, a, whereB, b, file string) string {
	both := ""
	if a != file || b != file {
		both = " (both are " + file + ")"
	}
	return fmt.Sprintf("%s %s: the same file as %s %s%s; one would be written over the other", whereB, b, whereA, a, both)
}

// CheckDir reports whether dir exists as a directory, or can be made: its
// nearest existing ancestor is a directory. It creates nothing.
func CheckDir(dir string) error {
	d := filepath.Clean(dir)
	for {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("output directory %s: %s is not a directory: %w", dir, d, ErrNotWritable)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("output directory %s: %w: %w", dir, err, ErrNotWritable)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return fmt.Errorf("output directory %s: %w: %w", dir, err, ErrNotWritable)
		}
		d = parent
	}
}

// Entry is a file a run wrote and its size in bytes.
type Entry struct {
	Path  string
	Bytes int64
}

// Manifest is the list of files a run wrote.
type Manifest struct {
	entries []Entry
}

// Add records that the run wrote path, of n bytes.
func (m *Manifest) Add(path string, n int64) {
	m.entries = append(m.entries, Entry{Path: path, Bytes: n})
}

// Entries returns the files recorded, in the order added.
func (m *Manifest) Entries() []Entry { return append([]Entry(nil), m.entries...) }

// Paths returns the paths recorded, in the order added.
func (m *Manifest) Paths() []string {
	out := make([]string, len(m.entries))
	for i, e := range m.entries {
		out[i] = e.Path
	}
	return out
}

// WriteTo writes one line per file, "  NAME  N bytes", sorted by name,
// names relative to dir when they are under it.
func (m *Manifest) WriteTo(w io.Writer, dir string) (int64, error) {
	es := m.Entries()
	name := func(p string) string {
		if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
		return p
	}
	sort.SliceStable(es, func(i, j int) bool { return name(es[i].Path) < name(es[j].Path) })
	var total int64
	for _, e := range es {
		n, err := fmt.Fprintf(w, "  %s  %d bytes\n", name(e.Path), e.Bytes)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
