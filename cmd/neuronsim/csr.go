package main

import (
	"fmt"
	"math"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/stack"
)

// targetFlags choose the device a command talks to: a device of a simulated
// system (the default), of a remote system, or /dev/neuronN.
type targetFlags struct {
	sys    *systemFlags
	device *deviceIndex
	remote string
	kernel string
}

func addTargetFlags(cmd *cobra.Command) *targetFlags {
	t := &targetFlags{sys: addSystemFlags(cmd), device: newDeviceIndex()}
	cmd.Flags().Var(t.device, "device", "device index in the system (/dev/neuronN for --kernel)")
	cmd.Flags().StringVar(&t.remote, "remote", "", "use a device that neuronsim serve exports at `ADDR` (unix:PATH or tcp:HOST:PORT)")
	cmd.Flags().StringVar(&t.kernel, "kernel", "", "use the kernel driver: a /dev/neuronN path, or \"auto\" for /dev/neuron<device>")
	cmd.MarkFlagsMutuallyExclusive("remote", "kernel")
	return t
}

// open brings the chosen device up through the runtime. A fresh simulated
// device is reset as the driver would; a remote or kernel device is not
// (it may be in use).
func (t *targetFlags) open() (*bringup.Device, func(), error) {
	switch {
	case t.remote != "":
		if err := t.sys.notWith("--remote"); err != nil {
			return nil, nil, err
		}
		dev, done, err := openServedDevice(t.remote, t.device)
		if err != nil {
			return nil, nil, err
		}
		d, err := openRegisters(dev, bringup.Options{NoReset: true})
		if err != nil {
			done()
			return nil, nil, err
		}
		return d, done, nil
	case t.kernel != "":
		if err := t.sys.notWith("--kernel"); err != nil {
			return nil, nil, err
		}
		dev, err := t.device.index(hwarch.MaxNeuronDevices, fmt.Sprintf("the kernel driver's /dev/neuron0../dev/neuron%d, MAX_NEURON_DEVICE_COUNT", hwarch.MaxNeuronDevices-1))
		if err != nil {
			return nil, nil, err
		}
		path := t.kernel
		if units.Word(path) == "auto" {
			path = fmt.Sprintf("/dev/neuron%d", dev)
		}
		k, err := ndl.OpenKernel(path)
		if err != nil {
			return nil, nil, err
		}
		d, err := openRegisters(k, bringup.Options{NoReset: true})
		if err != nil {
			k.Close()
			return nil, nil, err
		}
		return d, func() { k.Close() }, nil
	}
	s, err := t.sys.spec()
	if err != nil {
		return nil, nil, err
	}
	dev, err := t.device.index(s.Devices, fmt.Sprintf("the system has %s, --devices", units.Plural(int64(s.Devices), "device", "devices")))
	if err != nil {
		return nil, nil, err
	}
	sys, err := buildSystem(s)
	if err != nil {
		return nil, nil, err
	}
	d, err := openRegisters(sys[dev].Dev, bringup.Options{Switch: s.Switch})
	if err != nil {
		return nil, nil, err
	}
	return d, func() {}, nil
}

// openWords is open for n consecutive registers from BAR0 offset off
// (ADDR): they must lie in the register BAR of the target's
// generation, 4-byte aligned (hwarch.Geometry.CheckRegisters). A simulated
// device's is checked before it is built; a served or kernel device's once
// it is brought up, before any register is touched.
func (t *targetFlags) openWords(off, n uint64) (*bringup.Device, func(), error) {
	check := func(geo *hwarch.Geometry) error {
		if err := geo.CheckRegisters(off, n); err != nil {
			return fmt.Errorf("ADDR %w", err)
		}
		return nil
	}
	if t.remote == "" && t.kernel == "" {
		s, err := t.sys.spec()
		if err != nil {
			return nil, nil, err
		}
		if err := check(hwarch.MustGeometry(s.Gen)); err != nil {
			return nil, nil, err
		}
	}
	d, done, err := t.open()
	if err != nil {
		return nil, nil, err
	}
	if err := check(d.Geometry); err != nil {
		done()
		return nil, nil, err
	}
	return d, done, nil
}

// openRegisters opens the runtime's stack on dev for register access only
// (a kernel driver's device has no host memory for DMA) and returns the
// brought-up device.
func openRegisters(dev ndl.Device, opts bringup.Options) (*bringup.Device, error) {
	st, err := stack.Open(dev, stack.Options{BringUp: opts, RegistersOnly: true})
	if err != nil {
		return nil, err
	}
	return st.Up, nil
}

func newCSRCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "csr read ADDR [--count N] | csr write ADDR VALUE...",
		Short: "Read or write device registers through the runtime's csr_read/csr_write",
		Long: "csr brings a device up through the runtime and reads or writes registers with the\n" +
			"seed 001 csr layer. ADDR is a BAR0 offset, decimal or 0x hex (010 is ten, never octal), a multiple\n" +
			"of 4 within the generation's register BAR (1 GiB on sunda, 4 GiB on cayman and mariana; every\n" +
			"word read or written must lie in it), refused before the device is touched otherwise. It is\n" +
			"turned into the runtime's virtual address of that offset, so a batch that leaves or straddles\n" +
			"a registered window fails whole, with the runtime's message and status -2.",
	}
	cmd.AddCommand(newCSRReadCommand(), newCSRWriteCommand())
	return cmd
}

// parseWord reads ADDR or a value: decimal or 0x hex (units.ParseUint;
// 010 is ten).
func parseWord(s, what string) (uint64, error) {
	v, err := units.ParseUint(what, s, math.MaxUint64)
	if err != nil {
		return 0, fmt.Errorf("%w: want a number such as 0x6C84024 or 1024", err)
	}
	return v, nil
}

func newCSRReadCommand() *cobra.Command {
	countV := newIntDefault("--count", 1, 1<<16, 1)
	cmd := &cobra.Command{
		Use:   "read ADDR [--count N]",
		Short: "csr_read_array of N consecutive words at a BAR0 offset",
		Example: "  neuronsim csr read 0x6C84024                    # MISC RAM routing id of a Trn3\n" +
			"  neuronsim csr read 0xD2701000 --count 4 --arch cayman\n" +
			"  neuronsim csr read 0x30FA0024 --arch trn1 --revision qemu",
		Args: cobra.ExactArgs(1),
	}
	tf := addTargetFlags(cmd)
	cmd.Flags().Var(countV, "count", "number of consecutive words, 1..65536")
	refuseEmptyFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		count := countV.int()
		off, err := parseWord(args[0], "ADDR")
		if err != nil {
			return err
		}
		d, done, err := tf.openWords(off, uint64(count))
		if err != nil {
			return err
		}
		defer done()
		ptrs := make([]uint64, count)
		for i := range ptrs {
			ptrs[i] = d.VA(off) + 4*uint64(i)
		}
		vals := make([]uint32, count)
		if err := d.CSR.ReadArray(ptrs, vals); err != nil {
			return fmt.Errorf("csr_read_array of %s at BAR0 offset %#x (virtual %#x): %w", units.Plural(int64(count), "word", "words"), off, d.VA(off), err)
		}
		for i, v := range vals {
			fmt.Fprintf(cmd.OutOrStdout(), "0x%08x: 0x%08x\n", off+4*uint64(i), v)
		}
		return nil
	}
	return cmd
}

func newCSRWriteCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "write ADDR VALUE...",
		Short: "csr_write_array of consecutive words at a BAR0 offset, then read them back",
		Example: "  neuronsim csr write 0xD2701400 7              # set semaphore 0 of NC 0 (Trn3)\n" +
			"  neuronsim csr write 0xD2701800 1 1 1 --device 0",
		Args: cobra.MinimumNArgs(2),
	}
	tf := addTargetFlags(cmd)
	refuseEmptyFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		off, err := parseWord(args[0], "ADDR")
		if err != nil {
			return err
		}
		vals := make([]uint32, len(args)-1)
		for i, a := range args[1:] {
			v, err := parseWord(a, "VALUE")
			if err != nil {
				return err
			}
			if v > 0xFFFF_FFFF {
				return fmt.Errorf("VALUE %q: wider than 32 bits", a)
			}
			vals[i] = uint32(v)
		}
		d, done, err := tf.openWords(off, uint64(len(vals)))
		if err != nil {
			return err
		}
		defer done()
		ptrs := make([]uint64, len(vals))
		for i := range ptrs {
			ptrs[i] = d.VA(off) + 4*uint64(i)
		}
		if err := d.CSR.WriteArray(ptrs, vals); err != nil {
			return fmt.Errorf("csr_write_array of %s at BAR0 offset %#x (virtual %#x): %w", units.Plural(int64(len(vals)), "word", "words"), off, d.VA(off), err)
		}
		back := make([]uint32, len(vals))
		if err := d.CSR.ReadArray(ptrs, back); err != nil {
			return fmt.Errorf("csr_read_array: %w", err)
		}
		for i := range vals {
			fmt.Fprintf(cmd.OutOrStdout(), "0x%08x: wrote 0x%08x, reads 0x%08x\n", off+4*uint64(i), vals[i], back[i])
		}
		return nil
	}
	return cmd
}
