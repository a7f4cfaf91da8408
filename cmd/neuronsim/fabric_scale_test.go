package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/enc"
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
		// --what-if where no count needs it would change nothing.
		{[]string{"--devices", "2,32", "--what-if"}, []string{"--what-if: every device count here (2,32) is within get_max_devs (32 for mariana with switch v1), so it would change nothing"}},
		{[]string{"--devices", "2048", "--what-if", "--ranks-per-device", "4"}, []string{"--ranks-per-device 4", "2048 devices × 4 ranks per device is 8192 ranks", "at most 4096"}},
		// The flag that made the count is named, not a --devices never given.
		{[]string{"--system", "trn3-gen1", "--nodes", "128"}, []string{"--nodes 128: 128 nodes of 64 devices × 1 rank per device are 8192 ranks", "at most 64 such nodes"}},
		{[]string{"--devices", "8192", "--what-if", "--mode", "functional"}, []string{"--devices 8192", "8192 ranks", "at most 4096"}},
		{[]string{"--devices", "1024", "--what-if", "-b", "1G", "-e", "1G", "--mem-limit", "3G"},
			[]string{"--mode timing: all_reduce of 1 GiB on 1024 ranks needs about", "more than the limit of 3 GiB (--mem-limit)", "--engines 1"}},
		// The advice names what drives the estimate: --chunks here (11 GiB
		// with 65536 chunks, 16 MiB with one), once left out.
		{[]string{"--devices", "16", "--chunks", "65536", "-b", "4M", "-e", "4M", "--mem-limit", "2G"},
			[]string{"all_reduce of 4 MiB on 16 ranks needs about ", "; use fewer --chunks than 65536, fewer devices, a smaller size or --engines 1, or raise --mem-limit"}},
		{[]string{"--devices", "16", "--chunks", "65536", "-b", "4M", "-e", "4M", "--mem-limit", "2G", "--engines", "1", "--ranks-per-device", "2"},
			[]string{"; use fewer --chunks than 65536, fewer devices, fewer --ranks-per-device or a smaller size, or raise --mem-limit"}},
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

// TestWhatIfDeviceLimitAgrees: fabric sweep --devices, a scenario's
// system.devices and a sweep grid's devices axis take the same what-if
// device counts and refuse the same ones with the same reason (one check,
// rtarch.Soc.CheckDevicesField), each naming its own setting and what-if.
func TestWhatIfDeviceLimitAgrees(t *testing.T) {
	const whatIfRange = "a what-if system holds 1..16384 devices (the fabric window's 14-bit device index)"
	const v1Range = "a mariana system with switch v1 holds 1..32 devices (get_max_devs)"
	dir := t.TempDir()
	for _, tc := range []struct {
		count  string
		whatIf bool
		reason string
	}{
		{"16385", true, whatIfRange},
		{"0", true, whatIfRange},
		{"-3", true, whatIfRange},
		{"33", false, v1Range + "; %s allows up to 16384"},
		{"0", false, v1Range},
	} {
		t.Run(fmt.Sprintf("%s/what-if=%v", tc.count, tc.whatIf), func(t *testing.T) {
			args := []string{"fabric", "sweep", "--arch", "mariana", "--devices=" + tc.count, "-b", "1K", "-e", "1K"}
			scn, grid := "name: x\nsystem: {arch: mariana, devices: "+tc.count, "arch: mariana\n"
			if tc.whatIf {
				args = append(args, "--what-if")
				scn += ", what_if: true"
				grid += "what_if: true\n"
			}
			_, err := runCLI(t, args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "--devices "+tc.count+": "+strings.ReplaceAll(tc.reason, "%s", "--what-if"))

			file := filepath.Join(dir, "x.yaml")
			require.NoError(t, os.WriteFile(file, []byte(scn+"}\n"), 0o644))
			_, err = runCLI(t, "run", file, "--out", filepath.Join(dir, "out"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "system.devices: "+tc.count+": "+strings.ReplaceAll(tc.reason, "%s", "what_if: true"))

			require.NoError(t, os.WriteFile(file, []byte(grid+"axes:\n  devices: ["+tc.count+"]\n  ops: [all_reduce]\n  sizes: [1K]\n"), 0o644))
			_, err = runCLI(t, "sweep", "plan", file)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "axes.devices[0]: "+tc.count+": "+strings.ReplaceAll(tc.reason, "%s", "what_if: true"))
		})
	}
}

// TestSweepChecksCountFewSchedules: a sweep's checks count the schedules
// of each algorithm's largest size, not of every size (counting one takes
// seconds on thousands of ranks: a 1,024-size sweep the memory limit
// refuses took over an hour): a timing sweep over --mem-limit is refused
// by one memory estimate with no buffer counted, or by the system alone
// with none; a sweep of 64 sizes over the buffers a device holds is
// refused having counted at most one schedule per algorithm.
func TestSweepChecksCountFewSchedules(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		args                  []string
		want                  string
		estimates, maxBuffers int
	}{
		{"over the limit", []string{"--arch", "mariana", "--devices", "32", "-b", "1M", "-e", "1G", "-i", "1M", "--mem-limit", "13M"},
			"--mode timing: all_reduce of 1 GiB on 32 ranks needs about", 1, 0},
		{"the system alone over the limit", []string{"--arch", "mariana", "--what-if", "--devices", "4096", "-b", "1M", "-e", "1G", "-i", "1M", "--mem-limit", "1G"},
			"--mode timing: the system of 4096 devices (256 KiB each and 4 MiB once, 1077936128 bytes, before any collective) needs about 1 GiB of memory, more than the limit of 1 GiB (--mem-limit)", 0, 0},
		{"over the buffers", []string{"--arch", "trn3", "--devices", "2", "-b", "1G", "-e", "64G", "-i", "1G"},
			"-e/--maxbytes 64G: all_reduce of 68719476736 bytes on 2 ranks needs", 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			estimates, buffers, sizes := 0, 0, 0
			timingMemoryOver = func(op enc.Op, algo enc.Algo, devices, ranks, engines int, d enc.Dtype, sz []int64, opt enc.Options, limit uint64) (uint64, int64, error) {
				estimates++
				return cluster.TimingMemoryOver(op, algo, devices, ranks, engines, d, sz, opt, limit)
			}
			bufferNeed = func(op enc.Op, algo enc.Algo, ranks int, d enc.Dtype, sz []int64, opt enc.Options) (uint64, error) {
				buffers++
				sizes += len(sz)
				return cluster.BufferNeed(op, algo, ranks, d, sz, opt)
			}
			t.Cleanup(func() { timingMemoryOver, bufferNeed = cluster.TimingMemoryOver, cluster.BufferNeed })
			out, err := runCLI(t, append([]string{"fabric", "sweep"}, tc.args...)...)
			require.Error(t, err, "accepted; printed:\n%s", out)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, tc.estimates, estimates, "memory estimates")
			assert.LessOrEqual(t, buffers, tc.maxBuffers, "buffer counts")
			assert.Equal(t, buffers, sizes, "one size a count")
		})
	}
}
