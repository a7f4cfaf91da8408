package scenario

import (
	"fmt"
	"strings"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
)

// BringUpStep reports how each device was brought up and checks it.
type BringUpStep struct {
	ExpectReset       *bool `yaml:"expect_reset"`        // whether bring-up ran a hardware reset
	ExpectRegisterBAR *int  `yaml:"expect_register_bar"` // the BAR bring-up found the registers in (its policy)
}

// Kind implements Action.
func (*BringUpStep) Kind() string { return "bringup" }

// check refuses an expected register BAR that no bring-up finds the
// registers in (hwarch.BAR0, or hwarch.BAR2 under QEMU): such a step
// could only fail, after bringing every device up.
func (st *BringUpStep) check(c *checkContext) error {
	if e := st.ExpectRegisterBAR; e != nil && *e != hwarch.BAR0 && *e != hwarch.BAR2 {
		return c.errorf("expect_register_bar", "%d: the registers are in BAR%d, or BAR%d under QEMU (V2, V3)", *e, hwarch.BAR0, hwarch.BAR2)
	}
	return nil
}

// run reports and checks what the runtime's bring-up did on each device:
// the register BAR is the one its policy chose and went through (not a
// model's internals, so the step works on any ndl backend).
func (st *BringUpStep) run(run *runner) error {
	for i, d := range run.c.Devices {
		up := d.Up
		bar := up.Policy.RegisterBAR
		run.printf("neuron%d: %s rev %#02x (%s), registers in BAR%d, routing id %d, waited %d not-ready reads, reset %v",
			i, up.Generation, up.Identity.Revision, up.Mode, bar, up.RoutingID, up.ReadyRetries, up.Reset)
		var hbm []string
		for _, b := range up.HBMChannelBytes {
			hbm = append(hbm, fmt.Sprintf("%d MiB", b>>20))
		}
		run.printf("  HBM channels as the driver sizes them: %s", strings.Join(hbm, ", "))
		for _, s := range up.Steps {
			run.printf("  %s: %s", s.Name, s.Detail)
		}
		if e := st.ExpectReset; e != nil && up.Reset != *e {
			return fmt.Errorf("neuron%d: bring-up reset %v, expected %v: %w", i, up.Reset, *e, ErrFailed)
		}
		if e := st.ExpectRegisterBAR; e != nil && bar != *e {
			return fmt.Errorf("neuron%d: registers in BAR%d, expected BAR%d: %w", i, bar, *e, ErrFailed)
		}
	}
	return nil
}

// ResetStep resets a device through the runtime, as the driver's reset
// worker does: the whole device, or the NeuronCores listed in tpbs (a TPB
// reset of that map; a list given names each core once and is not empty,
// checkContext.indexList; one that lists every core is a whole-device
// reset, bringup.Device.ResetTPBs). The runtime then brings the system up
// again.
type ResetStep struct {
	Device int   `yaml:"device"`
	TPBs   []int `yaml:"tpbs"`
}

// Kind implements Action.
func (*ResetStep) Kind() string { return "reset" }

func (st *ResetStep) check(c *checkContext) error {
	if err := c.indexList("tpbs", "core", st.TPBs, c.core); err != nil {
		return err
	}
	return c.device(st.Device, "device")
}

func (st *ResetStep) run(run *runner) error {
	c := run.c
	up := c.Devices[st.Device].Up
	start := c.System.Now()
	what, note := "device", ""
	if len(st.TPBs) == 0 {
		if err := up.ResetDevice(); err != nil {
			return err
		}
	} else {
		var mask uint32
		for _, nc := range st.TPBs {
			mask |= 1 << nc
		}
		if err := up.ResetTPBs(mask); err != nil {
			return err
		}
		what = fmt.Sprintf("NeuronCores %v", st.TPBs)
		if n := up.Geometry.NeuronCores; len(st.TPBs) == n {
			// Every core: the runtime resets the whole device (the
			// driver's whole-device map), registers included.
			what, note = "device", fmt.Sprintf(" (tpbs lists every NeuronCore, 0..%d)", n-1)
		}
	}
	took := time.Duration(c.System.Now()-start) / time.Duration(sim.Nanosecond) * time.Nanosecond
	run.printf("neuron%d: %s reset%s in %v", st.Device, what, note, took)
	// Its engines and queues are back to power-on: the runtime lets go of
	// the system and brings it up again (no further reset).
	run.dve = nil
	if err := c.Reattach(c.System); err != nil {
		return err
	}
	run.traceSystem()
	return nil
}

// RecoverStep brings reset devices up again after a failed collective.
type RecoverStep struct{}

// Kind implements Action.
func (*RecoverStep) Kind() string { return "recover" }

func (*RecoverStep) check(*checkContext) error { return nil }

func (*RecoverStep) run(run *runner) error {
	if err := run.c.Recover(); err != nil {
		return err
	}
	run.printf("devices brought up again; queues given back")
	return nil
}
