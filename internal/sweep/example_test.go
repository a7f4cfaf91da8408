package sweep_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/neuronsim/neuronsim/internal/sweep"
)

// A grid of 4 points run in two shards into one folder, then merged.
func Example() {
	g, err := sweep.ParseGrid("grid.yaml", []byte(`arch: cayman
axes:
  devices: [2, 4]
  ops: [all_reduce]
  sizes: [64K, 1M]
outputs:
  plots: false
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range g.Points() {
		fmt.Printf("point %d: %s of %d B on %d %s devices (%s)\n", p.Index, p.Op, p.Size, p.Devices, p.Arch, p.Topology)
	}
	dir, _ := os.MkdirTemp("", "sweep-example")
	defer os.RemoveAll(dir)
	for i := range 2 {
		st, err := sweep.Run(g, sweep.RunOptions{Dir: dir, Shard: sweep.Shard{Index: i, Count: 2}, Jobs: 1})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("shard %d/2: %d points ran\n", i, st.Ran)
	}
	if _, err := sweep.Merge(dir, sweep.MergeOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	f, _ := sweep.ReadFolder(dir)
	for _, r := range f.Reports() {
		fmt.Printf("report: %s on %d ranks, %d sizes\n", r.Op, r.Ranks, len(r.Rows))
	}
	_, err = os.Stat(filepath.Join(dir, sweep.MergedDir, sweep.CSVName))
	fmt.Println("points.csv written:", err == nil)
	// Output:
	// point 0: all_reduce of 65536 B on 2 cayman devices (ring)
	// point 1: all_reduce of 1048576 B on 2 cayman devices (ring)
	// point 2: all_reduce of 65536 B on 4 cayman devices (ring)
	// point 3: all_reduce of 1048576 B on 4 cayman devices (ring)
	// shard 0/2: 2 points ran
	// shard 1/2: 2 points ran
	// report: all_reduce on 2 ranks, 2 sizes
	// report: all_reduce on 4 ranks, 2 sizes
	// points.csv written: true
}
