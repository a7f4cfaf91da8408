package arch_test

import (
	"fmt"

	"github.com/neuronsim/neuronsim/hw/arch"
)

func ExampleGenerationOfDevice() {
	g, err := arch.GenerationOfDevice(arch.VendorAmazon, 0x7564)
	if err != nil {
		panic(err)
	}
	fmt.Println(g, g.KernelName(), g.Product(), uint8(g))
	// Output: mariana V4 Trn3 4
}

func ExampleNXCoreType() {
	for i, e := range arch.Engines() {
		c, _ := arch.NXCoreType(arch.Cayman, e)
		if i > 0 {
			fmt.Print(" ")
		}
		fmt.Printf("%s→%d", e, c)
	}
	fmt.Println()
	_, ok := arch.NXCoreType(arch.Cayman, 5)
	fmt.Println("engine 5:", ok)
	// Output:
	// PE→10 ACT→7 POOL→9 DVE→8 SP→11
	// engine 5: false
}

func ExampleParseGeneration() {
	_, err := arch.ParseGeneration("trn4")
	fmt.Println(err)
	// Output: unknown generation "trn4": accepted words are sunda|cayman|mariana|v2|v3|v4|trn1|inf2|trn2|trn3|2|3|4
}
