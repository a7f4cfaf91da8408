package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/units"
)

// TestVersionFlag: neuronsim --version prints the module, a revision line
// and the Go toolchain (go test builds without VCS information, so the
// revision is "unknown" here; TestVersionText covers a stamped build).
func TestVersionFlag(t *testing.T) {
	out, err := runCLI(t, "--version")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "neuronsim version "), out)
	assert.Contains(t, out, "module github.com/neuronsim/neuronsim")
	assert.Contains(t, out, "revision ")
	assert.Contains(t, out, "built with "+runtime.Version())
}

func TestVersionText(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/neuronsim/neuronsim", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-01T20:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want []string
	}{
		{"stamped", stamped, true, []string{
			"neuronsim version v1.4.0\n",
			"module github.com/neuronsim/neuronsim\n",
			"revision 0123456789abcdef0123456789abcdef01234567 (2026-12-01T20:00:00Z), modified (uncommitted changes)\n",
			"built with go1.26.8 for linux/arm64\n",
		}},
		{"devel without vcs", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/neuronsim/neuronsim"}}, true, []string{
			"neuronsim version (devel)\n", "revision unknown", "built with go1.26.8 for " + runtime.GOOS + "/" + runtime.GOARCH,
		}},
		{"no build info", nil, false, []string{"neuronsim version unknown", "built with " + runtime.Version()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := versionText(tt.bi, tt.ok)
			for _, w := range tt.want {
				assert.Contains(t, got, w)
			}
		})
	}
	clean := *stamped
	clean.Settings = stamped.Settings[:4]
	assert.NotContains(t, versionText(&clean, true), "modified")
}

// TestSizeErrorsAgree: a bad size gets the same message — the grammar of
// units.ParseBytes — from dma copy --size, fabric sweep -b, exec --output's
// BYTES and a scenario's size field; only the name of the place differs.
func TestSizeErrorsAgree(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{"1.5M", "64X", "-4K", "99999999999999999999"} {
		t.Run(bad, func(t *testing.T) {
			_, uerr := units.ParseBytes("f", bad)
			var ue *units.Error
			require.True(t, errors.As(uerr, &ue), "%v", uerr)
			want := ue.Value + ": " + ue.Reason

			_, err := runCLI(t, "dma", "copy", "--size", bad)
			require.Error(t, err)
			assert.Equal(t, "--size "+want, err.Error())
			assert.True(t, errors.Is(err, ue.Err))

			_, err = runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "2", "-b", bad)
			require.Error(t, err)
			assert.Equal(t, "-b/--minbytes "+want, err.Error())

			prog := writeFile(t, dir, "mm.s", cliMatmul)
			_, err = runCLI(t, "exec", prog, "--output", "sbuf[0:128,0]:"+bad+"=out.bin")
			require.Error(t, err)
			assert.True(t, strings.HasSuffix(err.Error(), "bytes per partition "+want), err.Error())

			file := filepath.Join(dir, "bad.yaml")
			doc := "name: bad\nsystem: {arch: cayman}\nsteps:\n  - collective: {op: all_reduce, size: '" + bad + "'}\n"
			require.NoError(t, os.WriteFile(file, []byte(doc), 0o644))
			_, err = runCLI(t, "run", file, "--out", dir)
			require.Error(t, err)
			assert.True(t, strings.HasSuffix(err.Error(), "steps[0].collective.size: "+want), err.Error())
			assert.True(t, errors.Is(err, ue.Err))
		})
	}
}

// TestArchSwitchDefaultMatchesLs: arch takes the same switch family as ls
// (and run, fabric, scenarios) when --switch is not given.
func TestArchSwitchDefaultMatchesLs(t *testing.T) {
	header := regexp.MustCompile(`, switch (\w+), revision`)
	for _, gen := range []string{"sunda", "cayman", "mariana"} {
		t.Run(gen, func(t *testing.T) {
			m := archJSON(t, "--arch", gen)
			out, err := runCLI(t, "ls", "--arch", gen)
			require.NoError(t, err)
			sw := header.FindStringSubmatch(out)
			require.NotNil(t, sw, out)
			assert.Equal(t, sw[1], m["switch"], "arch and ls agree on the switch family")
		})
	}
	m := archJSON(t, "--arch", "mariana")
	assert.Equal(t, "v1", m["switch"])
	assert.Equal(t, float64(32), m["get_max_devs"], "a default Trn3 system holds 32 devices, as ls and run build")
	_, err := runCLI(t, "ls", "--arch", "mariana", "--devices", "33")
	assert.ErrorContains(t, err, "holds 1..32 devices")
}

// TestLsProductAgrees: ls names the product its devices are the same way
// in text and JSON, by the PCI device id — --arch inf2 builds Inferentia2
// devices (0x7264), and the header said "simulated Trn1+Inf2" where the
// JSON said "Inf2".
func TestLsProductAgrees(t *testing.T) {
	for _, tc := range []struct{ arch, product, id string }{
		{"inf2", "Inf2", "0x7264"}, {"trn1", "Trn1", "0x7164"}, {"sunda", "Trn1", "0x7164"}, {"trn2", "Trn2", ""}, {"trn3", "Trn3", ""},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			out, err := runCLI(t, "ls", "--arch", tc.arch, "--devices", "2")
			require.NoError(t, err)
			assert.Contains(t, out, "(simulated "+tc.product+", 2 devices, ")
			out, err = runCLI(t, "ls", "--arch", tc.arch, "--devices", "2", "--json")
			require.NoError(t, err)
			var devs []map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &devs), out)
			require.Len(t, devs, 2)
			for _, d := range devs {
				assert.Equal(t, tc.product, d["neuronsim_product"])
				if tc.id != "" {
					assert.Equal(t, tc.id, d["neuronsim_device_id"])
				}
			}
		})
	}
}

// allCommands is every command of the tree.
func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, s := range c.Commands() {
		out = append(out, allCommands(s)...)
	}
	return out
}

// TestHelpTexts: in every command's help, no flag's value placeholder is a
// phrase (pflag takes the first back-quoted words of the usage, which once
// made "--remote neuronsim serve"), and no flag states its default twice.
func TestHelpTexts(t *testing.T) {
	root := newRootCommand(&bytes.Buffer{}, &bytes.Buffer{})
	placeholder := regexp.MustCompile(`^\s+(?:-\w, )?--[\w-]+ (\S.*?)\s{2,}`)
	for _, c := range allCommands(root) {
		var help bytes.Buffer
		c.SetOut(&help)
		require.NoError(t, c.Help())
		text := help.String()
		assert.NotContains(t, text, "--remote neuronsim serve", c.CommandPath())
		for _, line := range strings.Split(c.LocalFlags().FlagUsages(), "\n") {
			if m := placeholder.FindStringSubmatch(line); m != nil {
				assert.NotContains(t, m[1], " ", "%s: flag placeholder is a phrase: %q", c.CommandPath(), line)
			}
			assert.LessOrEqual(t, strings.Count(line, "(default"), 1, "%s: two default statements: %q", c.CommandPath(), line)
		}
	}
	out, err := runCLI(t, "ls", "--help")
	require.NoError(t, err)
	assert.Contains(t, out, "--remote ADDR")
	out, err = runCLI(t, "--help")
	require.NoError(t, err)
	assert.Contains(t, out, "powers of 1024")
	assert.Contains(t, out, "1e9 bytes per second")
}

// TestPluralForms: counts of one are printed in the singular.
func TestPluralForms(t *testing.T) {
	out, err := runCLI(t, "ls", "--arch", "trn1")
	require.NoError(t, err)
	assert.Contains(t, out, "1 device, switch none")

	out, err = runCLI(t, "fabric", "calibrate")
	require.NoError(t, err)
	assert.Contains(t, out, "1 device × 2 ranks")
	assert.NotContains(t, out, "1 devices")

	_, err = runCLI(t, "arch", "--diff", "sunda")
	assert.ErrorContains(t, err, "got 1 argument")
}

// TestExecOutputBytesIsASize: exec --output's BYTES reads units as every
// size does ("2K" is 2048 bytes per partition).
func TestExecOutputBytesIsASize(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "mm.s", cliMatmul)
	y := filepath.Join(dir, "y.bin")
	_, err := runCLI(t, "exec", prog, "--output", "sbuf[0:128,0x900]:2K="+y)
	require.NoError(t, err)
	b, err := os.ReadFile(y)
	require.NoError(t, err)
	assert.Len(t, b, 128*2048)
}
