package guesttest

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// File is one entry of an initramfs: a regular file with its contents
// (from Data, or read from Source when Data is nil), a folder (Dir), or a
// symbolic link (Link, its target).
type File struct {
	Path   string // inside the archive, without a leading slash
	Mode   os.FileMode
	Data   []byte
	Source string
	Dir    bool
	Link   string
}

// maxFile bounds one file of an initramfs (the driver module is ~10 MB,
// a static neuronsim ~30 MB).
const maxFile = 256 << 20

// WriteInitramfs writes files as a gzip-compressed newc cpio archive, the
// form the kernel unpacks as its initial root. Folders named by a file's
// path are added when missing; entries are written in path order, so the
// same files give the same archive.
func WriteInitramfs(w io.Writer, files []File) error {
	seen := map[string]bool{}
	var all []File
	for _, f := range files {
		p := strings.Trim(path.Clean("/"+f.Path), "/")
		if p == "" {
			return fmt.Errorf("initramfs: empty path")
		}
		if seen[p] {
			return fmt.Errorf("initramfs: %s given twice", p)
		}
		seen[p] = true
		f.Path = p
		all = append(all, f)
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if !seen[d] {
				seen[d] = true
				all = append(all, File{Path: d, Dir: true, Mode: 0o755})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Path < all[j].Path })
	zw := gzip.NewWriter(w)
	for i, f := range all {
		mode := uint32(f.Mode.Perm())
		data := f.Data
		switch {
		case f.Dir:
			mode |= 0o040000
		case f.Link != "":
			mode |= 0o120000 | 0o777
			data = []byte(f.Link)
		default:
			mode |= 0o100000
			if data == nil && f.Source != "" {
				fi, err := os.Stat(f.Source)
				if err != nil {
					return fmt.Errorf("initramfs: %s: %w", f.Path, err)
				}
				if fi.Size() > maxFile {
					return fmt.Errorf("initramfs: %s: %s is %d bytes, more than %d", f.Path, f.Source, fi.Size(), maxFile)
				}
				if data, err = os.ReadFile(f.Source); err != nil {
					return fmt.Errorf("initramfs: %s: %w", f.Path, err)
				}
			}
		}
		if err := writeEntry(zw, uint32(i+1), f.Path, mode, data); err != nil {
			return err
		}
	}
	if err := writeEntry(zw, 0, "TRAILER!!!", 0, nil); err != nil {
		return err
	}
	return zw.Close()
}

// writeEntry writes one newc header, the NUL-terminated name and the data,
// each padded to 4 bytes.
func writeEntry(w io.Writer, ino uint32, name string, mode uint32, data []byte) error {
	nlink := uint32(1)
	if mode&0o170000 == 0o040000 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	buf := append([]byte(hdr), name...)
	buf = append(buf, 0)
	buf = pad4(buf)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if _, err := w.Write(make([]byte, (4-len(data)%4)%4)); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return nil
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
