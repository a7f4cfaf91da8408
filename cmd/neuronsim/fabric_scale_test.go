package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFabricSweepThousands (issue 16): fabric sweep --what-if takes
// device counts past the driver's 64 up to the fabric window's 16,384,
// refuses more, refuses more ranks than a collective has (4,096) in either
// mode, and in
// timing mode refuses a run whose planned descriptors would pass
// --mem-limit, all before building anything; a 144-device Trn3 Gen2
// UltraServer sweep runs, by shape with --what-if and by --system name.
func TestFabricSweepThousands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--devices", "16385", "--what-if"}, []string{"--devices 16385", "1..16384 devices", "fabric window"}},
		{[]string{"--devices", "65"}, []string{"--devices 65", "1..32 devices (get_max_devs)", "--what-if allows up to 16384"}},
		{[]string{"--devices", "8192", "--what-if"}, []string{"--devices 8192", "8192 ranks", "at most 4096"}},
		{[]string{"--devices", "2048", "--what-if", "--ranks-per-device", "4"}, []string{"--ranks-per-device 4", "2048 devices × 4 ranks per device is 8192 ranks", "at most 4096"}},
		// The flag that made the count is named, not a --devices never given.
		{[]string{"--system", "trn3-gen1", "--nodes", "128"}, []string{"--nodes 128: 128 nodes of 64 devices × 1 rank per device are 8192 ranks", "at most 64 such nodes"}},
		{[]string{"--devices", "8192", "--what-if", "--mode", "functional"}, []string{"--devices 8192", "8192 ranks", "at most 4096"}},
		{[]string{"--devices", "1024", "--what-if", "-b", "1G", "-e", "1G", "--mem-limit", "3G"},
			[]string{"--mode timing: all_reduce of 1 GiB on 1024 ranks needs about", "more than the limit of 3 GiB (--mem-limit)", "--engines 1"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := []string{"fabric", "sweep", "--arch", "mariana"}
			if !slices.Contains(tc.args, "-b") { // a flag is given once
				args = append(args, "-b", "1K", "-e", "1K")
			}
			args = append(args, tc.args...)
			out, err := runCLI(t, args...)
			require.Error(t, err, "accepted; printed:\n%s", out)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	if testing.Short() {
		t.Skip("-short: a 144-device sweep")
	}
	out, err := runCLI(t, "fabric", "sweep", "--arch", "mariana", "--topology", "trn3-gen2", "--devices", "144", "--what-if", "-b", "144K", "-e", "144K", "--algo", "ring")
	require.NoError(t, err)
	assert.Contains(t, out, "147456")
	assert.Contains(t, out, "ring")
	assert.Contains(t, out, "Avg bus bandwidth")
	// By name: the hardware's 144 devices, brought up the what-if way
	// without --what-if (which --system refuses).
	out, err = runCLI(t, "fabric", "sweep", "--system", "trn3-gen2", "-b", "144K", "-e", "144K", "--algo", "ring")
	require.NoError(t, err)
	assert.Contains(t, out, "147456")
}
