package scenario

import (
	"bytes"
	"fmt"

	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/dmem"
)

// DMACopyStep copies bytes host → device → host through a core's queue and
// checks them.
type DMACopyStep struct {
	Device int  `yaml:"device"`
	Core   int  `yaml:"core"`
	Bytes  Size `yaml:"bytes,required"`
}

// Kind implements Action.
func (*DMACopyStep) Kind() string { return "dma_copy" }

func (st *DMACopyStep) check(c *checkContext) error {
	if st.Bytes <= 0 || st.Bytes > 1<<30 {
		return c.errorf("bytes", "a copy of 1 byte to 1 GiB, not %d", st.Bytes)
	}
	if err := c.device(st.Device, "device"); err != nil {
		return err
	}
	return c.core(st.Core, "core")
}

// memory is the copy's data and the copy read back, both host buffers, the
// device pages, doubled for the collector's headroom.
func (st *DMACopyStep) memory(*resolved) (uint64, string, error) {
	n := uint64(st.Bytes)
	return 2 * 5 * n, fmt.Sprintf("a DMA copy of %s", memlimit.Human(n)), nil
}

func (st *DMACopyStep) run(run *runner) error {
	d := run.c.Devices[st.Device]
	n := uint64(st.Bytes)
	h, err := d.Mem.Alloc(dmem.Request{Size: n, Channel: dmem.Any, NC: st.Core, Name: "scenario.copy"})
	if err != nil {
		return err
	}
	defer d.Mem.Free(h)
	blk, err := d.Mem.Info(h)
	if err != nil {
		return err
	}
	host := d.DMA.Host()
	src, err := host.HostAlloc(n, 4096)
	if err != nil {
		return err
	}
	defer host.HostFree(src)
	dst, err := host.HostAlloc(n, 4096)
	if err != nil {
		return err
	}
	defer host.HostFree(dst)
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + int(run.p.System.Seed))
	}
	if err := host.HostWrite(src, data); err != nil {
		return err
	}
	geo := d.Up.Geometry
	start := run.c.System.Now()
	if _, err := d.DMA.Copy(st.Core, blk.Addr, geo.HostAddress(src), n); err != nil {
		return err
	}
	if _, err := d.DMA.Copy(st.Core, geo.HostAddress(dst), blk.Addr, n); err != nil {
		return err
	}
	took := run.c.System.Now() - start
	back := make([]byte, n)
	if err := host.HostRead(dst, back); err != nil {
		return err
	}
	if run.r.timing {
		run.printf("neuron%d core %d: %s host → device → host in %v (timing-only: bytes from the host move, the way back does not)", st.Device, st.Core, units.Plural(int64(n), "byte", "bytes"), took)
		return nil
	}
	if !bytes.Equal(data, back) {
		return fmt.Errorf("neuron%d core %d: the bytes copied back differ: %w", st.Device, st.Core, ErrFailed)
	}
	run.printf("neuron%d core %d: %s host → device → host in %v, checked", st.Device, st.Core, units.Plural(int64(n), "byte", "bytes"), took)
	return nil
}
