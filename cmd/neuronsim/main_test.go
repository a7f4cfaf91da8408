package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCLI runs the command tree in-process and returns stdout.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func archJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, err := runCLI(t, append([]string{"arch", "--json"}, args...)...)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	return m
}

func TestArchJSONFabricExtent(t *testing.T) {
	tests := []struct {
		args        []string
		devs, folds float64
	}{
		{[]string{"--arch", "mariana", "--switch", "v1"}, 32, 16},
		{[]string{"--arch", "mariana", "--switch", "none"}, 16, 8},
		{[]string{"--arch", "cayman", "--switch", "none"}, 16, 8},
		{[]string{"--arch", "trn1"}, 16, 8},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			m := archJSON(t, tt.args...)
			assert.Equal(t, tt.devs, m["get_max_devs"])
			assert.Equal(t, tt.folds, m["get_mesh_max_folds"])
		})
	}
}

func TestArchJSONShape(t *testing.T) {
	m := archJSON(t, "--arch", "v4")
	assert.Equal(t, "mariana", m["arch"])
	assert.Equal(t, float64(8), m["num_tpb"])
	assert.Equal(t, float64(0x40000), m["get_valid_sbuf_partition_size"])
	assert.Equal(t, float64(128), m["get_num_sbuf_partitions"])
	assert.Equal(t, []any{4.0, 5.0, 0.0}, m["get_inter_rdh_dma_id"])
	assert.Len(t, m["get_tpb_base"], 8)
	assert.Equal(t, float64(0x900000000), m["get_hbm_size"])
	assert.Equal(t, map[string]any{"opcode": float64(0x2B82000), "control_fast": float64(0x2B80000),
		"control_slow": float64(0x2B81000), "datapath": float64(0x2B86000)}, m["get_dve_table_offsets"])
	assert.Equal(t, map[string]any{"offset": float64(0x2B87000), "size": float64(0x400)}, m["get_dve_parameter_ram_params"])

	s := archJSON(t, "--arch", "sunda")
	for _, k := range []string{"get_dve_table_offsets", "get_max_links_per_pod_port", "get_eng_hw_decode_table_params", "get_eng_fp8_cfg_offset"} {
		v, present := s[k]
		assert.True(t, present, k)
		assert.Nil(t, v, "%s is null on sunda", k)
	}
	// Keys are seed leaf names: no arch prefix, no aws_hal_.
	for k := range m {
		assert.False(t, strings.HasPrefix(k, "aws_hal_") || strings.HasPrefix(k, "mariana_"), k)
	}
}

func TestArchTable(t *testing.T) {
	out, err := runCLI(t, "arch", "--arch", "cayman")
	require.NoError(t, err)
	assert.Contains(t, out, "arch cayman (3, V3, Trn2), switch none")
	for _, want := range []string{"[tdrv_arch_ops", "[soc_struct_t", "[kaena_khal", "get_max_devs", "@+680", "0x38000", "[10, 7, 9, 8, 11]"} {
		assert.Contains(t, out, want)
	}
}

func TestArchDiff(t *testing.T) {
	out, err := runCLI(t, "arch", "--diff", "--switch", "none", "cayman", "mariana")
	require.NoError(t, err)
	assert.Contains(t, out, "get_valid_sbuf_partition_size")
	assert.Contains(t, out, "get_max_links_per_pod_port")
	assert.NotContains(t, out, "get_num_sb_ports", "identical properties are not printed")
	assert.NotContains(t, out, "get_max_devs", "equal without a v1 switch")

	// Without --switch each generation takes its default: v1 on mariana.
	out, err = runCLI(t, "arch", "--diff", "cayman", "mariana")
	require.NoError(t, err)
	assert.Contains(t, out, "cayman (switch none)")
	assert.Contains(t, out, "mariana (switch v1)")
	assert.Contains(t, out, "get_max_devs")

	out, err = runCLI(t, "arch", "--diff", "--switch", "v1", "trn2", "trn3")
	require.NoError(t, err)
	assert.Contains(t, out, "get_max_devs")

	// The JSON names each side's switch family, as the text's header does:
	// get_max_devs differs by it.
	for _, tc := range []struct {
		args       []string
		mariana    string
		maxDevsNil bool
	}{{nil, "v1", false}, {[]string{"--switch", "none"}, "none", true}} {
		out, err = runCLI(t, append([]string{"arch", "--diff", "--json", "cayman", "mariana"}, tc.args...)...)
		require.NoError(t, err)
		var m map[string]map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m))
		assert.Equal(t, map[string]any{"cayman": "none", "mariana": tc.mariana}, m["switch"], tc.args)
		assert.Equal(t, tc.maxDevsNil, m["get_max_devs"] == nil, tc.args)
		assert.True(t, strings.HasPrefix(out, "{\n  \"switch\""), "switch comes first")
	}

	out, err = runCLI(t, "arch", "--diff", "--json", "mariana", "mariana")
	require.NoError(t, err)
	assert.Equal(t, "{}\n", out)

	out, err = runCLI(t, "arch", "--diff", "--json", "sunda", "cayman")
	require.NoError(t, err)
	var m map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	assert.Equal(t, map[string]any{"sunda": "none", "cayman": "none"}, m["switch"], "each side's switch family")
	assert.Equal(t, []any{0.0, 1.0, 0.0}, m["get_inter_rdh_dma_id"]["sunda"])
	assert.Equal(t, []any{4.0, 5.0, 0.0}, m["get_inter_rdh_dma_id"]["cayman"])
}

func TestArchErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"arch", "--arch", "trn9"}, "accepted words are sunda|cayman|mariana"},
		{[]string{"arch", "--switch", "v2"}, "accepted words are v1|none"},
		{[]string{"arch", "--diff", "cayman"}, "takes two generations"},
		{[]string{"arch", "--diff", "cayman", "inf1"}, "unknown generation"},
		{[]string{"arch", "mariana"}, "no arguments without --diff"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := runCLI(t, tt.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestRunDefault: run without an argument runs the embedded default
// scenario — 32 Trn3 devices brought up, DVE tables, a program, an
// AllReduce sweep — prints the summary and writes its outputs.
func TestRunDefault(t *testing.T) {
	dir := t.TempDir()
	out, err := runCLI(t, "run", "--out", dir)
	require.NoError(t, err, out)
	assert.Contains(t, out, "scenario default: 32 devices, 5 steps")
	assert.Contains(t, out, "Avg bus bandwidth:")
	for _, f := range []string{"report.txt", "all_reduce.json", "all_reduce.png"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
}

// TestRunFailedSummary: a run whose step fails says so on stdout, with how
// far it got, before its error — not the summary of a run that succeeded
// (once "scenario t: 2 devices, 0 steps, virtual time …" and then the
// error); the same scenario that passes prints the usual summary.
func TestRunFailedSummary(t *testing.T) {
	dir := t.TempDir()
	write := func(expect string) string {
		file := filepath.Join(dir, "t.yaml")
		doc := "name: t\nsystem: {arch: cayman, devices: 2}\nsteps:\n" +
			"  - collective: {op: all_reduce, size: 4K" + expect + "}\n  - collective: {op: all_reduce, size: 4K}\n"
		require.NoError(t, os.WriteFile(file, []byte(doc), 0o644))
		return file
	}
	out, err := runCLI(t, "run", write(`, expect_error: "no such failure"`), "--out", dir)
	require.ErrorContains(t, err, "steps[0] (collective)")
	assert.True(t, strings.HasPrefix(out, "scenario t FAILED after 0 of 2 steps: 2 devices, virtual time "), out)
	assert.NotContains(t, out, "scenario t: ")
	assert.Contains(t, out, "outputs: "+filepath.Join(dir, "report.txt"), "the report says what failed")

	out, err = runCLI(t, "run", write(""), "--out", dir)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "scenario t: 2 devices, 2 steps, virtual time "), out)
}

func TestRunScenarioByNameAndList(t *testing.T) {
	out, err := runCLI(t, "run", "--list")
	require.NoError(t, err)
	assert.Contains(t, out, "emu-mariana")
	out, err = runCLI(t, "run", "qemu-sunda", "--out", t.TempDir())
	require.NoError(t, err, out)
	assert.Contains(t, out, "scenario qemu-sunda: 1 device, 2 steps")
	_, err = runCLI(t, "run", "no-such-scenario")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestSwitchChangesNothingRefused: --switch v1 on a generation without
// NeuronSwitch-v1 changes none of its runtime tables (rtarch.CheckSwitch);
// every command taking --switch refuses it, naming the flag, instead of
// running — and reporting "# switch: v1" for — a system it does not
// describe. The generation's default is accepted, given or not.
func TestSwitchChangesNothingRefused(t *testing.T) {
	const nothing = "the switch family changes nothing on "
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"arch", "--arch", "cayman", "--switch", "v1"}, "--switch v1: " + nothing + "cayman: its runtime tables with switch v1 are those with none, its default (a switch family applies to mariana only): leave it out"},
		{[]string{"arch", "--diff", "cayman", "cayman", "--switch", "v1"}, "--switch v1: " + nothing + "cayman"},
		{[]string{"arch", "--diff", "sunda", "cayman", "--switch", "v1"}, nothing + "cayman"},
		{[]string{"ls", "--arch", "sunda", "--switch", "v1"}, "--switch v1: " + nothing + "sunda"},
		{[]string{"fabric", "sweep", "--arch", "trn2", "--switch", "v1", "-b", "1K", "-e", "1K"}, "--switch v1: " + nothing + "cayman"},
		{[]string{"fabric", "topo", "--arch", "cayman", "--switch", "v1"}, "--switch v1: " + nothing + "cayman"},
		{[]string{"serve", "--listen", "unix:/nonexistent/x.sock", "--system", "arch=cayman,switch=v1"}, "--system switch v1: " + nothing + "cayman"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runCLI(t, tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	out, err := runCLI(t, "arch", "--diff", "cayman", "mariana", "--switch", "none")
	require.NoError(t, err, "none applies to mariana: cayman takes its default")
	assert.Contains(t, out, "cayman (switch none)")
	assert.Contains(t, out, "mariana (switch none)")
	out, err = runCLI(t, "arch", "--diff", "cayman", "mariana", "--switch", "v1")
	require.NoError(t, err, "v1 applies to mariana: cayman takes its default, none")
	assert.Contains(t, out, "cayman (switch none)")
	assert.Contains(t, out, "mariana (switch v1)")
	_, err = runCLI(t, "arch", "--arch", "cayman", "--switch", "none")
	require.NoError(t, err, "the default, given")
}
