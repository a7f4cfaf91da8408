package ndl_test

import (
	"fmt"
	"log"

	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// Open the first Neuron device through the kernel driver and read a register
// of its APB BAR. (Not run: it needs a host with the Neuron driver loaded.)
func ExampleOpenKernel() {
	dev, err := ndl.OpenKernel("/dev/neuron0")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	id := dev.Identity()
	fmt.Println("device:", id, "APB BAR size:", dev.BARSize(0))

	var word [1]uint32
	if err := dev.ReadBAR(0, 0x0, word[:]); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("BAR0+0x0 = %#08x\n", word[0])
}

// An Inf2 reports the same arch as a Trn1 (V2); the driver does not return
// the PCI device id, so pass it when it matters.
func ExampleOpenKernelWithOptions() {
	dev, err := ndl.OpenKernelWithOptions("/dev/neuron0", ndl.KernelOptions{DeviceID: 0x7264})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	fmt.Println(dev.Identity())
}
