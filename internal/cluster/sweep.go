package cluster

import (
	"fmt"

	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// Sweep is a collective run over sizes, nccom-test's -b/-e/-f.
type Sweep struct {
	Op       enc.Op
	Algo     enc.Algo
	Dtype    enc.Dtype
	Sizes    []int64
	Options  enc.Options
	Seed     uint64          // functional mode: the first size's input seed (then +1 per size)
	Progress *nccom.Progress // nil: none
}

// Sweep runs one collective per size on every rank and returns nccom-test's
// report; in functional mode each result is checked against the CPU
// reference. The report's Extra names the system.
func (c *Cluster) Sweep(sw Sweep) (*nccom.Report, error) {
	ranks := c.Ranks()
	rep := &nccom.Report{Op: sw.Op.String(), Ranks: ranks, Extra: map[string]any{
		"arch": c.cfg.Generation.String(), "devices": c.cfg.Devices, "topology": c.System.Topology().Kind.String(),
		"model": c.System.Params().Model.String(), "mode": c.Mode(), "switch": c.cfg.Switch.String(),
	}}
	for i, size := range sw.Sizes {
		sch, err := enc.Build(sw.Op, sw.Algo, ranks, size, sw.Dtype.Size(), sw.Options)
		if err != nil {
			return nil, err
		}
		var res enc.Result
		if c.cfg.TimingOnly {
			res, err = c.Run(sch, sw.Dtype)
		} else {
			res, err = c.Check(sch, sw.Dtype, sw.Seed+uint64(i), sw.Options)
		}
		if err != nil {
			return nil, fmt.Errorf("%d devices, %d ranks, %d bytes: %w", c.cfg.Devices, ranks, size, err)
		}
		row, err := nccom.NewRow(sw.Op.String(), ranks, size, sw.Dtype.Size(), sw.Dtype.String(), res.TimePS, sch.Algo.String())
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, row)
		sw.Progress.Step()
	}
	sw.Progress.Done()
	return rep, nil
}

// Mode is "timing" or "functional".
func (c *Cluster) Mode() string {
	if c.cfg.TimingOnly {
		return "timing"
	}
	return "functional"
}

// BufferNeed returns the per-rank buffer bytes the largest of the sizes
// needs (enc.LayoutOf's End), checking that every size builds.
func BufferNeed(op enc.Op, algo enc.Algo, ranks int, d enc.Dtype, sizes []int64, opt enc.Options) (uint64, error) {
	var need uint64
	for _, size := range sizes {
		sch, err := enc.Build(op, algo, ranks, size, d.Size(), opt)
		if err != nil {
			return 0, err
		}
		need = max(need, enc.LayoutOf(sch, 0).End)
	}
	return need, nil
}
