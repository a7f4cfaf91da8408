package nccom_test

import (
	"fmt"
	"os"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

func ExampleReport_WriteTable() {
	// An all_reduce of fp32 data on 2 ranks, sizes from 1KiB to 1MiB by a
	// factor of 32, each size aligned to 4 bytes × 2 ranks.
	sizes, err := nccom.Sizes(1024, 1<<20, 32, 0, 4*2)
	if err != nil {
		fmt.Println(err)
		return
	}
	rep := &nccom.Report{Op: "all_reduce", Ranks: 2, Extra: map[string]any{"model": "aware"}}
	for _, size := range sizes {
		timePS := uint64(20_000_000 + size*100) // 20 µs + 10 GB/s, say
		row, err := nccom.NewRow(rep.Op, rep.Ranks, size, 4, "fp32", timePS, "ring")
		if err != nil {
			fmt.Println(err)
			return
		}
		rep.Rows = append(rep.Rows, row)
	}
	if err := rep.WriteTable(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// # bandwidth unit: GB/s = 1e9 bytes/s; sizes in bytes
	// # model: aware
	// # op: all_reduce
	// # ranks: 2
	//     size(B)    count(elems)    type    time:avg(us)    algbw(GB/s)    busbw(GB/s)    algorithm
	//        1024             256    fp32           20.10           0.05           0.05         ring
	//       32768            8192    fp32           23.28           1.41           1.41         ring
	//     1048576          262144    fp32          124.86           8.40           8.40         ring
	// Avg bus bandwidth:	3.2856GB/s
}
