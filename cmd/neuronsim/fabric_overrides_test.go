package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFabricSweepReportsItsOverrides: a fabric sweep's report — the text
// header and the --json file alike — names every parameter the command
// line changed from the generation's defaults, each under the key a sweep
// grid's merged report uses where it has one (link_bw in B/s,
// link_latency_ps, endpoints, efa_*, seed) and otherwise in exact units:
// the parity mode, a link bandwidth or latency, the endpoint and switch
// delays, the chunk, the DMA engines, the chunks, the group size, the
// server size, the EFA network's settings and a functional run's seed (the
// flat ring's channels have a note of their own). Without them two reports
// of different systems read alike (a sweep with --link-bw 10GB/s wrote the same
// header as one with the default links). A sweep that changes none of them
// names none.
func TestFabricSweepReportsItsOverrides(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want map[string]any // JSON value of neuronsim_<key>
	}{
		{"parity mode", []string{"--devices", "4", "--endpoints", "ideal", "--link-bw", "10GB/s", "--link-latency", "700.5"},
			map[string]any{"endpoints": "ideal", "link_bw_Bps": 1e10, "link_latency_ps": 700500.0}},
		{"delays and chunk", []string{"--arch", "cayman", "--devices", "4", "--topology", "star", "--link-bw", "50GiB/s", "--endpoint-delay", "7", "--switch-latency", "9", "--chunk-bytes", "4K"},
			nil},
		{"delays and chunk on a switch", []string{"--devices", "8", "--link-bw", "50GiB/s", "--endpoint-delay", "7", "--switch-latency", "9", "--chunk-bytes", "4K", "--server-size", "4"},
			map[string]any{"link_bw_Bps": float64(50 << 30), "endpoint_delay_ps": 7000.0, "switch_latency_ps": 9000.0, "chunk_bytes": 4096.0, "server_size": 4.0}},
		{"engines and chunks", []string{"--arch", "cayman", "--devices", "4", "--engines", "3", "--chunks", "2"},
			map[string]any{"engines": 3.0, "chunks": 2.0}},
		{"hier", []string{"--devices", "8", "--algo", "hier", "--group-size", "4"}, map[string]any{"group_size": 4.0}},
		{"efa", []string{"--arch", "sunda", "--devices", "4", "--nodes", "2", "--algo", "ring", "--channels", "1", "--efa-bw", "10GB/s", "--efa-latency", "9000",
			"--oversubscription", "2", "--leaf-ports", "1", "--spines", "1", "--devices-per-nic", "4"},
			map[string]any{"efa_bandwidth_Bps": 1e10, "efa_latency_ps": 9e6, "efa_oversubscription": 2.0, "efa_leaf_ports": 1.0, "efa_spines": 1.0, "efa_devices_per_nic": 4.0}},
		{"seed", []string{"--devices", "2", "--mode", "functional", "--seed", "7"}, map[string]any{"seed": 7.0}},
		{"defaults", []string{"--devices", "4"}, map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "r.json")
			out, err := runCLI(t, append([]string{"fabric", "sweep", "-b", "64K", "-e", "64K", "--json", js}, tc.args...)...)
			require.NoError(t, err, out)
			b, err := os.ReadFile(js)
			require.NoError(t, err)
			var rep map[string]any
			require.NoError(t, json.Unmarshal(b, &rep))
			want := tc.want
			if want == nil { // the star has no switch and no servers: the rest is named
				want = map[string]any{"link_bw_Bps": float64(50 << 30), "endpoint_delay_ps": 7000.0, "switch_latency_ps": 9000.0, "chunk_bytes": 4096.0}
			}
			for _, o := range overrideParams {
				k := o.key
				v, ok := want[k]
				if !ok {
					assert.NotContains(t, rep, "neuronsim_"+k)
					assert.NotContains(t, out, "# "+k+": ")
					continue
				}
				assert.Equal(t, v, rep["neuronsim_"+k], k)
				text := ""
				switch x := v.(type) {
				case string:
					text = x
				case float64:
					text = strconv.FormatFloat(x, 'f', -1, 64)
				}
				assert.Contains(t, out, "# "+k+": "+text+"\n")
			}
		})
	}
}
