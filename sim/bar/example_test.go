package bar_test

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/bar"
)

// Decoding BAR0 offsets of a Trn3 (mariana) device: a semaphore INCR word of
// NC 1, the routing id in the MISC RAM (which sits inside APB IO die 0 and
// takes precedence over it), a TOP_SP of the second half, and a hole.
func ExampleAtlas_Lookup() {
	a, err := bar.NewAtlas(hwarch.MustGeometry(hwarch.Mariana))
	if err != nil {
		panic(err)
	}
	for _, off := range []uint64{0xD670_1804, 0x6C8_4024, 0xF280_2000, 0x2000_0000} {
		w, rel, ok := a.Lookup(off)
		if !ok {
			fmt.Printf("%#x: unmapped\n", off)
			continue
		}
		fmt.Printf("%#x: %s (%v %d) +%#x\n", off, w.Name, w.Kind, w.Index, rel)
	}
	// Output:
	// 0xd6701804: tpb1_sync (nc-sync 1) +0x1804
	// 0x6c84024: misc_ram (misc-ram 0) +0x24
	// 0xf2802000: top_sp8 (top-sp 8) +0x2000
	// 0x20000000: unmapped
}

// BAR4 onto HBM: on V2 the second channel follows the first in BAR4 although
// its device address is 64 GiB further; under QEMU a V3/V4 device splits its
// BAR4 into four equal channels.
func ExampleBAR4_Translate() {
	v2, _ := bar.NewBAR4(hwarch.MustGeometry(hwarch.Sunda), hwarch.ModeSilicon, 32*hwarch.GiB)
	addr, ok := v2.Translate(16 * hwarch.GiB)
	fmt.Printf("V2 BAR4 16 GiB -> %#x %v\n", addr, ok)

	q, _ := bar.NewBAR4(hwarch.MustGeometry(hwarch.Cayman), hwarch.ModeQEMU, bar.DefaultQEMUBAR4)
	addr, ok = q.Translate(4 * hwarch.GiB)
	fmt.Printf("V3 QEMU BAR4 4 GiB -> %#x %v, channel size %d GiB\n", addr, ok, q.ChannelSize(1)/hwarch.GiB)

	v3, _ := bar.NewBAR4(hwarch.MustGeometry(hwarch.Cayman), hwarch.ModeSilicon, 256*hwarch.GiB)
	_, ok = v3.Translate(24 * hwarch.GiB)
	fmt.Printf("V3 BAR4 24 GiB mapped: %v\n", ok)
	// Output:
	// V2 BAR4 16 GiB -> 0x1000000000 true
	// V3 QEMU BAR4 4 GiB -> 0x4000000000 true, channel size 4 GiB
	// V3 BAR4 24 GiB mapped: false
}
