package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSweepReportNamesTheSystemsOverrides: a sweep step's report — its
// table's header in the report and the JSON output — names the parameters
// the system's timing and efa keys give and, in functional mode, the seed,
// exactly and under the names fabric sweep's report gives its flags (link_bw
// in B/s, latencies in ps): a JSON output read apart from the scenario file
// once named none of them, and read as one of the defaults. A scenario
// that gives none names none.
func TestSweepReportNamesTheSystemsOverrides(t *testing.T) {
	for _, tc := range []struct {
		name, system string
		want         map[string]any
	}{
		{"timing", "{arch: mariana, devices: 4, reset: false, boot: false, timing: {link_bw_gbs: 17, link_latency_ns: 123.5, endpoint_delay_ns: 7, switch_latency_ns: 9, chunk_bytes: 8K, engines: 3, launch_cost_ns: 2000, server_size: 2}}",
			map[string]any{"link_bw_Bps": 17e9, "link_latency_ps": 123500.0, "endpoint_delay_ps": 7000.0, "switch_latency_ps": 9000.0, "chunk_bytes": 8192.0,
				"engines": 3.0, "launch_cost_ps": 2e6, "server_size": 2.0}},
		{"efa", "{arch: cayman, devices: 2, nodes: 2, reset: false, boot: false, efa: {bandwidth: 100Gbps, latency_ns: 9000, oversubscription: 2, leaf_ports: 1, spines: 1, devices_per_nic: 2}}",
			map[string]any{"efa_bandwidth_Bps": 12.5e9, "efa_latency_ps": 9e6, "efa_oversubscription": 2.0, "efa_leaf_ports": 1.0, "efa_spines": 1.0, "efa_devices_per_nic": 2.0}},
		{"seed", "{arch: cayman, devices: 2, mode: functional, seed: 7, reset: false, boot: false}", map[string]any{"seed": 7.0}},
		{"none", "{arch: cayman, devices: 2, reset: false, boot: false}", map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := runDoc(t, dir, "name: x\nsystem: "+tc.system+"\nsteps:\n  - sweep: {op: all_reduce, min: 64K, max: 64K}\noutputs: {json: s.json}\n", Options{})
			require.NoError(t, err)
			b, err := os.ReadFile(filepath.Join(dir, "s.json"))
			require.NoError(t, err)
			var rep map[string]any
			require.NoError(t, json.Unmarshal(b, &rep))
			report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
			require.NoError(t, err)
			for _, k := range []string{"link_bw_Bps", "link_latency_ps", "endpoint_delay_ps", "switch_latency_ps", "chunk_bytes", "engines", "launch_cost_ps",
				"server_size", "efa_bandwidth_Bps", "efa_latency_ps", "efa_oversubscription", "efa_leaf_ports", "efa_spines", "efa_devices_per_nic", "seed"} {
				v, ok := tc.want[k]
				if !ok {
					assert.NotContains(t, rep, "neuronsim_"+k)
					assert.NotContains(t, string(report), "# "+k+": ")
					continue
				}
				assert.Equal(t, v, rep["neuronsim_"+k], k)
				assert.Contains(t, string(report), "# "+k+": ")
			}
		})
	}
}
