package sweep

import "testing"

// BenchmarkParseGrid: expanding and checking a grid of 7,200 points (5
// device counts × 3 ops × 2 algorithms × 2 models × 12 link latencies ×
// 10 sizes), each point's schedule built once per distinct collective and
// each of the 5 systems brought up once.
func BenchmarkParseGrid(b *testing.B) {
	src := []byte(`arch: mariana
switch: v1
axes:
  devices: [2, 4, 8, 16, 32]
  ops: [all_reduce, all_gather, reduce_scatter]
  algos: [ring, auto]
  models: [aware, free]
  link_latency: [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200]
  sizes: {min: 1K, max: 512K, factor: 2}
outputs:
  plots: false
`)
	b.ReportAllocs()
	for b.Loop() {
		g, err := ParseGrid("bench.yaml", src)
		if err != nil {
			b.Fatal(err)
		}
		if g.Len() != 7200 {
			b.Fatalf("%d points", g.Len())
		}
	}
}
