package arch_test

import (
	"errors"
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
)

func ExampleDispatch() {
	var d arch.Dispatch
	if _, err := d.Tables(); errors.Is(err, arch.ErrNotSelected) {
		fmt.Println("before selection:", err)
	}
	t, err := d.Select(hwarch.PCIIdentity{Vendor: 0x1D0F, Device: 0x7564}, arch.Options{Switch: hwarch.SwitchV1})
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Generation, "max devs", t.Soc.MaxDevs(), "mesh folds", t.Soc.MeshMaxFolds())
	// Output:
	// before selection: arch tables not selected
	// mariana max devs 32 mesh folds 16
}

func ExampleKhal_ConfigOffset() {
	for _, g := range hwarch.Generations() {
		off, ok := arch.MustFor(g, arch.Options{}).Khal.ConfigOffset(arch.EngFP8Cfg, hwarch.EnginePOOL)
		fmt.Printf("%s: %#x %v\n", g, off, ok)
	}
	// Output:
	// sunda: 0x0 false
	// cayman: 0x0 false
	// mariana: 0xf0c true
}
