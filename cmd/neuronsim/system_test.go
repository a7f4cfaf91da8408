package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
	"github.com/neuronsim/neuronsim/sim"
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
		// Offsets the device cannot hold are refused before it is built,
		// naming the range (they once wrapped past 2^64, or failed late in
		// the device's words).
		{[]string{"read", "0xD1FFFFFD"}, "ADDR 0xd1fffffd: BAR offset not 4-byte aligned: a register is a 32-bit word at a multiple of 4"},
		{[]string{"read", "0xFFFFFFFFFFFFFFFF"}, "ADDR 0xffffffffffffffff: BAR access out of range: a mariana device's register BAR is 4 GiB, word offsets 0x0..0xfffffffc"},
		{[]string{"read", "0x100000000"}, "ADDR 0x100000000: BAR access out of range"},
		{[]string{"read", "0x40000000", "--arch", "sunda"}, "ADDR 0x40000000: BAR access out of range: a sunda device's register BAR is 1 GiB, word offsets 0x0..0x3ffffffc"},
		{[]string{"read", "0xFFFFFFFC", "--count", "2"}, "ADDR 0xfffffffc: BAR access out of range: 2 words from it run past the end; a mariana device's register BAR is 4 GiB"},
		{[]string{"write", "0xFFFFFFFC", "1", "2"}, "ADDR 0xfffffffc: BAR access out of range: 2 words from it run past the end"},
		{[]string{"read", "0x20000000"}, "Region not found for address 0x7f0020000000 (status -2)"},
		{[]string{"write", "0x20000000", "1"}, "Region not found"},
		{[]string{"write", "0xD0000000", "0x100000000"}, "wider than 32 bits"},
		{[]string{"read", "zz"}, `ADDR "zz"`},
		{[]string{"read", "0", "--device", "1"}, "--device 1: must be 0 (the system has 1 device, --devices)"},
		// The system's range, not the largest of any system's (once "must be in 0..16383").
		{[]string{"read", "0", "--device", "-1", "--devices", "2"}, "--device -1: must be in 0..1 (the system has 2 devices, --devices)"},
		{[]string{"read", "0", "--device", "99999999999999999999", "--devices", "2"}, `--device "99999999999999999999": must be in 0..1 (the system has 2 devices, --devices)`},
		{[]string{"read", "0", "--device", "x"}, `--device "x": not a decimal integer`},
		{[]string{"read", "0", "--kernel", "auto", "--device", "64"}, "--device 64: must be in 0..63 (the kernel driver's /dev/neuron0../dev/neuron63, MAX_NEURON_DEVICE_COUNT)"},
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
	out, _, stop := serveInProcess(t, "--listen", addr, "--system", "arch=trn2,devices=16,revision=emu")
	waitRemote(t, addr)

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
	assert.ErrorContains(t, err, "--device 16: must be in 0..15 ("+addr+" exports 16 devices)")
	_, err = runCLI(t, "csr", "read", "0x100000000", "--remote", addr)
	assert.EqualError(t, err, "ADDR 0x100000000: BAR access out of range: a cayman device's register BAR is 4 GiB, word offsets 0x0..0xfffffffc",
		"a served device's range is its generation's, checked once it is brought up")

	// The runtime's DMA work on served devices: their host memory and clock
	// travel over the protocol.
	got, err = runCLI(t, "dma", "copy", "--from", "host", "--to", "device", "--size", "3MiB", "--remote", addr, "--device", "3", "--core", "2")
	require.NoError(t, err)
	assert.Contains(t, got, "cayman host → device copy of 3145728 bytes on core 2 (functional)")
	assert.Contains(t, got, "destination verified")
	assert.NotContains(t, got, " 0s of device time", "device time on the served device's clock")
	_, err = runCLI(t, "dma", "copy", "--size", "4K", "--remote", addr, "--core", "8")
	assert.EqualError(t, err, "--core 8: must be in 0..7 (a cayman device served at "+addr+" has 8 NeuronCores)",
		"a served device's cores are its generation's, checked once it is open")
	got, err = runCLI(t, "dve", "load", "--remote", addr, "--device", "7", "--core", "1")
	require.NoError(t, err)
	assert.Contains(t, got, "read back through csr_read: match")
	assert.Contains(t, got, "second load: cache hit true")

	dir := t.TempDir()
	prog := filepath.Join(dir, "iota.s")
	require.NoError(t, os.WriteFile(prog, []byte(".engine pool\niota dst=sbuf[0:128,0]:int32[64] imm0=0 imm1=64 signal=sem_incr(3,1) last\n"), 0o644))
	remoteOut, localOut := filepath.Join(dir, "remote.bin"), filepath.Join(dir, "local.bin")
	got, err = runCLI(t, "exec", prog, "--remote", addr, "--device", "5", "--core", "3", "--output", "sbuf[0:128,0]:256="+remoteOut)
	require.NoError(t, err)
	assert.Contains(t, got, "semaphore 3 = 1")
	local, err := runCLI(t, "exec", prog, "--arch", "trn2", "--core", "3", "--output", "sbuf[0:128,0]:256="+localOut)
	require.NoError(t, err)
	assert.Equal(t, local[:strings.Index(local, "\n")], got[:strings.Index(got, "\n")], "the same device time")
	want, err := os.ReadFile(localOut)
	require.NoError(t, err)
	have, err := os.ReadFile(remoteOut)
	require.NoError(t, err)
	assert.Equal(t, want, have, "the served device computed what a local one does")

	// A tile checked only against the served device's geometry is refused
	// before the program runs (and before an output's buffer is made).
	for _, spec := range []string{"--output=sbuf[0:128,0xFFFFFC]:8=", "--output=psum[0:128,0]:1G=", "--input=sbuf[127:1,0xFFFFFC]=" + prog} {
		if strings.HasPrefix(spec, "--output") {
			spec += filepath.Join(dir, "never.bin")
		}
		got, err := runCLI(t, "exec", prog, "--remote", addr, "--device", "5", spec)
		require.Error(t, err, spec)
		assert.Contains(t, err.Error(), "tile out of bounds", spec)
		assert.Regexp(t, "^--(in|out)put ", err.Error(), spec)
		assert.NotContains(t, got, "device time", "the program did not run: %s", spec)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", prog, "--remote", addr, "--trace", filepath.Join(dir, "t.json")}, "not with --remote"},
		{[]string{"dma", "copy", "--remote", addr, "--timing-only"}, "not with --remote"},
		{[]string{"dve", "load", "--device", "2"}, "it needs --remote"},
		{[]string{"dve", "load", "--remote", addr, "--device", "16"}, "exports 16 devices"},
	} {
		_, err := runCLI(t, tc.args...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}

	stop()
	assert.Contains(t, out.String(), "serving 16 simulated Trn2 devices")
}

func TestServeRefusesNonLoopback(t *testing.T) {
	_, err := runCLI(t, "serve", "--listen", "tcp:10.1.2.3:0")
	require.ErrorIs(t, err, remote.ErrNotLoopback)
	assert.Contains(t, err.Error(), "--allow-remote")
	_, err = runCLI(t, "serve", "--listen", "unix:/x", "--system", "arch=mariana,bogus=1")
	assert.ErrorContains(t, err, `unknown key "bogus"`)
}

// TestServeLimitFlags: the limit flags are checked, naming the flag.
func TestServeLimitFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-clients", "0"}, "--max-clients 0: must be in 1..100000"},
		{[]string{"--max-clients", "-1"}, "--max-clients -1"},
		{[]string{"--host-buffers-per-client", "0"}, "--host-buffers-per-client 0"},
		{[]string{"--handshake-timeout", "0s"}, "--handshake-timeout 0s: must be in 1ms..24h0m0s"},
		{[]string{"--idle-timeout", "-5s"}, "--idle-timeout -5s"},
		{[]string{"--max-memory", "1K"}, `--max-memory "1K": must be in 4KiB..1024TiB`},
		{[]string{"--max-memory", "1.5G"}, "sizes are integers only"},
		{[]string{"--host-memory", "2TiB"}, `--host-memory "2TiB": must be in`},
		// The whole window (1020 GiB) leaves no room for the granule
		// rounding the charges do not count (2^20 buffers × 63 bytes).
		{[]string{"--host-memory", "1020GiB"}, `--host-memory "1020GiB": must be in`},
		{[]string{"--host-memory", "1020GiB", "--host-memory-per-client", "1020GiB"}, `--host-memory-per-client "1020GiB": must be in`},
		{[]string{"--host-memory-per-client", "0"}, `--host-memory-per-client "0"`},
		{[]string{"--host-memory", "1K", "--host-memory-per-client", "1M"}, "--host-memory-per-client 1M: more than --host-memory 1K"}, // once accepted
		// The quotas may not add up past the allocator's 2^20 buffers (the
		// old default, 65536 × 64 clients, did).
		{[]string{"--host-buffers-per-client", "65536"}, "--host-buffers-per-client 65536: × --max-clients 64 = 4194304 host buffers, more than the 1048576 the host-memory allocator holds"},
		{[]string{"--max-clients", "2", "--host-buffers-per-client", "524289"}, "× --max-clients 2 = 1048578 host buffers"},
	} {
		_, err := runCLI(t, append([]string{"serve", "--listen", "unix:/nonexistent/x"}, tc.args...)...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// TestServePrintsBoundAddressAndWarns: with port 0 serve prints the port
// the system chose, and a listener reachable from other machines
// (--allow-remote on the wildcard address; nothing is sent to it) is
// warned about.
func TestServePrintsBoundAddressAndWarns(t *testing.T) {
	for _, tc := range []struct {
		listen string
		warn   bool
	}{{"tcp:127.0.0.1:0", false}, {"tcp:0.0.0.0:0", true}} {
		t.Run(tc.listen, func(t *testing.T) {
			out, errOut, stop := serveInProcess(t, "--listen", tc.listen, "--allow-remote")
			require.Eventually(t, func() bool { return strings.Contains(out.String(), "serving") }, 5*time.Second, 10*time.Millisecond)
			stop()
			line := strings.TrimSpace(out.String())
			i := strings.Index(line, " on tcp:")
			require.GreaterOrEqual(t, i, 0, "%q", line)
			bound := line[i+len(" on "):]
			port := bound[strings.LastIndex(bound, ":")+1:]
			assert.NotEqual(t, "0", port, "the chosen port, not 0")
			if tc.warn {
				assert.Contains(t, errOut.String(), "warning: "+bound+" is reachable from other machines")
			} else {
				assert.NotContains(t, errOut.String(), "warning")
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveInProcess runs `neuronsim serve` with args in the test's process
// until stop is called (or the test ends); stop ends it and fails the test
// if serve returned an error or did not stop within 10 s. Its standard
// output and error may be read while it runs.
func serveInProcess(t *testing.T, args ...string) (out, errOut *syncBuffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = &syncBuffer{}, &syncBuffer{}
	root := newRootCommand(out, errOut)
	root.SetArgs(append([]string{"serve"}, args...))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err, "serve %v", args)
			case <-time.After(10 * time.Second):
				t.Fatalf("serve %v did not stop", args)
			}
		})
	}
	t.Cleanup(stop)
	return out, errOut, stop
}

// waitRemote waits until the server at addr takes a remote-protocol
// connection.
func waitRemote(t *testing.T, addr string) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := remote.Dial(addr, remote.ClientOptions{Timeout: time.Second})
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
}

// TestServeSurvivesSleepOverflow: after a client's SLEEPs of the largest
// durations the protocol carries, later clients' `dma copy` and `dve load`
// work (issue 13 item 7: the served clock used to saturate at 2^64-1 ps for
// good, and every later dma copy failed with "marker not seen").
func TestServeSurvivesSleepOverflow(t *testing.T) {
	addr := "unix:" + filepath.Join(t.TempDir(), "ns.sock")
	serveInProcess(t, "--listen", addr, "--arch", "trn2")
	var c *remote.Client
	require.Eventually(t, func() bool {
		var err error
		c, err = remote.Dial(addr, remote.ClientOptions{Timeout: 5 * time.Second})
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	d, err := c.Device(0)
	require.NoError(t, err)
	for _, ns := range []uint64{1<<63 - 1, 18_000_000_000_000_000} {
		assert.Contains(t, rawSleep(t, addr, ns), "SLEEP.ns", "%d ns", ns)
	}
	ps, err := d.ClockPS()
	require.NoError(t, err)
	assert.Less(t, ps, uint64(1)<<62)
	require.NoError(t, c.Close())

	got, err := runCLI(t, "dma", "copy", "--from", "host", "--to", "device", "--size", "64KiB", "--remote", addr)
	require.NoError(t, err)
	assert.Contains(t, got, "destination verified")
	got, err = runCLI(t, "dve", "load", "--remote", addr)
	require.NoError(t, err)
	assert.Contains(t, got, "read back through csr_read: match")
}

// rawSleep sends a SLEEP of ns nanoseconds for device 0 as raw frames (the
// client refuses what the server must refuse too) and returns the text of
// the ERROR that answers it, or "" for a SLEEP reply.
func rawSleep(t *testing.T, addr string, ns uint64) string {
	t.Helper()
	network, address, err := remote.ParseAddress(addr)
	require.NoError(t, err)
	c, err := net.Dial(network, address)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	hello := binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint32(nil, remote.Magic), remote.Version)
	b, err := remote.AppendFrame(nil, remote.OpHello, 0, hello)
	require.NoError(t, err)
	sleep := binary.LittleEndian.AppendUint64(make([]byte, 8), ns)
	b, err = remote.AppendFrame(b, remote.OpSleep, 1, sleep)
	require.NoError(t, err)
	_, err = c.Write(b)
	require.NoError(t, err)
	f, err := remote.ReadFrame(c, nil)
	require.NoError(t, err)
	require.Equal(t, remote.OpHelloReply, f.Op)
	f, err = remote.ReadFrame(c, nil)
	require.NoError(t, err)
	if f.Op == remote.OpSleepReply {
		return ""
	}
	require.Equal(t, remote.OpError, f.Op)
	return string(f.Payload[4:])
}

// TestServeHostBufferQuotasFitTheAllocator: whatever the flags, the host
// buffers the connections may hold together stay within the one allocator
// the served system's devices share (sim.MaxHostBuffers), so no client is
// refused by the allocator within its own quota.
func TestServeHostBufferQuotasFitTheAllocator(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, sim.MaxHostBuffers / 64},
		{[]string{"--max-clients", "8"}, sim.MaxHostBuffers / 8},
		{[]string{"--max-clients", "100000"}, sim.MaxHostBuffers / 100000},
		{[]string{"--max-clients", "2", "--host-buffers-per-client", "524288"}, 524288},
		{[]string{"--max-clients", "1", "--host-buffers-per-client", "1048576"}, 1 << 20},
	} {
		cmd := &cobra.Command{}
		var l serveLimits
		l.add(cmd)
		require.NoError(t, cmd.Flags().Parse(tc.args))
		o, err := l.options()
		require.NoError(t, err, "%v", tc.args)
		assert.Equal(t, tc.want, o.server.HostBuffersPerClient, "%v", tc.args)
		assert.LessOrEqual(t, o.server.MaxClients*o.server.HostBuffersPerClient, sim.MaxHostBuffers, "%v", tc.args)
		assert.Equal(t, uint64(sim.HostGranule), o.server.HostGranule, "the allocator's granule, for charging alignment padding")
	}
}
