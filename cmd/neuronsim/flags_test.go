package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlagGivenOnce: a flag given twice is refused, naming both values,
// instead of the later one silently replacing the earlier; flags meant to
// be repeated still are.
func TestFlagGivenOnce(t *testing.T) {
	sock := "unix:" + filepath.Join(t.TempDir(), "s.sock")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fabric", "topo", "--devices", "4", "--devices", "8"}, `--devices 8: given twice (first "4")`},
		{[]string{"fabric", "sweep", "--link-bw", "50GB/s", "--devices", "4", "--link-bw", "100GB/s"}, `--link-bw 100GB/s: given twice (first "50GB/s")`},
		{[]string{"arch", "--json", "--json"}, "--json: given twice"},
		{[]string{"arch", "--arch", "trn2", "--arch=trn3"}, `--arch trn3: given twice (first "trn2")`},
		{[]string{"serve", "--listen", sock, "--system", "arch=trn2", "--system", "arch=trn3"}, `--system arch=trn3: given twice (first "arch=trn2")`},
		// What a second flag used to hide, now refused.
		{[]string{"serve", "--listen", sock, "--system", "arch=trn2,devices=2", "--arch", "sunda"}, "--system and --arch both describe the served system"},
		{[]string{"serve", "--listen", sock, "--system", ""}, "--system: empty"},
		{[]string{"arch", "--diff", "cayman", "mariana", "--arch", "sunda"}, "--arch sunda would be a third"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			require.Error(t, err, "accepted; printed:\n%s", out)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestEveryFlagOnce: every flag of every command is held to one
// occurrence, but for the ones whose type is a list.
func TestEveryFlagOnce(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if _, ok := f.Value.(*onceValue); !ok && !repeatable(f.Value) {
				t.Errorf("%s --%s (%s) may be given twice", c.CommandPath(), f.Name, f.Value.Type())
			}
			n++
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand(nil, nil))
	assert.Greater(t, n, 100, "flags seen")
}

// TestRepeatableFlags: exec's --input may still be given more than once
// (the run goes on to check the files it names).
func TestRepeatableFlags(t *testing.T) {
	_, err := runCLI(t, "exec", "missing.bin", "--input", "hbm[0:1,0]=a", "--input", "hbm[1:1,0]=b")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "given twice")
}
