package scenario

import (
	"fmt"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/dve"
)

// DVELoadStep loads the default DVE tables on cores of devices (default:
// every core of every device).
type DVELoadStep struct {
	Devices []int `yaml:"devices"`
	Cores   []int `yaml:"cores"`
}

// Kind implements Action.
func (*DVELoadStep) Kind() string { return "dve_load" }

func (st *DVELoadStep) check(c *checkContext) error {
	for _, i := range st.Devices {
		if err := c.device(i, "devices"); err != nil {
			return err
		}
	}
	for _, nc := range st.Cores {
		if err := c.core(nc, "cores"); err != nil {
			return err
		}
	}
	return nil
}

func (st *DVELoadStep) run(run *runner) error {
	devs := st.Devices
	if len(devs) == 0 {
		for i := range run.c.Devices {
			devs = append(devs, i)
		}
	}
	if run.dve == nil {
		run.dve = map[int]*dve.Loader{}
	}
	var bytes uint64
	loads := 0
	for _, i := range devs {
		d := run.c.Devices[i]
		l := run.dve[i]
		if l == nil {
			l = dve.NewLoader(d.DMA, d.Mem, run.c.Tables)
			run.dve[i] = l
		}
		cores := st.Cores
		if len(cores) == 0 {
			for nc := range d.Up.Geometry.NeuronCores {
				cores = append(cores, nc)
			}
		}
		for _, nc := range cores {
			rep, err := l.Load(nc, nil)
			if err != nil {
				return fmt.Errorf("neuron%d core %d: %w", i, nc, err)
			}
			bytes += rep.Bytes
			loads++
		}
	}
	run.printf("default DVE tables on %s of %s: %s moved", units.Plural(int64(loads), "core", "cores"), units.Plural(int64(len(devs)), "device", "devices"), units.Plural(int64(bytes), "byte", "bytes"))
	return nil
}
