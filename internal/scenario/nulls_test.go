package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoTypedDefaults: a value a user types never means "the default" —
// outputs.pcap_max and trace_max of 0 are refused at the key, as is either
// without the output it bounds, and a key given YAML null (`key:`, `~`,
// `null`) or a null list item is refused at its key path. The nulls that
// say what they mean are accepted: a step with no fields (`- bringup:`)
// and `steps:` alone (no steps).
func TestNoTypedDefaults(t *testing.T) {
	const sys = "system: {arch: cayman, devices: 2}\n"
	parseCases(t, []parseCase{
		{"pcap_max 0", sys + "outputs: {pcap: f.pcap, pcap_max: 0}\n", "x.yaml:3:35: outputs.pcap_max: 0: at least 24 bytes (the pcap file header) (leave the key out for the default, 64M), not 0"},
		{"trace_max 0", sys + "outputs: {trace: t.json, trace_max: 0}\n", "x.yaml:3:37: outputs.trace_max: 0: at least 1K (leave the key out for the default, 64M), not 0"},
		{"pcap_max below the header", sys + "outputs: {pcap: f.pcap, pcap_max: 10}\n", "outputs.pcap_max: 10: at least 24 bytes"},
		{"pcap_max without pcap", sys + "outputs: {pcap_max: 1M}\n", "x.yaml:3:21: outputs.pcap_max: 1M: no outputs.pcap to bound"},
		{"trace_max without trace", sys + "outputs: {trace_max: 1M}\n", "outputs.trace_max: 1M: no outputs.trace to bound"},
		{"pcap_max given", sys + "outputs: {pcap: f.pcap, pcap_max: 24}\n", ""},
		{"pcap_max null", sys + "outputs: {pcap: f.pcap, pcap_max: null}\n", "x.yaml:3:35: outputs.pcap_max: null: give a value, or leave the key out for its default"},
		{"trace_max empty", sys + "outputs:\n  trace: t.json\n  trace_max:\n", "outputs.trace_max: null: give a value"},
		{"bool null", "system: {arch: cayman, boot: ~}\n", "x.yaml:2:30: system.boot: null: give a value"},
		{"size null", "system: {arch: cayman, buffer_bytes: null}\n", "system.buffer_bytes: null"},
		{"timing null", "system: {arch: cayman, timing: {link_bw_gbs: ~}}\n", "system.timing.link_bw_gbs: null"},
		{"efa null", "system: {arch: cayman, nodes: 2, efa: {spines: null}}\n", "system.efa.spines: null"},
		{"section null", "system: {arch: cayman, timing: null}\n", "system.timing: null"},
		{"step field null", sys + "steps:\n  - collective: {op: all_reduce, size: 4K, chunks: ~}\n", "x.yaml:4:52: steps[0].collective.chunks: null: give a value"},
		{"expectation null", sys + "steps:\n  - csr_read: {offset: 0x30FA0024, expect: null}\n", "steps[0].csr_read.expect: null: give a value"},
		{"step without fields", sys + "steps:\n  - bringup:\n", ""},
		{"no steps", sys + "steps:\n", ""},
	})
}

// TestEmptyStringsRefused: a key given the empty string (quoted, "" or two single quotes) is a
// value typed, not the default: a word key (system.mode, revision,
// topology, model, switch, name; a collective's or sweep's algo and dtype;
// validate's expect) is refused at the key, as is expect_error (every
// error contains ""), where until 2026-12-07 each took its default — a
// collective with an empty expect_error that succeeded passed. A description
// may be empty.
func TestEmptyStringsRefused(t *testing.T) {
	const sys = "system: {arch: cayman, devices: 2}\n"
	parseCases(t, []parseCase{
		{"mode", "system: {arch: cayman, mode: ''}\n", "x.yaml:2:30: system.mode: '': give a value, or leave the key out for its default"},
		{"revision", "system: {arch: cayman, revision: \"\"}\n", "system.revision: '': give a value"},
		{"topology", "system: {arch: cayman, topology: ''}\n", "system.topology: ''"},
		{"model", "system: {arch: cayman, model: ''}\n", "system.model: ''"},
		{"switch", "system: {arch: cayman, switch: ''}\n", "system.switch: ''"},
		{"system name", "system: {arch: cayman, name: ''}\n", "system.name: ''"},
		{"algo", sys + "steps:\n  - collective: {op: all_reduce, size: 4K, algo: ''}\n", "x.yaml:4:50: steps[0].collective.algo: ''"},
		{"dtype", sys + "steps:\n  - sweep: {op: all_reduce, min: 4K, max: 8K, dtype: ''}\n", "steps[0].sweep.dtype: ''"},
		{"expect_error", sys + "steps:\n  - collective: {op: all_reduce, size: 4K, expect_error: ''}\n", "steps[0].collective.expect_error: ''"},
		{"validate expect", sys + "steps:\n  - validate: {source: 'x', expect: ''}\n", "steps[0].validate.expect: ''"},
		{"description", "description: ''\n" + sys, ""},
	})
}

// parseCase is a scenario after its "name: x" line, and what parsing it
// gives: "" when it is accepted, else a part of its ErrStrict error.
type parseCase struct{ name, doc, want string }

// parseCases parses each case as a subtest.
func parseCases(t *testing.T, cases []parseCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte("name: x\n"+tc.doc))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrStrict)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
