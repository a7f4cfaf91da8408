package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A documented figure check is an HTML comment in a Markdown page, right
// after the paragraph that states the figures (README.md §Testing,
// "Figures the docs state"):
//
//	<!-- check: fabric sweep --system trn2-48xl -b 16M -e 16M => 2,615.46 12.43 -->
//	<!-- check slow: fabric sweep … => … -->
//
// The words before "=>" are neuronsim's arguments (no quoting: a value
// with spaces is written with commas, as --ring-order takes it); those
// after it are figures as the paragraph writes them. TestDocFigures runs
// each command in-process and holds every figure, written without its
// thousands commas, to a number the command printed, and to its
// paragraph, which must state it as written: a figure the tree no longer
// gives, or a paragraph that no longer states the checked figure, fails.
// A "slow" check (a command of more than a few seconds of host time) runs
// only with NEURONSIM_DOC_CHECKS=all.
var docCheck = regexp.MustCompile(`^<!-- check( slow)?: (.+?) => (.+?) -->$`)

// docCheckItem is one check comment of a page.
type docCheckItem struct {
	where     string   // file:line of the comment
	args      []string // the command's arguments
	figures   []string // the figures, as the paragraph writes them
	paragraph string   // the lines before the comment, up to a blank line
	slow      bool
}

// docCheckFiles are the pages whose figures are checked.
var docCheckFiles = []string{"README.md", "docs/fabric.md", "docs/collectives.md", "docs/scenarios.md", "docs/sweeps.md"}

// readDocChecks returns the check comments of the page at path (relative
// to the repository's root, root).
func readDocChecks(t *testing.T, root, path string) []docCheckItem {
	t.Helper()
	f, err := os.Open(filepath.Join(root, path))
	require.NoError(t, err)
	defer f.Close()
	var out []docCheckItem
	var para []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "<!-- check") {
			m := docCheck.FindStringSubmatch(line)
			require.NotNil(t, m, "%s:%d: a check comment is <!-- check: ARGS => FIGURES --> on one line", path, n)
			out = append(out, docCheckItem{where: fmt.Sprintf("%s:%d", path, n), args: strings.Fields(m[2]),
				figures: strings.Fields(m[3]), paragraph: strings.Join(para, "\n"), slow: m[1] != ""})
			continue
		}
		if strings.TrimSpace(line) == "" {
			para = para[:0]
			continue
		}
		para = append(para, line)
	}
	require.NoError(t, sc.Err())
	return out
}

// printedNumbers returns the numbers a command printed, each as written
// (a run of digits and points between characters that are neither).
func printedNumbers(out string) map[string]bool {
	nums := map[string]bool{}
	for _, w := range regexp.MustCompile(`[0-9][0-9.]*`).FindAllString(out, -1) {
		nums[strings.TrimRight(w, ".")] = true
	}
	return nums
}

// TestDocFigures holds the figures the docs state to what the tree gives
// (readDocChecks; the doc comment of docCheck).
func TestDocFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED TestDocFigures under -short: it runs the docs' commands")
	}
	if raceEnabled {
		t.Skip("SKIPPED TestDocFigures under -race: its commands are what the plain run checks, many times slower")
	}
	all := os.Getenv("NEURONSIM_DOC_CHECKS") == "all"
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	t.Chdir(root) // the docs' commands name paths from the repository's root
	seen := 0
	for _, page := range docCheckFiles {
		for _, c := range readDocChecks(t, root, page) {
			seen++
			t.Run(c.where, func(t *testing.T) {
				if c.slow && !all {
					t.Skipf("slow check (NEURONSIM_DOC_CHECKS=all runs it): neuronsim %s", strings.Join(c.args, " "))
				}
				for _, f := range c.figures {
					if !strings.Contains(c.paragraph, f) {
						t.Errorf("%s: the paragraph before the check does not state %s", c.where, f)
					}
				}
				out, err := runCLI(t, c.args...)
				require.NoError(t, err, "%s: neuronsim %s", c.where, strings.Join(c.args, " "))
				nums := printedNumbers(out)
				for _, f := range c.figures {
					want := strings.ReplaceAll(f, ",", "")
					if !nums[want] {
						t.Errorf("%s: the docs state %s, and neuronsim %s does not print it:\n%s", c.where, f, strings.Join(c.args, " "), out)
					}
				}
			})
		}
	}
	require.NotZero(t, seen, "no check comments found in %v", docCheckFiles)
}
