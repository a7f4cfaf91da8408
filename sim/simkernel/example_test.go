package simkernel_test

import (
	"fmt"

	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// The two conversions of work to time: a DMA transfer and a NeuronCore
// record take AtRate (rounded up: the resource is busy until its last unit
// is done); CyclesAt rounds a clock's cycles to the nearest picosecond.
func ExampleAtRate() {
	fmt.Println(simkernel.AtRate(4096, 33e9))          // 4 KiB at 33 GB/s: 124121.2 ps
	fmt.Println(simkernel.AtRate(64, 1_200_000_000))   // 64 cycles at 1.2 GHz: 53333.3 ps
	fmt.Println(simkernel.CyclesAt(1_200_000_000, 64)) // the same cycles, to nearest
	// Output:
	// 124.122ns
	// 53.334ns
	// 53.333ns
}
