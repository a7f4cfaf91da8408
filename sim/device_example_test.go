package sim_test

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
)

// A Trn3 device powers on: until its firmware has booted every register
// reads 0xDEADBEEF; after Firmware.Boot of device time the MISC RAM mailbox
// holds the routing id. Sleep moves the device's virtual clock and costs no
// real time.
func ExampleDevice() {
	d, err := sim.NewDevice(sim.DeviceConfig{Generation: hwarch.Mariana, RoutingID: 5})
	if err != nil {
		panic(err)
	}
	routingID := d.Geometry().BAR0.MiscRAM + hwarch.MiscRoutingID

	v, _ := d.Read32(d.RegisterBAR(), routingID)
	fmt.Printf("%v at %v: %#x\n", d.Phase(), d.Now(), v)

	_ = d.Sleep(d.Config().Firmware.Boot)
	v, _ = d.Read32(d.RegisterBAR(), routingID)
	fmt.Printf("%v at %v: routing id %d\n", d.Phase(), d.Now(), v)
	fmt.Printf("0xDEADBEEF answers: %d\n", d.Stats().NotReadyReads)
	// Output:
	// booting at 800ns: 0xdeadbeef
	// ready at 500.0016ms: routing id 5
	// 0xDEADBEEF answers: 1
}
