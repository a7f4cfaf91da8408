package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/units"
)

// posOf is "x.yaml:L:C" of the first occurrence of token in doc.
func posOf(t *testing.T, doc, token string) string {
	t.Helper()
	i := strings.Index(doc, token)
	require.GreaterOrEqual(t, i, 0, "token %q in the document", token)
	line := strings.Count(doc[:i], "\n") + 1
	col := i - strings.LastIndex(doc[:i], "\n")
	return fmt.Sprintf("x.yaml:%d:%d:", line, col)
}

// TestParseRefusesBadValues: every scenario value out of its range — a
// count of 0, a duration or bandwidth that does not fit or is not positive,
// an override that does not apply — is refused at parse time, at the
// value's line and column, naming the field and the limit; none is
// replaced by a default and none wraps.
func TestParseRefusesBadValues(t *testing.T) {
	sys := func(fields string) string { return "name: x\nsystem: {arch: mariana, " + fields + "}\n" }
	timing := func(fields string) string { return sys("timing: {" + fields + "}") }
	step := func(s string) string { return "name: x\nsystem: {arch: mariana, devices: 4}\nsteps:\n  - " + s + "\n" }
	for _, tc := range []struct {
		name, doc, token string
		want             []string
	}{
		{"empty name", "name: \"\"\nsystem: {arch: mariana}\n", "\"\"", []string{"name", "empty"}},
		{"devices 0", sys("devices: 0"), "0}", []string{"system.devices: 0: a mariana system with switch v1 holds 1..32 devices"}},
		{"devices -3", sys("devices: -3"), "-3", []string{"system.devices: -3:", "1..32"}},
		{"devices 16385 what_if", sys("what_if: true, devices: 16385"), "16385", []string{"system.devices: 16385:", "1..16384"}},
		{"ranks_per_device 0", sys("ranks_per_device: 0"), "0}", []string{"system.ranks_per_device", "1..8"}},
		{"ranks_per_device past int64", sys("ranks_per_device: 99999999999999999999"), "999", []string{"system.ranks_per_device: 1..8: a mariana device has 8 NeuronCores (num_tpb), not 99999999999999999999"}},
		{"nodes 0", sys("nodes: 0"), "0}", []string{"system.nodes: 0: must be in 1..16384"}},
		{"nodes past int64", sys("nodes: 99999999999999999999"), "999", []string{"system.nodes: 99999999999999999999: must be in 1..16384"}},
		{"engines past int64", timing("engines: -99999999999999999999"), "-999", []string{"system.timing.engines: 1..16 (a mariana NeuronCore's DMA engines), not -99999999999999999999"}},
		{"server_size past int64", timing("server_size: 99999999999999999999"), "999", []string{"system.timing.server_size: 1..64 devices per server, not 99999999999999999999"}},
		// YAML 1.1's and Go's integer forms, refused as the command line
		// refuses --devices 0x10 and +4: a count is a plain decimal.
		{"nodes 0x10", sys("nodes: 0x10"), "0x10", []string{`system.nodes: expected a plain decimal integer, got "0x10" (no 0x, 0o or 0b prefix: write 16)`}},
		{"devices 0o20", sys("devices: 0o20"), "0o20", []string{`system.devices: expected a plain decimal integer, got "0o20" (no 0x, 0o or 0b prefix: write 16)`}},
		{"devices +16", sys("devices: +16"), "+16", []string{`system.devices: expected a plain decimal integer, got "+16" (no '+' sign: write 16)`}},
		{"devices 1_6", sys("devices: 1_6"), "1_6", []string{`system.devices: expected a plain decimal integer, got "1_6" (no underscores: write 16)`}},
		{"devices 0x21", sys("switch: v1, devices: 0x21"), "0x21", []string{`system.devices: expected a plain decimal integer, got "0x21" (no 0x, 0o or 0b prefix: write 33)`}},
		{"step core 0b1", step("exec: {core: 0b1, program: p.s}"), "0b1", []string{`steps[0].exec.core: expected a plain decimal integer, got "0b1"`}},
		// An address, a register value and a seed are unsigned: decimal or
		// 0x hex, as csr read's ADDR and --seed.
		{"csr offset 0o20", step("csr_read: {offset: 0o20}"), "0o20", []string{`steps[0].csr_read.offset: expected a decimal or 0x hex integer, got "0o20" (no 0o or 0b prefix: write 16)`}},
		// A seed seeds the random inputs of functional collectives; a
		// timing-only system moves no data (as fabric sweep's --seed).
		{"seed in timing mode", sys("mode: timing, seed: 7"), "7}", []string{"system.seed: 7: mode timing moves no data, so it has no inputs to seed; seed applies to mode: functional"}},
		{"seed with mode left out", sys("seed: 0"), "0}", []string{"system.seed: 0: mode timing (the default) moves no data"}},
		// The switch family changes nothing on cayman (rtarch.CheckSwitch).
		{"switch v1 on cayman", "name: x\nsystem: {arch: cayman, switch: v1}\n", "v1", []string{"system.switch: v1: the switch family changes nothing on cayman: its runtime tables with switch v1 are those with none, its default (a switch family applies to mariana only)"}},
		{"switch v1 on trn1", "name: x\nsystem: {arch: trn1, switch: v1}\n", "v1", []string{"system.switch: v1: the switch family changes nothing on sunda"}},
		{"nodes of 3 trn1 devices", "name: x\nsystem: {arch: trn1, devices: 3, nodes: 2}\n", "2}", []string{"system.nodes: 2: a node of 3 devices does not split into NICs of 2 devices, the generation's (system.efa.devices_per_nic sets another"}},
		{"efa spine link below 1 B/s", "name: x\nsystem: {arch: cayman, devices: 16, nodes: 2, efa: {bandwidth: 1B/s, oversubscription: 1000}}\n", "1000", []string{"system.efa.oversubscription: 1000: with 2 nodes of 16 devices, leaf rail0-leaf's 2 NICs of 1 B/s (system.efa.bandwidth) over an oversubscription of 1000 (system.efa.oversubscription)", "less than 1 B/s"}},
		{"buffer_bytes 0", sys("buffer_bytes: 0"), "0}", []string{"system.buffer_bytes", "1 byte..35824MiB"}},
		{"buffer_bytes 64G", sys("buffer_bytes: 64G"), "64G", []string{"system.buffer_bytes", "35824MiB"}},
		// A channel's whole size passed and the allocator refused it after
		// bring-up ("dmem: alloc … out of device memory"), naming no key:
		// a rank has the channel less the carve-out and the small pool,
		// and ranks sharing a channel share that.
		{"buffer_bytes 36G", sys("buffer_bytes: 36G"), "36G", []string{"system.buffer_bytes: 1 byte..35824MiB (what a mariana device of 1 rank holds for each", "not 38654705664"}},
		{"buffer_bytes 35825M", sys("buffer_bytes: 35825M"), "35825M", []string{"system.buffer_bytes: 1 byte..35824MiB"}},
		{"buffer_bytes 18G on 8 ranks", sys("ranks_per_device: 8, buffer_bytes: 18G"), "18G", []string{"system.buffer_bytes: 1 byte..17912MiB (what a mariana device of 8 ranks holds for each"}},
		{"buffer_bytes 24G on cayman", "name: x\nsystem: {arch: cayman, buffer_bytes: 24G}\n", "24G", []string{"system.buffer_bytes: 1 byte..23536MiB"}},
		{"buffer_bytes 4G under qemu", "name: x\nsystem: {arch: cayman, revision: qemu, buffer_bytes: 4G}\n", "4G", []string{"system.buffer_bytes: 1 byte..3056MiB"}},
		{"link_latency 1e18", timing("link_latency_ns: 1e18"), "1e18", []string{"system.timing.link_latency_ns", "too long", "at most 10000000000 ns"}},
		{"link_latency -5", timing("link_latency_ns: -5"), "-5", []string{"system.timing.link_latency_ns", "negative"}},
		{"link_latency 0.0001", timing("link_latency_ns: 0.0001"), "0.0001", []string{"system.timing.link_latency_ns: 0.0001: 0.1 ps is not a whole number of ps: the resolution is 1 ps"}}, // once 0 ps
		{"endpoint 0.5 ps", timing("endpoint_delay_ns: 0.0005"), "0.0005", []string{"system.timing.endpoint_delay_ns", "0.5 ps is not a whole number of ps"}},
		{"link_latency inf", timing("link_latency_ns: .inf"), ".inf", []string{"system.timing.link_latency_ns", "not a finite number"}},
		{"link_bw 0", timing("link_bw_gbs: 0"), "0}", []string{"system.timing.link_bw_gbs", "must be positive"}},
		{"link_bw -5", timing("link_bw_gbs: -5"), "-5", []string{"system.timing.link_bw_gbs", "negative"}},
		{"link_bw 1e300", timing("link_bw_gbs: 1e300"), "1e300", []string{"system.timing.link_bw_gbs", "too large"}},
		{"link_bw 1.5e-9", timing("link_bw_gbs: 1.5e-9"), "1.5e-9", []string{`system.timing.link_bw_gbs: "1.5e-9": 1.5 B/s is not a whole number of bytes per second`}}, // once 2 B/s
		{"link_bw 0.5e-9", timing("link_bw_gbs: 0.5e-9"), "0.5e-9", []string{"system.timing.link_bw_gbs", "too small: 0.5 B/s"}},                                        // once 1 B/s
		{"link_bw inf", timing("link_bw_gbs: .inf"), ".inf", []string{"system.timing.link_bw_gbs", "not a finite number"}},
		{"endpoint -1", timing("endpoint_delay_ns: -1"), "-1", []string{"system.timing.endpoint_delay_ns", "negative"}},
		{"switch -7", timing("switch_latency_ns: -7"), "-7", []string{"system.timing.switch_latency_ns", "negative"}},
		{"launch 1e20", timing("launch_cost_ns: 1e20"), "1e20", []string{"system.timing.launch_cost_ns", "too long"}},
		{"launch 12.5 ns", timing("launch_cost_ns: 12.5"), "12.5", []string{"system.timing.launch_cost_ns: 12.5: not a whole number of nanoseconds"}}, // once rounded to 13 ns
		{"chunk 0", timing("chunk_bytes: 0"), "0}", []string{"system.timing.chunk_bytes", "64B..1GiB"}},
		{"chunk 2G", timing("chunk_bytes: 2G"), "2G", []string{"system.timing.chunk_bytes", "64B..1GiB"}},
		{"chunk free", "name: x\nsystem: {arch: mariana, model: free, timing: {chunk_bytes: 8K}}\n", "8K", []string{"system.timing.chunk_bytes", "model: aware"}},
		{"engines 0", timing("engines: 0"), "0}", []string{"system.timing.engines", "1..16"}},
		{"engines 1000", timing("engines: 1000"), "1000", []string{"system.timing.engines", "1..16"}},
		// A topology the count cannot make, at system.topology (once
		// "x.yaml: system: cluster: fabric torus2d: …", at no line).
		{"torus2d of 6", "name: x\nsystem: {arch: cayman, devices: 6, topology: torus2d}\n", "torus2d", []string{"system.topology: torus2d: 6 devices (system.devices): the 4×4 torus needs a multiple of 16"}},
		{"ultraserver of 4", "name: x\nsystem: {arch: cayman, devices: 4, topology: ultraserver}\n", "ultraserver", []string{"system.topology: ultraserver: 4 devices (system.devices): an UltraServer is 4 × 16 = 64"}},
		{"trn3-gen1 of 4", sys("devices: 4, topology: trn3-gen1"), "trn3-gen1", []string{"system.topology: trn3-gen1: 4 devices (system.devices): a Trn3 Gen1 UltraServer is 4 servers × 16 = 64"}},
		// A value of 100 digits is echoed cut to 64 characters.
		{"nodes of 100 digits", sys("nodes: " + strings.Repeat("9", 100)), "999", []string{"system.nodes: " + strings.Repeat("9", 64) + "…: must be in 1..16384"}},
		{"server_size 0", timing("server_size: 0"), "0}", []string{"system.timing.server_size", "1..64"}},
		{"server_size past the devices", sys("devices: 16, timing: {server_size: 32}"), "32}", []string{"system.timing.server_size: 32: 32 devices per server is more than the system's 16 devices", "no inter-server switch"}},
		{"server_size not dividing the devices", sys("devices: 16, timing: {server_size: 3}"), "3}", []string{"system.timing.server_size: 3: 3 devices per server does not divide the system's 16 devices: the last server would have 1"}},
		{"server_size torus", "name: x\nsystem: {arch: cayman, devices: 16, timing: {server_size: 4}}\n", "4}", []string{"system.timing.server_size", "a torus2d topology has no servers", "switch topology"}},
		// A Trn3 UltraServer has servers, fixed by the hardware: the
		// refusal said it had none (fabric sweep --server-size said fixed).
		{"server_size trn3-gen1", "name: x\nsystem: {name: trn3-gen1, timing: {server_size: 16}}\n", "16}", []string{"system.timing.server_size: a trn3-gen1 topology has its servers fixed (docs/fabric.md §Systems); server_size applies to the switch topology"}},
		{"server_size trn3-gen2", "name: x\nsystem: {name: trn3-gen2, timing: {server_size: 4}}\n", "4}", []string{"system.timing.server_size: a trn3-gen2 topology has its servers fixed"}},
		{"fault in 1000000h", step("fault: {kind: device_reset, in: 1000000h}"), "1000000h", []string{"steps[0].fault.in", "too long"}},
		{"csr_write offset past 2^64", step("csr_write: {device: 0, offset: 18446744073709551615, value: 1}"), "18446744073709551615", []string{"steps[0].csr_write.offset", "0xffffffffffffffff: BAR access out of range: a mariana device's register BAR is 4 GiB, word offsets 0x0..0xfffffffc"}},
		{"csr_read offset 4 GiB", step("csr_read: {offset: 0x100000000}"), "0x100000000", []string{"steps[0].csr_read.offset", "BAR access out of range"}},
		{"csr_read offset unaligned", step("csr_read: {offset: 0x6C84026}"), "0x6C84026", []string{"steps[0].csr_read.offset", "0x6c84026: BAR offset not 4-byte aligned"}},
		{"chunks 0", step("collective: {op: all_reduce, size: 1M, chunks: 0}"), "0}", []string{"steps[0].collective.chunks", "1..65536"}},
		{"factor 0", step("sweep: {op: all_reduce, min: 1K, max: 1M, factor: 0}"), "0}", []string{"steps[0].sweep.factor", "at least 2"}},
		{"step 0", step("sweep: {op: all_reduce, min: 1K, max: 1M, step: 0}"), "0}", []string{"steps[0].sweep.step", "at least 1 byte"}},
		{"factor and step", step("sweep: {op: all_reduce, min: 1K, max: 1M, factor: 2, step: 4K}"), "4K", []string{"steps[0].sweep.step", "not both"}},
		// Once "steps[0].sweep: nccom: bad sweep: maximum size 3B is below the alignment 4B …".
		{"max below the granule", step("sweep: {op: all_reduce, min: 0, max: 3, step: 1}"), "3,", []string{"steps[0].sweep.max: 3B: below the alignment 4B"}},
		{"step of too many points", step("sweep: {op: all_reduce, min: 1, max: 1M, step: 1}"), "1}", []string{"steps[0].sweep.step: 1B: 1B to 1MiB by 1 bytes is 1048576 points (at most 10000)"}},
		// Given empty is not left out: the default is the key left out.
		{"outputs json empty", "name: x\nsystem: {arch: mariana}\noutputs: {report: r.txt, json: \"\"}\n", "\"\"", []string{"outputs.json", "empty"}},
		{"outputs json without a sweep", "name: x\nsystem: {arch: mariana}\nsteps:\n  - dma_copy: {bytes: 4K}\noutputs: {plot: p.png}\n", "p.png", []string{"outputs.plot", "no sweep step makes it"}}, // once not written, with no word
		{"outputs dir empty", "name: x\nsystem: {arch: mariana}\noutputs: {dir: ''}\n", "''", []string{"outputs.dir", "empty"}},
		// A line per sweep: more than the legend holds ran off the image.
		{"outputs plot of 33 sweeps", "name: x\nsystem: {arch: mariana, devices: 2}\nsteps:\n" + strings.Repeat("  - sweep: {op: all_reduce, min: 4K, max: 4K}\n", 33) + "outputs: {plot: p.png}\n", "p.png", []string{"outputs.plot", "33 sweep steps", "at most 32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.doc))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrStrict)
			assert.True(t, strings.HasPrefix(err.Error(), posOf(t, tc.doc, tc.token)), "%v at %s", err, posOf(t, tc.doc, tc.token))
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestSystemDevicesRange: system.devices is bounded as the command line's
// --devices is, by the one check (rtarch.Soc.CheckDevicesField): 1..
// get_max_devs of the arch and switch, with a hint at what_if past it, or
// with what_if 1..16384 (the fabric window's device index). A refusal is at
// the value's line and column and names the setting, the value as written
// — digits past int64 too, not int's range — and the range it broke.
func TestSystemDevicesRange(t *testing.T) {
	const whatIfRange = "a what-if system holds 1..16384 devices (the fabric window's 14-bit device index)"
	const v1Range = "a mariana system with switch v1 holds 1..32 devices (get_max_devs)"
	const hint = "; what_if: true allows up to 16384"
	for _, tc := range []struct {
		fields, value string
		want          string // the message after "system.devices: "; "" for accepted
	}{
		{"what_if: true, devices: 65", "65", ""},
		{"what_if: true, devices: 1024", "1024", ""},
		{"what_if: true, devices: 16384", "16384", ""},
		{"devices: 32", "32", ""},
		{"what_if: true, devices: 16385", "16385", "16385: " + whatIfRange},
		{"what_if: true, devices: 0", "0", "0: " + whatIfRange},
		{"what_if: true, devices: -3", "-3", "-3: " + whatIfRange},
		{"what_if: true, devices: 99999999999999999999", "99999999999999999999", "99999999999999999999: " + whatIfRange},
		{"what_if: true, devices: -99999999999999999999", "-99999999999999999999", "-99999999999999999999: " + whatIfRange},
		{"devices: 33", "33", "33: " + v1Range + hint},
		{"devices: 65", "65", "65: " + v1Range + hint},
		{"devices: 99999999999999999999", "99999999999999999999", "99999999999999999999: " + v1Range + hint},
		{"devices: 0", "0", "0: " + v1Range},
		{"devices: -3", "-3", "-3: " + v1Range},
	} {
		t.Run(tc.fields, func(t *testing.T) {
			doc := "name: x\nsystem: {arch: mariana, switch: v1, " + tc.fields + "}\n"
			p, err := Parse("x.yaml", []byte(doc))
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.value, fmt.Sprint(p.sys.devices))
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrStrict)
			assert.ErrorIs(t, err, units.ErrRange)
			assert.Equal(t, posOf(t, doc, tc.value+"}")+" system.devices: "+tc.want, err.Error())
		})
	}
	// what_if where the count is within get_max_devs would change nothing:
	// refused at the key, as fabric sweep --what-if and a grid's are.
	for _, n := range []string{"1", "32"} {
		doc := "name: x\nsystem: {arch: mariana, switch: v1, what_if: true, devices: " + n + "}\n"
		_, err := Parse("x.yaml", []byte(doc))
		assert.EqualError(t, err, posOf(t, doc, "true,")+" system.what_if: true: system.devices "+n+" is within get_max_devs (32 for mariana with switch v1), so it would change nothing; it allows counts beyond that: leave it out")
	}
}

// TestParseKeepsGivenValues: the values given are the ones used — an
// override of a timing parameter reaches the fabric exactly, and absent
// fields take the documented defaults.
func TestParseKeepsGivenValues(t *testing.T) {
	p, err := Parse("x.yaml", []byte("name: x\nsystem: {arch: mariana, devices: 4, ranks_per_device: 2, buffer_bytes: 8M,\n"+
		"  timing: {link_latency_ns: 1.5, link_bw_gbs: 50, chunk_bytes: 8K, engines: 3, launch_cost_ns: 2000, server_size: 2}}\n"))
	require.NoError(t, err)
	r := p.sys
	assert.Equal(t, 4, r.devices)
	assert.Equal(t, 2, r.ranksPer)
	assert.EqualValues(t, 8<<20, r.buffers)
	assert.EqualValues(t, 1500, r.params.InServer.Latency)
	assert.EqualValues(t, 50e9, r.params.InterServer.Bandwidth)
	assert.EqualValues(t, 50e9, r.params.InterRack.Bandwidth, "every link group, the Trn3 Gen1 inter-rack links too")
	assert.EqualValues(t, 1500, r.params.InterRack.Latency)
	assert.Equal(t, 8192, r.params.ChunkBytes)
	assert.Equal(t, 3, r.engines)
	assert.EqualValues(t, 2000, r.launchCost.Nanoseconds())
	assert.Equal(t, 2, r.params.ServerSize)

	p, err = Parse("x.yaml", []byte("name: x\nsystem: {arch: mariana}\n"))
	require.NoError(t, err)
	assert.Equal(t, 1, p.sys.devices)
	assert.Equal(t, 1, p.sys.ranksPer)
	assert.EqualValues(t, 64<<20, p.sys.buffers)
	assert.Nil(t, p.sys.launchCost)
	assert.Equal(t, 0, p.sys.engines)
}
