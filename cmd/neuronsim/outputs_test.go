package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/runtime/program"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

// dirNames lists a directory.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestSweepPcapMax: --pcap-max stops the capture cleanly: the file stays
// within it and reads back, the stop is noted, nothing temporary is left.
func TestSweepPcapMax(t *testing.T) {
	dir := t.TempDir()
	pcap := filepath.Join(dir, "f.pcap")
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetArgs([]string{"fabric", "sweep", "--arch", "cayman", "--devices", "4", "-b", "1M", "-e", "4M", "-f", "2", "--pcap", pcap, "--pcap-max", "64K"})
	require.NoError(t, root.Execute(), errOut.String())
	b, err := os.ReadFile(pcap)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), 64<<10)
	pk, err := capture.ReadAll(bytes.NewReader(b))
	require.NoError(t, err, "the pcap stays valid")
	assert.NotEmpty(t, pk)
	assert.Contains(t, errOut.String(), "--pcap: the capture stopped at --pcap-max (64KiB) after 935 packets; 17353 not recorded")
	assert.Equal(t, []string{"f.pcap"}, dirNames(t, dir))

	_, err = runCLI(t, "fabric", "sweep", "--devices", "4", "--pcap", pcap, "--pcap-max", "10")
	assert.ErrorContains(t, err, "--pcap-max")
}

// TestSweepChecksBeforeWork: output paths and the memory a functional sweep
// needs are checked before any system is built, and a refused sweep leaves
// an earlier run's files as they were.
func TestSweepChecksBeforeWork(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	js := filepath.Join(dir, "s.json")
	require.NoError(t, os.WriteFile(js, []byte("earlier"), 0o644))
	// Outputs that are one file through a link: l.png -> s.json, a link to
	// a file not there yet, a linked directory, a hard link.
	link := filepath.Join(dir, "l.png")
	require.NoError(t, os.Symlink("s.json", link))
	require.NoError(t, os.Symlink("later.json", filepath.Join(dir, "d.png")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Symlink("sub", filepath.Join(dir, "subl")))
	require.NoError(t, os.Link(js, filepath.Join(dir, "h.pcap")))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--json", filepath.Join(dir, "no", "s.json")}, "--json: output " + filepath.Join(dir, "no", "s.json") + ": directory " + filepath.Join(dir, "no") + " does not exist"},
		{[]string{"--json", js, "--plot", js}, "--plot " + js + ": the same file as --json " + js + "; one would be written over the other"},
		{[]string{"--json", js, "--plot", link}, "--plot " + link + ": the same file as --json " + js + " (both are " + js + ")"},
		{[]string{"--json", filepath.Join(dir, "later.json"), "--plot", filepath.Join(dir, "d.png")}, "--plot " + filepath.Join(dir, "d.png") + ": the same file as --json " + filepath.Join(dir, "later.json")},
		{[]string{"--json", filepath.Join(dir, "subl", "x.json"), "--plot", filepath.Join(dir, "sub", "x.json")},
			"--plot " + filepath.Join(dir, "sub", "x.json") + ": the same file as --json " + filepath.Join(dir, "subl", "x.json") + " (both are " + filepath.Join(dir, "sub", "x.json") + ")"},
		{[]string{"--json", js, "--pcap", filepath.Join(dir, "h.pcap")}, "--pcap " + filepath.Join(dir, "h.pcap") + ": the same file as --json " + js},
		{[]string{"--json", filepath.Join(dir, "r.json"), "--devices", "2,4", "--plot", filepath.Join(dir, "r-4devices.json")}, "--plot " + filepath.Join(dir, "r-4devices.json") + ": the same file as --json " + filepath.Join(dir, "r-4devices.json")},
		{[]string{"--pcap", dir}, "is a directory"},
		{[]string{"--pcap", filepath.Join(dir, "p.pcap"), "--devices", "2,4"}, "give one device count"},
		// 16 cayman devices, 1 GiB all-reduce: about 194 GiB.
		{[]string{"--json", js, "--devices", "16", "--mode", "functional", "-b", "1G", "-e", "1G"}, "all_reduce of 1 GiB on 16 ranks needs about 194 GiB of memory, more than the limit of"},
		{[]string{"--json", js, "--devices", "16", "--mode", "functional", "-b", "64M", "-e", "64M", "--mem-limit", "4G"}, "needs about 12.1 GiB of memory, more than the limit of 4 GiB (--mem-limit)"},
	} {
		start := time.Now()
		_, err := runCLI(t, append([]string{"fabric", "sweep", "--arch", "cayman"}, tc.args...)...)
		require.Error(t, err, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.want)
		assert.Less(t, time.Since(start), 5*time.Second, "refused before any work: %v", tc.args)
		b, err := os.ReadFile(js)
		require.NoError(t, err)
		assert.Equal(t, "earlier", string(b))
		for _, n := range dirNames(t, dir) {
			assert.False(t, output.IsTemp(n), n)
		}
	}
	if memlimit.Default().Bytes < 194<<30 {
		_, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "16", "--mode", "functional", "-b", "1G", "-e", "1G")
		assert.ErrorIs(t, err, memlimit.ErrTooLarge)
	}
}

// TestExecTileBounds: an --output or --input past a partition's end is
// refused before bring-up, naming the partition size it passes (it used to
// read past the partition, or stop with only "DMA queue halted").
func TestExecTileBounds(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "mm.s", cliMatmul)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.bin"), make([]byte, 128*0x100), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--arch", "cayman", "--output", "sbuf[0:128,0]:1000000=" + filepath.Join(dir, "y.bin")},
			"--output sbuf[0:128,0]:1000000=" + filepath.Join(dir, "y.bin") + ": program: SBUF bytes [0x0, 0xf4240) of each partition pass its end: a cayman SBUF partition holds 0x38000 bytes (229376)"},
		{[]string{"--arch", "mariana", "--output", "psum[0:128,0x3f00]:512=" + filepath.Join(dir, "y.bin")}, "a mariana PSUM partition holds 0x4000 bytes"},
		{[]string{"--arch", "sunda", "--input", "sbuf[0:128,0x2ff80]=" + filepath.Join(dir, "x.bin")}, "a sunda SBUF partition holds 0x30000 bytes"},
		{[]string{"--output", "sbuf[0:128,0]:256=" + filepath.Join(dir, "no", "y.bin")}, "does not exist"},
		{[]string{"--output", "sbuf[0:128,0]:256=" + filepath.Join(dir, "y.bin"), "--trace", filepath.Join(dir, "y.bin")}, "the same file as --trace"},
	} {
		_, err := runCLI(t, append([]string{"exec", prog}, tc.args...)...)
		require.Error(t, err, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.want)
		assert.NoFileExists(t, filepath.Join(dir, "y.bin"))
	}
	_, err := runCLI(t, "exec", prog, "--output", "sbuf[0:128,0]:1000000="+filepath.Join(dir, "y.bin"))
	assert.ErrorIs(t, err, program.ErrTileBounds)
}

// TestExecTraceMax: --trace-max bounds the trace, which says it stopped.
func TestExecTraceMax(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "mm.s", cliMatmul)
	trace := filepath.Join(dir, "t.json")
	out, err := runCLI(t, "exec", prog, "--arch", "cayman", "--trace", trace, "--trace-max", "2K")
	require.NoError(t, err, out)
	b, err := os.ReadFile(trace)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), 2048)
	assert.Contains(t, string(b), `"stopped": "size limit of 2048 bytes reached"`)
	assert.Contains(t, out, "trace: stopped at --trace-max (2KiB)")
}

// TestExecTraceMaxNeedsTrace: --trace-max without --trace would bound
// nothing; it is refused before the program is read, not ignored.
func TestExecTraceMaxNeedsTrace(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "mm.s", cliMatmul)
	out, err := runCLI(t, "exec", prog, "--arch", "cayman", "--trace-max", "2K")
	require.Error(t, err, out)
	assert.Equal(t, "--trace-max: it bounds the --trace file; give --trace too", err.Error())
	assert.NotContains(t, out, "device time")
}

// TestSnapshotRestoreBlamesTheSnapshot: restore takes the system from the
// snapshot (the scenario need not repeat it), and a damaged snapshot is
// named as the fault, not the scenario's step.
func TestSnapshotRestoreBlamesTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "sys.snap")
	out, err := runCLI(t, "snapshot", "save", "qemu-cayman", snap, "--out", filepath.Join(dir, "a"))
	require.NoError(t, err, out)
	more := writeFile(t, dir, "more.yaml", "name: more\nsteps:\n  - dma_copy: {bytes: 4K}\n")
	out, err = runCLI(t, "snapshot", "restore", snap, more, "--out", filepath.Join(dir, "b"))
	require.NoError(t, err, out)
	assert.Contains(t, out, "scenario more: 1 device, 2 steps")

	b, err := os.ReadFile(snap)
	require.NoError(t, err)
	b[len(b)-10] ^= 1
	flip := filepath.Join(dir, "flip.snap")
	require.NoError(t, os.WriteFile(flip, b, 0o644))
	withSystem := writeFile(t, dir, "sys.yaml", "name: more\nsystem: {arch: cayman, revision: qemu, mode: functional}\nsteps:\n  - dma_copy: {bytes: 4K}\n")
	for _, sc := range []string{more, withSystem} {
		_, err = runCLI(t, "snapshot", "restore", flip, sc, "--out", filepath.Join(dir, "c"))
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), "snapshot "+flip+": fabric snapshot: checksum mismatch"), err.Error())
		assert.NotContains(t, err.Error(), "steps[0]")
	}
	assert.NoDirExists(t, filepath.Join(dir, "c"), "nothing ran")
}

// TestSweepPcapRefusesUnrecordableSystem: a system with a switch port past
// the capture header's 8-bit port field (a star of 260 devices) is
// refused with --pcap before the sweep runs (it ran two minutes first, to
// fail at the first packet through port 256), and no pcap is left.
func TestSweepPcapRefusesUnrecordableSystem(t *testing.T) {
	dir := t.TempDir()
	pcap := filepath.Join(dir, "big.pcap")
	_, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--what-if", "--devices", "260", "--topology", "star",
		"--op", "all_gather", "-b", "4K", "-e", "4K", "--pcap", pcap)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--pcap: fabric capture: link neuron256:0→sw:256 (link): port 256 does not fit the capture header's 8-bit port (0..255)")
	assert.NoFileExists(t, pcap)
}

// TestSweepKeepsFinishedSizes: a sweep stopped by a size that does not
// finish in the 10 s of device time a collective may take prints the rows
// of the sizes before it and writes them to --json, the report marked
// "neuronsim_incomplete" with the size and the error — with several device
// counts, the systems swept before too — and fails naming the size and the
// limit; --plot is not written (an earlier file stays), nor is a report of
// a system not run. Until 2026-12-07 nothing was printed or written.
func TestSweepKeepsFinishedSizes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		json    []string // the --json files written
		rows    []int    // their rows
		stopped int64    // the size the last stopped at
		more    string   // what the note says of the sizes after it
	}{
		// 100 kB/s links: 64K takes 0.66 s, 256K 2.6 s, 1M would take 10.5 s.
		{"one device count", []string{"--devices", "2", "-b", "64K", "-e", "4M", "-f", "4", "--json", "s.json"},
			[]string{"s.json"}, []int{2}, 1 << 20, " (1 size after it not run)"},
		// 768K takes 7.9 s on 2 devices and more than 10 s on 4.
		{"the second device count", []string{"--devices", "2,4", "-b", "512K", "-e", "768K", "-i", "256K", "--json", "s.json"},
			[]string{"s-2devices.json", "s-4devices.json"}, []int{2, 1}, 768 << 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			require.NoError(t, os.WriteFile("p.png", []byte("earlier"), 0o644))
			out, err := runCLI(t, append([]string{"fabric", "sweep", "--arch", "cayman", "--link-bw", "100KB/s", "--plot", "p.png"}, tc.args...)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("%d bytes: enc: all_reduce did not finish: rank 0 not done after 10s of device time", tc.stopped))
			assert.Contains(t, err.Error(), "(the rows of the sizes before it are printed above and written to --json, marked incomplete (neuronsim_incomplete); --plot not written)")
			note := fmt.Sprintf("the sweep stopped at %d bytes%s, which failed: ", tc.stopped, tc.more)
			assert.Contains(t, out, "# incomplete: "+note)
			assert.Equal(t, append([]string{"p.png"}, tc.json...), dirNames(t, dir))
			b, err := os.ReadFile("p.png")
			require.NoError(t, err)
			assert.Equal(t, "earlier", string(b))
			for i, name := range tc.json {
				b, err := os.ReadFile(name)
				require.NoError(t, err)
				var rep struct {
					Results    []map[string]any `json:"results"`
					Incomplete string           `json:"neuronsim_incomplete"`
				}
				require.NoError(t, json.Unmarshal(b, &rep), name)
				assert.Len(t, rep.Results, tc.rows[i], name)
				if i < len(tc.json)-1 {
					assert.Empty(t, rep.Incomplete, "%s: a system swept whole", name)
					continue
				}
				assert.Contains(t, rep.Incomplete, note, name)
				assert.Contains(t, rep.Incomplete, "10s of device time", name)
			}
		})
	}
}
