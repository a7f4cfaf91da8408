package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
)

func TestSystemFlagsValidation(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" = ok
	}{
		{[]string{"--arch", "mariana", "--devices", "32"}, ""},
		{[]string{"--arch", "mariana", "--devices", "33"}, "holds 1..32 devices"},
		{[]string{"--arch", "mariana", "--switch", "none", "--devices", "17"}, "holds 1..16 devices"},
		{[]string{"--arch", "trn2", "--devices", "16"}, ""},
		{[]string{"--devices", "0"}, "holds 1..32"},
		{[]string{"--revision", "bogus"}, "--revision"},
		{[]string{"--arch", "trn9"}, "trn9"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := runCLI(t, append([]string{"ls"}, tt.args...)...)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestLsTable(t *testing.T) {
	out, err := runCLI(t, "ls", "--arch", "trn2", "--devices", "16")
	require.NoError(t, err)
	assert.Contains(t, out, "| NEURON | NEURON | NEURON   | NEURON | CONNECTED     | PCI          |")
	assert.Contains(t, out, "| DEVICE | CORES  | CORE IDS | MEMORY | DEVICES       | BDF          |")
	assert.Contains(t, out, "| 0      | 8      | 0-7      | 96 GB  | 12, 3, 4, 1   |")
	assert.Contains(t, out, "| 5      | 8      | 40-47    | 96 GB  | 1, 4, 9, 6    |")
	assert.Contains(t, out, "logical-neuroncore-config: 1")
}

func TestLsJSON(t *testing.T) {
	tests := []struct {
		args   []string
		memory uint64
		bar    int
	}{
		{[]string{"--arch", "mariana"}, 144 << 30, 0},
		{[]string{"--arch", "mariana", "--revision", "qemu"}, 16 << 30, 0}, // BAR4 16 GiB / 4 per channel
		{[]string{"--arch", "trn1", "--revision", "0xff"}, 32 << 30, 2},
		{[]string{"--arch", "cayman", "--revision", "emu"}, 96 << 30, 0},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, err := runCLI(t, append([]string{"ls", "--json"}, tt.args...)...)
			require.NoError(t, err)
			var devs []map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &devs), out)
			require.Len(t, devs, 1)
			for _, k := range []string{"neuron_device", "bdf", "cpu_affinity", "numa_node", "connected_to", "nc_count",
				"logical_neuroncore_config", "memory_size", "neuroncore_ids", "neuron_processes"} {
				assert.Contains(t, devs[0], k)
			}
			assert.Equal(t, float64(tt.memory), devs[0]["memory_size"])
			assert.Equal(t, float64(tt.bar), devs[0]["neuronsim_register_bar"])
		})
	}
}

func TestCSRReadWrite(t *testing.T) {
	out, err := runCLI(t, "csr", "read", "0x6C84024", "--arch", "trn2", "--devices", "16", "--device", "3")
	require.NoError(t, err)
	assert.Equal(t, "0x06c84024: 0x00000001\n", out, "device index 3 has routing id 1 on the trn2 torus (table[1] = 3)")

	out, err = runCLI(t, "csr", "write", "0xD2701400", "7", "0x10")
	require.NoError(t, err)
	assert.Equal(t, "0xd2701400: wrote 0x00000007, reads 0x00000007\n0xd2701404: wrote 0x00000010, reads 0x00000010\n", out)

	out, err = runCLI(t, "csr", "read", "0x30FA0024", "--arch", "trn1", "--revision", "qemu")
	require.NoError(t, err, "V2 QEMU reaches its registers on BAR2")
	assert.Equal(t, "0x30fa0024: 0x00000000\n", out)
}

func TestCSRErrorsInTheSeedsWords(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"read", "0xD1FFFFFC", "--count", "2"}, "Invalid address 0x7f00d2000000 0x7f00d0000000-0x7f00d2000000 (status -2)"},
		{[]string{"read", "0xD1FFFFFD"}, "Invalid address 0x7f00d1fffffd"},
		{[]string{"read", "0x20000000"}, "Region not found for address 0x7f0020000000 (status -2)"},
		{[]string{"write", "0x20000000", "1"}, "Region not found"},
		{[]string{"write", "0xD0000000", "0x100000000"}, "wider than 32 bits"},
		{[]string{"read", "zz"}, `ADDR "zz"`},
		{[]string{"read", "0", "--device", "1"}, "the system has 1 device"},
		{[]string{"read", "0", "--count", "0"}, "--count 0"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := runCLI(t, append([]string{"csr"}, tt.args...)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestServeAndRemoteClients starts `serve` on a unix socket and lists and
// reads the devices through --remote.
func TestServeAndRemoteClients(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "ns.sock")
	addr := "unix:" + sock
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetArgs([]string{"serve", "--listen", addr, "--system", "arch=trn2,devices=16,revision=emu"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	require.Eventually(t, func() bool {
		c, err := remote.Dial(addr, remote.ClientOptions{Timeout: time.Second})
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)

	ls, err := runCLI(t, "ls", "--remote", addr)
	require.NoError(t, err)
	assert.Contains(t, ls, "| 5      | 8      | 40-47    | 96 GB  | 1, 4, 9, 6    |")

	got, err := runCLI(t, "csr", "write", "0xD2701400", "42", "--remote", addr, "--device", "2")
	require.NoError(t, err)
	assert.Contains(t, got, "reads 0x0000002a")
	got, err = runCLI(t, "csr", "read", "0xD2701000", "--remote", addr, "--device", "2")
	require.NoError(t, err)
	assert.Equal(t, "0xd2701000: 0x0000002a\n", got, "the served device keeps its state between clients")

	_, err = runCLI(t, "csr", "read", "0", "--remote", addr, "--device", "16")
	assert.ErrorContains(t, err, "exports 16 device(s)")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not stop")
	}
	assert.Contains(t, out.String(), "serving 16 simulated Trn2 device(s)")
}

func TestServeRefusesNonLoopback(t *testing.T) {
	_, err := runCLI(t, "serve", "--listen", "tcp:10.1.2.3:0")
	require.ErrorIs(t, err, remote.ErrNotLoopback)
	assert.Contains(t, err.Error(), "--allow-remote")
	_, err = runCLI(t, "serve", "--listen", "unix:/x", "--system", "arch=mariana,bogus=1")
	assert.ErrorContains(t, err, `unknown key "bogus"`)
}
