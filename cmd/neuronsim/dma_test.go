package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDVELoadCommand(t *testing.T) {
	for _, tt := range []struct {
		arch    string
		buffers string
		slow    bool
	}{{"sunda", "(4 buffers)", false}, {"cayman", "(5 buffers)", true}, {"mariana", "(5 buffers)", true}} {
		t.Run(tt.arch, func(t *testing.T) {
			out, err := runCLI(t, "dve", "load", "--arch", tt.arch, "--core", "1")
			require.NoError(t, err)
			assert.Contains(t, out, tt.buffers)
			assert.Contains(t, out, "read back through csr_read: match")
			assert.Contains(t, out, "second load: cache hit true, 0 bytes moved")
			assert.Equal(t, tt.slow, strings.Contains(out, "control_slow  ->"))
		})
	}
}

func TestDVEDefaultsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	out, err := runCLI(t, "dve", "defaults", dir, "--arch", "cayman")
	require.NoError(t, err)
	assert.Contains(t, out, "5c9ba802f1dfe9274f8adb38a56a6e22099d37ded8643bfa74d587843817e21c")
	out, err = runCLI(t, "dve", "load", "--arch", "cayman", "--tables", dir)
	require.NoError(t, err)
	assert.Contains(t, out, "5c9ba802f1dfe9274f8adb38a56a6e22099d37ded8643bfa74d587843817e21c")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "opcode.bin"), []byte{1, 2, 3}, 0o644))
	_, err = runCLI(t, "dve", "load", "--arch", "cayman", "--tables", dir)
	assert.ErrorContains(t, err, "opcode")
	_, err = runCLI(t, "dve", "load", "--arch", "cayman", "--core", "8")
	assert.ErrorContains(t, err, "--core 8")
}

func TestDMACopyCommand(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--from", "host", "--to", "device", "--size", "1MiB"}, []string{"17 descriptor pairs", "GB/s", "destination verified"}},
		{[]string{"--from", "device", "--to", "host", "--size", "100000", "--arch", "trn1"}, []string{"3 descriptor pairs", "destination verified"}},
		{[]string{"--from", "device", "--to", "device", "--size", "64KiB", "--arch", "trn2", "--core", "7"}, []string{"2 descriptor pairs"}},
		{[]string{"--size", "2GiB", "--timing-only"}, []string{"timing-only", "32785 descriptor pairs"}}, // 32768 data pairs in 17 batches, each with its marker
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, err := runCLI(t, append([]string{"dma", "copy"}, tt.args...)...)
			require.NoError(t, err)
			for _, w := range tt.want {
				assert.Contains(t, out, w)
			}
		})
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "0"}, `--size "0": must be in 1B..256TiB`},
		{[]string{"--size", "2GiB"}, "functional copies are limited to 1 GiB"},
		{[]string{"--from", "disk"}, `--from/--to "disk": want host or device`},
		{[]string{"--size", "lots"}, `--size "lots": does not start with a digit`},
		{[]string{"--size", "1.5M"}, `--size "1.5M": sizes are integers only`},
		{[]string{"--core", "9"}, "--core 9"},
	} {
		_, err := runCLI(t, append([]string{"dma", "copy"}, bad.args...)...)
		assert.ErrorContains(t, err, bad.want, "%v", bad.args)
	}
}
