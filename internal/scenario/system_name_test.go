package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestSystemByName: system.name — or the system section as just a name —
// sets the generation, device count (past get_max_devs for the Trn3
// UltraServers), topology and switch of every system of the catalogue;
// keys that agree with it are accepted.
func TestSystemByName(t *testing.T) {
	for _, s := range fabric.Systems {
		for _, doc := range []string{
			"name: x\nsystem: " + s.Name + "\n",
			"name: x\nsystem: {name: " + s.Name + ", buffer_bytes: 4M, reset: false}\n",
			"name: x\nsystem: {name: " + s.Name + ", arch: " + s.Generation.String() + ", topology: auto, switch: " + s.Switch().String() + "}\n",
		} {
			p, err := Parse("x.yaml", []byte(doc))
			require.NoError(t, err, doc)
			r := p.sys
			assert.Equal(t, s.Generation, r.gen, doc)
			assert.Equal(t, s.Devices, r.devices, doc)
			assert.Equal(t, s.Kind, r.kind, doc)
			assert.Equal(t, s.Switch(), r.family, doc)
		}
	}
	p, err := Parse("x.yaml", []byte("name: x\nsystem: {name: trn3-gen1, devices: 64, topology: trn3-gen1}\n"))
	require.NoError(t, err)
	assert.Equal(t, hwarch.SwitchV1, p.sys.family)
}

// TestSystemByNameRefusals: a key that contradicts system.name is refused
// at its position naming both, as are what_if with a name and an unknown
// name.
func TestSystemByNameRefusals(t *testing.T) {
	sys := func(fields string) string { return "name: x\nsystem: {name: trn3-gen1, " + fields + "}\n" }
	for _, tc := range []struct {
		name, doc, token string
		want             []string
	}{
		{"arch", sys("arch: cayman"), "cayman", []string{"system.arch", "cayman contradicts system.name trn3-gen1", "arch mariana"}},
		{"devices", sys("devices: 32"), "32", []string{"system.devices", "32 contradicts system.name trn3-gen1", "devices 64"}},
		{"topology", sys("topology: switch"), "switch}", []string{"system.topology", "switch contradicts system.name trn3-gen1", "topology trn3-gen1"}},
		{"switch", sys("switch: none"), "none", []string{"system.switch", "none contradicts system.name trn3-gen1", "switch v1"}},
		{"what_if", sys("what_if: true"), "true", []string{"system.what_if: true: does not go with system.name trn3-gen1", "(64)"}},
		// docs/scenarios.md: what_if not at all with a name; false, once
		// accepted, says nothing either.
		{"what_if false", sys("what_if: false"), "false", []string{"system.what_if: false: does not go with system.name trn3-gen1"}},
		{"unknown", "name: x\nsystem: {name: trn4}\n", "trn4", []string{"system.name", `unknown system "trn4"`, "trn3-gen2"}},
		{"unknown scalar", "name: x\nsystem: trn4\n", "trn4", []string{"system.name", `unknown system "trn4"`}},
		{"neither", "name: x\nsystem: {devices: 4}\n", "{", []string{"system", `missing key "arch" (or "name"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.doc))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrStrict)
			assert.True(t, strings.HasPrefix(err.Error(), posOf(t, tc.doc, tc.token)), "%v at %s", err, posOf(t, tc.doc, tc.token))
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestSweepOnNamedSystem: a sweep step on a system given by name runs on
// it, and its report holds the link use — the torus's xy links — printed
// as the link table in the report.
func TestSweepOnNamedSystem(t *testing.T) {
	if raceEnabled {
		t.Skip("a 16-device system")
	}
	doc := "name: x\nsystem: {name: trn2-48xl, reset: false, boot: false, buffer_bytes: 4M}\nsteps:\n  - sweep: {op: all_reduce, min: 64K, max: 1M, factor: 16}\n"
	p, err := Parse("x.yaml", []byte(doc))
	require.NoError(t, err)
	dir := t.TempDir()
	sum, err := p.Run(Options{OutDir: dir})
	require.NoError(t, err)
	require.Len(t, sum.Sweeps, 1)
	assert.Equal(t, 16, sum.Devices)
	u, ok := cluster.LinkUsageOf(sum.Sweeps[0])
	require.True(t, ok)
	require.Len(t, u, 2)
	assert.Equal(t, "xy", u[1].Bottleneck)
	raw, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(raw), "# link utilisation (aware model)")
	assert.NotContains(t, string(raw), "link_usage")
}

// TestSystemByNameOnRestore: a scenario run on a restored system may name
// the system; the name must be the snapshot's system.
func TestSystemByNameOnRestore(t *testing.T) {
	spec, err := fabric.LookupSystem("trn1-32xl")
	require.NoError(t, err)
	cfg := spec.Config()
	cfg.TimingOnly, cfg.Ready = true, true
	sys, err := fabric.New(cfg)
	require.NoError(t, err)
	base := &Base{From: "t.snap", System: sys}
	_, err = ParseWith("x.yaml", []byte("name: x\nsystem: trn1-32xl\n"), base)
	require.NoError(t, err)
	doc := "name: x\nsystem: {name: trn2-48xl}\n"
	_, err = ParseWith("x.yaml", []byte(doc), base)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), posOf(t, doc, "trn2-48xl")), "%v", err)
	assert.ErrorContains(t, err, "system.name: trn2-48xl (16 cayman devices, topology torus2d), but the snapshot t.snap holds a system with 16 sunda devices, topology torus2d")
}

// TestSweepOnGen2ByName (issue 16): system.name trn3-gen2 — 144 devices,
// past the driver's 64 routing ids — is brought up the what-if way and
// sweeps (it was refused: bring-up took no routing id past 63).
func TestSweepOnGen2ByName(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("a 144-device system")
	}
	doc := "name: x\nsystem: {name: trn3-gen2, reset: false, boot: false, buffer_bytes: 4M}\nsteps:\n  - sweep: {op: all_reduce, algo: ring, min: 144K, max: 144K, factor: 2}\n"
	p, err := Parse("x.yaml", []byte(doc))
	require.NoError(t, err)
	sum, err := p.Run(Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	require.Len(t, sum.Sweeps, 1)
	assert.Equal(t, 144, sum.Devices)
	require.Len(t, sum.Sweeps[0].Rows, 1)
	assert.Positive(t, sum.Sweeps[0].Rows[0].TimeUS)
}

// TestSystemWordsAnyCase: a system's word keys are read whatever their
// case (units.Word), as the command line's word flags are.
func TestSystemWordsAnyCase(t *testing.T) {
	for _, doc := range []string{
		"name: x\nsystem: {arch: CAYMAN, devices: 4, topology: RING, model: FREE, mode: TIMING}\n",
		"name: x\nsystem: {name: TRN2-48XL, mode: Functional}\n",
		"name: x\nsystem: {arch: mariana, switch: NONE, revision: QEMU}\n",
	} {
		_, err := Parse("x.yaml", []byte(doc))
		require.NoError(t, err, doc)
	}
}
