package scenario

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestWhatIfPast64Devices (issue 16): a what_if scenario past the
// driver's 64 devices — 128, timing-only — is built and brought up, each
// device past the 64th by its fabric-window index as routing id, and runs
// an all-reduce sweep on all of its ranks, as fabric sweep --what-if does.
func TestWhatIfPast64Devices(t *testing.T) {
	if raceEnabled {
		t.Skip("a 128-device system")
	}
	doc := "name: x\nsystem: {arch: mariana, devices: 128, what_if: true, mode: timing, buffer_bytes: 4M}\nsteps:\n" +
		"  - bringup: {expect_reset: true}\n  - sweep: {op: all_reduce, min: 128K, max: 512K, factor: 4}\n"
	p, err := Parse("x.yaml", []byte(doc))
	require.NoError(t, err)
	dir := t.TempDir()
	sum, err := p.Run(Options{OutDir: dir})
	require.NoError(t, err)
	assert.Equal(t, 128, sum.Devices)
	assert.Equal(t, 2, sum.Steps)
	require.Len(t, sum.Sweeps, 1)
	rep := sum.Sweeps[0]
	assert.Equal(t, 128, rep.Ranks)
	require.Len(t, rep.Rows, 2)
	for _, row := range rep.Rows {
		assert.Positive(t, row.TimeUS)
		assert.Positive(t, row.BusBW)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "status: complete")
	assert.Contains(t, string(report), "neuron64: mariana rev 0x00 (silicon), registers in BAR0, routing id 64,")
	assert.Contains(t, string(report), "neuron127: mariana rev 0x00 (silicon), registers in BAR0, routing id 127,")
}

// TestWhatIfEveryStep: every kind of step runs on a what-if system past
// the driver's 64 devices (72, timing-only), on the devices past the 64th
// — which bring-up named by their index — as on the others.
func TestWhatIfEveryStep(t *testing.T) {
	if raceEnabled {
		t.Skip("a 72-device system")
	}
	doc := "name: x\nsystem: {arch: mariana, devices: 72, what_if: true, buffer_bytes: 4M}\nsteps:\n" +
		"  - bringup: {expect_reset: true, expect_register_bar: 0}\n" +
		"  - csr_write: {device: 71, offset: 0x0, value: 0}\n" +
		"  - csr_read: {device: 70, offset: 0x0}\n" +
		"  - dve_load: {devices: [0, 64, 71], cores: [0, 7]}\n" +
		"  - validate: {device: 70, core: 3, program: ../../scenarios/programs/matmul.s}\n" +
		"  - exec: {device: 70, core: 7, program: ../../scenarios/programs/matmul.s}\n" +
		"  - dma_copy: {device: 71, core: 7, bytes: 64K}\n" +
		"  - collective: {op: all_reduce, size: 72K}\n" +
		"  - sweep: {op: all_gather, min: 72K, max: 144K, factor: 2}\n" +
		"  - snapshot: {save: s.snap}\n" +
		"  - snapshot: {restore: s.snap}\n" +
		"  - reset: {device: 70}\n" +
		"  - fault: {kind: device_reset, device: 68, in: 1us}\n" +
		"  - collective: {op: all_reduce, size: 72K, expect_error: \"device 68 does not answer\"}\n" +
		"  - recover:\n" +
		"  - collective: {op: all_reduce, size: 72K}\n"
	p, err := Parse("x.yaml", []byte(doc))
	require.NoError(t, err)
	kinds := map[string]bool{}
	for i := range p.Steps {
		kinds[p.Steps[i].Kind()] = true
	}
	for _, k := range stepKinds {
		assert.True(t, kinds[k], "no %s step: every kind runs past 64 devices", k)
	}
	dir := t.TempDir()
	sum, err := p.Run(Options{OutDir: dir})
	require.NoError(t, err)
	assert.Equal(t, len(p.Steps), sum.Steps)
	report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	for _, want := range []string{"neuron71: mariana rev 0x00 (silicon), registers in BAR0, routing id 71,",
		"neuron70 register 0x0 = ", "default DVE tables on 6 cores of 3 devices", "neuron70 core 7 pe: 2 records",
		"neuron71 core 7: 65536 bytes host → device → host", "all_reduce of 73728 bytes (fp32) on 72 ranks",
		"neuron70: device reset in", "failed as expected", "devices brought up again"} {
		assert.Contains(t, string(report), want)
	}
}

// TestWhatIfMemoryRefused: a what_if scenario whose steps, or whose
// devices alone, would hold more host memory than the limit is refused
// before anything is built, naming the step (or the system), what it
// needs and the limit: a functional collective's payloads on 1,024 ranks,
// a timing-only ring's records on 1,024, the default DVE tables on every
// core of 16,384 devices, 16,384 devices brought up.
func TestWhatIfMemoryRefused(t *testing.T) {
	limit := func(g uint64) memlimit.Limit { return memlimit.Limit{Bytes: g << 30, Source: "test"} }
	for _, tc := range []struct {
		name, system, steps string
		limit               memlimit.Limit
		want                string
	}{
		{"functional collective", "devices: 1024, mode: functional", "  - bringup:\n  - collective: {op: all_reduce, size: 16M}\n", limit(16),
			"x.yaml: steps[1] (collective): a functional all_reduce of 16 MiB on 1024 ranks needs about 192 GiB of memory, more than the limit of 16 GiB (test)"},
		{"timing-only sweep", "devices: 1024, buffer_bytes: 4G", "  - sweep: {op: all_reduce, algo: ring, min: 1G, max: 1G}\n", limit(2),
			"x.yaml: steps[0] (sweep): a timing-only all_reduce sweep up to 1 GiB on 1024 ranks of 1024 devices needs about 3.2 GiB of memory, more than the limit of 2 GiB (test)"},
		{"DVE tables everywhere", "devices: 16384", "  - dve_load:\n", limit(16),
			"x.yaml: steps[0] (dve_load): the default DVE tables on 131072 cores of a system of 16384 devices needs about 20 GiB of memory, more than the limit of 16 GiB (test)"},
		{"the system itself", "devices: 16384", "  - bringup:\n", limit(1),
			"x.yaml: system: the system of 16384 devices needs about 4 GiB of memory, more than the limit of 1 GiB (test)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built := 0
			buildCluster = func(cfg cluster.Config) (*cluster.Cluster, error) {
				built++
				return cluster.New(cfg)
			}
			defer func() { buildCluster = cluster.New }()
			doc := "name: x\nsystem: {arch: mariana, what_if: true, " + tc.system + "}\nsteps:\n" + tc.steps
			p, err := Parse("x.yaml", []byte(doc))
			require.NoError(t, err)
			_, err = p.Run(Options{OutDir: t.TempDir(), MemLimit: tc.limit})
			require.Error(t, err)
			assert.ErrorIs(t, err, memlimit.ErrTooLarge)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, 0, built, "no device is brought up")
		})
	}
}

// TestDVELoadHostBytes: dveLoadHostBytes, what the memory check counts a
// dve_load's core load at, is above the heap one holds and not more than
// 4× it, on every generation.
func TestDVELoadHostBytes(t *testing.T) {
	if raceEnabled {
		t.Skip("SKIPPED under -race: it measures the heap")
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, arch := range []string{"sunda", "cayman", "mariana"} {
		t.Run(arch, func(t *testing.T) {
			p, err := Parse("x.yaml", []byte("name: x\nsystem: {arch: "+arch+", devices: 8, topology: ring}\nsteps:\n  - dve_load:\n"))
			require.NoError(t, err)
			c, err := cluster.New(p.sys.clusterConfig())
			require.NoError(t, err)
			run := &runner{p: p, r: p.sys, c: c}
			st := p.Steps[0].Action.(*DVELoadStep)
			loads := uint64(st.loads(p.sys))
			h0 := heap()
			require.NoError(t, st.run(run))
			h1 := heap()
			held := (h1 - min(h1, h0)) / loads
			runtime.KeepAlive(run)
			t.Logf("%s: %d loads, %d bytes each held", arch, loads, held)
			assert.Less(t, held, uint64(dveLoadHostBytes), "a load holds more than dveLoadHostBytes")
			assert.Greater(t, 4*held, uint64(dveLoadHostBytes), "dveLoadHostBytes is more than 4× what a load holds")
		})
	}
}

// TestWhatIfRestore: a snapshot of a what-if system past get_max_devs
// (128 devices) restores under a scenario that describes no system: the
// device count is the snapshot's, bounded as a what-if one's, as a named
// system's is its own.
func TestWhatIfRestore(t *testing.T) {
	if raceEnabled {
		t.Skip("a 128-device system")
	}
	sys, err := fabric.New(fabric.Config{Generation: hwarch.Mariana, Devices: 128, Kind: fabric.KindSwitch, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	p, err := ParseWith("x.yaml", []byte("name: x\nsteps:\n  - csr_read: {device: 127, offset: 0}\n"), &Base{From: "t.snap", System: sys})
	require.NoError(t, err)
	assert.Equal(t, 128, p.sys.devices)
	sum, err := p.Run(Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	assert.Equal(t, 128, sum.Devices)
}

// TestScenarioRanksBound: a scenario whose collective or sweep step would
// run on more ranks than a collective has (enc.MaxRanks, 4096) is refused
// when the file is read, at the system key that made the count and with
// the bound — system.nodes when there are several nodes, as fabric sweep
// names --nodes (cluster.CheckRanks). 29 Gen2 UltraServers (4176
// devices) were refused at steps[0].sweep.max with the encoder's "rank
// count 4176 outside 1..4096", naming no system key. A system with no
// collective step may be that large; 28 UltraServers (4032) are not
// refused.
func TestScenarioRanksBound(t *testing.T) {
	sweep := "steps:\n  - sweep: {op: all_reduce, min: 1M, max: 1M}\n"
	for _, tc := range []struct {
		name, doc, want string // want "": accepted
	}{
		{"29 gen2 nodes, a sweep", "system: {name: trn3-gen2, nodes: 29}\n" + sweep,
			"x.yaml:2:34: system.nodes: 29: 29 nodes of 144 devices × 1 rank per device are 4176 ranks; a collective runs on at most 4096 (at most 28 such nodes); steps[0] runs one"},
		{"29 gen2 nodes, a collective second", "system: {name: trn3-gen2, nodes: 29}\nsteps:\n  - bringup: {}\n  - collective: {op: all_reduce, size: 1M}\n",
			"system.nodes: 29: 29 nodes of 144 devices × 1 rank per device are 4176 ranks; a collective runs on at most 4096 (at most 28 such nodes); steps[1] runs one"},
		{"what-if devices × ranks per device", "system: {arch: mariana, devices: 2048, what_if: true, ranks_per_device: 4}\n" + sweep,
			"system.ranks_per_device: 4: 2048 devices × 4 ranks per device is 8192 ranks; a collective runs on at most 4096"},
		{"what-if devices", "system: {arch: mariana, devices: 8192, what_if: true}\n" + sweep,
			"system.devices: 8192: 8192 devices × 1 rank per device is 8192 ranks; a collective runs on at most 4096"},
		{"29 gen2 nodes, no collective", "system: {name: trn3-gen2, nodes: 29}\nsteps:\n  - bringup: {}\n", ""},
		{"28 gen2 nodes, a sweep", "system: {name: trn3-gen2, nodes: 28}\n" + sweep, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte("name: x\n"+tc.doc))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
