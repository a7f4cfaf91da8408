package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{"devices 0", sys("devices: 0"), "0}", []string{"system.devices", "holds 1..32 devices", "not 0"}},
		{"devices -3", sys("devices: -3"), "-3", []string{"system.devices", "1..32"}},
		{"devices 65 what_if", sys("what_if: true, devices: 65"), "65", []string{"system.devices", "1..64"}},
		{"ranks_per_device 0", sys("ranks_per_device: 0"), "0}", []string{"system.ranks_per_device", "1..8"}},
		{"buffer_bytes 0", sys("buffer_bytes: 0"), "0}", []string{"system.buffer_bytes", "1 byte..36GiB"}},
		{"buffer_bytes 64G", sys("buffer_bytes: 64G"), "64G", []string{"system.buffer_bytes", "36GiB"}},
		{"link_latency 1e18", timing("link_latency_ns: 1e18"), "1e18", []string{"system.timing.link_latency_ns", "too long", "at most 10000000000 ns"}},
		{"link_latency -5", timing("link_latency_ns: -5"), "-5", []string{"system.timing.link_latency_ns", "negative"}},
		{"link_latency inf", timing("link_latency_ns: .inf"), ".inf", []string{"system.timing.link_latency_ns", "not a finite number"}},
		{"link_bw 0", timing("link_bw_gbs: 0"), "0}", []string{"system.timing.link_bw_gbs", "must be positive"}},
		{"link_bw -5", timing("link_bw_gbs: -5"), "-5", []string{"system.timing.link_bw_gbs", "negative"}},
		{"link_bw 1e300", timing("link_bw_gbs: 1e300"), "1e300", []string{"system.timing.link_bw_gbs", "too large"}},
		{"endpoint -1", timing("endpoint_delay_ns: -1"), "-1", []string{"system.timing.endpoint_delay_ns", "negative"}},
		{"switch -7", timing("switch_latency_ns: -7"), "-7", []string{"system.timing.switch_latency_ns", "negative"}},
		{"launch 1e20", timing("launch_cost_ns: 1e20"), "1e20", []string{"system.timing.launch_cost_ns", "too long"}},
		{"chunk 0", timing("chunk_bytes: 0"), "0}", []string{"system.timing.chunk_bytes", "64B..1GiB"}},
		{"chunk 2G", timing("chunk_bytes: 2G"), "2G", []string{"system.timing.chunk_bytes", "64B..1GiB"}},
		{"chunk free", "name: x\nsystem: {arch: mariana, model: free, timing: {chunk_bytes: 8K}}\n", "8K", []string{"system.timing.chunk_bytes", "model: aware"}},
		{"engines 0", timing("engines: 0"), "0}", []string{"system.timing.engines", "1..16"}},
		{"engines 1000", timing("engines: 1000"), "1000", []string{"system.timing.engines", "1..16"}},
		{"server_size 0", timing("server_size: 0"), "0}", []string{"system.timing.server_size", "1..64"}},
		{"server_size torus", "name: x\nsystem: {arch: cayman, devices: 16, timing: {server_size: 4}}\n", "4}", []string{"system.timing.server_size", "switch topology"}},
		{"fault in 1000000h", step("fault: {kind: device_reset, in: 1000000h}"), "1000000h", []string{"steps[0].fault.in", "too long"}},
		{"chunks 0", step("collective: {op: all_reduce, size: 1M, chunks: 0}"), "0}", []string{"steps[0].collective.chunks", "1..65536"}},
		{"factor 0", step("sweep: {op: all_reduce, min: 1K, max: 1M, factor: 0}"), "0}", []string{"steps[0].sweep.factor", "at least 2"}},
		{"step 0", step("sweep: {op: all_reduce, min: 1K, max: 1M, step: 0}"), "0}", []string{"steps[0].sweep.step", "at least 1 byte"}},
		{"factor and step", step("sweep: {op: all_reduce, min: 1K, max: 1M, factor: 2, step: 4K}"), "4K", []string{"steps[0].sweep.step", "not both"}},
		// Given empty is not left out: the default is the key left out.
		{"outputs json empty", "name: x\nsystem: {arch: mariana}\noutputs: {report: r.txt, json: \"\"}\n", "\"\"", []string{"outputs.json", "empty"}},
		{"outputs json without a sweep", "name: x\nsystem: {arch: mariana}\nsteps:\n  - dma_copy: {bytes: 4K}\noutputs: {plot: p.png}\n", "p.png", []string{"outputs.plot", "no sweep step makes it"}}, // once not written, with no word
		{"outputs dir empty", "name: x\nsystem: {arch: mariana}\noutputs: {dir: ''}\n", "''", []string{"outputs.dir", "empty"}},
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
