package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/sweep"
	"github.com/neuronsim/neuronsim/internal/units"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// TestFabricSweepRefusesBadValues: every value a fabric flag cannot take —
// NaN, negative, zero where a count or bandwidth must be positive, what does
// not fit, what is out of the generation's range — fails with an error that
// names the flag and the limit, instead of running with a default or a
// wrapped value.
func TestFabricSweepRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // each must be in the error
	}{
		{[]string{"--link-latency", "1e18"}, []string{"--link-latency", "too long", "at most 10000000000 ns", "no run with a longer one could finish"}},
		{[]string{"--link-latency", "4e15"}, []string{"--link-latency 4e+15", "too long"}}, // once an unexplained DMA halt (time overflow)
		{[]string{"--switch-latency", "1e10", "--endpoint-delay", "1.5e10"}, []string{"--endpoint-delay 1.5e+10", "too long"}},
		{[]string{"--link-latency", "-5"}, []string{"--link-latency", "negative"}},
		// Finer than the 1 ps resolution: refused, once rounded to 0 ps.
		{[]string{"--link-latency", "0.0001"}, []string{"--link-latency 0.0001: 0.1 ps is not a whole number of ps: the resolution is 1 ps (0 or 1 ps is)"}},
		{[]string{"--efa-latency", "2000.0005", "--nodes", "2"}, []string{"--efa-latency 2000.0005: 2000000.5 ps is not a whole number of ps"}},
		// Flags that do not apply are refused, not ignored.
		{[]string{"--arch", "cayman", "--devices", "16", "--switch-latency", "9"}, []string{"--switch-latency", "torus2d topology of 16 cayman devices has no switches"}},
		{[]string{"--pcap-max", "1M"}, []string{"--pcap-max", "give --pcap too"}},
		{[]string{"--seed", "3"}, []string{"--seed", "timing mode moves no data"}},
		{[]string{"--link-latency", "NaN"}, []string{"--link-latency", "not a finite number"}},
		{[]string{"--link-bw", "0GB/s"}, []string{"--link-bw", "must be positive"}},
		{[]string{"--link-bw", "-5GB/s"}, []string{"--link-bw", "without a sign"}},
		{[]string{"--link-bw", "NaNGB/s"}, []string{"--link-bw", "does not start with a number"}},
		{[]string{"--link-bw", "1e300GB/s"}, []string{"--link-bw", "too large"}},
		// A bandwidth's unit must be given: a bare number was read as GB/s.
		{[]string{"--link-bw", "50"}, []string{`--link-bw "50": no unit: a bare number is not read; say which, as 50GB/s (10^9 B/s), 50GiB/s (2^30 B/s) or 50Gbps (bits)`}},
		{[]string{"--link-bw", "0"}, []string{`--link-bw "0": no unit`}},
		{[]string{"--nodes", "2", "--efa-bw", "200"}, []string{`--efa-bw "200": no unit: a bare number is not read; say which, as 200GB/s`}},
		// A sign, as on a size: "+" was taken on a bare bandwidth and a
		// latency, refused on a bandwidth with its unit.
		{[]string{"--link-bw", "+50"}, []string{`--link-bw "+50": bandwidths are unsigned, without a sign`}},
		{[]string{"--link-bw", "+50GB/s"}, []string{`--link-bw "+50GB/s": bandwidths are unsigned, without a sign`}},
		{[]string{"--link-latency", "+500"}, []string{`--link-latency "+500": latencies are unsigned, without a sign`}},
		{[]string{"--nodes", "2", "--efa-latency", "+20000"}, []string{`--efa-latency "+20000": latencies are unsigned, without a sign`}},
		{[]string{"--endpoint-delay", "+7"}, []string{`--endpoint-delay "+7": latencies are unsigned`}},
		// Hex with a unit: once the unknown unit "x10GB/s".
		{[]string{"--link-bw", "0x10GB/s"}, []string{`--link-bw "0x10GB/s": a bandwidth's number is decimal, not hex`}},
		{[]string{"--link-latency", "0x10ns"}, []string{`--link-latency "0x10ns": not a number of nanoseconds: give the number alone, in ns (500, 1.5, 2e3)`}},
		{[]string{"--link-latency", "500ns"}, []string{`--link-latency "500ns": not a number of nanoseconds`}},
		{[]string{"--link-bw", "50GiB"}, []string{"--link-bw", `unknown unit "GiB"`, "50GiB/s"}},
		{[]string{"--link-bw", "0GB/s"}, []string{"--link-bw"}},
		// Not a whole number of bytes per second: refused, once rounded.
		{[]string{"--link-bw", "1.5B/s"}, []string{`--link-bw "1.5B/s": 1.5 B/s is not a whole number of bytes per second (1 or 2 B/s is)`}},
		{[]string{"--link-bw", "7bps"}, []string{`--link-bw "7bps": too small: 0.875 B/s (the smallest bandwidth is 1 B/s)`}},
		{[]string{"--link-bw", "0.999999999999B/s"}, []string{"--link-bw", "too small: 0.999999999999 B/s"}},
		{[]string{"--link-bw", "1.5e-9GB/s"}, []string{`--link-bw "1.5e-9GB/s": 1.5 B/s is not a whole number`}},
		{[]string{"--link-bw", "0.1GiB/s"}, []string{"--link-bw", "107374182.4 B/s is not a whole number"}},
		{[]string{"--nodes", "2", "--efa-bw", "12bps"}, []string{`--efa-bw "12bps": 1.5 B/s is not a whole number`}},
		{[]string{"--endpoints", "ideal"}, []string{"--endpoints ideal", "--link-bw and --link-latency"}},
		{[]string{"--endpoints", "ideal", "--link-bw", "50GiB/s", "--link-latency", "500", "--chunk-bytes", "4K"}, []string{"--chunk-bytes", "--endpoints ideal"}},
		{[]string{"--endpoints", "ideal", "--link-bw", "50GiB/s", "--link-latency", "500", "--engines", "2"}, []string{"--engines", "one engine per rank"}},
		{[]string{"--endpoints", "perfect"}, []string{"--endpoints", "real|ideal"}},
		{[]string{"--endpoint-delay", "-1"}, []string{"--endpoint-delay", "negative"}},
		{[]string{"--chunk-bytes", "0"}, []string{"--chunk-bytes", "64B..1GiB"}},
		{[]string{"--chunk-bytes", "-1"}, []string{"--chunk-bytes", "without a sign"}},
		{[]string{"--chunk-bytes", "2G"}, []string{"--chunk-bytes", "64B..1GiB"}},
		{[]string{"--switch-latency", "-7"}, []string{"--switch-latency", "negative"}},
		{[]string{"--chunks", "0"}, []string{"--chunks", "1..65536"}},
		{[]string{"--engines", "0"}, []string{"--engines", "1..16"}},
		{[]string{"--engines", "1000"}, []string{"--engines", "1..16"}},
		{[]string{"--ranks-per-device", "0"}, []string{"--ranks-per-device", "1..8", "8 is the most NeuronCores a device of any generation has"}},
		{[]string{"--arch", "sunda", "--ranks-per-device", "99"}, []string{"--ranks-per-device", "1..8", "the --arch given may have fewer"}},
		{[]string{"--arch", "sunda", "--ranks-per-device", "3"}, []string{"--ranks-per-device", "1..2", "2 NeuronCores"}},
		{[]string{"--server-size", "0"}, []string{"--server-size", "1..64"}},
		{[]string{"--arch", "cayman", "--server-size", "4"}, []string{"--server-size", "switch topology"}},
		{[]string{"--topology", "trn3-gen1", "--devices", "64", "--what-if", "--server-size", "4"}, []string{"--server-size", "trn3-gen1", "servers fixed"}},
		// A server size past the devices built one server and no
		// inter-server switch, one that does not divide them a last server
		// of the rest (both once accepted silently).
		{[]string{"--arch", "mariana", "--devices", "16", "--server-size", "32"}, []string{"--server-size 32: 32 devices per server is more than the system's 16 devices", "no inter-server switch"}},
		{[]string{"--arch", "mariana", "--devices", "16", "--server-size", "3"}, []string{"--server-size 3: 3 devices per server does not divide the system's 16 devices: the last server would have 1"}},
		// Errors that named no flag ("enc: … exceeds MaxSize: bad collective",
		// "enc: hier … does not divide", "cluster: fabric …: topology cannot
		// be built").
		{[]string{"-e", "8388607T"}, []string{"-e/--maxbytes 8388607TiB: above the largest collective, 1048576TiB"}},
		{[]string{"-b", "1048577T", "-e", "1048577T"}, []string{"-e/--maxbytes 1048577TiB: above the largest collective"}},
		{[]string{"--arch", "cayman", "--devices", "16", "--algo", "hier", "--group-size", "3"}, []string{"--group-size 3: does not divide the 16 ranks (16 devices × 1 rank per device)"}},
		{[]string{"--arch", "cayman", "--topology", "torus2d", "--devices", "6"}, []string{"--topology torus2d: 6 devices (--devices): the 4×4 torus needs a multiple of 16"}},
		{[]string{"--arch", "cayman", "--topology", "ultraserver", "--devices", "4"}, []string{"--topology ultraserver: 4 devices (--devices): an UltraServer is 4 × 16 = 64"}},
		{[]string{"--arch", "mariana", "--topology", "trn3-gen1", "--devices", "4"}, []string{"--topology trn3-gen1: 4 devices (--devices): a Trn3 Gen1 UltraServer is 4 servers × 16 = 64"}},
		{[]string{"--arch", "cayman", "--devices", "4", "--ring-order", "0-4"}, []string{`--ring-order "0-4" on 4 ranks`, "5 entries for 4 ranks"}},
		// A value of 100,000 digits is echoed cut to 64 characters.
		{[]string{"--devices", strings.Repeat("9", 100000)}, []string{"--devices " + strings.Repeat("9", 64) + "…: a mariana system"}},
		{[]string{"--endpoints", strings.Repeat("x", 1000)}, []string{`invalid argument "` + strings.Repeat("x", 64) + `…" for "--endpoints" flag`}},
		{[]string{"--model", "free", "--chunk-bytes", "4K"}, []string{"--chunk-bytes", "--model aware"}},
		{[]string{"-f", "0"}, []string{"--stepfactor", "2.."}},
		{[]string{"-f", "1"}, []string{"--stepfactor", "2.."}},
		{[]string{"-i", "0"}, []string{"--stepbytes", "1B.."}},
		{[]string{"--group-size", "2"}, []string{"--group-size", "--algo hier only"}},
		// Trn1's two devices a NIC do not divide a node of 3 (once refused as
		// "EFA.DevicesPerNIC 2 does not divide the 3 devices of a node").
		{[]string{"--arch", "trn1", "--devices", "3", "--nodes", "2"}, []string{"--nodes 2: a node of 3 devices does not split into NICs of 2 devices", "--devices-per-nic"}},
		{[]string{"--channels", "0"}, []string{"--channels", "1..256"}},
		{[]string{"--channels", "257"}, []string{"--channels", "1..256"}},
		{[]string{"--channels", "4"}, []string{"--channels 4", "flat ring's across nodes", "one node"}},
		{[]string{"--channels", "1"}, []string{"--channels 1", "one node"}},
		{[]string{"--arch", "cayman", "--devices", "16", "--nodes", "2", "--algo", "mesh", "--channels", "4"}, []string{"--channels 4", "algo ring or auto, not mesh"}},
		{[]string{"--arch", "cayman", "--devices", "16", "--nodes", "2", "--algo", "ring", "--channels", "3"}, []string{"--channels 3: 3 channels do not divide a node's 16 ranks"}},
		{[]string{"--algo", "hier"}, []string{"--group-size"}},
		{[]string{"--devices", "0"}, []string{"--devices", "1..32"}},
		{[]string{"--devices", "2,0"}, []string{"--devices", "1..32"}},
		{[]string{"--devices", "4,4"}, []string{"--devices", "given twice"}},
		{[]string{"--devices", "16385", "--what-if"}, []string{"--devices 16385", "1..16384", "fabric window"}},
		{[]string{"--devices", "99999999999"}, []string{"--devices 99999999999: a mariana system with switch v1 holds 1..32 devices (get_max_devs); --what-if allows up to 16384"}},
		{[]string{"--devices", "99999999999999999999", "--what-if"}, []string{"--devices 99999999999999999999: a what-if system holds 1..16384 devices (the fabric window's 14-bit device index)"}},
		{[]string{"--devices=-99999999999999999999", "--what-if"}, []string{"--devices -99999999999999999999: a what-if system holds 1..16384 devices"}},
		{[]string{"--devices", "2,99999999999,-99999999999"}, []string{"--devices 99999999999: a mariana system with switch v1 holds 1..32"}},
		{[]string{"--devices", "99999999999,99999999999"}, []string{"the count 99999999999 is given twice"}},
		// A list's bad element is named by its place (once `--devices "": not a decimal integer`).
		{[]string{"--devices", "2,,3"}, []string{`--devices "2,,3": element 2 of 3 is empty: want a device count such as 4`}},
		{[]string{"--devices", "2,"}, []string{`--devices "2,": element 2 of 2 is empty`}},
		{[]string{"--devices", "2,x,3"}, []string{`--devices "2,x,3": element 2 of 3, "x": not a decimal integer`}},
		{[]string{"--devices", ""}, []string{`--devices "": empty: want a device count such as 4`}},
		// A list as long as a grid's axis at most, refused before any count
		// is read (once 16,384 counts with --what-if, minutes of systems).
		{[]string{"--what-if", "--devices", countList(1025)}, []string{"--devices: 1025 counts; a list holds at most 1024 (as a sweep grid's axis: a system each)"}},
		{[]string{"-d", "bf16", "--dtype", "fp32"}, []string{"--dtype", "-d/--datatype bf16"}},
		{[]string{"--dtype", "fp16", "-d", "int8"}, []string{"--datatype", "--dtype fp16"}},
	} {
		name := strings.Join(tc.args, " ")
		t.Run(name[:min(len(name), 80)], func(t *testing.T) {
			args := append([]string{"fabric", "sweep", "-b", "1K", "-e", "1K"}, tc.args...)
			if slices.Contains(tc.args, "-e") {
				args = append([]string{"fabric", "sweep"}, tc.args...) // its own sizes
			}
			out, err := runCLI(t, args...)
			require.Error(t, err, "accepted; printed:\n%s", out)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestFabricSweepAgreeingDtypes: -d and --dtype naming the same type (in
// any spelling) is not a disagreement.
func TestFabricSweepAgreeingDtypes(t *testing.T) {
	out, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "2", "-b", "1K", "-e", "1K", "-d", "bf16", "--dtype", "bf16")
	require.NoError(t, err)
	assert.Contains(t, out, "bf16")
}

// TestFabricTopoRefusesBadValues: topo shares the fabric flags and their
// checks.
func TestFabricTopoRefusesBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"--link-latency", "1e18"}, {"--link-bw", "0GB/s"}, {"--link-bw", "10"}, {"--chunk-bytes", "0"}, {"--server-size", "0"}, {"--devices", "0"},
	} {
		_, err := runCLI(t, append([]string{"fabric", "topo"}, args...)...)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), args[0])
	}
}

// TestFabricTopoRefusesUndrawnFlags: fabric topo refuses the flags that
// change nothing it draws — the model and its chunk always, the endpoint
// and switch delays unless --efa-latency across nodes takes them into the
// NIC links' latency — rather than print the same drawing.
func TestFabricTopoRefusesUndrawnFlags(t *testing.T) {
	sw := []string{"fabric", "topo", "--arch", "trn3", "--devices", "16", "--topology", "switch"}
	for _, args := range [][]string{
		{"--model", "free"}, {"--chunk-bytes", "8K"}, {"--endpoint-delay", "100"}, {"--switch-latency", "1000"},
		{"--nodes", "2", "--switch-latency", "1000"},
	} {
		_, err := runCLI(t, append(sw, args...)...)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), args[len(args)-2]+": fabric topo draws", args)
	}
	base, err := runCLI(t, "fabric", "topo", "--arch", "trn2", "--devices", "4", "--nodes", "2", "--efa-latency", "20000")
	require.NoError(t, err)
	out, err := runCLI(t, "fabric", "topo", "--arch", "trn2", "--devices", "4", "--nodes", "2", "--efa-latency", "20000", "--switch-latency", "1000", "--endpoint-delay", "100")
	require.NoError(t, err)
	assert.Contains(t, base, "dev-nic links: 25 GB/s, 9100 ns")
	assert.Contains(t, out, "dev-nic links: 25 GB/s, 8950 ns") // 20000 − 2×500 − 1000 − 100, halved
	// --endpoints ideal takes the endpoint and switch delays away: the
	// drawing changes only where --efa-latency leaves their share to the
	// NIC links (it drew the same links as --endpoints real otherwise).
	ideal := []string{"--endpoints", "ideal", "--link-bw", "10GB/s", "--link-latency", "500"}
	for _, args := range [][]string{nil, {"--nodes", "2"}} {
		_, err := runCLI(t, append(append(append([]string{}, sw...), args...), ideal...)...)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), "--endpoints: fabric topo draws links, not the endpoints' delays", args)
	}
	out, err = runCLI(t, append([]string{"fabric", "topo", "--arch", "trn2", "--devices", "4", "--nodes", "2", "--efa-latency", "20000"}, ideal...)...)
	require.NoError(t, err)
	assert.Contains(t, out, "dev-nic links: 25 GB/s, 9500 ns") // 20000 − 2×500, halved
}

// TestFabricSweepPlotLines: --plot draws one line per device count and
// refuses more than its legend holds before anything runs (the legend of
// 40 ran off the image, its last entries not drawn).
func TestFabricSweepPlotLines(t *testing.T) {
	counts := make([]string, 33)
	for i := range counts {
		counts[i] = strconv.Itoa(i + 1)
	}
	_, err := runCLI(t, "fabric", "sweep", "--arch", "trn3", "--what-if", "--devices", strings.Join(counts, ","), "-b", "4K", "-e", "4K", "--plot", filepath.Join(t.TempDir(), "p.png"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--plot with 33 device counts: a plot draws at most 32 lines")
}

// TestSystemDevicesFlag: --devices means the number of devices of the
// system in every command, bounded by get_max_devs: the commands that build
// one system refuse a list, and 0 is an error everywhere.
func TestSystemDevicesFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", "--devices", "0"}, "--devices 0: a mariana system with switch v1 holds 1..32 devices"},
		{[]string{"ls", "--devices", "2,4"}, "give one device count"},
		{[]string{"ls", "--arch", "cayman", "--devices", "17"}, "holds 1..16 devices"},
		{[]string{"csr", "read", "0", "--devices", "-1"}, "--devices -1"},
		{[]string{"dma", "copy", "--devices", "2,3"}, "give one device count"},
		{[]string{"serve", "--listen", "unix:/nonexistent/x.sock", "--system", "devices=0"}, "--system devices 0"},
		{[]string{"serve", "--listen", "unix:/nonexistent/x.sock", "--system", "arch=cayman,devices=x"}, `--system devices "x"`},
		{[]string{"serve", "--listen", "unix:/nonexistent/x.sock", "--system", "devices=2,arch=cayman,devices=4"}, "the key devices is given twice"},
		{[]string{"serve", "--listen", "unix:/nonexistent/x.sock", "--system", "devices=2,4"}, `"4" is not key=value`},
		{[]string{"ls", "--remote", "unix:/nonexistent/x.sock", "--devices", "2"}, "--devices describes a fresh simulated system"},
		{[]string{"csr", "read", "0", "--remote", "unix:/nonexistent/x.sock", "--arch", "cayman"}, "--arch describes a fresh simulated system"},
		{[]string{"dve", "load", "--remote", "unix:/nonexistent/x.sock", "--revision", "emu"}, "--revision describes a fresh simulated system"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runCLI(t, tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestFabricSweepJSONPerCount: with several device counts, --json writes
// every count's report, each in nccom-test's shape, to its own file.
func TestFabricSweepJSONPerCount(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	out, err := runCLI(t, "fabric", "sweep", "--arch", "cayman", "--devices", "2,4", "--topology", "ring", "-b", "4K", "-e", "16K", "-f", "2", "--json", js)
	require.NoError(t, err, out)
	for _, n := range []int{2, 4} {
		path := filepath.Join(dir, "r-"+map[int]string{2: "2", 4: "4"}[n]+"devices.json")
		f, err := os.Open(path)
		require.NoError(t, err, "a report for %d devices", n)
		rep, err := nccom.ReadJSON(f)
		f.Close()
		require.NoError(t, err)
		assert.Equal(t, n, rep.Ranks, "the %d-device report", n)
		assert.EqualValues(t, n, rep.Extra["devices"])
		require.Len(t, rep.Rows, 3)
	}
	_, err = os.Stat(js)
	assert.ErrorIs(t, err, os.ErrNotExist, "no file is named after one count only")
}

// TestHelpHasNoSentinelDefaults: no --help shows a default a user could
// type to mean "unset".
func TestHelpHasNoSentinelDefaults(t *testing.T) {
	for _, c := range [][]string{
		{"fabric", "sweep"}, {"fabric", "topo"}, {"ls"}, {"csr", "read"}, {"csr", "write"}, {"serve"},
		{"dma", "copy"}, {"dve", "load"}, {"exec"}, {"run"}, {"arch"},
	} {
		out, err := runCLI(t, append(c, "--help")...)
		require.NoError(t, err)
		assert.NotContains(t, out, "(default -1)", c)
		assert.NotContains(t, out, "(default 0)", c)
	}
}

// FuzzFlagValues: any text given to a numeric flag either is refused with
// an error naming the flag, or yields a value inside the flag's range;
// nothing panics, wraps or falls back to a default.
func FuzzFlagValues(f *testing.F) {
	for _, s := range []string{"0", "1", "-1", "1e18", "NaN", "-Inf", "4K", "1.5M", "18446744073709551616", "2,4,8", "4,4", " 7 ", "0x10", "1e-9", "9223372036854775807T", "16384", "16385", "144,1024,4096"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		named := func(err error, name string) {
			var ue *units.Error
			if !errors.As(err, &ue) || ue.Field != name {
				t.Fatalf("%q: error %v does not name %s", s, err, name)
			}
		}
		ns := newLatency("--link-latency")
		if err := ns.Set(s); err != nil {
			named(err, "--link-latency")
		} else if !ns.set || ns.v > units.MaxLatencyPS {
			t.Fatalf("%q: %d ps accepted", s, ns.v)
		}
		bw := newBandwidth("--link-bw")
		if err := bw.Set(s); err != nil {
			named(err, "--link-bw")
		} else if bw.v < 1 || bw.v > units.MaxBandwidthBps {
			t.Fatalf("%q: %d B/s accepted", s, bw.v)
		}
		n := newInt("--chunks", 1, 65536)
		if err := n.Set(s); err != nil {
			named(err, "--chunks")
		} else if n.v < 1 || n.v > 65536 {
			t.Fatalf("%q: %d accepted", s, n.v)
		}
		sz := newSize("--chunk-bytes", 64, 1<<30)
		if err := sz.Set(s); err != nil {
			named(err, "--chunk-bytes")
		} else if sz.v < 64 || sz.v > 1<<30 {
			t.Fatalf("%q: %d bytes accepted", s, sz.v)
		}
		dv := &devicesValue{list: true}
		if err := dv.Set(s); err != nil {
			named(err, "--devices")
			return
		}
		soc := rtarch.MustFor(hwarch.Mariana, rtarch.Options{Switch: hwarch.SwitchV1}).Soc
		for _, bound := range []struct {
			whatIf bool
			limit  int
		}{{false, 32}, {true, hwarch.MaxFabricDevices}} {
			counts, err := dv.resolve(32, soc, bound.whatIf, true)
			if err != nil {
				named(err, "--devices")
				continue
			}
			seen := map[int]bool{}
			for _, c := range counts {
				if c < 1 || c > bound.limit || seen[c] {
					t.Fatalf("%q (what-if %v): counts %v accepted", s, bound.whatIf, counts)
				}
				seen[c] = true
			}
		}
	})
}

// countList is "1,2,…,n".
func countList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(parts, ",")
}

// TestDeviceListBound: a --devices list holds at most sweep.MaxAxisValues
// counts, as a grid's devices axis does.
func TestDeviceListBound(t *testing.T) {
	counts, _, err := parseDeviceCounts("--devices", countList(sweep.MaxAxisValues), true)
	require.NoError(t, err)
	assert.Len(t, counts, sweep.MaxAxisValues)
	_, _, err = parseDeviceCounts("--devices", countList(sweep.MaxAxisValues+1), true)
	assert.ErrorIs(t, err, units.ErrRange)
}

// TestDurationFlagsWholeNanoseconds: a duration flag finer than a
// nanosecond is refused, naming the flag (time.ParseDuration, which
// pflag's duration flags use, read "1.5ns" as 1ns); whole nanoseconds in
// any unit are taken.
func TestDurationFlagsWholeNanoseconds(t *testing.T) {
	for _, tc := range []struct {
		value, want string // want: "" when taken
	}{
		{"1.5ns", `--max-time "1.5ns": not a whole number of nanoseconds`},
		{"1s0.0001us", `--max-time "1s0.0001us": not a whole number of nanoseconds`},
		{"1.5us", ""},
		{"soon", `--max-time "soon": expected a duration`},
	} {
		var d time.Duration
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		durationVar(fs, &d, "max-time", time.Second, "")
		err := fs.Parse([]string{"--max-time", tc.value})
		if tc.want == "" {
			require.NoError(t, err)
			assert.Equal(t, 1500*time.Nanosecond, d)
			continue
		}
		assert.ErrorContains(t, err, tc.want)
		assert.Equal(t, time.Second, d, "a refused value leaves the default")
	}
	for _, args := range [][]string{{"serve", "--idle-timeout", "0.5ns"}, {"exec", "--max-time", "2.0001ns", "x.s"}} {
		_, err := runCLI(t, args...)
		assert.ErrorContains(t, err, "not a whole number of nanoseconds", "%v", args)
	}
}

// TestEmptyTargetFlagsRefused: --remote "", --kernel "", --trace "" and
// --tables "" (an unset shell variable) are refused naming the flag, never
// taken as the flag left out — which ran on a fresh simulated device
// instead of the served one or the hardware, wrote no trace, or loaded the
// built-in tables.
func TestEmptyTargetFlagsRefused(t *testing.T) {
	prog := writeFile(t, t.TempDir(), "mm.s", cliMatmul)
	for _, args := range [][]string{
		{"ls", "--remote", ""},
		{"ls", "--kernel", ""},
		{"csr", "read", "0", "--remote", ""},
		{"csr", "write", "0xD2701400", "1", "--kernel", ""},
		{"dma", "copy", "--size", "4K", "--remote", ""},
		{"dma", "copy", "--size", "4K", "--kernel", ""},
		{"dve", "load", "--remote", ""},
		{"dve", "load", "--tables", ""},
		{"exec", prog, "--remote", ""},
		{"exec", prog, "--trace", ""},
	} {
		out, err := runCLI(t, args...)
		name := args[len(args)-2]
		if assert.Error(t, err, "%v: %s", args, out) {
			assert.True(t, strings.HasPrefix(err.Error(), name+": empty: "), "%v: %v", args, err)
		}
		assert.Empty(t, out, "%v", args)
	}
}

// TestWordFlagsAnyCase: the one rule for word values (units.Word): case
// does not matter, for every word flag — --endpoints IDEAL was refused
// while --system TRN2-48XL and --efa-network FAT-TREE were taken.
func TestWordFlagsAnyCase(t *testing.T) {
	for _, args := range [][]string{
		{"--arch", "CAYMAN", "--devices", "2"},
		{"--system", "TRN2-48XL"},
		{"--arch", "Cayman", "--devices", "4", "--topology", "RING"},
		{"--arch", "MARIANA", "--switch", "NONE", "--devices", "2"},
		{"--devices", "2", "--model", "FREE"},
		{"--devices", "2", "--endpoints", "IDEAL", "--link-bw", "50GB/s", "--link-latency", "500"},
		{"--devices", "2", "--mode", "FUNCTIONAL"},
		{"--devices", "2", "--op", "ALL_GATHER", "--algo", "RING", "-d", "BF16"},
		{"--devices", "4", "--algo", "ring", "--ring-order", "RANKS"},
		{"--arch", "cayman", "--devices", "2", "--nodes", "2", "--efa-network", "FAT-TREE"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := runCLI(t, append([]string{"fabric", "sweep", "-b", "4K", "-e", "4K"}, args...)...)
			require.NoError(t, err, "refused; printed:\n%s", out)
		})
	}
}

// TestMoreWordFlagsAnyCase: the word flags outside fabric sweep follow
// the same rule (units.Word): dma copy's --from and --to, validate's
// --engine, --revision, --kernel auto and exec's SPACE in --input and
// --output were compared as written (--from HOST, --engine PE,
// --kernel AUTO and SBUF[…] were refused or, for AUTO, opened as a path).
func TestMoreWordFlagsAnyCase(t *testing.T) {
	dir := t.TempDir()
	one := writeFile(t, dir, "one.s", "nop engine=pe last\n")
	for _, tc := range []struct {
		args []string
		want string // in the output, or with err, in the error
		err  bool
	}{
		{[]string{"dma", "copy", "--arch", "cayman", "--from", "HOST", "--to", "Device", "--size", "4K"}, "host → device copy of 4096 bytes", false},
		{[]string{"validate", "--arch", "cayman", one, "--engine", "PE"}, "pe block: 1 record valid on cayman\n", false},
		{[]string{"validate", "--arch", "cayman", one, "--engine", "Top_SP"}, "--engine Top_SP: the top_sp engine issues no instruction records", true},
		{[]string{"ls", "--arch", "cayman", "--revision", "EMU"}, "0xf0", false},
		// AUTO is auto, not a file of that name (the machine has no driver).
		{[]string{"ls", "--kernel", "AUTO"}, "--kernel auto: no /dev/neuron* nodes", true},
		{[]string{"dma", "copy", "--from", "disk"}, `--from "disk": want host or device`, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if tc.err {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
				return
			}
			require.NoError(t, err, out)
			assert.Contains(t, out, tc.want)
		})
	}
	for spec, psum := range map[string]bool{"SBUF[0:1,0]=x.bin": false, "Psum[0:1,0]=x.bin": true, "PSUM[0:1,0]:4=y.bin": true} {
		tile, err := parseTile(spec, strings.Contains(spec, "]:"))
		require.NoError(t, err, spec)
		assert.Equal(t, psum, tile.PSUM, spec)
	}
}
