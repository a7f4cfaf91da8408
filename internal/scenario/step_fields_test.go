package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStepWithNoFieldsKeepsRequiredKeys: a step's kind alone (`- csr_write:`)
// is the step with no fields, so a kind whose keys are required is refused
// for the keys it misses; until 2026-12-06 the null skipped the required
// check and `- csr_write:` wrote 0 to register 0 of device 0. A quoted empty
// string is no null: it is refused as the mapping it is not.
func TestStepWithNoFieldsKeepsRequiredKeys(t *testing.T) {
	step := func(s string) string {
		return "name: x\nsystem: {arch: cayman, devices: 1}\nsteps:\n  - " + s + "\n"
	}
	for _, tc := range []struct{ doc, want string }{
		{step("csr_write:"), `x.yaml:4:5: steps[0].csr_write: missing key "offset"`},
		{step("csr_read: ~"), `x.yaml:4:5: steps[0].csr_read: missing key "offset"`},
		{step("collective: null"), `steps[0].collective: missing keys "op", "size"`},
		{step("sweep:"), `steps[0].sweep: missing keys "op", "min", "max"`},
		{step("fault:"), `steps[0].fault: missing key "kind"`},
		{step("dma_copy:"), `steps[0].dma_copy: missing key "bytes"`},
		{step(`bringup: ""`), `steps[0].bringup: expected a mapping`},
		{step(`recover: ''`), `steps[0].recover: expected a mapping`},
	} {
		_, err := Parse("x.yaml", []byte(tc.doc))
		if assert.Error(t, err, tc.doc) {
			assert.Contains(t, err.Error(), tc.want, tc.doc)
		}
	}
	// The steps with no required keys still take no fields.
	for _, s := range []string{"bringup:", "recover:", "dve_load:", "reset: ~"} {
		_, err := Parse("x.yaml", []byte(step(s)))
		require.NoError(t, err, s)
	}
}

// TestExecRefusesExpect: expect is validate's; an exec step validates its
// program and fails on an invalid one whatever expect says, so the key
// there would change nothing.
func TestExecRefusesExpect(t *testing.T) {
	step := func(s string) string {
		return "name: x\nsystem: {arch: cayman, devices: 2, topology: ring}\nsteps:\n  - " + s + "\n"
	}
	for _, tc := range []struct{ doc, token, want string }{
		{step("exec: {program: p.s, expect: invalid}"), "invalid", "steps[0].exec.expect: invalid: expect applies to validate steps only"},
		{step("exec: {source: x, expect: valid}"), "valid", "steps[0].exec.expect: valid: expect applies to validate steps only"},
	} {
		_, err := Parse("x.yaml", []byte(tc.doc))
		if assert.Error(t, err, tc.doc) {
			assert.Contains(t, err.Error(), posOf(t, tc.doc, tc.token)+" "+tc.want, tc.doc)
		}
	}
	_, err := Parse("x.yaml", []byte(step("validate: {source: x, expect: invalid}")))
	require.NoError(t, err)
}

// TestFaultToIsALinksFarEnd: to is a link fault's far end; a device_reset
// has none, so to there would change nothing; and a to that names a device
// names one of the system's other than the step's own device (refused when
// the file is read, not after the steps before it ran).
func TestFaultToIsALinksFarEnd(t *testing.T) {
	step := func(s string) string {
		return "name: x\nsystem: {arch: cayman, devices: 2, topology: ring}\nsteps:\n  - " + s + "\n"
	}
	for _, tc := range []struct{ doc, token, want string }{
		{step(`fault: {kind: device_reset, device: 1, to: "0"}`), `"0"`, "steps[0].fault.to: 0: a device_reset has no far end; to applies to link_down and link_up"},
		{step(`fault: {kind: link_down, device: 0, to: "2"}`), `"2"`, "steps[0].fault.to: device 2: the system has devices 0..1"},
		{step(`fault: {kind: link_up, device: 1, to: "1"}`), `"1"`, "steps[0].fault.to: 1: the link's own device (device 1); a link joins two nodes"},
		{step(`fault: {kind: link_down, device: 0, to: l1-sw0}`), `l1-sw0`, "steps[0].fault.to: l1-sw0: no node of that name in a ring topology (neuron0's links go to neuron1)"},
	} {
		_, err := Parse("x.yaml", []byte(tc.doc))
		if assert.Error(t, err, tc.doc) {
			assert.Contains(t, err.Error(), posOf(t, tc.doc, tc.token)+" "+tc.want, tc.doc)
		}
	}
	for _, s := range []string{
		`fault: {kind: link_down, device: 0, to: "1"}`,
		"fault: {kind: device_reset, device: 1}",
	} {
		_, err := Parse("x.yaml", []byte(step(s)))
		require.NoError(t, err, s)
	}
}

// TestFaultLinkExists: a link fault names a link the system has — between
// two devices, to a switch by name, across nodes to the EFA network's
// NICs — refused when the file is read. Until 2026-12-06 a fault between
// two devices of one node failed only when it ran, after the bring-up and
// every step before it, without the file position, and until 2026-12-07
// so did one naming a switch or crossing nodes.
func TestFaultLinkExists(t *testing.T) {
	for _, tc := range []struct{ sys, to, want string }{
		{"arch: cayman, devices: 4, topology: ring", "2", "steps[0].fault.to: 2: no link joins neuron0 and neuron2 in a ring topology (neuron0's links go to neuron3, neuron1)"},
		{"arch: mariana, devices: 2", "1", "steps[0].fault.to: 1: no link joins neuron0 and neuron1 in a switch topology (neuron0's links go to l1-sw0)"},
		{"arch: mariana, devices: 2", "l1-sw9", "steps[0].fault.to: l1-sw9: no node of that name in a switch topology (neuron0's links go to l1-sw0)"},
		{"arch: cayman, devices: 4, nodes: 2", "5", "steps[0].fault.to: 5: no link joins neuron0 and neuron5 in a system of 2 nodes of 4 devices (ring topology) over EFA (neuron0's links go to neuron3, neuron1, n0-nic0)"},
		{"arch: cayman, devices: 4, nodes: 2", "l1-sw0", "steps[0].fault.to: l1-sw0: no node of that name in a system of 2 nodes of 4 devices (ring topology) over EFA (neuron0's links go to neuron3, neuron1, n0-nic0)"},
	} {
		doc := "name: x\nsystem: {" + tc.sys + "}\nsteps:\n  - fault: {kind: link_down, device: 0, to: \"" + tc.to + "\"}\n"
		_, err := Parse("x.yaml", []byte(doc))
		if assert.Error(t, err, doc) {
			assert.Contains(t, err.Error(), posOf(t, doc, `"`+tc.to+`"`)+" "+tc.want, doc)
		}
	}
	for _, tc := range []struct{ sys, to string }{
		{"arch: cayman, devices: 4, topology: ring", "1"},
		{"arch: cayman, devices: 16", "1"},
		{"arch: mariana, devices: 2", "l1-sw0"},
		{"arch: cayman, devices: 4, nodes: 2", "n0-nic0"},
		{"arch: cayman, devices: 4, nodes: 2", "3"},
	} {
		doc := "name: x\nsystem: {" + tc.sys + "}\nsteps:\n  - fault: {kind: link_down, device: 0, to: \"" + tc.to + "\"}\n"
		_, err := Parse("x.yaml", []byte(doc))
		require.NoError(t, err, doc)
	}
}

// TestScenarioCollectivesBounded: the collectives a scenario runs (a
// collective step's one, a sweep's sizes) are bounded by MaxCollectives,
// refused at the step that passes it, before anything runs: a 1 MiB file
// held sweeps of hours of host time and gigabytes of report.
func TestScenarioCollectivesBounded(t *testing.T) {
	sweep := "  - sweep: {op: all_reduce, min: 1024, max: 81016, step: 8}\n" // 10,000 sizes, each whole fp32 elements of 2 ranks
	doc := "name: x\nsystem: {arch: cayman, devices: 2}\nsteps:\n" + strings.Repeat(sweep, MaxCollectives/10000)
	_, err := Parse("x.yaml", []byte(doc))
	require.NoError(t, err, "at the bound")
	_, err = Parse("x.yaml", []byte(doc+"  - collective: {op: all_reduce, size: 4K}\n"))
	require.ErrorIs(t, err, ErrStrict)
	assert.ErrorContains(t, err, fmt.Sprintf("steps[%d].collective.size: this step takes the collectives the scenario runs (a collective step's one, a sweep's sizes) to 100001, past the 100000", MaxCollectives/10000))
}
