package repotest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// moduleRoot is the directory of go.mod, two up from this package.
const moduleRoot = "../.."

// fileComment matches a package doc that describes one file instead of the
// package ("This file holds ...", "This file set is ...").
var fileComment = regexp.MustCompile(`(?i)\bthis file\b`)

// Every package has exactly one package doc comment, in a non-test file,
// that begins "Package <name>" ("Command <name>" for a main package) and
// describes the package, not one of its files. go doc joins every file's
// package comment, so a second one, or a file's own description written
// above its package clause, becomes part of the package doc.
func TestEveryPackageHasOnePackageDoc(t *testing.T) {
	dirs := map[string][]string{} // directory → its non-test Go files
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != moduleRoot && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != moduleRoot {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found %d packages under %s: not the module root?", len(dirs), moduleRoot)
	}
	for dir, files := range dirs {
		rel, _ := filepath.Rel(moduleRoot, dir)
		var docs []string
		pkg := ""
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			pkg = af.Name.Name
			if af.Doc != nil {
				docs = append(docs, filepath.Base(f))
				text := af.Doc.Text()
				prefix := "Package " + pkg + " "
				if pkg == "main" {
					prefix = "Command "
				}
				if !strings.HasPrefix(text, prefix) {
					t.Errorf("%s: %s: package doc begins %q, want %q", rel, filepath.Base(f), firstLine(text), prefix+"...")
				}
				if loc := fileComment.FindStringIndex(text); loc != nil {
					t.Errorf("%s: %s: package doc describes a file (%q); say the package's job, and keep a file's notes below its package clause", rel, filepath.Base(f), text[loc[0]:min(len(text), loc[1]+30)])
				}
			}
		}
		switch len(docs) {
		case 0:
			t.Errorf("%s: package %s has no package doc comment (add one, in doc.go)", rel, pkg)
		case 1:
		default:
			t.Errorf("%s: package %s has %d package doc comments (%s); go doc joins them — keep one", rel, pkg, len(docs), strings.Join(docs, ", "))
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
