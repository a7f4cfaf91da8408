package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmptyIsNotTheDefault: a flag given as "" is refused, naming it —
// never taken as the flag left out (the default limit, the scenario's
// output directory, the whole grid).
func TestEmptyIsNotTheDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fabric", "sweep", "--mem-limit", ""}, `--mem-limit "": empty`},
		{[]string{"run", "--mem-limit", "", "default"}, `--mem-limit "": empty`},
		{[]string{"run", "--out", "", "default"}, "--out: empty"},
		{[]string{"fabric", "sweep", "--arch", "trn2", "--devices", "2", "-b", "1M", "-e", "1M", "--json", ""}, "--json: empty"},
		{[]string{"fabric", "sweep", "--arch", "trn2", "--devices", "2", "-b", "1M", "-e", "1M", "--plot", ""}, "--plot: empty"},
		{[]string{"fabric", "sweep", "--arch", "trn2", "--devices", "2,4", "-b", "1M", "-e", "1M", "--plot-devices", ""}, "--plot-devices: empty"},
		{[]string{"fabric", "sweep", "--arch", "trn2", "--devices", "2", "-b", "1M", "-e", "1M", "--pcap", "", "--pcap-max", "1M"}, "--pcap: empty"},
		{[]string{"asm", "../../scenarios/programs/matmul.s", "-o", ""}, "-o: empty"},
		{[]string{"disasm", "x.bin", "-o", ""}, "-o: empty"},
		{[]string{"sweep", "run", "../../scenarios/sweeps/example.yaml", "--out", t.TempDir(), "--shard", ""}, "--shard: empty"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			require.Error(t, err, "accepted; printed:\n%s", out)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
