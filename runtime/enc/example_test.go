package enc_test

import (
	"fmt"

	"github.com/neuronsim/neuronsim/runtime/enc"
)

// A 4-rank ring all-gather of 16 bytes (one 4-byte element per rank): in
// each step every rank passes one block to its right neighbour; the first
// step also copies the rank's own input into its output.
func ExampleBuild() {
	s, err := enc.Build(enc.AllGather, enc.Ring, 4, 16, 4, enc.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	fmt.Print(s.Dump())
	bytes, xfers := s.Traffic()
	fmt.Printf("%d B in %d transfers between ranks; busbw factor %.2f\n", bytes, xfers, s.Op.BusFactor(s.Ranks))
	// Output:
	// ring all_gather: 4 ranks, 16 B, elem 4, 3 steps, 16 xfers
	// step 0: 0.out[0,4)=0.in[0,4) 1.out[0,4)=0.in[0,4) 1.out[4,8)=1.in[0,4) 2.out[4,8)=1.in[0,4) 2.out[8,12)=2.in[0,4) 3.out[8,12)=2.in[0,4) 3.out[12,16)=3.in[0,4) 0.out[12,16)=3.in[0,4)
	// step 1: 1.out[12,16)=0.out[12,16) 2.out[0,4)=1.out[0,4) 3.out[4,8)=2.out[4,8) 0.out[8,12)=3.out[8,12)
	// step 2: 1.out[8,12)=0.out[8,12) 2.out[12,16)=1.out[12,16) 3.out[0,4)=2.out[0,4) 0.out[4,8)=3.out[4,8)
	// 48 B in 12 transfers between ranks; busbw factor 0.75
}
