package dve_test

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/dve"
)

// The dve_tbl_hash of the default tables of every generation. Sunda hashes 4
// buffers, cayman and mariana 5.
func ExampleFingerprint() {
	for _, g := range hwarch.Generations() {
		tables, err := dve.DefaultBins(g)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %d %x\n", g, arch.MustFor(g, arch.Options{}).Khal.DVETableCount(), dve.Fingerprint(g, tables))
	}
	// Output:
	// sunda 4 dc8d538ef1bbe330560a8a9820494fc523b0c7a500f626cd648494c029fc2059
	// cayman 5 5c9ba802f1dfe9274f8adb38a56a6e22099d37ded8643bfa74d587843817e21c
	// mariana 5 3de02013bbfb30f6733c33433ee0381810eb0c7e036b3f32e50d185a18f06e8e
}

// Where NeuronCore 0's DVE tables go on sunda, whose offsets are implicit.
func ExampleDestinations() {
	ds, err := dve.Destinations(arch.MustFor(hwarch.Sunda, arch.Options{}), 0)
	if err != nil {
		panic(err)
	}
	for _, d := range ds {
		fmt.Printf("%-12s offset %#x size %#x addr %#x\n", d.Name, d.Offset, d.Size, d.Addr)
	}
	// Output:
	// opcode       offset 0x2b80000 size 0x2000 addr 0xfffc2b80000
	// control_fast offset 0x2b82000 size 0x1000 addr 0xfffc2b82000
	// datapath     offset 0x2b83000 size 0x1000 addr 0xfffc2b83000
	// param_ram    offset 0x2b84000 size 0x400 addr 0xfffc2b84000
}

func ExampleFNV64a() {
	fmt.Printf("%#x\n", dve.FNV64a([]byte("foobar"), dve.FNVOffset64))
	// Output: 0x85944171f73967e8
}
