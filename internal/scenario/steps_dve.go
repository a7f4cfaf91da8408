package scenario

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/dve"
)

// DVELoadStep loads the default DVE tables on cores of devices (default:
// every core of every device). A list given names each index once and is
// not empty (checkContext.indexList).
type DVELoadStep struct {
	Devices []int `yaml:"devices"`
	Cores   []int `yaml:"cores"`
}

// Kind implements Action.
func (*DVELoadStep) Kind() string { return "dve_load" }

func (st *DVELoadStep) check(c *checkContext) error {
	if err := c.indexList("devices", "device", st.Devices, c.device); err != nil {
		return err
	}
	return c.indexList("cores", "core", st.Cores, c.core)
}

// dveLoadHostBytes is the host memory one load of the default DVE tables
// on a core holds: its staging buffers and destinations in device memory
// (which the simulator keeps in host memory), the loader's state and the
// DMA engines the load makes. Measured (TestDVELoadHostBytes): 59 KB of
// heap per load on mariana and cayman, 86–89 KB on sunda; rounded up to
// 128 KiB, which leaves room for the collector. A dve_load on every core
// of a what-if system of 16,384 mariana devices holds gigabytes.
const dveLoadHostBytes = 128 << 10

// loads is how many core loads the step makes on a system of r: its
// devices (default every device) times its cores (default every core).
func (st *DVELoadStep) loads(r *resolved) int {
	devs, cores := len(st.Devices), len(st.Cores)
	if devs == 0 {
		devs = r.devices
	}
	if cores == 0 {
		cores = hwarch.MustGeometry(r.gen).NeuronCores
	}
	return devs * cores
}

// memory is the system's devices (cluster.FixedTimingMemory) and what the
// loads hold (dveLoadHostBytes each).
func (st *DVELoadStep) memory(r *resolved) (uint64, string, error) {
	n := st.loads(r)
	return cluster.FixedTimingMemory(r.devices) + uint64(n)*dveLoadHostBytes,
		fmt.Sprintf("the default DVE tables on %s of a system of %s", units.Plural(int64(n), "core", "cores"), units.Plural(int64(r.devices), "device", "devices")), nil
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
