package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStepWordsAnyCase: the word values of steps are read whatever their
// case (units.Word), as the system's and the command line's are: a fault's
// kind and validate's expect were compared as written (kind: LINK_DOWN
// and expect: INVALID were refused), and an efa network, op, algo and
// dtype now go through the same function. A key — a step's kind among
// them — is a name of the file's format, not a value, and stays as
// written.
func TestStepWordsAnyCase(t *testing.T) {
	const sys = "name: x\nsystem: {arch: cayman, devices: 2}\nsteps:\n"
	for _, tc := range []struct {
		name, doc string
		want      Action // the step as decoded (as written)
	}{
		{"fault link_down", sys + "  - fault: {kind: LINK_DOWN, device: 1, to: \"0\"}\n", &FaultStep{FaultKind: "LINK_DOWN", Device: 1, To: "0"}},
		{"fault link_up", sys + "  - fault: {kind: Link_Up, device: 1, to: \"0\"}\n", &FaultStep{FaultKind: "Link_Up", Device: 1, To: "0"}},
		{"fault device_reset", sys + "  - fault: {kind: DEVICE_RESET, device: 1}\n", &FaultStep{FaultKind: "DEVICE_RESET", Device: 1}},
		{"validate expect invalid", sys + "  - validate: {source: nop, expect: INVALID}\n", &ValidateStep{Source: "nop", Expect: "INVALID"}},
		{"validate expect valid", sys + "  - validate: {source: nop, expect: Valid}\n", &ValidateStep{Source: "nop", Expect: "Valid"}},
		{"collective", sys + "  - collective: {op: ALL_GATHER, algo: RING, dtype: BF16, size: 4K}\n", nil},
		{"sweep", sys + "  - sweep: {op: Reduce_Scatter, algo: Mesh, dtype: FP16, min: 4K, max: 8K, factor: 2}\n", nil},
		{"efa network", "name: x\nsystem: {arch: cayman, devices: 2, nodes: 2, efa: {network: FAT-TREE}}\nsteps:\n  - bringup:\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("x.yaml", []byte(tc.doc))
			require.NoError(t, err)
			if tc.want != nil {
				assert.Equal(t, tc.want, p.Steps[0].Action)
			}
		})
	}
	for _, tc := range []struct{ doc, want string }{
		{sys + "  - fault: {kind: link-down, device: 1, to: \"0\"}\n", `steps[0].fault.kind: expected link_down, link_up or device_reset, got "link-down"`},
		{sys + "  - validate: {source: nop, expect: yes}\n", `steps[0].validate.expect: expected valid or invalid, got "yes"`},
		{sys + "  - Fault: {kind: link_down, device: 1, to: \"0\"}\n", `steps[0]: unknown step "Fault"`},
	} {
		_, err := Parse("x.yaml", []byte(tc.doc))
		require.Error(t, err, tc.doc)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestStepWordsAnyCaseRun: a run reads those words as their lower-case
// spelling: expect: VALID passes on a valid program, expect: INVALID
// fails on it, and a fault of kind LINK_DOWN is reported as link_down.
func TestStepWordsAnyCaseRun(t *testing.T) {
	if raceEnabled {
		t.Skip("whole-system scenarios run in the plain test run, not under -race")
	}
	dir := t.TempDir()
	_, err := runDoc(t, dir, "name: x\n"+small+"steps:\n  - validate: {source: \".engine pe\\nnop\", expect: VALID}\n"+
		"  - fault: {kind: LINK_DOWN, device: 1, to: \"0\", in: 2us}\n  - fault: {kind: Link_Up, device: 1, to: \"0\", in: 3us}\n  - dma_copy: {bytes: 1M}\n", Options{})
	require.NoError(t, err)
	report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "  link_down scheduled at ")
	assert.Contains(t, string(report), "  link_up scheduled at ")
	_, err = runDoc(t, dir, "name: x\n"+small+"steps:\n  - validate: {source: \".engine pe\\nnop\", expect: INVALID}\n", Options{})
	require.ErrorIs(t, err, ErrFailed)
	assert.Contains(t, err.Error(), "is valid on cayman, expected invalid")
}
