package scenario

import "fmt"

// CSRReadStep reads a register (a register-BAR offset) and checks it.
type CSRReadStep struct {
	Device int     `yaml:"device"`
	Offset uint64  `yaml:"offset,required"`
	Expect *uint32 `yaml:"expect"`
}

// Kind implements Action.
func (*CSRReadStep) Kind() string { return "csr_read" }

func (st *CSRReadStep) check(c *checkContext) error {
	if err := c.device(st.Device, "device"); err != nil {
		return err
	}
	return c.register(st.Offset, "offset")
}

func (st *CSRReadStep) run(run *runner) error {
	up := run.c.Devices[st.Device].Up
	v, err := up.CSR.Read(up.VA(st.Offset))
	if err != nil {
		return err
	}
	run.printf("neuron%d register %#x = %#08x", st.Device, st.Offset, v)
	if st.Expect != nil && v != *st.Expect {
		return fmt.Errorf("neuron%d register %#x = %#08x, expected %#08x: %w", st.Device, st.Offset, v, *st.Expect, ErrFailed)
	}
	return nil
}

// CSRWriteStep writes a register.
type CSRWriteStep struct {
	Device int    `yaml:"device"`
	Offset uint64 `yaml:"offset,required"`
	Value  uint32 `yaml:"value"`
}

// Kind implements Action.
func (*CSRWriteStep) Kind() string { return "csr_write" }

func (st *CSRWriteStep) check(c *checkContext) error {
	if err := c.device(st.Device, "device"); err != nil {
		return err
	}
	return c.register(st.Offset, "offset")
}

func (st *CSRWriteStep) run(run *runner) error {
	up := run.c.Devices[st.Device].Up
	if err := up.CSR.Write(up.VA(st.Offset), st.Value); err != nil {
		return err
	}
	run.printf("neuron%d register %#x ← %#08x", st.Device, st.Offset, st.Value)
	return nil
}
