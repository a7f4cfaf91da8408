package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/ndl/kernelfake"
	"github.com/neuronsim/neuronsim/runtime/stack"
	"github.com/neuronsim/neuronsim/sim"
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

// TestDVELoadTableBytes: dve load's bytes figure is of the tables alone —
// the sum of the sizes it lists — with the event-accel word named apart
// (it once printed their sum, 4 bytes more), and its device time is
// printed with its parts.
func TestDVELoadTableBytes(t *testing.T) {
	sizeRE := regexp.MustCompile(`(?m)^  \S+ +-> 0x[0-9a-f]+ +\(TPB \+0x[0-9a-f]+\) +(\d+) bytes$`)
	for _, arch := range []string{"sunda", "cayman", "mariana"} {
		t.Run(arch, func(t *testing.T) {
			out, err := runCLI(t, "dve", "load", "--arch", arch)
			require.NoError(t, err)
			sum := 0
			for _, m := range sizeRE.FindAllStringSubmatch(out, -1) {
				n, err := strconv.Atoi(m[1])
				require.NoError(t, err)
				sum += n
			}
			require.NotZero(t, sum, out)
			assert.Contains(t, out, fmt.Sprintf("  moved %d bytes of tables (and the 4-byte event-accel word) in ", sum))
			assert.Regexp(t, `(?m)^  \S+ of device time, in parts:\n    \S+ +staging the tables in HBM through BAR4 \(dmem_buf_copyin\)\n    \S+ +starting the queue \(descriptors and doorbell over MMIO\)\n    \S+ +DMA until the completion semaphore's increment is read \(polled every 1µs\)\n  read back`, out)
		})
	}
}

// TestDMACoreRangePerGeneration: --core is checked against the NeuronCores
// of the chosen device's generation (hw/arch: 2 on sunda, 8 on cayman and
// mariana) by dma copy, dve load and exec alike, and the error names that
// range. It was once checked against the largest of every generation at
// the flag (--core 9 on a sunda was told 0..7), and against the device only
// after bring-up, in other words.
func TestDMACoreRangePerGeneration(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "iota.s")
	require.NoError(t, os.WriteFile(prog, []byte(".engine pool\niota dst=sbuf[0:128,0]:int32[64] imm0=0 imm1=64 signal=sem_incr(3,1) last\n"), 0o644))
	commands := map[string][]string{
		"dma":  {"dma", "copy", "--size", "4K"},
		"dve":  {"dve", "load"},
		"exec": {"exec", prog},
	}
	for _, tc := range []struct {
		arch, core string
		want       string // "" when the core exists
	}{
		{"sunda", "1", ""},
		{"sunda", "2", "--core 2: must be in 0..1 (a sunda device has 2 NeuronCores)"},
		{"trn1", "5", "--core 5: must be in 0..1 (a sunda device has 2 NeuronCores)"},
		{"sunda", "9", "--core 9: must be in 0..1 (a sunda device has 2 NeuronCores)"},
		{"cayman", "7", ""},
		{"cayman", "8", "--core 8: must be in 0..7 (a cayman device has 8 NeuronCores)"},
		{"mariana", "-1", "--core -1: must be in 0..7 (a mariana device has 8 NeuronCores)"},
		{"mariana", "99999999999999999999", `--core "99999999999999999999": must be in 0..7 (a mariana device has 8 NeuronCores)`},
	} {
		for name, args := range commands {
			t.Run(fmt.Sprintf("%s/%s/%s", name, tc.arch, tc.core), func(t *testing.T) {
				_, err := runCLI(t, append(args, "--arch", tc.arch, "--core", tc.core)...)
				if tc.want == "" {
					require.NoError(t, err)
					return
				}
				assert.EqualError(t, err, tc.want)
			})
		}
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
		{[]string{"--size", "0"}, `--size "0": must be in 1B..1GiB`},
		{[]string{"--size", "2GiB"}, `--size "2GiB": must be in 1B..1GiB: functional copies are limited to 1 GiB; use --timing-only`},
		// A timing-only copy is bounded by what the system holds, before
		// anything is built (256T once failed in the host allocator and
		// 1000G in the device allocator, neither naming --size).
		{[]string{"--size", "256T", "--timing-only"}, `--size "256T": must be in 1B..35824MiB: a mariana host → device copy holds at most that: its device buffer is one allocation from one HBM channel (36GiB less the firmware carve-out and the small pool)`},
		{[]string{"--size", "1000G", "--timing-only", "--from", "device", "--to", "host"}, `--size "1000G": must be in 1B..35824MiB: a mariana device → host copy`},
		{[]string{"--size", "4G", "--timing-only", "--arch", "cayman", "--revision", "qemu"}, `--size "4G": must be in 1B..3056MiB: a cayman host → device copy holds at most that: its device buffer is one allocation from one HBM channel (4GiB less`},
		{[]string{"--size", "16G", "--timing-only", "--arch", "sunda", "--from", "device", "--to", "device"}, `--size "16G": must be in 1B..15344MiB: a sunda device → device copy holds at most that: its two device buffers are allocations from the HBM channels (16GiB each`},
		{[]string{"--size", "600G", "--timing-only", "--from", "host", "--to", "host"}, `--size "600G": must be in 1B..521728MiB: a mariana host → host copy holds at most that: its two host buffers are in the simulated host memory window (1020GiB, less 1GiB left to the runtime's own buffers)`},
		{[]string{"--from", "disk"}, `--from "disk": want host or device`},
		{[]string{"--from", "device", "--to", "device0"}, `--to "device0": want host or device`},
		{[]string{"--size", "lots"}, `--size "lots": does not start with a digit`},
		{[]string{"--size", "1.5M"}, `--size "1.5M": sizes are integers only`},
		{[]string{"--core", "9"}, "--core 9"},
	} {
		_, err := runCLI(t, append([]string{"dma", "copy"}, bad.args...)...)
		assert.ErrorContains(t, err, bad.want, "%v", bad.args)
	}
}

// TestDMACopyOddSizes: a copy of a size that is not a whole number of
// 32-bit words verifies between every pair of sides (device memory is
// written and read in words: its tail bytes were never written from a
// device source, and are not compared).
func TestDMACopyOddSizes(t *testing.T) {
	for _, from := range []string{"host", "device"} {
		for _, to := range []string{"host", "device"} {
			for _, size := range []string{"4099", "65538"} {
				t.Run(from+"-"+to+"-"+size, func(t *testing.T) {
					out, err := runCLI(t, "dma", "copy", "--arch", "cayman", "--from", from, "--to", to, "--size", size)
					require.NoError(t, err, out)
					assert.Contains(t, out, "destination verified")
				})
			}
		}
	}
}

// withFakeKernel makes dma copy --kernel open a fake driver 2.24.7.0
// (runtime/ndl/kernelfake) instead of the host's device node.
func withFakeKernel(t *testing.T, opt kernelfake.Options) *kernelfake.Driver {
	t.Helper()
	drv, err := kernelfake.New(opt)
	require.NoError(t, err)
	saved := openKernel
	openKernel = func(path string) (*ndl.KernelDevice, error) { return ndl.OpenKernelSys(drv, path, ndl.KernelOptions{}) }
	t.Cleanup(func() {
		openKernel = saved
		assert.Empty(t, drv.Faults(), "the fake driver saw an ABI violation")
		assert.Zero(t, drv.OpenFDs(), "the device node is closed again")
		assert.Zero(t, drv.Live(), "the device memory is freed again")
	})
	return drv
}

func TestDMACopyKernel(t *testing.T) {
	for _, tt := range []struct {
		arch   uint32
		args   []string
		chunks int // 64 KiB bounce chunks of the driver's DMA, both ways
		want   []string
	}{
		{3, []string{"--size", "1MiB"}, 32, []string{"kernel /dev/neuron0: cayman (Trn2), 1d0f:7364 rev 0xff (qemu), host → device → host copy of 1048576 bytes on core 0",
			"device memory: handle 1, 1MiB at device address 0x0 (HBM channel 0)", "host → device: MEM_BUF_COPY64 in", "host wall time", "destination verified: 1048576 bytes match"}},
		{2, []string{"--size", "100000", "--core", "1"}, 4, []string{"sunda (Trn1+Inf2), 1d0f:7164", "copy of 100000 bytes on core 1", "device → host: MEM_BUF_COPY64", "100000 bytes match"}},
		{4, []string{"--size", "1", "--core", "7"}, 2, []string{"on core 7", "4KiB at device address", "1 byte match"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			drv := withFakeKernel(t, kernelfake.Options{Arch: tt.arch, Revision: 0xFF})
			out, err := runCLI(t, append([]string{"dma", "copy", "--kernel", "/dev/neuron0"}, tt.args...)...)
			require.NoError(t, err)
			for _, w := range tt.want {
				assert.Contains(t, out, w)
			}
			assert.Equal(t, tt.chunks, drv.DMAChunks())
			var names []string
			for _, c := range drv.Calls() {
				names = append(names, c.Name)
			}
			assert.Equal(t, []string{"DEVICE_INFO", "DEVICE_BASIC_INFO", "DEVICE_BDF", "MEM_ALLOC_V2MT64", "MEM_GET_EXTENDED_INFO", "MEM_GET_EXTENDED_INFO",
				"MEM_BUF_COPY64", "MEM_BUF_COPY64", "MEM_FREE"}, names, "alloc, info, copy in, copy out, free — in that order")
		})
	}
}

func TestDMACopyKernelErrors(t *testing.T) {
	corrupt := uint64(12345)
	for _, tt := range []struct {
		name  string
		opt   kernelfake.Options
		setup func(d *kernelfake.Driver)
		args  []string
		want  []string
		is    error
	}{
		{"allocation refused", kernelfake.Options{Arch: 3, ChannelBytes: 512 << 10}, nil, []string{"--size", "1MiB"},
			[]string{"MEM_ALLOC_V2MT64 (1MiB of device memory, channel 0, NC 0)"}, syscall.ENOMEM},
		{"copy refused", kernelfake.Options{Arch: 2}, func(d *kernelfake.Driver) { d.Errno[ndl.IoctlMemBufCopy64] = syscall.EPERM }, []string{"--size", "64KiB"},
			[]string{"MEM_BUF_COPY64 to handle 1 offset 0 count 65536"}, syscall.EPERM},
		{"mismatch", kernelfake.Options{Arch: 3}, func(d *kernelfake.Driver) { d.CorruptCopyOut = &corrupt }, []string{"--size", "1MiB"},
			[]string{"first at offset 12345 of 1048576", "1 byte differ"}, nil},
		{"core", kernelfake.Options{Arch: 2}, nil, []string{"--core", "2"}, []string{"--core 2: must be in 0..1 (a sunda device at /dev/neuron0 has 2 NeuronCores)"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			drv := withFakeKernel(t, tt.opt)
			if tt.setup != nil {
				tt.setup(drv)
			}
			_, err := runCLI(t, append([]string{"dma", "copy", "--kernel", "/dev/neuron0"}, tt.args...)...)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.ErrorContains(t, err, w)
			}
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
	withFakeKernel(t, kernelfake.Options{Arch: 3})
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "device"}, "--from: not with --kernel"},
		{[]string{"--to", "host"}, "--to: not with --kernel"},
		{[]string{"--timing-only"}, "--timing-only: not with --kernel"},
		{[]string{"--device", "1"}, "--device: not with --kernel"},
		{[]string{"--arch", "trn2"}, "--arch describes a fresh simulated system; with --kernel"},
		{[]string{"--remote", "unix:/x"}, "[kernel remote] were all set"},
		{[]string{"--size", "2GiB"}, `--size "2GiB": must be in 1B..1GiB`},
		{[]string{"--size", "0"}, `--size "0": must be in 1B..1GiB`},
	} {
		_, err := runCLI(t, append([]string{"dma", "copy", "--kernel", "/dev/neuron0"}, bad.args...)...)
		assert.ErrorContains(t, err, bad.want, "%v", bad.args)
	}
}

// TestDMACopyLimitIsExact: the --size bound dma copy works out before it
// builds anything (copyLimit) is what a fresh simulated device holds: the
// copy's buffers of exactly that size are allocated as the copy allocates
// them, for every generation, revision and pair of sides, and a device
// side one page larger is refused (host sides keep hostReserve spare). A
// functional copy's 1 GiB always fits.
func TestDMACopyLimitIsExact(t *testing.T) {
	for _, g := range hwarch.Generations() {
		for _, rev := range []uint8{0, hwarch.RevisionQEMU} {
			// alloc allocates a copy's two sides of n bytes as Copy does,
			// on a fresh device as the command's.
			alloc := func(sides [2]string, n uint64) error {
				dev, err := sim.NewDevice(sim.DeviceConfig{Generation: g, Revision: rev, TimingOnly: true})
				require.NoError(t, err)
				st, err := stack.Open(dev, stack.Options{})
				require.NoError(t, err)
				var frees []func()
				defer func() {
					for _, f := range frees {
						f()
					}
				}()
				for _, side := range sides {
					if side == "host" {
						pa, err := st.DMA.Host().HostAlloc(n, 4096)
						if err != nil {
							return err
						}
						frees = append(frees, func() { st.DMA.Host().HostFree(pa) })
						continue
					}
					h, err := st.Mem.Alloc(dmem.Request{Size: n, Channel: dmem.Any, NC: 0, Name: "limit"})
					if err != nil {
						return err
					}
					frees = append(frees, func() { st.Mem.Free(h) })
				}
				return nil
			}
			for _, sides := range [][2]string{{"host", "device"}, {"device", "host"}, {"device", "device"}, {"host", "host"}} {
				name := fmt.Sprintf("%s rev %#x %s→%s", g, rev, sides[0], sides[1])
				limit, why, err := copyLimit(systemSpec{Gen: g, Revision: rev}, sides[0], sides[1])
				require.NoError(t, err, name)
				assert.GreaterOrEqual(t, limit, int64(maxFunctionalCopy), name)
				assert.Contains(t, why, fmt.Sprintf("a %s %s → %s copy holds at most that", g, sides[0], sides[1]), name)
				require.NoError(t, alloc(sides, uint64(limit)), "%s: %s", name, why)
				if strings.Contains(sides[0]+sides[1], "device") {
					assert.Error(t, alloc(sides, uint64(limit)+4096), "%s: a page more", name)
				}
			}
		}
	}
}

// TestDeviceTimeLabels: dma copy and exec say what their device time holds:
// the copy its H2T queue's opening (first use) apart from the doorbells,
// DMA, polls and reads, exec the staging, start, polls and unloading of the
// program without its inputs and outputs.
func TestDeviceTimeLabels(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "iota.s")
	require.NoError(t, os.WriteFile(prog, []byte(".engine pool\niota dst=sbuf[0:128,0]:int32[64] imm0=0 imm1=64 signal=sem_incr(3,1) last\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dma", "copy", "--size", "4099", "--arch", "cayman"},
			`(?m)^  2 descriptor pairs \(with the completion marker\), 5\.1µs of device time, 0\.8 GB/s\n  device time: 1\.2µs opening the core's H2T queue \(its first use\), 3\.9µs from the first doorbell to the queue read after the last marker \(doorbells, the DMA, marker polls every 1µs, status and head reads\)$`},
		{[]string{"dma", "copy", "--size", "4099", "--arch", "sunda"},
			`(?m)^  device time: 1\.44µs opening the core's H2T queue \(its first use\), \S+ from the first doorbell`},
		{[]string{"exec", prog, "--arch", "cayman"},
			`(?m)^cayman core 0: \S+ of device time to stage the program by DMA, clear the semaphores and events it uses, start its engines over CSR, poll them every 1µs until they end and unload it \(inputs and outputs not counted\)$`},
	} {
		t.Run(strings.Join(tc.args[:2], " ")+" "+tc.args[len(tc.args)-1], func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			require.NoError(t, err)
			assert.Regexp(t, tc.want, out)
		})
	}
}

// TestDMATimingOnlyHelpSaysWhatMoves: dma copy's help says what a
// timing-only device moves, as sim/dma does it (process.go move): nothing
// out of device memory, but a transfer from host memory still carries its
// bytes. It once said the mode moved no payload at all.
func TestDMATimingOnlyHelpSaysWhatMoves(t *testing.T) {
	out, err := runCLI(t, "dma", "copy", "--help")
	require.NoError(t, err)
	flat := strings.Join(strings.Fields(out), " ")
	assert.Contains(t, flat, "a copy from the device moves nothing, but one from host memory still carries its bytes")
	assert.Contains(t, flat, "--timing-only copy on a device that moves no bytes out of device memory, only from host memory")
	assert.NotContains(t, flat, "without moving the payload")
}
