package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStepWithNoFieldsKeepsRequiredKeys: a step's kind alone (`- csr_write:`)
// is the step with no fields, so a kind whose keys are required is refused
// for the keys it misses; until 2026-12-07 the null skipped the required
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
