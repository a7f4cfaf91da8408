package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIndexLists: a step's list of device or core indices, when given, is
// not empty (that would be the key left out: every device or core, or a
// whole-device reset) and names no index twice; each error is at the step's
// key path, the repeated one at its item with the index.
func TestIndexLists(t *testing.T) {
	const sys = "system: {arch: cayman, devices: 4}\nsteps:\n"
	for _, tc := range []struct {
		name, step string
		want       string // "" when accepted
	}{
		{"dve devices empty", "  - dve_load: {devices: []}\n", "x.yaml:4:25: steps[0].dve_load.devices: empty: list at least one device index"},
		{"dve cores empty", "  - dve_load: {devices: [1], cores: []}\n", "steps[0].dve_load.cores: empty: list at least one core index"},
		{"dve device repeated", "  - dve_load: {devices: [0, 2, 0]}\n", "x.yaml:4:32: steps[0].dve_load.devices[2]: device 0 again (it is devices[0] already): list each device once"},
		{"dve core repeated", "  - dve_load: {cores: [1, 1]}\n", "steps[0].dve_load.cores[1]: core 1 again (it is cores[0] already)"},
		{"dve block list repeated", "  - dve_load:\n      devices:\n        - 3\n        - 3\n", "x.yaml:7:11: steps[0].dve_load.devices[1]: device 3 again"},
		{"reset tpbs empty", "  - reset: {device: 0, tpbs: []}\n", "steps[0].reset.tpbs: empty: list at least one core index, or leave the key out"},
		{"reset tpbs repeated", "  - reset: {device: 1, tpbs: [0, 1, 1]}\n", "steps[0].reset.tpbs[2]: core 1 again (it is tpbs[1] already)"},
		{"range still checked", "  - dve_load: {devices: [0, 4]}\n", "steps[0].dve_load.devices: device 4: the system has devices 0..3"},
		{"distinct lists", "  - dve_load: {devices: [3, 0], cores: [1, 0]}\n  - reset: {device: 2, tpbs: [1, 0]}\n", ""},
		{"lists left out", "  - dve_load: {}\n  - reset: {device: 2}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte("name: x\n"+sys+tc.step))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrStrict)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
