package scenario

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/scenarios"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

// TestShippedScenarios runs every shipped scenario twice: each passes its
// own checks, and the two runs write byte-identical outputs (determinism).
// The runs are shared with TestShippedScenarioOutputsGolden (shippedRuns).
func TestShippedScenarios(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	runs := shippedRuns(t)
	require.GreaterOrEqual(t, len(runs), 10)
	for _, sr := range runs {
		t.Run(sr.name, func(t *testing.T) {
			var outs [2]map[string][]byte
			for i := range outs {
				require.NoError(t, sr.err[i])
				require.Equal(t, sr.want, sr.steps[i], "every step ran")
				outs[i] = sr.outs[i]
			}
			require.NotEmpty(t, outs[0])
			for f, b := range outs[0] {
				assert.True(t, bytes.Equal(b, outs[1][f]), "%s differs between two runs", f)
			}
		})
	}
}

// shippedRun is one shipped scenario run twice.
type shippedRun struct {
	name  string // the file name without .yaml
	want  int    // the scenario's steps
	steps [2]int // the steps each run did
	err   [2]error
	outs  [2]map[string][]byte // each run's output files by name
}

var shipped struct {
	once sync.Once
	runs []*shippedRun
	err  error
}

// shippedRuns runs every shipped scenario twice, once per test binary, so
// that TestShippedScenarios (the two runs agree) and
// TestShippedScenarioOutputsGolden (the first run agrees with the golden
// files) share the runs.
func shippedRuns(t *testing.T) []*shippedRun {
	t.Helper()
	shipped.once.Do(func() {
		names, err := fs.Glob(scenarios.FS, "*.yaml")
		if err != nil {
			shipped.err = err
			return
		}
		for _, name := range names {
			sr := &shippedRun{name: strings.TrimSuffix(name, ".yaml")}
			for i := range sr.outs {
				p, err := LoadFS(scenarios.FS, name)
				if err != nil {
					sr.err[i] = err
					continue
				}
				sr.want = len(p.Steps)
				dir, err := os.MkdirTemp("", "scenario-"+sr.name+"-")
				if err != nil {
					sr.err[i] = err
					continue
				}
				sum, err := p.Run(Options{OutDir: dir})
				if sum != nil {
					sr.steps[i] = sum.Steps
				}
				sr.err[i] = err
				if err == nil {
					sr.outs[i], sr.err[i] = readOutputs(dir)
				}
				os.RemoveAll(dir)
			}
			shipped.runs = append(shipped.runs, sr)
		}
	})
	require.NoError(t, shipped.err)
	return shipped.runs
}

// readOutputs reads every file of an output directory by name.
func readOutputs(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = b
	}
	return out, nil
}

// TestParseErrors: bad scenarios fail with file:line:column and what was
// expected, before anything runs.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown key", "name: x\nsystem: {arch: mariana}\nsteps:\n  - bringup: {expect_rest: true}\n", `x.yaml:4:`},
		{"unknown step", "name: x\nsystem: {arch: mariana}\nsteps:\n  - launch: {}\n", `x.yaml:4:5: steps[0]: unknown step "launch"`},
		{"wrong type", "name: x\nsystem: {arch: mariana, devices: many}\n", `x.yaml:2:`},
		{"33 devices on v1", "name: x\nsystem: {arch: mariana, switch: v1, devices: 33}\n", `x.yaml:2:46: system.devices: 33: a mariana system with switch v1 holds 1..32 devices (get_max_devs); what_if: true allows up to 16384`},
		{"17 devices without v1", "name: x\nsystem: {arch: mariana, switch: none, devices: 17}\n", `holds 1..16 devices`},
		{"core beyond num_tpb", "name: x\nsystem: {arch: sunda}\nsteps:\n  - exec: {core: 2, source: nop}\n", `x.yaml:4:`},
		{"bad arch", "name: x\nsystem: {arch: trn9}\n", `x.yaml:2:16: system.arch: expected sunda|cayman|mariana`},
		{"missing name", "system: {arch: sunda}\n", `missing key "name"`},
		{"device index", "name: x\nsystem: {arch: cayman, devices: 2}\nsteps:\n  - csr_read: {device: 2, offset: 0}\n", `device 2: the system has devices 0..1`},
		{"bad size", "name: x\nsystem: {arch: cayman}\nsteps:\n  - collective: {op: all_reduce, size: 1X}\n", `steps[0].collective.size: "1X": unknown unit "X"`},
		{"bad op", "name: x\nsystem: {arch: cayman}\nsteps:\n  - collective: {op: broadcast, size: 1K}\n", `x.yaml:4:`},
		{"bad fault", "name: x\nsystem: {arch: cayman}\nsteps:\n  - fault: {kind: meltdown}\n", `expected link_down, link_up or device_reset`},
		{"tpb beyond num_tpb", "name: x\nsystem: {arch: sunda}\nsteps:\n  - reset: {tpbs: [0, 2]}\n", `core 2: a sunda device has NeuronCores 0..1`},
		{"snapshot both", "name: x\nsystem: {arch: sunda}\nsteps:\n  - snapshot: {save: a, restore: b}\n", `give exactly one of save and restore`},
		// The switched topologies are Trn3's (fabric.Kind.GenerationRefusal):
		// a Trn1 switch once ran on Trn3's link figures, a Trn2 one was
		// refused at run time by the pod-port budget, naming no key.
		{"switch on trn1", "name: x\nsystem: {arch: trn1, devices: 4, topology: switch}\n", `x.yaml:2:44: system.topology: switch: a switch topology is Trn3's: only mariana (Trn3) systems have NeuronSwitch`},
		{"switch on trn2", "name: x\nsystem: {arch: trn2, devices: 4, topology: switch}\n", `system.topology: switch: a switch topology is Trn3's`},
		{"trn3-gen2 on cayman", "name: x\nsystem: {arch: cayman, devices: 144, what_if: true, topology: trn3-gen2}\n", `system.topology: trn3-gen2: a trn3-gen2 topology is Trn3's`},
		// hier's group is a node; one node has none (once refused at size
		// in the encoder's words).
		{"hier on one node", "name: x\nsystem: {arch: trn2, devices: 4}\nsteps:\n  - collective: {op: all_reduce, algo: hier, size: 1M}\n", `x.yaml:4:40: steps[0].collective.algo: hier: its groups are the nodes (a node's ranks each), and this system is one node; give system.nodes 2 or more`},
		{"hier sweep on one node", "name: x\nsystem: {arch: trn2, devices: 4}\nsteps:\n  - sweep: {op: all_gather, algo: hier, min: 1K, max: 4K}\n", `steps[0].sweep.algo: hier: its groups are the nodes`},
		{"two programs", "name: x\nsystem: {arch: cayman}\nsteps:\n  - validate: {program: a.s, source: nop}\n", `exactly one of program`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.doc))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrStrict), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestStepFailureStops: a step whose expectation does not hold stops the
// run with an error naming it, and the report so far is written.
func TestStepFailureStops(t *testing.T) {
	doc := "name: x\nsystem: {arch: sunda, boot: false, reset: false}\nsteps:\n" +
		"  - csr_read: {offset: 0x30FA0024, expect: 7}\n  - dve_load: {}\n"
	p, err := Parse("x.yaml", []byte(doc))
	require.NoError(t, err)
	dir := t.TempDir()
	sum, err := p.Run(Options{OutDir: dir})
	require.ErrorIs(t, err, ErrFailed)
	assert.Contains(t, err.Error(), "x.yaml: steps[0] (csr_read)")
	assert.Equal(t, 0, sum.Steps)
	report, rerr := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, rerr)
	assert.Contains(t, string(report), "FAILED")
}

// FuzzParse: any bytes as a scenario never panic the parser.
func FuzzParse(f *testing.F) {
	names, _ := fs.Glob(scenarios.FS, "*.yaml")
	for _, n := range names {
		b, _ := fs.ReadFile(scenarios.FS, n)
		f.Add(b)
	}
	f.Add([]byte("name: x\nsystem: {arch: mariana, devices: 99}\n"))
	f.Add([]byte("steps: [{fault: {kind: link_down, to: l1-sw0, in: -1s}}]"))
	f.Add([]byte("name: x\nsystem: trn3-gen2\n"))
	f.Add([]byte("name: x\nsystem: {name: trn3-gen1, devices: 32, what_if: true}\n"))
	f.Add([]byte("name: x\nsystem: {arch: mariana, devices: 99999999999999999999, what_if: true, nodes: -99999999999999999999, ranks_per_device: 0x7fffffffffffffff}\n"))
	f.Add([]byte("name: x\nsystem: {name: trn2-48xl, nodes: 2, efa: {network: fat-tree, oversubscription: 2, bandwidth: 400Gbps, latency_ns: 15000, leaf_ports: 8, spines: 1, devices_per_nic: 2}}\n"))
	f.Add([]byte("name: x\nsystem: {arch: inf2, devices: 4, nodes: 0, efa: {bandwidth: 50, latency_ns: 100}}\n"))
	f.Add([]byte("name: x\nsystem: {arch: cayman, link_bw_gbs: 1.5e-9}\nsteps: []\n"))
	f.Add([]byte("name: x\nsteps:\n  - csr_write: {device: 0, offset: 18446744073709551615, value: 1}\n"))
	f.Add([]byte("name: x\nsteps:\n  - validate: {program: /dev/zero}\n"))
	f.Add([]byte("name: x\noutputs: {dir: ., report: fuzz.yaml}\nsteps: []\n"))
	f.Add([]byte("name: x\nsystem: {arch: mariana, devices: 1024, what_if: true, mode: timing}\nsteps:\n  - sweep: {op: all_reduce, min: 1K, max: 1G, factor: 4}\n"))
	f.Add([]byte("name: x\nsystem: {name: trn2-48xl, switch: none}\nsteps:\n  - snapshot: {restore: s.snap}\n"))
	f.Add([]byte("name: x\nsystem: trn3-gen1\nsteps:\n  - snapshot: {restore: ~}\n  - bringup:\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err == nil && p.Name == "" {
			t.Fatal("a parsed scenario has a name (it is required)")
		}
	})
}

// TestSnapshotStepsRoundTrip: a scenario that saves the system and goes on
// with a sweep, and one that restores the saved system and runs the same
// sweep, write byte-identical sweep results, and the restoring one's pcap
// holds exactly the packets the saving one captured after the save (the
// capture continues across the snapshot); a corrupted snapshot is refused
// by the restore step.
func TestSnapshotStepsRoundTrip(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	sys := "system: {arch: mariana, devices: 4, mode: functional, seed: 3, buffer_bytes: 4M, reset: false}\n"
	tail := "  - sweep: {op: all_reduce, min: 64K, max: 1M, factor: 4}\n"
	first := "name: first\n" + sys + "steps:\n  - collective: {op: all_gather, size: 256K}\n  - snapshot: {save: mid.snap}\n" + tail +
		"outputs: {json: first.json, pcap: first.pcap}\n"
	second := "name: second\n" + sys + "steps:\n  - snapshot: {restore: mid.snap}\n" + tail + "outputs: {json: second.json, pcap: second.pcap}\n"
	for _, doc := range []string{first, second} {
		p, err := Parse("x.yaml", []byte(doc))
		require.NoError(t, err)
		_, err = p.Run(Options{OutDir: dir})
		require.NoError(t, err)
	}
	a, err := os.ReadFile(filepath.Join(dir, "first.json"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "second.json"))
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b), "the sweep after a restore equals the one after the save")
	read := func(name string) []capture.Packet {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		defer f.Close()
		pk, err := capture.ReadAll(f)
		require.NoError(t, err)
		return pk
	}
	pa, pb := read("first.pcap"), read("second.pcap")
	require.NotEmpty(t, pb, "the restored system's traffic is captured")
	require.Greater(t, len(pa), len(pb), "the saving scenario captured the collective before the save too")
	assert.Equal(t, pa[len(pa)-len(pb):], pb, "after the restore, the same packets as after the save")

	snap, err := os.ReadFile(filepath.Join(dir, "mid.snap"))
	require.NoError(t, err)
	snap[len(snap)-10] ^= 1
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.snap"), snap, 0o644))
	p, err := Parse("x.yaml", []byte("name: bad\n"+sys+"steps:\n  - snapshot: {restore: bad.snap}\n"))
	require.NoError(t, err)
	_, err = p.Run(Options{OutDir: dir})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "checksum mismatch")
}

// TestRestoreCannotRewindACapture: restoring a snapshot older than packets
// the pcap output already holds is refused, as a pcap cannot go back in
// time.
func TestRestoreCannotRewindACapture(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	back := "name: back\nsystem: {arch: mariana, devices: 4, mode: functional, seed: 5, buffer_bytes: 4M, reset: false}\n" +
		"steps:\n  - collective: {op: all_gather, size: 64K}\n  - snapshot: {save: early.snap}\n" +
		"  - collective: {op: all_gather, size: 64K}\n  - snapshot: {restore: early.snap}\noutputs: {pcap: back.pcap}\n"
	p, err := Parse("x.yaml", []byte(back))
	require.NoError(t, err)
	_, err = p.Run(Options{OutDir: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a capture cannot go back in time")
}
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out, err := readOutputs(dir)
	require.NoError(t, err)
	return out
}
