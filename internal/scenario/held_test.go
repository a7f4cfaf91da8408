package scenario

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestRestoreRefusesTimingItDoesNotHold: a scenario that restores a
// snapshot — by `neuronsim snapshot restore` (a Base) or by a
// `snapshot: {restore: …}` step — and gives a topology, model, mode,
// revision or fabric timing key the snapshot's system does not hold is
// refused at the key,
// with the snapshot's value; a key that agrees, and the executor's keys
// (which a snapshot does not carry), are accepted.
func TestRestoreRefusesTimingItDoesNotHold(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	const timed = "system: {arch: cayman, devices: 2, boot: false, reset: false, buffer_bytes: 1M, timing: {link_bw_gbs: 50, link_latency_ns: 300}}\n"
	_, err := runDoc(t, dir, "name: a\n"+timed+"steps:\n  - snapshot: {save: sys.snap}\n", Options{})
	require.NoError(t, err)
	path := filepath.Join(dir, "sys.snap")
	for _, tc := range []struct {
		name, sys string // the scenario's system section's keys (besides the step form's own)
		want      string // "" when accepted
	}{
		{"bandwidth differs", "timing: {link_bw_gbs: 60}", "system.timing.link_bw_gbs: 60, but the snapshot %s holds a system with links of bandwidth 50 GB/s (ring)"},
		{"bandwidth agrees", "timing: {link_bw_gbs: 50}", ""},
		{"latency differs", "timing: {link_latency_ns: 500}", "system.timing.link_latency_ns: 500, but the snapshot %s holds a system with links of latency 300 ns (ring)"},
		{"latency agrees", "timing: {link_latency_ns: 300.0}", ""},
		{"endpoint delay differs", "timing: {endpoint_delay_ns: 100}", "system.timing.endpoint_delay_ns: 100, but the snapshot %s holds a system with an endpoint delay of 500 ns"},
		{"switch latency differs", "timing: {switch_latency_ns: 1}", "system.timing.switch_latency_ns: 1, but the snapshot %s holds a system with a switch latency of 300 ns"},
		{"chunks differ", "timing: {chunk_bytes: 8K}", "system.timing.chunk_bytes: 8K, but the snapshot %s holds a system with chunks of 4096 bytes"},
		{"model differs", "model: free", "system.model: free, but the snapshot %s holds a system with model aware"},
		{"topology differs", "topology: chain", "system.topology: chain, but the snapshot %s holds a system with topology ring"},
		{"topology auto", "topology: auto", ""},
		{"executor keys are the runtime's", "timing: {engines: 2, launch_cost_ns: 10}", ""},
		{"mode differs", "mode: functional", "system.mode: functional, but the snapshot %s holds a system with mode timing"},
		{"mode agrees", "mode: timing", ""},
		{"revision differs", "revision: emu", "system.revision: emu, but the snapshot %s holds a system with revision 0x0"},
		{"revision agrees", "revision: silicon", ""},
	} {
		t.Run(tc.name+"/base", func(t *testing.T) {
			parseOnSnapshot(t, path, "name: more\nsystem: {"+tc.sys+"}\n", fmtWant(tc.want, path))
		})
		t.Run(tc.name+"/step", func(t *testing.T) {
			runRestoreStep(t, "name: b\nsystem: {arch: cayman, devices: 2, boot: false, reset: false, buffer_bytes: 1M, "+tc.sys+"}\n"+
				"steps:\n  - snapshot: {restore: "+path+"}\n  - dma_copy: {bytes: 4K}\n", fmtWant(tc.want, path))
		})
	}
}

// fmtWant puts the snapshot's path into a wanted message.
func fmtWant(want, path string) string {
	if want == "" {
		return ""
	}
	return fmt.Sprintf(want, path)
}

// parseOnSnapshot parses the scenario doc on the snapshot at path, as
// `neuronsim snapshot restore` does: it is accepted when want is "", or
// refused at its line 2 with an error containing want.
func parseOnSnapshot(t *testing.T, path, doc, want string) *Parsed {
	t.Helper()
	base, err := LoadSnapshot(path, fabric.LoadOptions{})
	require.NoError(t, err)
	p, err := ParseWith("more.yaml", []byte(doc), base)
	if want == "" {
		require.NoError(t, err)
		return p
	}
	require.ErrorIs(t, err, ErrStrict)
	assert.Contains(t, err.Error(), "more.yaml:2:")
	assert.Contains(t, err.Error(), want)
	return nil
}

// runRestoreStep runs doc, whose first step restores a snapshot: it
// succeeds when want is "", or fails at that step with an error
// containing want, which it returns.
func runRestoreStep(t *testing.T, doc, want string) error {
	t.Helper()
	_, err := runDoc(t, t.TempDir(), doc, Options{})
	if want == "" {
		require.NoError(t, err)
		return nil
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "steps[0] (snapshot): ")
	assert.Contains(t, err.Error(), want)
	return err
}

// TestRestoreStepRefusesEFAItDoesNotHold: a `snapshot: {restore: …}` step
// refuses a snapshot whose EFA network is not the one system.efa makes,
// at system.efa with both networks, as the command line's restore does.
func TestRestoreStepRefusesEFAItDoesNotHold(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	const sys = "system: {arch: cayman, devices: 2, nodes: 2, boot: false, reset: false, buffer_bytes: 1M, "
	_, err := runDoc(t, dir, "name: a\n"+sys+"efa: {bandwidth: 50GiB/s}}\nsteps:\n  - snapshot: {save: efa.snap}\n", Options{})
	require.NoError(t, err)
	path := filepath.Join(dir, "efa.snap")
	for _, tc := range []struct {
		name, efa, want string // want: "" when accepted
	}{
		{"bandwidth differs", "efa: {bandwidth: 100GiB/s}", "system.efa: network rail, oversubscription 1, bandwidth 107374182400 B/s"},
		{"bandwidth agrees", "efa: {bandwidth: 50GiB/s}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runRestoreStep(t, "name: b\n"+sys+tc.efa+"}\nsteps:\n  - snapshot: {restore: "+path+"}\n", tc.want)
			if err != nil {
				assert.Contains(t, err.Error(), "but the snapshot "+path+" holds a system with an EFA network of network rail, oversubscription 1, bandwidth 53687091200 B/s")
			}
		})
	}
}

// TestRestoreRefusesSwitchItDoesNotHold: the switch family stays the
// runtime's across a restore, and it sets get_mesh_max_folds, which the
// snapshot's fabric holds as it was built: a system.switch of another
// family than the snapshot's is refused at the key, in either restore
// form; left out, `snapshot restore` (a Base) takes the snapshot's family,
// and a restore step, whose runtime takes the generation's default, is
// refused at system unless the default is the snapshot's.
func TestRestoreRefusesSwitchItDoesNotHold(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	const sys = "system: {arch: mariana, devices: 2, boot: false, reset: false, buffer_bytes: 1M, "
	for _, s := range []string{"none", "v1"} {
		_, err := runDoc(t, dir, "name: a\n"+sys+"switch: "+s+"}\nsteps:\n  - snapshot: {save: "+s+".snap}\n", Options{})
		require.NoError(t, err)
	}
	for _, tc := range []struct {
		name, snap, sys string
		family          hwarch.SwitchFamily // the base's, when accepted
		want, wantStep  string              // "" when accepted; wantStep: the step form's, when not want
	}{
		{"v1 on none", "none", "switch: v1", 0, "system.switch: v1, but the snapshot %s holds a system with switch none (get_mesh_max_folds 8) (the runtime keeps the scenario's switch family across a restore", ""},
		{"none on v1", "v1", "switch: none", 0, "system.switch: none, but the snapshot %s holds a system with switch v1 (get_mesh_max_folds 16)", ""},
		{"none agrees", "none", "switch: none", hwarch.SwitchNone, "", ""},
		{"v1 agrees", "v1", "switch: v1", hwarch.SwitchV1, "", ""},
		{"left out on none", "none", "", hwarch.SwitchNone, "", "system: switch left out (the runtime takes v1, mariana's default), but the snapshot %s holds a system with switch none (get_mesh_max_folds 8) (the runtime keeps the scenario's switch family across a restore, and it sets get_mesh_max_folds, which the snapshot's fabric holds for its own: give system.switch the snapshot's family)"},
		{"left out on v1", "v1", "", hwarch.SwitchV1, "", ""},
	} {
		path := filepath.Join(dir, tc.snap+".snap")
		t.Run(tc.name+"/base", func(t *testing.T) {
			if p := parseOnSnapshot(t, path, "name: more\nsystem: {"+tc.sys+"}\n", fmtWant(tc.want, path)); p != nil {
				assert.Equal(t, tc.family, p.sys.family, "the runtime's switch family")
			}
		})
		t.Run(tc.name+"/step", func(t *testing.T) {
			want := tc.want
			if tc.wantStep != "" {
				want = tc.wantStep
			}
			runRestoreStep(t, "name: b\n"+sys+tc.sys+"}\nsteps:\n  - snapshot: {restore: "+path+"}\n  - dma_copy: {bytes: 4K}\n", fmtWant(want, path))
		})
	}
}

// TestRestoreRefusesNameItDoesNotHold: a scenario with system.name (either
// spelling) that restores a snapshot — by a Base or by a restore step — is
// refused when the snapshot's system is not that named system: its
// topology (the name gives it, not system.topology), its product (Inf2
// devices are not trn1-32xl's Trn1 ones); the named system's own snapshot
// is accepted.
func TestRestoreRefusesNameItDoesNotHold(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	const quiet = "boot: false, reset: false, buffer_bytes: 1M"
	_, err := runDoc(t, dir, "name: a\nsystem: {arch: cayman, devices: 16, topology: ring, "+quiet+"}\nsteps:\n  - snapshot: {save: ring.snap}\n", Options{})
	require.NoError(t, err)
	_, err = runDoc(t, dir, "name: a\nsystem: {name: trn2-48xl, "+quiet+"}\nsteps:\n  - snapshot: {save: torus.snap}\n", Options{})
	require.NoError(t, err)
	inf2, err := fabric.New(fabric.Config{Generation: hwarch.Sunda, DeviceID: hwarch.DeviceInf2, Devices: 16, Kind: fabric.KindTorus2D, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, inf2.Save(&b))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inf2.snap"), b.Bytes(), 0o644))
	for _, tc := range []struct {
		name, snap, system string // system: the system section's first keys
		want               string // "" when accepted
	}{
		{"topology differs", "ring", "{name: trn2-48xl", "system.name: trn2-48xl (16 cayman devices, topology torus2d), but the snapshot %s holds "},
		{"topology differs, by name alone", "ring", "trn2-48xl", "trn2-48xl (16 cayman devices, topology torus2d), but the snapshot %s holds "},
		{"product differs", "inf2", "{name: trn1-32xl", "system.name: trn1-32xl (16 sunda devices, topology torus2d), but the snapshot %s holds "},
		{"the named system", "torus", "{name: trn2-48xl", ""},
	} {
		path := filepath.Join(dir, tc.snap+".snap")
		held := map[string]string{"ring": "16 cayman devices, topology ring", "inf2": "16 sunda devices (Inf2, device id 0x7264), topology torus2d"}[tc.snap]
		section := func(more string) string {
			if tc.system[0] != '{' {
				return "system: " + tc.system + "\n"
			}
			return "system: " + tc.system + more + "}\n"
		}
		want := ""
		if tc.want != "" {
			want = fmtWant(tc.want, path) + "a system with " + held
		}
		t.Run(tc.name+"/base", func(t *testing.T) {
			parseOnSnapshot(t, path, "name: more\n"+section(""), want)
		})
		t.Run(tc.name+"/step", func(t *testing.T) {
			if tc.system[0] != '{' && tc.want == "" {
				t.Skip("the name alone brings the devices up with reset")
			}
			runRestoreStep(t, "name: b\n"+section(", "+quiet)+"steps:\n  - snapshot: {restore: "+path+"}\n  - dma_copy: {bytes: 4K}\n", want)
		})
	}
}

// TestRestoreRefusesArchItDoesNotHold: system.arch given as a product
// must be the snapshot's devices' product in either restore form (a
// restore step took any product of the generation); a generation word
// agrees with every product of it.
func TestRestoreRefusesArchItDoesNotHold(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	inf2, err := fabric.New(fabric.Config{Generation: hwarch.Sunda, DeviceID: hwarch.DeviceInf2, Devices: 2, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, inf2.Save(&b))
	path := filepath.Join(dir, "inf2.snap")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	for _, tc := range []struct {
		name, arch, want string // want: "" when accepted
	}{
		{"another product", "trn1", "system.arch: trn1, but the snapshot %s holds a system with arch Inf2 (device id 0x7264)"},
		{"the product", "inf2", ""},
		{"the generation", "sunda", ""},
	} {
		t.Run(tc.name+"/base", func(t *testing.T) {
			parseOnSnapshot(t, path, "name: more\nsystem: {arch: "+tc.arch+"}\n", fmtWant(tc.want, path))
		})
		t.Run(tc.name+"/step", func(t *testing.T) {
			runRestoreStep(t, "name: b\nsystem: {arch: "+tc.arch+", devices: 2, mode: timing, boot: false, reset: false, buffer_bytes: 1M}\n"+
				"steps:\n  - snapshot: {restore: "+path+"}\n  - dma_copy: {bytes: 4K}\n", fmtWant(tc.want, path))
		})
	}
}

// TestRestoreRefusesWordsThatAreNoValue: a word of the system section that
// is no value of its key is refused at the key with the same message
// whether or not `snapshot restore` gives the system (that restore took
// the snapshot's value in its place, accepting `arch: trn9`).
func TestRestoreRefusesWordsThatAreNoValue(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	_, err := runDoc(t, dir, "name: a\nsystem: {arch: cayman, devices: 2, boot: false, reset: false, buffer_bytes: 1M}\nsteps:\n  - snapshot: {save: sys.snap}\n", Options{})
	require.NoError(t, err)
	path := filepath.Join(dir, "sys.snap")
	for _, tc := range []struct{ key, word, want string }{
		{"arch", "trn9", `system.arch: expected sunda|cayman|mariana (or v2|v3|v4, trn1|inf2|trn2|trn3), got "trn9"`},
		{"revision", "bogus", `system.revision: expected silicon, emu, qemu or 0xNN, got "bogus"`},
		{"model", "bogus", `system.model: expected aware or free, got "bogus"`},
		{"topology", "bogus", "system.topology: "},
		{"mode", "bogus", `system.mode: expected timing or functional, got "bogus"`},
		{"switch", "bogus", `system.switch: expected v1 or none, got "bogus"`},
		{"name", "bogus", "system.name: "},
	} {
		t.Run(tc.key, func(t *testing.T) {
			base, err := LoadSnapshot(path, fabric.LoadOptions{})
			require.NoError(t, err)
			_, withBase := ParseWith("more.yaml", []byte("name: more\nsystem: {"+tc.key+": "+tc.word+"}\n"), base)
			require.ErrorIs(t, withBase, ErrStrict)
			assert.Contains(t, withBase.Error(), "more.yaml:2:")
			assert.Contains(t, withBase.Error(), tc.want)
			arch := "arch: cayman, "
			if tc.key == "arch" || tc.key == "name" {
				arch = ""
			}
			_, alone := ParseWith("alone.yaml", []byte("name: alone\nsystem: {"+arch+tc.key+": "+tc.word+"}\n"), nil)
			require.ErrorIs(t, alone, ErrStrict)
			_, msg, _ := strings.Cut(withBase.Error(), ": ")
			_, aloneMsg, _ := strings.Cut(alone.Error(), ": ")
			assert.Equal(t, aloneMsg, msg, "the same refusal with and without a restore")
		})
	}
}

// TestRestoreStepRefusesWhatTheSectionLeavesOut: a restore step's snapshot
// must hold what the scenario's system section resolves to with the keys
// it leaves out, which the steps after it run with: a scenario that leaves
// mode out runs in timing mode and would not check a functional system's
// results; one that leaves topology out lays its rings on its own
// topology's links.
func TestRestoreStepRefusesWhatTheSectionLeavesOut(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	const quiet = "boot: false, reset: false, buffer_bytes: 1M"
	for _, doc := range []string{
		"system: {arch: cayman, devices: 2, mode: functional, " + quiet + "}\nsteps:\n  - snapshot: {save: functional.snap}\n",
		"system: {arch: cayman, devices: 16, topology: ring, " + quiet + "}\nsteps:\n  - snapshot: {save: ring.snap}\n",
		"system: {arch: cayman, devices: 2, model: free, " + quiet + "}\nsteps:\n  - snapshot: {save: free.snap}\n",
	} {
		_, err := runDoc(t, dir, "name: a\n"+doc, Options{})
		require.NoError(t, err)
	}
	for _, tc := range []struct {
		name, system, snap, want string // want: "" when accepted
	}{
		{"mode left out", "arch: cayman, devices: 2", "functional", "holds a system whose mode is functional; this scenario's is timing"},
		{"mode given", "arch: cayman, devices: 2, mode: functional", "functional", ""},
		{"topology left out", "arch: cayman, devices: 16", "ring", "holds a system whose topology is ring; this scenario's is torus2d"},
		{"topology given", "arch: cayman, devices: 16, topology: ring", "ring", ""},
		{"model left out", "arch: cayman, devices: 2", "free", "holds a system whose model is free; this scenario's is aware"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.snap+".snap")
			want := ""
			if tc.want != "" {
				want = "steps[0] (snapshot): " + path + " " + tc.want
			}
			runRestoreStep(t, "name: b\nsystem: {"+tc.system+", "+quiet+"}\nsteps:\n  - snapshot: {restore: "+path+"}\n", want)
		})
	}
}
