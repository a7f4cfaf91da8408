package scenario

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the shipped scenarios' golden outputs under testdata/golden")

// goldenDir holds the golden outputs of the shipped scenarios, one
// directory per scenario.
const goldenDir = "testdata/golden"

// goldenSums is the manifest of a scenario's outputs kept by their SHA-256
// instead of their bytes, in sha256sum's format ("<hex>  <name>").
const goldenSums = "SHA256SUMS"

// maxGoldenBytes is the largest output kept byte for byte; a larger one,
// or one that is not UTF-8 text (a pcap, a PNG), is kept by its SHA-256 in
// SHA256SUMS.
const maxGoldenBytes = 256 << 10

// TestShippedScenarioOutputsGolden compares every output file of every
// shipped scenario (the first of TestShippedScenarios' two runs) with the
// golden files committed under testdata/golden/<scenario>/: a text output
// of at most 256 KiB byte for byte (the file itself), any other output —
// the fault-injection pcap, the sweep plots — by the SHA-256 listed in
// testdata/golden/<scenario>/SHA256SUMS. A file missing from either side
// fails too. It holds the shipped scenarios' outputs byte-identical across
// refactors.
//
// To accept a deliberate change of an output, rewrite the golden files and
// review the diff:
//
//	go test ./internal/scenario -run 'TestShippedScenario' -update
//
// The outputs name no path, host, wall time or Go version (the output
// directory is a fresh temporary one and the report lists its files
// relative to it). The PNG plots are the bytes gonum/plot and Go's
// image/png encoder produce, so a new version of either (go.mod) may change
// their hashes; the golden files were made on linux/amd64.
func TestShippedScenarioOutputsGolden(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	runs := shippedRuns(t)
	require.NotEmpty(t, runs)
	seen := map[string]bool{}
	for _, sr := range runs {
		seen[sr.name] = true
		t.Run(sr.name, func(t *testing.T) {
			require.NoError(t, sr.err[0])
			dir := filepath.Join(goldenDir, sr.name)
			if *update {
				require.NoError(t, os.RemoveAll(dir))
				require.NoError(t, writeGolden(dir, sr.outs[0]))
			}
			want, sums, err := readGolden(dir)
			require.NoError(t, err, "go test -update writes %s", dir)
			for _, name := range sortedKeys(sr.outs[0]) {
				got := sr.outs[0][name]
				if b, ok := want[name]; ok {
					assert.Equal(t, string(b), string(got), "%s differs from %s (go test -update rewrites it)", name, filepath.Join(dir, name))
				} else if sum, ok := sums[name]; ok {
					assert.Equal(t, sum, sha256Hex(got), "%s (%d bytes): its SHA-256 differs from the one in %s (go test -update rewrites it)",
						name, len(got), filepath.Join(dir, goldenSums))
				} else {
					assert.Fail(t, "an output without a golden file", "%s: not in %s (go test -update adds it)", name, dir)
				}
			}
			for _, name := range append(sortedKeys(want), sortedKeys(sums)...) {
				if _, ok := sr.outs[0][name]; !ok {
					assert.Fail(t, "a golden file the run did not write", "%s: in %s, not written by the run", name, dir)
				}
			}
		})
	}
	// A golden directory of a scenario no longer shipped is stale.
	entries, err := os.ReadDir(goldenDir)
	require.NoError(t, err)
	for _, e := range entries {
		if stale := filepath.Join(goldenDir, e.Name()); !seen[e.Name()] {
			if *update {
				require.NoError(t, os.RemoveAll(stale))
				continue
			}
			assert.Fail(t, "a golden directory of no shipped scenario", "%s: no scenarios/%s.yaml (go test -update removes it)", stale, e.Name())
		}
	}
}

// keptByHash says whether an output is kept by its SHA-256 instead of its
// bytes.
func keptByHash(b []byte) bool { return len(b) > maxGoldenBytes || !utf8.Valid(b) }

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeGolden writes a scenario's golden directory: the text outputs as
// they are, the others' SHA-256 in SHA256SUMS.
func writeGolden(dir string, outs map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var sums bytes.Buffer
	for _, name := range sortedKeys(outs) {
		if name == goldenSums {
			return fmt.Errorf("%s: an output named %s collides with the golden manifest", dir, goldenSums)
		}
		b := outs[name]
		if keptByHash(b) {
			fmt.Fprintf(&sums, "%s  %s\n", sha256Hex(b), name)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	if sums.Len() == 0 {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, goldenSums), sums.Bytes(), 0o644)
}

// readGolden reads a scenario's golden directory: the files kept byte for
// byte, and the SHA-256 of the others by name.
func readGolden(dir string) (files map[string][]byte, sums map[string]string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	files, sums = map[string][]byte{}, map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, nil, err
		}
		if e.Name() != goldenSums {
			files[e.Name()] = b
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for line := 1; sc.Scan(); line++ {
			sum, name, ok := strings.Cut(sc.Text(), "  ")
			if !ok || len(sum) != 2*sha256.Size || name == "" {
				return nil, nil, fmt.Errorf("%s:%d: expected \"<sha256>  <name>\", got %q", filepath.Join(dir, goldenSums), line, sc.Text())
			}
			sums[name] = sum
		}
	}
	return files, sums, nil
}
