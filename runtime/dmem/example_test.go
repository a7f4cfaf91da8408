package dmem_test

import (
	"errors"
	"fmt"
	"os"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/dmem"
)

// A Trn2 device under QEMU: four 1 GiB channels. NC 5's memory is on HBM
// channel 2, whose device addresses carry bit 47.
func Example() {
	geo := hwarch.MustGeometry(hwarch.Cayman)
	a, err := dmem.New(geo, dmem.Options{ChannelBytes: []uint64{hwarch.GiB, hwarch.GiB, hwarch.GiB, hwarch.GiB}})
	if err != nil {
		panic(err)
	}
	weights, _ := a.Alloc(dmem.Request{Size: 300 * hwarch.MiB, Channel: dmem.Any, NC: 5, Name: "weights"})
	ring, _ := a.Alloc(dmem.Request{Size: 100, Align: 64 * hwarch.KiB, Channel: dmem.Any, NC: 5, Name: "dma-ring"})
	b, _ := a.Info(weights)
	fmt.Printf("weights: handle %d channel %d at %#x, %d bytes\n", b.Handle, b.Channel, b.Addr, b.Size)

	if blk, off, ok := a.Translate(b.Addr+4096, 64); ok {
		fmt.Printf("DMA target %#x is %q+%#x\n", b.Addr+4096, blk.Name, off)
	}
	_, err = a.Alloc(dmem.Request{Size: 600 * hwarch.MiB, Channel: 2, NC: dmem.Any, Name: "too-big"})
	fmt.Println(errors.Is(err, dmem.ErrNoMemory), err)

	_ = a.Dump(os.Stdout)
	_ = a.Free(ring)
	fmt.Println(errors.Is(a.Free(ring), dmem.ErrDoubleFree))
	// Output:
	// weights: handle 1 channel 2 at 0x800001000000, 314572800 bytes
	// DMA target 0x800001001000 is "weights"+0x1000
	// true dmem: alloc "too-big" of 600 MiB (requested 0x25800000) aligned 4 KiB on channel 2: largest free block 204 MiB on channel 2: out of device memory
	// handle ch address                  size  requested pool  name
	//      1  2 0x0000800001000000    300 MiB 0x12c00000 main  weights
	//      2  2 0x0000800020800000      4 KiB       0x64 small dma-ring
	// channel 0: 0 blocks, used 0 B of 1008 MiB (small 0 B), largest free 504 MiB
	// channel 1: 0 blocks, used 0 B of 1008 MiB (small 0 B), largest free 504 MiB
	// channel 2: 2 blocks, used 0x12c01000 B (~300.004 MiB) of 1008 MiB (small 4 KiB), largest free 0x1f7ff000 B (~503.996 MiB)
	// channel 3: 0 blocks, used 0 B of 1008 MiB (small 0 B), largest free 504 MiB
	// true
}
